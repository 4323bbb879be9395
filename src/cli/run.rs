//! `cardgate run`: start the gateway.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pingora::server::configuration::ServerConf;
use pingora::server::{Server, ShutdownWatch};
use pingora::services::background::{background_service, BackgroundService};
use pingora::services::listening::Service;

use crate::admin::{Admin, ProxyListener};
use crate::config::{Config, LogFormat};
use crate::proxy::{Gateway, INFLIGHT};
use crate::registry::refresh::{RefreshSignal, Refresher};
use crate::registry::Registry;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The gateway configuration.
    #[arg(long, default_value = "gateway.yaml")]
    pub config: PathBuf,
    /// Log format; overrides `log.format` in the config.
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormatArg>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LogFormatArg {
    Text,
    Json,
}

pub fn main(args: Args) -> ExitCode {
    let config = match Config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cardgate: invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let format = match args.log_format {
        Some(LogFormatArg::Json) => LogFormat::Json,
        Some(LogFormatArg::Text) => LogFormat::Text,
        None => config.log.format,
    };
    crate::logging::init(&config.log.level, format);
    run(config, Some(args.config))
}

/// Build the pingora server and run it until shutdown.
pub fn run(config: Config, config_path: Option<PathBuf>) -> ExitCode {
    // SIGTERM: stop accepting, wait up to shutdown_grace for requests in flight; the drain
    // watcher below exits as soon as none are left.
    let conf = ServerConf {
        grace_period_seconds: Some(config.shutdown_grace.as_secs()),
        graceful_shutdown_timeout_seconds: Some(1),
        threads: config.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        }),
        ..ServerConf::default()
    };
    let threads = conf.threads;
    let proxy_listen = config.listen;
    let listen = config.listen.to_string();
    let admin_listen = config.admin_listen.to_string();
    let grace = config.shutdown_grace;

    let registry = Registry::new(config);
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();

    let mut proxy = pingora::proxy::http_proxy_service_with_name(
        &server.configuration,
        Gateway::new(registry.clone()),
        "cardgate",
    );
    proxy.add_tcp(&listen);

    let mut admin = Service::new(
        "cardgate admin".to_string(),
        Admin {
            registry: registry.clone(),
            proxy: ProxyListener::new(proxy_listen),
        },
    );
    admin.add_tcp(&admin_listen);

    let refresher = background_service(
        "card refresh",
        Refresher {
            registry: registry.clone(),
            config_path,
            signal: Arc::new(RefreshSignal::default()),
        },
    );
    let drain = background_service("drain", DrainWatcher { grace });

    server.add_service(proxy);
    server.add_service(admin);
    server.add_service(refresher);
    server.add_service(drain);
    tracing::info!(%listen, %admin_listen, threads, "cardgate listening");
    server.run_forever()
}

/// After SIGTERM, exits the process as soon as no request is in flight (pingora itself
/// would wait out the whole grace period).
struct DrainWatcher {
    grace: Duration,
}

#[async_trait]
impl BackgroundService for DrainWatcher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        if shutdown.changed().await.is_err() {
            return;
        }
        let deadline = Instant::now() + self.grace;
        loop {
            let inflight = INFLIGHT.load(Ordering::Acquire);
            if inflight <= 0 {
                tracing::info!("shutdown: no requests in flight, exiting");
                break;
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    inflight,
                    "shutdown: grace period over, exiting with requests in flight"
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        std::process::exit(0);
    }
}
