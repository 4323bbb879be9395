//! What a card advertises beyond its limits, compiled once per card: protocol versions,
//! bindings per endpoint, required extensions, streaming and push notifications.

use serde_json::Value;

use super::rewrite::{parse_http_url, RouteTable};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
    Other,
}

/// One interface, located by its path under `/agents/{id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub gateway_path: String,
    pub binding: Binding,
    /// `Major.Minor`, when the card says.
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    pub interfaces: Vec<Interface>,
    /// Every `Major.Minor` protocol version the card offers; empty when it says none.
    pub versions: Vec<String>,
    pub required_extensions: Vec<String>,
    /// `Some(false)` only when the card says so explicitly.
    pub streaming: Option<bool>,
    pub push_notifications: Option<bool>,
}

/// `1.0.2` → `1.0`; `0.3` → `0.3`; anything else as written.
pub fn major_minor(version: &str) -> String {
    let mut parts = version.trim().splitn(3, '.');
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => format!("{major}.{minor}"),
        _ => version.trim().to_string(),
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn binding(name: Option<&str>) -> Binding {
    match name.map(str::to_ascii_uppercase).as_deref() {
        Some("JSONRPC") | None => Binding::JsonRpc,
        Some("HTTP+JSON") | Some("REST") => Binding::Rest,
        _ => Binding::Other,
    }
}

impl Capabilities {
    pub fn from_card(card: &Value, routes: &RouteTable) -> Self {
        let mut caps = Capabilities::default();
        let mut add = |url: Option<&str>, binding_name: Option<&str>, version: Option<&str>| {
            let Some(path) = url
                .and_then(parse_http_url)
                .and_then(|u| routes.known_gateway_path(&u))
            else {
                return;
            };
            let version = version.map(major_minor);
            if let Some(v) = &version {
                if !caps.versions.contains(v) {
                    caps.versions.push(v.clone());
                }
            }
            caps.interfaces.push(Interface {
                gateway_path: path.split('?').next().unwrap_or("").to_string(),
                binding: binding(binding_name),
                version,
            });
        };
        for i in card
            .get("supportedInterfaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add(
                str_at(i, "url"),
                str_at(i, "protocolBinding"),
                str_at(i, "protocolVersion"),
            );
        }
        // v0.3 shape: `url` + `preferredTransport`, `additionalInterfaces`, top-level `protocolVersion`.
        let v03_version = str_at(card, "protocolVersion").or(card.get("url").map(|_| "0.3"));
        add(
            str_at(card, "url"),
            str_at(card, "preferredTransport"),
            v03_version,
        );
        for i in card
            .get("additionalInterfaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add(str_at(i, "url"), str_at(i, "transport"), v03_version);
        }
        let capabilities = card.get("capabilities");
        let flag = |key: &str| {
            capabilities
                .and_then(|c| c.get(key))
                .and_then(Value::as_bool)
        };
        caps.streaming = flag("streaming");
        caps.push_notifications = flag("pushNotifications");
        for ext in capabilities
            .and_then(|c| c.get("extensions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if ext.get("required").and_then(Value::as_bool) == Some(true) {
                if let Some(uri) = str_at(ext, "uri") {
                    caps.required_extensions.push(uri.to_string());
                }
            }
        }
        caps
    }

    /// The binding of the interface a request path (under `/agents/{id}`, no query) is
    /// for: the one with the longest matching path; JSON-RPC when none matches.
    pub fn binding_for(&self, rest: &str) -> Binding {
        self.interfaces
            .iter()
            .filter(|i| {
                let base = i.gateway_path.trim_end_matches('/');
                rest.strip_prefix(base)
                    .is_some_and(|tail| tail.is_empty() || tail.starts_with('/'))
            })
            .max_by_key(|i| i.gateway_path.trim_end_matches('/').len())
            .map(|i| i.binding)
            .unwrap_or(Binding::JsonRpc)
    }

    /// Whether the card offers `version` (`Major.Minor`); a card that names no version
    /// offers any.
    pub fn offers_version(&self, version: &str) -> bool {
        self.versions.is_empty() || self.versions.iter().any(|v| *v == major_minor(version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hybrid_card_facts() {
        let routes = RouteTable::new(&parse_http_url("http://h:1").unwrap());
        let card = json!({
            "url": "http://h:1/", "protocolVersion": "0.3", "preferredTransport": "JSONRPC",
            "supportedInterfaces": [
                {"url": "http://h:1/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "http://h:1/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": false, "extensions": [
                {"uri": "urn:a", "required": true}, {"uri": "urn:b", "required": false}]}
        });
        let caps = Capabilities::from_card(&card, &routes);
        assert_eq!(caps.versions, vec!["1.0", "0.3"]);
        assert!(caps.offers_version("1.0.1"));
        assert!(!caps.offers_version("2.0"));
        assert_eq!(caps.required_extensions, vec!["urn:a"]);
        assert_eq!(caps.streaming, Some(false));
        assert_eq!(caps.push_notifications, None);
        assert_eq!(caps.binding_for("/rest/message:send"), Binding::Rest);
        assert_eq!(caps.binding_for("/"), Binding::JsonRpc);
        assert_eq!(caps.binding_for(""), Binding::JsonRpc);
        assert_eq!(caps.binding_for("/restless"), Binding::JsonRpc);
    }

    #[test]
    fn a_card_without_versions_offers_any() {
        let routes = RouteTable::new(&parse_http_url("http://h:1").unwrap());
        let caps = Capabilities::from_card(&json!({"name": "x"}), &routes);
        assert!(caps.offers_version("1.0"));
    }
}
