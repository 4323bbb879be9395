//! The operator files under deploy/: every file parses; every metric (and label) the Grafana
//! dashboard and the alert rules use exists in the running gateway's /metrics; the
//! Kubernetes, Docker and compose files hold what operators rely on.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cardgate::config::Config;
use promql_parser::label::Matchers;
use promql_parser::parser::{self, Expr, LabelModifier, VectorSelector};
use serde_json::{json, Value};
use support::*;

// ---- reading deploy/ ----

fn deploy() -> PathBuf {
    repo().join("deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn rel(path: &Path) -> String {
    path.strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Every file under `dir`, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", rel(path)))
}

/// All documents of a YAML file (k8s files may hold several).
fn yaml_docs(path: &Path) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&read(path))
        .unwrap_or_else(|e| panic!("{}: {e}", rel(path)));
    assert!(!docs.is_empty(), "{}: no YAML document", rel(path));
    docs
}

fn yaml_file(path: &Path) -> Value {
    let mut docs = yaml_docs(path);
    assert_eq!(docs.len(), 1, "{}: expected one YAML document", rel(path));
    docs.remove(0)
}

fn gateway_config(text: &str, origin: &str) -> Config {
    Config::parse(text).unwrap_or_else(|e| panic!("{origin}: cardgate rejects it: {e}"))
}

/// A string at a JSON path, or a failure naming the path.
fn string_at<'a>(v: &'a Value, pointer: &str, origin: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{origin}: no string at {pointer}"))
}

#[test]
fn every_deploy_file_parses() {
    let files = files_under(&deploy());
    assert!(files.len() >= 15, "deploy/ holds only {files:?}");
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                json_file(path);
            }
            Some("yaml" | "yml") => {
                yaml_docs(path);
            }
            Some("sh") => {
                let out = Command::new("bash").arg("-n").arg(path).output().unwrap();
                assert!(
                    out.status.success(),
                    "{}: {}",
                    rel(path),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            // Checked by the tests below (Dockerfiles, the example agent) or prose.
            Some("py" | "md") => {}
            _ if name == "Dockerfile" || name.ends_with(".Dockerfile") => {}
            _ => panic!(
                "{}: no check knows this kind of file; add one to every_deploy_file_parses",
                rel(path)
            ),
        }
    }
}

// ---- the metrics the dashboard and the alerts use ----

/// Registered by the gateway but sampled only once body enforcement (scanning) runs; until
/// then they are looked up in the gateway library's own registry instead of the live
/// /metrics. Empty this list when enforcement lands.
const SAMPLED_ONLY_WITH_ENFORCEMENT: &[&str] = &[];

/// Labels Prometheus adds at scrape time (and the k8s example's relabelling).
const TARGET_LABELS: &[&str] = &["instance", "job", "namespace", "pod"];

/// What the dashboard must show (issue 6 and the ops brief).
const DASHBOARD_MUST_USE: &[&str] = &[
    "cardgate_requests_total",
    "cardgate_rejections_total",
    "cardgate_request_duration_seconds_bucket",
    "cardgate_upstream_duration_seconds_bucket",
    "cardgate_scanned_bytes_total",
    "cardgate_scan_duration_seconds_bucket",
    "cardgate_request_body_bytes_bucket",
    "cardgate_inflight_requests",
    "cardgate_inflight_body_bytes",
    "cardgate_card_age_seconds",
    "cardgate_card_ttl_seconds",
    "cardgate_card_last_fetch_success",
    "cardgate_card_fetches_total",
    "cardgate_card_validation_failures_total",
    "cardgate_upstream_errors_total",
    "cardgate_config_reloads_total",
];

/// What the alert rules must watch.
const ALERTS_MUST_USE: &[&str] = &[
    "cardgate_card_ttl_remaining_seconds",
    "cardgate_card_max_stale_seconds",
    "cardgate_agent_ready",
    "cardgate_upstream_errors_total",
    "cardgate_rejections_total",
    "cardgate_config_reloads_total",
];

/// Metric names and their label names, from a Prometheus text exposition.
#[derive(Default, Debug)]
struct Catalog {
    /// Sample series names (`x_bucket`, `x_sum`, … for histograms) and their labels.
    samples: BTreeMap<String, BTreeSet<String>>,
    /// `# TYPE` lines: family name to type.
    types: BTreeMap<String, String>,
}

