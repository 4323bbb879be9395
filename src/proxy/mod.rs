//! The pingora glue. The `ProxyHttp` impl is thin: `request_filter` hands every request to
//! [`handle`], which answers it (from the card cache, with an error, or by forwarding it to
//! the agent) and returns `Ok(true)`; `logging` writes the access log and the metrics.

pub mod body;
pub mod card;
pub mod client;
pub mod enforce;
pub mod forward;
pub mod reply;
pub mod route;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pingora::proxy::{ProxyHttp, Session};
use pingora::upstreams::peer::HttpPeer;
use pingora::{Error, ErrorType, Result};
use tracing::{info, warn};

use crate::config::BodyMode;
use crate::metrics::{metrics, status_class};
use crate::registry::{AgentEntry, Registry};
use crate::upstream::UpstreamErrorKind;
use body::{BodyError, InflightBudget};
use forward::{CardResponse, ExchangeError, Outbound, OutboundBody, StreamedBody};
use reply::HttpError;

/// The gateway's proxy service.
pub struct Gateway {
    pub registry: Arc<Registry>,
    pub agents: client::AgentPool,
    pub budget: Arc<InflightBudget>,
}

impl Gateway {
    pub fn new(registry: Arc<Registry>) -> Self {
        let limit = registry.load().config.limits.inflight_body_bytes;
        Self {
            registry,
            agents: client::AgentPool::new(),
            budget: InflightBudget::new(limit),
        }
    }
}

/// Per-request state, for the access log and metrics.
pub struct RequestCtx {
    start: Instant,
    /// The agent the request is for, once known.
    agent: Option<Arc<AgentEntry>>,
    method: &'static str,
    status: u16,
    outcome: &'static str,
    reason: Option<&'static str>,
    bytes_in: u64,
    bytes_out: u64,
    upstream_time: Option<Duration>,
    upstream: Option<String>,
    error: Option<String>,
    _inflight: Option<InflightRequest>,
    _total: InflightTotal,
}

/// Counts a request in `cardgate_inflight_requests` for as long as it lives.
struct InflightRequest(prometheus::IntGauge);

