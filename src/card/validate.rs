//! Validates any JSON value as an A2A agent card (v0.3, v1.0 or the a2a-sdk hybrid of both).
//!
//! Every problem is collected, never just the first, each named by its JSON path. Errors make
//! the card unusable; warnings flag deprecated or suspicious fields. Unknown fields are ignored:
//! cards may carry extensions of their own. Sources: notes/a2a-protocol.md §1, A2A@v0.3.0
//! types.ts, A2A@v1.0.1 a2a.proto.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::card::version::{self, SpecVersion, V0_3_ONLY_TOP_LEVEL, V1_0_SCHEME_WRAPPERS};
use crate::card::{FieldIssue, INPUT_CONSTRAINTS_URI};

/// At most this many errors (and, separately, warnings) are listed; the rest are counted.
/// A hostile card with a million broken skills must not produce a million messages.
pub const MAX_LISTED_ISSUES: usize = 200;

/// Values quoted inside messages are cut to this many characters.
const MAX_QUOTED_CHARS: usize = 60;

/// The outcome of validating one card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub valid: bool,
    pub spec_version: SpecVersion,
    pub errors: Vec<FieldIssue>,
    pub warnings: Vec<FieldIssue>,
    /// What the card offers, for a human to check; only for a valid card.
    pub preview: Option<Preview>,
}

/// A summary of a valid card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preview {
    pub name: String,
    pub description: String,
    pub spec_version: SpecVersion,
    pub interfaces: Vec<InterfacePreview>,
    pub extensions: Vec<ExtensionPreview>,
    pub security_schemes: Vec<SecuritySchemePreview>,
    pub skills_count: usize,
    /// The input-constraints extension's `params`, as the card gives them.
    pub input_constraints: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InterfacePreview {
    pub url: String,
    /// `JSONRPC`, `GRPC`, `HTTP+JSON` or a custom binding.
    pub binding: String,
    /// The A2A protocol version served there.
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionPreview {
    pub uri: String,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecuritySchemePreview {
    pub name: String,
    /// In the v0.3 vocabulary: `apiKey`, `http`, `oauth2`, `openIdConnect` or `mutualTLS`.
    #[serde(rename = "type")]
    pub scheme_type: String,
}

/// The input was not JSON at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotJson {
    /// serde_json's message, which names the line and column.
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not JSON: {}", self.message)
    }
}

impl std::error::Error for NotJson {}

/// Parses `bytes` as JSON and validates it as a card.
pub fn validate_bytes(bytes: &[u8]) -> Result<Report, NotJson> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(card) => Ok(validate(&card)),
        Err(err) => Err(NotJson {
            message: err.to_string(),
            line: err.line(),
            column: err.column(),
        }),
    }
}

/// Validates `card`, collecting every error and warning.
pub fn validate(card: &Value) -> Report {
    let spec_version = version::detect(card);
    let mut checker = Checker::new(spec_version);
    checker.card(card);
    if let Some((params, path)) = &checker.input_constraints {
        checker
            .errors
            .extend(crate::card::constraints::InputConstraints::parse(params, path).1);
    }
    checker.finish(card)
}

impl Report {
    /// `{valid, spec_version, errors: [{field, message}], warnings, preview}`.
    pub fn to_json(&self) -> Value {
        // Cannot fail: every field is a string, bool, integer or an already-parsed Value.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The human-readable report `cardgate validate` prints. Card text is escaped and cut short
    /// so a hostile card cannot drive the terminal.
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let verdict = if self.valid { "valid" } else { "INVALID" };
        let _ = writeln!(
            out,
            "card is {verdict} (spec version: {}; {} error{}, {} warning{})",
            describe_version(self.spec_version),
            self.errors.len(),
            plural(self.errors.len()),
            self.warnings.len(),
            plural(self.warnings.len()),
        );
        for (title, issues) in [("errors", &self.errors), ("warnings", &self.warnings)] {
            if issues.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{title}:");
            for issue in issues {
                let _ = writeln!(
                    out,
                    "  {}: {}",
                    printable(&issue.field),
                    printable(&issue.message)
                );
            }
        }
        if let Some(preview) = &self.preview {
            out.push('\n');
            preview.render_text(&mut out);
        }
        out
    }
}

impl Preview {
    fn render_text(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(out, "preview:");
        let _ = writeln!(out, "  name:              {}", printable(&self.name));
        let _ = writeln!(out, "  description:       {}", printable(&self.description));
        let _ = writeln!(
            out,
            "  spec version:      {}",
            describe_version(self.spec_version)
        );
        let _ = writeln!(out, "  interfaces:");
        for interface in &self.interfaces {
            let _ = writeln!(
                out,
                "    {} {}  {}",
                printable(&interface.binding),
                printable(&interface.version),
                printable(&interface.url)
            );
        }
        if self.extensions.is_empty() {
            let _ = writeln!(out, "  extensions:        none");
        } else {
            let _ = writeln!(out, "  extensions:");
            for extension in &self.extensions {
                let marker = if extension.required {
                    "required"
                } else {
                    "optional"
                };
                let _ = writeln!(out, "    {} ({marker})", printable(&extension.uri));
            }
        }
        if self.security_schemes.is_empty() {
            let _ = writeln!(out, "  security schemes:  none");
        } else {
            let _ = writeln!(out, "  security schemes:");
            for scheme in &self.security_schemes {
                let _ = writeln!(
                    out,
                    "    {}: {}",
                    printable(&scheme.name),
                    printable(&scheme.scheme_type)
                );
            }
        }
        let _ = writeln!(out, "  skills:            {}", self.skills_count);
        match &self.input_constraints {
            Some(params) => {
                let _ = writeln!(
                    out,
                    "  input constraints: {}",
                    printable(&params.to_string())
                );
            }
            None => {
                let _ = writeln!(out, "  input constraints: none advertised");
            }
        }
    }
}

