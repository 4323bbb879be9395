//! Card validation inside the gateway: invalid fetched cards stay out of service, and the
//! admin dry run.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(repo().join("tests/data/cards").join(name)).unwrap()
}

#[test]
fn admin_validate_is_a_dry_run_with_paths() {
    let gw = Gateway::start("  - id: demo\n    upstream: builtin:demo\n", "");
    let ok = post(&gw.admin("/admin/validate"), &[], &fixture("v10_full.json"));
    assert_eq!(ok.status, 200, "{}", ok.text());
    let ok = ok.json();
    assert_eq!(ok["valid"], true);
    assert_eq!(ok["spec_version"], "1.0");
    assert!(!ok["preview"]["interfaces"].as_array().unwrap().is_empty());

    let bad = post(
        &gw.admin("/admin/validate"),
        &[],
        &fixture("err_missing_required.json"),
    );
    assert_eq!(bad.status, 422, "{}", bad.text());
    let bad = bad.json();
    assert_eq!(bad["valid"], false);
    assert_eq!(
        bad["errors"][0],
        json!({"field": "name", "message": "required field is missing"})
    );

    let not_json = post(&gw.admin("/admin/validate"), &[], b"{nope");
    assert_eq!(not_json.status, 400);
    assert!(not_json.json()["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("line 1"));
}

#[test]
fn an_invalid_card_is_not_put_into_service() {
    let mut invalid: Value = serde_json::from_slice(&minimal_card("http://127.0.0.1:1")).unwrap();
    invalid.as_object_mut().unwrap().remove("name");
    invalid["skills"][0].as_object_mut().unwrap().remove("id");
    let stub = Stub::start(StubMode::Fixed(
        200,
        "application/json",
        serde_json::to_vec(&invalid).unwrap(),
    ));
    let gw = Gateway::start(
        &format!(
            "  - id: bad\n    upstream: {}\n    retry_interval: 200ms\n",
            stub.url()
        ),
        "",
    );
    wait_for("an invalid-card fetch", Duration::from_secs(10), || {
        (gw.metric(
            "cardgate_card_validation_failures_total",
            &[("agent", "bad")],
        ) >= 1.0)
            .then_some(())
    });
    assert!(
        gw.metric(
            "cardgate_card_fetches_total",
            &[("agent", "bad"), ("result", "invalid_card")]
        ) >= 1.0
    );
    let ready = get(&gw.admin("/readyz"), &[]);
    assert_eq!(ready.status, 503);
    let why = ready.json()["not_ready"]["bad"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        why.contains("invalid") && why.contains("name") && why.contains("skills[0].id"),
        "{why}"
    );
    let agents = get(&gw.admin("/admin/agents"), &[]).json();
    let fields: Vec<&str> = agents["agents"][0]["validation_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"name") && fields.contains(&"skills[0].id"),
        "{fields:?}"
    );
    assert_eq!(
        get(&gw.url("/agents/bad/.well-known/agent-card.json"), &[]).status,
        503
    );
}

#[test]
fn a_card_that_turns_invalid_leaves_the_last_good_one_in_service() {
    let body = Arc::new(Mutex::new(Vec::new()));
    let stub = Stub::start(StubMode::Shared(body.clone()));
    *body.lock().unwrap() = minimal_card(&stub.url());
    let gw = Gateway::start(
        &format!(
            "  - id: a\n    upstream: {}\n    card_ttl: 1s\n    retry_interval: 200ms\n",
            stub.url()
        ),
        "",
    );
    let good = gw.wait_card("a");
    *body.lock().unwrap() = br#"{"name": 5}"#.to_vec();
    wait_for("an invalid-card refresh", Duration::from_secs(10), || {
        (gw.metric("cardgate_card_validation_failures_total", &[("agent", "a")]) >= 1.0)
            .then_some(())
    });
    let served = get(&gw.url("/agents/a/.well-known/agent-card.json"), &[]);
    assert_eq!(served.status, 200);
    assert_eq!(served.json(), good);
    assert_eq!(get(&gw.admin("/readyz"), &[]).status, 200);
}
