//! One test (at least) per check of the scanner and per field of its verdict.
// The helpers return what Scanner::feed/finish return: the contract's Result<_, Violation>.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use base64::Engine as _;
use cardgate::card::constraints::InputConstraints;
use cardgate::scan::{
    BodyShape, Policy, Reason, ScanOptions, Scanner, SniffMode, Summary, UnknownDimensions,
    Violation,
};
use serde_json::{json, Value};

fn policy_with(params: Value, modes: Option<&[&str]>, options: ScanOptions) -> Arc<Policy> {
    let (c, issues) = InputConstraints::parse(&params, "params");
    assert!(issues.is_empty(), "{issues:?}");
    let modes: Option<Vec<String>> = modes.map(|m| m.iter().map(|s| s.to_string()).collect());
    Arc::new(Policy::new(&c, modes.as_deref(), options))
}

fn policy(params: Value) -> Arc<Policy> {
    policy_with(params, None, ScanOptions::default())
}

/// Scan whole, then at every split point (small bodies) or 97 evenly spread ones; all must agree.
fn scan(policy: &Arc<Policy>, shape: BodyShape, body: &[u8]) -> Result<Summary, Violation> {
    let whole = scan_chunks(policy, shape, &[body]);
    let step = (body.len() / 97).max(1);
    for at in (0..=body.len()).step_by(step) {
        let (a, b) = body.split_at(at);
        let split = scan_chunks(policy, shape, &[a, b]);
        assert_eq!(
            split.as_ref().map_err(|v| v.data.reason),
            whole.as_ref().map_err(|v| v.data.reason),
            "split at {at} disagrees"
        );
    }
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    let bytewise = scan_chunks(policy, shape, &bytes);
    assert_eq!(
        bytewise.as_ref().map_err(|v| v.data.reason),
        whole.as_ref().map_err(|v| v.data.reason),
        "byte-by-byte disagrees"
    );
    // A whole body is walked by recursive descent, one in pieces by the state machine: both
    // must also capture the same id and method.
    assert_eq!(
        request_facts(policy, shape, &[body]),
        request_facts(policy, shape, &bytes),
        "id or method differs byte by byte"
    );
    whole
}

fn request_facts(
    policy: &Arc<Policy>,
    shape: BodyShape,
    chunks: &[&[u8]],
) -> (Option<Value>, Option<String>) {
    let mut s = Scanner::new(policy.clone(), shape);
    s.expect_len(chunks.iter().map(|c| c.len() as u64).sum());
    for c in chunks {
        if s.feed(c).is_err() {
            break;
        }
    }
    (s.request_id().cloned(), s.method().map(str::to_owned))
}

fn scan_chunks(
    policy: &Arc<Policy>,
    shape: BodyShape,
    chunks: &[&[u8]],
) -> Result<Summary, Violation> {
    let mut s = Scanner::new(policy.clone(), shape);
    // Known in advance, as from Content-Length: a body in one chunk takes the recursive walk.
    s.expect_len(chunks.iter().map(|c| c.len() as u64).sum());
    for c in chunks {
        s.feed(c)?;
    }
    s.finish()
}

fn rpc(parts: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m", "parts": parts}}}))
    .unwrap()
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn reject(policy: &Arc<Policy>, body: &[u8]) -> Violation {
    match scan(policy, BodyShape::JsonRpc, body) {
        Ok(s) => panic!(
            "accepted: {s:?}\n{}",
            String::from_utf8_lossy(&body[..body.len().min(400)])
        ),
        Err(v) => v,
    }
}

fn accept(policy: &Arc<Policy>, body: &[u8]) -> Summary {
    match scan(policy, BodyShape::JsonRpc, body) {
        Ok(s) => s,
        Err(v) => panic!(
            "rejected: {v}\n{}",
            String::from_utf8_lossy(&body[..body.len().min(400)])
        ),
    }
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    v.extend_from_slice(&width.to_be_bytes());
    v.extend_from_slice(&height.to_be_bytes());
    v.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&[0u8; 64]);
    v
}

