//! A body that arrives whole in its first chunk (the usual small request) is walked by recursive
//! descent: where the walk is in the JSON lives in the call stack, not in per-byte state, and
//! each value is read knowing what it means. The walk calls the same part, string and check
//! steps as the state machine, so a part cannot be judged differently; it only decides to
//! accept. Anything it cannot take for certain (a violation, a fault, an escaped key, a body
//! cut short, a shape it does not follow) makes it give up: the state machine then scans the
//! chunk from the start and gives the answer, at the exact byte. A rejected body is thus read
//! twice, an accepted one once.

use serde_json::Value;

use super::{
    first_special, key_in_chunk, one_of, parse_id_number, role_for, ArrayName, Ctx, Key, Lex, Role,
    Scanner, ID_CAP,
};
use crate::scan::skip::{literal, skip_container, skip_number, skip_string, skip_ws, Skipped};

/// Largest body walked: a body the walk gives up on is read twice, so this bounds the extra pass.
pub(super) const WHOLE_MAX: usize = 64 * 1024;

/// Longest plain key looked at; a longer one cannot be a key the scanner knows.
const KEY_WINDOW: usize = 64;

/// Longest plain string value taken without the string machinery.
const VALUE_WINDOW: usize = 256;

impl Scanner {
    /// `c` is the whole body, in its first chunk. True when it is one JSON value, then only
    /// whitespace, and the value is accepted: the scanner is then where the state machine
    /// would be after it. False leaves the scanner as new.
    pub(super) fn scan_whole(&mut self, c: &[u8]) -> bool {
        if self.walk_root(c).is_some() {
            self.state = Lex::Done;
            return true;
        }
        let expected_len = self.expected_len;
        *self = Scanner::new(self.policy.clone(), self.shape);
        self.expected_len = expected_len;
        false
    }

    fn walk_root(&mut self, c: &[u8]) -> Option<()> {
        let i = skip_ws(c, 0)?;
        if c[i] != b'{' {
            return None;
        }
        let end = self.walk_object(c, i, 1, Ctx::Root)?;
        // Only whitespace may follow: `skip_ws` runs off the end.
        skip_ws(c, end).is_none().then_some(())
    }

    /// The object of kind `ctx` opening at `c[i]`, `depth` levels deep counting itself.
    /// Returns the index past its end.
    fn walk_object(&mut self, c: &[u8], i: usize, depth: u32, ctx: Ctx) -> Option<usize> {
        if depth > self.depth_limit() {
            return None;
        }
        let mut seen = 0u32;
        let mut i = skip_ws(c, i + 1)?;
        if c[i] == b'}' {
            return Some(i + 1);
        }
        loop {
            if c[i] != b'"' {
                return None;
            }
            let (key, after) = self.walk_key(c, i + 1, ctx)?;
            let role = match key {
                Some(key) => {
                    // A key twice, or a second content field: the state machine names it.
                    let oneof = one_of(ctx);
                    if seen & key.bit() != 0 || (oneof & key.bit() != 0 && seen & oneof != 0) {
                        return None;
                    }
                    seen |= key.bit();
                    role_for(ctx, key)
                }
                None => Role::Skip,
            };
            i = skip_ws(c, after)?;
            if c[i] != b':' {
                return None;
            }
            i = skip_ws(c, i + 1)?;
            i = self.walk_value(c, i, depth, role)?;
            i = skip_ws(c, i)?;
            match c[i] {
                b',' => i = skip_ws(c, i + 1)?,
                b'}' => return Some(i + 1),
                _ => return None,
            }
        }
    }

    /// A key written as plain printable ASCII (anything else gives up); `i` is just past its
    /// opening quote. Returns the key, if known here, and the index past its closing quote.
    #[inline]
    fn walk_key(&self, c: &[u8], i: usize, ctx: Ctx) -> Option<(Option<Key>, usize)> {
        let rest = &c[i..c.len().min(i + KEY_WINDOW)];
        let n = first_special(rest).filter(|&n| rest[n] == b'"')?;
        Some((key_in_chunk(ctx, self.shape, c, i, n), i + n + 1))
    }

