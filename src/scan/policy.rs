//! The compiled policy: the limits in the shape the scanner needs, built once per card.

use crate::card::constraints::{Dimensions, InputConstraints};
use crate::scan::text::Tokenizer;
use crate::scan::ScanOptions;

/// One `files.perMimeType` entry, with its key normalized for matching.
#[derive(Debug, Clone)]
pub(crate) struct MimeRule {
    /// As written in the card (for constraint paths in messages).
    pub key: String,
    /// Lowercase `type/subtype`, `type/*` or `*/*`.
    pub pattern: String,
    pub max_size: Option<u64>,
    pub max_dims: Option<Dimensions>,
}

/// Compiled limits; cheap to share through `Arc`.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) max_total: Option<u64>,
    pub(crate) max_count: Option<u64>,
    pub(crate) max_per_file: Option<u64>,
    pub(crate) per_mime: Vec<MimeRule>,
    /// Before a file's type is known, no limit below this can be certain to apply.
    pub(crate) early_file_cap: Option<u64>,
    /// Normalized accepted media ranges; `None` = no restriction.
    pub(crate) accepted: Option<Vec<String>>,
    pub(crate) max_chars: Option<u64>,
    pub(crate) max_tokens: Option<u64>,
    pub(crate) tokenizer: Option<Tokenizer>,
    pub(crate) options: ScanOptions,
    /// `type_info` of common types, worked out once per policy instead of once per part.
    common: Vec<(&'static str, TypeInfo)>,
}

/// Types most parts declare; anything else is looked up in full.
const COMMON_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "application/octet-stream",
    "text/plain",
    "application/json",
];

impl Policy {
    /// `accepted_modes`: the media types the agent accepts (`None` = anything).
    /// An unknown tokenizer is logged once here and token limits are then not enforced.
    pub fn new(
        constraints: &InputConstraints,
        accepted_modes: Option<&[String]>,
        options: ScanOptions,
    ) -> Policy {
        let files = &constraints.files;
        let per_mime: Vec<MimeRule> = files
            .per_mime_type
            .iter()
            .filter_map(|(key, c)| {
                let pattern = normalize_media_type(key)?;
                Some(MimeRule {
                    key: key.clone(),
                    pattern,
                    max_size: c.max_size_bytes,
                    max_dims: c.max_dimensions,
                })
            })
            .collect();
        // A per-MIME size overrides the global one, even upwards, so the global limit alone only
        // becomes certain once the type is known; until then the largest candidate is the bound.
        let early_file_cap = files.max_size_per_file_bytes.map(|global| {
            per_mime
                .iter()
                .filter_map(|r| r.max_size)
                .fold(global, u64::max)
        });
        let accepted = accepted_modes.and_then(|modes| {
            let v: Vec<String> = modes
                .iter()
                .filter_map(|m| normalize_media_type(m))
                .collect();
            // An empty union restricts nothing (a2a-sdk does the same).
            (!v.is_empty()).then_some(v)
        });
        let (max_tokens, tokenizer) = match constraints.text.max_tokens {
            Some(limit) => {
                let name = constraints
                    .text
                    .tokenizer
                    .as_deref()
                    .unwrap_or("cl100k_base");
                match Tokenizer::by_name(name) {
                    Some(t) => (Some(limit), Some(t)),
                    None => {
                        tracing::warn!(
                            tokenizer = name,
                            "unknown tokenizer in text.tokenizer; text.maxTokens is not enforced, only text.maxCharacters"
                        );
                        (None, None)
                    }
                }
            }
            None => (None, None),
        };
        let mut policy = Policy {
            max_total: files.max_total_size_bytes,
            max_count: files.max_count_per_request,
            max_per_file: files.max_size_per_file_bytes,
            per_mime,
            early_file_cap,
            accepted,
            max_chars: constraints.text.max_characters,
            max_tokens,
            tokenizer,
            options,
            common: Vec::new(),
        };
        policy.common = COMMON_TYPES
            .iter()
            .map(|&t| (t, policy.compute_type_info(t)))
            .collect();
        policy
    }

    /// A policy that limits nothing (still validates JSON and base64).
    pub fn unrestricted() -> Policy {
        Policy::new(&InputConstraints::default(), None, ScanOptions::default())
    }