/// A JPEG whose SOF0 sits after `pad` bytes of APPn segments.
fn jpeg(width: u16, height: u16, pad: usize) -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8];
    let mut left = pad;
    while left > 0 {
        let n = left.min(60000);
        v.extend_from_slice(&[0xFF, 0xE1]);
        v.extend_from_slice(&((n + 2) as u16).to_be_bytes());
        v.extend(std::iter::repeat_n(0x55u8, n));
        left -= n;
    }
    v.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8]);
    v.extend_from_slice(&height.to_be_bytes());
    v.extend_from_slice(&width.to_be_bytes());
    v.extend_from_slice(&[1, 1, 0x11, 0]);
    v.extend_from_slice(&[0xFF, 0xD9]);
    v
}

#[test]
fn accepts_a_plain_text_message_and_summarizes() {
    let p = policy(json!({"text": {"maxCharacters": 10}}));
    let s = accept(&p, &rpc(json!([{"text": "h\u{e9}llo \u{1F600}"}])));
    assert_eq!(s.text_parts, 1);
    assert_eq!(s.text_chars, 7);
    assert_eq!(s.parts, 1);
}

#[test]
fn text_length_counts_scalar_values_after_unescaping() {
    let p = policy(json!({"text": {"maxCharacters": 3}}));
    // A surrogate pair written as two escapes is one character.
    accept(&p, br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"text":"a\ud83d\ude00\u00e9"}]}}}"#);
    let v = reject(&p, &rpc(json!([{"text": "abcd"}])));
    assert_eq!(v.data.reason, Reason::TextLength);
    assert_eq!(v.code, -32602);
    assert_eq!(v.data.constraint.as_deref(), Some("text.maxCharacters"));
    assert_eq!(
        v.data.field.as_deref(),
        Some("params.message.parts[0].text")
    );
    assert!(v.message.contains("at most 3 characters"), "{}", v.message);
}

#[test]
fn text_tokens_use_the_named_tokenizer() {
    let p = policy(json!({"text": {"maxTokens": 3, "tokenizer": "cl100k_base"}}));
    accept(&p, &rpc(json!([{"text": "hello world"}])));
    let v = reject(
        &p,
        &rpc(json!([{"text": "hello world, how are you today"}])),
    );
    assert_eq!(v.data.reason, Reason::TextTokens);
    assert_eq!(v.data.constraint.as_deref(), Some("text.maxTokens"));
    assert!(v.message.contains("cl100k_base"));
    // An unknown tokenizer enforces characters only.
    let unknown =
        policy(json!({"text": {"maxTokens": 1, "tokenizer": "nope", "maxCharacters": 100}}));
    accept(
        &unknown,
        &rpc(json!([{"text": "hello world, how are you today"}])),
    );
}

#[test]
fn file_size_from_base64_length_early_and_exact() {
    let p = policy(json!({"files": {"maxSizePerFileBytes": 100}}));
    accept(
        &p,
        &rpc(json!([{"raw": b64(&[1u8; 100]), "mediaType": "application/octet-stream"}])),
    );
    let v = reject(
        &p,
        // filename first: the violation is reported before the part ends.
        &rpc(json!([{"filename": "a.bin", "raw": b64(&[1u8; 101])}])),
    );
    assert_eq!(v.data.reason, Reason::FileSize);
    assert_eq!(
        v.data.constraint.as_deref(),
        Some("files.maxSizePerFileBytes")
    );
    assert_eq!(v.data.filename.as_deref(), Some("a.bin"));
    assert_eq!(v.data.part_index, Some(0));
    // Early: the violation comes before the string ends, with a lower bound.
    let body = rpc(json!([{"raw": b64(&[1u8; 3000])}]));
    let mut s = Scanner::new(p.clone(), BodyShape::JsonRpc);
    let cut = body.len() - 200;
    let v = s.feed(&body[..cut]).unwrap_err();
    assert_eq!(v.data.reason, Reason::FileSize);
    assert!(v.data.actual_is_lower_bound);
    assert!(v.message.contains("at least"), "{}", v.message);
}

