//! The admin listener (loopback by default): health, readiness, metrics, agent status,
//! on-demand card refresh and the card validation dry run.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use http::Response;
use pingora::apps::http_app::ServeHttp;
use pingora::connectors::http::Connector;
use pingora::protocols::http::ServerSession;
use serde_json::{json, Value};

use crate::metrics::metrics;
use crate::registry::{refresh, AgentEntry, Registry, Snapshot};

/// Largest body `POST /admin/validate` reads.
const MAX_ADMIN_BODY: usize = 4 << 20;

pub struct Admin {
    pub registry: Arc<Registry>,
    pub proxy: ProxyListener,
}

/// pingora binds each service's listener in that service's own thread, so the admin listener
/// can answer before the proxy listener accepts. Readiness waits for the proxy listener: a
/// connection to it is tried on each probe until one succeeds.
pub struct ProxyListener {
    addr: SocketAddr,
    up: AtomicBool,
}

impl ProxyListener {
    /// `listen` as configured; an unspecified address is reached on loopback.
    pub fn new(listen: SocketAddr) -> Self {
        let ip = match listen.ip() {
            IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        ProxyListener {
            addr: SocketAddr::new(ip, listen.port()),
            up: AtomicBool::new(false),
        }
    }

    async fn accepting(&self) -> bool {
        if self.up.load(Ordering::Relaxed) {
            return true;
        }
        let connect = tokio::net::TcpStream::connect(self.addr);
        let up = matches!(
            tokio::time::timeout(Duration::from_millis(500), connect).await,
            Ok(Ok(_))
        );
        self.up.store(up, Ordering::Relaxed);
        up
    }
}

#[async_trait]
impl ServeHttp for Admin {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let method = session.req_header().method.as_str().to_string();
        let path = session.req_header().uri.path().to_string();
        let snapshot = self.registry.load();
        match (method.as_str(), path.as_str()) {
            ("GET", "/healthz") => json_response(200, &json!({"status": "ok"})),
            ("GET", "/readyz") => {
                if !self.proxy.accepting().await {
                    let why = format!(
                        "the proxy listener on {} does not accept connections yet",
                        self.proxy.addr
                    );
                    return json_response(503, &json!({"ready": false, "listener": why}));
                }
                readiness(&snapshot)
            }
            ("GET", "/metrics") => {
                update_card_gauges(&snapshot);
                Response::builder()
                    .status(200)
                    .header("content-type", "text/plain; version=0.0.4")
                    .body(metrics().render())
                    .expect("valid response")
            }
            ("GET", "/admin/agents") => json_response(200, &agents_json(&snapshot)),
            ("POST", "/admin/validate") => match read_body(session).await {
                Ok(body) => validate(&body),
                Err(resp) => resp,
            },
            ("POST", p) if p.starts_with("/admin/agents/") && p.ends_with("/refresh") => {
                let id = &p["/admin/agents/".len()..p.len() - "/refresh".len()];
                let connector = Connector::new(None);
                if !refresh::refresh_one(&self.registry, &connector, id).await {
                    return json_response(404, &json!({"error": format!("unknown agent {id:?}")}));
                }
                let snapshot = self.registry.load();
                // A reload may have removed the agent meanwhile.
                let Some(entry) = snapshot.agents.get(id) else {
                    return json_response(404, &json!({"error": format!("unknown agent {id:?}")}));
                };
                let status = if entry.health.last_error.is_none() {
                    200
                } else {
                    502
                };
                json_response(status, &agent_json(entry))
            }
            _ => json_response(
                404,
                &json!({"error": format!("no admin route for {method} {path}"),
                        "routes": ["GET /healthz", "GET /readyz", "GET /metrics", "GET /admin/agents",
                                   "POST /admin/agents/{id}/refresh", "POST /admin/validate"]}),
            ),
        }
    }
}

fn json_response(status: u16, body: &Value) -> Response<Vec<u8>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(serde_json::to_vec_pretty(body).unwrap_or_default())
        .expect("valid response")
}