    /// False when there is no limit and no media-type restriction: the body need not be scanned.
    pub fn enforces_anything(&self) -> bool {
        self.max_total.is_some()
            || self.max_count.is_some()
            || self.max_per_file.is_some()
            || self
                .per_mime
                .iter()
                .any(|r| r.max_size.is_some() || r.max_dims.is_some())
            || self.accepted.is_some()
            || self.max_chars.is_some()
            || self.max_tokens.is_some()
    }

    pub fn options(&self) -> &ScanOptions {
        &self.options
    }

    /// The most specific per-MIME rule for a normalized media type: exact, then `type/*`, then `*/*`.
    pub(crate) fn rule_for(&self, media_type: &str) -> Option<&MimeRule> {
        let top = top_level(media_type);
        self.per_mime
            .iter()
            .find(|r| r.pattern == media_type)
            .or_else(|| {
                self.per_mime.iter().find(|r| {
                    r.pattern != "*/*" && top_level(&r.pattern) == top && r.pattern.ends_with("/*")
                })
            })
            .or_else(|| self.per_mime.iter().find(|r| r.pattern == "*/*"))
    }

    pub(crate) fn accepts(&self, media_type: &str) -> bool {
        match &self.accepted {
            None => true,
            Some(modes) => modes.iter().any(|m| media_range_matches(m, media_type)),
        }
    }
}

/// What the policy says about one (normalized) media type, worked out once per part.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TypeInfo {
    pub accepted: bool,
    /// The size limit and the per-MIME rule it comes from (`None` = the global limit).
    pub size: Option<(u64, Option<usize>)>,
    /// The dimension limit and its rule.
    pub dims: Option<(Dimensions, usize)>,
    /// The format the type names, for sniffing.
    pub claimed: Option<crate::scan::Format>,
    /// `application/octet-stream`: says nothing about the content.
    pub generic: bool,
}

impl Policy {
    pub(crate) fn type_info(&self, t: &str) -> TypeInfo {
        match self.common.iter().find(|(c, _)| *c == t) {
            Some((_, info)) => *info,
            None => self.compute_type_info(t),
        }
    }

    /// `type_info` of a common type given as bytes (no UTF-8 validation needed to find it).
    #[inline]
    pub(crate) fn common_type_info(&self, t: &[u8]) -> Option<TypeInfo> {
        self.common
            .iter()
            .find(|(c, _)| c.as_bytes() == t)
            .map(|(_, info)| *info)
    }

    fn compute_type_info(&self, t: &str) -> TypeInfo {
        let rule = self.rule_for(t).map(|r| {
            let idx = self
                .per_mime
                .iter()
                .position(|x| std::ptr::eq(x, r))
                .unwrap_or(0);
            (idx, r)
        });
        let size = match rule {
            Some((idx, r)) if r.max_size.is_some() => r.max_size.map(|l| (l, Some(idx))),
            _ => self.max_per_file.map(|l| (l, None)),
        };
        TypeInfo {
            accepted: self.accepts(t),
            size,
            dims: rule.and_then(|(idx, r)| r.max_dims.map(|d| (d, idx))),
            claimed: crate::scan::Format::from_media_type(t),
            generic: t == "application/octet-stream",
        }
    }
}

/// Lowercase `type/subtype` without parameters; `*` becomes `*/*`. `None` for an empty or
/// slash-less value.
pub fn normalize_media_type(raw: &str) -> Option<String> {
    let (t, st) = media_type_essence(raw.as_bytes())?;
    // The parts were cut from a `str` at ASCII bytes: still UTF-8.
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_ascii_lowercase();
    Some(format!("{}/{}", text(t), text(st)))
}

/// `type` and `subtype` of a media type, trimmed, parameters dropped, not yet lowercased; `*`
/// is `*/*`. Shared by the policy (once per card) and the scanner (per part, into a buffer of
/// its own), so a declared type and a card's key are normalized alike.
// Out of line: declared types are nearly always already normal and never get here.
#[inline(never)]
pub(crate) fn media_type_essence(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = b.iter().position(|&c| c == b';').unwrap_or(b.len());
    let essence = b[..end].trim_ascii();
    if essence == b"*" {
        return Some((b"*", b"*"));
    }
    let slash = essence.iter().position(|&c| c == b'/')?;
    let (t, st) = (
        essence[..slash].trim_ascii(),
        essence[slash + 1..].trim_ascii(),
    );
    (!t.is_empty() && !st.is_empty()).then_some((t, st))
}

