//! What a rejected body is told: the violation, and the JSON-RPC / REST error bodies built from it.
//! Pure serde_json; the HTTP status and headers are the caller's business.

use serde_json::{json, Map, Value};

/// JSON-RPC codes used by the scanner and the gateway's own checks.
pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const INVALID_PARAMS: i32 = -32602;
pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i32 = -32003;
pub const UNSUPPORTED_OPERATION: i32 = -32004;
pub const CONTENT_TYPE_NOT_SUPPORTED: i32 = -32005;
pub const EXTENSION_SUPPORT_REQUIRED: i32 = -32008;
pub const VERSION_NOT_SUPPORTED: i32 = -32009;

const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const A2A_DOMAIN: &str = "a2a-protocol.org";

/// Which A2A wire version the error body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireVersion {
    V0_3,
    V1_0,
}

/// Why a body was rejected; a bounded label set (for metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    FileCount,
    FileSize,
    TotalSize,
    MimeSize,
    Dimensions,
    DimensionsUnknown,
    MediaType,
    SniffMismatch,
    TextLength,
    TextTokens,
    BadBase64,
    DuplicateKey,
    AmbiguousPart,
    ParseError,
    InvalidRequest,
    // Checked by the gateway from headers, the path and the card, not by the scanner.
    BodySize,
    VersionNotSupported,
    StreamingNotSupported,
    PushNotSupported,
    ExtensionRequired,
}

impl Reason {
    pub const ALL: [Reason; 20] = [
        Reason::FileCount,
        Reason::FileSize,
        Reason::TotalSize,
        Reason::MimeSize,
        Reason::Dimensions,
        Reason::DimensionsUnknown,
        Reason::MediaType,
        Reason::SniffMismatch,
        Reason::TextLength,
        Reason::TextTokens,
        Reason::BadBase64,
        Reason::DuplicateKey,
        Reason::AmbiguousPart,
        Reason::ParseError,
        Reason::InvalidRequest,
        Reason::BodySize,
        Reason::VersionNotSupported,
        Reason::StreamingNotSupported,
        Reason::PushNotSupported,
        Reason::ExtensionRequired,
    ];

    /// snake_case metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::FileCount => "file_count",
            Reason::FileSize => "file_size",
            Reason::TotalSize => "total_size",
            Reason::MimeSize => "mime_size",
            Reason::Dimensions => "dimensions",
            Reason::DimensionsUnknown => "dimensions_unknown",
            Reason::MediaType => "media_type",
            Reason::SniffMismatch => "sniff_mismatch",
            Reason::TextLength => "text_length",
            Reason::TextTokens => "text_tokens",
            Reason::BadBase64 => "bad_base64",
            Reason::DuplicateKey => "duplicate_key",
            Reason::AmbiguousPart => "ambiguous_part",
            Reason::ParseError => "parse_error",
            Reason::InvalidRequest => "invalid_request",
            Reason::BodySize => "body_size",
            Reason::VersionNotSupported => "version_not_supported",
            Reason::StreamingNotSupported => "streaming_not_supported",
            Reason::PushNotSupported => "push_not_supported",
            Reason::ExtensionRequired => "extension_required",
        }
    }

    pub fn code(self) -> i32 {
        match self {
            Reason::MediaType => CONTENT_TYPE_NOT_SUPPORTED,
            Reason::ParseError => PARSE_ERROR,
            Reason::InvalidRequest => INVALID_REQUEST,
            Reason::VersionNotSupported => VERSION_NOT_SUPPORTED,
            Reason::StreamingNotSupported => UNSUPPORTED_OPERATION,
            Reason::PushNotSupported => PUSH_NOTIFICATION_NOT_SUPPORTED,
            Reason::ExtensionRequired => EXTENSION_SUPPORT_REQUIRED,
            _ => INVALID_PARAMS,
        }
    }
}

