//! Enforcing what a card advertises, in the order it can be decided:
//!
//! 1. from the headers and path, before any body byte is read: the protocol version
//!    (`A2A-Version`), required extensions (`A2A-Extensions` / `X-A2A-Extensions`), REST
//!    operations the card does not offer (streaming, push notifications), and a declared
//!    `Content-Length` larger than the policy can accept;
//! 2. from the body, chunk by chunk, with the scanner;
//! 3. from the JSON-RPC method the scanner found, once the body is complete: streaming and
//!    push-notification methods the card does not offer.
//!
//! A violation is answered in the shape the client speaks: JSON-RPC (HTTP 200, or 413 for
//! a refused length) with v1.0 `ErrorInfo` details or a v0.3 data object, or the REST
//! google.rpc.Status.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pingora::proxy::Session;
use serde_json::Value;
use tracing::{info, warn};

use super::reply;
use crate::card::capabilities::{major_minor, Binding, Capabilities};
use crate::config::AgentConfig;
use crate::scan::{
    Amount, BodyShape, Policy, Reason, Scanner, Summary, Violation, ViolationData, WireVersion,
};

/// How the client speaks, as far as error answers go.
#[derive(Debug, Clone)]
pub struct Wire {
    pub rest: bool,
    /// `Major.Minor` the client asked for; no `A2A-Version` means 0.3.
    pub version: String,
    pub shape: WireVersion,
}

impl Wire {
    pub fn of(session: &Session, caps: &Capabilities, rest_path: &str) -> Self {
        let version = requested_version(session).unwrap_or_else(|| "0.3".to_string());
        let shape = if version.starts_with("0.") {
            WireVersion::V0_3
        } else {
            WireVersion::V1_0
        };
        Wire {
            rest: caps.binding_for(rest_path) == Binding::Rest,
            version,
            shape,
        }
    }
}

/// `A2A-Version` from the header, else from the `A2A-Version` query parameter.
fn requested_version(session: &Session) -> Option<String> {
    let header = session.req_header();
    if let Some(v) = header
        .headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
    {
        if !v.trim().is_empty() {
            return Some(major_minor(v));
        }
    }
    header
        .uri
        .query()?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| k.eq_ignore_ascii_case("a2a-version"))
        .map(|(_, v)| major_minor(v))
        .filter(|v| !v.is_empty())
}

fn violation(reason: Reason, message: String) -> Violation {
    Violation::new(message, ViolationData::new(reason))
}

fn activated_extensions(session: &Session) -> Vec<String> {
    let headers = &session.req_header().headers;
    ["a2a-extensions", "x-a2a-extensions"]
        .iter()
        .flat_map(|name| headers.get_all(*name).iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|uri| uri.trim().to_string())
        .filter(|uri| !uri.is_empty())
        .collect()
}

/// Step 1: what headers and path decide. `operation` is the A2A operation label for REST
/// requests (JSON-RPC methods are checked in step 3).
pub fn before_body(
    agent: &AgentConfig,
    caps: &Capabilities,
    wire: &Wire,
    session: &Session,
    operation: &str,
) -> Result<(), Violation> {
    if agent.enforce.versions && !caps.offers_version(&wire.version) {
        return Err(violation(
            Reason::VersionNotSupported,
            format!(
                "A2A version {} is not supported by agent {:?}; its card offers {}",
                wire.version,
                agent.id,
                caps.versions.join(", ")
            ),
        ));
    }
    if agent.enforce.extensions && !caps.required_extensions.is_empty() {
        let active = activated_extensions(session);
        if let Some(missing) = caps
            .required_extensions
            .iter()
            .find(|uri| !active.contains(uri))
        {
            if wire.shape == WireVersion::V1_0 {
                let mut v = violation(
                    Reason::ExtensionRequired,
                    format!(
                        "agent {:?} requires the extension {missing}; activate it with the A2A-Extensions header",
                        agent.id
                    ),
                );
                v.data.field = Some(missing.clone());
                return Err(v);
            }
            info!(agent = %agent.id, extension = %missing, "v0.3 request without a required extension (passed: v0.3 does not require rejecting it)");
        }
    }
    if wire.rest {
        operation_offered(agent, caps, operation)?;
    }
    Ok(())
}

/// Step 3: the JSON-RPC method, once known.
pub fn after_body(
    agent: &AgentConfig,
    caps: &Capabilities,
    rpc_method: Option<&str>,
) -> Result<(), Violation> {
    match rpc_method {
        Some(method) => operation_offered(
            agent,
            caps,
            super::route::method_label(Some(method), "POST", ""),
        ),
        None => Ok(()),
    }
}

