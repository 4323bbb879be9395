//! Fetching, validating and preparing one agent's card.

use std::time::{Instant, SystemTime};

use pingora::connectors::http::Connector;
use serde_json::Value;
use tracing::{info, warn};

use super::{build_card_state, AgentEntry, CardState, FetchHealth};
use crate::card::constraints::InputConstraints;
use crate::metrics::metrics;
use crate::upstream::{self, GetError};

/// Why a fetch produced no usable card; `label` is the metrics result.
#[derive(Debug, Clone)]
pub struct FetchFailure {
    pub label: &'static str,
    pub message: String,
    /// For an invalid card: each error with its field path.
    pub validation_errors: Vec<crate::card::FieldIssue>,
}

impl FetchFailure {
    fn new(label: &'static str, message: impl Into<String>) -> Self {
        Self {
            label,
            message: message.into(),
            validation_errors: Vec::new(),
        }
    }
}

/// Fetch the card from its configured locations: `card_url`, or agent-card.json with a
/// fallback to the pre-0.3 agent.json when the first answers 404.
pub async fn fetch_card_json(
    connector: &Connector,
    entry: &AgentEntry,
    max_bytes: u64,
) -> Result<(String, Value), FetchFailure> {
    let urls = entry.card_urls();
    let mut last = None;
    for url in urls {
        let response = upstream::get(connector, &url, &entry.config.timeouts, max_bytes)
            .await
            .map_err(|e| match e {
                GetError::Upstream(u) if u.kind == upstream::UpstreamErrorKind::Timeout => {
                    FetchFailure::new("timeout", format!("{url}: {u}"))
                }
                GetError::Upstream(u) => FetchFailure::new("unreachable", format!("{url}: {u}")),
                GetError::TooLarge { limit } => FetchFailure::new(
                    "too_large",
                    format!("{url}: the card is larger than limits.max_card_bytes ({limit} bytes)"),
                ),
                GetError::BadUrl(m) => FetchFailure::new("unreachable", m),
            })?;
        match response.status {
            200 => {
                let card: Value = serde_json::from_slice(&response.body).map_err(|e| {
                    FetchFailure::new(
                        "invalid_json",
                        format!("{url}: the card is not valid JSON: {e}"),
                    )
                })?;
                return Ok((url, card));
            }
            404 => last = Some(FetchFailure::new("http_error", format!("{url}: HTTP 404"))),
            status => {
                return Err(FetchFailure::new(
                    "http_error",
                    format!("{url}: HTTP {status}"),
                ));
            }
        }
    }
    Err(last.unwrap_or_else(|| FetchFailure::new("http_error", "no card location configured")))
}

/// Fetch, validate and prepare a card; the card is not put into service unless it is valid.
pub async fn fetch_card_state(
    connector: &Connector,
    entry: &AgentEntry,
    public_url: Option<&str>,
    max_bytes: u64,
) -> Result<(CardState, Vec<String>), FetchFailure> {
    let (url, card) = fetch_card_json(connector, entry, max_bytes).await?;
    let report = crate::card::validate::validate(&card);
    // A malformed input-constraints field is an error for the card's author, but the card
    // still serves: that field is ignored (and logged) when the policy is compiled.
    let limit_issues = InputConstraints::from_card(&card)
        .map(|(_, issues)| issues)
        .unwrap_or_default();
    let blocking = report.errors.iter().any(|e| !limit_issues.contains(e));
    if blocking {
        let errors: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
        metrics()
            .card_validation_failures
            .with_label_values(&[&entry.config.id])
            .inc();
        let mut failure = FetchFailure::new(
            "invalid_card",
            format!("{url}: the card is invalid: {}", errors.join("; ")),
        );
        failure.validation_errors = report.errors;
        return Err(failure);
    }
    let warnings = report.warnings.iter().map(|w| w.to_string()).collect();
    let (mut state, warnings) = build_card_state(
        &entry.config,
        &entry.upstream,
        public_url,
        url,
        card,
        report.spec_version.to_string(),
        warnings,
    );
    let mut addrs = Vec::with_capacity(state.routes.routes().len());
    for route in state.routes.routes() {
        addrs.push(upstream::resolve(&route.origin).await.ok());
    }
    state.route_addrs = addrs;
    Ok((state, warnings))
}

/// Fetch one agent's card and record the outcome in a new entry (the old card stays on failure).
pub async fn refresh_entry(
    connector: &Connector,
    entry: &AgentEntry,
    public_url: Option<&str>,
    max_bytes: u64,
) -> AgentEntry {
    let id = &entry.config.id;
    let now = SystemTime::now();
    let result = fetch_card_state(connector, entry, public_url, max_bytes).await;
    let label = match &result {
        Ok(_) => "ok",
        Err(f) => f.label,
    };
    metrics().card_fetches.with_label_values(&[id, label]).inc();
    match result {
        Ok((state, warnings)) => {
            for w in &warnings {
                warn!(agent = %id, "card: {w}");
            }
            info!(agent = %id, url = %state.source_url, version = %state.spec_version, "card fetched");
            AgentEntry {
                config: entry.config.clone(),
                series: entry.series.clone(),
                upstream: entry.upstream.clone(),
                card: Some(std::sync::Arc::new(state)),
                health: FetchHealth {
                    last_attempt: Some(now),
                    last_success: Some(now),
                    last_error: None,
                    consecutive_failures: 0,
                    validation_errors: Vec::new(),
                    // Refresh before the TTL runs out, so a fresh card is always in service.
                    next_fetch: Some(Instant::now() + entry.config.card_ttl.mul_f64(0.8)),
                },
            }
        }
        Err(failure) => {
            let stale = if entry.card.is_some() {
                " (the last good card stays in service)"
            } else {
                ""
            };
            warn!(agent = %id, result = failure.label, "card fetch failed: {}{stale}", failure.message);
            AgentEntry {
                config: entry.config.clone(),
                series: entry.series.clone(),
                upstream: entry.upstream.clone(),
                card: entry.card.clone(),
                health: FetchHealth {
                    last_attempt: Some(now),
                    last_success: entry.health.last_success,
                    last_error: Some(failure.message),
                    consecutive_failures: entry.health.consecutive_failures + 1,
                    validation_errors: failure.validation_errors,
                    next_fetch: Some(Instant::now() + entry.config.retry_interval),
                },
            }
        }
    }
}