/// The A2A `ErrorInfo.reason` for a JSON-RPC code, as a2a-sdk maps it back to its error classes
/// (a2a/utils/errors.py `A2A_ERROR_MAPPING`). The SDK answers a REST parse error with INVALID_REQUEST.
pub fn a2a_reason(code: i32) -> &'static str {
    match code {
        CONTENT_TYPE_NOT_SUPPORTED => "CONTENT_TYPE_NOT_SUPPORTED",
        INVALID_PARAMS => "INVALID_PARAMS",
        INVALID_REQUEST | PARSE_ERROR => "INVALID_REQUEST",
        PUSH_NOTIFICATION_NOT_SUPPORTED => "PUSH_NOTIFICATION_NOT_SUPPORTED",
        UNSUPPORTED_OPERATION => "UNSUPPORTED_OPERATION",
        EXTENSION_SUPPORT_REQUIRED => "EXTENSION_SUPPORT_REQUIRED",
        VERSION_NOT_SUPPORTED => "VERSION_NOT_SUPPORTED",
        _ => "INTERNAL_ERROR",
    }
}

/// A measured or configured quantity, rendered as a string in ErrorInfo metadata and typed in v0.3 data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Amount {
    Bytes(u64),
    Count(u64),
    Chars(u64),
    Tokens(u64),
    Dims { width: u64, height: u64 },
}

impl Amount {
    fn metadata(&self) -> String {
        match self {
            Amount::Bytes(n) | Amount::Count(n) | Amount::Chars(n) | Amount::Tokens(n) => {
                n.to_string()
            }
            Amount::Dims { width, height } => format!("{width}x{height}"),
        }
    }

    fn typed(&self) -> Value {
        match self {
            Amount::Bytes(n) | Amount::Count(n) | Amount::Chars(n) | Amount::Tokens(n) => json!(n),
            Amount::Dims { width, height } => json!({"width": width, "height": height}),
        }
    }

    /// For messages: "10 MiB (10485760 bytes)", "3 files", "4096x4096 pixels".
    pub fn human(&self) -> String {
        match self {
            Amount::Bytes(n) => human_bytes(*n),
            Amount::Count(n) => format!("{n} file{}", if *n == 1 { "" } else { "s" }),
            Amount::Chars(n) => format!("{n} character{}", if *n == 1 { "" } else { "s" }),
            Amount::Tokens(n) => format!("{n} token{}", if *n == 1 { "" } else { "s" }),
            Amount::Dims { width, height } => format!("{width}x{height} pixels"),
        }
    }
}

/// Binary units with the exact count beside them, so nobody has to guess MB vs MiB.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} byte{}", if n == 1 { "" } else { "s" });
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let shown = if (value - value.round()).abs() < 0.05 {
        format!("{}", value.round() as u64)
    } else {
        format!("{value:.1}")
    };
    format!("{shown} {} ({n} bytes)", UNITS[unit])
}

/// Everything a program needs to know about a violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViolationData {
    pub reason: Reason,
    /// Path of the broken limit in the extension params, e.g. `files.perMimeType["image/png"].maxSizeBytes`.
    pub constraint: Option<String>,
    pub limit: Option<Amount>,
    pub actual: Option<Amount>,
    /// The body was cut off early: the real value is at least `actual`.
    pub actual_is_lower_bound: bool,
    /// Index in the parts array (0-based, as in the JSON path).
    pub part_index: Option<u64>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
    /// JSON path of the offending value in the body, e.g. `params.message.parts[2].raw`.
    pub field: Option<String>,
    /// Byte offset in the body where the problem was found (parse errors).
    pub offset: Option<u64>,
}

impl ViolationData {
    pub fn new(reason: Reason) -> Self {
        ViolationData {
            reason,
            constraint: None,
            limit: None,
            actual: None,
            actual_is_lower_bound: false,
            part_index: None,
            filename: None,
            media_type: None,
            field: None,
            offset: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub code: i32,
    pub message: String,
    pub data: ViolationData,
}

impl Violation {
    pub fn new(message: impl Into<String>, data: ViolationData) -> Self {
        Violation {
            code: data.reason.code(),
            message: message.into(),
            data,
        }
    }

    /// Bounded snake_case label for metrics.
    pub fn reason(&self) -> &'static str {
        self.data.reason.as_str()
    }

    /// The HTTP status a REST answer should carry.
    pub fn http_status(&self) -> u16 {
        if self.data.reason == Reason::BodySize {
            413
        } else {
            400
        }
    }

    /// The google.rpc.Code name for the REST answer.
    pub fn grpc_status(&self) -> &'static str {
        match self.code {
            PUSH_NOTIFICATION_NOT_SUPPORTED
            | UNSUPPORTED_OPERATION
            | EXTENSION_SUPPORT_REQUIRED
            | VERSION_NOT_SUPPORTED => "FAILED_PRECONDITION",
            _ => "INVALID_ARGUMENT",
        }
    }