impl InflightRequest {
    fn new(gauge: &prometheus::IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for InflightRequest {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Requests in flight across all agents (for graceful shutdown).
pub static INFLIGHT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

struct InflightTotal;

impl InflightTotal {
    fn new() -> Self {
        INFLIGHT.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Self
    }
}

impl Drop for InflightTotal {
    fn drop(&mut self) {
        INFLIGHT.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl RequestCtx {
    fn finish(&mut self, status: u16, outcome: &'static str) {
        self.status = status;
        self.outcome = outcome;
    }
}

#[async_trait]
impl ProxyHttp for Gateway {
    type CTX = RequestCtx;

    fn new_ctx(&self) -> Self::CTX {
        RequestCtx {
            start: Instant::now(),
            agent: None,
            method: "other",
            status: 0,
            outcome: "error",
            reason: None,
            bytes_in: 0,
            bytes_out: 0,
            upstream_time: None,
            upstream: None,
            error: None,
            _inflight: None,
            _total: InflightTotal::new(),
        }
    }

    async fn upstream_peer(
        &self,
        _session: &mut Session,
        _ctx: &mut Self::CTX,
    ) -> Result<Box<HttpPeer>> {
        // Every request is answered in request_filter; pingora's own proxy path is unused.
        Error::e_explain(
            ErrorType::InternalError,
            "cardgate forwards requests itself",
        )
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Self::CTX) -> Result<bool> {
        handle(self, session, ctx).await?;
        Ok(true)
    }

    async fn logging(&self, session: &mut Session, e: Option<&Error>, ctx: &mut Self::CTX) {
        if let Some(e) = e {
            ctx.error.get_or_insert_with(|| e.to_string());
        }
        let agent = ctx.agent.as_ref().map_or("-", |a| a.config.id.as_str());
        let status = if ctx.status == 0 {
            session
                .response_written()
                .map(|h| h.status.as_u16())
                .unwrap_or(0)
        } else {
            ctx.status
        };
        let elapsed = ctx.start.elapsed();
        if let Some(entry) = &ctx.agent {
            metrics()
                .requests
                .with_label_values(&[agent, ctx.method, status_class(status), ctx.outcome])
                .inc();
            let series = &entry.series;
            series.request_duration.observe(elapsed.as_secs_f64());
            if let Some(t) = ctx.upstream_time {
                series.upstream_duration.observe(t.as_secs_f64());
            }
            if ctx.bytes_in > 0 {
                series.request_body_bytes.observe(ctx.bytes_in as f64);
            }
        }
        info!(
            target: "access",
            agent,
            method = ctx.method,
            http_method = %session.req_header().method,
            status,
            outcome = ctx.outcome,
            reason = ctx.reason.unwrap_or("-"),
            bytes_in = ctx.bytes_in,
            bytes_out = ctx.bytes_out,
            duration_ms = elapsed.as_secs_f64() * 1000.0,
            upstream_ms = ctx.upstream_time.map(|t| t.as_secs_f64() * 1000.0),
            upstream = ctx.upstream.as_deref().unwrap_or("-"),
            error = ctx.error.as_deref().unwrap_or("-"),
            "request"
        );
    }
}

/// Answer one request. Errors returned are downstream I/O failures only.
pub async fn handle(gw: &Gateway, session: &mut Session, ctx: &mut RequestCtx) -> Result<()> {
    let snapshot = gw.registry.load();
    let path = session.req_header().uri.path().to_string();
    let Some(target) = route::agent_path(&path) else {
        let e = HttpError::new(
            404,
            format!("no route for {path:?}: agents are served under /agents/{{id}}/"),
        );
        ctx.finish(404, "not_found");
        return answer_unread(session, &e).await;
    };
    let Some(entry) = snapshot.agents.get(target.agent).cloned() else {
        let e = HttpError::new(404, format!("unknown agent {:?}", target.agent));
        ctx.finish(404, "not_found");
        return answer_unread(session, &e).await;
    };
    let agent = &entry.config;
    ctx.agent = Some(entry.clone());
    ctx._inflight = Some(InflightRequest::new(&entry.series.inflight_requests));

    if route::is_card_path(target.rest) {
        ctx.method = "GetCard";
        let (status, bytes_out) = card::serve(session, &snapshot, &entry).await?;
        ctx.bytes_out = bytes_out;
        ctx.finish(
            status,
            if status < 400 {
                "served_locally"
            } else {
                "unavailable"
            },
        );
        return Ok(());
    }

    let card = match entry.usable_card() {
        Ok(card) => card.clone(),
        Err(why) => {
            let e = HttpError::new(503, format!("agent {:?} is not available: {why}", agent.id))
                .retry_after(agent.retry_interval.as_secs().max(1));
            ctx.finish(503, "unavailable");
            return answer_unread(session, &e).await;
        }
    };
    // The part after `/agents/{id}`, with the query: a slice of the request target.
    let target_path = session
        .req_header()
        .uri
        .path_and_query()
        .map_or(path.as_str(), |pq| pq.as_str());
    let rest_and_query = &target_path[path.len() - target.rest.len()..];
    let Some((route_index, route_ref, upstream_path)) = card.routes.resolve(rest_and_query) else {
        let e = HttpError::new(
            404,
            format!("no such route on agent {:?}: {path:?}", agent.id),
        );
        ctx.finish(404, "not_found");
        return answer_unread(session, &e).await;
    };
    let http_method = session.req_header().method.as_str().to_string();
    ctx.method = route::method_label(None, &http_method, &upstream_path);

    // 1. What the headers and path decide, before any body byte is read.
    let wire = enforce::Wire::of(session, &card.caps, target.rest);
    if let Err(v) = enforce::before_body(agent, &card.caps, &wire, session, ctx.method) {
        let unread = !session.is_body_empty();
        return rejected(gw, session, ctx, &wire, None, &v, unread).await;
    }
    let limit = card.body_limit;
    let declared_len = content_length(session);
    if let Some(declared) = declared_len {
        if declared > limit {
            let v = enforce::body_too_large(agent, limit, declared, false);
            return rejected(gw, session, ctx, &wire, None, &v, true).await;
        }
    }
    if expects_continue(session) {
        session
            .as_downstream_mut()
            .write_continue_response()
            .await?;
    }

    // 2. The body through the scanner; 3. the JSON-RPC method once known.
    let mut scan = enforce::BodyScan::new(
        agent,
        &card.policy.policy,
        &wire,
        &upstream_path,
        declared_len,
    );
    let check_method = |method: Option<&str>| enforce::after_body(agent, &card.caps, method);
    let mut reservation = None;
    // A JSON-RPC extended-card call is known by its method (read in strict mode only).
    let (body, rpc_card) = match agent.body {
        BodyMode::Strict => {
            let read =
                body::read_strict(session, limit, agent.body_read_timeout, &gw.budget, |c| {
                    scan.feed(c)
                })
                .await;
            let body = match read {
                Ok(body) => body,
                Err(e) => {
                    record_scan(&entry, &scan);
                    // Rejections are counted under the method when it was seen before the fault.
                    ctx.method = route::method_label(scan.method(), &http_method, &upstream_path);
                    return body_failed(gw, session, ctx, &entry, &wire, &scan, e).await;
                }
            };
            ctx.bytes_in = body.len;
            record_scan(&entry, &scan);
            match scan.finish(body.len).and_then(|summary| {
                check_method(scan.method())?;
                Ok(summary)
            }) {
                Ok(Some(summary)) => enforce::log_sniff_warnings(&agent.id, &summary),
                Ok(None) => {}
                Err(v) => {
                    let id = scan.request_id().cloned();
                    ctx.method = route::method_label(scan.method(), &http_method, &upstream_path);
                    return rejected(gw, session, ctx, &wire, id.as_ref(), &v, false).await;
                }
            }
            ctx.method = route::method_label(scan.method(), &http_method, &upstream_path);
            reservation = Some(body.reservation);
            let rpc_card = scan.method().is_some_and(route::is_rpc_extended_card);
            (OutboundBody::Buffered(body.chunks), rpc_card)
        }
        BodyMode::Stream => {
            let body = StreamedBody {
                scan: &mut scan,
                limit,
                read_timeout: agent.body_read_timeout,
                check_method: &check_method,
                len: 0,
            };
            (OutboundBody::Streamed(body), false)
        }
    };

    let card_response = (route::is_rest_extended_card(&http_method, &upstream_path) || rpc_card)
        .then(|| CardResponse {
            routes: &card.routes,
            base: card::public_base(&snapshot, session),
            in_rpc_result: rpc_card,
        });
    let out = Outbound {
        agent,
        route: route_ref,
        addr: card.route_addrs.get(route_index).copied().flatten(),
        path: upstream_path.clone(),
        body,
        card_response,
        client_addr: session
            .client_addr()
            .and_then(|a| a.as_inet())
            .map(|a| a.ip().to_string()),
        max_card_bytes: snapshot.config.limits.max_card_bytes,
    };
    ctx.upstream = Some(route_ref.origin.authority().to_string());
    let result = forward::exchange(&gw.agents, session, out).await;
    drop(reservation);
    if agent.body == BodyMode::Stream {
        ctx.bytes_in = scan.bytes_scanned();
        record_scan(&entry, &scan);
        ctx.method = route::method_label(scan.method(), &http_method, &upstream_path);
    }
    match result {
        Ok(done) => {
            ctx.upstream_time = Some(done.upstream_time);
            ctx.bytes_out = done.bytes_out;
            ctx.finish(done.status, "forwarded");
            Ok(())
        }
        Err(ExchangeError::BeforeResponse(e)) => {
            metrics()
                .upstream_errors
                .with_label_values(&[&agent.id, e.kind.label()])
                .inc();
            warn!(agent = %agent.id, "agent request failed: {e}");
            let status = e.kind.http_status();
            let what = match e.kind {
                UpstreamErrorKind::Timeout => "timed out",
                UpstreamErrorKind::Protocol => "sent an answer that is not valid HTTP",
                _ => "is unreachable",
            };
            let message = format!("agent {:?} {what}: {e}", agent.id);
            ctx.finish(status, "upstream_error");
            ctx.error = Some(e.message);
            reply::error(session, &HttpError::new(status, message), false).await
        }
        Err(ExchangeError::DuringResponse(e, done)) => {
            metrics()
                .upstream_errors
                .with_label_values(&[&agent.id, e.kind.label()])
                .inc();
            warn!(agent = %agent.id, "agent response cut off: {e}");
            ctx.upstream_time = Some(done.upstream_time);
            ctx.bytes_out = done.bytes_out;
            ctx.finish(done.status, "upstream_error");
            ctx.error = Some(e.message.clone());
            Error::e_explain(ErrorType::ReadError, e.message)
        }
        Err(ExchangeError::Downstream(e)) => {
            ctx.finish(0, "client_abort");
            Err(e)
        }
        Err(ExchangeError::Body(e)) => body_failed(gw, session, ctx, &entry, &wire, &scan, e).await,
    }
}

fn record_scan(entry: &AgentEntry, scan: &enforce::BodyScan) {
    if scan.scanned() {
        entry.series.scanned_bytes.inc_by(scan.bytes_scanned());
        entry
            .series
            .scan_duration
            .observe(scan.time_spent().as_secs_f64());
    }
}

/// Answer a policy violation in the client's shape, count it, and (when the body was not
/// read to its end) linger so the client sees the answer.
async fn rejected(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    wire: &enforce::Wire,
    id: Option<&serde_json::Value>,
    v: &crate::scan::Violation,
    unread: bool,
) -> Result<()> {
    if let Some(entry) = &ctx.agent {
        metrics()
            .rejections
            .with_label_values(&[&entry.config.id, v.reason()])
            .inc();
    }
    ctx.reason = Some(v.reason());
    let status = enforce::reject(session, wire, id, v, unread).await?;
    ctx.finish(status, "rejected");
    if unread {
        let limits = &gw.registry.load().config.limits;
        body::linger(session, limits.linger_time, limits.linger_bytes).await;
    }
    Ok(())
}

async fn body_failed(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    entry: &AgentEntry,
    wire: &enforce::Wire,
    scan: &enforce::BodyScan,
    e: BodyError<crate::scan::Violation>,
) -> Result<()> {
    let id = scan.request_id().cloned();
    let (error, reason) = match e {
        BodyError::Rejected(v) => {
            return rejected(gw, session, ctx, wire, id.as_ref(), &v, true).await
        }
        BodyError::TooLarge { limit, read } => {
            let v = enforce::body_too_large(&entry.config, limit, read, true);
            return rejected(gw, session, ctx, wire, id.as_ref(), &v, true).await;
        }
        BodyError::Timeout { limit, read } => (
            HttpError::new(
                408,
                format!(
                    "the request body did not arrive within {} ({read} bytes received)",
                    humantime::format_duration(limit)
                ),
            ),
            "body_timeout",
        ),
        BodyError::Budget => (
            HttpError::new(
                503,
                "the gateway is holding too many request bodies in memory; retry shortly",
            )
            .retry_after(1),
            "memory_budget",
        ),
        BodyError::Client(e) => {
            ctx.finish(0, "client_abort");
            ctx.error = Some(e.to_string());
            return Ok(());
        }
    };
    metrics()
        .rejections
        .with_label_values(&[&entry.config.id, reason])
        .inc();
    ctx.finish(error.status, "rejected");
    ctx.reason = Some(reason);
    reply::error(session, &error, true).await?;
    let limits = &gw.registry.load().config.limits;
    body::linger(session, limits.linger_time, limits.linger_bytes).await;
    Ok(())
}

/// Answer before reading the body; the connection closes if a body was left unread
/// (rather than draining an upload of unknown size).
async fn answer_unread(session: &mut Session, e: &HttpError) -> Result<()> {
    let close = !session.is_body_empty();
    reply::error(session, e, close).await
}

fn content_length(session: &Session) -> Option<u64> {
    session
        .req_header()
        .headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

fn expects_continue(session: &Session) -> bool {
    session
        .req_header()
        .headers
        .get("expect")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
}
