//! `gateway.yaml` → a typed, validated [`Config`].
//!
//! Parsing happens in two steps: serde reads the file into `Raw*` structs that reject
//! unknown keys (the YAML parser names the key and its line), then [`Config::from_raw`]
//! checks values and fills in defaults, naming the offending key in every error.
//! Every limit, timeout and size the gateway uses lives here, not as literals elsewhere.

use std::collections::HashSet;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use http::Uri;
use serde::Deserialize;

use crate::card::constraints::InputConstraints;
use crate::card::FieldIssue;
use crate::scan::ScanOptions;

/// A config that could not be loaded, with a message naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

fn err(key: &str, message: impl fmt::Display) -> ConfigError {
    ConfigError(format!("{key}: {message}"))
}

/// The whole gateway configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    /// Base written into rewritten cards; `None` derives it from each request's headers.
    pub public_url: Option<String>,
    pub log: LogConfig,
    pub limits: Limits,
    pub shutdown_grace: Duration,
    /// How often the config file is checked for changes (SIGHUP reloads at once).
    pub reload_poll: Duration,
    /// Worker threads for the public listener; `None` = one per CPU.
    pub threads: Option<usize>,
    pub agents: Vec<AgentConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    pub level: String,
    pub format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Gateway-wide limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Request body bytes all requests together may hold in memory.
    pub inflight_body_bytes: u64,
    /// Largest agent card (or extended card response) the gateway reads.
    pub max_card_bytes: u64,
    /// After an early rejection: how long and how much of the rest of the upload is read
    /// and discarded before closing, so the client sees the answer rather than a reset.
    pub linger_time: Duration,
    pub linger_bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    pub id: String,
    pub upstream: Upstream,
    /// Overrides `{upstream}/.well-known/agent-card.json` (and the agent.json fallback).
    pub card_url: Option<String>,
    pub card_ttl: Duration,
    /// How long past its TTL a card may still be served while refreshes fail.
    pub max_stale: Duration,
    /// Delay before retrying a failed card fetch.
    pub retry_interval: Duration,
    pub signatures: SignaturePolicy,
    pub timeouts: Timeouts,
    pub body: BodyMode,
    /// Largest request body accepted when nothing stricter applies.
    pub max_body_bytes: u64,
    /// Longest time a client may take to send its whole body (slow clients get 408).
    pub body_read_timeout: Duration,
    /// Operator limits; the stricter of these and the card's applies.
    pub constraints: Option<InputConstraints>,
    pub enforce: Enforce,
    pub scan: ScanOptions,
}

/// Where an agent lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// An agent reached over HTTP(S); `base` has no trailing slash.
    Http { base: String },
    /// The demo agent built into the binary, started in-process on a loopback port.
    BuiltinDemo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignaturePolicy {
    /// Rewrite the card and drop `signatures` (they would no longer verify).
    Drop,
    /// Serve the upstream card byte for byte, without rewriting.
    Passthrough,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyMode {
    /// Read and scan the whole body before the agent is contacted.
    Strict,
    /// Forward while scanning; a rejected body reaches the agent as an aborted request.
    Stream,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    /// Longest silence while waiting for the agent's response header or body.
    pub read: Duration,
    /// Longest whole exchange for a non-streaming response.
    pub total: Duration,
    /// Longest silence on an SSE stream (streams have no total limit).
    pub stream_idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        DEFAULT_TIMEOUTS
    }
}

/// Which checks run for an agent. All on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Enforce {
    pub files: bool,
    pub media_types: bool,
    pub text: bool,
    pub capabilities: bool,
    pub versions: bool,
    pub extensions: bool,
}

impl Default for Enforce {
    fn default() -> Self {
        Self {
            files: true,
            media_types: true,
            text: true,
            capabilities: true,
            versions: true,
            extensions: true,
        }
    }
}