    /// The value at `c[i]`, which means `role`, inside a container `depth` levels deep.
    fn walk_value(&mut self, c: &[u8], i: usize, depth: u32, role: Role) -> Option<usize> {
        match (c[i], role) {
            (b'"', _) => self.walk_string(c, i, role),
            (b'{', Role::Params) => self.walk_object(c, i, depth + 1, Ctx::Params),
            (b'{', Role::Message) => self.walk_object(c, i, depth + 1, Ctx::Message),
            (b'{', Role::File) => self.walk_object(c, i, depth + 1, Ctx::File),
            (b'[', Role::Parts(name)) => self.walk_parts(c, i, depth + 1, name),
            // Any other container means nothing to the scanner, whatever its key.
            (b'{' | b'[', _) => match skip_container(c, i, self.depth_limit().checked_sub(depth)?)?
            {
                Skipped::Whole(end) => Some(end),
                Skipped::Partial(_) => None,
            },
            (b'n', Role::Id) => {
                let end = literal(c, i, b"null")?;
                self.id = Some(Value::Null);
                Some(end)
            }
            (b't', _) => literal(c, i, b"true"),
            (b'f', _) => literal(c, i, b"false"),
            (b'n', _) => literal(c, i, b"null"),
            (b'-' | b'0'..=b'9', _) => {
                let end = skip_number(c, i)?;
                if role == Role::Id {
                    // As the state machine keeps it: ids longer than its capture are not echoed.
                    self.id = std::str::from_utf8(&c[i..end])
                        .ok()
                        .filter(|text| text.len() <= ID_CAP)
                        .and_then(parse_id_number);
                }
                Some(end)
            }
            _ => None,
        }
    }

    /// A `parts` (or v0.3 REST `content`) array opening at `c[i]`, `depth` levels deep.
    fn walk_parts(&mut self, c: &[u8], i: usize, depth: u32, name: ArrayName) -> Option<usize> {
        if depth > self.depth_limit() {
            return None;
        }
        let mut i = skip_ws(c, i + 1)?;
        if c[i] == b']' {
            return Some(i + 1);
        }
        let mut index = 0;
        loop {
            // A part that is not an object still takes an index: the state machine numbers it.
            if c[i] != b'{' {
                return None;
            }
            self.start_part(index, name);
            i = self.walk_object(c, i, depth + 1, Ctx::Part)?;
            self.end_part().ok()?;
            index += 1;
            i = skip_ws(c, i)?;
            match c[i] {
                b',' => i = skip_ws(c, i + 1)?,
                b']' => return Some(i + 1),
                _ => return None,
            }
        }
    }

