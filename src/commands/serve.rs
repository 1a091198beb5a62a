//! `vramwatch serve`: sample on the usual schedule and serve Prometheus
//! metrics (`/metrics`), the latest snapshot as JSON (`/snapshot`) and
//! `/healthz` until SIGINT or SIGTERM. The server itself is
//! [`crate::export`], a consumer of the pipeline; `--serve ADDR` of the
//! dashboard and `record` start the same server on their own pipeline.

use anyhow::{Context, Result};

use crate::analysis::AnalysisConfig;
use crate::cli::{ServeArgs, SourceArgs};
use crate::config::{self, Config};
use crate::export;
use crate::pipeline::Pipeline;

/// Where the listen address came from, for error messages. Both were
/// checked as `config::parse_listen` reads them (`--listen` by clap, the
/// file when it was loaded).
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
    let (src, shown) = super::open_chosen(source_args, me, 60)?;
    let pipeline = Pipeline::start(src, config.schedule(), AnalysisConfig::from_config(&config))
        .context("starting the sampler")?;
    let hook = super::start_hook(pipeline.hub(), &config, |e| crate::tell!("vramwatch: {e}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let served = rt.block_on(async {
        // Listen for the signals before the server answers: a SIGTERM sent
        // as soon as /healthz says 200 must stop it cleanly.
        let stop = Shutdown::listen()?;
        let server = export::Server::start(listener, pipeline.hub(), Default::default())?;
        let addr = server.local_addr();
        crate::tell!(
            "vramwatch: serving http://{addr}/metrics, /snapshot and /healthz (source {}{}); Ctrl-C stops",
            pipeline.system().source,
            shown.as_deref().map_or(String::new(), |s| format!("; {s}"))
        );
        let stopped = stop.wait().await;
        server.stop().await;
        stopped
    });
    pipeline.stop();
    if let Some(h) = hook {
        let _ = h.join();
    }
    served
}

/// SIGINT and SIGTERM, listened for from the moment it is made (so that
/// one sent while the rest starts is not lost). Made inside a runtime.
pub struct Shutdown {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Shutdown {
    pub fn listen() -> Result<Shutdown> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Shutdown {
            int: signal(SignalKind::interrupt()).context("listening for SIGINT")?,
            term: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
        })
    }

    /// Resolves on the first SIGINT or SIGTERM.
    pub async fn wait(mut self) -> Result<()> {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
        Ok(())
    }
}
