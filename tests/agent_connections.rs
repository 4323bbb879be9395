//! cardgate's HTTP/1.1 client towards agents, against a scripted upstream on loopback:
//! response framings (length, chunked with extensions and trailers, close-delimited), 1xx,
//! HEAD, keep-alive reuse, agents that close idle connections, malformed answers, and the
//! framing of the forwarded request.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use support::*;

/// One request as the upstream received it.
#[derive(Clone, Debug)]
struct Seen {
    connection: usize,
    head: String,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

/// What the upstream answers to a request: raw response bytes, and whether to close after.
type Script = dyn Fn(&Seen) -> (Vec<u8>, bool) + Send + Sync;

/// An upstream that answers card requests with a minimal card and every other request with
/// what the script says, and records every non-card request.
struct Scripted {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Scripted {
    fn start(script: Arc<Script>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        thread::spawn(move || {
            for (connection, stream) in listener.incoming().flatten().enumerate() {
                let (script, log) = (script.clone(), log.clone());
                thread::spawn(move || serve(stream, connection, port, &*script, &log));
            }
        });
        Scripted { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn connections(&self) -> usize {
        let mut c: Vec<usize> = self.seen().iter().map(|s| s.connection).collect();
        c.dedup();
        c.len()
    }
}

fn serve(stream: TcpStream, connection: usize, port: u16, script: &Script, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut seen = Seen {
            connection,
            head,
            body: Vec::new(),
        };
        if seen.header("x-case").as_deref() == Some("answer-early") {
            // Refuse before reading the body, and close with it unread: the kernel resets the
            // connection, so the gateway's writes fail while the answer waits in its buffer.
            log.lock().unwrap().push(seen.clone());
            let body = r#"{"error":"too large for this agent"}"#;
            let answer = format!(
                "HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = out.write_all(answer.as_bytes());
            return;
        }
        if seen.header("transfer-encoding").as_deref() == Some("chunked") {
            match read_chunked(&mut reader) {
                Some(body) => seen.body = body,
                None => return,
            }
        } else {
            let length: usize = seen
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            seen.body = vec![0; length];
            if reader.read_exact(&mut seen.body).is_err() {
                return;
            }
        }
        let (response, close) = if seen.head.contains("/.well-known/agent-card.json") {
            let card = minimal_card(&format!("http://127.0.0.1:{port}"));
            let mut r = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                card.len()
            )
            .into_bytes();
            r.extend_from_slice(&card);
            (r, false)
        } else {
            log.lock().unwrap().push(seen.clone());
            script(&seen)
        };
        if out.write_all(&response).is_err() || close {
            return;
        }
    }
}

/// A chunked request body, decoded (extensions ignored, no trailers expected).
fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let size = line.trim_end().split(';').next()?;
        let size = usize::from_str_radix(size, 16).ok()?;
        let mut data = vec![0; size + 2];
        reader.read_exact(&mut data).ok()?;
        if !data.ends_with(b"\r\n") {
            return None;
        }
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&data[..size]);
    }
}

fn gateway_for(upstream: &Scripted) -> Gateway {
    gateway_with(upstream, "")
}

/// `extra`: more keys for the agent, each line indented by four spaces.
fn gateway_with(upstream: &Scripted, extra: &str) -> Gateway {
    let gw = Gateway::start(
        &format!(
            "  - id: a\n    upstream: {}\n    timeouts: {{connect: 1s, read: 2s, total: 3s}}\n{extra}",
            upstream.url()
        ),
        "",
    );
    gw.wait_card("a");
    gw
}

fn send(gw: &Gateway, body: &str) -> Reply {
    post(
        &gw.url("/agents/a/"),
        &[("content-type", "application/json"), ("a2a-version", "1.0")],
        body.as_bytes(),
    )
}

/// REQUEST, with `x-case` telling the scripted agent how to answer.
fn send_case(gw: &Gateway, case: &str) -> Reply {
    post(
        &gw.url("/agents/a/"),
        &[
            ("content-type", "application/json"),
            ("a2a-version", "1.0"),
            ("x-case", case),
        ],
        REQUEST.as_bytes(),
    )
}

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;

