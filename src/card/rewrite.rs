//! Rewriting a card so that every endpoint URL points at the gateway, and the route table
//! that maps each rewritten URL back to exactly the upstream URL it replaced.
//!
//! The rewritten card is serialized once per fetch into a [`CardTemplate`]: literal bytes
//! with holes where the gateway's public base goes. With `public_url` configured the base is
//! fixed and the bytes are rendered once; otherwise the base comes from each request's
//! `Host`/`X-Forwarded-*` headers and rendering is a few copies.
//!
//! Rewritten: `url`, `additionalInterfaces[].url`, `supportedInterfaces[].url`.
//! Untouched: identifiers (`extensions[].uri`), `provider.url`, documentation and icon URLs,
//! identity-provider URLs, and anything that is not an absolute http(s) URL (a gRPC
//! `host:port` stays as it is: the gateway does not proxy gRPC).

use serde_json::Value;

/// An upstream origin: scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// `host[:port]`, made once: every forwarded request needs it.
    authority: String,
}

impl Origin {
    pub fn new(tls: bool, host: String, port: u16) -> Self {
        let authority = Self::make_authority(tls, &host, port);
        Origin {
            tls,
            host,
            port,
            authority,
        }
    }

    /// `host:port` as used for `Host` headers and socket addresses (IPv6 in brackets; the
    /// port left out when it is the scheme's default).
    pub fn authority(&self) -> &str {
        &self.authority
    }

    fn make_authority(tls: bool, host: &str, port: u16) -> String {
        let default_port = if tls { 443 } else { 80 };
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        if port == default_port {
            host
        } else {
            format!("{host}:{port}")
        }
    }

    pub fn socket_authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// An absolute http(s) URL split into origin, path and query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    pub origin: Origin,
    /// Always starts with `/`.
    pub path: String,
    /// Including the leading `?`, or empty.
    pub query: String,
}

pub fn parse_http_url(url: &str) -> Option<ParsedUrl> {
    let uri: http::Uri = url.parse().ok()?;
    let tls = match uri.scheme_str()? {
        "http" => false,
        "https" => true,
        _ => return None,
    };
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return None;
    }
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let path = match uri.path() {
        "" => "/".to_string(),
        p => p.to_string(),
    };
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Some(ParsedUrl {
        origin: Origin::new(tls, host.to_ascii_lowercase(), port),
        path,
        query,
    })
}

/// Where requests under a gateway path prefix go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Path under `/agents/{id}` that selects this route: `""` for the agent's own
    /// upstream, `/_route/{n}` for interfaces on other origins.
    pub prefix: String,
    pub origin: Origin,
    /// Upstream path the rest of the request path is appended to (no trailing slash).
    pub base_path: String,
}

/// Per-agent routes, built from the configured upstream and the card's interface URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteTable {
    routes: Vec<Route>,
}

/// Prefix of the extra routes for interfaces that live on another origin.
const ROUTE_SEGMENT: &str = "/_route/";

impl RouteTable {
    /// A table with only the agent's own upstream (`upstream` is an absolute http(s) URL).
    pub fn new(upstream: &ParsedUrl) -> Self {
        Self {
            routes: vec![Route {
                prefix: String::new(),
                origin: upstream.origin.clone(),
                base_path: upstream.path.trim_end_matches('/').to_string(),
            }],
        }
    }

    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The gateway-relative path (under `/agents/{id}`) for an upstream URL whose origin
    /// the table already routes.
    pub fn known_gateway_path(&self, url: &ParsedUrl) -> Option<String> {
        let own = &self.routes[0];
        if url.origin == own.origin {
            if let Some(rest) = strip_path_prefix(&url.path, &own.base_path) {
                return Some(format!("{rest}{}", url.query));
            }
        }
        let route = self
            .routes
            .iter()
            .skip(1)
            .find(|r| r.origin == url.origin)?;
        Some(format!("{}{}{}", route.prefix, url.path, url.query))
    }