    /// ErrorInfo metadata: every value a string, as google.rpc.ErrorInfo requires.
    pub fn metadata(&self) -> Map<String, Value> {
        let d = &self.data;
        let mut m = Map::new();
        let mut put = |k: &str, v: String| {
            m.insert(k.to_owned(), Value::String(v));
        };
        put("violation", d.reason.as_str().to_owned());
        if let Some(c) = &d.constraint {
            put("constraint", c.clone());
        }
        if let Some(l) = &d.limit {
            put("limit", l.metadata());
        }
        if let Some(a) = &d.actual {
            put("actual", a.metadata());
            put("actualIsLowerBound", d.actual_is_lower_bound.to_string());
        }
        if let Some(i) = d.part_index {
            put("partIndex", i.to_string());
        }
        if let Some(f) = &d.filename {
            put("filename", f.clone());
        }
        if let Some(t) = &d.media_type {
            put("mediaType", t.clone());
        }
        if let Some(f) = &d.field {
            put("field", f.clone());
        }
        if let Some(o) = d.offset {
            put("offset", o.to_string());
        }
        m
    }

    /// v0.3 `error.data`: the same facts with typed values.
    pub fn typed_data(&self) -> Value {
        let d = &self.data;
        let mut m = Map::new();
        m.insert("violation".into(), json!(d.reason.as_str()));
        if let Some(c) = &d.constraint {
            m.insert("constraint".into(), json!(c));
        }
        if let Some(l) = &d.limit {
            m.insert("limit".into(), l.typed());
        }
        if let Some(a) = &d.actual {
            m.insert("actual".into(), a.typed());
            m.insert("actualIsLowerBound".into(), json!(d.actual_is_lower_bound));
        }
        if let Some(i) = d.part_index {
            m.insert("partIndex".into(), json!(i));
        }
        if let Some(f) = &d.filename {
            m.insert("filename".into(), json!(f));
        }
        if let Some(t) = &d.media_type {
            m.insert("mediaType".into(), json!(t));
        }
        if let Some(f) = &d.field {
            m.insert("field".into(), json!(f));
        }
        if let Some(o) = d.offset {
            m.insert("offset".into(), json!(o));
        }
        Value::Object(m)
    }

    fn error_info(&self) -> Value {
        json!({
            "@type": ERROR_INFO_TYPE,
            "reason": a2a_reason(self.code),
            "domain": A2A_DOMAIN,
            "metadata": Value::Object(self.metadata()),
        })
    }

    /// JSON-RPC error response body: `{"jsonrpc":"2.0","id":<id or null>,"error":{"code","message","data"}}`.
    /// V1_0: `data` = `[ErrorInfo]`; V0_3: `data` = an object with typed values.
    pub fn jsonrpc_response(&self, id: Option<&Value>, wire: WireVersion) -> Value {
        let data = match wire {
            WireVersion::V1_0 => Value::Array(vec![self.error_info()]),
            WireVersion::V0_3 => self.typed_data(),
        };
        json!({
            "jsonrpc": "2.0",
            "id": id.cloned().unwrap_or(Value::Null),
            "error": {"code": self.code, "message": self.message, "data": data},
        })
    }

    /// REST `google.rpc.Status` body (AIP-193), as a2a-sdk's REST client parses it.
    pub fn rest_response(&self, http_status: u16) -> Value {
        json!({
            "error": {
                "code": http_status,
                "status": self.grpc_status(),
                "message": self.message,
                "details": [self.error_info()],
            }
        })
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason(), self.message)
    }
}