#[test]
fn per_mime_limit_applies_when_type_comes_before_or_after_the_bytes() {
    let p = policy(json!({"files": {"maxSizePerFileBytes": 1000,
        "perMimeType": {"image/png": {"maxSizeBytes": 100}}}}));
    let img = png(1, 1);
    let mut big = img.clone();
    big.resize(150, 0);
    // json! sorts keys, so the orders are spelled out.
    let data = b64(&big);
    for parts in [
        format!(r#"[{{"mediaType":"image/png","filename":"photo.png","raw":"{data}"}}]"#),
        format!(r#"[{{"raw":"{data}","filename":"photo.png","media_type":"image/png"}}]"#),
        format!(
            r#"[{{"kind":"file","file":{{"name":"photo.png","bytes":"{data}","mimeType":"image/png"}}}}]"#
        ),
    ] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"message":{{"parts":{parts}}}}}}}"#
        );
        let v = reject(&p, body.as_bytes());
        assert_eq!(v.data.reason, Reason::MimeSize);
        assert_eq!(
            v.data.constraint.as_deref(),
            Some("files.perMimeType[\"image/png\"].maxSizeBytes")
        );
        assert_eq!(v.data.media_type.as_deref(), Some("image/png"));
        assert_eq!(v.data.filename.as_deref(), Some("photo.png"));
        assert!(v.message.contains("per image/png file"), "{}", v.message);
        assert!(
            v.message.starts_with("part 0 (photo.png, image/png) is "),
            "{}",
            v.message
        );
    }
    // A per-MIME limit may be larger than the global one.
    let roomy = policy(json!({"files": {"maxSizePerFileBytes": 10,
        "perMimeType": {"image/png": {"maxSizeBytes": 1000}}}}));
    accept(
        &roomy,
        &rpc(json!([{"raw": b64(&big), "mediaType": "image/png"}])),
    );
    // Undeclared: held to the sniffed type's limit.
    let v = reject(&p, &rpc(json!([{"raw": b64(&big)}])));
    assert_eq!(v.data.reason, Reason::MimeSize);
}

#[test]
fn total_size_and_file_count() {
    let p = policy(json!({"files": {"maxTotalSizeBytes": 150, "maxCountPerRequest": 2}}));
    let v = reject(
        &p,
        &rpc(json!([{"raw": b64(&[0u8; 100])}, {"raw": b64(&[0u8; 100])}])),
    );
    assert_eq!(v.data.reason, Reason::TotalSize);
    assert_eq!(v.data.part_index, Some(1));
    assert_eq!(
        v.data.constraint.as_deref(),
        Some("files.maxTotalSizeBytes")
    );
    let v = reject(
        &p,
        &rpc(json!([{"url": "https://x/a"}, {"url": "https://x/b"}, {"raw": ""}])),
    );
    assert_eq!(v.data.reason, Reason::FileCount);
    assert_eq!(
        v.data.constraint.as_deref(),
        Some("files.maxCountPerRequest")
    );
    assert_eq!(v.message, "this request carries at least 3 files (part 2 is one too many); this agent accepts at most 2 per request");
    let s = accept(
        &p,
        &rpc(json!([{"url": "https://x/a"}, {"raw": b64(&[0u8; 150])}])),
    );
    assert_eq!((s.files, s.inline_files, s.inline_bytes), (2, 1, 150));
}