// ---- raw shapes, as written in YAML ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    listen: Option<String>,
    admin_listen: Option<String>,
    public_url: Option<String>,
    #[serde(default)]
    log: RawLog,
    #[serde(default)]
    limits: RawLimits,
    shutdown_grace: Option<String>,
    reload_poll: Option<String>,
    threads: Option<usize>,
    #[serde(default)]
    agents: Vec<RawAgent>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLog {
    level: Option<String>,
    format: Option<LogFormat>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    inflight_body_bytes: Option<RawSize>,
    max_card_bytes: Option<RawSize>,
    linger_time: Option<String>,
    linger_bytes: Option<RawSize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    id: String,
    upstream: String,
    card_url: Option<String>,
    card_ttl: Option<String>,
    max_stale: Option<String>,
    retry_interval: Option<String>,
    signatures: Option<SignaturePolicy>,
    #[serde(default)]
    timeouts: RawTimeouts,
    body: Option<BodyMode>,
    max_body_bytes: Option<RawSize>,
    body_read_timeout: Option<String>,
    constraints: Option<serde_json::Value>,
    #[serde(default)]
    enforce: Enforce,
    #[serde(default)]
    scan: ScanOptions,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTimeouts {
    connect: Option<String>,
    read: Option<String>,
    total: Option<String>,
    stream_idle: Option<String>,
}

/// A size written as a number of bytes or a string with a unit (`64MiB`, `512 KB`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawSize {
    Bytes(u64),
    Text(String),
}

// Defaults, documented in gateway.yaml and the README.
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:9090";
const DEFAULT_CARD_TTL: Duration = Duration::from_secs(300);
const DEFAULT_MAX_STALE: Duration = Duration::from_secs(3600);
const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(10);
const DEFAULT_MAX_BODY: u64 = 64 << 20;
const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_INFLIGHT_BODY_BYTES: u64 = 1 << 30;
const DEFAULT_MAX_CARD_BYTES: u64 = 1 << 20;
const DEFAULT_LINGER_TIME: Duration = Duration::from_secs(2);
const DEFAULT_LINGER_BYTES: u64 = 64 << 20;
const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
const DEFAULT_RELOAD_POLL: Duration = Duration::from_secs(2);
const DEFAULT_TIMEOUTS: Timeouts = Timeouts {
    connect: Duration::from_secs(5),
    read: Duration::from_secs(60),
    total: Duration::from_secs(300),
    stream_idle: Duration::from_secs(600),
};

/// The path segment used for agents that are never valid ids.
const AGENT_ID_RULE: &str = "1 to 64 characters from a-z, A-Z, 0-9, '-', '_' and '.'";

impl Config {
    /// Read and validate a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
        Self::parse(&text).map_err(|e| ConfigError(format!("{}: {}", path.display(), e.0)))
    }

    /// Parse and validate config text.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let raw: RawConfig =
            serde_saphyr::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
        Self::from_raw(raw)
    }

    fn from_raw(raw: RawConfig) -> Result<Config, ConfigError> {
        let listen = socket_addr("listen", raw.listen.as_deref().unwrap_or(DEFAULT_LISTEN))?;
        let admin_listen = socket_addr(
            "admin_listen",
            raw.admin_listen.as_deref().unwrap_or(DEFAULT_ADMIN_LISTEN),
        )?;
        let public_url = raw
            .public_url
            .map(|u| http_base("public_url", &u))
            .transpose()?;
        let log = LogConfig {
            level: raw.log.level.unwrap_or_else(|| "info".to_string()),
            format: raw.log.format.unwrap_or(LogFormat::Text),
        };
        let limits = Limits {
            inflight_body_bytes: size_or(
                "limits.inflight_body_bytes",
                raw.limits.inflight_body_bytes,
                DEFAULT_INFLIGHT_BODY_BYTES,
            )?,
            max_card_bytes: size_or(
                "limits.max_card_bytes",
                raw.limits.max_card_bytes,
                DEFAULT_MAX_CARD_BYTES,
            )?,
            linger_time: duration_or(
                "limits.linger_time",
                raw.limits.linger_time,
                DEFAULT_LINGER_TIME,
            )?,
            linger_bytes: size_or(
                "limits.linger_bytes",
                raw.limits.linger_bytes,
                DEFAULT_LINGER_BYTES,
            )?,
        };
        let shutdown_grace =
            duration_or("shutdown_grace", raw.shutdown_grace, DEFAULT_SHUTDOWN_GRACE)?;
        let reload_poll = duration_or("reload_poll", raw.reload_poll, DEFAULT_RELOAD_POLL)?;
        if raw.threads == Some(0) {
            return Err(err("threads", "must be at least 1"));
        }

        let mut seen = HashSet::new();
        let mut agents = Vec::with_capacity(raw.agents.len());
        for (i, raw_agent) in raw.agents.into_iter().enumerate() {
            let agent = AgentConfig::from_raw(i, raw_agent)?;
            if !seen.insert(agent.id.clone()) {
                return Err(err(
                    &format!("agents[{i}].id"),
                    format!("duplicate agent id {:?}", agent.id),
                ));
            }
            agents.push(agent);
        }

        Ok(Config {
            listen,
            admin_listen,
            public_url,
            log,
            limits,
            shutdown_grace,
            reload_poll,
            threads: raw.threads,
            agents,
        })
    }

    pub fn agent(&self, id: &str) -> Option<&AgentConfig> {
        self.agents.iter().find(|a| a.id == id)
    }
}

