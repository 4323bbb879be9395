//! The gateway core on loopback: real gateway binary, real a2a-sdk agents.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::*;

fn agent_yaml(id: &str, upstream: &str, extra: &str) -> String {
    format!("  - id: {id}\n    upstream: {upstream}\n{extra}")
}

#[test]
fn card_through_the_gateway_points_only_at_the_gateway() {
    let agent = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("sdk", &agent.url(), ""), "");
    let card = gw.wait_card("sdk");
    let text = card.to_string();
    assert!(
        !text.contains(&format!(":{}", agent.port)),
        "upstream address leaked: {text}"
    );
    let base = gw.url("/agents/sdk");
    assert_eq!(card["url"], format!("{base}/"));
    let urls: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            format!("{base}/"),
            format!("{base}/"),
            format!("{base}/rest")
        ]
    );
    // Both well-known paths serve it.
    let legacy = get(&gw.url("/agents/sdk/.well-known/agent.json"), &[]);
    assert_eq!(legacy.json(), card);
    // Derived base honours X-Forwarded-* when no public_url is set.
    let proxied = get(
        &gw.url("/agents/sdk/.well-known/agent-card.json"),
        &[
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "gw.example.com"),
        ],
    );
    assert_eq!(proxied.json()["url"], "https://gw.example.com/agents/sdk/");
}

#[test]
fn etag_and_304() {
    let agent = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("sdk", &agent.url(), "    card_ttl: 120s\n"), "");
    gw.wait_card("sdk");
    let url = gw.url("/agents/sdk/.well-known/agent-card.json");
    let first = get(&url, &[]);
    let etag = first.header("etag").expect("an ETag").to_string();
    let max_age: u64 = first
        .header("cache-control")
        .and_then(|v| v.strip_prefix("max-age="))
        .and_then(|v| v.parse().ok())
        .expect("Cache-Control: max-age=N");
    assert!(max_age <= 120 && max_age > 100, "max-age {max_age}");
    let again = get(&url, &[("if-none-match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let other = get(&url, &[("if-none-match", "\"something-else\"")]);
    assert_eq!(other.status, 200);
    assert_eq!(other.body, first.body);
}

#[test]
fn sdk_client_sends_and_streams_through_the_gateway() {
    let agent = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("sdk", &agent.url(), ""), "");
    gw.wait_card("sdk");
    let url = gw.url("/agents/sdk");
    for (mode, transport) in [
        ("send", "JSONRPC"),
        ("stream", "JSONRPC"),
        ("send", "HTTP+JSON"),
    ] {
        let out = sdk_client(&[&url, mode, "hello", "--transport", transport]);
        assert_eq!(out.len(), 1, "{mode}/{transport}: {out:?}");
        assert_eq!(
            out[0]["event"]["message"]["parts"][0]["text"], "text:5",
            "{mode}/{transport}: {out:?}"
        );
    }
    // Every A2A call reached the agent through the gateway, with forwarding headers.
    let seen = agent.a2a_requests();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for r in &seen {
        assert_eq!(r["headers"]["x-forwarded-proto"], "http");
        assert!(r["headers"]["x-forwarded-for"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1"));
    }
}

#[test]
fn file_parts_arrive_byte_identical_in_v03_v10_and_rest() {
    let agent = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("sdk", &agent.url(), ""), "");
    gw.wait_card("sdk");
    let file: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let digest = sha256_hex(&file);
    let v10 = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER",
        "parts": [{"text": "hi"}, {"raw": b64(&file), "mediaType": "application/octet-stream", "filename": "f.bin"}]}}});
    let v03 = json!({"jsonrpc": "2.0", "id": "a", "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m2", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}, {"kind": "file", "file": {"bytes": b64(&file), "mimeType": "application/octet-stream", "name": "f.bin"}}]}}});
    let rest = json!({"message": {"messageId": "m3", "role": "ROLE_USER",
        "parts": [{"text": "hi"}, {"raw": b64(&file), "mediaType": "application/octet-stream", "filename": "f.bin"}]}});
    let cases = [
        ("/agents/sdk/", v10, Some("1.0")),
        ("/agents/sdk/", v03, None),
        ("/agents/sdk/rest/message:send", rest, Some("1.0")),
    ];
    for (path, body, version) in cases {
        agent.reset();
        let bytes = serde_json::to_vec(&body).unwrap();
        let mut headers = vec![("content-type", "application/json")];
        if let Some(v) = version {
            headers.push(("a2a-version", v));
        }
        let r = post(&gw.url(path), &headers, &bytes);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let text = r.text();
        assert!(
            text.contains(&format!(
                "file:f.bin:application/octet-stream:50000:{digest}"
            )),
            "{path}: agent saw different file bytes: {text}"
        );
        let seen = agent.a2a_requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            seen[0]["sha256"],
            sha256_hex(&bytes),
            "{path}: body altered on the way"
        );
        assert_eq!(seen[0]["length"], bytes.len());
    }
}

