//! Everything about agent cards. No sockets here: callers hand in JSON.

pub mod capabilities;
pub mod constraints;
pub mod policy;
pub mod rewrite;
pub mod validate;
pub mod version;

/// One problem found in a card or a config block, named by its JSON path
/// (`skills[1].id`, `capabilities.extensions[0].params.files.maxSizePerFileBytes`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldIssue {
    pub field: String,
    pub message: String,
}

impl FieldIssue {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// URI of the input-constraints extension (capabilities.extensions[].uri).
pub const INPUT_CONSTRAINTS_URI: &str = "https://inkeep.com/a2a-extensions/input-constraints/v1";
