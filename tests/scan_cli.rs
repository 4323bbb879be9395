//! `cardgate scan` run as a user would: the built binary, files and standard input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

const URI: &str = "https://inkeep.com/a2a-extensions/input-constraints/v1";

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("cardgate-scan-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Tests run in parallel: every file gets its own name, so none reads another's half-written file.
fn write(name: &str, value: &Value) -> std::path::PathBuf {
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = dir().join(format!("{n}-{name}"));
    std::fs::write(&p, serde_json::to_vec(value).unwrap()).unwrap();
    p
}

fn card() -> std::path::PathBuf {
    write(
        "card.json",
        &json!({"name": "vision", "defaultInputModes": ["text/plain", "image/png"],
            "capabilities": {"extensions": [{"uri": URI, "params": {"files": {"maxSizePerFileBytes": 10,
                "perMimeType": {"image/png": {"maxSizeBytes": 5}}}}}]}}),
    )
}

fn cardgate(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cardgate"))
        .arg("scan")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        // The program may exit before reading (unreadable card); that is not the test's concern.
        let _ = pipe.write_all(s);
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn stdout_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn accepted_body_exits_zero_with_a_summary_and_throughput() {
    let body = write(
        "ok.json",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"parts": [{"text": "hi"}, {"raw": "AAAA", "mediaType": "text/plain"}]}}}),
    );
    let o = cardgate(
        &["--card", card().to_str().unwrap(), body.to_str().unwrap()],
        None,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = stdout_json(&o);
    assert_eq!(v["accepted"], true);
    assert_eq!(v["inlineBytes"], 3);
    assert_eq!(v["textChars"], 2);
    let err = String::from_utf8_lossy(&o.stderr);
    let size = std::fs::metadata(&body).unwrap().len();
    assert!(err.contains(&format!("scanned {size} bytes")), "{err}");
    // A small body is timed warm, and the cold first pass is named beside it.
    assert!(
        err.contains("warm, best of") && err.contains("first pass took"),
        "{err}"
    );
}

#[test]
fn rejected_jsonrpc_body_prints_the_gateway_answer_and_exits_one() {
    // v1.0 method: data is [ErrorInfo].
    let body = br#"{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"parts":[{"filename":"p.png","raw":"AAAAAAAAAAAA","mediaType":"image/png"}]}}}"#;
    let o = cardgate(&["--card", card().to_str().unwrap(), "-"], Some(body));
    assert_eq!(o.status.code(), Some(1));
    let v = stdout_json(&o);
    assert_eq!(v["id"], "r1");
    assert_eq!(v["error"]["code"], -32602);
    let info = &v["error"]["data"][0];
    assert_eq!(info["reason"], "INVALID_PARAMS");
    assert_eq!(info["metadata"]["violation"], "mime_size");
    assert_eq!(info["metadata"]["filename"], "p.png");
    // v0.3 method: data is an object.
    let body = br#"{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"parts":[{"kind":"file","file":{"bytes":"AAAA","mimeType":"application/pdf"}}]}}}"#;
    let o = cardgate(&["--card", card().to_str().unwrap(), "-"], Some(body));
    assert_eq!(o.status.code(), Some(1));
    let v = stdout_json(&o);
    assert_eq!(v["error"]["code"], -32005);
    assert_eq!(v["error"]["data"]["violation"], "media_type");
    // --a2a-version overrides the guess.
    let o = cardgate(
        &[
            "--card",
            card().to_str().unwrap(),
            "--a2a-version",
            "1.0",
            "-",
        ],
        Some(body),
    );
    assert!(stdout_json(&o)["error"]["data"].is_array());
}

#[test]
fn rest_bodies_get_google_rpc_status() {
    let body = br#"{"message":{"parts":[{"raw":"AAAAAAAAAAAAAAAA"}]}}"#;
    let o = cardgate(
        &["--card", card().to_str().unwrap(), "--rest", "-"],
        Some(body),
    );
    assert_eq!(o.status.code(), Some(1));
    let v = stdout_json(&o);
    assert_eq!(v["error"]["code"], 400);
    assert_eq!(v["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(
        v["error"]["details"][0]["metadata"]["violation"],
        "file_size"
    );
}

#[test]
fn overrides_tighten_the_card() {
    let ops = write("ops.json", &json!({"text": {"maxCharacters": 1}}));
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"text":"ab"}]}}}"#;
    let o = cardgate(
        &[
            "--card",
            card().to_str().unwrap(),
            "--constraints",
            ops.to_str().unwrap(),
            "-",
        ],
        Some(body),
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout_json(&o)["error"]["data"][0]["metadata"]["violation"],
        "text_length"
    );
}

#[test]
fn parse_errors_are_rejections_and_unreadable_input_exits_two() {
    let o = cardgate(
        &["--card", card().to_str().unwrap(), "-"],
        Some(b"{\"id\":1,"),
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout_json(&o)["error"]["code"], -32700);
    let o = cardgate(&["--card", "/nonexistent/card.json", "-"], Some(b"{}"));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/card.json"));
    let bad = dir().join("bad.json");
    std::fs::write(&bad, b"not json").unwrap();
    let o = cardgate(&["--card", bad.to_str().unwrap(), "-"], Some(b"{}"));
    assert_eq!(o.status.code(), Some(2));
    let o = cardgate(
        &["--card", card().to_str().unwrap(), "/nonexistent/body.json"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
}