fn describe_version(version: SpecVersion) -> &'static str {
    match version {
        SpecVersion::V0_3 => "0.3",
        SpecVersion::V1_0 => "1.0",
        SpecVersion::Hybrid => "hybrid (v1.0 with the v0.3 fields merged in, as a2a-sdk serves)",
        SpecVersion::Unknown => "unknown",
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}

/// Escapes control characters and cuts `text` to a screenful.
fn printable(text: &str) -> String {
    const MAX_PRINTED_CHARS: usize = 300;
    let mut out = String::with_capacity(text.len().min(MAX_PRINTED_CHARS + 8));
    for (count, ch) in text.chars().enumerate() {
        if count == MAX_PRINTED_CHARS {
            out.push('…');
            break;
        }
        // Bidi overrides and isolates can reorder what the reader sees (CVE-2021-42574).
        if ch.is_control() || matches!(ch, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}') {
            out.extend(ch.escape_unicode());
        } else {
            out.push(ch);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// JSON paths, built only when an issue is reported.

#[derive(Clone, Copy)]
enum Segment<'p> {
    Root,
    Key(&'p str),
    Index(usize),
}

/// A JSON path as a chain of borrowed segments on the stack.
#[derive(Clone, Copy)]
struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    segment: Segment<'p>,
}

impl<'p> Path<'p> {
    const ROOT: Path<'static> = Path {
        parent: None,
        segment: Segment::Root,
    };

    fn key(&'p self, key: &'p str) -> Path<'p> {
        Path {
            parent: Some(self),
            segment: Segment::Key(key),
        }
    }

    fn index(&'p self, index: usize) -> Path<'p> {
        Path {
            parent: Some(self),
            segment: Segment::Index(index),
        }
    }

    /// `skills[1].id`, `securitySchemes["my scheme"].type`; the root alone is `$`.
    fn render(&self) -> String {
        let mut segments = Vec::new();
        let mut cursor = Some(self);
        while let Some(path) = cursor {
            segments.push(path.segment);
            cursor = path.parent;
        }
        let mut out = String::new();
        for segment in segments.iter().rev() {
            match segment {
                Segment::Root => {}
                Segment::Key(key) if is_plain_key(key) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(key);
                }
                Segment::Key(key) => {
                    out.push('[');
                    out.push_str(&quote_all(key));
                    out.push(']');
                }
                Segment::Index(index) => {
                    out.push('[');
                    out.push_str(&index.to_string());
                    out.push(']');
                }
            }
        }
        if out.is_empty() {
            out.push('$');
        }
        out
    }
}

fn is_plain_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
}

/// `text` as a JSON string literal (escaped, so safe to print).
fn quote_all(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// `text` as a JSON string literal, cut to `MAX_QUOTED_CHARS`.
fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{}…", quote_all(&text[..cut])),
        None => quote_all(text),
    }
}

/// What a value is, for "expected X, found Y" messages.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => format!("boolean {flag}"),
        Value::Number(number) => format!("number {number}"),
        Value::String(text) => format!("string {}", quote(text)),
        Value::Array(items) => format!("an array of {} item{}", items.len(), plural(items.len())),
        Value::Object(fields) => format!(
            "an object with {} field{}",
            fields.len(),
            plural(fields.len())
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Small value checks.

/// `http://host…` or `https://host…`: a scheme we can proxy, a non-empty host, no whitespace.
pub(crate) fn is_absolute_http_url(text: &str) -> bool {
    let lower_prefix: String = text
        .chars()
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    let rest = if lower_prefix.starts_with("https://") {
        &text[8..]
    } else if lower_prefix.starts_with("http://") {
        &text[7..]
    } else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    !host.is_empty()
        && !host.starts_with(':')
        && !text.chars().any(|ch| ch.is_whitespace() || ch.is_control())
}

/// gRPC interfaces may name `host:port` instead of a URL (A2A HEAD, notes §1.2).
fn is_host_port(text: &str) -> bool {
    match text.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty()
                && !host.contains(['/', ' '])
                && !port.is_empty()
                && port.len() <= 5
                && port.bytes().all(|byte| byte.is_ascii_digit())
        }
        None => false,
    }
}

/// A media type has a `/` between a non-empty type and subtype.
fn is_media_type(text: &str) -> bool {
    text.split_once('/')
        .is_some_and(|(kind, subtype)| !kind.trim().is_empty() && !subtype.trim().is_empty())
}

/// "0.3", "1.0": Major.Minor, as AgentInterface.protocolVersion asks.
fn is_major_minor(text: &str) -> bool {
    text.split_once('.').is_some_and(|(major, minor)| {
        [major, minor]
            .iter()
            .all(|part| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit()))
    })
}

const SECURITY_REMOVED: &str = "removed in v1.0: use securityRequirements; v1.0 clients ignore it";

const KNOWN_BINDINGS: [&str; 3] = ["JSONRPC", "GRPC", "HTTP+JSON"];
const API_KEY_LOCATIONS: [&str; 3] = ["query", "header", "cookie"];
const V0_3_SCHEME_TYPES: [&str; 5] = ["apiKey", "http", "oauth2", "openIdConnect", "mutualTLS"];

/// The v0.3 `type` name for each v1.0 wrapper, in `V1_0_SCHEME_WRAPPERS` order.
fn scheme_type_of_wrapper(wrapper: &str) -> &'static str {
    match wrapper {
        "apiKeySecurityScheme" => "apiKey",
        "httpAuthSecurityScheme" => "http",
        "oauth2SecurityScheme" => "oauth2",
        "openIdConnectSecurityScheme" => "openIdConnect",
        _ => "mutualTLS",
    }
}

// ---------------------------------------------------------------------------------------------
// The checker.

/// A list that keeps the first `MAX_LISTED_ISSUES` entries and counts the rest.
#[derive(Default)]
struct IssueList {
    listed: Vec<FieldIssue>,
    omitted: usize,
}

impl Extend<FieldIssue> for IssueList {
    fn extend<I: IntoIterator<Item = FieldIssue>>(&mut self, issues: I) {
        for issue in issues {
            self.push(issue);
        }
    }
}

