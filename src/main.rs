//! Command-line dispatch only: parse, run the chosen command, map errors to
//! exit codes (2 for anything the user can fix).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

use vramwatch::app::{App, Mode};
use vramwatch::cli::{Cli, ColorArg, Command};
use vramwatch::commands::{dashboard, snapshot};
use vramwatch::config::{self, ColorDepth};
use vramwatch::ui::theme::{Theme, depth_from_env};
use vramwatch::{host, sampler, source};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Broken pipe (`vramwatch snapshot | head`) is not an error.
            let pipe = std::io::ErrorKind::BrokenPipe;
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == pipe)
                    || c.downcast_ref::<serde_json::Error>()
                        .is_some_and(|j| j.io_error_kind() == Some(pipe))
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("vramwatch: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `vramwatch [--demo]`: the dashboard over a live sampler.
fn live_dashboard(cli: &Cli, me: String) -> Result<()> {
    let mut config = config::load(cli.source.config.as_deref())?.with_interval(cli.source.interval);
    if let Some(c) = cli.ui.color {
        config.display.color = match c {
            ColorArg::Auto => ColorDepth::Auto,
            ColorArg::Ansi16 => ColorDepth::Ansi16,
            ColorArg::Ansi256 => ColorDepth::Ansi256,
            ColorArg::Truecolor => ColorDepth::TrueColor,
        };
    }
    // Open the source and bind the metrics port before touching the
    // terminal, so errors print plainly.
    let src = source::open(cli.source.demo.as_deref(), cli.source.seed, &me, 0)?;
    let listener = match &cli.ui.serve {
        Some(addr) => Some(vramwatch::export::bind(addr).context("--serve")?),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let sampler = sampler::Sampler::spawn(src, config.schedule());
        let _server = match listener {
            Some(l) => Some(vramwatch::export::Server::start(
                l,
                &sampler,
                vramwatch::export::ServeOptions::default(),
            )?),
            None => None,
        };
        let theme = Theme::new(config.display.theme, depth_from_env(config.display.color));
        let mut app = App::new(config, sampler.system.clone(), Mode::Live, me);
        app.theme = theme;
        app.read_only = cli.ui.read_only;
        app.simulated = cli.source.demo.is_some();
        dashboard::run(
            app,
            dashboard::Feed::Live(sampler.subscribe()),
            dashboard::Hooks::default(),
        )
        .await
    })
}

fn run(cli: Cli) -> Result<()> {
    let me = host::current_user();
    match &cli.command {
        Some(Command::Snapshot { json }) => {
            let json = *json;
            // One sample of a simulated node a minute into its scenario.
            let src = source::open(cli.source.demo.as_deref(), cli.source.seed, &me, 60)?;
            let snap = sampler::sample_once(src.as_ref(), Duration::from_millis(100));
            let system = src.system();
            let mut out = std::io::stdout().lock();
            if json {
                let doc = snapshot::to_json(&system, &snap);
                serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON")?;
                writeln!(out)?;
            } else {
                let width = std::io::stdout()
                    .is_terminal()
                    .then(|| crossterm::terminal::size().ok().map(|(w, _)| w as usize))
                    .flatten();
                out.write_all(snapshot::to_table(&system, &snap, width).as_bytes())?;
            }
            out.flush()?;
            Ok(())
        }
        Some(Command::BenchSampler { seconds }) => {
            let config =
                config::load(cli.source.config.as_deref())?.with_interval(cli.source.interval);
            let demo = cli.source.demo.clone();
            let seed = cli.source.seed;
            let open = move || -> Result<Box<dyn source::Source>> {
                Ok(source::open(demo.as_deref(), seed, &me, 0)?)
            };
            let costs =
                vramwatch::commands::bench_sampler::run(&open, config.schedule(), *seconds)?;
            println!("{}", serde_json::to_string_pretty(&costs)?);
            Ok(())
        }
        Some(Command::Config { action }) => {
            vramwatch::commands::config::run(action, cli.source.config.as_deref())
        }
        Some(Command::Serve(args)) => vramwatch::commands::serve::run(&cli.source, args, &me),
        Some(other) => anyhow::bail!("`{other:?}` is not built yet"),
        None => live_dashboard(&cli, me),
    }
}
