//! The registry: one immutable [`Snapshot`] of the config and every agent's card, rewritten
//! card bytes, routes and policy, behind `ArcSwap`. Card refreshes and config reloads build a
//! new snapshot and swap it in; request handling only calls `load()` and takes no lock.
//! Requests in flight keep the snapshot they started with.

pub mod fetch;
pub mod refresh;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use serde_json::Value;

use crate::card::capabilities::Capabilities;
use crate::card::policy::{self, CompiledPolicy, PolicyOptions};
use crate::card::rewrite::{self, CardTemplate, ParsedUrl, RouteTable};
use crate::config::{AgentConfig, Config, SignaturePolicy, Upstream};

/// Everything the proxy needs, frozen.
pub struct Snapshot {
    pub config: Arc<Config>,
    pub agents: HashMap<String, Arc<AgentEntry>>,
}

/// One configured agent and the last good card fetched for it.
pub struct AgentEntry {
    pub config: Arc<AgentConfig>,
    /// The agent's per-request metric series.
    pub series: crate::metrics::AgentSeries,
    /// The agent's base URL (the demo agent's loopback address for `builtin:demo`).
    pub upstream: ParsedUrl,
    pub card: Option<Arc<CardState>>,
    pub health: FetchHealth,
}

/// How the last card fetches went.
#[derive(Debug, Clone, Default)]
pub struct FetchHealth {
    pub last_attempt: Option<SystemTime>,
    pub last_success: Option<SystemTime>,
    /// Why the last attempt failed; `None` after a success.
    pub last_error: Option<String>,
    pub consecutive_failures: u32,
    /// Every error of the last fetched card that failed validation, with its field path.
    pub validation_errors: Vec<crate::card::FieldIssue>,
    /// When the next fetch is due.
    pub next_fetch: Option<Instant>,
}

/// A validated card in service, with everything derived from it once.
pub struct CardState {
    pub fetched_at: SystemTime,
    pub fetched_instant: Instant,
    pub source_url: String,
    /// The card as the agent served it.
    pub upstream_card: Value,
    pub spec_version: String,
    pub warnings: Vec<String>,
    pub template: CardTemplate,
    /// The card rendered once when the public base is fixed, with its ETag.
    pub prerendered: Option<RenderedCard>,
    pub routes: RouteTable,
    /// Resolved address per route (same index); `None` when the name did not resolve.
    pub route_addrs: Vec<Option<SocketAddr>>,
    /// Versions, bindings, required extensions, streaming and push, from the card.
    pub caps: Capabilities,
    /// The limits to enforce (card ∧ operator overrides), compiled for the scanner.
    pub policy: CompiledPolicy,
    /// Largest body accepted: `max_body_bytes`, or less when the policy caps file bytes.
    pub body_limit: u64,
}

#[derive(Debug, Clone)]
pub struct RenderedCard {
    pub body: bytes::Bytes,
    pub etag: String,
}

impl RenderedCard {
    pub fn new(body: Vec<u8>) -> Self {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&body);
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Self {
            body: body.into(),
            etag: format!("\"{hex}\""),
        }
    }
}

impl CardState {
    pub fn age(&self) -> Duration {
        self.fetched_instant.elapsed()
    }

    /// The card with `base` filled in (from the cache when the base is fixed).
    pub fn render(&self, base: &str) -> RenderedCard {
        match &self.prerendered {
            Some(card) => card.clone(),
            None => RenderedCard::new(self.template.render(base)),
        }
    }
}

/// Why an agent cannot serve right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    NeverFetched { last_error: Option<String> },
    TooStale { age: Duration, limit: Duration },
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::NeverFetched { last_error: None } => {
                f.write_str("the agent card has not been fetched yet")
            }
            Unusable::NeverFetched {
                last_error: Some(e),
            } => write!(f, "the agent card could not be fetched: {e}"),
            Unusable::TooStale { age, limit } => write!(
                f,
                "the agent card is {}s old, beyond its TTL plus max_stale ({}s), and refreshing it failed",
                age.as_secs(),
                limit.as_secs()
            ),
        }
    }
}

