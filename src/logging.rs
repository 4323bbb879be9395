//! Logging with `tracing`: human-readable by default, JSON lines on request. The level
//! comes from `RUST_LOG` when set, else from the config. pingora's own `log` records are
//! routed through the same subscriber.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

pub fn init(level: &str, format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}
