//! Enforcement through the real gateway, against real agents: every limit in each wire
//! shape, with the agent's own record showing that nothing of a rejected request arrived.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

/// Limits small enough to break with tiny bodies.
const LIMITS: &str = r#"{"files": {"maxCountPerRequest": 2, "maxSizePerFileBytes": 1000, "maxTotalSizeBytes": 1500,
  "perMimeType": {"image/png": {"maxSizeBytes": 600, "maxDimensions": {"width": 64, "height": 64}}}},
  "text": {"maxCharacters": 50}}"#;
const MODES: &str = "text/plain,image/png,image/jpeg,application/pdf,application/octet-stream";

/// A PNG header with the given dimensions, padded to `len` bytes.
fn png(width: u32, height: u32, len: usize) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    b.extend_from_slice(&width.to_be_bytes());
    b.extend_from_slice(&height.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    b.resize(len.max(b.len()), 0);
    b
}

/// A part, independent of wire shape.
enum P {
    Text(String),
    File {
        name: &'static str,
        media: &'static str,
        data: String,
    },
}

fn file(name: &'static str, media: &'static str, bytes: &[u8]) -> P {
    P::File {
        name,
        media,
        data: b64(bytes),
    }
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    V10,
    V03,
    Rest,
}

fn body(shape: Shape, parts: &[P]) -> Vec<u8> {
    let v1 = |p: &P| match p {
        P::Text(t) => json!({"text": t}),
        P::File { name, media, data } => json!({"filename": name, "mediaType": media, "raw": data}),
    };
    let v03 = |p: &P| match p {
        P::Text(t) => json!({"kind": "text", "text": t}),
        P::File { name, media, data } => {
            json!({"kind": "file", "file": {"name": name, "mimeType": media, "bytes": data}})
        }
    };
    let value = match shape {
        Shape::V10 => {
            json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {
            "messageId": "m", "role": "ROLE_USER", "parts": parts.iter().map(v1).collect::<Vec<_>>()}}})
        }
        Shape::V03 => {
            json!({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": {
            "kind": "message", "messageId": "m", "role": "user", "parts": parts.iter().map(v03).collect::<Vec<_>>()}}})
        }
        Shape::Rest => {
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": parts.iter().map(v1).collect::<Vec<_>>()}})
        }
    };
    serde_json::to_vec(&value).unwrap()
}

fn send(gw: &Gateway, shape: Shape, body: &[u8]) -> Reply {
    let (path, version) = match shape {
        Shape::V10 => ("/agents/sdk/", Some("1.0")),
        Shape::V03 => ("/agents/sdk/", None),
        Shape::Rest => ("/agents/sdk/rest/message:send", Some("1.0")),
    };
    let mut headers = vec![("content-type", "application/json")];
    if let Some(v) = version {
        headers.push(("a2a-version", v));
    }
    post(&gw.url(path), &headers, body)
}

