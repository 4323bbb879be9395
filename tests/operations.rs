//! Process-level behaviour operators rely on: graceful SIGTERM and JSON logs.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use support::*;

fn wait_exit(gw: &mut Gateway, within: Duration) -> std::process::ExitStatus {
    wait_for("the gateway to exit", within, || {
        gw.proc.0.try_wait().unwrap()
    })
}

#[test]
fn sigterm_lets_a_stream_in_flight_finish_then_exits_zero() {
    let mut gw = Gateway::start(
        "  - id: demo\n    upstream: builtin:demo\n",
        "shutdown_grace: 1h",
    );
    gw.wait_card("demo");
    // Start an SSE stream (the demo sends 4 events, 150 ms apart) and read its first event.
    let mut conn = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}"#;
    write!(
        conn,
        "POST /agents/demo/ HTTP/1.1\r\nhost: x\r\na2a-version: 1.0\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(conn);
    let mut events = 0;
    let mut line = String::new();
    while events == 0 {
        line.clear();
        reader.read_line(&mut line).unwrap();
        events += line.starts_with("data: ") as usize;
    }
    unsafe { libc::kill(gw.pid(), libc::SIGTERM) };
    // The stream in flight runs to its end.
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 || line == "0\r\n" {
            break;
        }
        events += line.starts_with("data: ") as usize;
    }
    assert_eq!(events, 4, "the stream was cut short");
    // Then the process exits with 0 well before the 1h grace period, and accepts nothing new.
    let status = wait_exit(&mut gw, Duration::from_secs(15));
    assert_eq!(status.code(), Some(0));
    assert!(TcpStream::connect(("127.0.0.1", gw.port)).is_err());
}

#[test]
fn sigterm_with_nothing_in_flight_exits_at_once() {
    let mut gw = Gateway::start(
        "  - id: demo\n    upstream: builtin:demo\n",
        "shutdown_grace: 1h",
    );
    gw.wait_card("demo");
    unsafe { libc::kill(gw.pid(), libc::SIGTERM) };
    assert_eq!(wait_exit(&mut gw, Duration::from_secs(10)).code(), Some(0));
}

#[test]
fn json_logs_are_json_lines_with_an_access_line_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let (port, admin) = (free_port(), free_port());
    let config = dir.path().join("gateway.yaml");
    std::fs::write(
        &config,
        format!("listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin}\nthreads: 3\nagents:\n  - id: demo\n    upstream: builtin:demo\n"),
    )
    .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_cardgate"))
        .args(["run", "--log-format", "json", "--config"])
        .arg(&config)
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let card = format!("http://127.0.0.1:{port}/agents/demo/.well-known/agent-card.json");
    wait_for("the card", Duration::from_secs(20), || {
        agent().get(&card).call().ok().filter(|r| r.status() == 200)
    });
    let r = post_json(
        &format!("http://127.0.0.1:{port}/agents/demo/"),
        &[("a2a-version", "1.0")],
        &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}),
    );
    assert_eq!(r.status, 200);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    let listening = lines
        .iter()
        .find(|l| l["message"] == "cardgate listening")
        .unwrap_or_else(|| panic!("no start-up line: {text}"));
    assert_eq!(
        listening["threads"], 3,
        "the configured worker threads are used"
    );
    let access: Vec<_> = lines.iter().filter(|l| l["target"] == "access").collect();
    assert!(access.len() >= 2, "{text}");
    let send = access
        .iter()
        .find(|l| l["http_method"] == "POST")
        .expect("an access line for the POST");
    assert_eq!(send["agent"], "demo");
    assert_eq!(send["status"], 200);
    assert_eq!(send["outcome"], "forwarded");
    assert!(send["bytes_in"].as_u64().unwrap() > 0);
    assert!(send["bytes_out"].as_u64().unwrap() > 0);
    assert!(send["upstream_ms"].as_f64().is_some());
}