#[test]
fn media_types_outside_the_accepted_modes_are_refused() {
    let p = policy_with(
        json!({}),
        Some(&["text/plain", "image/*"]),
        ScanOptions::default(),
    );
    accept(
        &p,
        &rpc(json!([{"url": "https://x/a.png", "mediaType": "image/png"}])),
    );
    let v = reject(
        &p,
        &rpc(json!([{"url": "https://x/a.pdf", "mediaType": "application/pdf"}])),
    );
    assert_eq!(v.data.reason, Reason::MediaType);
    assert_eq!(v.code, -32005);
    assert!(
        v.message.contains("application/pdf") && v.message.contains("image/*"),
        "{}",
        v.message
    );
    // Undeclared bytes are judged by what they are.
    let pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n";
    let v = reject(&p, &rpc(json!([{"raw": b64(pdf)}])));
    assert_eq!(v.data.reason, Reason::MediaType);
}

#[test]
fn declared_type_must_match_the_magic_bytes() {
    let p = policy(json!({}));
    let v = reject(
        &p,
        &rpc(json!([{"raw": b64(&jpeg(10, 10, 0)), "mediaType": "image/png"}])),
    );
    assert_eq!(v.data.reason, Reason::SniffMismatch);
    assert!(v.message.contains("image/jpeg"), "{}", v.message);
    let v = reject(
        &p,
        &rpc(json!([{"raw": b64(b"just text"), "mediaType": "image/png"}])),
    );
    assert_eq!(v.data.reason, Reason::SniffMismatch);
    accept(
        &p,
        &rpc(json!([{"raw": b64(b"just text"), "mediaType": "text/plain"}])),
    );
    accept(
        &p,
        &rpc(json!([{"raw": b64(&png(1, 1)), "mediaType": "application/octet-stream"}])),
    );
    let warn = policy_with(
        json!({}),
        None,
        ScanOptions {
            sniff: SniffMode::Warn,
            ..ScanOptions::default()
        },
    );
    let s = accept(
        &warn,
        &rpc(json!([{"raw": b64(&png(1, 1)), "mediaType": "image/gif"}])),
    );
    assert_eq!(s.sniff_warnings.len(), 1);
    assert_eq!(s.sniff_warnings[0].detected, Some("image/png"));
    let off = policy_with(
        json!({}),
        None,
        ScanOptions {
            sniff: SniffMode::Off,
            ..ScanOptions::default()
        },
    );
    let s = accept(
        &off,
        &rpc(json!([{"raw": b64(&png(1, 1)), "mediaType": "image/gif"}])),
    );
    assert!(s.sniff_warnings.is_empty());
}

#[test]
fn image_dimensions_from_prefix_and_deep_jpeg_sof() {
    let p = policy(json!({"files": {"perMimeType": {
        "image/png": {"maxDimensions": {"width": 100, "height": 100}},
        "image/jpeg": {"maxDimensions": {"width": 100, "height": 100}}}}}));
    accept(
        &p,
        &rpc(json!([{"raw": b64(&png(100, 100)), "mediaType": "image/png"}])),
    );
    let v = reject(
        &p,
        &rpc(json!([{"raw": b64(&png(101, 5)), "mediaType": "image/png"}])),
    );
    assert_eq!(v.data.reason, Reason::Dimensions);
    assert_eq!(
        v.data.constraint.as_deref(),
        Some("files.perMimeType[\"image/png\"].maxDimensions")
    );
    assert!(v.message.contains("101x5 pixels"), "{}", v.message);
    // SOF 200 KB in, behind several APP1 segments.
    accept(
        &p,
        &rpc(json!([{"raw": b64(&jpeg(90, 80, 200_000)), "mediaType": "image/jpeg"}])),
    );
    let v = reject(
        &p,
        &rpc(json!([{"raw": b64(&jpeg(300, 80, 200_000)), "mediaType": "image/jpeg"}])),
    );
    assert_eq!(v.data.reason, Reason::Dimensions);
}

