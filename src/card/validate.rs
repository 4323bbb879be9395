//! Stand-in until the validation branch lands; replaced by the real validator at merge.

use crate::card::FieldIssue;

pub struct Report {
    pub valid: bool,
    pub spec_version: &'static str,
    pub errors: Vec<FieldIssue>,
    pub warnings: Vec<FieldIssue>,
}

pub fn validate(card: &serde_json::Value) -> Report {
    let errors = if card.is_object() {
        vec![]
    } else {
        vec![FieldIssue::new("$", "a card must be a JSON object")]
    };
    Report {
        valid: errors.is_empty(),
        spec_version: "unknown",
        errors,
        warnings: vec![],
    }
}

impl Report {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"valid": self.valid, "spec_version": self.spec_version, "errors": self.errors, "warnings": self.warnings})
    }
}