#[test]
fn a2a_headers_pass_through_both_ways() {
    let agent = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("sdk", &agent.url(), ""), "");
    gw.wait_card("sdk");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let r = post_json(
        &gw.url("/agents/sdk/?A2A-Version=1.0"),
        &[
            ("a2a-extensions", "urn:x:one"),
            ("x-a2a-extensions", "urn:x:two"),
            ("authorization", "Bearer t0k"),
            ("connection", "keep-alive, x-secret-hop"),
            ("x-secret-hop", "must not pass"),
        ],
        &body,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = &agent.a2a_requests()[0];
    let h = &seen["headers"];
    assert_eq!(seen["query"], "A2A-Version=1.0");
    assert_eq!(h["a2a-extensions"], "urn:x:one");
    assert_eq!(h["x-a2a-extensions"], "urn:x:two");
    assert_eq!(h["authorization"], "Bearer t0k");
    assert!(
        h.get("x-secret-hop").is_none(),
        "a header named in Connection was forwarded"
    );
    assert_eq!(h["host"], format!("127.0.0.1:{}", agent.port));
}

#[test]
fn card_refreshes_in_the_background_before_its_ttl() {
    let agent = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("sdk", &agent.url(), "    card_ttl: 1s\n"), "");
    gw.wait_card("sdk");
    wait_for(
        "three background card fetches",
        Duration::from_secs(10),
        || {
            (gw.metric(
                "cardgate_card_fetches_total",
                &[("agent", "sdk"), ("result", "ok")],
            ) >= 3.0)
                .then_some(())
        },
    );
    let fetched = agent
        .requests()
        .iter()
        .filter(|r| r["path"] == "/.well-known/agent-card.json")
        .count();
    assert!(fetched >= 2, "the agent saw {fetched} card fetches");
}

#[test]
fn stale_card_is_served_while_the_agent_is_down_and_requests_get_502() {
    let port = free_port();
    let agent = SdkAgent::start_on(port, &[]);
    let gw = Gateway::start(
        &agent_yaml(
            "sdk",
            &agent.url(),
            "    card_ttl: 1s\n    retry_interval: 200ms\n    max_stale: 1h\n",
        ),
        "",
    );
    let card = gw.wait_card("sdk");
    drop(agent);
    wait_for("a failed refresh", Duration::from_secs(10), || {
        (gw.metric(
            "cardgate_card_fetches_total",
            &[("agent", "sdk"), ("result", "unreachable")],
        ) >= 1.0)
            .then_some(())
    });
    let again = get(&gw.url("/agents/sdk/.well-known/agent-card.json"), &[]);
    assert_eq!(again.status, 200);
    assert_eq!(again.json(), card, "the last good card is served");
    let status = get(&gw.admin("/admin/agents"), &[]).json();
    let entry = &status["agents"][0];
    assert_eq!(entry["ready"], true);
    assert!(
        entry["last_error"]
            .as_str()
            .unwrap()
            .contains("connection failed"),
        "{entry}"
    );
    let r = post_json(
        &gw.url("/agents/sdk/"),
        &[("a2a-version", "1.0")],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}),
    );
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(r.json()["error"]["status"], "UNAVAILABLE");
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unreachable"));
}