fn fixed(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[test]
fn keep_alive_connections_are_reused_and_requests_go_whole_with_a_length() {
    let up = Scripted::start(Arc::new(|s: &Seen| {
        (fixed(&format!("{{\"echo\":{}}}", s.body.len())), false)
    }));
    let gw = gateway_for(&up);
    for _ in 0..5 {
        let r = send(&gw, REQUEST);
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["echo"], REQUEST.len());
    }
    let seen = up.seen();
    assert_eq!(seen.len(), 5);
    assert_eq!(
        up.connections(),
        1,
        "one pooled connection carries all five"
    );
    for s in seen {
        assert_eq!(s.body, REQUEST.as_bytes());
        assert_eq!(s.header("content-length"), Some(REQUEST.len().to_string()));
        assert_eq!(s.header("transfer-encoding"), None);
        assert!(s.head.starts_with("POST / HTTP/1.1\r\n"), "{}", s.head);
        assert_eq!(s.header("host"), Some(format!("127.0.0.1:{}", up.port)));
    }
}

/// REQUEST in two chunks (the second with an extension), on a connection of its own that
/// closes after the answer; `headers` are extra head lines. Returns the raw answer.
fn send_chunked(gw: &Gateway, headers: &str) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (a, b) = REQUEST.split_at(40);
    write!(
        c,
        "POST /agents/a/ HTTP/1.1\r\nhost: x\r\na2a-version: 1.0\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n{headers}\r\n{:x}\r\n{a}\r\n{:x};ext=1\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    )
    .unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer
}

#[test]
fn a_chunked_upload_reaches_the_agent_with_a_length_in_strict_mode() {
    let up = Scripted::start(Arc::new(|_: &Seen| (fixed("{}"), false)));
    let gw = gateway_for(&up);
    send_chunked(
        &gw,
        "connection: close, x-hop\r\nx-hop: 1\r\nupgrade: h2c\r\nx-forwarded-for: 10.0.0.1\r\nx-custom: kept\r\n",
    );
    let seen = up.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body, REQUEST.as_bytes());
    assert_eq!(
        seen[0].header("content-length"),
        Some(REQUEST.len().to_string())
    );
    assert_eq!(seen[0].header("transfer-encoding"), None);
    assert_eq!(
        seen[0].header("connection"),
        None,
        "hop-by-hop headers stay"
    );
}

#[test]
fn a_chunked_upload_stays_chunked_in_stream_mode() {
    let up = Scripted::start(Arc::new(|_: &Seen| (fixed("{}"), false)));
    let gw = gateway_with(&up, "    body: stream\n");
    send_chunked(&gw, "connection: close\r\n");
    let seen = up.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("transfer-encoding").as_deref(),
        Some("chunked")
    );
    assert_eq!(seen[0].header("content-length"), None);
    assert_eq!(
        seen[0].body,
        REQUEST.as_bytes(),
        "the chunks decode to the body"
    );
}

#[test]
fn chunked_close_delimited_and_informational_answers_arrive_whole() {
    let body = "{\"result\":\"a fairly long answer that comes in pieces\"}";
    let script = move |s: &Seen| -> (Vec<u8>, bool) {
        let (a, b) = body.split_at(20);
        match s.header("x-case").as_deref() {
            Some("chunked") => (
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x};name=value\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nx-trailer: t\r\n\r\n",
                    a.len(),
                    b.len()
                )
                .into_bytes(),
                false,
            ),
            Some("close") => (
                format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{body}").into_bytes(),
                true,
            ),
            Some("continue") => {
                let mut r = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
                r.extend(fixed(body));
                (r, false)
            }
            Some("hop") => (
                format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: keep-alive, x-agent-hop\r\nkeep-alive: timeout=5\r\nx-agent-hop: 1\r\nx-agent-kept: 1\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes(),
                false,
            ),
            _ => (fixed(body), false),
        }
    };
    let up = Scripted::start(Arc::new(script));
    let gw = gateway_for(&up);
    for case in ["chunked", "close", "continue", "chunked", "plain"] {
        let r = send_case(&gw, case);
        assert_eq!(r.status, 200, "{case}: {}", r.text());
        assert_eq!(r.text(), body, "{case}");
    }
    // The close-delimited answer ends its connection; the others keep theirs.
    let seen = up.seen();
    let conn = |i: usize| seen[i].connection;
    assert_eq!(
        conn(0),
        conn(1),
        "after a chunked answer the connection is reused"
    );
    assert_ne!(conn(1), conn(2), "a close-delimited answer is not reused");
    assert_eq!(conn(2), conn(3));
    assert_eq!(conn(3), conn(4));
    // Fields that describe the agent's hop, and those its `Connection` names, stay behind.
    let r = send_case(&gw, "hop");
    assert_eq!(r.text(), body);
    assert_eq!(r.header("x-agent-kept"), Some("1"));
    for hop in ["x-agent-hop", "keep-alive"] {
        assert_eq!(r.header(hop), None, "{hop}: {:?}", r.headers);
    }
}