impl Catalog {
    fn parse(text: &str) -> Self {
        let mut catalog = Catalog::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut words = rest.split_whitespace();
                if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                    catalog.types.insert(name.to_string(), kind.to_string());
                }
                continue;
            }
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let series = line.rsplit_once(' ').map_or(line, |(s, _)| s);
            let (name, labels) = series.split_once('{').unwrap_or((series, ""));
            let entry = catalog.samples.entry(name.to_string()).or_default();
            // Label values here are bounded words, never containing `="` or `,`.
            for pair in labels.trim_end_matches('}').split("\",") {
                if let Some((label, _)) = pair.split_once("=\"") {
                    entry.insert(label.trim().to_string());
                }
            }
        }
        catalog
    }

    /// Whether `name` is exported: as a sample series, a `# TYPE` family, or a histogram's
    /// `_bucket`/`_sum`/`_count` series of a family with no samples yet.
    fn has(&self, name: &str) -> bool {
        if self.samples.contains_key(name) || self.types.contains_key(name) {
            return true;
        }
        ["_bucket", "_sum", "_count"].iter().any(|suffix| {
            name.strip_suffix(suffix)
                .is_some_and(|base| self.types.get(base).is_some_and(|t| t == "histogram"))
        })
    }

    /// Label names of a series; None when it has no samples to tell.
    fn labels(&self, name: &str) -> Option<&BTreeSet<String>> {
        self.samples.get(name)
    }
}

/// One PromQL expression from a deploy file, with where it came from.
struct Query {
    origin: String,
    expr: String,
    /// Dashboard panels must honour the $agent variable.
    needs_agent_filter: bool,
}

/// What an expression selects: metric names with the label names it matches on, and the
/// labels each aggregation groups by together with the metrics beneath it.
#[derive(Default)]
struct Uses {
    selectors: Vec<(String, BTreeSet<String>)>,
    groupings: Vec<(BTreeSet<String>, BTreeSet<String>)>,
}

fn selector_name(vs: &VectorSelector) -> Option<String> {
    vs.name.clone().or_else(|| {
        vs.matchers
            .matchers
            .iter()
            .find(|m| m.name == "__name__")
            .map(|m| m.value.clone())
    })
}

fn matcher_labels(matchers: &Matchers) -> BTreeSet<String> {
    matchers
        .matchers
        .iter()
        .chain(matchers.or_matchers.iter().flatten())
        .map(|m| m.name.clone())
        .filter(|n| n != "__name__")
        .collect()
}

fn select(vs: &VectorSelector, uses: &mut Uses, names: &mut BTreeSet<String>) {
    if let Some(name) = selector_name(vs) {
        uses.selectors
            .push((name.clone(), matcher_labels(&vs.matchers)));
        names.insert(name);
    }
}

/// Walks the AST; returns the metric names under `expr`.
fn collect(expr: &Expr, uses: &mut Uses) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    match expr {
        Expr::VectorSelector(vs) => select(vs, uses, &mut names),
        Expr::MatrixSelector(ms) => select(&ms.vs, uses, &mut names),
        Expr::Aggregate(a) => {
            let inner = collect(&a.expr, uses);
            if let Some(p) = &a.param {
                collect(p, uses);
            }
            if let Some(LabelModifier::Include(l) | LabelModifier::Exclude(l)) = &a.modifier {
                uses.groupings
                    .push((l.labels.iter().cloned().collect(), inner.clone()));
            }
            names.extend(inner);
        }
        Expr::Binary(b) => {
            names.extend(collect(&b.lhs, uses));
            names.extend(collect(&b.rhs, uses));
        }
        Expr::Unary(u) => names.extend(collect(&u.expr, uses)),
        Expr::Paren(p) => names.extend(collect(&p.expr, uses)),
        Expr::Subquery(s) => names.extend(collect(&s.expr, uses)),
        Expr::Call(c) => {
            for arg in &c.args.args {
                names.extend(collect(arg, uses));
            }
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
    names
}

/// Grafana's variables made plain PromQL: intervals become `5m`, others match anything.
fn without_grafana_variables(expr: &str) -> String {
    let mut out = expr
        .replace("$__rate_interval", "5m")
        .replace("$__interval", "5m")
        .replace("$__range", "5m");
    while let Some(start) = out.find('$') {
        let rest = &out[start + 1..];
        let len = if rest.starts_with('{') {
            rest.find('}').map_or(rest.len(), |i| i + 1)
        } else {
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len())
        };
        out.replace_range(start..start + 1 + len, ".*");
    }
    out
}