/// Check the answer's shape and return (code or status, violation).
fn violation_of(shape: Shape, r: &Reply) -> (i64, String) {
    let v = r.json();
    match shape {
        Shape::V10 => {
            assert_eq!(r.status, 200, "{v}");
            assert_eq!(v["id"], 7, "{v}");
            let info = &v["error"]["data"][0];
            assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
            assert_eq!(info["domain"], "a2a-protocol.org");
            (
                v["error"]["code"].as_i64().unwrap(),
                info["metadata"]["violation"].as_str().unwrap().to_string(),
            )
        }
        Shape::V03 => {
            assert_eq!(r.status, 200, "{v}");
            assert_eq!(v["id"], 7, "{v}");
            (
                v["error"]["code"].as_i64().unwrap(),
                v["error"]["data"]["violation"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        }
        Shape::Rest => {
            assert_eq!(r.status, 400, "{v}");
            let info = &v["error"]["details"][0];
            (
                v["error"]["code"].as_i64().unwrap(),
                info["metadata"]["violation"].as_str().unwrap().to_string(),
            )
        }
    }
}

#[test]
fn every_limit_in_every_shape_is_answered_by_the_gateway_and_never_reaches_the_agent() {
    let agent = SdkAgent::start(&["--params", LIMITS, "--input-modes", MODES]);
    let gw = Gateway::start(&format!("  - id: sdk\n    upstream: {}\n", agent.url()), "");
    gw.wait_card("sdk");
    let octets = |n: usize| vec![7u8; n];
    let cases: Vec<(&str, Vec<P>, i64)> = vec![
        (
            "file_count",
            vec![
                file("a", "application/octet-stream", &octets(10)),
                file("b", "application/octet-stream", &octets(10)),
                file("c", "application/octet-stream", &octets(10)),
            ],
            -32602,
        ),
        (
            "file_size",
            vec![file("a", "application/octet-stream", &octets(1001))],
            -32602,
        ),
        (
            "total_size",
            vec![
                file("a", "application/octet-stream", &octets(800)),
                file("b", "application/octet-stream", &octets(800)),
            ],
            -32602,
        ),
        (
            "mime_size",
            vec![file("p.png", "image/png", &png(10, 10, 700))],
            -32602,
        ),
        (
            "dimensions",
            vec![file("p.png", "image/png", &png(100, 10, 100))],
            -32602,
        ),
        (
            "media_type",
            vec![file("v.mp4", "video/mp4", &octets(10))],
            -32005,
        ),
        (
            "sniff_mismatch",
            vec![file("p.png", "image/png", b"%PDF-1.4\n% not a png at all")],
            -32602,
        ),
        ("text_length", vec![P::Text("x".repeat(51))], -32602),
        (
            "bad_base64",
            vec![P::File {
                name: "a",
                media: "application/octet-stream",
                data: "QUJD$$$$".into(),
            }],
            -32602,
        ),
    ];
    for (reason, parts, code) in &cases {
        for shape in [Shape::V10, Shape::V03, Shape::Rest] {
            let r = send(&gw, shape, &body(shape, parts));
            let (got_code, violation) = violation_of(shape, &r);
            assert_eq!(&violation, reason, "{shape:?}: {}", r.text());
            let expected = if matches!(shape, Shape::Rest) {
                400
            } else {
                *code
            };
            assert_eq!(got_code, expected, "{shape:?} {reason}: {}", r.text());
        }
    }
    // Not JSON at all.
    for shape in [Shape::V10, Shape::V03, Shape::Rest] {
        let r = send(&gw, shape, b"{\"jsonrpc\": \"2.0\", \"id\": 7, ");
        let v = r.json();
        if matches!(shape, Shape::Rest) {
            assert_eq!(r.status, 400);
            assert_eq!(
                v["error"]["details"][0]["metadata"]["violation"],
                "parse_error"
            );
        } else {
            assert_eq!(v["error"]["code"], -32700, "{v}");
        }
    }
    assert!(
        agent.a2a_requests().is_empty(),
        "rejected requests reached the agent: {:?}",
        agent.a2a_requests()
    );
    assert_eq!(
        gw.metric(
            "cardgate_rejections_total",
            &[("agent", "sdk"), ("reason", "file_count")]
        ),
        3.0
    );
    assert_eq!(
        gw.metric(
            "cardgate_rejections_total",
            &[("agent", "sdk"), ("reason", "parse_error")]
        ),
        3.0
    );
    // Within the limits, the same shapes go through.
    for shape in [Shape::V10, Shape::V03, Shape::Rest] {
        let parts = [
            P::Text("fine".into()),
            file("p.png", "image/png", &png(10, 10, 300)),
        ];
        let r = send(&gw, shape, &body(shape, &parts));
        assert_eq!(r.status, 200, "{shape:?}: {}", r.text());
        assert!(
            r.text().contains("file:p.png:image/png:300:"),
            "{shape:?}: {}",
            r.text()
        );
    }
    assert_eq!(agent.a2a_requests().len(), 3);
    assert!(
        gw.metric(
            "cardgate_requests_total",
            &[("agent", "sdk"), ("outcome", "rejected")]
        ) >= 30.0
    );
    assert!(gw.metric("cardgate_scanned_bytes_total", &[("agent", "sdk")]) > 0.0);
    // Rejections are counted under the method they were for, not "other".
    let rejected = |method: &str| {
        gw.metric(
            "cardgate_requests_total",
            &[
                ("agent", "sdk"),
                ("outcome", "rejected"),
                ("method", method),
            ],
        )
    };
    assert_eq!(
        rejected("other"),
        2.0,
        "only the two unparseable JSON-RPC bodies have no method"
    );
    assert!(
        rejected("SendMessage") >= 27.0,
        "{}",
        rejected("SendMessage")
    );
}

#[test]
fn the_sdk_client_sees_its_own_error_types_with_the_message() {
    let agent = SdkAgent::start(&["--params", LIMITS, "--input-modes", MODES]);
    let gw = Gateway::start(&format!("  - id: sdk\n    upstream: {}\n", agent.url()), "");
    gw.wait_card("sdk");
    let url = gw.url("/agents/sdk");
    for transport in ["JSONRPC", "HTTP+JSON"] {
        let out = sdk_client(&[
            &url,
            "send",
            "hi",
            "--file",
            "big.bin",
            "application/octet-stream",
            "5000",
            "--transport",
            transport,
        ]);
        assert_eq!(
            out[0]["error"], "InvalidParamsError",
            "{transport}: {out:?}"
        );
        let message = out[0]["message"].as_str().unwrap();
        // The SDK writes `filename` after the bytes, and the gateway answers as soon as the
        // bytes pass the limit, so the message names the part by index.
        assert!(
            message.contains("part 1") && message.contains("accepts at most 1000 bytes"),
            "{transport}: {message}"
        );
        let out = sdk_client(&[
            &url,
            "send",
            "hi",
            "--file",
            "v.mp4",
            "video/mp4",
            "10",
            "--transport",
            transport,
        ]);
        assert_eq!(
            out[0]["error"], "ContentTypeNotSupportedError",
            "{transport}: {out:?}"
        );
    }
    assert!(agent.a2a_requests().is_empty());
}

#[test]
fn accepted_bodies_reach_the_agent_byte_identical() {
    let agent = SdkAgent::start(&[
        "--params",
        r#"{"files": {"maxSizePerFileBytes": 67108864}}"#,
    ]);
    let gw = Gateway::start(&format!("  - id: sdk\n    upstream: {}\n", agent.url()), "");
    gw.wait_card("sdk");
    for size in [1_000usize, 1_000_000, 30_000_000] {
        agent.reset();
        let data: Vec<u8> = (0..size).map(|i| (i * 31 % 256) as u8).collect();
        let parts = [
            P::Text("here".into()),
            file("f.bin", "application/octet-stream", &data),
        ];
        let bytes = body(Shape::V10, &parts);
        let r = send(&gw, Shape::V10, &bytes);
        assert_eq!(r.status, 200, "{size}: {}", r.text());
        let seen = agent.a2a_requests();
        assert_eq!(
            seen[0]["sha256"],
            sha256_hex(&bytes),
            "{size}-byte file: body altered"
        );
        assert!(
            r.text().contains(&sha256_hex(&data)),
            "{size}-byte file: the agent decoded other bytes"
        );
    }
}

/// The upstream counts connections and bytes: a rejected request opens no connection and
/// sends nothing; an accepted one does.
#[test]
fn a_rejected_request_opens_no_connection_to_the_agent() {
    // The stub answers everything with its card (a fine JSON body for requests too).
    let body = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stub = Stub::start(StubMode::Shared(body.clone()));
    *body.lock().unwrap() = minimal_card(&stub.url());
    let yaml = format!(
        "  - id: sdk\n    upstream: {}\n    constraints:\n      files:\n        maxSizePerFileBytes: 100\n",
        stub.url()
    );
    let gw = Gateway::start(&yaml, "");
    gw.wait_card("sdk");
    let (connections, bytes) = (
        stub.connections.load(std::sync::atomic::Ordering::SeqCst),
        stub.bytes.load(std::sync::atomic::Ordering::SeqCst),
    );
    let big = body_for_stub(&b64(&[1u8; 500]));
    for _ in 0..5 {
        let r = post(
            &gw.url("/agents/sdk/"),
            &[("a2a-version", "1.0"), ("content-type", "application/json")],
            &big,
        );
        assert_eq!(r.json()["error"]["code"], -32602, "{}", r.text());
        let r = post(
            &gw.url("/agents/sdk/"),
            &[("a2a-version", "1.0")],
            b"{not json",
        );
        assert_eq!(r.json()["error"]["code"], -32700);
    }
    assert_eq!(
        stub.connections.load(std::sync::atomic::Ordering::SeqCst),
        connections,
        "the gateway connected to the agent"
    );
    assert_eq!(
        stub.bytes.load(std::sync::atomic::Ordering::SeqCst),
        bytes,
        "bytes reached the agent"
    );
    let ok = post(
        &gw.url("/agents/sdk/"),
        &[("a2a-version", "1.0")],
        &body_for_stub(&b64(&[1u8; 50])),
    );
    assert_eq!(ok.status, 200);
    assert!(
        stub.bytes.load(std::sync::atomic::Ordering::SeqCst) > bytes,
        "the accepted request went through"
    );
}

fn body_for_stub(raw: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"mediaType": "text/plain", "raw": raw}]}}}))
    .unwrap()
}

