//! Prometheus metrics, all prefixed `cardgate_`, in one registry served on the admin
//! listener. Labels are bounded: agent ids come from the config, methods from a fixed
//! set, statuses are classes, outcomes and reasons are fixed words. Never raw paths,
//! message ids or user data.

use std::sync::LazyLock;

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

pub struct Metrics {
    pub registry: Registry,
    pub requests: IntCounterVec,
    pub request_duration: HistogramVec,
    pub upstream_duration: HistogramVec,
    pub request_body_bytes: HistogramVec,
    pub rejections: IntCounterVec,
    pub scanned_bytes: IntCounterVec,
    pub scan_duration: HistogramVec,
    pub inflight_body_bytes: IntGauge,
    pub inflight_requests: IntGaugeVec,
    pub upstream_errors: IntCounterVec,
    pub card_fetches: IntCounterVec,
    pub card_validation_failures: IntCounterVec,
    pub card_age: prometheus::GaugeVec,
    pub card_ttl_remaining: prometheus::GaugeVec,
    pub card_ready: IntGaugeVec,
    pub card_ttl: prometheus::GaugeVec,
    pub card_max_stale: prometheus::GaugeVec,
    pub card_last_fetch_ok: IntGaugeVec,
    pub config_reloads: IntCounterVec,
    pub build_info: IntGaugeVec,
}

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];
const SCAN_BUCKETS: &[f64] = &[
    0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025, 0.05, 0.1,
];
const SIZE_BUCKETS: &[f64] = &[
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
    268_435_456.0,
];

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(c.clone()))
        .expect("unique metric");
    c
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> HistogramVec {
    let h = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        labels,
    )
    .expect("valid metric");
    registry
        .register(Box::new(h.clone()))
        .expect("unique metric");
    h
}

fn gauge_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(g.clone()))
        .expect("unique metric");
    g
}

fn float_gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::GaugeVec {
    let g = prometheus::GaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(g.clone()))
        .expect("unique metric");
    g
}

impl Metrics {
    fn new() -> Self {
        let r = Registry::new();
        let inflight_body_bytes = IntGauge::new(
            "cardgate_inflight_body_bytes",
            "Request body bytes currently held in memory by the gateway.",
        )
        .expect("valid metric");
        r.register(Box::new(inflight_body_bytes.clone()))
            .expect("unique metric");
        let build_info = gauge_vec(
            &r,
            "cardgate_build_info",
            "Always 1; the version label says which build runs.",
            &["version"],
        );
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        Metrics {
            requests: counter(&r, "cardgate_requests_total", "Requests handled, by agent, A2A method, status class and outcome.", &["agent", "method", "status", "outcome"]),
            request_duration: histogram(&r, "cardgate_request_duration_seconds", "Time from request start to the end of the response, through the gateway.", &["agent"], LATENCY_BUCKETS),
            upstream_duration: histogram(&r, "cardgate_upstream_duration_seconds", "Time the agent took to answer with its response header.", &["agent"], LATENCY_BUCKETS),
            request_body_bytes: histogram(&r, "cardgate_request_body_bytes", "Size of request bodies received.", &["agent"], SIZE_BUCKETS),
            rejections: counter(&r, "cardgate_rejections_total", "Requests the gateway answered itself because they broke the agent's policy, by reason.", &["agent", "reason"]),
            scanned_bytes: counter(&r, "cardgate_scanned_bytes_total", "Request body bytes run through the scanner.", &["agent"]),
            scan_duration: histogram(&r, "cardgate_scan_duration_seconds", "CPU time spent scanning one request body.", &["agent"], SCAN_BUCKETS),
            inflight_body_bytes,
            inflight_requests: gauge_vec(&r, "cardgate_inflight_requests", "Requests currently being handled.", &["agent"]),
            upstream_errors: counter(&r, "cardgate_upstream_errors_total", "Failures talking to agents, by kind (connect, timeout, reset, protocol, dns).", &["agent", "kind"]),
            card_fetches: counter(&r, "cardgate_card_fetches_total", "Agent card fetches, by result (ok, unreachable, timeout, http_error, too_large, invalid_json, invalid_card).", &["agent", "result"]),
            card_validation_failures: counter(&r, "cardgate_card_validation_failures_total", "Fetched cards that failed validation and were not put into service.", &["agent"]),
            card_age: float_gauge_vec(&r, "cardgate_card_age_seconds", "Age of the card in service (since it was fetched).", &["agent"]),
            card_ttl_remaining: float_gauge_vec(&r, "cardgate_card_ttl_remaining_seconds", "Seconds until the card in service reaches its TTL (negative: stale).", &["agent"]),
            card_ready: gauge_vec(&r, "cardgate_agent_ready", "1 when the agent has a usable card, else 0.", &["agent"]),
            card_ttl: float_gauge_vec(&r, "cardgate_card_ttl_seconds", "The configured card TTL.", &["agent"]),
            card_max_stale: float_gauge_vec(&r, "cardgate_card_max_stale_seconds", "How long past its TTL a card may still be served while refreshes fail.", &["agent"]),
            card_last_fetch_ok: gauge_vec(&r, "cardgate_card_last_fetch_success", "1 when the last card fetch succeeded, 0 when it failed.", &["agent"]),
            config_reloads: counter(&r, "cardgate_config_reloads_total", "Config reloads, by result (ok, error).", &["result"]),
            build_info,
            registry: r,
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 * 1024);
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        out
    }
}

/// An agent's per-request series keyed by the agent alone, looked up once per config
/// (not hashed again on every request).
#[derive(Clone)]
pub struct AgentSeries {
    pub inflight_requests: IntGauge,
    pub request_duration: Histogram,
    pub upstream_duration: Histogram,
    pub request_body_bytes: Histogram,
    pub scanned_bytes: IntCounter,
    pub scan_duration: Histogram,
}

impl Metrics {
    pub fn agent_series(&self, agent: &str) -> AgentSeries {
        AgentSeries {
            inflight_requests: self.inflight_requests.with_label_values(&[agent]),
            request_duration: self.request_duration.with_label_values(&[agent]),
            upstream_duration: self.upstream_duration.with_label_values(&[agent]),
            request_body_bytes: self.request_body_bytes.with_label_values(&[agent]),
            scanned_bytes: self.scanned_bytes.with_label_values(&[agent]),
            scan_duration: self.scan_duration.with_label_values(&[agent]),
        }
    }

    /// Create an agent's series at zero, so dashboards and alerts see them before the first
    /// event (the prometheus crate omits a metric until it has a series).
    pub fn register_agent(&self, agent: &str) {
        for reason in crate::scan::Reason::ALL {
            self.rejections.with_label_values(&[agent, reason.as_str()]);
        }
        for reason in ["body_timeout", "memory_budget"] {
            self.rejections.with_label_values(&[agent, reason]);
        }
        // The per-request series are created by `agent_series`, with the agent's entry.
        self.card_validation_failures.with_label_values(&[agent]);
    }
}

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

/// HTTP status class label: `2xx`, `4xx`, …
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}
