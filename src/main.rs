//! Command-line dispatch only: parse, run the chosen command, map errors to
//! exit codes (2 for anything the user can fix).

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use vramwatch::cli::{Cli, Command};
use vramwatch::commands::{self, dashboard};
use vramwatch::source::host;

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
    match &cli.command {
        Some(Command::Snapshot { json }) => commands::snapshot::run(*json, &cli.source, &me),
        Some(Command::BenchSampler { seconds, calls }) => {
            commands::bench_sampler::run_cli(*seconds, *calls, &cli.source, &me)
        }
        Some(Command::Config { action }) => {
            commands::config::run(action, cli.source.config.as_deref())
        }
        Some(Command::Serve(args)) => commands::serve::run(&cli.source, args, &me),
        Some(Command::Record(args)) => commands::record::run(args, &cli.source),
        Some(Command::Export(args)) => commands::export::run(args),
        Some(Command::Report(args)) => commands::report::run(args, &cli.source),
        Some(Command::Score(args)) => commands::score::run(args, &cli.source),
        Some(Command::Replay(args)) => commands::replay::run(args, &cli.source, &cli.ui, me),
        None => dashboard::run_live(&cli.source, &cli.ui, me),
    }
}