    /// Like `known_gateway_path`, adding a route when the URL is on a new origin.
    fn gateway_path_for(&mut self, url: &ParsedUrl) -> String {
        if let Some(path) = self.known_gateway_path(url) {
            return path;
        }
        let prefix = format!("{ROUTE_SEGMENT}{}", self.routes.len());
        let path = format!("{prefix}{}{}", url.path, url.query);
        self.routes.push(Route {
            prefix,
            origin: url.origin.clone(),
            base_path: String::new(),
        });
        path
    }

    /// The upstream URL an already-rewritten-card URL would map back to (for tests and
    /// the admin view): the inverse of the rewrite.
    pub fn upstream_url(&self, gateway_path: &str) -> Option<String> {
        let (_, route, path) = self.resolve(gateway_path)?;
        let scheme = if route.origin.tls { "https" } else { "http" };
        Some(format!("{scheme}://{}{path}", route.origin.authority()))
    }

    /// Map the request path under `/agents/{id}` (may be empty) to a route (with its index)
    /// and the upstream path (query included if `rest` has one).
    pub fn resolve<'a>(&'a self, rest: &str) -> Option<(usize, &'a Route, String)> {
        if let Some(after) = rest.strip_prefix(ROUTE_SEGMENT) {
            let end = after.find(['/', '?']).unwrap_or(after.len());
            let n: usize = after[..end].parse().ok()?;
            let route = self.routes.get(n).filter(|_| n > 0)?;
            let tail = &after[end..];
            let path = if tail.is_empty() || tail.starts_with('?') {
                format!("/{tail}")
            } else {
                tail.to_string()
            };
            return Some((n, route, path));
        }
        let route = &self.routes[0];
        let path = format!("{}{}", route.base_path, rest);
        let path = if path.is_empty() || path.starts_with('?') {
            format!("/{path}")
        } else {
            path
        };
        Some((0, route, path))
    }
}

/// `path` with `prefix` removed, if `prefix` is a whole-segment prefix of it.
fn strip_path_prefix<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// Marks where the gateway's public base goes in the serialized card. Control characters
/// are escaped by serde_json, so the marker appears in the output as `\u0001cg\u0001`.
const BASE_MARKER: &str = "\u{1}cg\u{1}";
const BASE_MARKER_JSON: &[u8] = b"\\u0001cg\\u0001";

/// A serialized card with holes for the public base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardTemplate {
    pieces: Vec<Vec<u8>>,
}

impl CardTemplate {
    /// A card served as it is (no holes).
    pub fn verbatim(bytes: Vec<u8>) -> Self {
        Self {
            pieces: vec![bytes],
        }
    }

    /// The card with `base` (e.g. `https://gw.example.com`, no trailing slash) filled in.
    /// `base` must be a plain URL prefix; it is JSON-escaped here all the same.
    pub fn render(&self, base: &str) -> Vec<u8> {
        let escaped = serde_json::to_string(base).unwrap_or_default();
        let escaped = escaped.as_bytes();
        let escaped = &escaped[1..escaped.len().saturating_sub(1).max(1)];
        let holes = self.pieces.len() - 1;
        let mut out = Vec::with_capacity(
            self.pieces.iter().map(Vec::len).sum::<usize>() + holes * escaped.len(),
        );
        for (i, piece) in self.pieces.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(escaped);
            }
            out.extend_from_slice(piece);
        }
        out
    }

    pub fn has_holes(&self) -> bool {
        self.pieces.len() > 1
    }
}

/// What rewriting a card produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewritten {
    pub template: CardTemplate,
    pub routes: RouteTable,
    /// Upstream signatures were dropped (they would not verify over the rewritten card).
    pub dropped_signatures: bool,
    /// Endpoint URLs that were left alone (not absolute http(s)), as JSON paths.
    pub untouched: Vec<String>,
}