impl AgentEntry {
    /// The card, if it may still be served (fresh, or stale within `max_stale`).
    pub fn usable_card(&self) -> Result<&Arc<CardState>, Unusable> {
        let Some(card) = &self.card else {
            return Err(Unusable::NeverFetched {
                last_error: self.health.last_error.clone(),
            });
        };
        let limit = self.config.card_ttl + self.config.max_stale;
        let age = card.age();
        if age > limit {
            return Err(Unusable::TooStale { age, limit });
        }
        Ok(card)
    }

    /// Where this agent's card is fetched from, in order of preference.
    pub fn card_urls(&self) -> Vec<String> {
        match &self.config.card_url {
            Some(url) => vec![url.clone()],
            None => {
                let base = self.upstream.base_url();
                vec![
                    format!("{base}/.well-known/agent-card.json"),
                    format!("{base}/.well-known/agent.json"),
                ]
            }
        }
    }
}

impl ParsedUrl {
    /// `scheme://authority/path` without a trailing slash.
    pub fn base_url(&self) -> String {
        let scheme = if self.origin.tls { "https" } else { "http" };
        format!(
            "{scheme}://{}{}",
            self.origin.authority(),
            self.path.trim_end_matches('/')
        )
    }
}

/// Room in a body for everything but inline file bytes (envelope, text, metadata) when the
/// Content-Length cap is derived from the policy's file limits.
const BODY_OVERHEAD_BYTES: u64 = 4 << 20;

/// The largest body the policy can accept: base64 of the most file bytes it allows, plus
/// room for the rest; never more than `max_body_bytes`.
fn body_limit(agent: &AgentConfig, compiled: &CompiledPolicy) -> u64 {
    let files = &compiled.effective.files;
    let per_file = files.max_size_per_file_bytes.or_else(|| {
        files
            .per_mime_type
            .iter()
            .map(|(_, m)| m.max_size_bytes)
            .collect::<Option<Vec<_>>>()
            .and_then(|sizes| sizes.into_iter().max())
    });
    let by_count = files
        .max_count_per_request
        .zip(per_file)
        .map(|(count, size)| count.saturating_mul(size));
    let file_bytes = match (files.max_total_size_bytes, by_count) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let derived = file_bytes.filter(|_| agent.enforce.files).map(|n| {
        n.div_ceil(3)
            .saturating_mul(4)
            .saturating_add(BODY_OVERHEAD_BYTES)
    });
    derived.map_or(agent.max_body_bytes, |d| d.min(agent.max_body_bytes))
}

/// Build the servable state for a freshly fetched, validated card.
pub fn build_card_state(
    agent: &AgentConfig,
    upstream: &ParsedUrl,
    public_url: Option<&str>,
    source_url: String,
    card: Value,
    spec_version: String,
    mut warnings: Vec<String>,
) -> (CardState, Vec<String>) {
    let options = PolicyOptions {
        enforce_files: agent.enforce.files,
        enforce_media_types: agent.enforce.media_types,
        enforce_text: agent.enforce.text,
        scan: agent.scan.clone(),
    };
    let compiled = policy::compile(&card, agent.constraints.as_ref(), &options);
    warnings.extend(
        compiled
            .issues
            .iter()
            .map(|i| format!("{i} (this limit is ignored)")),
    );
    let table = RouteTable::new(upstream);
    let (template, routes) = match agent.signatures {
        SignaturePolicy::Passthrough => (
            CardTemplate::verbatim(serde_json::to_vec(&card).unwrap_or_default()),
            rewrite::routes_of(&card, table),
        ),
        SignaturePolicy::Drop => {
            // The served card advertises what is enforced: with operator overrides, the
            // effective limits replace (or add) the extension's params.
            let out = rewrite::rewrite_card(&card, &agent.id, table, |served| {
                if agent.constraints.is_some() {
                    compiled.effective.advertise_in(served);
                }
            });
            if out.dropped_signatures {
                warnings.push(
                    "the card's signatures were dropped: rewriting its URLs invalidates them (set `signatures: passthrough` to serve it unmodified)"
                        .to_string(),
                );
            }
            for path in &out.untouched {
                warnings.push(format!(
                    "{path} is not an absolute http(s) URL and was left as it is"
                ));
            }
            (out.template, out.routes)
        }
    };
    let prerendered = match (public_url, template.has_holes()) {
        (Some(base), _) => Some(RenderedCard::new(template.render(base))),
        (None, false) => Some(RenderedCard::new(template.render(""))),
        (None, true) => None,
    };
    let caps = Capabilities::from_card(&card, &routes);
    let state = CardState {
        fetched_at: SystemTime::now(),
        fetched_instant: Instant::now(),
        source_url,
        upstream_card: card,
        spec_version,
        warnings: warnings.clone(),
        template,
        prerendered,
        route_addrs: Vec::new(),
        routes,
        caps,
        body_limit: body_limit(agent, &compiled),
        policy: compiled,
    };
    (state, warnings)
}

