//! Serving an agent's cached card: pre-rendered bytes, ETag, `Cache-Control`, 304.

use pingora::proxy::Session;
use pingora::Result;

use super::reply::{self, HttpError};
use crate::registry::{AgentEntry, Snapshot};

/// The public base written into rewritten cards: `public_url`, else derived from the
/// request (`X-Forwarded-Proto`, `X-Forwarded-Host`, `Host`), else the listen address.
pub fn public_base(snapshot: &Snapshot, session: &Session) -> String {
    if let Some(base) = &snapshot.config.public_url {
        return base.clone();
    }
    let header = |name: &str| {
        session
            .req_header()
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or("").trim().to_string())
    };
    let proto = match header("x-forwarded-proto").as_deref() {
        Some("https") => "https",
        _ => "http",
    };
    let host = header("x-forwarded-host")
        .filter(|h| valid_host(h))
        .or_else(|| header("host").filter(|h| valid_host(h)))
        .unwrap_or_else(|| snapshot.config.listen.to_string());
    format!("{proto}://{host}")
}

/// A host header value safe to write into a URL: name or IP, optional port.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

/// Answer a GET/HEAD for the card. Returns the status and body bytes written.
pub async fn serve(
    session: &mut Session,
    snapshot: &Snapshot,
    entry: &AgentEntry,
) -> Result<(u16, u64)> {
    let method = &session.req_header().method;
    if method != http::Method::GET && method != http::Method::HEAD {
        let e = HttpError::new(405, "the agent card is read with GET");
        reply::error(session, &e, false).await?;
        return Ok((405, 0));
    }
    let card = match entry.usable_card() {
        Ok(card) => card,
        Err(why) => {
            let e = HttpError::new(
                503,
                format!("agent {:?} is not available: {why}", entry.config.id),
            )
            .retry_after(entry.config.retry_interval.as_secs().max(1));
            reply::error(session, &e, false).await?;
            return Ok((503, 0));
        }
    };
    let base = public_base(snapshot, session);
    let rendered = card.render(&base);
    let max_age = entry.config.card_ttl.saturating_sub(card.age()).as_secs();
    let extra = [
        ("etag", rendered.etag.clone()),
        ("cache-control", format!("max-age={max_age}")),
    ];
    let not_modified = session
        .req_header()
        .headers
        .get_all("if-none-match")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == rendered.etag
        });
    if not_modified {
        let mut header = pingora::http::ResponseHeader::build(304, Some(2))?;
        for (name, value) in &extra {
            header.insert_header(*name, value.as_str())?;
        }
        session
            .write_response_header(Box::new(header), true)
            .await?;
        return Ok((304, 0));
    }
    let len = rendered.body.len() as u64;
    reply::bytes(
        session,
        200,
        "application/json",
        rendered.body,
        &extra,
        false,
    )
    .await?;
    Ok((200, len))
}