#[test]
fn hot_reload_adds_and_removes_agents_while_requests_flow() {
    let a = SdkAgent::start(&[]);
    let b = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("a", &a.url(), ""), "");
    gw.wait_card("a");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let url = gw.url("/agents/a/");
    let flow = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
                "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
            let mut statuses = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                statuses.push(post_json(&url, &[("a2a-version", "1.0")], &body).status);
            }
            statuses
        })
    };
    let both = format!(
        "{}{}",
        agent_yaml("a", &a.url(), ""),
        agent_yaml("b", &b.url(), "")
    );
    gw.rewrite_config(&both, "");
    gw.wait_card("b");
    gw.rewrite_config(&agent_yaml("a", &a.url(), ""), "");
    wait_for("agent b to be removed", Duration::from_secs(10), || {
        (get(&gw.url("/agents/b/.well-known/agent-card.json"), &[]).status == 404).then_some(())
    });
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let statuses = flow.join().unwrap();
    assert!(
        statuses.len() >= 3,
        "too few requests flowed: {}",
        statuses.len()
    );
    assert!(
        statuses.iter().all(|s| *s == 200),
        "requests failed during reload: {statuses:?}"
    );
    assert!(gw.metric("cardgate_config_reloads_total", &[("result", "ok")]) >= 2.0);
}

#[test]
fn a_broken_config_on_reload_keeps_the_old_one() {
    let a = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("a", &a.url(), ""), "");
    gw.wait_card("a");
    support::write_atomically(
        &gw.config_path(),
        "agents:\n  - id: a\n    upstreem: nowhere\n",
    );
    wait_for("the failed reload", Duration::from_secs(10), || {
        (gw.metric("cardgate_config_reloads_total", &[("result", "error")]) >= 1.0).then_some(())
    });
    assert_eq!(
        get(&gw.url("/agents/a/.well-known/agent-card.json"), &[]).status,
        200
    );
    assert!(gw.log().contains("upstreem"), "the log names the bad key");
}

#[test]
fn sighup_reloads_the_config() {
    let a = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("a", &a.url(), ""), "reload_poll: 1h");
    gw.wait_card("a");
    // With polling effectively off, only SIGHUP makes the new agent appear.
    let text = format!(
        "listen: 127.0.0.1:{}\nadmin_listen: 127.0.0.1:{}\nreload_poll: 1h\nagents:\n{}{}",
        gw.port,
        gw.admin_port,
        agent_yaml("a", &a.url(), ""),
        agent_yaml("b", &a.url(), "")
    );
    support::write_atomically(&gw.config_path(), &text);
    unsafe { libc::kill(gw.pid(), libc::SIGHUP) };
    gw.wait_card("b");
}

#[test]
fn unknown_config_key_stops_start_up_naming_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.yaml");
    std::fs::write(&path, "listen: 127.0.0.1:1\nagents:\n  - id: a\n    upstream: http://127.0.0.1:1\n    card_tll: 5s\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cardgate"))
        .args(["run", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown field `card_tll`") && err.contains("line 5"),
        "{err}"
    );
}

