//! `vramwatch serve`: sample on the usual schedule and serve Prometheus
//! metrics (`/metrics`), the latest snapshot as JSON (`/snapshot`) and
//! `/healthz` until SIGINT or SIGTERM. The server itself is
//! [`crate::export`]; `--serve ADDR` of the dashboard and `record` start the
//! same server on their own sampler.

use anyhow::{Context, Result};

use crate::cli::{ServeArgs, SourceArgs};
use crate::config::{self, Config};
use crate::export;
use crate::sampler::Sampler;
use crate::source;

/// Where the listen address came from, for error messages.
fn listen_address(args: &ServeArgs, config: &Config) -> (String, &'static str) {
    match &args.listen {
        Some(a) => (a.clone(), "--listen"),
        None => (config.serve.listen.clone(), "[serve] listen in the config"),
    }
}

pub fn run(source_args: &SourceArgs, args: &ServeArgs, me: &str) -> Result<()> {
    let config = config::load(source_args.config.as_deref())?.with_interval(source_args.interval);
    let (listen, from) = listen_address(args, &config);
    // Bind first: a bad or busy address is reported before anything starts.
    let listener = export::bind(&listen).context(from)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let src = source::open(source_args.demo.as_deref(), source_args.seed, me, 60)?;
        let sampler = Sampler::spawn(src, config.schedule());
        let server = export::Server::start(listener, &sampler, export::analysis::serve_options(&sampler, &config))?;
        let addr = server.local_addr();
        eprintln!(
            "vramwatch: serving http://{addr}/metrics, /snapshot and /healthz (source {}); Ctrl-C stops",
            sampler.system.source
        );
        let stopped = shutdown_signal().await;
        server.stop().await;
        stopped
    })
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("listening for SIGINT")?,
        _ = term.recv() => {}
    }
    Ok(())
}