impl IssueList {
    fn push(&mut self, issue: FieldIssue) {
        if self.listed.len() < MAX_LISTED_ISSUES {
            self.listed.push(issue);
        } else {
            self.omitted += 1;
        }
    }

    /// Renders the path only if the issue will be listed.
    fn add(&mut self, at: &Path, message: impl Into<String>) {
        if self.listed.len() < MAX_LISTED_ISSUES {
            self.listed.push(FieldIssue::new(at.render(), message));
        } else {
            self.omitted += 1;
        }
    }

    fn into_vec(mut self, kind: &str) -> Vec<FieldIssue> {
        if self.omitted > 0 {
            self.listed.push(FieldIssue::new(
                "$",
                format!(
                    "{} more {kind} not listed (at most {MAX_LISTED_ISSUES} are listed)",
                    self.omitted
                ),
            ));
        }
        self.listed
    }
}

/// Which spelling of OAuth flows: v0.3 OpenAPI or the v1.0 proto's JSON.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FlowShape {
    OpenApi,
    ProtoJson,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Required,
    /// Required, and empty is an error in every version (endpoint URLs: nothing to route to).
    NonEmpty,
    Optional,
}
use Need::{NonEmpty, Optional, Required};

struct Checker<'a> {
    version: SpecVersion,
    errors: IssueList,
    warnings: IssueList,
    /// Names declared in `securitySchemes`, for checking the references to them.
    scheme_names: HashSet<&'a str>,
    /// The input-constraints extension's params and their path, for its own parser.
    input_constraints: Option<(&'a Value, String)>,
}

impl<'a> Checker<'a> {
    fn new(version: SpecVersion) -> Self {
        Checker {
            version,
            errors: IssueList::default(),
            warnings: IssueList::default(),
            scheme_names: HashSet::new(),
            input_constraints: None,
        }
    }

    fn finish(self, card: &Value) -> Report {
        let errors = self.errors.into_vec("errors");
        let warnings = self.warnings.into_vec("warnings");
        let valid = errors.is_empty();
        Report {
            valid,
            spec_version: self.version,
            preview: valid.then(|| preview(card, self.version, self.input_constraints)),
            errors,
            warnings,
        }
    }

    fn error(&mut self, at: &Path, message: impl Into<String>) {
        self.errors.add(at, message);
    }

    fn warn(&mut self, at: &Path, message: impl Into<String>) {
        self.warnings.add(at, message);
    }

    /// A required value that is present but empty. v1.0 (AIP-203) forbids it; v0.3's schema
    /// allows it, so there it is only a warning.
    fn required_but_empty(&mut self, at: &Path, what: &str) {
        if self.version.has_v1_0_shape() {
            self.error(at, format!("must not be {what}"));
        } else {
            self.warn(at, format!("is {what}; v1.0 requires a non-empty value"));
        }
    }

    fn type_error(&mut self, at: &Path, expected: &str, found: &Value) {
        self.error(
            at,
            format!("expected {expected}, found {}", describe(found)),
        );
    }