async fn read_body(session: &mut ServerSession) -> Result<Vec<u8>, Response<Vec<u8>>> {
    let mut body = Vec::new();
    loop {
        match session.read_request_body().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_ADMIN_BODY {
                    session.set_keepalive(None);
                    return Err(json_response(
                        413,
                        &json!({"error": format!("the body is larger than {MAX_ADMIN_BODY} bytes")}),
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => {
                return Err(json_response(
                    400,
                    &json!({"error": format!("cannot read the body: {e}")}),
                ))
            }
        }
    }
}

/// The dry run: 200 with warnings and a preview, or 422 with every error.
fn validate(body: &[u8]) -> Response<Vec<u8>> {
    let card: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return json_response(
                400,
                &json!({"valid": false, "errors": [{"field": "$", "message": format!("not JSON: {e}")}]}),
            )
        }
    };
    let report = crate::card::validate::validate(&card);
    let status = if report.valid { 200 } else { 422 };
    json_response(status, &report.to_json())
}

fn readiness(snapshot: &Snapshot) -> Response<Vec<u8>> {
    let mut not_ready = serde_json::Map::new();
    for (id, entry) in &snapshot.agents {
        if let Err(why) = entry.usable_card() {
            not_ready.insert(id.clone(), Value::String(why.to_string()));
        }
    }
    if not_ready.is_empty() {
        json_response(
            200,
            &json!({"ready": true, "agents": snapshot.agents.len()}),
        )
    } else {
        json_response(503, &json!({"ready": false, "not_ready": not_ready}))
    }
}

fn unix(t: Option<SystemTime>) -> Value {
    t.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| json!(d.as_secs()))
        .unwrap_or(Value::Null)
}

fn agent_json(entry: &AgentEntry) -> Value {
    let card = entry.card.as_ref();
    json!({
        "id": entry.config.id,
        "upstream": entry.upstream.base_url(),
        "ready": entry.usable_card().is_ok(),
        "card": card.map(|c| json!({
            "url": c.source_url,
            "spec_version": c.spec_version,
            "fetched_at": unix(Some(c.fetched_at)),
            "age_seconds": c.age().as_secs(),
            "ttl_seconds": entry.config.card_ttl.as_secs(),
            "stale": c.age() > entry.config.card_ttl,
            "warnings": c.warnings,
            "routes": c.routes.routes().iter().map(|r| json!({
                "prefix": format!("/agents/{}{}", entry.config.id, r.prefix),
                "upstream": format!("{}://{}{}", if r.origin.tls { "https" } else { "http" }, r.origin.authority(), r.base_path),
            })).collect::<Vec<_>>(),
        })),
        "last_attempt": unix(entry.health.last_attempt),
        "last_success": unix(entry.health.last_success),
        "last_error": entry.health.last_error,
        "validation_errors": entry.health.validation_errors,
        "consecutive_failures": entry.health.consecutive_failures,
    })
}

fn agents_json(snapshot: &Snapshot) -> Value {
    let mut agents: Vec<_> = snapshot.agents.values().collect();
    agents.sort_by(|a, b| a.config.id.cmp(&b.config.id));
    json!({"agents": agents.iter().map(|e| agent_json(e)).collect::<Vec<_>>()})
}

/// Card age and TTL gauges are computed when scraped, for the agents configured now.
fn update_card_gauges(snapshot: &Snapshot) {
    let m = metrics();
    m.card_age.reset();
    m.card_ttl_remaining.reset();
    m.card_ready.reset();
    m.card_ttl.reset();
    m.card_max_stale.reset();
    m.card_last_fetch_ok.reset();
    for (id, entry) in &snapshot.agents {
        m.card_ttl
            .with_label_values(&[id])
            .set(entry.config.card_ttl.as_secs_f64());
        m.card_max_stale
            .with_label_values(&[id])
            .set(entry.config.max_stale.as_secs_f64());
        if entry.health.last_attempt.is_some() {
            m.card_last_fetch_ok
                .with_label_values(&[id])
                .set(entry.health.last_error.is_none() as i64);
        }
        m.card_ready
            .with_label_values(&[id])
            .set(entry.usable_card().is_ok() as i64);
        if let Some(card) = &entry.card {
            let age = card.age().as_secs_f64();
            m.card_age.with_label_values(&[id]).set(age);
            m.card_ttl_remaining
                .with_label_values(&[id])
                .set(entry.config.card_ttl.as_secs_f64() - age);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_proxy_listener_is_up_once_it_accepts() {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        // Configured as 0.0.0.0, reached on loopback.
        let proxy = ProxyListener::new(SocketAddr::from(([0, 0, 0, 0], port)));
        assert!(!proxy.accepting().await, "nothing listens yet");
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        assert!(proxy.accepting().await);
        drop(listener);
        assert!(proxy.accepting().await, "once seen, it stays up");
    }
}