#[test]
fn unknown_dimensions_fail_closed_unless_allowed() {
    let params = json!({"files": {"perMimeType": {"image/jpeg": {"maxDimensions": {"width": 100, "height": 100}}}}});
    let small_budget = ScanOptions {
        dimension_probe_bytes: 10_000,
        ..ScanOptions::default()
    };
    let p = policy_with(params.clone(), None, small_budget.clone());
    let v = reject(
        &p,
        &rpc(json!([{"raw": b64(&jpeg(10, 10, 50_000)), "mediaType": "image/jpeg"}])),
    );
    assert_eq!(v.data.reason, Reason::DimensionsUnknown);
    // Early: decided long before the string ends (the type is declared first).
    let body = rpc(json!([{"mediaType": "image/jpeg", "raw": b64(&jpeg(10, 10, 50_000))}]));
    let mut s = Scanner::new(p.clone(), BodyShape::JsonRpc);
    assert!(s.feed(&body[..20_000]).is_err());
    let allow = policy_with(
        params,
        None,
        ScanOptions {
            unknown_dimensions: UnknownDimensions::Allow,
            ..small_budget
        },
    );
    accept(&allow, &body);
}

#[test]
fn bmp_height_is_signed() {
    let p = policy(
        json!({"files": {"perMimeType": {"image/bmp": {"maxDimensions": {"width": 10, "height": 10}}}}}),
    );
    let mut bmp = b"BM".to_vec();
    bmp.extend_from_slice(&[0; 12]);
    bmp.extend_from_slice(&40u32.to_le_bytes());
    bmp.extend_from_slice(&5i32.to_le_bytes());
    bmp.extend_from_slice(&(-7i32).to_le_bytes());
    bmp.extend_from_slice(&[1, 0, 24, 0]);
    bmp.extend_from_slice(&[0; 40]);
    accept(
        &p,
        &rpc(json!([{"raw": b64(&bmp), "mediaType": "image/bmp"}])),
    );
}

#[test]
fn base64_is_validated_not_decoded() {
    let p = policy(json!({}));
    for bad in ["AAA*", "AA==AA", "A", "AAAA\\n", "+A-A"] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"message":{{"parts":[{{"raw":"{bad}"}}]}}}}}}"#
        );
        let v = reject(&p, body.as_bytes());
        assert_eq!(v.data.reason, Reason::BadBase64, "{bad}");
        assert_eq!(v.data.field.as_deref(), Some("params.message.parts[0].raw"));
    }
    // `\/` is a `/`, and URL-safe is fine.
    let s = accept(
        &p,
        br#"{"params":{"message":{"parts":[{"raw":"\/\/\/\/"},{"raw":"-_-_"}]}}}"#,
    );
    assert_eq!(s.inline_bytes, 6);
}