/// The shared, swappable registry.
pub struct Registry {
    current: ArcSwap<Snapshot>,
    /// Address of the in-process demo agent, once started.
    demo_addr: std::sync::OnceLock<SocketAddr>,
}

impl Registry {
    pub fn new(config: Config) -> Arc<Self> {
        let registry = Arc::new(Registry {
            current: ArcSwap::from_pointee(Snapshot {
                config: Arc::new(Config::parse("{}").expect("empty config is valid")),
                agents: HashMap::new(),
            }),
            demo_addr: std::sync::OnceLock::new(),
        });
        registry.apply_config(config);
        registry
    }

    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Swap in a new config: unchanged agents keep their cards; new or changed agents start
    /// without one and are fetched at once.
    pub fn apply_config(&self, config: Config) {
        for agent in &config.agents {
            crate::metrics::metrics().register_agent(&agent.id);
        }
        let config = Arc::new(config);
        self.current.rcu(|old| {
            let mut agents = HashMap::new();
            for agent in &config.agents {
                let keep = old
                    .agents
                    .get(&agent.id)
                    .filter(|e| *e.config == *agent)
                    .filter(|_| old.config.public_url == config.public_url);
                let entry = match keep {
                    Some(e) => e.clone(),
                    None => Arc::new(AgentEntry {
                        config: Arc::new(agent.clone()),
                        series: crate::metrics::metrics().agent_series(&agent.id),
                        upstream: self.upstream_of(agent),
                        card: None,
                        health: FetchHealth {
                            next_fetch: Some(Instant::now()),
                            ..FetchHealth::default()
                        },
                    }),
                };
                agents.insert(agent.id.clone(), entry);
            }
            Arc::new(Snapshot {
                config: config.clone(),
                agents,
            })
        });
    }

    /// Replace one agent's entry, if the agent still exists with the same config.
    pub fn update_agent(
        &self,
        id: &str,
        config: &Arc<AgentConfig>,
        f: impl Fn(&AgentEntry) -> AgentEntry,
    ) {
        self.current.rcu(|old| {
            let mut agents = old.agents.clone();
            if let Some(entry) = old.agents.get(id) {
                if Arc::ptr_eq(&entry.config, config) || *entry.config == **config {
                    agents.insert(id.to_string(), Arc::new(f(entry)));
                }
            }
            Arc::new(Snapshot {
                config: old.config.clone(),
                agents,
            })
        });
    }

    fn upstream_of(&self, agent: &AgentConfig) -> ParsedUrl {
        let base = match &agent.upstream {
            Upstream::Http { base } => base.clone(),
            Upstream::BuiltinDemo => {
                let addr = self.demo_addr.get_or_init(crate::demo::start);
                format!("http://{addr}")
            }
        };
        rewrite::parse_http_url(&base).expect("config validated the upstream URL")
    }
}