/// Rewrite every endpoint URL of `card` to `{base}/agents/{agent_id}{path}`.
/// `edit` may change the card further before it is serialized (effective constraints).
pub fn rewrite_card(
    card: &Value,
    agent_id: &str,
    routes: RouteTable,
    edit: impl FnOnce(&mut Value),
) -> Rewritten {
    let mut card = card.clone();
    let mut routes = routes;
    let mut untouched = Vec::new();
    let dropped_signatures = card
        .as_object_mut()
        .and_then(|o| o.remove("signatures"))
        .is_some();
    rewrite_endpoint_urls(&mut card, |path, url| match parse_http_url(url) {
        Some(parsed) => Some(format!(
            "{BASE_MARKER}/agents/{agent_id}{}",
            routes.gateway_path_for(&parsed)
        )),
        None => {
            untouched.push(path.to_string());
            None
        }
    });
    edit(&mut card);
    let bytes = serde_json::to_vec(&card).unwrap_or_default();
    Rewritten {
        template: split_on_marker(bytes),
        routes,
        dropped_signatures,
        untouched,
    }
}

/// Route-only pass for cards served verbatim: learn the routes, change nothing.
pub fn routes_of(card: &Value, mut routes: RouteTable) -> RouteTable {
    let mut card = card.clone();
    rewrite_endpoint_urls(&mut card, |_, url| {
        if let Some(parsed) = parse_http_url(url) {
            routes.gateway_path_for(&parsed);
        }
        None
    });
    routes
}

/// Rewrite URLs in a card the agent returned (the extended card) with an existing route
/// table, rendered for `base`. Only URLs on origins the table routes are rewritten: only
/// those can be routed back.
pub fn rewrite_with_known_routes(
    card: &mut Value,
    agent_id: &str,
    routes: &RouteTable,
    base: &str,
) {
    if let Some(obj) = card.as_object_mut() {
        obj.remove("signatures");
    }
    rewrite_endpoint_urls(card, |_, url| {
        let path = routes.known_gateway_path(&parse_http_url(url)?)?;
        Some(format!("{base}/agents/{agent_id}{path}"))
    });
}

/// Calls `f(json_path, url)` for each endpoint URL; a `Some` return replaces it.
fn rewrite_endpoint_urls(card: &mut Value, mut f: impl FnMut(&str, &str) -> Option<String>) {
    let Some(obj) = card.as_object_mut() else {
        return;
    };
    if let Some(Value::String(url)) = obj.get_mut("url") {
        if let Some(new) = f("url", url) {
            *url = new;
        }
    }
    for list in ["additionalInterfaces", "supportedInterfaces"] {
        if let Some(Value::Array(items)) = obj.get_mut(list) {
            for (i, item) in items.iter_mut().enumerate() {
                if let Some(Value::String(url)) = item.get_mut("url") {
                    if let Some(new) = f(&format!("{list}[{i}].url"), url) {
                        *url = new;
                    }
                }
            }
        }
    }
}