#[test]
fn bad_upstreams_get_documented_answers_and_others_keep_working() {
    let good = SdkAgent::start(&[]);
    let not_json = Stub::start(StubMode::Fixed(
        200,
        "application/json",
        b"{not json".to_vec(),
    ));
    let hangs = Stub::start(StubMode::Hang);
    let down_port = free_port();
    let slow = Stub::start(StubMode::CardThenHang);
    let fast = "    retry_interval: 300ms\n    timeouts:\n      connect: 500ms\n      read: 700ms\n      total: 1s\n";
    let agents = [
        agent_yaml("good", &good.url(), ""),
        agent_yaml("notjson", &not_json.url(), fast),
        agent_yaml("hangs", &hangs.url(), fast),
        agent_yaml("down", &format!("http://127.0.0.1:{down_port}"), fast),
        agent_yaml("slow", &slow.url(), fast),
    ]
    .concat();
    let gw = Gateway::start(&agents, "");
    gw.wait_card("good");
    gw.wait_card("slow");
    wait_for(
        "failed fetches for the three broken agents",
        Duration::from_secs(15),
        || {
            let failed = |a: &str, r: &str| {
                gw.metric(
                    "cardgate_card_fetches_total",
                    &[("agent", a), ("result", r)],
                ) >= 1.0
            };
            (failed("notjson", "invalid_json")
                && failed("hangs", "timeout")
                && failed("down", "unreachable"))
            .then_some(())
        },
    );
    for (id, expect) in [
        ("notjson", "not valid JSON"),
        ("hangs", "timed out"),
        ("down", "connection failed"),
    ] {
        let card = get(
            &gw.url(&format!("/agents/{id}/.well-known/agent-card.json")),
            &[],
        );
        assert_eq!(card.status, 503, "{id}");
        assert!(card.header("retry-after").is_some(), "{id}: Retry-After");
        let message = card.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains(expect), "{id}: {message}");
        let call = post_json(
            &gw.url(&format!("/agents/{id}/")),
            &[],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask"}),
        );
        assert_eq!(call.status, 503, "{id}: {}", call.text());
    }
    let ready = get(&gw.admin("/readyz"), &[]);
    assert_eq!(ready.status, 503);
    let not_ready = ready.json()["not_ready"].clone();
    for id in ["notjson", "hangs", "down"] {
        assert!(
            not_ready.get(id).is_some(),
            "{id} missing from /readyz: {not_ready}"
        );
    }
    assert!(not_ready.get("good").is_none());
    // An agent that hangs on requests: 504 after timeouts.total.
    let r = post_json(
        &gw.url("/agents/slow/"),
        &[("a2a-version", "1.0")],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask"}),
    );
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(r.json()["error"]["status"], "DEADLINE_EXCEEDED");
    // Unknown agents: 404.
    let r = get(&gw.url("/agents/nobody/.well-known/agent-card.json"), &[]);
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown agent"));
    // And the good agent is unaffected.
    let r = post_json(
        &gw.url("/agents/good/"),
        &[("a2a-version", "1.0")],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "ok"}]}}}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["message"]["parts"][0]["text"], "text:2");
}