impl AgentConfig {
    fn from_raw(i: usize, raw: RawAgent) -> Result<AgentConfig, ConfigError> {
        let key = |field: &str| format!("agents[{i}].{field}");
        if !valid_agent_id(&raw.id) {
            return Err(err(
                &key("id"),
                format!("{:?} is not a valid agent id ({AGENT_ID_RULE})", raw.id),
            ));
        }
        let upstream = if raw.upstream == "builtin:demo" {
            Upstream::BuiltinDemo
        } else {
            Upstream::Http {
                base: http_base(&key("upstream"), &raw.upstream)?,
            }
        };
        let card_url = raw
            .card_url
            .map(|u| http_url(&key("card_url"), &u).map(|_| u))
            .transpose()?;
        let constraints = match raw.constraints {
            None => None,
            Some(value) => {
                let (parsed, issues) = InputConstraints::parse(&value, &key("constraints"));
                if let Some(first) = issues.first() {
                    return Err(constraint_error(first, issues.len()));
                }
                Some(parsed)
            }
        };
        let t = raw.timeouts;
        let timeouts = Timeouts {
            connect: duration_or(
                &key("timeouts.connect"),
                t.connect,
                DEFAULT_TIMEOUTS.connect,
            )?,
            read: duration_or(&key("timeouts.read"), t.read, DEFAULT_TIMEOUTS.read)?,
            total: duration_or(&key("timeouts.total"), t.total, DEFAULT_TIMEOUTS.total)?,
            stream_idle: duration_or(
                &key("timeouts.stream_idle"),
                t.stream_idle,
                DEFAULT_TIMEOUTS.stream_idle,
            )?,
        };
        Ok(AgentConfig {
            upstream,
            card_url,
            card_ttl: duration_or(&key("card_ttl"), raw.card_ttl, DEFAULT_CARD_TTL)?,
            max_stale: duration_or(&key("max_stale"), raw.max_stale, DEFAULT_MAX_STALE)?,
            retry_interval: duration_or(
                &key("retry_interval"),
                raw.retry_interval,
                DEFAULT_RETRY_INTERVAL,
            )?,
            signatures: raw.signatures.unwrap_or(SignaturePolicy::Drop),
            timeouts,
            body: raw.body.unwrap_or(BodyMode::Strict),
            max_body_bytes: size_or(&key("max_body_bytes"), raw.max_body_bytes, DEFAULT_MAX_BODY)?,
            body_read_timeout: duration_or(
                &key("body_read_timeout"),
                raw.body_read_timeout,
                DEFAULT_BODY_READ_TIMEOUT,
            )?,
            constraints,
            enforce: raw.enforce,
            scan: raw.scan,
            id: raw.id,
        })
    }
}

fn constraint_error(first: &FieldIssue, count: usize) -> ConfigError {
    let more = if count > 1 {
        format!(" (and {} more)", count - 1)
    } else {
        String::new()
    };
    ConfigError(format!("{first}{more}"))
}

fn valid_agent_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && id != "."
        && id != ".."
}

fn socket_addr(key: &str, value: &str) -> Result<SocketAddr, ConfigError> {
    value.parse().map_err(|_| {
        err(
            key,
            format!("{value:?} is not an IP address with a port, like 127.0.0.1:8080"),
        )
    })
}