fn split_on_marker(bytes: Vec<u8>) -> CardTemplate {
    let finder = memchr::memmem::Finder::new(BASE_MARKER_JSON);
    let mut pieces = Vec::new();
    let mut start = 0;
    for at in finder.find_iter(&bytes) {
        pieces.push(bytes[start..at].to_vec());
        start = at + BASE_MARKER_JSON.len();
    }
    pieces.push(bytes[start..].to_vec());
    CardTemplate { pieces }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(upstream: &str) -> RouteTable {
        RouteTable::new(&parse_http_url(upstream).unwrap())
    }

    #[test]
    fn hybrid_card_urls_all_point_at_the_gateway() {
        let card = json!({
            "name": "x",
            "url": "http://10.0.0.5:9999/",
            "additionalInterfaces": [{"url": "http://10.0.0.5:9999/", "transport": "JSONRPC"}],
            "supportedInterfaces": [
                {"url": "http://10.0.0.5:9999/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "http://10.0.0.5:9999/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
                {"url": "https://other.example:8443/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "grpc.example:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
            ],
            "provider": {"url": "http://10.0.0.5:9999/about", "organization": "o"},
            "documentationUrl": "http://10.0.0.5:9999/docs",
            "capabilities": {"extensions": [{"uri": "http://10.0.0.5:9999/ext"}]},
            "signatures": [{"protected": "x", "signature": "y"}],
            "somethingNew": {"kept": true}
        });
        let out = rewrite_card(&card, "demo", table("http://10.0.0.5:9999"), |_| {});
        assert!(out.dropped_signatures);
        assert_eq!(out.untouched, vec!["supportedInterfaces[3].url"]);
        let served: Value =
            serde_json::from_slice(&out.template.render("https://gw.example")).unwrap();
        assert_eq!(served["url"], "https://gw.example/agents/demo/");
        assert_eq!(
            served["additionalInterfaces"][0]["url"],
            "https://gw.example/agents/demo/"
        );
        assert_eq!(
            served["supportedInterfaces"][1]["url"],
            "https://gw.example/agents/demo/rest"
        );
        assert_eq!(
            served["supportedInterfaces"][2]["url"],
            "https://gw.example/agents/demo/_route/1/a2a/v1"
        );
        assert_eq!(
            served["supportedInterfaces"][3]["url"],
            "grpc.example:50051"
        );
        assert_eq!(served["provider"]["url"], "http://10.0.0.5:9999/about");
        assert_eq!(served["documentationUrl"], "http://10.0.0.5:9999/docs");
        assert_eq!(
            served["capabilities"]["extensions"][0]["uri"],
            "http://10.0.0.5:9999/ext"
        );
        assert_eq!(served["somethingNew"]["kept"], true);
        assert!(served.get("signatures").is_none());

        // Each rewritten URL maps back to exactly the URL it replaced.
        let back = |gw: &str| {
            let rest = gw.strip_prefix("https://gw.example/agents/demo").unwrap();
            out.routes.upstream_url(rest).unwrap()
        };
        assert_eq!(
            back(served["url"].as_str().unwrap()),
            "http://10.0.0.5:9999/"
        );
        assert_eq!(
            back(served["supportedInterfaces"][1]["url"].as_str().unwrap()),
            "http://10.0.0.5:9999/rest"
        );
        assert_eq!(
            back(served["supportedInterfaces"][2]["url"].as_str().unwrap()),
            "https://other.example:8443/a2a/v1"
        );
    }

    #[test]
    fn upstream_with_a_path_prefix_maps_back_under_it() {
        let card = json!({"url": "http://h:1/a2a/jsonrpc", "supportedInterfaces": [{"url": "http://h:1/other"}]});
        let out = rewrite_card(&card, "a", table("http://h:1/a2a"), |_| {});
        let served: Value = serde_json::from_slice(&out.template.render("http://gw")).unwrap();
        assert_eq!(served["url"], "http://gw/agents/a/jsonrpc");
        // Same origin but outside the configured path: its own route keeps the path exact.
        assert_eq!(
            served["supportedInterfaces"][0]["url"],
            "http://gw/agents/a/_route/1/other"
        );
        assert_eq!(
            out.routes.upstream_url("/jsonrpc").unwrap(),
            "http://h:1/a2a/jsonrpc"
        );
        assert_eq!(
            out.routes.upstream_url("/_route/1/other").unwrap(),
            "http://h:1/other"
        );
    }

    #[test]
    fn resolve_keeps_queries_and_rejects_unknown_routes() {
        let t = table("http://h:1");
        assert_eq!(t.resolve("").unwrap().2, "/");
        assert_eq!(
            t.resolve("?A2A-Version=1.0").unwrap().2,
            "/?A2A-Version=1.0"
        );
        assert_eq!(t.resolve("/v1/message:send").unwrap().2, "/v1/message:send");
        assert!(t.resolve("/_route/7/x").is_none());
        assert!(t.resolve("/_route/0/x").is_none());
    }

    #[test]
    fn base_is_escaped_into_the_json() {
        let out = rewrite_card(&json!({"url": "http://h/"}), "a", table("http://h"), |_| {});
        let bytes = out.template.render("http://gw\"x");
        let served: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(served["url"], "http://gw\"x/agents/a/");
    }
}