#[test]
fn admin_refresh_fetches_now() {
    let agent = SdkAgent::start(&[]);
    let gw = Gateway::start(&agent_yaml("sdk", &agent.url(), "    card_ttl: 1h\n"), "");
    gw.wait_card("sdk");
    let before = gw.metric(
        "cardgate_card_fetches_total",
        &[("agent", "sdk"), ("result", "ok")],
    );
    let r = post(&gw.admin("/admin/agents/sdk/refresh"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["id"], "sdk");
    let after = gw.metric(
        "cardgate_card_fetches_total",
        &[("agent", "sdk"), ("result", "ok")],
    );
    assert_eq!(after, before + 1.0);
    assert_eq!(
        post(&gw.admin("/admin/agents/nobody/refresh"), &[], b"").status,
        404
    );
}

#[test]
fn the_demo_agent_answers_through_the_gateway() {
    let gw = Gateway::start("  - id: demo\n    upstream: builtin:demo\n", "");
    let card = gw.wait_card("demo");
    assert_eq!(card["url"], gw.url("/agents/demo/"));
    let send = |method: &str, version: Option<&str>, parts: Value| {
        let mut h = vec![];
        if let Some(v) = version {
            h.push(("a2a-version", v));
        }
        post_json(
            &gw.url("/agents/demo/"),
            &h,
            &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": {"messageId": "m", "role": "user", "parts": parts}}}),
        )
    };
    let r = send("SendMessage", Some("1.0"), json!([{"text": "hello"}]));
    assert_eq!(
        r.json()["result"]["message"]["parts"][0]["text"],
        "cardgate demo agent received 1 part(s): text \"hello\" (5 chars)"
    );
    let r = send(
        "message/send",
        None,
        json!([{"kind": "text", "text": "hi"}]),
    );
    assert_eq!(r.json()["result"]["kind"], "message");
    let r = send("SendStreamingMessage", Some("1.0"), json!([{"text": "s"}]));
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    let events: Vec<Value> = r
        .text()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 4);
    assert_eq!(
        events[3]["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[test]
fn signed_cards_are_dropped_or_passed_through() {
    let body = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stub = Stub::start(StubMode::Shared(body.clone()));
    let mut card: Value = serde_json::from_slice(&minimal_card(&stub.url())).unwrap();
    card["signatures"] = json!([{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2ln"}]);
    let upstream_bytes = serde_json::to_vec(&card).unwrap();
    *body.lock().unwrap() = upstream_bytes.clone();
    let yaml = format!(
        "{}{}",
        agent_yaml("rewritten", &stub.url(), ""),
        agent_yaml("signed", &stub.url(), "    signatures: passthrough\n")
    );
    let gw = Gateway::start(&yaml, "");
    let rewritten = gw.wait_card("rewritten");
    assert!(rewritten.get("signatures").is_none());
    assert_eq!(
        rewritten["supportedInterfaces"][0]["url"],
        gw.url("/agents/rewritten/")
    );
    let status = get(&gw.admin("/admin/agents"), &[]).json();
    let warnings = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "rewritten")
        .unwrap()["card"]["warnings"]
        .to_string();
    assert!(warnings.contains("signatures were dropped"), "{status}");
    gw.wait_card("signed");
    let signed = get(&gw.url("/agents/signed/.well-known/agent-card.json"), &[]);
    assert_eq!(
        signed.body, upstream_bytes,
        "passthrough serves the card byte for byte"
    );
}

#[test]
fn extended_cards_pass_through_rewritten() {
    let body = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stub = Stub::start(StubMode::Shared(body.clone()));
    let card: Value = serde_json::from_slice(&minimal_card(&stub.url())).unwrap();
    *body.lock().unwrap() = serde_json::to_vec(&card).unwrap();
    let gw = Gateway::start(&agent_yaml("a", &stub.url(), ""), "");
    gw.wait_card("a");
    // REST: GET /extendedAgentCard (v1.0) answers with the card itself.
    let rest = get(
        &gw.url("/agents/a/extendedAgentCard"),
        &[("authorization", "Bearer x"), ("a2a-version", "1.0")],
    );
    assert_eq!(rest.status, 200, "{}", rest.text());
    assert_eq!(
        rest.json()["supportedInterfaces"][0]["url"],
        gw.url("/agents/a/")
    );
    // JSON-RPC: the card sits in `result`.
    *body.lock().unwrap() =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 4, "result": card})).unwrap();
    let rpc = post_json(
        &gw.url("/agents/a/"),
        &[("a2a-version", "1.0")],
        &json!({"jsonrpc": "2.0", "id": 4, "method": "GetExtendedAgentCard"}),
    );
    assert_eq!(rpc.status, 200, "{}", rpc.text());
    let result = &rpc.json()["result"];
    assert_eq!(
        result["supportedInterfaces"][0]["url"],
        gw.url("/agents/a/")
    );
    assert!(
        !rpc.text().contains(&stub.port.to_string()),
        "{}",
        rpc.text()
    );
}

#[test]
fn a_stream_outlives_a_read_timeout_shorter_than_its_gaps() {
    // The demo streams events 150 ms apart; a 100 ms read timeout would cut a plain response.
    let gw = Gateway::start(
        "  - id: demo\n    upstream: builtin:demo\n    timeouts:\n      read: 100ms\n      stream_idle: 5s\n",
        "",
    );
    gw.wait_card("demo");
    let r = post_json(
        &gw.url("/agents/demo/"),
        &[("a2a-version", "1.0")],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "s"}]}}}),
    );
    let events = r.text().lines().filter(|l| l.starts_with("data: ")).count();
    assert_eq!(events, 4, "{}", r.text());
}
