//! The background service that keeps cards fresh and reloads `gateway.yaml`.
//!
//! One loop: fetch every agent whose card is due (concurrently), swap the results in,
//! and sleep until the next card is due, the config file changes, SIGHUP arrives, or an
//! admin asks for a refresh.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use pingora::connectors::http::Connector;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use tokio::sync::Notify;
use tracing::{error, info, warn};

use super::{fetch, Registry};
use crate::config::Config;
use crate::metrics::metrics;

/// Shared handle to wake the refresher (admin refresh, tests).
#[derive(Default)]
pub struct RefreshSignal {
    notify: Notify,
}

impl RefreshSignal {
    pub fn wake(&self) {
        self.notify.notify_one();
    }
}

pub struct Refresher {
    pub registry: Arc<Registry>,
    pub config_path: Option<PathBuf>,
    pub signal: Arc<RefreshSignal>,
}

/// Fetch now every agent whose card is due; returns how many were fetched.
pub async fn refresh_due(registry: &Registry, connector: &Connector) -> usize {
    let snapshot = registry.load();
    let now = Instant::now();
    let due: Vec<_> = snapshot
        .agents
        .values()
        .filter(|e| e.health.next_fetch.is_none_or(|t| t <= now))
        .cloned()
        .collect();
    let public_url = snapshot.config.public_url.clone();
    let max_bytes = snapshot.config.limits.max_card_bytes;
    let fetches = due.iter().map(|entry| {
        let public_url = public_url.clone();
        async move {
            let updated =
                fetch::refresh_entry(connector, entry, public_url.as_deref(), max_bytes).await;
            (entry.config.clone(), updated)
        }
    });
    let results = futures::future::join_all(fetches).await;
    let count = results.len();
    for (config, updated) in results {
        let updated = Arc::new(updated);
        registry.update_agent(&config.id, &config, |_| clone_entry(&updated));
    }
    count
}

/// Fetch one agent now, whatever its schedule; returns false for an unknown agent.
pub async fn refresh_one(registry: &Registry, connector: &Connector, id: &str) -> bool {
    let snapshot = registry.load();
    let Some(entry) = snapshot.agents.get(id).cloned() else {
        return false;
    };
    let updated = fetch::refresh_entry(
        connector,
        &entry,
        snapshot.config.public_url.as_deref(),
        snapshot.config.limits.max_card_bytes,
    )
    .await;
    let updated = Arc::new(updated);
    registry.update_agent(id, &entry.config, |_| clone_entry(&updated));
    true
}

fn clone_entry(e: &super::AgentEntry) -> super::AgentEntry {
    super::AgentEntry {
        config: e.config.clone(),
        series: e.series.clone(),
        upstream: e.upstream.clone(),
        card: e.card.clone(),
        health: e.health.clone(),
    }
}

/// Re-read the config file and swap it in; a broken file keeps the old config.
pub fn reload(registry: &Registry, path: &std::path::Path) -> bool {
    match Config::load(path) {
        Ok(config) => {
            let old = registry.load();
            if old.config.listen != config.listen || old.config.admin_listen != config.admin_listen
            {
                warn!("config reload: listen and admin_listen changes take effect only after a restart");
            }
            registry.apply_config(config);
            metrics().config_reloads.with_label_values(&["ok"]).inc();
            info!(path = %path.display(), "config reloaded");
            true
        }
        Err(e) => {
            metrics().config_reloads.with_label_values(&["error"]).inc();
            error!("config reload failed, keeping the running config: {e}");
            false
        }
    }
}

fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[async_trait]
impl BackgroundService for Refresher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let connector = Connector::new(None);
        let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        {
            Ok(s) => Some(s),
            Err(e) => {
                warn!("cannot listen for SIGHUP ({e}); config reloads only on file changes");
                None
            }
        };
        let mut last_mtime = self.config_path.as_deref().and_then(modified);
        loop {
            refresh_due(&self.registry, &connector).await;

            let snapshot = self.registry.load();
            let poll = snapshot.config.reload_poll;
            let next_due = snapshot
                .agents
                .values()
                .filter_map(|e| e.health.next_fetch)
                .min()
                .map(|t| t.saturating_duration_since(Instant::now()))
                .unwrap_or(poll);
            let wait = next_due.min(poll).max(Duration::from_millis(50));
            let sighup = async {
                match hangup.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let mut reload_now = false;
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.signal.notify.notified() => {}
                _ = sighup => {
                    info!("SIGHUP: reloading the config");
                    reload_now = true;
                }
                _ = shutdown.changed() => return,
            }
            if let Some(path) = &self.config_path {
                let mtime = modified(path);
                if reload_now || mtime != last_mtime {
                    last_mtime = mtime;
                    reload(&self.registry, path);
                }
            }
        }
    }
}