/// Does the (normalized) range `image/*`, `*/*` or `image/png` cover the (normalized) type?
pub fn media_range_matches(range: &str, media_type: &str) -> bool {
    if range == "*/*" || range == media_type {
        return true;
    }
    range.ends_with("/*") && top_level(range) == top_level(media_type)
}

/// `image` of `image/png` (byte search: this runs per part).
fn top_level(t: &str) -> &str {
    match t.as_bytes().iter().position(|&b| b == b'/') {
        Some(i) => &t[..i],
        None => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(params: serde_json::Value, modes: Option<&[&str]>) -> Policy {
        let (c, issues) = InputConstraints::parse(&params, "p");
        assert!(issues.is_empty(), "{issues:?}");
        let modes: Option<Vec<String>> = modes.map(|m| m.iter().map(|s| s.to_string()).collect());
        Policy::new(&c, modes.as_deref(), ScanOptions::default())
    }

    #[test]
    fn media_types_normalize_and_match_wildcards() {
        assert_eq!(
            normalize_media_type(" Image/PNG ; q=1").as_deref(),
            Some("image/png")
        );
        assert_eq!(normalize_media_type("*").as_deref(), Some("*/*"));
        assert_eq!(normalize_media_type("png"), None);
        assert_eq!(normalize_media_type(""), None);
        assert!(media_range_matches("image/*", "image/png"));
        assert!(!media_range_matches("image/*", "application/pdf"));
        assert!(media_range_matches("*/*", "application/pdf"));
        assert!(!media_range_matches("image/png", "image/jpeg"));
    }

    #[test]
    fn per_mime_lookup_prefers_exact_then_wildcard() {
        let p = policy(
            json!({"files": {"maxSizePerFileBytes": 100, "perMimeType": {
                "image/*": {"maxSizeBytes": 50}, "Image/PNG": {"maxSizeBytes": 500}, "*/*": {"maxSizeBytes": 7}}}}),
            None,
        );
        assert_eq!(p.type_info("image/png").size.map(|l| l.0), Some(500));
        assert_eq!(p.type_info("image/gif").size.map(|l| l.0), Some(50));
        assert_eq!(p.type_info("text/plain").size.map(|l| l.0), Some(7));
        // A per-MIME limit above the global one raises the early cap.
        assert_eq!(p.early_file_cap, Some(500));
    }

    #[test]
    fn global_applies_when_the_rule_has_no_size() {
        let p = policy(
            json!({"files": {"maxSizePerFileBytes": 100, "perMimeType": {
                "image/png": {"maxDimensions": {"width": 1, "height": 1}}}}}),
            None,
        );
        assert!(matches!(p.type_info("image/png").size, Some((100, None))));
        assert!(p.type_info("image/png").dims.is_some());
        assert!(p.type_info("application/octet-stream").generic);
        assert_eq!(p.early_file_cap, Some(100));
    }

    #[test]
    fn accepted_modes_and_enforces_anything() {
        let p = policy(json!({}), Some(&["text/plain", "image/*"]));
        assert!(p.accepts("image/webp"));
        assert!(!p.accepts("application/pdf"));
        assert!(p.enforces_anything());
        let none = policy(json!({}), Some(&[]));
        assert!(none.accepts("application/pdf"));
        assert!(!none.enforces_anything());
        assert!(!Policy::unrestricted().enforces_anything());
    }

    #[test]
    fn unknown_tokenizer_drops_only_the_token_limit() {
        let p = policy(
            json!({"text": {"maxTokens": 5, "maxCharacters": 9, "tokenizer": "mystery"}}),
            None,
        );
        assert_eq!(p.max_tokens, None);
        assert_eq!(p.max_chars, Some(9));
        let known = policy(
            json!({"text": {"maxTokens": 5, "tokenizer": "o200k_base"}}),
            None,
        );
        assert_eq!(known.max_tokens, Some(5));
    }
}
