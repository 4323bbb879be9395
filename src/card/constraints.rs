//! The input-constraints extension (`https://inkeep.com/a2a-extensions/input-constraints/v1`), typed.
//!
//! The same shape is used for an operator's `constraints:` block in gateway.yaml.
//!
//! Numbers: card generators are written in many languages, so a limit is accepted as a JSON integer,
//! a float with no fraction (`1048576.0`, `1e6`), or a string of decimal digits (`"1048576"`).
//! Negative, fractional, non-finite, larger than 2^53 or otherwise non-numeric values are reported
//! with their path and dropped; the other fields of the block are kept.

use serde_json::{Map, Value};

use crate::card::{FieldIssue, INPUT_CONSTRAINTS_URI};

/// Largest integer a JSON float represents exactly; beyond it "no fraction" means nothing.
const MAX_EXACT_FLOAT: f64 = 9_007_199_254_740_992.0;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputConstraints {
    pub files: FileConstraints,
    pub text: TextConstraints,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileConstraints {
    pub max_total_size_bytes: Option<u64>,
    pub max_count_per_request: Option<u64>,
    pub max_size_per_file_bytes: Option<u64>,
    /// In the order the card lists them; keys as written (matching is case-insensitive).
    pub per_mime_type: Vec<(String, MimeConstraints)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MimeConstraints {
    pub max_size_bytes: Option<u64>,
    pub max_dimensions: Option<Dimensions>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimensions {
    pub width: u64,
    pub height: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextConstraints {
    pub max_characters: Option<u64>,
    pub max_tokens: Option<u64>,
    pub tokenizer: Option<String>,
}

impl InputConstraints {
    /// Parse extension params (or an operator's `constraints:` block; same shape). Bad fields are
    /// reported with their path under `path` and dropped; good ones are kept.
    pub fn parse(params: &Value, path: &str) -> (Self, Vec<FieldIssue>) {
        let mut issues = Vec::new();
        let mut out = InputConstraints::default();
        let Some(obj) = as_object(params, path, &mut issues) else {
            return (out, issues);
        };
        for (key, value) in obj {
            let here = join(path, key);
            match key.as_str() {
                "files" => out.files = parse_files(value, &here, &mut issues),
                "text" => out.text = parse_text(value, &here, &mut issues),
                _ => issues.push(unknown_field(&here)),
            }
        }
        (out, issues)
    }

    /// Find the extension in `capabilities.extensions[]` and parse its `params`.
    /// `None` when the card does not carry the extension.
    pub fn from_card(card: &Value) -> Option<(Self, Vec<FieldIssue>)> {
        let extensions = card.get("capabilities")?.get("extensions")?.as_array()?;
        let (index, ext) = extensions.iter().enumerate().find(|(_, ext)| {
            ext.get("uri").and_then(Value::as_str) == Some(INPUT_CONSTRAINTS_URI)
        })?;
        let path = format!("capabilities.extensions[{index}].params");
        match ext.get("params") {
            Some(params) => Some(Self::parse(params, &path)),
            None => Some((
                Self::default(),
                vec![FieldIssue::new(
                    path,
                    "missing: the input-constraints extension has no params, so it limits nothing",
                )],
            )),
        }
    }

    /// Write these limits into `card` as the extension's params, adding the extension when
    /// the card has none, so the served card advertises what the gateway enforces.
    pub fn advertise_in(&self, card: &mut Value) {
        let Some(obj) = card.as_object_mut() else {
            return;
        };
        let caps = obj
            .entry("capabilities")
            .or_insert_with(|| Value::Object(Default::default()));
        let Some(caps) = caps.as_object_mut() else {
            return;
        };
        let exts = caps
            .entry("extensions")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(exts) = exts.as_array_mut() else {
            return;
        };
        let params = self.to_json();
        match exts
            .iter_mut()
            .find(|e| e.get("uri").and_then(Value::as_str) == Some(INPUT_CONSTRAINTS_URI))
        {
            Some(Value::Object(ext)) => {
                ext.insert("params".into(), params);
            }
            _ => exts.push(serde_json::json!({
                "uri": INPUT_CONSTRAINTS_URI,
                "description": "Input limits, enforced by the gateway",
                "required": false,
                "params": params,
            })),
        }
    }

    /// Field-by-field stricter (smaller) of the two. A per-MIME entry present in either side is
    /// kept (matched case-insensitively). Token limits counted with different tokenizers cannot
    /// be compared, so `other` (the operator's side in `compile`) wins then.
    pub fn stricter(&self, other: &Self) -> Self {
        let mut per_mime = self.files.per_mime_type.clone();
        for (key, theirs) in &other.files.per_mime_type {
            match per_mime
                .iter_mut()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
            {
                Some((_, ours)) => {
                    ours.max_size_bytes = min_opt(ours.max_size_bytes, theirs.max_size_bytes);
                    ours.max_dimensions = match (ours.max_dimensions, theirs.max_dimensions) {
                        (Some(a), Some(b)) => Some(Dimensions {
                            width: a.width.min(b.width),
                            height: a.height.min(b.height),
                        }),
                        (a, b) => a.or(b),
                    };
                }
                None => per_mime.push((key.clone(), theirs.clone())),
            }
        }
        let (max_tokens, tokenizer) = match (&self.text, &other.text) {
            (a, b) if a.max_tokens.is_some() && b.max_tokens.is_some() => {
                if a.tokenizer == b.tokenizer {
                    (min_opt(a.max_tokens, b.max_tokens), a.tokenizer.clone())
                } else {
                    (b.max_tokens, b.tokenizer.clone())
                }
            }
            (a, b) if b.max_tokens.is_some() => {
                (b.max_tokens, b.tokenizer.clone().or(a.tokenizer.clone()))
            }
            (a, b) => (a.max_tokens, a.tokenizer.clone().or(b.tokenizer.clone())),
        };
        InputConstraints {
            files: FileConstraints {
                max_total_size_bytes: min_opt(
                    self.files.max_total_size_bytes,
                    other.files.max_total_size_bytes,
                ),
                max_count_per_request: min_opt(
                    self.files.max_count_per_request,
                    other.files.max_count_per_request,
                ),
                max_size_per_file_bytes: min_opt(
                    self.files.max_size_per_file_bytes,
                    other.files.max_size_per_file_bytes,
                ),
                per_mime_type: per_mime,
            },
            text: TextConstraints {
                max_characters: min_opt(self.text.max_characters, other.text.max_characters),
                max_tokens,
                tokenizer,
            },
        }
    }

    /// The extension params shape, camelCase, only the fields that are set.
    pub fn to_json(&self) -> Value {
        let mut root = Map::new();
        let mut files = Map::new();
        put(
            &mut files,
            "maxTotalSizeBytes",
            self.files.max_total_size_bytes,
        );
        put(
            &mut files,
            "maxCountPerRequest",
            self.files.max_count_per_request,
        );
        put(
            &mut files,
            "maxSizePerFileBytes",
            self.files.max_size_per_file_bytes,
        );
        if !self.files.per_mime_type.is_empty() {
            let mut per = Map::new();
            for (mime, c) in &self.files.per_mime_type {
                let mut entry = Map::new();
                put(&mut entry, "maxSizeBytes", c.max_size_bytes);
                if let Some(d) = c.max_dimensions {
                    entry.insert(
                        "maxDimensions".into(),
                        serde_json::json!({"width": d.width, "height": d.height}),
                    );
                }
                per.insert(mime.clone(), Value::Object(entry));
            }
            files.insert("perMimeType".into(), Value::Object(per));
        }
        if !files.is_empty() {
            root.insert("files".into(), Value::Object(files));
        }
        let mut text = Map::new();
        put(&mut text, "maxCharacters", self.text.max_characters);
        put(&mut text, "maxTokens", self.text.max_tokens);
        if let Some(t) = &self.text.tokenizer {
            text.insert("tokenizer".into(), Value::String(t.clone()));
        }
        if !text.is_empty() {
            root.insert("text".into(), Value::Object(text));
        }
        Value::Object(root)
    }

    /// True when no limit at all is set (a tokenizer name alone limits nothing).
    pub fn is_empty(&self) -> bool {
        let f = &self.files;
        f.max_total_size_bytes.is_none()
            && f.max_count_per_request.is_none()
            && f.max_size_per_file_bytes.is_none()
            && f.per_mime_type
                .iter()
                .all(|(_, c)| c.max_size_bytes.is_none() && c.max_dimensions.is_none())
            && self.text.max_characters.is_none()
            && self.text.max_tokens.is_none()
    }
}

fn parse_files(value: &Value, path: &str, issues: &mut Vec<FieldIssue>) -> FileConstraints {
    let mut out = FileConstraints::default();
    let Some(obj) = as_object(value, path, issues) else {
        return out;
    };
    for (key, value) in obj {
        let here = join(path, key);
        match key.as_str() {
            "maxTotalSizeBytes" => out.max_total_size_bytes = parse_limit(value, &here, issues),
            "maxCountPerRequest" => out.max_count_per_request = parse_limit(value, &here, issues),
            "maxSizePerFileBytes" => {
                out.max_size_per_file_bytes = parse_limit(value, &here, issues)
            }
            "perMimeType" => out.per_mime_type = parse_per_mime(value, &here, issues),
            _ => issues.push(unknown_field(&here)),
        }
    }
    out
}

fn parse_per_mime(
    value: &Value,
    path: &str,
    issues: &mut Vec<FieldIssue>,
) -> Vec<(String, MimeConstraints)> {
    let mut out = Vec::new();
    let Some(obj) = as_object(value, path, issues) else {
        return out;
    };
    for (mime, value) in obj {
        let here = format!("{path}[{}]", Value::String(mime.clone()));
        if !is_media_range(mime) {
            issues.push(FieldIssue::new(
                here,
                format!("invalid media type {mime:?}: expected type/subtype (e.g. \"image/png\" or \"image/*\"); entry ignored"),
            ));
            continue;
        }
        let Some(entry) = as_object(value, &here, issues) else {
            continue;
        };
        let mut c = MimeConstraints::default();
        for (key, value) in entry {
            let field = join(&here, key);
            match key.as_str() {
                "maxSizeBytes" => c.max_size_bytes = parse_limit(value, &field, issues),
                "maxDimensions" => c.max_dimensions = parse_dimensions(value, &field, issues),
                _ => issues.push(unknown_field(&field)),
            }
        }
        out.push((mime.clone(), c));
    }
    out
}

fn parse_dimensions(value: &Value, path: &str, issues: &mut Vec<FieldIssue>) -> Option<Dimensions> {
    let obj = as_object(value, path, issues)?;
    let mut width = None;
    let mut height = None;
    let mut bad = false;
    for (key, value) in obj {
        let here = join(path, key);
        match key.as_str() {
            "width" => {
                width = parse_limit(value, &here, issues);
                bad |= width.is_none();
            }
            "height" => {
                height = parse_limit(value, &here, issues);
                bad |= height.is_none();
            }
            _ => issues.push(unknown_field(&here)),
        }
    }
    match (width, height) {
        (Some(width), Some(height)) => Some(Dimensions { width, height }),
        _ => {
            if !bad {
                issues.push(FieldIssue::new(
                    path,
                    "maxDimensions needs both width and height; ignored",
                ));
            }
            None
        }
    }
}

fn parse_text(value: &Value, path: &str, issues: &mut Vec<FieldIssue>) -> TextConstraints {
    let mut out = TextConstraints::default();
    let Some(obj) = as_object(value, path, issues) else {
        return out;
    };
    for (key, value) in obj {
        let here = join(path, key);
        match key.as_str() {
            "maxCharacters" => out.max_characters = parse_limit(value, &here, issues),
            "maxTokens" => out.max_tokens = parse_limit(value, &here, issues),
            "tokenizer" => match value {
                Value::String(s) if !s.trim().is_empty() => {
                    out.tokenizer = Some(s.trim().to_owned())
                }
                other => issues.push(FieldIssue::new(
                    here,
                    format!(
                        "expected a tokenizer name such as \"cl100k_base\", got {}",
                        describe(other)
                    ),
                )),
            },
            _ => issues.push(unknown_field(&here)),
        }
    }
    out
}

/// A non-negative integer limit, in any of the spellings documented at the top of this file.
pub(crate) fn parse_limit(value: &Value, path: &str, issues: &mut Vec<FieldIssue>) -> Option<u64> {
    let problem = match value {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                return Some(u);
            }
            if let Some(i) = n.as_i64() {
                format!("must not be negative, got {i}")
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if !f.is_finite() {
                    format!("must be a finite number, got {n}")
                } else if f < 0.0 {
                    format!("must not be negative, got {n}")
                } else if f.fract() != 0.0 {
                    format!("must be a whole number, got {n}")
                } else if f > MAX_EXACT_FLOAT {
                    format!("too large to be exact (limit 9007199254740992), got {n}")
                } else {
                    return Some(f as u64);
                }
            }
        }
        Value::String(s) => {
            let t = s.trim();
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                match t.parse::<u64>() {
                    Ok(u) => return Some(u),
                    Err(_) => format!("too large (limit 18446744073709551615), got {s:?}"),
                }
            } else {
                format!("expected a non-negative whole number, got the string {s:?}")
            }
        }
        other => format!(
            "expected a non-negative whole number, got {}",
            describe(other)
        ),
    };
    issues.push(FieldIssue::new(path, format!("{problem}; ignored")));
    None
}

fn as_object<'a>(
    value: &'a Value,
    path: &str,
    issues: &mut Vec<FieldIssue>,
) -> Option<&'a Map<String, Value>> {
    match value {
        Value::Object(m) => Some(m),
        other => {
            issues.push(FieldIssue::new(
                path,
                format!("expected an object, got {}; ignored", describe(other)),
            ));
            None
        }
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {:?}", truncate(s, 40)),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn unknown_field(path: &str) -> FieldIssue {
    FieldIssue::new(path, "unknown field; ignored")
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<u64>) {
    if let Some(v) = value {
        map.insert(key.into(), Value::from(v));
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `type/subtype` with RFC 6838 token characters, or `type/*`, or `*/*`; parameters are not allowed.
fn is_media_range(s: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    match s.split_once('/') {
        Some(("*", "*")) => true,
        Some((t, "*")) => token(t),
        Some((t, st)) => token(t) && token(st),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: &str = "capabilities.extensions[0].params";

    #[test]
    fn parses_the_seed_example() {
        let params = json!({
            "files": {"maxTotalSizeBytes": 52428800, "maxCountPerRequest": 10, "maxSizePerFileBytes": 20971520,
                "perMimeType": {
                    "image/png": {"maxSizeBytes": 10485760, "maxDimensions": {"width": 4096, "height": 4096}},
                    "image/jpeg": {"maxSizeBytes": 20971520, "maxDimensions": {"width": 8192, "height": 8192}},
                    "application/pdf": {"maxSizeBytes": 52428800}}},
            "text": {"maxCharacters": 100000, "maxTokens": 128000, "tokenizer": "cl100k_base"}
        });
        let (c, issues) = InputConstraints::parse(&params, P);
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(c.files.max_total_size_bytes, Some(52428800));
        assert_eq!(c.files.max_count_per_request, Some(10));
        assert_eq!(c.files.max_size_per_file_bytes, Some(20971520));
        // Order is the card's as serde_json's Map keeps it (sorted unless `preserve_order`).
        let get = |k: &str| {
            &c.files
                .per_mime_type
                .iter()
                .find(|(m, _)| m == k)
                .unwrap()
                .1
        };
        assert_eq!(c.files.per_mime_type.len(), 3);
        assert_eq!(
            get("image/png").max_dimensions,
            Some(Dimensions {
                width: 4096,
                height: 4096
            })
        );
        assert_eq!(get("application/pdf").max_dimensions, None);
        assert_eq!(get("application/pdf").max_size_bytes, Some(52428800));
        assert_eq!(c.text.tokenizer.as_deref(), Some("cl100k_base"));
        assert_eq!(c.to_json(), params);
        assert!(!c.is_empty());
    }

    #[test]
    fn accepts_floats_without_fraction_and_digit_strings() {
        let (c, issues) = InputConstraints::parse(
            &json!({"files": {"maxTotalSizeBytes": 1048576.0, "maxCountPerRequest": "5", "maxSizePerFileBytes": 1e6}}),
            P,
        );
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(c.files.max_total_size_bytes, Some(1048576));
        assert_eq!(c.files.max_count_per_request, Some(5));
        assert_eq!(c.files.max_size_per_file_bytes, Some(1_000_000));
    }

    #[test]
    fn reports_bad_fields_with_paths_and_keeps_good_ones() {
        let (c, issues) = InputConstraints::parse(
            &json!({"files": {"maxTotalSizeBytes": -1, "maxCountPerRequest": 2.5, "maxSizePerFileBytes": 100,
                              "perMimeType": {"png": {"maxSizeBytes": 1}, "image/gif": {"maxDimensions": {"width": 10}}}},
                    "text": {"maxCharacters": "lots", "maxTokens": true, "tokenizer": 7, "extra": 1}}),
            P,
        );
        assert_eq!(c.files.max_size_per_file_bytes, Some(100));
        assert_eq!(c.files.max_total_size_bytes, None);
        assert_eq!(c.files.per_mime_type.len(), 1);
        assert_eq!(c.files.per_mime_type[0].0, "image/gif");
        assert_eq!(c.files.per_mime_type[0].1.max_dimensions, None);
        let field = |suffix: &str| {
            issues
                .iter()
                .find(|i| i.field.ends_with(suffix))
                .unwrap_or_else(|| panic!("no issue for {suffix}: {issues:?}"))
        };
        let mut fields: Vec<&str> = issues.iter().map(|i| i.field.as_str()).collect();
        fields.sort();
        let mut expected = [
            "capabilities.extensions[0].params.files.maxTotalSizeBytes",
            "capabilities.extensions[0].params.files.maxCountPerRequest",
            "capabilities.extensions[0].params.files.perMimeType[\"png\"]",
            "capabilities.extensions[0].params.files.perMimeType[\"image/gif\"].maxDimensions",
            "capabilities.extensions[0].params.text.maxCharacters",
            "capabilities.extensions[0].params.text.maxTokens",
            "capabilities.extensions[0].params.text.tokenizer",
            "capabilities.extensions[0].params.text.extra",
        ];
        expected.sort();
        assert_eq!(fields, expected);
        let total = field("maxTotalSizeBytes");
        assert!(total.message.contains("negative") && total.message.contains("-1"));
        let count = field("maxCountPerRequest");
        assert!(count.message.contains("whole") && count.message.contains("2.5"));
        assert!(field("maxCharacters").message.contains("\"lots\""));
    }

    #[test]
    fn non_object_params_is_one_issue() {
        let (c, issues) = InputConstraints::parse(&json!([1]), P);
        assert!(c.is_empty());
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].field, P);
    }

    #[test]
    fn finds_the_extension_in_a_card() {
        let card = json!({"capabilities": {"extensions": [
            {"uri": "https://example.com/other"},
            {"uri": INPUT_CONSTRAINTS_URI, "params": {"files": {"maxCountPerRequest": -3}}}]}});
        let (c, issues) = InputConstraints::from_card(&card).expect("extension present");
        assert!(c.is_empty());
        assert_eq!(
            issues[0].field,
            "capabilities.extensions[1].params.files.maxCountPerRequest"
        );
        assert!(InputConstraints::from_card(&json!({"capabilities": {}})).is_none());
    }

    #[test]
    fn stricter_takes_the_smaller_of_each_field() {
        let (card, _) = InputConstraints::parse(
            &json!({"files": {"maxTotalSizeBytes": 100, "maxCountPerRequest": 3,
                "perMimeType": {"image/png": {"maxSizeBytes": 50, "maxDimensions": {"width": 100, "height": 10}}}},
                "text": {"maxTokens": 10, "tokenizer": "cl100k_base"}}),
            P,
        );
        let (ops, _) = InputConstraints::parse(
            &json!({"files": {"maxTotalSizeBytes": 200, "maxSizePerFileBytes": 7,
                "perMimeType": {"IMAGE/PNG": {"maxDimensions": {"width": 50, "height": 50}}, "application/pdf": {"maxSizeBytes": 1}}},
                "text": {"maxCharacters": 9, "maxTokens": 20, "tokenizer": "o200k_base"}}),
            "constraints",
        );
        let s = card.stricter(&ops);
        assert_eq!(s.files.max_total_size_bytes, Some(100));
        assert_eq!(s.files.max_count_per_request, Some(3));
        assert_eq!(s.files.max_size_per_file_bytes, Some(7));
        assert_eq!(s.files.per_mime_type.len(), 2);
        let png = &s
            .files
            .per_mime_type
            .iter()
            .find(|(k, _)| k == "image/png")
            .unwrap()
            .1;
        assert_eq!(png.max_size_bytes, Some(50));
        assert_eq!(
            png.max_dimensions,
            Some(Dimensions {
                width: 50,
                height: 10
            })
        );
        assert!(s
            .files
            .per_mime_type
            .iter()
            .any(|(k, _)| k == "application/pdf"));
        assert_eq!(s.text.max_characters, Some(9));
        // Different tokenizers cannot be compared: the operator's side wins.
        assert_eq!(s.text.max_tokens, Some(20));
        assert_eq!(s.text.tokenizer.as_deref(), Some("o200k_base"));
    }

    #[test]
    fn empty_when_nothing_limits() {
        let (c, _) = InputConstraints::parse(&json!({"text": {"tokenizer": "cl100k_base"}}), P);
        assert!(c.is_empty());
        assert_eq!(InputConstraints::default().to_json(), json!({}));
    }
}
