//! Stand-in until the scanner branch lands; replaced by the real parser at merge.

use crate::card::FieldIssue;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputConstraints {}

impl InputConstraints {
    pub fn parse(params: &serde_json::Value, path: &str) -> (Self, Vec<FieldIssue>) {
        let issues = if params.is_object() {
            vec![]
        } else {
            vec![FieldIssue::new(path, "must be an object")]
        };
        (Self {}, issues)
    }
}