    /// The string opening at `c[i]`, which means `role`. Short plain values nobody reads, and a
    /// part's declared types and filename, are taken straight from the chunk, as the state
    /// machine's `fast_value_string` takes them; the rest goes through the string machinery.
    fn walk_string(&mut self, c: &[u8], i: usize, role: Role) -> Option<usize> {
        let direct = matches!(
            role,
            Role::Skip | Role::PartMediaType | Role::FileMimeType | Role::Filename
        );
        if direct {
            let rest = &c[i + 1..c.len().min(i + 1 + VALUE_WINDOW)];
            if let Some(n) = first_special(rest).filter(|&n| rest[n] == b'"') {
                self.plain_part_value(role, &rest[..n]).ok()?;
                return Some(i + n + 2);
            }
            if role == Role::Skip {
                return skip_string(c, i + 1);
            }
        }
        self.start_string_value(role, i).ok()?;
        let end = self.string_body(c, i + 1).ok()?;
        (self.state != Lex::Str).then_some(end)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::card::constraints::InputConstraints;
    use crate::scan::{BodyShape, Policy, ScanOptions};

    fn policy() -> Arc<Policy> {
        let (c, issues) = InputConstraints::parse(
            &json!({"files": {"maxSizePerFileBytes": 1000, "maxCountPerRequest": 4},
                    "text": {"maxCharacters": 100}}),
            "test",
        );
        assert!(issues.is_empty());
        let modes = ["text/plain".to_owned(), "image/*".to_owned()];
        Arc::new(Policy::new(&c, Some(&modes), ScanOptions::default()))
    }

    fn walk(shape: BodyShape, body: &str) -> (bool, Scanner) {
        let mut s = Scanner::new(policy(), shape);
        let took = s.scan_whole(body.as_bytes());
        (took, s)
    }

    /// 1x1 PNG header, base64.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    #[test]
    fn walks_the_common_shapes_to_the_end() {
        let rpc = [
            format!(
                r#"{{"jsonrpc":"2.0","id":"a1","method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"h\u00e9llo \"x\""}},{{"raw":"{PNG}","mediaType":"image/png","filename":"a.png"}},{{"url":"https://x/y.png","media_type":"image/png"}},{{"data":{{"k":[1,2,{{"z":null}}]}},"metadata":{{}}}}]}},"configuration":{{"historyLength":5}}}}}}"#
            ),
            format!(
                r#" {{ "method" : "message/send" , "params" : {{ "message" : {{ "kind" : "message" , "parts" : [ {{ "kind" : "file" , "file" : {{ "bytes" : "{PNG}" , "mimeType" : "image/png" , "name" : "p.png" }} }} , {{ "kind" : "file", "file" : {{ "uri" : "https://x" }} }} ] }} }} , "id" : 3 }} "#
            ),
            r#"{"id":null,"method":"GetTask","params":{"id":"t1","historyLength":2}}"#.to_owned(),
        ];
        for body in &rpc {
            let (took, mut s) = walk(BodyShape::JsonRpc, body);
            assert!(took, "{body}");
            let summary = s.finish().unwrap();
            assert_eq!(summary.bytes, 0, "feed sets the byte count, not the walk");
        }
        let (took, mut s) = walk(BodyShape::JsonRpc, &rpc[0]);
        assert!(took);
        assert_eq!(s.request_id(), Some(&json!("a1")));
        assert_eq!(s.method(), Some("SendMessage"));
        let summary = s.finish().unwrap();
        assert_eq!(
            (summary.parts, summary.files, summary.inline_files),
            (4, 2, 1)
        );
        assert_eq!((summary.text_parts, summary.text_chars), (1, 9));
        assert_eq!(summary.inline_bytes, 70);

        let rest = [
            format!(r#"{{"message":{{"parts":[{{"raw":"{PNG}","mediaType":"image/png"}}]}}}}"#),
            format!(
                r#"{{"request":{{"content":[{{"file":{{"file_with_bytes":"{PNG}","mime_type":"image/png"}}}}]}}}}"#
            ),
        ];
        for body in &rest {
            let (took, mut s) = walk(BodyShape::Rest, body);
            assert!(took, "{body}");
            assert_eq!(s.finish().unwrap().inline_files, 1, "{body}");
        }
    }

    #[test]
    fn walks_only_a_body_known_to_be_whole() {
        let body: &[u8] =
            br#"{"id":1,"method":"m","params":{"message":{"parts":[{"text":"hi"}]}}}"#;
        let len = body.len() as u64;
        let walked = |hint: Option<u64>, chunks: &[&[u8]]| {
            let mut s = Scanner::new(policy(), BodyShape::JsonRpc);
            if let Some(n) = hint {
                s.expect_len(n);
            }
            for c in chunks {
                s.feed(c).unwrap();
            }
            assert_eq!(s.finish().unwrap().text_parts, 1);
            // The state machine records the contexts it enters; the walk keeps them on its stack.
            s.ctx[1] != Ctx::Root
        };
        assert!(walked(Some(len), &[body]));
        assert!(!walked(None, &[body]));
        assert!(!walked(Some(len + 1), &[body, b" "]));
        assert!(!walked(Some(len), &[&body[..10], &body[10..]]));
    }

    #[test]
    fn gives_up_and_leaves_the_scanner_new() {
        let parts = |p: &str| format!(r#"{{"params":{{"message":{{"parts":[{p}]}}}}}}"#);
        let bodies = [
            // Violations: the state machine words them.
            parts(&format!(r#"{{"text":"{}"}}"#, "x".repeat(101))),
            parts(r#"{"url":"a","mediaType":"application/pdf"}"#),
            parts(r#"{"url":"a"},{"url":"b"},{"url":"c"},{"url":"d"},{"url":"e"}"#),
            parts(r#"{"text":"a","text":"b"}"#),
            parts(r#"{"text":"a","url":"b"}"#),
            // Shapes it does not follow, or faults.
            parts(r#"{"te\u0078t":"a"}"#),
            parts(r#""not a part""#),
            parts(r#"{"text":"a"},"#),
            r#"{"id":1} x"#.to_owned(),
            r#"{"id":1"#.to_owned(),
            r#"[{"id":1}]"#.to_owned(),
            String::new(),
        ];
        for body in &bodies {
            let (took, s) = walk(BodyShape::JsonRpc, body);
            assert!(!took, "{body}");
            assert_eq!(s.state, Lex::Value, "{body}");
            assert_eq!(s.summary, crate::scan::Summary::default(), "{body}");
            assert!(s.id.is_none() && s.method.is_none() && !s.in_part, "{body}");
        }
    }
}
