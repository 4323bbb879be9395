//! Random bytes through the scanner, under a few policies, split at random points.
//! Oracles: no panic; whatever the chunking, a body is accepted (with the same summary, id and
//! method) exactly when it is accepted whole (a whole body takes the scanner's recursive walk,
//! a chunked one its state machine); the JSON-RPC and REST error bodies always serialize.
#![no_main]

use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use cardgate::card::constraints::InputConstraints;
use cardgate::scan::{BodyShape, Policy, ScanOptions, Scanner, SniffMode, WireVersion};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fn policies() -> &'static [Arc<Policy>] {
    static P: OnceLock<Vec<Arc<Policy>>> = OnceLock::new();
    P.get_or_init(|| {
        let make = |params: serde_json::Value, modes: Option<&[&str]>, options: ScanOptions| {
            let (c, _) = InputConstraints::parse(&params, "fuzz");
            let modes: Option<Vec<String>> = modes.map(|m| m.iter().map(|s| s.to_string()).collect());
            Arc::new(Policy::new(&c, modes.as_deref(), options))
        };
        vec![
            make(json!({}), None, ScanOptions::default()),
            make(
                json!({"files": {"maxTotalSizeBytes": 300, "maxCountPerRequest": 3, "maxSizePerFileBytes": 100,
                    "perMimeType": {"image/png": {"maxSizeBytes": 200, "maxDimensions": {"width": 16, "height": 16}},
                                    "image/*": {"maxDimensions": {"width": 64, "height": 64}}}},
                    "text": {"maxCharacters": 20, "maxTokens": 8, "tokenizer": "cl100k_base"}}),
                Some(&["text/plain", "image/*", "application/pdf"]),
                ScanOptions { dimension_probe_bytes: 512, jpeg_max_segments: 8, ..ScanOptions::default() },
            ),
            make(
                json!({"files": {"maxSizePerFileBytes": 0}, "text": {"maxTokens": 2, "tokenizer": "o200k_base"}}),
                Some(&["*/*"]),
                ScanOptions { sniff: SniffMode::Warn, token_buffer_bytes: 64, max_depth: 16, ..ScanOptions::default() },
            ),
            make(
                json!({"files": {"perMimeType": {"image/jpeg": {"maxDimensions": {"width": 1, "height": 1}}}}}),
                None,
                // Only the byte budget (4 MiB, beyond any input) bounds the walk: it must agree
                // with imagesize exactly.
                ScanOptions { sniff: SniffMode::Off, jpeg_max_segments: u32::MAX, ..ScanOptions::default() },
            ),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (ctl, raw) = (data[0], &data[2..]);
    let policy = &policies()[(ctl & 3) as usize];
    let wrapped = ctl & 8 != 0;
    let shape = if ctl & 4 == 0 || wrapped { BodyShape::JsonRpc } else { BodyShape::Rest };
    let mut image = vec![0xFF, 0xD8, 0xFF];
    let owned;
    let body: &[u8] = if wrapped {
        image.extend_from_slice(raw);
        owned = format!(
            r#"{{"params":{{"message":{{"parts":[{{"mediaType":"image/jpeg","raw":"{}"}}]}}}}}}"#,
            base64::engine::general_purpose::STANDARD.encode(&image)
        );
        owned.as_bytes()
    } else {
        raw
    };

    let mut whole = Scanner::new(policy.clone(), shape);
    whole.expect_len(body.len() as u64);
    let whole_result = whole.feed(body).and_then(|_| whole.finish());

    // Chunk sizes from a small xorshift seeded by the second byte.
    let mut x = u32::from(data[1]) | 0x100;
    let mut chunked = Scanner::new(policy.clone(), shape);
    chunked.expect_len(body.len() as u64);
    let mut rest = body;
    let mut result = Ok(());
    while !rest.is_empty() && result.is_ok() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let n = (x as usize % 37 + 1).min(rest.len());
        result = chunked.feed(&rest[..n]);
        rest = &rest[n..];
    }
    let chunked_result = result.and_then(|_| chunked.finish());

    match (&whole_result, &chunked_result) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b);
            assert_eq!(whole.request_id(), chunked.request_id());
            assert_eq!(whole.method(), chunked.method());
        }
        (Err(v), Err(_)) => {
            for wire in [WireVersion::V0_3, WireVersion::V1_0] {
                let body = v.jsonrpc_response(whole.request_id(), wire);
                assert!(serde_json::to_vec(&body).is_ok());
            }
            assert_eq!(v.rest_response(400)["error"]["code"], 400);
            assert!(!v.message.is_empty());
        }
        _ => panic!("chunking changed the verdict: whole {whole_result:?}, chunked {chunked_result:?}"),
    }
    assert_eq!(whole.bytes_scanned(), body.len() as u64);

    if wrapped && ctl & 3 == 3 {
        let expected = match imagesize::blob_size(&image) {
            Ok(s) if s.width <= 1 && s.height <= 1 => None,
            Ok(_) => Some("dimensions"),
            Err(_) => Some("dimensions_unknown"),
        };
        let got = whole_result.as_ref().err().map(|v| v.reason());
        assert_eq!(got, expected, "JPEG walk and imagesize disagree");
    }
});
