//! Sending a request to the agent and streaming its answer back.
//!
//! The request is forwarded with cardgate's own HTTP/1.1 client (the `client` module), not
//! pingora's proxy phases: pingora 0.9 writes the upstream request header before any body
//! filter runs, and its retry buffer holds only 64 KiB, so a gateway that must reject a body
//! before the agent sees any of it has to read the body first and then open the upstream
//! exchange itself (see `../shared/notes/strict-forwarding.md`, approach 1, and the `body`
//! module). The body is forwarded byte for byte. In the default strict mode it is whole
//! before the agent is contacted, so it goes with a `Content-Length` even when the client
//! sent it in chunks; `body: stream` keeps the client's framing. Responses stream back
//! chunk by chunk as they arrive, so SSE is never buffered.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::proxy::Session;
use pingora_timeout::fast_timeout::fast_timeout;
use serde_json::Value;

use super::body::BodyError;
use super::client::{is_hop_by_hop, AgentConn, AgentPool, RequestFraming, SendError, Target};
use super::enforce::BodyScan;
use crate::card::rewrite::{self, Route};
use crate::config::AgentConfig;
use crate::scan::Violation;
use crate::upstream::{self, UpstreamError, UpstreamErrorKind};

/// What the exchange needs to know about the request.
pub struct Outbound<'a> {
    pub agent: &'a AgentConfig,
    pub route: &'a Route,
    pub addr: Option<SocketAddr>,
    /// Upstream path with query.
    pub path: String,
    pub body: OutboundBody<'a>,
    /// Rewrite the card in the response (extended card calls).
    pub card_response: Option<CardResponse<'a>>,
    pub client_addr: Option<String>,
    pub max_card_bytes: u64,
}

/// The request body: already read (strict), or read, scanned and forwarded chunk by chunk
/// (`body: stream`).
pub enum OutboundBody<'a> {
    Buffered(Vec<Bytes>),
    Streamed(StreamedBody<'a>),
}

pub struct StreamedBody<'a> {
    pub scan: &'a mut BodyScan,
    pub limit: u64,
    pub read_timeout: Duration,
    /// Checks the JSON-RPC method as soon as the scanner has seen it.
    pub check_method: &'a (dyn Fn(Option<&str>) -> Result<(), Violation> + Sync),
    /// Body bytes read.
    pub len: u64,
}

/// How to rewrite an extended card the agent returns.
pub struct CardResponse<'a> {
    pub routes: &'a rewrite::RouteTable,
    pub base: String,
    /// JSON-RPC: the card sits in `result`.
    pub in_rpc_result: bool,
}

/// How the exchange ended.
pub struct Exchanged {
    pub status: u16,
    pub upstream_time: Duration,
    pub bytes_out: u64,
}

/// Failures, split by whether the client has already seen a response header.
pub enum ExchangeError {
    /// Nothing was sent downstream yet: answer with 502/504.
    BeforeResponse(UpstreamError),
    /// The response was under way; the connection must be cut.
    DuringResponse(UpstreamError, Exchanged),
    /// The client went away.
    Downstream(Box<pingora::Error>),
    /// A streamed body broke a limit; the agent saw an aborted request.
    Body(BodyError<Violation>),
}