fn parse_query(q: &Query) -> Expr {
    let plain = without_grafana_variables(&q.expr);
    parser::parse(&plain)
        .unwrap_or_else(|e| panic!("{}: PromQL does not parse ({e}): {}", q.origin, q.expr))
}

/// The dashboard's panels, rows' nested panels included.
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().into_iter().flatten() {
        out.push(p);
        out.extend(p["panels"].as_array().into_iter().flatten());
    }
    out
}

fn dashboard_queries(dashboard: &Value) -> Vec<Query> {
    let file = "deploy/grafana/cardgate.json";
    let mut out = Vec::new();
    for p in panels(dashboard) {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push(Query {
                origin: format!("{file} panel {} target {}", p["title"], t["refId"]),
                expr: string_at(t, "/expr", file).to_string(),
                needs_agent_filter: true,
            });
        }
    }
    for v in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if v["type"] != "query" {
            continue;
        }
        let query = v["query"]["query"].as_str().or(v["query"].as_str());
        let query = query.unwrap_or_else(|| panic!("{file} variable {}: no query", v["name"]));
        // label_values(<selector>, <label>): the selector is PromQL.
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
            .and_then(|q| q.rsplit_once(','))
            .map(|(selector, _)| selector.trim())
            .unwrap_or_else(|| {
                panic!(
                    "{file} variable {}: not label_values(metric, label): {query}",
                    v["name"]
                )
            });
        out.push(Query {
            origin: format!("{file} variable {}", v["name"]),
            expr: inner.to_string(),
            needs_agent_filter: false,
        });
    }
    out
}

fn alert_rules() -> Vec<Value> {
    let alerts = yaml_file(&deploy().join("prometheus/alerts.yml"));
    alerts["groups"]
        .as_array()
        .expect("alerts.yml: groups[]")
        .iter()
        .flat_map(|g| {
            g["rules"]
                .as_array()
                .expect("alerts.yml: groups[].rules[]")
                .clone()
        })
        .collect()
}

fn alert_queries(rules: &[Value]) -> Vec<Query> {
    rules
        .iter()
        .map(|r| Query {
            origin: format!("deploy/prometheus/alerts.yml alert {}", r["alert"]),
            expr: string_at(r, "/expr", "deploy/prometheus/alerts.yml").to_string(),
            needs_agent_filter: false,
        })
        .collect()
}

/// Checks every query against the catalogs; returns the problems found and the metric
/// names the queries use.
fn check_queries(
    queries: &[Query],
    live: &Catalog,
    registered: &Catalog,
) -> (Vec<String>, BTreeSet<String>) {
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    // Some(labels) when exported; the labels are None when no sample shows them.
    let exported = |name: &str| {
        if live.has(name) {
            Some(live.labels(name))
        } else if SAMPLED_ONLY_WITH_ENFORCEMENT
            .iter()
            .any(|pending| name.starts_with(pending))
            && registered.has(name)
        {
            Some(registered.labels(name))
        } else {
            None
        }
    };
    for q in queries {
        let mut uses = Uses::default();
        collect(&parse_query(q), &mut uses);
        for (name, matched) in &uses.selectors {
            if !name.starts_with("cardgate_") {
                continue;
            }
            used.insert(name.clone());
            let Some(labels) = exported(name) else {
                problems.push(format!(
                    "{}: {name} is not in the gateway's /metrics",
                    q.origin
                ));
                continue;
            };
            let Some(labels) = labels else {
                continue;
            };
            for label in matched {
                if !labels.contains(label) && !TARGET_LABELS.contains(&label.as_str()) {
                    problems.push(format!(
                        "{}: {name} has no label {label:?} (it has {labels:?})",
                        q.origin
                    ));
                }
            }
            if q.needs_agent_filter && labels.contains("agent") && !matched.contains("agent") {
                problems.push(format!(
                    "{}: {name} is not filtered by the $agent variable",
                    q.origin
                ));
            }
        }
        for (labels, beneath) in &uses.groupings {
            for label in labels {
                let somewhere = beneath
                    .iter()
                    .any(|name| exported(name).flatten().is_some_and(|l| l.contains(label)))
                    || TARGET_LABELS.contains(&label.as_str());
                let all_known = beneath.iter().all(|n| exported(n).flatten().is_some());
                if !somewhere && all_known {
                    problems.push(format!(
                        "{}: groups by {label:?}, which none of {beneath:?} has",
                        q.origin
                    ));
                }
            }
        }
    }
    (problems, used)
}

