//! Talking to agents: peers, name resolution, error classification and a bounded GET.
//! Shared by the card refresher and the proxy.

use std::net::SocketAddr;
use std::time::Duration;

use pingora::connectors::http::Connector;
use pingora::http::RequestHeader;
use pingora::upstreams::peer::HttpPeer;
use pingora::{Error, ErrorType};

use crate::card::rewrite::{parse_http_url, Origin};
use crate::config::Timeouts;

/// Resolve an origin's host to one socket address (never blocks the runtime).
pub async fn resolve(origin: &Origin) -> Result<SocketAddr, UpstreamError> {
    if let Ok(ip) = origin.host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, origin.port));
    }
    let mut addrs = tokio::net::lookup_host((origin.host.as_str(), origin.port))
        .await
        .map_err(|e| {
            UpstreamError::new(
                UpstreamErrorKind::Dns,
                format!("cannot resolve {}: {e}", origin.host),
            )
        })?;
    addrs.next().ok_or_else(|| {
        UpstreamError::new(
            UpstreamErrorKind::Dns,
            format!("{} resolves to no address", origin.host),
        )
    })
}

/// A peer for `origin` at `addr`, with the agent's timeouts.
pub fn peer(addr: SocketAddr, origin: &Origin, timeouts: &Timeouts) -> HttpPeer {
    let mut peer = HttpPeer::new(addr, origin.tls, origin.host.clone());
    peer.options.connection_timeout = Some(timeouts.connect);
    peer.options.total_connection_timeout = Some(timeouts.connect);
    peer.options.read_timeout = Some(timeouts.read);
    peer.options.write_timeout = Some(timeouts.read);
    peer.options.idle_timeout = Some(Duration::from_secs(60));
    peer
}

/// What went wrong talking to an agent; `kind` is a bounded metrics label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamError {
    pub kind: UpstreamErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamErrorKind {
    Dns,
    Connect,
    Timeout,
    Reset,
    Tls,
    Protocol,
}

impl UpstreamErrorKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Dns => "dns",
            Self::Connect => "connect",
            Self::Timeout => "timeout",
            Self::Reset => "reset",
            Self::Tls => "tls",
            Self::Protocol => "protocol",
        }
    }

    /// The status a client gets: 504 for timeouts, 502 for everything else.
    pub fn http_status(self) -> u16 {
        if self == Self::Timeout {
            504
        } else {
            502
        }
    }
}

impl UpstreamError {
    pub fn new(kind: UpstreamErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn timeout(what: &str, after: Duration) -> Self {
        Self::new(
            UpstreamErrorKind::Timeout,
            format!(
                "{what} timed out after {}",
                humantime::format_duration(after)
            ),
        )
    }

    pub fn from_pingora(e: &Error) -> Self {
        use ErrorType::*;
        let kind = match e.etype() {
            ConnectTimedout | ReadTimedout | WriteTimedout | TLSHandshakeTimedout => {
                UpstreamErrorKind::Timeout
            }
            ConnectRefused | ConnectNoRoute | ConnectError | BindError | SocketError => {
                UpstreamErrorKind::Connect
            }
            TLSHandshakeFailure | InvalidCert | HandshakeError | TLSWantX509Lookup => {
                UpstreamErrorKind::Tls
            }
            ReadError | WriteError | ConnectionClosed => UpstreamErrorKind::Reset,
            _ => UpstreamErrorKind::Protocol,
        };
        let what = match kind {
            UpstreamErrorKind::Timeout => "timed out",
            UpstreamErrorKind::Connect => "connection failed",
            UpstreamErrorKind::Tls => "TLS handshake failed",
            UpstreamErrorKind::Reset => "connection lost",
            _ => "protocol error",
        };
        let detail = e
            .context
            .as_ref()
            .map(|c| c.as_str().to_string())
            .unwrap_or_else(|| e.etype().as_str().to_string());
        Self::new(kind, format!("{what} ({detail})"))
    }
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The answer to a bounded GET.
pub struct GetResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why a GET did not produce a body.
#[derive(Debug)]
pub enum GetError {
    Upstream(UpstreamError),
    TooLarge { limit: u64 },
    BadUrl(String),
}

impl std::fmt::Display for GetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GetError::Upstream(e) => e.fmt(f),
            GetError::TooLarge { limit } => write!(f, "the response is larger than {limit} bytes"),
            GetError::BadUrl(url) => write!(f, "{url:?} is not an absolute http(s) URL"),
        }
    }
}

/// GET `url`, reading at most `max_bytes` of body, within the timeouts
/// (`connect` to connect, `read` for the whole response).
pub async fn get(
    connector: &Connector,
    url: &str,
    timeouts: &Timeouts,
    max_bytes: u64,
) -> Result<GetResponse, GetError> {
    let parsed = parse_http_url(url).ok_or_else(|| GetError::BadUrl(url.to_string()))?;
    let addr = resolve(&parsed.origin).await.map_err(GetError::Upstream)?;
    let peer = peer(addr, &parsed.origin, timeouts);
    let budget = timeouts.connect + timeouts.read;
    let exchange = async {
        let up = |e: Box<Error>| GetError::Upstream(UpstreamError::from_pingora(&e));
        let (mut session, _) = connector.get_http_session(&peer).await.map_err(up)?;
        let target = format!("{}{}", parsed.path, parsed.query);
        let mut req = RequestHeader::build("GET", target.as_bytes(), None).map_err(up)?;
        req.insert_header("host", parsed.origin.authority())
            .map_err(up)?;
        req.insert_header("accept", "application/json")
            .map_err(up)?;
        req.insert_header(
            "user-agent",
            concat!("cardgate/", env!("CARGO_PKG_VERSION")),
        )
        .map_err(up)?;
        session
            .write_request_header(Box::new(req))
            .await
            .map_err(up)?;
        session.finish_request_body().await.map_err(up)?;
        session.read_response_header().await.map_err(up)?;
        let status = session
            .response_header()
            .map(|h| h.status.as_u16())
            .unwrap_or(0);
        let mut body = Vec::new();
        while let Some(chunk) = session.read_response_body().await.map_err(up)? {
            if (body.len() + chunk.len()) as u64 > max_bytes {
                return Err(GetError::TooLarge { limit: max_bytes });
            }
            body.extend_from_slice(&chunk);
        }
        connector
            .release_http_session(session, &peer, Some(Duration::from_secs(30)))
            .await;
        Ok(GetResponse { status, body })
    };
    match tokio::time::timeout(budget, exchange).await {
        Ok(result) => result,
        Err(_) => Err(GetError::Upstream(UpstreamError::timeout(
            &format!("GET {url}"),
            budget,
        ))),
    }
}

/// `get` for command-line use: its own small runtime and connector, default timeouts.
pub fn get_blocking(url: &str, max_bytes: u64) -> Result<GetResponse, GetError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            GetError::Upstream(UpstreamError::new(
                UpstreamErrorKind::Protocol,
                e.to_string(),
            ))
        })?;
    runtime.block_on(get(
        &Connector::new(None),
        url,
        &Timeouts::default(),
        max_bytes,
    ))
}
