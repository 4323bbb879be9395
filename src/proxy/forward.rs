//! Sending a request to the agent and streaming its answer back.
//!
//! The request is forwarded with pingora's HTTP client (`Connector`), not pingora's own
//! proxy phases: pingora 0.9 writes the upstream request header before any body filter
//! runs, and its retry buffer holds only 64 KiB, so a gateway that must reject a body
//! before the agent sees any of it has to read the body first and then open the upstream
//! exchange itself (see `../shared/notes/strict-forwarding.md`, approach 1, and the
//! `body` module). The body is forwarded byte for byte with the framing it arrived with.
//! Responses stream back chunk by chunk as they arrive, so SSE is never buffered.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pingora::connectors::http::Connector;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::protocols::http::client::HttpSession;
use pingora::proxy::Session;
use pingora::upstreams::peer::HttpPeer;
use serde_json::Value;

use super::body::BodyError;
use super::enforce::BodyScan;
use crate::card::rewrite::{self, Route};
use crate::config::{AgentConfig, Timeouts};
use crate::scan::Violation;
use crate::upstream::{self, UpstreamError, UpstreamErrorKind};

/// Request headers that describe one hop and are never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
    "expect",
];

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
    connector: &Connector,
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
    let peer = upstream::peer(addr, &out.route.origin, &timeouts);
    let request = upstream_request(session, &out)?;

    // Up to the response header: within the total timeout.
    let mut up = match &mut out.body {
        OutboundBody::Buffered(chunks) => {
            // A pooled connection that turns out to be dead is retried on another; the body
            // is in memory, so this is safe.
            let head = async {
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    match send_request(connector, &peer, &request, chunks, &timeouts).await {
                        Ok(up) => return Ok(up),
                        Err((e, reused))
                            if reused && attempt < 3 && e.kind == UpstreamErrorKind::Reset =>
                        {
                            continue
                        }
                        Err((e, _)) => return Err(e),
                    }
                }
            };
            match tokio::time::timeout(timeouts.total, head).await {
                Ok(Ok(up)) => up,
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
            send_streamed(connector, &peer, &request, session, body, &timeouts).await?
        }
    };
    let upstream_time = started.elapsed();
    let response = up.response_header().cloned().map(Box::new).ok_or_else(|| {
        ExchangeError::BeforeResponse(UpstreamError::new(
            UpstreamErrorKind::Protocol,
            "no response header",
        ))
    })?;
    let status = response.status.as_u16();

    if let Some(card) = &out.card_response {
        if status == 200 {
            let exchanged = Exchanged {
                status,
                upstream_time,
                bytes_out: 0,
            };
            let result = rewrite_card_response(session, &mut up, response, card, &out, exchanged)
                .await
                .map(|ex| (ex, up));
            let (ex, up) = result?;
            release(connector, up, &peer).await;
            return Ok(ex);
        }
    }

    let streaming = is_event_stream(&response);
    let mut header = response;
    strip_hop_by_hop(&mut header);
    let mut exchanged = Exchanged {
        status,
        upstream_time,
        bytes_out: 0,
    };
    session
        .write_response_header(header, false)
        .await
        .map_err(ExchangeError::Downstream)?;

    // SSE: idle silences up to stream_idle, no total limit. Otherwise: what is left of total.
    let deadline = if streaming {
        up.set_read_timeout(Some(timeouts.stream_idle));
        None
    } else {
        Some(started + timeouts.total)
    };
    loop {
        let next = match deadline {
            Some(d) => match tokio::time::timeout_at(d.into(), up.read_response_body()).await {
                Ok(r) => r,
                Err(_) => {
                    let e = UpstreamError::timeout("reading the agent's response", timeouts.total);
                    return Err(ExchangeError::DuringResponse(e, exchanged));
                }
            },
            None => up.read_response_body().await,
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
            Err(e) if streaming && e.etype() == &pingora::ErrorType::ConnectionClosed => break,
            Err(e) => {
                return Err(ExchangeError::DuringResponse(
                    UpstreamError::from_pingora(&e),
                    exchanged,
                ))
            }
        }
    }
    session
        .write_response_body(None, true)
        .await
        .map_err(ExchangeError::Downstream)?;
    release(connector, up, &peer).await;
    Ok(exchanged)
}

async fn release(connector: &Connector, mut up: HttpSession, peer: &HttpPeer) {
    // Only a connection whose response was read to the end can carry another request.
    if up.response_done() {
        connector
            .release_http_session(up, peer, Some(Duration::from_secs(60)))
            .await;
    }
}