/// An absolute http(s) URL, returned without a trailing slash.
fn http_base(key: &str, value: &str) -> Result<String, ConfigError> {
    http_url(key, value)?;
    Ok(value.trim_end_matches('/').to_string())
}

fn http_url(key: &str, value: &str) -> Result<Uri, ConfigError> {
    let uri: Uri = value
        .parse()
        .map_err(|e| err(key, format!("{value:?} is not a URL: {e}")))?;
    match uri.scheme_str() {
        Some("http") | Some("https") if uri.host().is_some() => Ok(uri),
        _ => Err(err(
            key,
            format!("{value:?} must be an absolute http:// or https:// URL"),
        )),
    }
}

fn duration_or(
    key: &str,
    value: Option<String>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    match value {
        None => Ok(default),
        Some(text) => humantime::parse_duration(text.trim()).map_err(|e| {
            err(
                key,
                format!("{text:?} is not a duration like 30s, 5m or 1h ({e})"),
            )
        }),
    }
}

fn size_or(key: &str, value: Option<RawSize>, default: u64) -> Result<u64, ConfigError> {
    match value {
        None => Ok(default),
        Some(RawSize::Bytes(n)) => Ok(n),
        Some(RawSize::Text(text)) => parse_size(&text).ok_or_else(|| {
            err(
                key,
                format!("{text:?} is not a size like 1048576, 512KiB, 64MiB or 1GB"),
            )
        }),
    }
}

/// `123`, `64MiB`, `512 KB`, `1GiB`: binary (KiB) and decimal (KB) units.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_config_gets_defaults() {
        let c =
            Config::parse("agents:\n  - id: echo\n    upstream: http://127.0.0.1:9999/\n").unwrap();
        assert_eq!(c.listen, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(c.admin_listen, "127.0.0.1:9090".parse().unwrap());
        let a = &c.agents[0];
        assert_eq!(
            a.upstream,
            Upstream::Http {
                base: "http://127.0.0.1:9999".into()
            }
        );
        assert_eq!(a.card_ttl, Duration::from_secs(300));
        assert_eq!(a.body, BodyMode::Strict);
        assert_eq!(a.signatures, SignaturePolicy::Drop);
    }

    #[test]
    fn unknown_key_is_named_with_its_line() {
        let e = Config::parse("listen: 127.0.0.1:8080\nagents:\n  - id: a\n    upstream: http://x\n    card_tll: 5s\n")
            .unwrap_err();
        assert!(e.0.contains("card_tll"), "{e}");
        assert!(e.0.contains('5'), "line number expected: {e}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases = [
            ("listen: nowhere\n", "listen"),
            ("agents:\n  - id: a\n    upstream: ftp://x\n", "agents[0].upstream"),
            ("agents:\n  - id: a/b\n    upstream: http://x\n", "agents[0].id"),
            ("agents:\n  - id: a\n    upstream: http://x\n    card_ttl: soon\n", "agents[0].card_ttl"),
            ("agents:\n  - id: a\n    upstream: http://x\n    max_body_bytes: lots\n", "agents[0].max_body_bytes"),
            ("agents:\n  - id: a\n    upstream: http://x\n  - id: a\n    upstream: http://y\n", "agents[1].id"),
            ("agents:\n  - id: a\n    upstream: http://x\n    constraints:\n      files:\n        maxSizePerFileBytes: -1\n", "agents[0].constraints.files.maxSizePerFileBytes"),
        ];
        for (text, key) in cases {
            let e = Config::parse(text).unwrap_err();
            assert!(e.0.contains(key), "{key} not named in: {e}");
        }
    }

    #[test]
    fn the_shipped_gateway_yaml_is_valid_and_runs_the_demo() {
        let c = Config::parse(include_str!("../gateway.yaml")).unwrap();
        assert_eq!(c.agents[0].id, "demo");
        assert_eq!(c.agents[0].upstream, Upstream::BuiltinDemo);
        assert_eq!(c.listen, "127.0.0.1:8080".parse().unwrap());
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("64MiB"), Some(64 << 20));
        assert_eq!(parse_size("512 KB"), Some(512_000));
        assert_eq!(parse_size("7"), Some(7));
        assert_eq!(parse_size("7 parsecs"), None);
        assert_eq!(parse_size("99999999999999999999GiB"), None);
    }
}