/// The gateway library's registry with a sample in the families that have none yet, so
/// their names and labels show.
fn registered_catalog() -> Catalog {
    let m = cardgate::metrics::metrics();
    m.scanned_bytes.with_label_values(&["probe"]).inc_by(0);
    m.scan_duration.with_label_values(&["probe"]);
    Catalog::parse(&String::from_utf8(m.render()).unwrap())
}

fn wait_metric(gw: &Gateway, name: &str, labels: &[(&str, &str)]) {
    wait_for(
        &format!("{name}{labels:?} on /metrics"),
        Duration::from_secs(20),
        || (gw.metric(name, labels) > 0.0).then_some(()),
    );
}

/// Agents for the metric test: the demo agent (small body limit, for a rejection), an agent
/// whose upstream never answers (an upstream timeout) and one serving an invalid card.
fn metric_test_agents(hang: &Stub, invalid: &Stub, demo_ttl: &str) -> String {
    format!(
        "  - id: demo\n    upstream: builtin:demo\n    max_body_bytes: 4KiB\n    card_ttl: {demo_ttl}\n\
         \x20 - id: slow\n    upstream: {}\n    timeouts:\n      total: 500ms\n\
         \x20 - id: broken\n    upstream: {}\n    retry_interval: 1s\n",
        hang.url(),
        invalid.url()
    )
}