pub async fn exchange(
    pool: &AgentPool,
    session: &mut Session,
    mut out: Outbound<'_>,
) -> Result<Exchanged, ExchangeError> {
    let timeouts = out.agent.timeouts;
    let started = Instant::now();
    let addr = match out.addr {
        Some(a) => a,
        None => upstream::resolve(&out.route.origin)
            .await
            .map_err(ExchangeError::BeforeResponse)?,
    };
    let target = Target {
        addr,
        origin: &out.route.origin,
        timeouts: &timeouts,
    };
    let head_request = session.req_header().method == http::Method::HEAD;

    let framing = match &out.body {
        OutboundBody::Buffered(chunks) => {
            let size: u64 = chunks.iter().map(|c| c.len() as u64).sum();
            if size > 0 || declares_body(session.req_header()) {
                RequestFraming::Length(size)
            } else {
                RequestFraming::None
            }
        }
        OutboundBody::Streamed(_) => streamed_framing(session.req_header()),
    };
    let head = request_head(session, &out, framing);

    // Up to the response header: within the total timeout.
    let (mut up, response) = match &mut out.body {
        OutboundBody::Buffered(chunks) => {
            // A pooled connection that turns out to be dead is retried on another; the body
            // is in memory, so this is safe.
            let send = async {
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    match send_request(pool, &target, &head, chunks, head_request).await {
                        Err(e) if e.retryable && attempt < 3 => continue,
                        result => return result.map_err(|e| e.error),
                    }
                }
            };
            match fast_timeout(timeouts.total, send).await {
                Ok(Ok(sent)) => sent,
                Ok(Err(e)) => return Err(ExchangeError::BeforeResponse(e)),
                Err(_) => {
                    return Err(ExchangeError::BeforeResponse(UpstreamError::timeout(
                        "waiting for the agent's response",
                        timeouts.total,
                    )))
                }
            }
        }
        OutboundBody::Streamed(body) => {
            send_streamed(pool, &target, &head, framing, session, body, head_request).await?
        }
    };
    let upstream_time = started.elapsed();
    let status = response.status.as_u16();
    let response = Box::new(response);

    if let Some(card) = &out.card_response {
        if status == 200 {
            let exchanged = Exchanged {
                status,
                upstream_time,
                bytes_out: 0,
            };
            let ex =
                rewrite_card_response(session, &mut up, response, card, &out, exchanged).await?;
            pool.release(up);
            return Ok(ex);
        }
    }

    let streaming = is_event_stream(&response);
    let mut exchanged = Exchanged {
        status,
        upstream_time,
        bytes_out: 0,
    };
    session
        .write_response_header(response, false)
        .await
        .map_err(ExchangeError::Downstream)?;

    // SSE: idle silences up to stream_idle, no total limit. Otherwise: what is left of total.
    let deadline = if streaming {
        up.set_read_timeout(timeouts.stream_idle);
        None
    } else {
        Some(started + timeouts.total)
    };
    loop {
        let next = match deadline {
            Some(d) => {
                match fast_timeout(d.saturating_duration_since(Instant::now()), up.read_body())
                    .await
                {
                    Ok(r) => r,
                    Err(_) => {
                        let e =
                            UpstreamError::timeout("reading the agent's response", timeouts.total);
                        return Err(ExchangeError::DuringResponse(e, exchanged));
                    }
                }
            }
            None => up.read_body().await,
        };
        match next {
            Ok(Some(chunk)) => {
                exchanged.bytes_out += chunk.len() as u64;
                session
                    .write_response_body(Some(chunk), false)
                    .await
                    .map_err(ExchangeError::Downstream)?;
            }
            Ok(None) => break,
            // Many SSE servers (uvicorn with sse-starlette among them) end a stream by closing
            // the connection without the final chunk: for an event stream that is its end.
            Err(_) if streaming && up.closed_by_agent() => break,
            Err(e) => return Err(ExchangeError::DuringResponse(e.error, exchanged)),
        }
    }
    session
        .write_response_body(None, true)
        .await
        .map_err(ExchangeError::Downstream)?;
    pool.release(up);
    Ok(exchanged)
}

/// Whether the client's request announced a body (even an empty one).
fn declares_body(req: &RequestHeader) -> bool {
    req.headers.contains_key("content-length") || req.headers.contains_key("transfer-encoding")
}

/// `body: stream` keeps the client's framing: its length when it sent one, else chunks.
fn streamed_framing(req: &RequestHeader) -> RequestFraming {
    let length = req
        .headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match length {
        Some(n) if !req.headers.contains_key("transfer-encoding") => RequestFraming::Length(n),
        _ if declares_body(req) => RequestFraming::Chunked,
        _ => RequestFraming::None,
    }
}

/// Connect (or reuse), write the request and read the response header.
async fn send_request(
    pool: &AgentPool,
    target: &Target<'_>,
    head: &[u8],
    body: &[Bytes],
    head_request: bool,
) -> Result<(AgentConn, ResponseHeader), SendError> {
    let mut up = pool.connect(target).await.map_err(|error| SendError {
        error,
        retryable: false,
    })?;
    let response = match up.send_whole(head, body).await {
        Ok(()) => up.read_head(head_request).await?,
        Err(e) => up.answer_after_failed_write(e, head_request).await?,
    };
    Ok((up, response))
}