#[test]
fn aliases_escapes_and_duplicates() {
    let p = policy(json!({"files": {"maxSizePerFileBytes": 2}}));
    // An escaped key is the same key.
    let v = reject(
        &p,
        br#"{"params":{"message":{"parts":[{"\u0072aw":"AAAA"}]}}}"#,
    );
    assert_eq!(v.data.reason, Reason::FileSize);
    let v = scan(
        &p,
        BodyShape::Rest,
        br#"{"message":{"content":[{"file":{"file_with_bytes":"AAAA"}}]}}"#,
    )
    .unwrap_err();
    assert_eq!(v.data.reason, Reason::FileSize);
    let v = reject(
        &p,
        br#"{"params":{"message":{"parts":[{"mediaType":"a/b","media_type":"a/c"}]}}}"#,
    );
    assert_eq!(v.data.reason, Reason::DuplicateKey);
    assert!(v.message.contains("media_type"), "{}", v.message);
    let v = reject(
        &p,
        br#"{"params":{"message":{"parts":[{"text":"a","raw":""}]}}}"#,
    );
    assert_eq!(v.data.reason, Reason::AmbiguousPart);
    let v = reject(&p, br#"{"id":1,"id":2}"#);
    assert_eq!(v.data.reason, Reason::DuplicateKey);
    // Unknown keys may repeat (nothing reads them).
    accept(&p, br#"{"params":{"message":{"parts":[{"x":1,"x":2}]}}}"#);
}

#[test]
fn rest_bodies_and_v03_content() {
    let p = policy(json!({"files": {"maxSizePerFileBytes": 2}}));
    let body = br#"{"message":{"content":[{"file":{"fileWithBytes":"AAAA","mimeType":"application/octet-stream"}}]}}"#;
    let v = scan(&p, BodyShape::Rest, body).unwrap_err();
    assert_eq!(v.data.reason, Reason::FileSize);
    assert_eq!(
        v.data.field.as_deref(),
        Some("message.content[0].file.fileWithBytes")
    );
    // The JSON-RPC shape does not look at a top-level message.
    assert!(scan(&p, BodyShape::JsonRpc, body).is_ok());
    let v = scan(
        &p,
        BodyShape::Rest,
        br#"{"message":{"parts":[{"raw":"AAAA"}]}}"#,
    )
    .unwrap_err();
    assert_eq!(v.data.reason, Reason::FileSize);
}

#[test]
fn json_errors_batches_and_non_message_bodies() {
    let p = policy(json!({"files": {"maxCountPerRequest": 0}}));
    for bad in [
        &b""[..],
        b"{",
        b"{\"a\":}",
        b"{\"a\":1,}",
        b"{\"a\":01}",
        b"{\"a\":\"\x01\"}",
        b"{\"a\":\"\xff\"}",
        b"{\"a\":\"\\ud800\"}",
        b"{} x",
        b"{\"a\":tru}",
        b"{\"a\":1.}",
        b"{\"a\":\"\\x\"}",
    ] {
        let v = reject(&p, bad);
        assert_eq!(
            v.data.reason,
            Reason::ParseError,
            "{}",
            String::from_utf8_lossy(bad)
        );
        assert_eq!(v.code, -32700);
        assert!(v.data.offset.is_some());
    }
    let v = reject(&p, b"[{\"jsonrpc\":\"2.0\"}]");
    assert_eq!(v.data.reason, Reason::InvalidRequest);
    assert_eq!(v.code, -32600);
    let s = accept(
        &p,
        br#"{"jsonrpc":"2.0","id":"abc","method":"GetTask","params":{"id":"t1"}}"#,
    );
    assert_eq!(s.files, 0);
}

#[test]
fn skipped_containers_are_validated_like_any_json() {
    // `data` and `metadata` are containers nobody looks into; whole in a chunk they take a
    // faster path, byte by byte they never can. Both must judge them alike, to the byte.
    let p = policy(json!({}));
    let body = |inner: &[u8]| {
        let mut b = br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m","parts":[{"data":"#.to_vec();
        b.extend_from_slice(inner);
        b.extend_from_slice(br#"}]},"metadata":"#);
        b.extend_from_slice(inner);
        b.extend_from_slice(b"}}");
        b
    };
    let fine: &[&[u8]] = &[
        br#"{"kind":"form","x":[1,-2.5e3,0,true,false,null,{"y":"d\u00e9j\u00e0 \ud83d\ude00 \/"}]}"#,
        "[\"caf\u{e9} \u{1F600}\", { } , [ ] ]".as_bytes(),
    ];
    for inner in fine {
        accept(&p, &body(inner));
    }
    let deep = [vec![b'['; 200], vec![b']'; 200]].concat();
    let bad: &[&[u8]] = &[
        br#"{"a":1,}"#,
        b"[01]",
        b"[1.]",
        b"[-]",
        br#"{"a":tru}"#,
        br#"{"a" 1}"#,
        b"[1}",
        b"{\"a\":\"\x01\"}",
        b"[\"\xff\"]",
        br#"["\x"]"#,
        br#"["\ud800"]"#,
        &deep,
    ];
    for inner in bad {
        let b = body(inner);
        let whole = scan_chunks(&p, BodyShape::JsonRpc, &[&b]).unwrap_err();
        let bytes: Vec<&[u8]> = b.chunks(1).collect();
        let bytewise = scan_chunks(&p, BodyShape::JsonRpc, &bytes).unwrap_err();
        let what = String::from_utf8_lossy(inner);
        assert_eq!(whole.data.reason, Reason::ParseError, "{what}: {whole}");
        assert_eq!(whole.message, bytewise.message, "{what}");
        assert_eq!(whole.data.offset, bytewise.data.offset, "{what}");
    }
}

#[test]
fn captures_id_and_method_in_any_order() {
    let p = policy(json!({}));
    let body = br#"{"params":{"message":{"parts":[]}},"method":"message\/send","id":{"x":1}}"#;
    let mut s = Scanner::new(p.clone(), BodyShape::JsonRpc);
    s.feed(body).unwrap();
    assert_eq!(s.method(), Some("message/send"));
    assert_eq!(s.request_id(), None);
    let mut s = Scanner::new(p.clone(), BodyShape::JsonRpc);
    s.feed(br#"{"id":-12.5e3,"method":"SendMessage"}"#).unwrap();
    s.finish().unwrap();
    assert_eq!(s.request_id(), Some(&json!(-12500.0)));
    assert_eq!(s.bytes_scanned(), 37);
    let mut s = Scanner::new(p, BodyShape::JsonRpc);
    s.feed(br#"{"id":"r\u00e9q"}"#).unwrap();
    assert_eq!(s.request_id(), Some(&json!("r\u{e9}q")));
}

#[test]
fn ids_and_methods_are_captured_alike_whole_and_in_pieces() {
    let p = policy(json!({}));
    let long_id = format!(r#"{{"id":"{}","method":"m"}}"#, "x".repeat(300));
    let long_number = format!(r#"{{"id":{},"method":"m"}}"#, "7".repeat(300));
    let cases: [(&[u8], Option<Value>, Option<&str>); 9] = [
        (
            br#"{"id":7,"method":"SendMessage"}"#,
            Some(json!(7)),
            Some("SendMessage"),
        ),
        (
            br#" { "method" : "a\u0062c" , "id" : "r\"1" } "#,
            Some(json!("r\"1")),
            Some("abc"),
        ),
        (br#"{"id":null,"method":7}"#, Some(Value::Null), None),
        (br#"{"id":true,"method":["x"]}"#, None, None),
        (
            br#"{"id":-0.5e1,"params":{"message":{"parts":[]}}}"#,
            Some(json!(-5.0)),
            None,
        ),
        (
            br#"{"id":12345678901234567890}"#,
            Some(json!(12345678901234567890u64)),
            None,
        ),
        (
            br#"{"jsonrpc":"2.0","params":[],"id":{"a":[1]},"method":"caf\u00e9"}"#,
            None,
            Some("caf\u{e9}"),
        ),
        (long_id.as_bytes(), None, Some("m")),
        (long_number.as_bytes(), None, Some("m")),
    ];
    for (body, id, method) in cases {
        let what = String::from_utf8_lossy(&body[..body.len().min(60)]).into_owned();
        scan(&p, BodyShape::JsonRpc, body).unwrap_or_else(|v| panic!("{what}: {v}"));
        let (got_id, got_method) = request_facts(&p, BodyShape::JsonRpc, &[body]);
        assert_eq!(got_id, id, "{what}");
        assert_eq!(got_method.as_deref(), method, "{what}");
    }
}

#[test]
fn deep_nesting_is_bounded() {
    let p = policy(json!({}));
    let mut body = b"{\"a\":".to_vec();
    body.extend(std::iter::repeat_n(b'[', 200));
    body.extend(std::iter::repeat_n(b']', 200));
    body.push(b'}');
    let v = scan_chunks(&p, BodyShape::JsonRpc, &[&body]).unwrap_err();
    assert_eq!(v.data.reason, Reason::ParseError);
    assert!(v.message.contains("deeper than 128"));
}

#[test]
fn token_counting_is_bounded_and_fails_closed() {
    let options = ScanOptions {
        token_buffer_bytes: 16,
        ..ScanOptions::default()
    };
    let p = policy_with(
        json!({"text": {"maxTokens": 8, "tokenizer": "cl100k_base"}}),
        None,
        options,
    );
    // Short enough to skip counting (8 bytes ≤ 8 tokens).
    accept(&p, &rpc(json!([{"text": "12345678"}])));
    // Longer than the buffer: refused rather than counted without bound.
    let v = reject(&p, &rpc(json!([{"text": "word ".repeat(20)}])));
    assert_eq!(v.data.reason, Reason::TextTokens);
    assert!(v.message.contains("too long to count"), "{}", v.message);
}

#[test]
fn rest_bodies_without_a_message_pass() {
    let p = policy(json!({"files": {"maxCountPerRequest": 0}}));
    assert!(scan(&p, BodyShape::Rest, b"[1, {\"message\": 2}]").is_ok());
    assert!(scan(&p, BodyShape::Rest, b"\"just a string\"").is_ok());
    assert!(scan(
        &p,
        BodyShape::Rest,
        br#"{"message":{"parts":"not an array"}}"#
    )
    .is_ok());
    let v = scan(
        &p,
        BodyShape::Rest,
        br#"{"message":{"parts":[{"url":"https://x"}]}}"#,
    )
    .unwrap_err();
    assert_eq!(v.data.reason, Reason::FileCount);
}

/// A JPEG whose last marker sits in a final, padded 16-character window that is complete before
/// the string ends: the walk must give up, not spin.
#[test]
fn jpeg_marker_in_the_padded_last_window_ends_the_walk() {
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x01, 0x21];
    jpeg.extend(std::iter::repeat_n(0x55u8, 287));
    jpeg.extend_from_slice(&[0xFF, 0xE2, 0x00, 0x04, 0, 0, 0, 0]);
    assert_eq!(jpeg.len(), 301);
    let p = policy(
        json!({"files": {"perMimeType": {"image/jpeg": {"maxDimensions": {"width": 9, "height": 9}}}}}),
    );
    let v = reject(
        &p,
        &rpc(json!([{"mediaType": "image/jpeg", "raw": b64(&jpeg)}])),
    );
    assert_eq!(v.data.reason, Reason::DimensionsUnknown);
    assert!(imagesize::blob_size(&jpeg).is_err());
}

#[test]
fn rest_request_is_the_proto_name_of_message() {
    let p = policy(json!({"files": {"maxSizePerFileBytes": 2}}));
    let body = br#"{"request":{"content":[{"file":{"file_with_bytes":"QUJD"}}]}}"#;
    let v = scan(&p, BodyShape::Rest, body).unwrap_err();
    assert_eq!(v.data.reason, Reason::FileSize);
    let both = br#"{"message":{"content":[]},"request":{"content":[]}}"#;
    let v = scan(&p, BodyShape::Rest, both).unwrap_err();
    assert_eq!(v.data.reason, Reason::DuplicateKey);
    assert!(v.message.contains("request"), "{}", v.message);
}

/// Found by the fuzzer: an 11-byte "JPEG" whose SOF fits, but imagesize needs 12 bytes to read
/// anything; the walk agrees with imagesize.
#[test]
fn jpeg_shorter_than_twelve_bytes_has_no_dimensions() {
    let tiny = [
        0xFF, 0xD8, 0xFF, 0xCF, 0xCF, 0x01, 0x00, 0x23, 0x00, 0x7D, 0x7D,
    ];
    assert!(imagesize::blob_size(&tiny).is_err());
    let p = policy(
        json!({"files": {"perMimeType": {"image/jpeg": {"maxDimensions": {"width": 1, "height": 1}}}}}),
    );
    let v = reject(
        &p,
        &rpc(json!([{"mediaType": "image/jpeg", "raw": b64(&tiny)}])),
    );
    assert_eq!(v.data.reason, Reason::DimensionsUnknown);
}
