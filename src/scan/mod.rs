//! Stand-in until the scanner branch lands; replaced by the real scanner at merge.

#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanOptions {}