/// Connect (or reuse), write the request and read the response header, skipping 1xx.
/// The error says whether the connection was a reused one.
async fn send_request(
    connector: &Connector,
    peer: &HttpPeer,
    request: &RequestHeader,
    body: &[Bytes],
    timeouts: &Timeouts,
) -> Result<HttpSession, (UpstreamError, bool)> {
    let (mut up, reused) = connector
        .get_http_session(peer)
        .await
        .map_err(|e| (UpstreamError::from_pingora(&e), false))?;
    // Pooled sessions keep the timeout of their last use; this request's applies.
    up.set_read_timeout(Some(timeouts.read));
    let fail = |e: Box<pingora::Error>| (UpstreamError::from_pingora(&e), reused);
    up.write_request_header(Box::new(request.clone()))
        .await
        .map_err(fail)?;
    for chunk in body {
        // An empty chunk would end a chunked body early (pingora writes it as the last chunk).
        if !chunk.is_empty() {
            up.write_request_body(chunk.clone(), false)
                .await
                .map_err(fail)?;
        }
    }
    up.finish_request_body().await.map_err(fail)?;
    loop {
        up.read_response_header().await.map_err(fail)?;
        match up.response_header() {
            Some(h) if h.status.is_informational() => continue,
            _ => return Ok(up),
        }
    }
}

/// `body: stream`: open the exchange, then read, scan and forward each chunk. On a
/// violation the upstream session is dropped unfinished: the agent sees an aborted request.
async fn send_streamed(
    connector: &Connector,
    peer: &HttpPeer,
    request: &RequestHeader,
    session: &mut Session,
    body: &mut StreamedBody<'_>,
    timeouts: &Timeouts,
) -> Result<HttpSession, ExchangeError> {
    let before =
        |e: Box<pingora::Error>| ExchangeError::BeforeResponse(UpstreamError::from_pingora(&e));
    let (mut up, _) = connector.get_http_session(peer).await.map_err(before)?;
    up.set_read_timeout(Some(timeouts.read));
    up.write_request_header(Box::new(request.clone()))
        .await
        .map_err(before)?;
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
        up.write_request_body(chunk, false).await.map_err(before)?;
    }
    body.scan
        .finish(body.len)
        .map_err(|v| ExchangeError::Body(BodyError::Rejected(v)))?;
    if !method_checked {
        (body.check_method)(body.scan.method())
            .map_err(|v| ExchangeError::Body(BodyError::Rejected(v)))?;
    }
    up.finish_request_body().await.map_err(before)?;
    let read_head = async {
        loop {
            up.read_response_header().await?;
            match up.response_header() {
                Some(h) if h.status.is_informational() => continue,
                _ => return Ok(()),
            }
        }
    };
    match tokio::time::timeout(timeouts.total, read_head).await {
        Ok(Ok(())) => Ok(up),
        Ok(Err(e)) => Err(before(e)),
        Err(_) => Err(ExchangeError::BeforeResponse(UpstreamError::timeout(
            "waiting for the agent's response",
            timeouts.total,
        ))),
    }
}

fn upstream_request(session: &Session, out: &Outbound<'_>) -> Result<RequestHeader, ExchangeError> {
    let bad =
        |e: Box<pingora::Error>| ExchangeError::BeforeResponse(UpstreamError::from_pingora(&e));
    let incoming = session.req_header();
    let mut req = RequestHeader::build(
        incoming.method.clone(),
        out.path.as_bytes(),
        Some(incoming.headers.len() + 4),
    )
    .map_err(bad)?;
    // Headers named in `Connection` are hop-by-hop too.
    let listed: Vec<String> = incoming
        .headers
        .get_all("connection")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .collect();
    for (name, value) in incoming.headers.iter() {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n)
            || listed.iter().any(|l| l == n)
            || n == "host"
            || n.starts_with("x-forwarded-")
        {
            continue;
        }
        req.append_header(name.clone(), value.clone())
            .map_err(bad)?;
    }
    req.insert_header("host", out.route.origin.authority())
        .map_err(bad)?;
    let header = |name: &str| incoming.headers.get(name).and_then(|v| v.to_str().ok());
    let forwarded_for = match (header("x-forwarded-for"), &out.client_addr) {
        (Some(prev), Some(ip)) => format!("{prev}, {ip}"),
        (None, Some(ip)) => ip.clone(),
        (Some(prev), None) => prev.to_string(),
        (None, None) => String::new(),
    };
    if !forwarded_for.is_empty() {
        req.insert_header("x-forwarded-for", forwarded_for)
            .map_err(bad)?;
    }
    let proto = header("x-forwarded-proto").unwrap_or("http").to_string();
    req.insert_header("x-forwarded-proto", proto).map_err(bad)?;
    if let Some(host) = header("x-forwarded-host").or(header("host")) {
        req.insert_header("x-forwarded-host", host.to_string())
            .map_err(bad)?;
    }
    Ok(req)
}

fn strip_hop_by_hop(header: &mut ResponseHeader) {
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "trailer",
        "upgrade",
    ] {
        header.remove_header(name);
    }
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
    up: &mut HttpSession,
    mut header: Box<ResponseHeader>,
    card: &CardResponse<'_>,
    out: &Outbound<'_>,
    mut exchanged: Exchanged,
) -> Result<Exchanged, ExchangeError> {
    let mut body = Vec::new();
    loop {
        match up.read_response_body().await {
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
            Err(e) => {
                return Err(ExchangeError::BeforeResponse(UpstreamError::from_pingora(
                    &e,
                )))
            }
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
    strip_hop_by_hop(&mut header);
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