#[test]
fn an_agent_that_closes_idle_connections_costs_no_request() {
    // Closes every connection right after its answer, without saying so.
    let up = Scripted::start(Arc::new(|_: &Seen| (fixed("{\"ok\":true}"), true)));
    let gw = gateway_for(&up);
    for i in 0..6 {
        let r = send(&gw, REQUEST);
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        // Let the close reach the gateway's idle connection.
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(up.seen().len(), 6, "each request reached the agent once");
    assert_eq!(up.connections(), 6);
}

#[test]
fn an_agent_that_answers_before_reading_the_body_is_heard() {
    // Far more than the socket buffers hold, so the agent resets the connection mid-upload.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"data":{{"blob":"{}"}}}}]}}}}}}"#,
        "x".repeat(8 << 20)
    );
    for mode in ["strict", "stream"] {
        let upstream = Scripted::start(Arc::new(|_: &Seen| (fixed("{}"), false)));
        let gw = gateway_with(&upstream, &format!("    body: {mode}\n"));
        let r = post(
            &gw.url("/agents/a/"),
            &[
                ("content-type", "application/json"),
                ("a2a-version", "1.0"),
                ("x-case", "answer-early"),
            ],
            body.as_bytes(),
        );
        assert_eq!(r.status, 413, "{mode}: {}", r.text());
        assert_eq!(
            r.text(),
            r#"{"error":"too large for this agent"}"#,
            "{mode}"
        );
        // The connection it refused on is not reused: the next request opens another.
        assert_eq!(send(&gw, REQUEST).status, 200, "{mode}");
        let seen = upstream.seen();
        assert_eq!(seen.len(), 2, "{mode}");
        assert_ne!(seen[0].connection, seen[1].connection, "{mode}");
    }
}

#[test]
fn head_answers_have_no_body_and_keep_the_connection() {
    let up = Scripted::start(Arc::new(|s: &Seen| {
        if s.head.starts_with("HEAD ") {
            (
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1234\r\n\r\n"
                    .to_vec(),
                false,
            )
        } else {
            (fixed("{}"), false)
        }
    }));
    let gw = gateway_for(&up);
    let r = support::agent()
        .head(gw.url("/agents/a/v1/tasks/t1"))
        .header("a2a-version", "1.0")
        .call()
        .expect("HEAD through the gateway");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        r.headers().get("content-length").unwrap().to_str().unwrap(),
        "1234"
    );
    let r = send(&gw, REQUEST);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        up.connections(),
        1,
        "the HEAD answer left the connection usable"
    );
}

#[test]
fn malformed_answers_are_502_naming_the_problem() {
    let up = Scripted::start(Arc::new(|s: &Seen| match s.header("x-case").as_deref() {
        Some("garbage") => (b"this is not http\r\n\r\n".to_vec(), true),
        Some("huge-head") => {
            let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..100 {
                r.extend(format!("x-filler-{i}: {}\r\n", "v".repeat(1000)).into_bytes());
            }
            r.extend(b"\r\n");
            (r, true)
        }
        Some("bad-length") => (
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!".to_vec(),
            true,
        ),
        Some("bad-chunk") => (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
                .to_vec(),
            true,
        ),
        _ => (
            b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort".to_vec(),
            true,
        ),
    }));
    let gw = gateway_for(&up);
    for (case, expect) in [
        (
            "garbage",
            "sent an answer that is not valid HTTP: invalid response head",
        ),
        ("huge-head", "larger than 64 KiB"),
        ("bad-length", "invalid Content-Length"),
    ] {
        let r = send_case(&gw, case);
        assert_eq!(r.status, 502, "{case}: {}", r.text());
        assert!(r.text().contains(expect), "{case}: {}", r.text());
    }
    // Broken bodies: the head was already sent on, so the client's answer is cut short.
    for case in ["bad-chunk", "short"] {
        let answer = agent()
            .post(gw.url("/agents/a/"))
            .header("x-case", case)
            .header("a2a-version", "1.0")
            .send(REQUEST.as_bytes())
            .and_then(|mut r| r.body_mut().read_to_string());
        assert!(
            answer.is_err(),
            "{case}: a cut answer must not look whole: {answer:?}"
        );
    }
    let log = gw.log();
    assert!(log.contains("invalid chunk size"), "{log}");
    assert!(log.contains("before the end of the response"), "{log}");
    // The gateway keeps serving.
    let r = send_case(&gw, "garbage");
    assert_eq!(r.status, 502);
}