/// `body: stream`: open the exchange, then read, scan and forward each chunk. On a
/// violation the agent connection is dropped unfinished: the agent sees an aborted request.
async fn send_streamed(
    pool: &AgentPool,
    target: &Target<'_>,
    head: &[u8],
    framing: RequestFraming,
    session: &mut Session,
    body: &mut StreamedBody<'_>,
    head_request: bool,
) -> Result<(AgentConn, ResponseHeader), ExchangeError> {
    let before = |e: SendError| ExchangeError::BeforeResponse(e.error);
    let mut up = pool
        .connect(target)
        .await
        .map_err(ExchangeError::BeforeResponse)?;
    up.send_head(head).await.map_err(before)?;
    let deadline = Instant::now() + body.read_timeout;
    let mut method_checked = false;
    loop {
        let chunk =
            match tokio::time::timeout_at(deadline.into(), session.read_request_body()).await {
                Err(_) => {
                    return Err(ExchangeError::Body(BodyError::Timeout {
                        limit: body.read_timeout,
                        read: body.len,
                    }))
                }
                Ok(Err(e)) => return Err(ExchangeError::Body(BodyError::Client(e))),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => chunk,
            };
        if chunk.is_empty() {
            continue;
        }
        body.len += chunk.len() as u64;
        if body.len > body.limit {
            return Err(ExchangeError::Body(BodyError::TooLarge {
                limit: body.limit,
                read: body.len,
            }));
        }
        body.scan
            .feed(&chunk)
            .map_err(|v| ExchangeError::Body(BodyError::Rejected(v)))?;
        if !method_checked && body.scan.method().is_some() {
            method_checked = true;
            (body.check_method)(body.scan.method())
                .map_err(|v| ExchangeError::Body(BodyError::Rejected(v)))?;
        }
        if let Err(e) = up.write_body(&chunk, framing).await {
            let response = up
                .answer_after_failed_write(e, head_request)
                .await
                .map_err(before)?;
            discard_rest(session, deadline, body).await;
            return Ok((up, response));
        }
    }
    body.scan
        .finish(body.len)
        .map_err(|v| ExchangeError::Body(BodyError::Rejected(v)))?;
    if !method_checked {
        (body.check_method)(body.scan.method())
            .map_err(|v| ExchangeError::Body(BodyError::Rejected(v)))?;
    }
    up.finish_body(framing).await.map_err(before)?;
    let total = target.timeouts.total;
    match fast_timeout(total, up.read_head(head_request)).await {
        Ok(Ok(response)) => Ok((up, response)),
        Ok(Err(e)) => Err(before(e)),
        Err(_) => Err(ExchangeError::BeforeResponse(UpstreamError::timeout(
            "waiting for the agent's response",
            total,
        ))),
    }
}

/// The agent answered before the client finished sending. The rest of the body goes nowhere,
/// but it is read (within the body's limit and read timeout, as a lingering close would) so
/// that a client still writing gets to read the answer instead of a reset.
async fn discard_rest(session: &mut Session, deadline: Instant, body: &mut StreamedBody<'_>) {
    while body.len <= body.limit {
        match tokio::time::timeout_at(deadline.into(), session.read_request_body()).await {
            Ok(Ok(Some(chunk))) => body.len += chunk.len() as u64,
            _ => return,
        }
    }
}