#[test]
fn dashboard_and_alert_metrics_exist_in_the_gateways_metrics() {
    let hang = Stub::start(StubMode::CardThenHang);
    let invalid = Stub::start(StubMode::Fixed(200, "application/json", b"[]".to_vec()));
    let gw = Gateway::start(&metric_test_agents(&hang, &invalid, "300s"), "");

    // Traffic: a card, a SendMessage, a body over the limit, an upstream timeout, a reload.
    gw.wait_card("demo");
    gw.wait_card("slow");
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let r = post_json(&gw.url("/agents/demo/"), &[("a2a-version", "1.0")], &send);
    assert_eq!(r.status, 200, "SendMessage to demo: {}", r.text());
    let big = vec![b' '; 8 << 10];
    let r = post(
        &gw.url("/agents/demo/"),
        &[("content-type", "application/json"), ("a2a-version", "1.0")],
        &big,
    );
    assert_eq!(r.status, 413, "oversized body: {}", r.text());
    let r = post_json(&gw.url("/agents/slow/"), &[("a2a-version", "1.0")], &send);
    assert_eq!(r.status, 504, "request to a silent agent: {}", r.text());
    gw.rewrite_config(&metric_test_agents(&hang, &invalid, "301s"), "");
    wait_metric(&gw, "cardgate_config_reloads_total", &[("result", "ok")]);
    wait_metric(
        &gw,
        "cardgate_card_validation_failures_total",
        &[("agent", "broken")],
    );

    let live = Catalog::parse(&get(&gw.admin("/metrics"), &[]).text());
    let registered = registered_catalog();
    for name in SAMPLED_ONLY_WITH_ENFORCEMENT {
        assert!(
            registered.has(name),
            "{name} is not registered in cardgate::metrics"
        );
    }

    let dashboard = json_file(&deploy().join("grafana/cardgate.json"));
    let (mut problems, on_dashboard) =
        check_queries(&dashboard_queries(&dashboard), &live, &registered);
    let rules = alert_rules();
    let (alert_problems, in_alerts) = check_queries(&alert_queries(&rules), &live, &registered);
    problems.extend(alert_problems);
    for name in DASHBOARD_MUST_USE {
        if !on_dashboard.contains(*name) {
            problems.push(format!("the dashboard shows nothing from {name}"));
        }
    }
    for name in ALERTS_MUST_USE {
        if !in_alerts.contains(*name) {
            problems.push(format!("no alert rule watches {name}"));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_metric_check_catches_a_misspelt_name() {
    let live = Catalog::parse(
        "# TYPE cardgate_requests_total counter\n\
         cardgate_requests_total{agent=\"a\",method=\"SendMessage\",status=\"2xx\",outcome=\"forwarded\"} 1\n\
         # TYPE cardgate_request_duration_seconds histogram\n",
    );
    let registered = Catalog::default();
    let query = |expr: &str| Query {
        origin: "q".to_string(),
        expr: expr.to_string(),
        needs_agent_filter: false,
    };
    let ok = [
        query("sum by (agent, status) (rate(cardgate_requests_total{agent=~\"$agent\"}[$__rate_interval]))"),
        query("histogram_quantile(0.9, sum by (le) (rate(cardgate_request_duration_seconds_bucket[5m])))"),
    ];
    let (problems, used) = check_queries(&ok, &live, &registered);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(used.contains("cardgate_requests_total"));
    for (expr, expected) in [
        (
            "rate(cardgate_request_total[5m])",
            "cardgate_request_total is not in",
        ),
        (
            "cardgate_requests_total{reason=\"x\"}",
            "has no label \"reason\"",
        ),
        (
            "sum by (kind) (cardgate_requests_total)",
            "groups by \"kind\"",
        ),
        (
            "cardgate_scanned_bytes_total",
            "cardgate_scanned_bytes_total is not in",
        ),
    ] {
        let (problems, _) = check_queries(&[query(expr)], &live, &registered);
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{expr}: expected {expected:?}, got {problems:?}"
        );
    }
    let panel = Query {
        needs_agent_filter: true,
        ..query("cardgate_requests_total")
    };
    let (problems, _) = check_queries(&[panel], &live, &registered);
    assert!(problems
        .iter()
        .any(|p| p.contains("not filtered by the $agent")));
}

// ---- the dashboard's structure ----

#[test]
fn dashboard_is_importable_and_every_panel_uses_the_datasource_variable() {
    let file = "deploy/grafana/cardgate.json";
    let d = json_file(&deploy().join("grafana/cardgate.json"));
    let schema = d["schemaVersion"].as_u64().unwrap_or(0);
    assert!(
        schema >= 39,
        "{file}: schemaVersion {schema}, expected >= 39"
    );
    assert!(
        d["uid"].is_string() && d["title"].is_string(),
        "{file}: uid and title"
    );
    let vars: BTreeMap<&str, &Value> = d["templating"]["list"]
        .as_array()
        .expect("templating.list")
        .iter()
        .map(|v| (v["name"].as_str().unwrap_or(""), v))
        .collect();
    let ds = vars.get("datasource").expect("a `datasource` variable");
    assert_eq!(ds["type"], "datasource", "{file}: $datasource type");
    assert_eq!(ds["query"], "prometheus", "{file}: $datasource plugin");
    let agent = vars.get("agent").expect("an `agent` variable");
    assert_eq!(agent["type"], "query");
    assert_eq!(agent["multi"], true, "{file}: $agent must be multi-value");
    assert_eq!(
        agent["query"]["query"],
        "label_values(cardgate_requests_total, agent)"
    );
    let uses_variable = |v: &Value| v["uid"] == "${datasource}" && v["type"] == "prometheus";
    for v in vars.values().filter(|v| v["type"] == "query") {
        assert!(
            uses_variable(&v["datasource"]),
            "{file} variable {}: datasource {}",
            v["name"],
            v["datasource"]
        );
    }
    let mut ids = BTreeSet::new();
    let all = panels(&d);
    assert!(all.len() > 10, "{file}: only {} panels", all.len());
    for p in all {
        let title = &p["title"];
        assert!(
            ids.insert(p["id"].as_u64().expect("panel id")),
            "{file}: duplicate panel id {}",
            p["id"]
        );
        let (x, w) = (
            p["gridPos"]["x"].as_u64().unwrap_or(99),
            p["gridPos"]["w"].as_u64().unwrap_or(99),
        );
        assert!(
            x + w <= 24,
            "{file} panel {title}: gridPos x {x} + w {w} > 24"
        );
        if p["type"] == "row" {
            continue;
        }
        assert!(
            uses_variable(&p["datasource"]),
            "{file} panel {title}: datasource {} is not ${{datasource}}",
            p["datasource"]
        );
        let targets = p["targets"].as_array().filter(|t| !t.is_empty());
        for t in targets.unwrap_or_else(|| panic!("{file} panel {title}: no targets")) {
            assert!(
                uses_variable(&t["datasource"]),
                "{file} panel {title} target {}: datasource {}",
                t["refId"],
                t["datasource"]
            );
        }
    }
}

// ---- Prometheus ----

#[test]
fn prometheus_scrapes_the_admin_listener_and_alerts_are_complete() {
    let file = "deploy/prometheus/prometheus.yml";
    let prom = yaml_file(&deploy().join("prometheus/prometheus.yml"));
    let rule_files: Vec<&str> = prom["rule_files"]
        .as_array()
        .expect("rule_files")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        rule_files.iter().any(|f| f.ends_with("/alerts.yml")),
        "{file}: rule_files {rule_files:?} do not load alerts.yml"
    );
    let job = prom["scrape_configs"]
        .as_array()
        .expect("scrape_configs")
        .iter()
        .find(|j| j["job_name"] == "cardgate")
        .unwrap_or_else(|| panic!("{file}: no job cardgate"));
    assert_eq!(job["metrics_path"], "/metrics");
    let compose_admin = compose_cardgate_config().admin_listen.port();
    assert_eq!(
        job["static_configs"][0]["targets"][0],
        format!("cardgate:{compose_admin}"),
        "{file}: must scrape the compose admin listener"
    );

    let rules = alert_rules();
    assert!(rules.len() >= 4, "alerts.yml: only {} rules", rules.len());
    for r in &rules {
        let name = r["alert"]
            .as_str()
            .expect("every rule is an alert with a name");
        let origin = format!("alerts.yml {name}");
        let wait = string_at(r, "/for", &origin);
        assert!(
            humantime::parse_duration(wait).is_ok(),
            "{origin}: for: {wait:?}"
        );
        let severity = string_at(r, "/labels/severity", &origin);
        assert!(
            ["critical", "warning", "info"].contains(&severity),
            "{origin}: severity {severity:?}"
        );
        for key in ["summary", "description"] {
            assert!(
                !string_at(r, &format!("/annotations/{key}"), &origin)
                    .trim()
                    .is_empty(),
                "{origin}: empty {key}"
            );
        }
    }
}

// ---- Kubernetes ----

fn k8s_objects() -> BTreeMap<String, (Value, String)> {
    let dir = deploy().join("k8s");
    let kustomization = yaml_file(&dir.join("kustomization.yaml"));
    let listed: BTreeSet<&str> = kustomization["resources"]
        .as_array()
        .expect("kustomization.yaml: resources")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut objects = BTreeMap::new();
    for path in files_under(&dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "kustomization.yaml" {
            continue;
        }
        assert!(
            listed.contains(name.as_str()),
            "deploy/k8s/{name} is not listed in kustomization.yaml"
        );
        for doc in yaml_docs(&path) {
            let kind = string_at(&doc, "/kind", &name).to_string();
            string_at(&doc, "/apiVersion", &name);
            string_at(&doc, "/metadata/name", &name);
            assert!(
                objects.insert(kind.clone(), (doc, name.clone())).is_none(),
                "two {kind} objects"
            );
        }
    }
    objects
}

fn container_port(container: &Value, name: &str) -> u64 {
    container["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name)
        .and_then(|p| p["containerPort"].as_u64())
        .unwrap_or_else(|| panic!("deployment: no container port named {name}"))
}

fn seconds(text: &str, origin: &str) -> u64 {
    humantime::parse_duration(text)
        .unwrap_or_else(|e| panic!("{origin}: {text:?}: {e}"))
        .as_secs()
}

#[test]
fn k8s_manifests_hold_what_operators_rely_on() {
    let objects = k8s_objects();
    let get = |kind: &str| {
        &objects
            .get(kind)
            .unwrap_or_else(|| panic!("deploy/k8s has no {kind}"))
            .0
    };
    for kind in [
        "Deployment",
        "Service",
        "ConfigMap",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
    ] {
        get(kind);
    }

    let config_map = get("ConfigMap");
    let config = gateway_config(
        string_at(config_map, "/data/gateway.yaml", "ConfigMap"),
        "ConfigMap data gateway.yaml",
    );
    assert!(
        config.listen.ip().is_unspecified() && config.admin_listen.ip().is_unspecified(),
        "ConfigMap gateway.yaml: inside a pod both listeners must bind 0.0.0.0 (listen {}, admin_listen {})",
        config.listen,
        config.admin_listen
    );

    let deployment = get("Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "one cardgate container");
    let c = &containers[0];
    let admin = container_port(c, "admin");
    let http = container_port(c, "http");
    assert_eq!(admin, u64::from(config.admin_listen.port()), "admin port");
    assert_eq!(http, u64::from(config.listen.port()), "http port");
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe} path");
        let port = match &get["port"] {
            Value::String(name) => container_port(c, name),
            other => other.as_u64().expect("probe port"),
        };
        assert_eq!(port, admin, "{probe} must use the admin port");
    }
    for key in ["cpu", "memory"] {
        assert!(
            c["resources"]["requests"][key].is_string(),
            "resources.requests.{key}"
        );
    }
    assert!(
        c["resources"]["limits"]["memory"].is_string(),
        "resources.limits.memory"
    );

    // The config the pod runs is the ConfigMap's.
    let args: Vec<&str> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let config_arg = args
        .iter()
        .position(|a| *a == "--config")
        .map(|i| args[i + 1])
        .expect("args: --config PATH");
    let volume = pod["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["configMap"]["name"] == config_map["metadata"]["name"])
        .expect("a volume from the ConfigMap");
    let mount = c["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .find(|m| m["name"] == volume["name"])
        .expect("the ConfigMap volume is mounted");
    assert_eq!(
        format!("{}/gateway.yaml", mount["mountPath"].as_str().unwrap()),
        config_arg,
        "--config must name the mounted ConfigMap's gateway.yaml"
    );

    // Termination: the preStop sleep, then shutdown_grace, then a margin.
    let pre_stop = c["lifecycle"]["preStop"]["exec"]["command"]
        .as_array()
        .and_then(|cmd| cmd.last())
        .and_then(Value::as_str)
        .map_or(0, |s| seconds(&format!("{s}s"), "preStop sleep"));
    let termination = pod["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("terminationGracePeriodSeconds");
    let needed = pre_stop + config.shutdown_grace.as_secs() + 5;
    assert!(
        termination >= needed,
        "terminationGracePeriodSeconds {termination} < preStop {pre_stop}s + shutdown_grace {}s + 5s margin",
        config.shutdown_grace.as_secs()
    );
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);

    // Service, autoscaler and budget all point at these pods.
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let service = get("Service");
    for (key, value) in service["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(&pod_labels[key], value, "Service selector {key}");
    }
    let target = &service["spec"]["ports"][0]["targetPort"];
    assert!(
        target == "http" || target.as_u64() == Some(http),
        "Service targets {target}, not the A2A port"
    );
    let hpa = get("HorizontalPodAutoscaler");
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["kind"], "Deployment");
    assert_eq!(
        hpa["spec"]["scaleTargetRef"]["name"],
        deployment["metadata"]["name"]
    );
    let pdb = get("PodDisruptionBudget");
    for (key, value) in pdb["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("PodDisruptionBudget matchLabels")
    {
        assert_eq!(
            &pod_labels[key], value,
            "PodDisruptionBudget selector {key}"
        );
    }
}

// ---- Docker and compose ----

fn compose() -> Value {
    yaml_file(&deploy().join("compose.yaml"))
}

/// The gateway.yaml the compose `cardgate` service runs: its --config path, resolved
/// through the service's volume mounts.
fn compose_cardgate_config() -> Config {
    let compose = compose();
    let service = &compose["services"]["cardgate"];
    let command: Vec<&str> = service["command"]
        .as_array()
        .expect("compose cardgate: command")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let config_path = command
        .iter()
        .position(|a| *a == "--config")
        .map(|i| command[i + 1])
        .expect("compose cardgate: --config PATH");
    let host_path = service["volumes"]
        .as_array()
        .expect("compose cardgate: volumes")
        .iter()
        .filter_map(Value::as_str)
        .find_map(|v| {
            let mut parts = v.split(':');
            let (host, container) = (parts.next()?, parts.next()?);
            let inside = config_path.strip_prefix(container)?;
            Some(deploy().join(host).join(inside.trim_start_matches('/')))
        })
        .unwrap_or_else(|| panic!("compose cardgate: {config_path} is not in a mounted volume"));
    gateway_config(&read(&host_path), &rel(&host_path))
}

#[test]
fn docker_and_compose_files_agree_with_the_gateway() {
    let dockerfile = read(&deploy().join("Dockerfile"));
    let lines: Vec<&str> = dockerfile.lines().map(str::trim).collect();
    for expected in [
        "FROM rust:1-bookworm AS builder",
        "FROM debian:bookworm-slim",
        "EXPOSE 8080 9090",
        "STOPSIGNAL SIGTERM",
    ] {
        assert!(
            lines.contains(&expected),
            "Dockerfile: no line {expected:?}"
        );
    }
    for expected in [
        "cargo build --release --locked",
        "install -y --no-install-recommends cmake",
        "ca-certificates",
        "HEALTHCHECK",
    ] {
        assert!(dockerfile.contains(expected), "Dockerfile: no {expected:?}");
    }
    let user = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("Dockerfile: USER");
    assert!(
        !user.starts_with("root") && !user.starts_with("0"),
        "Dockerfile: runs as {user}"
    );
    // Every file the two Dockerfiles copy from the build context (the repo root) exists.
    for file in ["Dockerfile", "agent.Dockerfile"] {
        for line in read(&deploy().join(file)).lines() {
            let Some(args) = line.trim().strip_prefix("COPY ") else {
                continue;
            };
            if args.starts_with("--from") {
                continue;
            }
            let words: Vec<&str> = args.split_whitespace().collect();
            for src in &words[..words.len() - 1] {
                if *src != "." {
                    assert!(
                        repo().join(src).exists(),
                        "deploy/{file}: COPY {src}: no such file"
                    );
                }
            }
        }
    }

    let image_config = gateway_config(
        &read(&deploy().join("gateway.docker.yaml")),
        "deploy/gateway.docker.yaml",
    );
    let compose_config = compose_cardgate_config();
    for (origin, c) in [
        ("gateway.docker.yaml", &image_config),
        ("compose/gateway.yaml", &compose_config),
    ] {
        assert_eq!(c.listen.to_string(), "0.0.0.0:8080", "{origin}: listen");
        assert_eq!(
            c.admin_listen.to_string(),
            "0.0.0.0:9090",
            "{origin}: admin_listen"
        );
    }
    let compose = compose();
    let stop = seconds(
        string_at(&compose, "/services/cardgate/stop_grace_period", "compose"),
        "compose stop_grace_period",
    );
    assert!(
        stop > compose_config.shutdown_grace.as_secs(),
        "compose stop_grace_period {stop}s must exceed shutdown_grace {:?}",
        compose_config.shutdown_grace
    );
    for service in ["cardgate", "agent", "prometheus", "grafana"] {
        assert!(
            compose["services"][service].is_object(),
            "compose: no service {service}"
        );
    }
    // Every host path compose mounts exists.
    for (name, service) in compose["services"].as_object().unwrap() {
        for v in service["volumes"].as_array().into_iter().flatten() {
            let host = v.as_str().and_then(|v| v.split(':').next()).unwrap_or("");
            if host.starts_with('.') {
                assert!(
                    deploy().join(host).exists(),
                    "compose {name}: mounts {host}, which does not exist"
                );
            }
        }
    }
}

#[test]
fn container_health_check_passes_on_a_live_gateway_and_fails_without_one() {
    let gw = Gateway::start("  - id: demo\n    upstream: builtin:demo\n", "");
    let check = |addr: &str| {
        Command::new("bash")
            .arg(deploy().join("healthcheck.sh"))
            .env("CARDGATE_HEALTH_ADDR", addr)
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };
    let healthy = check(&format!("127.0.0.1:{}", gw.admin_port));
    assert!(
        healthy.status.success(),
        "healthcheck.sh failed on a live gateway: {}",
        String::from_utf8_lossy(&healthy.stderr)
    );
    // The public listener answers /healthz with 404: the check must notice.
    let wrong = check(&format!("127.0.0.1:{}", gw.port));
    assert!(!wrong.status.success(), "healthcheck.sh passed on a 404");
    let closed = check(&format!("127.0.0.1:{}", free_port()));
    assert!(
        !closed.status.success(),
        "healthcheck.sh passed with nothing listening"
    );
}

#[test]
fn compose_example_agent_is_reachable_through_the_gateway_at_its_public_url() {
    let port = free_port();
    let public = format!("http://localhost:{port}");
    let child = Command::new(python())
        .arg(deploy().join("agent/serve.py"))
        .arg(port.to_string())
        .env("PYTHONPATH", repo().join("tests/agents"))
        .env("AGENT_HOST", "127.0.0.1")
        .env("AGENT_PUBLIC_URL", &public)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start deploy/agent/serve.py");
    let _agent = Proc(child);
    let card_url = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    let card = wait_for("the example agent's card", Duration::from_secs(30), || {
        agent()
            .get(&card_url)
            .call()
            .ok()
            .filter(|r| r.status() == 200)
            .and_then(|mut r| {
                serde_json::from_str::<Value>(&r.body_mut().read_to_string().ok()?).ok()
            })
    });
    let urls: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("supportedInterfaces")
        .iter()
        .map(|i| i["url"].as_str().unwrap())
        .collect();
    assert!(!urls.is_empty());
    for url in &urls {
        assert!(
            url.starts_with(&public),
            "the card names {url}, not {public}"
        );
    }

    let gw = Gateway::start(&format!("  - id: sdk\n    upstream: {public}\n"), "");
    gw.wait_card("sdk");
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}});
    let r = post_json(&gw.url("/agents/sdk/"), &[("a2a-version", "1.0")], &send);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().contains("text:5"),
        "the agent did not answer: {}",
        r.text()
    );
}
