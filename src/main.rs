//! Command-line dispatch only: parse, run the chosen command, map errors to
//! exit codes (2 for anything the user can fix).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

use vramwatch::cli::{Cli, Command};
use vramwatch::commands::snapshot;
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

fn run(cli: Cli) -> Result<()> {
    let me = host::current_user();
    match cli.command {
        Some(Command::Snapshot { json }) => {
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
        Some(Command::Record(args)) => vramwatch::commands::record::run(&args, &cli.source),
        Some(Command::Export(args)) => vramwatch::commands::export::run(&args),
        Some(Command::Report(args)) => vramwatch::commands::report::run(&args, &cli.source),
        Some(other) => anyhow::bail!("`{other:?}` is not built yet"),
        None => anyhow::bail!("the dashboard is not built yet; try `vramwatch snapshot --demo`"),
    }
}