impl std::error::Error for Violation {}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Violation {
        let mut d = ViolationData::new(Reason::MimeSize);
        d.constraint = Some("files.perMimeType[\"image/png\"].maxSizeBytes".into());
        d.limit = Some(Amount::Bytes(10485760));
        d.actual = Some(Amount::Bytes(12400000));
        d.actual_is_lower_bound = true;
        d.part_index = Some(2);
        d.filename = Some("photo.png".into());
        d.media_type = Some("image/png".into());
        d.field = Some("params.message.parts[2].raw".into());
        Violation::new("part 2 is too big", d)
    }

    #[test]
    fn v1_jsonrpc_body_carries_error_info_with_string_metadata() {
        let v = sample();
        let body = v.jsonrpc_response(Some(&json!(7)), WireVersion::V1_0);
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], 7);
        assert_eq!(body["error"]["code"], -32602);
        assert_eq!(body["error"]["message"], "part 2 is too big");
        let info = &body["error"]["data"][0];
        assert_eq!(info["@type"], ERROR_INFO_TYPE);
        assert_eq!(info["reason"], "INVALID_PARAMS");
        assert_eq!(info["domain"], "a2a-protocol.org");
        let md = &info["metadata"];
        assert_eq!(md["violation"], "mime_size");
        assert_eq!(
            md["constraint"],
            "files.perMimeType[\"image/png\"].maxSizeBytes"
        );
        assert_eq!(md["limit"], "10485760");
        assert_eq!(md["actual"], "12400000");
        assert_eq!(md["actualIsLowerBound"], "true");
        assert_eq!(md["partIndex"], "2");
        assert_eq!(md["filename"], "photo.png");
        assert_eq!(md["mediaType"], "image/png");
        assert_eq!(md["field"], "params.message.parts[2].raw");
        assert!(md.as_object().unwrap().values().all(Value::is_string));
    }

    #[test]
    fn v03_jsonrpc_body_has_typed_data_and_null_id_when_unknown() {
        let body = sample().jsonrpc_response(None, WireVersion::V0_3);
        assert_eq!(body["id"], Value::Null);
        let data = &body["error"]["data"];
        assert_eq!(data["violation"], "mime_size");
        assert_eq!(data["limit"], 10485760);
        assert_eq!(data["actual"], 12400000);
        assert_eq!(data["actualIsLowerBound"], true);
        assert_eq!(data["partIndex"], 2);
    }

    #[test]
    fn rest_body_is_google_rpc_status() {
        let body = sample().rest_response(400);
        assert_eq!(body["error"]["code"], 400);
        assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
        assert_eq!(body["error"]["message"], "part 2 is too big");
        assert_eq!(body["error"]["details"][0]["reason"], "INVALID_PARAMS");
    }

    #[test]
    fn reasons_map_to_sdk_reasons_and_codes() {
        let media = Violation::new("x", ViolationData::new(Reason::MediaType));
        assert_eq!(media.code, -32005);
        assert_eq!(
            media.rest_response(400)["error"]["details"][0]["reason"],
            "CONTENT_TYPE_NOT_SUPPORTED"
        );
        let parse = Violation::new("x", ViolationData::new(Reason::ParseError));
        assert_eq!(parse.code, -32700);
        assert_eq!(
            parse.rest_response(400)["error"]["details"][0]["reason"],
            "INVALID_REQUEST"
        );
        assert_eq!(Reason::InvalidRequest.code(), -32600);
        let labels: std::collections::HashSet<_> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels.len(), Reason::ALL.len());
    }

    #[test]
    fn dims_render_as_text_and_object() {
        let mut d = ViolationData::new(Reason::Dimensions);
        d.limit = Some(Amount::Dims {
            width: 4096,
            height: 4096,
        });
        d.actual = Some(Amount::Dims {
            width: 5000,
            height: 300,
        });
        let v = Violation::new("x", d);
        assert_eq!(v.metadata()["limit"], "4096x4096");
        assert_eq!(
            v.typed_data()["actual"],
            json!({"width": 5000, "height": 300})
        );
        assert_eq!(v.metadata()["actualIsLowerBound"], "false");
    }

    #[test]
    fn human_bytes_is_exact_and_readable() {
        assert_eq!(human_bytes(1), "1 byte");
        assert_eq!(human_bytes(1000), "1000 bytes");
        assert_eq!(human_bytes(10485760), "10 MiB (10485760 bytes)");
        assert_eq!(human_bytes(12400000), "11.8 MiB (12400000 bytes)");
    }
}
