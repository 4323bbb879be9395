//! Differential test: a plain reference checker over a fully parsed body (serde_json, base64
//! decoded whole, imagesize on whole images) against the streaming scanner fed at every split
//! point (small bodies) or at random splits (large ones).
//!
//! Agreement means: the reference accepts ⇔ the scanner accepts (with the same summary), and
//! when the reference rejects a well-formed body, the scanner's reason is one the reference found
//! (the scanner reports the first violation it is sure of, in body order; `file_size` and
//! `mime_size` are one class, since before a type is known only the largest candidate limit
//! is certain). For bodies that are not JSON or hold invalid base64, the scanner must reject.

use std::collections::BTreeSet;
use std::sync::Arc;

use base64::Engine as _;
use cardgate::card::constraints::InputConstraints;
use cardgate::scan::{BodyShape, Policy, Reason, ScanOptions, Scanner, SniffMode, Summary};
use proptest::prelude::*;
use serde_json::{json, Value};

// ---- the reference --------------------------------------------------------------------------

/// A JSON tree that keeps key order and duplicate keys.
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool,
    Num,
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl<'de> serde::Deserialize<'de> for J {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<J, E> {
                Ok(J::Bool)
            }
            fn visit_u64<E>(self, _: u64) -> Result<J, E> {
                Ok(J::Num)
            }
            fn visit_i64<E>(self, _: i64) -> Result<J, E> {
                Ok(J::Num)
            }
            fn visit_f64<E>(self, _: f64) -> Result<J, E> {
                Ok(J::Num)
            }
            fn visit_str<E>(self, s: &str) -> Result<J, E> {
                Ok(J::Str(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<J, E> {
                Ok(J::Str(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(J::Arr(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, J>()? {
                    v.push((k, x));
                }
                Ok(J::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// One perMimeType entry: (media type, max size, max dimensions).
type MimeRuleSpec = (&'static str, Option<u64>, Option<(u64, u64)>);

/// The limits, as the test knows them.
#[derive(Debug, Clone)]
struct Spec {
    max_total: Option<u64>,
    max_count: Option<u64>,
    max_per_file: Option<u64>,
    /// (media type, max size, max dims)
    per_mime: Vec<MimeRuleSpec>,
    accepted: Option<Vec<&'static str>>,
    max_chars: Option<u64>,
    max_tokens: Option<u64>,
    sniff: SniffMode,
}

impl Spec {
    fn params(&self) -> Value {
        let mut files = serde_json::Map::new();
        if let Some(v) = self.max_total {
            files.insert("maxTotalSizeBytes".into(), json!(v));
        }
        if let Some(v) = self.max_count {
            files.insert("maxCountPerRequest".into(), json!(v));
        }
        if let Some(v) = self.max_per_file {
            files.insert("maxSizePerFileBytes".into(), json!(v));
        }
        let mut per = serde_json::Map::new();
        for (t, size, dims) in &self.per_mime {
            let mut e = serde_json::Map::new();
            if let Some(s) = size {
                e.insert("maxSizeBytes".into(), json!(s));
            }
            if let Some((w, h)) = dims {
                e.insert("maxDimensions".into(), json!({"width": w, "height": h}));
            }
            per.insert(t.to_string(), Value::Object(e));
        }
        if !per.is_empty() {
            files.insert("perMimeType".into(), Value::Object(per));
        }
        let mut text = serde_json::Map::new();
        if let Some(v) = self.max_chars {
            text.insert("maxCharacters".into(), json!(v));
        }
        if let Some(v) = self.max_tokens {
            text.insert("maxTokens".into(), json!(v));
            text.insert("tokenizer".into(), json!("cl100k_base"));
        }
        json!({"files": files, "text": text})
    }

    fn policy(&self) -> Arc<Policy> {
        let (c, issues) = InputConstraints::parse(&self.params(), "p");
        assert!(issues.is_empty(), "{issues:?}");
        let modes: Option<Vec<String>> = self
            .accepted
            .as_ref()
            .map(|m| m.iter().map(|s| s.to_string()).collect());
        let options = ScanOptions {
            sniff: self.sniff,
            ..ScanOptions::default()
        };
        Arc::new(Policy::new(&c, modes.as_deref(), options))
    }

    fn rule(&self, t: &str) -> Option<&MimeRuleSpec> {
        let top = t.split('/').next().unwrap();
        self.per_mime.iter().find(|r| r.0 == t).or_else(|| {
            self.per_mime
                .iter()
                .find(|r| r.0.strip_suffix("/*") == Some(top))
        })
    }

    fn accepts(&self, t: &str) -> bool {
        match &self.accepted {
            None => true,
            Some(modes) => modes.iter().any(|m| {
                *m == t
                    || *m == "*/*"
                    || m.strip_suffix("/*")
                        .is_some_and(|top| t.split('/').next() == Some(top))
            }),
        }
    }
}

#[derive(Debug, PartialEq)]
enum Verdict {
    /// Not JSON, or invalid base64 somewhere: the scanner must reject, for any reason.
    Malformed,
    Reject(BTreeSet<&'static str>),
    Accept(Summary),
}

fn norm_type(s: &str) -> Option<String> {
    let e = s.split(';').next().unwrap().trim();
    if e == "*" {
        return Some("*/*".into());
    }
    let (a, b) = e.split_once('/')?;
    let (a, b) = (a.trim(), b.trim());
    (!a.is_empty() && !b.is_empty())
        .then(|| format!("{}/{}", a.to_ascii_lowercase(), b.to_ascii_lowercase()))
}

/// The formats by magic number, written again from their specifications.
fn ref_sniff(d: &[u8]) -> Option<&'static str> {
    if d.starts_with(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]) {
        Some("image/png")
    } else if d.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if d.starts_with(b"GIF87a") || d.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if d.len() >= 12 && &d[0..4] == b"RIFF" && &d[8..12] == b"WEBP" {
        Some("image/webp")
    } else if d.len() >= 18
        && &d[0..2] == b"BM"
        && [12u32, 40, 52, 56, 64, 108, 124]
            .contains(&u32::from_le_bytes(d[14..18].try_into().unwrap()))
    {
        Some("image/bmp")
    } else if d.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

fn claimed_format(t: &str) -> Option<&'static str> {
    Some(match t {
        "image/png" | "image/x-png" | "image/apng" => "image/png",
        "image/jpeg" | "image/jpg" | "image/pjpeg" => "image/jpeg",
        "image/gif" => "image/gif",
        "image/webp" => "image/webp",
        "image/bmp" | "image/x-bmp" | "image/x-ms-bmp" => "image/bmp",
        "application/pdf" | "application/x-pdf" => "application/pdf",
        _ => return None,
    })
}

/// Strict base64: one alphabet, optional padding only at the end, canonical trailing bits.
fn ref_decode(s: &str) -> Option<Vec<u8>> {
    let body = s.trim_end_matches('=');
    let pads = s.len() - body.len();
    if pads > 2 || (pads > 0 && s.len() % 4 != 0) || body.len() % 4 == 1 {
        return None;
    }
    let std_ok = body
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    let url_ok = body
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let alphabet = if std_ok {
        &base64::alphabet::STANDARD
    } else if url_ok {
        &base64::alphabet::URL_SAFE
    } else {
        return None;
    };
    let cfg = base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(false);
    base64::engine::GeneralPurpose::new(alphabet, cfg)
        .decode(s)
        .ok()
}

fn ref_dims(format: &str, d: &[u8]) -> Option<(u64, u64)> {
    if !format.starts_with("image/") {
        return None;
    }
    let s = imagesize::blob_size(d).ok()?;
    let (w, h) = (s.width as u64, s.height as u64);
    if format == "image/bmp" {
        return Some((
            (w as u32 as i32).unsigned_abs() as u64,
            (h as u32 as i32).unsigned_abs() as u64,
        ));
    }
    Some((w, h))
}

struct Ref<'a> {
    spec: &'a Spec,
    reasons: BTreeSet<&'static str>,
    malformed: bool,
    summary: Summary,
}

impl Ref<'_> {
    fn add(&mut self, r: Reason) {
        let label = match r {
            Reason::MimeSize => Reason::FileSize.as_str(),
            r => r.as_str(),
        };
        self.reasons.insert(label);
    }

    /// Duplicate known keys (aliases folded) and, where given, a one-of group.
    fn keys<'j>(
        &mut self,
        obj: &'j [(String, J)],
        known: &[(&str, &str)],
        oneof: &[&str],
    ) -> Vec<(&'static str, &'j J)> {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        let mut content = 0;
        for (k, v) in obj {
            let Some(&(_, canon)) = known.iter().find(|(name, _)| name == k) else {
                continue;
            };
            if seen.contains(&canon) {
                self.add(Reason::DuplicateKey);
                continue;
            }
            seen.push(canon);
            if oneof.contains(&canon) {
                content += 1;
                if content > 1 {
                    self.add(Reason::AmbiguousPart);
                }
            }
            // Leak-free 'static: the canonical names are literals in `known`.
            let canon: &'static str = KNOWN_NAMES.iter().find(|n| **n == canon).copied().unwrap();
            out.push((canon, v));
        }
        out
    }

    fn check(&mut self, root: &J, shape: BodyShape) {
        let J::Obj(root) = root else {
            if shape == BodyShape::JsonRpc {
                self.add(Reason::InvalidRequest);
            }
            return;
        };
        let message = match shape {
            BodyShape::JsonRpc => {
                let keys = self.keys(
                    root,
                    &[
                        ("jsonrpc", "jsonrpc"),
                        ("id", "id"),
                        ("method", "method"),
                        ("params", "params"),
                    ],
                    &[],
                );
                match keys.iter().find(|(k, _)| *k == "params") {
                    Some((_, J::Obj(params))) => {
                        let keys = self.keys(params, &[("message", "message")], &[]);
                        keys.iter().find(|(k, _)| *k == "message").map(|(_, v)| *v)
                    }
                    _ => None,
                }
            }
            BodyShape::Rest => {
                let keys = self.keys(root, &[("message", "message"), ("request", "message")], &[]);
                keys.iter().find(|(k, _)| *k == "message").map(|(_, v)| *v)
            }
        };
        let Some(J::Obj(message)) = message else {
            return;
        };
        let arrays = self.keys(message, &[("parts", "parts"), ("content", "content")], &[]);
        let mut total = 0u64;
        for (_, arr) in arrays {
            let J::Arr(parts) = arr else { continue };
            for part in parts {
                if let J::Obj(p) = part {
                    total += self.part(p);
                }
            }
        }
        if let Some(max) = self.spec.max_count {
            if self.summary.files > max {
                self.add(Reason::FileCount);
            }
        }
        if let Some(max) = self.spec.max_total {
            if total > max {
                self.add(Reason::TotalSize);
            }
        }
    }

    /// Returns the decoded size of the part's inline file.
    fn part(&mut self, p: &[(String, J)]) -> u64 {
        self.summary.parts += 1;
        let keys = self.keys(
            p,
            &[
                ("kind", "kind"),
                ("text", "text"),
                ("raw", "raw"),
                ("url", "url"),
                ("data", "data"),
                ("mediaType", "mediaType"),
                ("media_type", "mediaType"),
                ("filename", "filename"),
                ("file", "file"),
                ("metadata", "metadata"),
            ],
            &["text", "raw", "url", "data", "file"],
        );
        let mut types: Vec<String> = Vec::new();
        let mut inline: Option<&str> = None;
        for (k, v) in &keys {
            match (*k, v) {
                ("mediaType", J::Str(t)) => types.extend(norm_type(t)),
                ("raw", J::Str(s)) => {
                    self.summary.files += 1;
                    inline = Some(s);
                }
                ("url", J::Str(_)) => self.summary.files += 1,
                ("text", J::Str(t)) => self.text(t),
                ("file", J::Obj(f)) => {
                    let fkeys = self.keys(
                        f,
                        &[
                            ("bytes", "bytes"),
                            ("uri", "uri"),
                            ("fileWithBytes", "fileWithBytes"),
                            ("file_with_bytes", "fileWithBytes"),
                            ("fileWithUri", "fileWithUri"),
                            ("file_with_uri", "fileWithUri"),
                            ("mimeType", "mimeType"),
                            ("mime_type", "mimeType"),
                            ("name", "name"),
                        ],
                        &["bytes", "uri", "fileWithBytes", "fileWithUri"],
                    );
                    for (k, v) in fkeys {
                        match (k, v) {
                            ("mimeType", J::Str(t)) => types.extend(norm_type(t)),
                            ("bytes" | "fileWithBytes", J::Str(s)) => {
                                self.summary.files += 1;
                                inline = Some(s);
                            }
                            ("uri" | "fileWithUri", J::Str(_)) => self.summary.files += 1,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        for t in &types {
            if !self.spec.accepts(t) {
                self.add(Reason::MediaType);
            }
        }
        let Some(encoded) = inline else { return 0 };
        self.summary.inline_files += 1;
        let Some(data) = ref_decode(encoded) else {
            self.malformed = true;
            return 0;
        };
        let size = data.len() as u64;
        self.summary.inline_bytes += size;
        let sniffed = ref_sniff(&data);
        let specific: Vec<&String> = types
            .iter()
            .filter(|t| *t != "application/octet-stream")
            .collect();
        let mut judged: Vec<String> = types.clone();
        if specific.is_empty() {
            if let Some(f) = sniffed {
                judged.push(f.to_owned());
                if !self.spec.accepts(f) {
                    self.add(Reason::MediaType);
                }
            }
        }
        // Size: the rule's size for each type it is judged as, else the global limit.
        if judged.is_empty() && self.spec.max_per_file.is_some_and(|m| size > m) {
            self.add(Reason::FileSize);
        }
        for t in &judged {
            let limit = self
                .spec
                .rule(t)
                .and_then(|r| r.1)
                .or(self.spec.max_per_file);
            if limit.is_some_and(|m| size > m) {
                self.add(Reason::MimeSize);
            }
        }
        if self.spec.sniff == SniffMode::Enforce {
            for t in &specific {
                let bad = match claimed_format(t) {
                    Some(f) => sniffed != Some(f),
                    None => sniffed.is_some(),
                };
                if bad {
                    self.add(Reason::SniffMismatch);
                }
            }
        }
        for t in &judged {
            if let Some((mw, mh)) = self.spec.rule(t).and_then(|r| r.2) {
                match sniffed.and_then(|f| ref_dims(f, &data)) {
                    Some((w, h)) => {
                        if w > mw || h > mh {
                            self.add(Reason::Dimensions);
                        }
                    }
                    None => self.add(Reason::DimensionsUnknown),
                }
            }
        }
        size
    }

    fn text(&mut self, t: &str) {
        self.summary.text_parts += 1;
        let chars = t.chars().count() as u64;
        self.summary.text_chars += chars;
        if self.spec.max_chars.is_some_and(|m| chars > m) {
            self.add(Reason::TextLength);
        }
        if let Some(m) = self.spec.max_tokens {
            if bpe_openai::cl100k_base().count(t) as u64 > m {
                self.add(Reason::TextTokens);
            }
        }
    }
}

const KNOWN_NAMES: &[&str] = &[
    "jsonrpc",
    "id",
    "method",
    "params",
    "message",
    "parts",
    "content",
    "kind",
    "text",
    "raw",
    "url",
    "data",
    "mediaType",
    "filename",
    "file",
    "metadata",
    "bytes",
    "uri",
    "fileWithBytes",
    "fileWithUri",
    "mimeType",
    "name",
];

fn reference(spec: &Spec, shape: BodyShape, body: &[u8]) -> Verdict {
    let Ok(root) = serde_json::from_slice::<J>(body) else {
        return Verdict::Malformed;
    };
    let mut r = Ref {
        spec,
        reasons: BTreeSet::new(),
        malformed: false,
        summary: Summary::default(),
    };
    r.check(&root, shape);
    if r.malformed {
        Verdict::Malformed
    } else if r.reasons.is_empty() {
        r.summary.bytes = body.len() as u64;
        Verdict::Accept(r.summary)
    } else {
        Verdict::Reject(r.reasons)
    }
}

// ---- the comparison -------------------------------------------------------------------------

fn run(policy: &Arc<Policy>, shape: BodyShape, chunks: &[&[u8]]) -> Result<Summary, &'static str> {
    let mut s = Scanner::new(policy.clone(), shape);
    // Known in advance, as from Content-Length: a body in one chunk takes the recursive walk.
    s.expect_len(chunks.iter().map(|c| c.len() as u64).sum());
    for c in chunks {
        if let Err(v) = s.feed(c) {
            return Err(v.reason());
        }
    }
    // The reference does not model `sniff: warn` findings; they have their own unit test.
    s.finish()
        .map(|mut sum| {
            sum.sniff_warnings.clear();
            sum
        })
        .map_err(|v| v.reason())
}

fn label(r: Result<Summary, &'static str>) -> Result<Summary, &'static str> {
    r.map_err(|l| if l == "mime_size" { "file_size" } else { l })
}

fn compare(
    spec: &Spec,
    shape: BodyShape,
    body: &[u8],
    splits: &[Vec<usize>],
) -> Result<(), TestCaseError> {
    let policy = spec.policy();
    let expected = reference(spec, shape, body);
    let whole = label(run(&policy, shape, &[body]));
    let show = || String::from_utf8_lossy(&body[..body.len().min(600)]).into_owned();
    match (&expected, &whole) {
        (Verdict::Accept(sum), Ok(got)) => {
            prop_assert_eq!(sum, got, "summary differs for {}", show())
        }
        (Verdict::Reject(set), Err(got)) => {
            prop_assert!(
                set.contains(got),
                "scanner said {} but the reference found {:?} in {}",
                got,
                set,
                show()
            )
        }
        (Verdict::Malformed, Err(_)) => {}
        _ => prop_assert!(
            false,
            "reference {:?} vs scanner {:?} for {}",
            expected,
            whole,
            show()
        ),
    }
    for cuts in splits {
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut last = 0;
        for &c in cuts {
            chunks.push(&body[last..c]);
            last = c;
        }
        chunks.push(&body[last..]);
        let got = label(run(&policy, shape, &chunks));
        if expected == Verdict::Malformed {
            // Which problem is met first can depend on what has arrived; it must still be refused.
            prop_assert!(
                got.is_err(),
                "split at {:?} accepted a malformed body {}",
                cuts,
                show()
            );
        } else {
            prop_assert_eq!(
                &got,
                &whole,
                "split at {:?} disagrees with whole for {}",
                cuts,
                show()
            );
        }
    }
    Ok(())
}

/// Every single split point for small bodies, plus random multi-way splits.
fn splits_for(len: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    if len <= 1500 {
        out.extend((0..=len).map(|i| vec![i]));
    } else {
        out.extend((0..=len).step_by(len / 200 + 1).map(|i| vec![i]));
    }
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..8 {
        let mut cuts = Vec::new();
        let mut at = 0usize;
        loop {
            at += (next() % 97 + 1) as usize * if len > 20_000 { 50 } else { 1 };
            if at >= len {
                break;
            }
            cuts.push(at);
        }
        out.push(cuts);
    }
    out
}

// ---- the corpus -----------------------------------------------------------------------------

fn images() -> Vec<(&'static str, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/images/");
    let files = [
        ("image/png", "rgb_37x23.png"),
        ("image/png", "rgba_19x41.png"),
        ("image/jpeg", "baseline_37x23.jpg"),
        ("image/jpeg", "progressive_37x23.jpg"),
        ("image/jpeg", "meta_37x23.jpg"),
        ("image/gif", "img_37x23.gif"),
        ("image/webp", "lossy_37x23.webp"),
        ("image/webp", "lossless_37x23.webp"),
        ("image/webp", "alpha_19x41.webp"),
        ("image/bmp", "bottomup_37x23.bmp"),
        ("image/bmp", "topdown_37x23.bmp"),
        ("application/pdf", "page.pdf"),
    ];
    files
        .iter()
        .map(|(t, f)| {
            (
                *t,
                std::fs::read(format!("{dir}{f}")).unwrap_or_else(|e| panic!("{f}: {e}")),
            )
        })
        .collect()
}

/// JSON string literal with some characters written as escapes.
fn jstr(s: &str, escape: u8) -> String {
    let mut out = String::from("\"");
    for (i, ch) in s.chars().enumerate() {
        let esc = escape > 0 && (i as u8).wrapping_mul(31).wrapping_add(escape) % 5 == 0;
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if esc => out.push_str("\\/"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if esc && (c as u32) >= 0x10000 => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04X}", u));
                }
            }
            c if esc => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[derive(Debug, Clone)]
enum Content {
    Text(String),
    Inline {
        data: usize,
        url_safe: bool,
        pad: bool,
        corrupt: bool,
    },
    Reference,
    Data,
}

#[derive(Debug, Clone)]
struct PartGen {
    content: Content,
    /// 0: v1.0 part fields, 1: v0.3 file.bytes/uri, 2: v0.3 REST fileWithBytes/fileWithUri, 3: proto names
    style: u8,
    declared: Option<&'static str>,
    type_after: bool,
    filename: bool,
    escape: u8,
    dup: u8,
}

const TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/bmp",
    "application/pdf",
    "text/plain",
    "application/octet-stream",
    "IMAGE/PNG; q=1",
    "image/jpg",
    "audio/wav",
    "",
];

const TEXTS: &[&str] = &[
    "hello",
    "h\u{e9}llo w\u{f6}rld",
    "emoji \u{1F600}\u{1F680} here",
    "quote \" and \\ backslash /slash",
    "line\nbreak\ttab",
    "\u{4e2d}\u{6587}\u{6587}\u{5b57}",
    "",
    "The quick brown fox jumps over the lazy dog again and again",
];

fn blobs() -> Vec<(Option<&'static str>, Vec<u8>)> {
    let mut v: Vec<(Option<&'static str>, Vec<u8>)> =
        images().into_iter().map(|(t, d)| (Some(t), d)).collect();
    v.push((None, b"plain words, not an image".to_vec()));
    v.push((None, (0..700u32).map(|i| (i * 7919 % 251) as u8).collect()));
    v.push((None, vec![]));
    v.push((None, vec![0xFF]));
    v.push((
        None,
        b"BMW is a car brand and this text starts with BM".to_vec(),
    ));
    v
}

fn part_strategy(n_blobs: usize) -> impl Strategy<Value = PartGen> {
    let content = prop_oneof![
        3 => (0..TEXTS.len(), 0..4usize).prop_map(|(i, rep)| Content::Text(TEXTS[i].repeat(rep.max(1)))),
        5 => (0..n_blobs, any::<bool>(), any::<bool>(), prop::bool::weighted(0.08))
            .prop_map(|(data, url_safe, pad, corrupt)| Content::Inline { data, url_safe, pad, corrupt }),
        1 => Just(Content::Reference),
        1 => Just(Content::Data),
    ];
    (
        content,
        0..4u8,
        prop::option::weighted(0.75, 0..TYPES.len()),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![3 => Just(0u8), 1 => 1..255u8],
        prop_oneof![12 => Just(0u8), 1 => 1..3u8],
    )
        .prop_map(
            |(content, style, declared, type_after, filename, escape, dup)| PartGen {
                content,
                style,
                declared: declared.map(|i| TYPES[i]),
                type_after,
                filename,
                escape,
                dup,
            },
        )
}

fn key(name: &str, escape: u8) -> String {
    if escape % 3 == 1 {
        // Escape the first letter: "\u0072aw".
        let mut c = name.chars();
        let first = c.next().unwrap();
        format!("\"\\u{:04x}{}\"", first as u32, c.as_str())
    } else {
        format!("\"{name}\"")
    }
}

fn render_part(
    p: &PartGen,
    blobs: &[(Option<&'static str>, Vec<u8>)],
    matching: &mut Option<&'static str>,
) -> String {
    let mut fields: Vec<(String, String)> = Vec::new();
    let (type_key, name_key, in_file) = match p.style {
        0 => ("mediaType", "filename", false),
        3 => ("media_type", "filename", false),
        1 => ("mimeType", "name", true),
        _ => ("mime_type", "name", true),
    };
    let mut file_fields: Vec<(String, String)> = Vec::new();
    let target = if in_file {
        &mut file_fields
    } else {
        &mut fields
    };
    let mut declared = p.declared;
    match &p.content {
        Content::Text(t) => {
            fields.push((key("text", p.escape), jstr(t, p.escape)));
            if let Some(d) = declared {
                fields.push((key("mediaType", p.escape), jstr(d, 0)));
            }
            declared = None;
        }
        Content::Inline {
            data,
            url_safe,
            pad,
            corrupt,
        } => {
            let (natural, bytes) = &blobs[*data % blobs.len()];
            *matching = *natural;
            let engine = match (url_safe, pad) {
                (false, true) => base64::engine::general_purpose::STANDARD,
                (false, false) => base64::engine::general_purpose::STANDARD_NO_PAD,
                (true, true) => base64::engine::general_purpose::URL_SAFE,
                (true, false) => base64::engine::general_purpose::URL_SAFE_NO_PAD,
            };
            let mut enc = engine.encode(bytes);
            if *corrupt {
                let at = (p.escape as usize * 13) % (enc.len() + 1);
                enc.insert(at, if p.escape % 2 == 0 { '*' } else { '=' });
            }
            let k = match p.style {
                0 | 3 => "raw",
                1 => "bytes",
                _ => {
                    if p.escape % 2 == 0 {
                        "fileWithBytes"
                    } else {
                        "file_with_bytes"
                    }
                }
            };
            target.push((key(k, p.escape), jstr(&enc, p.escape)));
        }
        Content::Reference => {
            let k = match p.style {
                0 | 3 => "url",
                1 => "uri",
                _ => {
                    if p.escape % 2 == 0 {
                        "fileWithUri"
                    } else {
                        "file_with_uri"
                    }
                }
            };
            target.push((
                key(k, p.escape),
                jstr("https://files.example/a/b.bin", p.escape),
            ));
        }
        Content::Data => {
            fields.push((
                "\"data\"".into(),
                r#"{"raw":"!!not base64!!","parts":[{"raw":"*"}],"n":[1,2.5e3,-0,true,null]}"#
                    .into(),
            ));
            declared = None;
        }
    }
    if let Some(d) = declared {
        let target = if in_file {
            &mut file_fields
        } else {
            &mut fields
        };
        let entry = (key(type_key, p.escape), jstr(d, p.escape));
        if p.type_after {
            target.push(entry);
        } else {
            target.insert(0, entry);
        }
    }
    if p.filename {
        let target = if in_file {
            &mut file_fields
        } else {
            &mut fields
        };
        target.insert(
            target.len() / 2,
            (
                key(name_key, p.escape),
                jstr("photo \u{e9}t\u{e9}.bin", p.escape),
            ),
        );
    }
    if in_file {
        fields.push(("\"file\"".into(), obj(&file_fields)));
        fields.insert(0, ("\"kind\"".into(), "\"file\"".into()));
    }
    // Rare: repeat a key (maybe as its alias) or add a second content field.
    match p.dup {
        1 if !fields.is_empty() => {
            let f = fields[fields.len() - 1].clone();
            let alias = f.0.replace("mediaType", "media_type");
            fields.push((alias, f.1));
        }
        2 => fields.push(("\"url\"".into(), "\"https://x/y\"".into())),
        _ => {}
    }
    fields.push(("\"metadata\"".into(), r#"{"k":"v \u00e9"}"#.into()));
    obj(&fields)
}

fn obj(fields: &[(String, String)]) -> String {
    let inner: Vec<String> = fields.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("{{{}}}", inner.join(","))
}

#[derive(Debug, Clone)]
struct BodyGen {
    rest: bool,
    parts: Vec<PartGen>,
    content_array: bool,
    meta_last: bool,
    ws: bool,
    mutate: Option<(usize, u8)>,
}

fn body_strategy(n_blobs: usize) -> impl Strategy<Value = BodyGen> {
    (
        any::<bool>(),
        prop::collection::vec(part_strategy(n_blobs), 0..5),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::option::weighted(0.1, (any::<usize>(), any::<u8>())),
    )
        .prop_map(
            |(rest, parts, content_array, meta_last, ws, mutate)| BodyGen {
                rest,
                parts,
                content_array,
                meta_last,
                ws,
                mutate,
            },
        )
}

fn render_body(b: &BodyGen, blobs: &[(Option<&'static str>, Vec<u8>)]) -> Vec<u8> {
    let mut matching = None;
    let parts: Vec<String> = b
        .parts
        .iter()
        .map(|p| render_part(p, blobs, &mut matching))
        .collect();
    let sep = if b.ws { ",\n  " } else { "," };
    let array = format!("[{}]", parts.join(sep));
    let arr_key = if b.content_array && b.rest {
        "content"
    } else {
        "parts"
    };
    let message = format!(
        r#"{{"messageId":"m-1","role":"ROLE_USER",{}:{}}}"#,
        jstr(arr_key, 0),
        array
    );
    let text = if b.rest {
        // v0.3 REST also accepts the proto name `request` for `message`.
        let key = if b.meta_last { "request" } else { "message" };
        format!(r#"{{"{key}":{message},"configuration":{{"acceptedOutputModes":["text/plain"]}}}}"#)
    } else if b.meta_last {
        format!(
            r#"{{"params":{{"message":{message},"metadata":{{}}}},"method":"SendMessage","id":"req-\u00e9","jsonrpc":"2.0"}}"#
        )
    } else {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"message/send","params":{{"message":{message}}}}}"#
        )
    };
    let mut bytes = if b.ws {
        format!(" \n{text}\n ").into_bytes()
    } else {
        text.into_bytes()
    };
    if let Some((at, byte)) = b.mutate {
        if !bytes.is_empty() {
            let at = at % bytes.len();
            match byte % 3 {
                0 => bytes.truncate(at),
                1 => bytes[at] = byte,
                _ => bytes.insert(at, byte),
            }
        }
    }
    bytes
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    let size = || {
        prop::option::of(prop_oneof![
            Just(0u64),
            Just(300),
            Just(1000),
            Just(2000),
            Just(10_000)
        ])
    };
    let dims = prop::option::of(prop_oneof![
        Just((30u64, 30u64)),
        Just((40, 40)),
        Just((37, 23)),
        Just((19, 100))
    ]);
    let rule = (
        prop::sample::select(vec![
            "image/png",
            "image/jpeg",
            "image/*",
            "application/pdf",
            "image/bmp",
            "image/webp",
            "text/plain",
        ]),
        size(),
        dims,
    );
    let accepted = prop::option::of(prop::sample::select(vec![
        vec!["text/plain", "image/*"],
        vec![
            "text/plain",
            "image/png",
            "image/jpeg",
            "application/pdf",
            "application/octet-stream",
        ],
        vec!["*/*"],
        vec!["image/png"],
    ]));
    (
        size(),
        prop::option::of(0u64..5),
        size(),
        prop::collection::vec(rule, 0..3),
        accepted,
        prop::option::of(prop_oneof![Just(0u64), Just(8), Just(40)]),
        prop::option::of(prop_oneof![Just(1u64), Just(6), Just(30)]),
        prop_oneof![4 => Just(SniffMode::Enforce), 1 => Just(SniffMode::Warn), 1 => Just(SniffMode::Off)],
    )
        .prop_map(|(max_total, max_count, max_per_file, mut per_mime, accepted, max_chars, max_tokens, sniff)| {
            per_mime.dedup_by_key(|r| r.0);
            let mut seen = Vec::new();
            per_mime.retain(|r| {
                let fresh = !seen.contains(&r.0);
                seen.push(r.0);
                fresh
            });
            Spec { max_total, max_count, max_per_file, per_mime, accepted, max_chars, max_tokens, sniff }
        })
}

fn blob_table() -> &'static [(Option<&'static str>, Vec<u8>)] {
    static T: std::sync::OnceLock<Vec<(Option<&'static str>, Vec<u8>)>> =
        std::sync::OnceLock::new();
    T.get_or_init(blobs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn scanner_agrees_with_the_reference(spec in spec_strategy(), body in body_strategy(17), seed in any::<u64>()) {
        let bytes = render_body(&body, blob_table());
        let shape = if body.rest { BodyShape::Rest } else { BodyShape::JsonRpc };
        compare(&spec, shape, &bytes, &splits_for(bytes.len(), seed))?;
    }
}

#[test]
fn the_corpus_has_every_format_and_the_reference_reads_them() {
    let imgs = images();
    for (t, data) in &imgs {
        assert_eq!(ref_sniff(data), Some(*t), "{t}");
        if t.starts_with("image/") {
            let (w, h) = ref_dims(t, data).unwrap_or_else(|| panic!("{t} dims"));
            assert!((w, h) == (37, 23) || (w, h) == (19, 41), "{t}: {w}x{h}");
        }
    }
}

/// Each real image, declared, every split point, under a dimension limit it passes and one it fails.
#[test]
fn real_images_at_every_split_point() {
    for (t, data) in images() {
        for (limit, expect_ok) in [((40u64, 41u64), true), ((36, 22), false)] {
            let spec = Spec {
                max_total: None,
                max_count: None,
                max_per_file: None,
                per_mime: vec![(t, None, t.starts_with("image/").then_some(limit))],
                accepted: None,
                max_chars: None,
                max_tokens: None,
                sniff: SniffMode::Enforce,
            };
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"parts":[{{"raw":"{}","mediaType":"{t}"}}]}}}}}}"#,
                base64::engine::general_purpose::STANDARD.encode(&data)
            );
            let bytes = body.as_bytes();
            let policy = spec.policy();
            let whole = run(&policy, BodyShape::JsonRpc, &[bytes]);
            assert_eq!(
                whole.is_ok(),
                expect_ok || !t.starts_with("image/"),
                "{t} {limit:?}: {whole:?}"
            );
            for at in 0..=bytes.len() {
                let got = run(&policy, BodyShape::JsonRpc, &[&bytes[..at], &bytes[at..]]);
                assert_eq!(got, whole, "{t} split at {at}");
            }
            compare(&spec, BodyShape::JsonRpc, bytes, &[]).unwrap();
        }
    }
}

/// The generator must actually reach every outcome, or agreement means little.
#[test]
fn the_generated_corpus_reaches_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (spec_strategy(), body_strategy(17));
    let mut seen: BTreeSet<&'static str> = BTreeSet::new();
    let (mut accepted, mut malformed) = (0, 0);
    for _ in 0..3000 {
        let (spec, body) = strategy.new_tree(&mut runner).unwrap().current();
        let bytes = render_body(&body, blob_table());
        let shape = if body.rest {
            BodyShape::Rest
        } else {
            BodyShape::JsonRpc
        };
        match reference(&spec, shape, &bytes) {
            Verdict::Accept(_) => accepted += 1,
            Verdict::Malformed => malformed += 1,
            Verdict::Reject(set) => {
                if set.len() == 1 {
                    seen.extend(set);
                }
            }
        }
    }
    assert!(
        accepted > 300 && malformed > 50,
        "accepted {accepted}, malformed {malformed}"
    );
    for r in [
        "file_count",
        "file_size",
        "total_size",
        "dimensions",
        "dimensions_unknown",
        "media_type",
        "sniff_mismatch",
        "text_length",
        "text_tokens",
        "duplicate_key",
        "ambiguous_part",
    ] {
        assert!(seen.contains(r), "no body violates only {r}; seen {seen:?}");
    }
}