#[test]
fn stream_mode_forwards_while_scanning_and_aborts_on_a_violation() {
    let body = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stub = Stub::start(StubMode::Shared(body.clone()));
    *body.lock().unwrap() = minimal_card(&stub.url());
    let yaml = format!(
        "  - id: sdk\n    upstream: {}\n    body: stream\n    constraints:\n      files:\n        maxSizePerFileBytes: 100\n",
        stub.url()
    );
    let gw = Gateway::start(&yaml, "");
    gw.wait_card("sdk");
    let ok = post(
        &gw.url("/agents/sdk/"),
        &[("a2a-version", "1.0")],
        &body_for_stub(&b64(&[1u8; 50])),
    );
    assert_eq!(ok.status, 200, "{}", ok.text());
    let r = post(
        &gw.url("/agents/sdk/"),
        &[("a2a-version", "1.0")],
        &body_for_stub(&b64(&[1u8; 500])),
    );
    assert_eq!(
        r.json()["error"]["data"][0]["metadata"]["violation"],
        "file_size",
        "{}",
        r.text()
    );
}

#[test]
fn early_rejection_of_a_huge_chunked_upload_reads_little_and_answers() {
    let agent = SdkAgent::start(&[]);
    let yaml = format!(
        "  - id: sdk\n    upstream: {}\n    max_body_bytes: 1GiB\n    constraints:\n      files:\n        maxSizePerFileBytes: 1048576\n",
        agent.url()
    );
    let gw = Gateway::start(
        &yaml,
        "limits:\n  linger_time: 500ms\n  linger_bytes: 4MiB\n",
    );
    gw.wait_card("sdk");
    let mut conn = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(conn, "POST /agents/sdk/ HTTP/1.1\r\nhost: x\r\na2a-version: 1.0\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n").unwrap();
    let head = br#"{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"mediaType":"application/octet-stream","raw":""#;
    let chunk = vec![b'A'; 64 * 1024];
    let mut writer = conn.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let mut sent = 0usize;
        let _ = write!(writer, "{:x}\r\n", head.len())
            .and_then(|_| writer.write_all(head))
            .and_then(|_| writer.write_all(b"\r\n"));
        while sent < 200 * 1024 * 1024 {
            if write!(writer, "{:x}\r\n", chunk.len())
                .and_then(|_| writer.write_all(&chunk))
                .and_then(|_| writer.write_all(b"\r\n"))
                .is_err()
            {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    let mut response = Vec::new();
    let _ = conn.read_to_end(&mut response);
    let sent = sender.join().unwrap();
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let json_start = text.find('{').unwrap();
    let v: Value = serde_json::from_str(&text[json_start..]).unwrap();
    assert_eq!(v["error"]["code"], -32602);
    assert_eq!(v["id"], 9);
    assert_eq!(
        v["error"]["data"][0]["metadata"]["actualIsLowerBound"],
        "true"
    );
    let scanned = gw.metric("cardgate_scanned_bytes_total", &[("agent", "sdk")]);
    let limit_b64 = (1u64 << 20) as f64 * 4.0 / 3.0;
    assert!(
        scanned <= limit_b64 + 256.0 * 1024.0,
        "the gateway scanned {scanned} bytes for a 1 MiB limit"
    );
    assert!(sent < 200 * 1024 * 1024, "the client was never stopped");
    assert!(agent.a2a_requests().is_empty());
}

#[test]
fn length_memory_and_time_limits() {
    let agent = SdkAgent::start(&[]);
    let yaml = format!(
        "  - id: sdk\n    upstream: {}\n    max_body_bytes: 10KiB\n    body_read_timeout: 500ms\n  - id: big\n    upstream: {}\n",
        agent.url(),
        agent.url()
    );
    let gw = Gateway::start(&yaml, "limits:\n  inflight_body_bytes: 50KiB\n");
    gw.wait_card("sdk");
    gw.wait_card("big");
    // A declared length beyond the limit: 413 at once, with a JSON-RPC body.
    let mut conn = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    write!(conn, "POST /agents/sdk/ HTTP/1.1\r\nhost: x\r\na2a-version: 1.0\r\ncontent-length: 500000000\r\n\r\n").unwrap();
    let mut text = String::new();
    let _ = conn.read_to_string(&mut text);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(
        text.contains("\"violation\":\"body_size\"") && text.contains("-32602"),
        "{text}"
    );
    // The gateway-wide memory budget: 503 with Retry-After.
    let r = post(
        &gw.url("/agents/big/"),
        &[("a2a-version", "1.0")],
        &vec![b' '; 60 * 1024],
    );
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.header("retry-after").is_some());
    // A slow client: 408.
    let mut conn = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    write!(
        conn,
        "POST /agents/sdk/ HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{{\"jsonrpc\""
    )
    .unwrap();
    let mut text = String::new();
    let _ = conn.read_to_string(&mut text);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(agent.a2a_requests().is_empty());
    assert_eq!(gw.metric("cardgate_inflight_body_bytes", &[]), 0.0);
}

#[test]
fn capabilities_versions_and_required_extensions() {
    let agent = SdkAgent::start(&["--no-streaming", "--required-extension", "urn:x:needed"]);
    let gw = Gateway::start(
        &format!("  - id: sdk\n    upstream: {}\n  - id: open\n    upstream: {}\n    enforce:\n      versions: false\n", agent.url(), agent.url()),
        "",
    );
    gw.wait_card("sdk");
    gw.wait_card("open");
    let rpc = |agent_id: &str, method: &str, headers: &[(&str, &str)]| {
        post_json(
            &gw.url(&format!("/agents/{agent_id}/")),
            headers,
            &json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}}),
        )
    };
    let with_ext = [("a2a-version", "1.0"), ("a2a-extensions", "urn:x:needed")];
    let r = rpc("sdk", "SendStreamingMessage", &with_ext);
    assert_eq!(r.json()["error"]["code"], -32004, "{}", r.text());
    assert_eq!(r.json()["id"], 3);
    let r = rpc("sdk", "CreateTaskPushNotificationConfig", &with_ext);
    assert_eq!(r.json()["error"]["code"], -32003, "{}", r.text());
    let r = post(
        &gw.url("/agents/sdk/rest/message:stream"),
        &[("a2a-version", "1.0"), ("a2a-extensions", "urn:x:needed")],
        b"{}",
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["status"], "FAILED_PRECONDITION");
    assert_eq!(
        r.json()["error"]["details"][0]["reason"],
        "UNSUPPORTED_OPERATION"
    );
    let r = rpc(
        "sdk",
        "SendMessage",
        &[("a2a-version", "2.0"), ("a2a-extensions", "urn:x:needed")],
    );
    assert_eq!(r.json()["error"]["code"], -32009, "{}", r.text());
    let r = rpc("sdk", "SendMessage", &[("a2a-version", "1.0")]);
    assert_eq!(r.json()["error"]["code"], -32008, "{}", r.text());
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("urn:x:needed"));
    assert!(
        agent.a2a_requests().is_empty(),
        "{:?}",
        agent.a2a_requests()
    );
    // Activated (either header name), it passes; the query parameter names the version too.
    let r = rpc("sdk", "SendMessage", &with_ext);
    assert_eq!(r.status, 200);
    assert!(r.json().get("result").is_some(), "{}", r.text());
    let r = rpc(
        "sdk",
        "SendMessage",
        &[("x-a2a-extensions", "urn:x:needed"), ("a2a-version", "1.0")],
    );
    assert!(r.json().get("result").is_some(), "{}", r.text());
    // With `enforce: {versions: false}` the agent sees the request and answers for itself.
    agent.reset();
    let r = rpc(
        "open",
        "SendMessage",
        &[("a2a-version", "2.0"), ("a2a-extensions", "urn:x:needed")],
    );
    assert_eq!(agent.a2a_requests().len(), 1, "{}", r.text());
}

