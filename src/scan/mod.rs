//! The request scanner: streaming, zero-copy enforcement of the limits an agent advertises.
//!
//! Pure and synchronous (no HTTP, no async, no sockets). A [`Scanner`] is fed a request body in
//! chunks split anywhere and answers as soon as a violation is certain. It is a complete JSON
//! validator (what serde_json rejects, it rejects), it never copies or decodes whole strings, and
//! its memory does not grow with the body: a few fixed buffers per request, plus one text part
//! when token counting is on (bounded by [`ScanOptions::token_buffer_bytes`]).
//!
//! Two readers share the part, string and check steps: a byte-driven state machine that takes
//! chunks split anywhere, and, when the caller knows the body's length ([`Scanner::expect_len`])
//! and the first chunk is all of it, a recursive walk that only decides to accept and hands
//! anything else (a violation, a fault, a shape it does not follow) to the state machine, so
//! every verdict and error offset comes from one place.
//!
//! Decisions worth knowing (documented where they are made):
//! - Keys are matched after unescaping and in both JSON and proto spellings (`mediaType` /
//!   `media_type`); a tracked object that holds one key twice, even as its alias, is rejected.
//! - A part holds one content field (`text`, `raw`, `url`, `data`, `file`), a file object one of
//!   `bytes`, `uri`, `fileWithBytes`, `fileWithUri`; more is rejected (a2a-sdk rejects it too).
//! - A file with no specific declared type (none, or `application/octet-stream`) is held to the
//!   limits and accepted modes of the type its magic bytes show, checked when the part ends.
//! - Base64 is strict: one alphabet per string, padding only at the end (optional), no whitespace.

mod base64;
pub mod media;
pub mod policy;
mod scanner;
mod skip;
pub mod text;
pub mod verdict;

pub use media::Format;
pub use policy::Policy;
pub use scanner::Scanner;
pub use verdict::{Amount, Reason, Violation, ViolationData, WireVersion};

use serde::Deserialize;

/// Where the message sits in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyShape {
    /// JSON-RPC: `params.message`.
    JsonRpc,
    /// REST `message:send` / `message:stream`: `message` at the top.
    Rest,
}

/// What to do when a file's declared type and its magic bytes disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SniffMode {
    #[default]
    Enforce,
    Warn,
    Off,
}

/// What to do when a dimension limit applies but the dimensions could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum UnknownDimensions {
    /// Fail closed: padding metadata must not be a way around a dimension limit.
    #[default]
    Reject,
    Allow,
}

/// Per-agent scanner settings (the `scan:` block of an agent in gateway.yaml).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScanOptions {
    /// `enforce` (default), `warn` (count in the summary) or `off`.
    pub sniff: SniffMode,
    /// How deep into a file's decoded bytes to look for image dimensions (JPEG SOF). Default 4 MiB.
    pub dimension_probe_bytes: u64,
    /// `reject` (default) or `allow` a file whose dimensions cannot be read when a limit applies.
    pub unknown_dimensions: UnknownDimensions,
    /// JPEG segments to walk before giving up on the dimensions. Default 64.
    pub jpeg_max_segments: u32,
    /// Deepest nesting of arrays and objects accepted. Default 128 (serde_json's limit).
    pub max_depth: u32,
    /// Largest text part buffered for token counting. Default 4 MiB; longer parts are refused
    /// when `text.maxTokens` applies and the part is longer in bytes than the token limit.
    pub token_buffer_bytes: u64,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            sniff: SniffMode::Enforce,
            dimension_probe_bytes: 4 << 20,
            unknown_dimensions: UnknownDimensions::Reject,
            jpeg_max_segments: 64,
            max_depth: 128,
            token_buffer_bytes: 4 << 20,
        }
    }
}

/// A `sniff: warn` finding: the declared type and what the bytes look like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SniffWarning {
    pub part_index: u64,
    pub declared: String,
    pub detected: Option<&'static str>,
}

/// What an accepted body contained.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub bytes: u64,
    pub parts: u64,
    /// Files inline and by reference.
    pub files: u64,
    pub inline_files: u64,
    /// Decoded size of all inline files.
    pub inline_bytes: u64,
    pub text_parts: u64,
    /// Unicode scalar values over all text parts.
    pub text_chars: u64,
    /// At most 16, for `sniff: warn`.
    pub sniff_warnings: Vec<SniffWarning>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_options_deserialize_with_defaults_and_reject_unknown_fields() {
        let o: ScanOptions =
            serde_json::from_str(r#"{"sniff":"warn","dimension_probe_bytes":1024}"#).unwrap();
        assert_eq!(o.sniff, SniffMode::Warn);
        assert_eq!(o.dimension_probe_bytes, 1024);
        assert_eq!(o.unknown_dimensions, UnknownDimensions::Reject);
        let err = serde_json::from_str::<ScanOptions>(r#"{"snif":"warn"}"#).unwrap_err();
        assert!(err.to_string().contains("snif"), "{err}");
        assert_eq!(
            serde_json::from_str::<ScanOptions>("{}").unwrap(),
            ScanOptions::default()
        );
    }
}