fn operation_offered(
    agent: &AgentConfig,
    caps: &Capabilities,
    operation: &str,
) -> Result<(), Violation> {
    if !agent.enforce.capabilities {
        return Ok(());
    }
    let streaming = matches!(operation, "SendStreamingMessage" | "SubscribeToTask");
    if streaming && caps.streaming == Some(false) {
        return Err(violation(
            Reason::StreamingNotSupported,
            format!("{operation}: agent {:?} does not offer streaming (capabilities.streaming is false)", agent.id),
        ));
    }
    let push = operation.contains("PushNotificationConfig");
    if push && caps.push_notifications == Some(false) {
        return Err(violation(
            Reason::PushNotSupported,
            format!(
                "{operation}: agent {:?} does not offer push notifications (capabilities.pushNotifications is false)",
                agent.id
            ),
        ));
    }
    Ok(())
}

/// A body larger than the agent accepts.
pub fn body_too_large(agent: &AgentConfig, limit: u64, actual: u64, at_least: bool) -> Violation {
    let size = if at_least {
        format!("at least {actual}")
    } else {
        actual.to_string()
    };
    let mut v = violation(
        Reason::BodySize,
        format!(
            "the request body is {size} bytes; agent {:?} accepts at most {limit} bytes",
            agent.id
        ),
    );
    v.data.constraint = Some("max_body_bytes".to_string());
    v.data.limit = Some(Amount::Bytes(limit));
    v.data.actual = Some(Amount::Bytes(actual));
    v.data.actual_is_lower_bound = at_least;
    v
}

/// Step 2: the body through the scanner, timing the scan.
pub struct BodyScan {
    scanner: Option<Scanner>,
    spent: Duration,
}

impl BodyScan {
    /// A scan for this agent's policy, or none when every body check is switched off.
    /// `declared_len`: the request's `Content-Length`, when it has one.
    pub fn new(
        agent: &AgentConfig,
        policy: &Arc<Policy>,
        wire: &Wire,
        upstream_path: &str,
        declared_len: Option<u64>,
    ) -> Self {
        let e = &agent.enforce;
        let wanted = e.files || e.media_types || e.text || e.capabilities;
        let shape = if wire.rest || super::route::is_rest_message(upstream_path) {
            BodyShape::Rest
        } else {
            BodyShape::JsonRpc
        };
        let scanner = wanted.then(|| {
            let mut s = Scanner::new(policy.clone(), shape);
            if let Some(len) = declared_len {
                s.expect_len(len);
            }
            s
        });
        BodyScan {
            scanner,
            spent: Duration::ZERO,
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Violation> {
        let Some(scanner) = &mut self.scanner else {
            return Ok(());
        };
        let started = Instant::now();
        let result = scanner.feed(chunk);
        self.spent += started.elapsed();
        result
    }

    /// The end of the body. An empty body (GET, bodyless POST) has nothing to check.
    pub fn finish(&mut self, body_len: u64) -> Result<Option<Summary>, Violation> {
        let Some(scanner) = &mut self.scanner else {
            return Ok(None);
        };
        if body_len == 0 {
            return Ok(None);
        }
        let started = Instant::now();
        let result = scanner.finish();
        self.spent += started.elapsed();
        result.map(Some)
    }

    pub fn method(&self) -> Option<&str> {
        self.scanner.as_ref().and_then(Scanner::method)
    }

    pub fn request_id(&self) -> Option<&Value> {
        self.scanner.as_ref().and_then(Scanner::request_id)
    }

    pub fn bytes_scanned(&self) -> u64 {
        self.scanner.as_ref().map_or(0, Scanner::bytes_scanned)
    }

    pub fn time_spent(&self) -> Duration {
        self.spent
    }

    pub fn scanned(&self) -> bool {
        self.scanner.is_some()
    }
}

/// Log what `sniff: warn` let through.
pub fn log_sniff_warnings(agent: &str, summary: &Summary) {
    for w in &summary.sniff_warnings {
        warn!(
            agent,
            part = w.part_index,
            declared = %w.declared,
            detected = w.detected.unwrap_or("unknown"),
            "declared media type does not match the content (sniff: warn, forwarded)"
        );
    }
}

/// Answer a violation in the client's shape. `close` after answering before the body was
/// read to its end.
pub async fn reject(
    session: &mut Session,
    wire: &Wire,
    id: Option<&Value>,
    v: &Violation,
    close: bool,
) -> pingora::Result<u16> {
    let (status, body) = if wire.rest {
        let status = v.http_status();
        (status, v.rest_response(status))
    } else {
        let status = if v.data.reason == Reason::BodySize {
            413
        } else {
            200
        };
        (status, v.jsonrpc_response(id, wire.shape))
    };
    reply::json(session, status, &body, &[], close).await?;
    Ok(status)
}