#[test]
fn the_served_card_advertises_the_limits_enforced() {
    let with_ext = SdkAgent::start(&[
        "--params",
        r#"{"files": {"maxSizePerFileBytes": 5000, "maxCountPerRequest": 3}}"#,
    ]);
    let without = SdkAgent::start(&[]);
    let yaml = format!(
        "  - id: tight\n    upstream: {}\n    constraints:\n      files:\n        maxSizePerFileBytes: 1000\n        maxCountPerRequest: 10\n  - id: added\n    upstream: {}\n    constraints:\n      text:\n        maxCharacters: 99\n  - id: plain\n    upstream: {}\n",
        with_ext.url(),
        without.url(),
        with_ext.url()
    );
    let gw = Gateway::start(&yaml, "");
    let ext = |card: &Value| {
        card["capabilities"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["uri"] == "https://inkeep.com/a2a-extensions/input-constraints/v1")
            .cloned()
            .unwrap()
    };
    let tight = gw.wait_card("tight");
    assert_eq!(
        ext(&tight)["params"]["files"],
        json!({"maxCountPerRequest": 3, "maxSizePerFileBytes": 1000})
    );
    let added = gw.wait_card("added");
    assert_eq!(
        ext(&added)["params"],
        json!({"text": {"maxCharacters": 99}})
    );
    let plain = gw.wait_card("plain");
    assert_eq!(
        ext(&plain)["params"],
        json!({"files": {"maxSizePerFileBytes": 5000.0, "maxCountPerRequest": 3.0}}),
        "passed through unchanged"
    );
    let r = post_json(
        &gw.url("/agents/added/"),
        &[("a2a-version", "1.0")],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "y".repeat(100)}]}}}),
    );
    assert_eq!(
        r.json()["error"]["data"][0]["metadata"]["violation"],
        "text_length"
    );
}