    /// The value at `object[key]`; null counts as absent. Reports a missing required field.
    fn field(
        &mut self,
        object: &'a Map<String, Value>,
        key: &str,
        at: &Path,
        need: Need,
    ) -> Option<&'a Value> {
        match object.get(key) {
            Some(value) if !value.is_null() => Some(value),
            found => {
                if need != Optional {
                    let message = if found.is_some() {
                        "required field is null"
                    } else {
                        "required field is missing"
                    };
                    self.error(&at.key(key), message);
                }
                None
            }
        }
    }

    fn string(
        &mut self,
        object: &'a Map<String, Value>,
        key: &str,
        at: &Path,
        need: Need,
    ) -> Option<&'a str> {
        let value = self.field(object, key, at, need)?;
        match value.as_str() {
            Some(text) => {
                if text.is_empty() {
                    match need {
                        Required => self.required_but_empty(&at.key(key), "an empty string"),
                        NonEmpty => self.error(&at.key(key), "must not be an empty string"),
                        Optional => {}
                    }
                }
                Some(text)
            }
            None => {
                self.type_error(&at.key(key), "a string", value);
                None
            }
        }
    }

    fn boolean(&mut self, object: &'a Map<String, Value>, key: &str, at: &Path) -> Option<bool> {
        let value = self.field(object, key, at, Optional)?;
        let flag = value.as_bool();
        if flag.is_none() {
            self.type_error(&at.key(key), "a boolean", value);
        }
        flag
    }

    fn object(
        &mut self,
        object: &'a Map<String, Value>,
        key: &str,
        at: &Path,
        need: Need,
    ) -> Option<&'a Map<String, Value>> {
        let value = self.field(object, key, at, need)?;
        let inner = value.as_object();
        if inner.is_none() {
            self.type_error(&at.key(key), "an object", value);
        }
        inner
    }

    fn array(
        &mut self,
        object: &'a Map<String, Value>,
        key: &str,
        at: &Path,
        need: Need,
    ) -> Option<&'a [Value]> {
        let value = self.field(object, key, at, need)?;
        match value.as_array() {
            Some(items) => {
                if items.is_empty() && need != Optional {
                    self.required_but_empty(&at.key(key), "an empty array");
                }
                Some(items)
            }
            None => {
                self.type_error(&at.key(key), "an array", value);
                None
            }
        }
    }

    /// An array of strings; returns the entries that are strings, with their index.
    fn string_array(
        &mut self,
        object: &'a Map<String, Value>,
        key: &str,
        at: &Path,
        need: Need,
    ) -> Vec<(usize, &'a str)> {
        let Some(items) = self.array(object, key, at, need) else {
            return Vec::new();
        };
        let here = at.key(key);
        let mut strings = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(text) => strings.push((index, text)),
                None => self.type_error(&here.index(index), "a string", item),
            }
        }
        strings
    }

    /// `items[index]` as an object, or an error naming what it is instead.
    fn element(&mut self, item: &'a Value, at: &Path) -> Option<&'a Map<String, Value>> {
        let object = item.as_object();
        if object.is_none() {
            self.type_error(at, "an object", item);
        }
        object
    }

    // -----------------------------------------------------------------------------------------

    fn card(&mut self, card: &'a Value) {
        let root = Path::ROOT;
        let Some(card) = card.as_object() else {
            self.type_error(&root, "an object (the agent card)", card);
            return;
        };
        self.string(card, "name", &root, Required);
        self.string(card, "description", &root, Required);
        self.string(card, "version", &root, Required);
        self.endpoints(card);
        self.capabilities(card);
        for key in ["defaultInputModes", "defaultOutputModes"] {
            self.media_types(card, key, &root, Required);
        }
        // Schemes first: skills refer to them.
        self.security(card);
        self.skills(card);
        self.provider(card);
        self.string(card, "documentationUrl", &root, Optional);
        self.string(card, "iconUrl", &root, Optional);
        self.signatures(card);
        if self.version == SpecVersion::V1_0 {
            self.removed_in_v1_0(card);
        }
    }

    fn endpoints(&mut self, card: &'a Map<String, Value>) {
        match self.version {
            SpecVersion::V0_3 => self.v0_3_fields(card),
            SpecVersion::V1_0 => self.supported_interfaces(card),
            SpecVersion::Hybrid => {
                self.supported_interfaces(card);
                self.v0_3_fields(card);
                self.hybrid_url_is_an_interface(card);
            }
            SpecVersion::Unknown => self.error(
                &Path::ROOT.key("supportedInterfaces"),
                "required field is missing: a v1.0 card needs supportedInterfaces and a v0.3 \
                 card needs url, and this card has neither",
            ),
        }
    }

    /// v0.3 top-level fields: `url` (+ `preferredTransport`), `protocolVersion`,
    /// `additionalInterfaces`, `supportsAuthenticatedExtendedCard`.
    fn v0_3_fields(&mut self, card: &'a Map<String, Value>) {
        let root = Path::ROOT;
        let transport = self.transport(card, "preferredTransport", &root, Optional);
        if let Some(url) = self.string(card, "url", &root, NonEmpty) {
            self.endpoint_url(&root.key("url"), url, transport);
        }
        if card.get("protocolVersion").is_none_or(Value::is_null) {
            self.warn(
                &root.key("protocolVersion"),
                "missing: v0.3 requires it (clients assume \"0.3.0\")",
            );
        } else {
            self.string(card, "protocolVersion", &root, Required);
        }
        if let Some(interfaces) = self.array(card, "additionalInterfaces", &root, Optional) {
            let list = root.key("additionalInterfaces");
            for (index, item) in interfaces.iter().enumerate() {
                let at = list.index(index);
                let Some(interface) = self.element(item, &at) else {
                    continue;
                };
                let transport = self.transport(interface, "transport", &at, Required);
                if let Some(url) = self.string(interface, "url", &at, NonEmpty) {
                    self.endpoint_url(&at.key("url"), url, transport);
                }
            }
        }
        self.boolean(card, "supportsAuthenticatedExtendedCard", &root);
    }

    /// v1.0: `supportedInterfaces[]` with url, protocolBinding, protocolVersion.
    fn supported_interfaces(&mut self, card: &'a Map<String, Value>) {
        let root = Path::ROOT;
        let Some(interfaces) = self.array(card, "supportedInterfaces", &root, Required) else {
            return;
        };
        let list = root.key("supportedInterfaces");
        for (index, item) in interfaces.iter().enumerate() {
            let at = list.index(index);
            let Some(interface) = self.element(item, &at) else {
                continue;
            };
            let binding = self.transport(interface, "protocolBinding", &at, Required);
            if let Some(url) = self.string(interface, "url", &at, NonEmpty) {
                self.endpoint_url(&at.key("url"), url, binding);
            }
            if let Some(version) = self.string(interface, "protocolVersion", &at, Required) {
                if !version.is_empty() && !is_major_minor(version) {
                    self.warn(
                        &at.key("protocolVersion"),
                        format!(
                            "expected Major.Minor such as \"1.0\" or \"0.3\", found {}",
                            quote(version)
                        ),
                    );
                }
            }
            self.string(interface, "tenant", &at, Optional);
        }
    }

    /// a2a-sdk derives `url` from a 0.3 entry of `supportedInterfaces`; anything else means v0.3
    /// and v1.0 clients would be sent to different places.
    fn hybrid_url_is_an_interface(&mut self, card: &'a Map<String, Value>) {
        let Some(url) = card.get("url").and_then(Value::as_str) else {
            return;
        };
        let interfaces = card.get("supportedInterfaces").and_then(Value::as_array);
        let listed = interfaces.is_some_and(|interfaces| {
            interfaces
                .iter()
                .any(|interface| interface.get("url").and_then(Value::as_str) == Some(url))
        });
        if !listed {
            self.warn(
                &Path::ROOT.key("url"),
                format!(
                    "{} is not the url of any supportedInterfaces entry: v0.3 and v1.0 clients \
                     would reach different endpoints",
                    quote(url)
                ),
            );
        }
    }

    /// A transport / protocol binding name; unknown names are allowed but flagged.
    fn transport(
        &mut self,
        object: &'a Map<String, Value>,
        key: &str,
        at: &Path,
        need: Need,
    ) -> Option<&'a str> {
        let name = self.string(object, key, at, need)?;
        if !name.is_empty() && !KNOWN_BINDINGS.contains(&name) {
            self.warn(
                &at.key(key),
                format!(
                    "unknown protocol binding {} (the core ones are JSONRPC, GRPC, HTTP+JSON)",
                    quote(name)
                ),
            );
        }
        Some(name)
    }

    fn endpoint_url(&mut self, at: &Path, url: &str, binding: Option<&str>) {
        if url.is_empty() || is_absolute_http_url(url) {
            return;
        }
        if binding == Some("GRPC") && is_host_port(url) {
            return;
        }
        self.warn(
            at,
            format!("endpoint is not an absolute http(s) URL: {}", quote(url)),
        );
    }

    fn capabilities(&mut self, card: &'a Map<String, Value>) {
        let root = Path::ROOT;
        let Some(capabilities) = self.object(card, "capabilities", &root, Required) else {
            return;
        };
        let at = root.key("capabilities");
        for key in ["streaming", "pushNotifications", "extendedAgentCard"] {
            self.boolean(capabilities, key, &at);
        }
        if self
            .boolean(capabilities, "stateTransitionHistory", &at)
            .is_some()
        {
            self.warn(
                &at.key("stateTransitionHistory"),
                "deprecated: removed in A2A v1.0, where clients ignore it",
            );
        }
        self.extensions(capabilities, &at);
    }

    fn extensions(&mut self, capabilities: &'a Map<String, Value>, at: &Path) {
        let Some(extensions) = self.array(capabilities, "extensions", at, Optional) else {
            return;
        };
        let list = at.key("extensions");
        // Hash maps, not scans: a hostile card may list 100k entries.
        let mut first_index: HashMap<&str, usize> = HashMap::new();
        for (index, item) in extensions.iter().enumerate() {
            let here = list.index(index);
            let Some(extension) = self.element(item, &here) else {
                continue;
            };
            let uri = self.string(extension, "uri", &here, Required);
            self.string(extension, "description", &here, Optional);
            self.boolean(extension, "required", &here);
            let params = self.object(extension, "params", &here, Optional);
            let Some(uri) = uri.filter(|uri| !uri.is_empty()) else {
                continue;
            };
            if let Some(first) = first_index.get(uri) {
                self.warn(
                    &here.key("uri"),
                    format!(
                        "duplicate of capabilities.extensions[{first}].uri {}",
                        quote(uri)
                    ),
                );
                continue;
            }
            first_index.insert(uri, index);
            if uri == INPUT_CONSTRAINTS_URI {
                match (params, extension.get("params")) {
                    (Some(_), Some(raw)) => {
                        self.input_constraints = Some((raw, here.key("params").render()));
                    }
                    (None, None) | (None, Some(Value::Null)) => self.warn(
                        &here.key("params"),
                        "the input-constraints extension has no params, so it advertises no limits",
                    ),
                    _ => {} // Wrong type: already an error.
                }
            }
        }
    }

    fn media_types(&mut self, object: &'a Map<String, Value>, key: &str, at: &Path, need: Need) {
        let here = at.key(key);
        for (index, mode) in self.string_array(object, key, at, need) {
            if !is_media_type(mode) {
                self.warn(
                    &here.index(index),
                    format!("{} is not a media type (type/subtype)", quote(mode)),
                );
            }
        }
    }

    fn skills(&mut self, card: &'a Map<String, Value>) {
        let root = Path::ROOT;
        let Some(skills) = self.array(card, "skills", &root, Required) else {
            return;
        };
        let list = root.key("skills");
        let mut first_index: HashMap<&str, usize> = HashMap::new();
        for (index, item) in skills.iter().enumerate() {
            let at = list.index(index);
            let Some(skill) = self.element(item, &at) else {
                continue;
            };
            let id = self.string(skill, "id", &at, Required);
            self.string(skill, "name", &at, Required);
            self.string(skill, "description", &at, Required);
            self.string_array(skill, "tags", &at, Required);
            self.string_array(skill, "examples", &at, Optional);
            self.media_types(skill, "inputModes", &at, Optional);
            self.media_types(skill, "outputModes", &at, Optional);
            self.v0_3_security(skill, &at);
            if self.version == SpecVersion::V1_0
                && skill.get("security").is_some_and(|value| !value.is_null())
            {
                self.warn(&at.key("security"), SECURITY_REMOVED);
            }
            self.v1_0_security_requirements(skill, &at);
            if let Some(id) = id.filter(|id| !id.is_empty()) {
                if let Some(first) = first_index.get(id) {
                    self.warn(
                        &at.key("id"),
                        format!("duplicate of skills[{first}].id {}", quote(id)),
                    );
                } else {
                    first_index.insert(id, index);
                }
            }
        }
    }

    fn provider(&mut self, card: &'a Map<String, Value>) {
        let root = Path::ROOT;
        if let Some(provider) = self.object(card, "provider", &root, Optional) {
            let at = root.key("provider");
            self.string(provider, "organization", &at, Required);
            self.string(provider, "url", &at, Required);
        }
    }

    fn signatures(&mut self, card: &'a Map<String, Value>) {
        let root = Path::ROOT;
        let Some(signatures) = self.array(card, "signatures", &root, Optional) else {
            return;
        };
        let list = root.key("signatures");
        for (index, item) in signatures.iter().enumerate() {
            let at = list.index(index);
            let Some(signature) = self.element(item, &at) else {
                continue;
            };
            self.string(signature, "protected", &at, Required);
            self.string(signature, "signature", &at, Required);
            self.object(signature, "header", &at, Optional);
        }
    }

    /// v0.3 fields in a card that is otherwise v1.0 (a hybrid has `url` and may keep them).
    fn removed_in_v1_0(&mut self, card: &'a Map<String, Value>) {
        for key in V0_3_ONLY_TOP_LEVEL {
            if card.get(key).is_none_or(Value::is_null) {
                continue;
            }
            let message = match key {
                "supportsAuthenticatedExtendedCard" => {
                    "removed in v1.0: use capabilities.extendedAgentCard; v1.0 clients ignore it"
                }
                "security" => SECURITY_REMOVED,
                _ => "a v0.3 field, removed in v1.0; v1.0 clients ignore it",
            };
            self.warn(&Path::ROOT.key(key), message);
        }
    }

    // ---- security -------------------------------------------------------------------------

    fn security(&mut self, card: &'a Map<String, Value>) {
        let root = Path::ROOT;
        if let Some(schemes) = self.object(card, "securitySchemes", &root, Optional) {
            let at = root.key("securitySchemes");
            for (name, scheme) in schemes {
                self.scheme_names.insert(name);
                let here = at.key(name);
                if let Some(scheme) = self.element(scheme, &here) {
                    self.security_scheme(scheme, &here);
                }
            }
        }
        // A v1.0 card's `security` is only warned about (removed_in_v1_0).
        if self.version != SpecVersion::V1_0 {
            self.v0_3_security(card, &root);
        }
        self.v1_0_security_requirements(card, &root);
    }

    /// One `securitySchemes` entry: the v0.3 OpenAPI form (`type`), the v1.0 oneof wrapper, or
    /// both merged (a2a-sdk hybrid). Each form found is checked; the version decides which one
    /// must be there.
    fn security_scheme(&mut self, scheme: &'a Map<String, Value>, at: &Path) {
        let has_type = scheme.get("type").is_some_and(|value| !value.is_null());
        let wrappers: Vec<&str> = V1_0_SCHEME_WRAPPERS
            .iter()
            .copied()
            .filter(|wrapper| scheme.get(*wrapper).is_some_and(|value| !value.is_null()))
            .collect();
        let wrapper_list = V1_0_SCHEME_WRAPPERS.join(", ");
        match self.version {
            SpecVersion::V0_3 if !has_type => self.error(
                &at.key("type"),
                if wrappers.is_empty() {
                    "required field is missing".to_owned()
                } else {
                    format!(
                        "required field is missing: a v0.3 card uses the OpenAPI form with \
                         `type`, found the v1.0 wrapper {}",
                        wrappers.join(", ")
                    )
                },
            ),
            SpecVersion::V1_0 if wrappers.is_empty() => self.error(
                at,
                if has_type {
                    format!(
                        "expected one of {wrapper_list}: the OpenAPI form with `type` is v0.3 only"
                    )
                } else {
                    format!("expected one of {wrapper_list}")
                },
            ),
            SpecVersion::Hybrid | SpecVersion::Unknown if !has_type && wrappers.is_empty() => self
                .error(
                    at,
                    format!(
                        "expected `type` (v0.3) or one of {wrapper_list} (v1.0), found neither"
                    ),
                ),
            _ => {}
        }
        if has_type {
            self.openapi_scheme(scheme, at);
        }
        if wrappers.len() > 1 {
            self.error(
                at,
                format!(
                    "a security scheme holds exactly one of {wrapper_list}, found {}: {}",
                    wrappers.len(),
                    wrappers.join(", ")
                ),
            );
        }
        for wrapper in wrappers {
            let here = at.key(wrapper);
            if let Some(inner) = self.object(scheme, wrapper, at, Required) {
                self.wrapped_scheme(wrapper, inner, &here);
            }
        }
    }

    /// v0.3: `{type: apiKey|http|oauth2|openIdConnect|mutualTLS, …}`.
    fn openapi_scheme(&mut self, scheme: &'a Map<String, Value>, at: &Path) {
        self.string(scheme, "description", at, Optional);
        let Some(scheme_type) = self.string(scheme, "type", at, Required) else {
            return;
        };
        match scheme_type {
            "apiKey" => {
                self.api_key_location(scheme, "in", at);
                self.string(scheme, "name", at, Required);
            }
            "http" => {
                self.string(scheme, "scheme", at, Required);
                self.string(scheme, "bearerFormat", at, Optional);
            }
            "oauth2" => {
                self.string(scheme, "oauth2MetadataUrl", at, Optional);
                if let Some(flows) = self.object(scheme, "flows", at, Required) {
                    self.openapi_flows(flows, &at.key("flows"));
                }
            }
            "openIdConnect" => {
                self.string(scheme, "openIdConnectUrl", at, Required);
            }
            "mutualTLS" => {}
            "" => {} // Already reported as empty.
            other => self.error(
                &at.key("type"),
                format!(
                    "unknown security scheme type {} (expected one of {})",
                    quote(other),
                    V0_3_SCHEME_TYPES.join(", ")
                ),
            ),
        }
    }

    /// v1.0 wrappers: `apiKeySecurityScheme{location,name}`, `httpAuthSecurityScheme{scheme}`, …
    fn wrapped_scheme(&mut self, wrapper: &str, inner: &'a Map<String, Value>, at: &Path) {
        self.string(inner, "description", at, Optional);
        match wrapper {
            "apiKeySecurityScheme" => {
                self.api_key_location(inner, "location", at);
                self.string(inner, "name", at, Required);
            }
            "httpAuthSecurityScheme" => {
                self.string(inner, "scheme", at, Required);
                self.string(inner, "bearerFormat", at, Optional);
            }
            "oauth2SecurityScheme" => {
                self.string(inner, "oauth2MetadataUrl", at, Optional);
                if let Some(flows) = self.object(inner, "flows", at, Required) {
                    self.v1_0_flows(flows, &at.key("flows"));
                }
            }
            "openIdConnectSecurityScheme" => {
                self.string(inner, "openIdConnectUrl", at, Required);
            }
            _ => {} // mtlsSecurityScheme has only a description.
        }
    }

    fn api_key_location(&mut self, scheme: &'a Map<String, Value>, key: &str, at: &Path) {
        if let Some(location) = self.string(scheme, key, at, Required) {
            if !location.is_empty() && !API_KEY_LOCATIONS.contains(&location) {
                self.error(
                    &at.key(key),
                    format!(
                        "expected \"query\", \"header\" or \"cookie\", found {}",
                        quote(location)
                    ),
                );
            }
        }
    }

    /// v0.3 OpenAPI flows: any number of them, at least one.
    fn openapi_flows(&mut self, flows: &'a Map<String, Value>, at: &Path) {
        let mut declared = 0;
        for flow_name in [
            "authorizationCode",
            "clientCredentials",
            "implicit",
            "password",
        ] {
            let Some(flow) = self.object(flows, flow_name, at, Optional) else {
                continue;
            };
            declared += 1;
            let here = at.key(flow_name);
            self.flow(flow_name, flow, &here, FlowShape::OpenApi);
        }
        if declared == 0 {
            self.error(
                at,
                "declares no flow: expected at least one of authorizationCode, \
                 clientCredentials, implicit, password",
            );
        }
    }

    /// v1.0 `OAuthFlows` is a oneof: exactly one flow.
    fn v1_0_flows(&mut self, flows: &'a Map<String, Value>, at: &Path) {
        const FLOWS: [&str; 5] = [
            "authorizationCode",
            "clientCredentials",
            "deviceCode",
            "implicit",
            "password",
        ];
        let mut declared = Vec::new();
        for flow_name in FLOWS {
            let Some(flow) = self.object(flows, flow_name, at, Optional) else {
                continue;
            };
            declared.push(flow_name);
            self.flow(flow_name, flow, &at.key(flow_name), FlowShape::ProtoJson);
        }
        match declared.len() {
            0 => self.error(
                at,
                format!("declares no flow: expected one of {}", FLOWS.join(", ")),
            ),
            1 => {}
            count => self.error(
                at,
                format!(
                    "flows is a oneof holding exactly one flow, found {count}: {}",
                    declared.join(", ")
                ),
            ),
        }
    }

    fn flow(&mut self, flow_name: &str, flow: &'a Map<String, Value>, at: &Path, shape: FlowShape) {
        let required_urls: &[&str] = match flow_name {
            "authorizationCode" => &["authorizationUrl", "tokenUrl"],
            "clientCredentials" => &["tokenUrl"],
            "deviceCode" => &["deviceAuthorizationUrl", "tokenUrl"],
            // v1.0 makes every field of the deprecated flows optional; v0.3 requires these.
            "implicit" if shape == FlowShape::OpenApi => &["authorizationUrl"],
            "password" if shape == FlowShape::OpenApi => &["tokenUrl"],
            _ => &[],
        };
        // v0.3 requires `scopes` in every flow (types.ts). ProtoJSON drops an empty map, so in
        // the v1.0 form a missing `scopes` is an empty one.
        let scopes = match shape {
            FlowShape::OpenApi => Required,
            FlowShape::ProtoJson => Optional,
        };
        for key in required_urls {
            self.string(flow, key, at, Required);
        }
        for key in [
            "authorizationUrl",
            "tokenUrl",
            "deviceAuthorizationUrl",
            "refreshUrl",
        ] {
            if !required_urls.contains(&key) {
                self.string(flow, key, at, Optional);
            }
        }
        if flow_name == "authorizationCode" {
            self.boolean(flow, "pkceRequired", at);
        }
        if let Some(scope_map) = self.object(flow, "scopes", at, scopes) {
            let here = at.key("scopes");
            for (scope, description) in scope_map {
                if !description.is_string() {
                    self.type_error(&here.key(scope), "a string", description);
                }
            }
        }
        match flow_name {
            "implicit" => self.warn(
                at,
                "deprecated: the OAuth implicit flow is removed in A2A v1.0; use \
                 authorizationCode with PKCE",
            ),
            "password" => self.warn(
                at,
                "deprecated: the OAuth password flow is removed in A2A v1.0; use \
                 authorizationCode with PKCE or deviceCode",
            ),
            _ => {}
        }
    }

    /// v0.3 `security: [{scheme: [scopes]}]`, on the card or on a skill.
    fn v0_3_security(&mut self, object: &'a Map<String, Value>, at: &Path) {
        let Some(requirements) = self.array(object, "security", at, Optional) else {
            return;
        };
        let list = at.key("security");
        for (index, item) in requirements.iter().enumerate() {
            let here = list.index(index);
            let Some(requirement) = self.element(item, &here) else {
                continue;
            };
            for (name, scopes) in requirement {
                self.scheme_reference(name, &here);
                let scope_path = here.key(name);
                match scopes.as_array() {
                    Some(scopes) => {
                        for (position, scope) in scopes.iter().enumerate() {
                            if !scope.is_string() {
                                self.type_error(&scope_path.index(position), "a string", scope);
                            }
                        }
                    }
                    None => self.type_error(&scope_path, "an array of scopes", scopes),
                }
            }
        }
    }

    /// v1.0 `securityRequirements: [{schemes: {name: {list: [scopes]}}}]`.
    fn v1_0_security_requirements(&mut self, object: &'a Map<String, Value>, at: &Path) {
        let Some(requirements) = self.array(object, "securityRequirements", at, Optional) else {
            return;
        };
        let list = at.key("securityRequirements");
        for (index, item) in requirements.iter().enumerate() {
            let here = list.index(index);
            let Some(requirement) = self.element(item, &here) else {
                continue;
            };
            // ProtoJSON drops an empty map, so `schemes` may be absent.
            let Some(schemes) = self.object(requirement, "schemes", &here, Optional) else {
                continue;
            };
            let schemes_path = here.key("schemes");
            for (name, scopes) in schemes {
                self.scheme_reference(name, &schemes_path);
                let scope_path = schemes_path.key(name);
                if let Some(scopes) = self.element(scopes, &scope_path) {
                    self.string_array(scopes, "list", &scope_path, Optional);
                }
            }
        }
    }

    fn scheme_reference(&mut self, name: &str, at: &Path) {
        if !self.scheme_names.contains(name) {
            self.error(
                &at.key(name),
                format!(
                    "refers to security scheme {}, which securitySchemes does not declare",
                    quote(name)
                ),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Preview (built only for a card that passed, so shapes are known good; still no panics).

fn preview(
    card: &Value,
    version: SpecVersion,
    input_constraints: Option<(&Value, String)>,
) -> Preview {
    let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or_default().to_owned();
    Preview {
        name: text(card.get("name")),
        description: text(card.get("description")),
        spec_version: version,
        interfaces: preview_interfaces(card, version),
        extensions: card
            .pointer("/capabilities/extensions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|extension| ExtensionPreview {
                uri: text(extension.get("uri")),
                required: extension
                    .get("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
            .collect(),
        security_schemes: card
            .get("securitySchemes")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(name, scheme)| SecuritySchemePreview {
                name: name.clone(),
                scheme_type: preview_scheme_type(scheme),
            })
            .collect(),
        skills_count: card
            .get("skills")
            .and_then(Value::as_array)
            .map_or(0, Vec::len),
        // The limits as the gateway reads them (bad fields dropped, numbers normalized).
        input_constraints: input_constraints.map(|(params, path)| {
            crate::card::constraints::InputConstraints::parse(params, &path)
                .0
                .to_json()
        }),
    }
}

fn preview_interfaces(card: &Value, version: SpecVersion) -> Vec<InterfacePreview> {
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    if version.has_v1_0_shape() {
        // In a hybrid card the v0.3 fields are derived from these, so these are the whole list.
        return card
            .get("supportedInterfaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|interface| InterfacePreview {
                url: text(interface.get("url")).unwrap_or_default(),
                binding: text(interface.get("protocolBinding")).unwrap_or_default(),
                version: text(interface.get("protocolVersion")).unwrap_or_default(),
            })
            .collect();
    }
    let protocol_version = text(card.get("protocolVersion")).unwrap_or_else(|| "0.3.0".to_owned());
    let mut interfaces = Vec::new();
    if let Some(url) = text(card.get("url")) {
        interfaces.push(InterfacePreview {
            url,
            binding: text(card.get("preferredTransport")).unwrap_or_else(|| "JSONRPC".to_owned()),
            version: protocol_version.clone(),
        });
    }
    for interface in card
        .get("additionalInterfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let entry = InterfacePreview {
            url: text(interface.get("url")).unwrap_or_default(),
            binding: text(interface.get("transport")).unwrap_or_default(),
            version: protocol_version.clone(),
        };
        // v0.3 asks agents to repeat the main url here; list it once. (Only the main entry is
        // compared: deduplicating the whole list would be quadratic in hostile input.)
        if interfaces.first() != Some(&entry) {
            interfaces.push(entry);
        }
    }
    interfaces
}

fn preview_scheme_type(scheme: &Value) -> String {
    if let Some(wrapper) = V1_0_SCHEME_WRAPPERS
        .iter()
        .find(|wrapper| scheme.get(**wrapper).is_some_and(|value| !value.is_null()))
    {
        return scheme_type_of_wrapper(wrapper).to_owned();
    }
    scheme
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_render_like_javascript() {
        let root = Path::ROOT;
        assert_eq!(root.render(), "$");
        let skills = root.key("skills");
        let first = skills.index(1);
        assert_eq!(first.key("id").render(), "skills[1].id");
        let schemes = root.key("securitySchemes");
        let odd = schemes.key("my scheme");
        assert_eq!(
            odd.key("type").render(),
            "securitySchemes[\"my scheme\"].type"
        );
        let mime = root.key("perMimeType");
        assert_eq!(mime.key("image/png").render(), "perMimeType[\"image/png\"]");
        assert_eq!(root.key("X-API-Key").render(), "X-API-Key");
        assert_eq!(root.key("\u{1b}[31m").render(), "[\"\\u001b[31m\"]");
    }

    #[test]
    fn absolute_http_urls() {
        for good in [
            "http://127.0.0.1:9999/",
            "https://agent.example.com/a2a",
            "HTTPS://example.com",
            "https://user@example.com/x?y#z",
        ] {
            assert!(is_absolute_http_url(good), "{good}");
        }
        for bad in [
            "",
            "/a2a",
            "example.com",
            "ftp://example.com",
            "https://",
            "https:///path",
            "https://:443/",
            "https://exa mple.com",
            "https://example.com/\n",
        ] {
            assert!(!is_absolute_http_url(bad), "{bad}");
        }
    }

    #[test]
    fn grpc_host_port() {
        assert!(is_host_port("grpc.example.com:443"));
        assert!(!is_host_port("grpc.example.com"));
        assert!(!is_host_port("grpc.example.com:https"));
        assert!(!is_host_port(":443"));
        assert!(!is_host_port("a/b:443"));
    }

    #[test]
    fn small_value_checks() {
        assert!(is_media_type("image/png"));
        assert!(!is_media_type("text"));
        assert!(!is_media_type("/png"));
        assert!(is_major_minor("1.0"));
        assert!(is_major_minor("0.3"));
        assert!(!is_major_minor("1"));
        assert!(!is_major_minor("v1.0"));
        assert!(!is_major_minor("1."));
    }

    #[test]
    fn describes_values_with_their_content() {
        assert_eq!(describe(&json!(42)), "number 42");
        assert_eq!(describe(&json!("ab")), "string \"ab\"");
        assert_eq!(describe(&json!([1])), "an array of 1 item");
        assert_eq!(
            describe(&json!({"a": 1, "b": 2})),
            "an object with 2 fields"
        );
        let long = "x".repeat(500);
        let described = describe(&json!(long));
        assert!(described.ends_with("…"), "{described}");
        assert!(described.chars().count() < 80, "{described}");
    }

    #[test]
    fn printable_escapes_control_characters() {
        assert_eq!(printable("a\u{1b}[2Jb\n"), "a\\u{1b}[2Jb\\u{a}");
        assert_eq!(printable("x\u{202E}y"), "x\\u{202e}y");
        assert_eq!(printable(&"y".repeat(1000)).chars().count(), 301);
    }

    #[test]
    fn issue_lists_are_bounded() {
        let skills: Vec<Value> = (0..1000).map(|_| json!({})).collect();
        let card = json!({"url": "http://a/", "skills": skills});
        let report = validate(&card);
        assert_eq!(report.errors.len(), MAX_LISTED_ISSUES + 1);
        let last = report.errors.last().unwrap();
        assert_eq!(last.field, "$");
        // name, description, version, capabilities, 2 modes + 4 per skill, minus those listed.
        let total = 6 + 4 * 1000;
        assert_eq!(
            last.message,
            format!(
                "{} more errors not listed (at most {MAX_LISTED_ISSUES} are listed)",
                total - MAX_LISTED_ISSUES
            )
        );
    }

    #[test]
    fn not_json_names_line_and_column() {
        let err = validate_bytes(b"{\n  \"name\": ,\n}").unwrap_err();
        assert_eq!((err.line, err.column), (2, 11));
        assert!(err.to_string().contains("line 2 column 11"), "{err}");
    }
}