/// The request head for the agent: the client's headers minus hop-by-hop ones, the agent's
/// `host`, `x-forwarded-*`, and the body framing cardgate sends.
fn request_head(session: &Session, out: &Outbound<'_>, framing: RequestFraming) -> Vec<u8> {
    use std::io::Write as _;
    let incoming = session.req_header();
    let mut head = Vec::with_capacity(384 + out.path.len() + 48 * incoming.headers.len());
    let line = |head: &mut Vec<u8>, name: &[u8], value: &[u8]| {
        head.extend_from_slice(name);
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    };
    head.extend_from_slice(incoming.method.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(out.path.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    // Headers named in `Connection` are hop-by-hop too.
    let listed: Vec<String> = incoming
        .headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .collect();
    for (name, value) in incoming.headers.iter() {
        if not_forwarded(name) || listed.iter().any(|l| l == name.as_str()) {
            continue;
        }
        line(&mut head, name.as_str().as_bytes(), value.as_bytes());
    }
    line(&mut head, b"host", out.route.origin.authority().as_bytes());
    let header = |name: &str| incoming.headers.get(name).and_then(|v| v.to_str().ok());
    let previous = header("x-forwarded-for");
    if previous.is_some() || out.client_addr.is_some() {
        head.extend_from_slice(b"x-forwarded-for: ");
        let addrs = [previous, out.client_addr.as_deref()];
        for (i, addr) in addrs.into_iter().flatten().enumerate() {
            if i > 0 {
                head.extend_from_slice(b", ");
            }
            head.extend_from_slice(addr.as_bytes());
        }
        head.extend_from_slice(b"\r\n");
    }
    let proto = header("x-forwarded-proto").unwrap_or("http");
    line(&mut head, b"x-forwarded-proto", proto.as_bytes());
    if let Some(host) = header("x-forwarded-host").or(header("host")) {
        line(&mut head, b"x-forwarded-host", host.as_bytes());
    }
    match framing {
        RequestFraming::Length(n) => {
            let _ = write!(head, "content-length: {n}\r\n");
        }
        RequestFraming::Chunked => line(&mut head, b"transfer-encoding", b"chunked"),
        RequestFraming::None => {}
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// Request fields never forwarded: the hop-by-hop ones, and those cardgate sets itself.
fn not_forwarded(name: &http::HeaderName) -> bool {
    use http::header::*;
    [
        PROXY_AUTHENTICATE,
        PROXY_AUTHORIZATION,
        EXPECT,
        HOST,
        CONTENT_LENGTH,
        TRANSFER_ENCODING,
    ]
    .contains(name)
        || is_hop_by_hop(name.as_str())
        || name.as_str().starts_with("x-forwarded-")
}

fn is_event_stream(header: &ResponseHeader) -> bool {
    header
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Read an extended-card response whole (bounded), rewrite its URLs and send it on.
async fn rewrite_card_response(
    session: &mut Session,
    up: &mut AgentConn,
    mut header: Box<ResponseHeader>,
    card: &CardResponse<'_>,
    out: &Outbound<'_>,
    mut exchanged: Exchanged,
) -> Result<Exchanged, ExchangeError> {
    let mut body = Vec::new();
    loop {
        match up.read_body().await {
            Ok(Some(chunk)) => {
                if (body.len() + chunk.len()) as u64 > out.max_card_bytes {
                    let e = UpstreamError::new(
                        UpstreamErrorKind::Protocol,
                        format!("the agent's extended card is larger than limits.max_card_bytes ({} bytes)", out.max_card_bytes),
                    );
                    return Err(ExchangeError::BeforeResponse(e));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return Err(ExchangeError::BeforeResponse(e.error)),
        }
    }
    let body = match serde_json::from_slice::<Value>(&body) {
        Ok(mut value) => {
            let target = if card.in_rpc_result {
                value.get_mut("result")
            } else {
                Some(&mut value)
            };
            if let Some(target) = target {
                rewrite::rewrite_with_known_routes(target, &out.agent.id, card.routes, &card.base);
            }
            Bytes::from(serde_json::to_vec(&value).unwrap_or_default())
        }
        // Not JSON: pass it on unchanged; it holds no card to rewrite.
        Err(_) => Bytes::from(body),
    };
    header.remove_header("transfer-encoding");
    header
        .insert_header("content-length", body.len().to_string())
        .map_err(|e| ExchangeError::BeforeResponse(UpstreamError::from_pingora(&e)))?;
    exchanged.bytes_out = body.len() as u64;
    session
        .write_response_header(header, false)
        .await
        .map_err(ExchangeError::Downstream)?;
    session
        .write_response_body(Some(body), true)
        .await
        .map_err(ExchangeError::Downstream)?;
    Ok(exchanged)
}
