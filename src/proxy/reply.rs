//! Responses the gateway writes itself: cards, and errors as JSON bodies.
//!
//! Gateway-level HTTP errors (unknown agent, agent unreachable, no card yet, timeouts)
//! use the google.rpc.Status shape that A2A v1.0 REST uses:
//! `{"error":{"code":502,"status":"UNAVAILABLE","message":"…"}}`.

use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::proxy::Session;
use pingora::Result;
use serde_json::{json, Value};

/// An HTTP-level error the gateway answers with.
#[derive(Debug, Clone)]
pub struct HttpError {
    pub status: u16,
    pub message: String,
    /// Seconds for `Retry-After`.
    pub retry_after: Option<u64>,
}

impl HttpError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    pub fn body(&self) -> Value {
        json!({"error": {"code": self.status, "status": grpc_status(self.status), "message": self.message}})
    }
}

/// The google.rpc.Code name that goes with an HTTP status.
pub fn grpc_status(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        405 => "UNIMPLEMENTED",
        408 => "DEADLINE_EXCEEDED",
        413 => "INVALID_ARGUMENT",
        429 => "RESOURCE_EXHAUSTED",
        502 | 503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

/// Write a complete JSON response. `close` ends the connection after it (used when the
/// request body was not read to its end).
pub async fn json(
    session: &mut Session,
    status: u16,
    body: &Value,
    extra: &[(&'static str, String)],
    close: bool,
) -> Result<()> {
    let body = Bytes::from(serde_json::to_vec(body).unwrap_or_default());
    bytes(session, status, "application/json", body, extra, close).await
}

pub async fn bytes(
    session: &mut Session,
    status: u16,
    content_type: &str,
    body: Bytes,
    extra: &[(&'static str, String)],
    close: bool,
) -> Result<()> {
    if close {
        session.set_keepalive(None);
    }
    let mut header = ResponseHeader::build(status, Some(4 + extra.len()))?;
    header.insert_header("content-type", content_type)?;
    header.insert_header("content-length", body.len().to_string())?;
    if !extra.iter().any(|(name, _)| *name == "cache-control") {
        header.insert_header("cache-control", "no-store")?;
    }
    for (name, value) in extra {
        header.insert_header(*name, value.as_str())?;
    }
    let head_only = session.req_header().method == http::Method::HEAD;
    session
        .write_response_header(Box::new(header), head_only)
        .await?;
    if !head_only {
        session.write_response_body(Some(body), true).await?;
    }
    Ok(())
}

pub async fn error(session: &mut Session, e: &HttpError, close: bool) -> Result<()> {
    let mut extra = Vec::new();
    if let Some(s) = e.retry_after {
        extra.push(("retry-after", s.to_string()));
    }
    json(session, e.status, &e.body(), &extra, close).await
}
