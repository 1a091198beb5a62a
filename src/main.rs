//! Command-line dispatch only: parse, run the chosen command, map errors to
//! exit codes (`cli::exit_code`: 1 for a runtime failure, 2 for anything the
//! user can fix on the command line or in the config).

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use vramwatch::cli::{Cli, Command, UiArgs, exit_code, exit_on_clap_error, message};
use vramwatch::commands::{self, dashboard};
use vramwatch::source::host;

fn main() -> ExitCode {
    // Clap's errors as every other: `vramwatch: error: …`, exit status 2.
    let cli = Cli::try_parse().unwrap_or_else(|e| exit_on_clap_error(e));
    if let Some(e) = cli.misplaced() {
        exit_on_clap_error(e);
    }
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `record -- COMMAND`: the command's own status, already told.
            if let Some(s) = e.downcast_ref::<commands::record::CommandStatus>() {
                return ExitCode::from(s.0);
            }
            let code = exit_code(&e);
            // A closed pipe (`vramwatch snapshot | head`) is not an error.
            if code != 0 {
                vramwatch::tell!("vramwatch: error: {}", message(&e));
            }
            ExitCode::from(code)
        }
    }
}

fn run(cli: &Cli) -> Result<()> {
    let me = host::current_user();
    let Some(command) = &cli.command else {
        return dashboard::run_live(&cli.dashboard(), &cli.ui, me);
    };
    match command {
        Command::Snapshot(a) => {
            let src = cli.source_for(Some(&a.demo), None, Some(&a.gpus), Some(&a.config));
            commands::snapshot::run(a, &src, &me)
        }
        Command::BenchSampler {
            seconds,
            calls,
            spaced,
            demo,
            interval,
            config,
        } => {
            let src = cli.source_for(Some(demo), Some(interval), None, Some(config));
            let calls = match (*calls, *spaced) {
                (false, _) => None,
                (true, false) => Some(commands::bench_sampler::Calls::BackToBack),
                (true, true) => Some(commands::bench_sampler::Calls::Spaced),
            };
            commands::bench_sampler::run_cli(*seconds, calls, &src, &me)
        }
        Command::Config { action, config } => {
            let path = config.as_deref().or(cli.config.config.as_deref());
            commands::config::run(action, path)
        }
        Command::Serve(a) => {
            let src = cli.source_for(
                Some(&a.demo),
                Some(&a.interval),
                Some(&a.gpus),
                Some(&a.config),
            );
            commands::serve::run(&src, a, &me)
        }
        Command::Record(a) => {
            let src = cli.source_for(
                Some(&a.demo),
                Some(&a.interval),
                Some(&a.gpus),
                Some(&a.config),
            );
            commands::record::run(a, &src)
        }
        Command::Export(a) => commands::export::run(a),
        Command::Fleet(a) => commands::fleet::run(a, &cli.dashboard(), &cli.ui),
        Command::Report(a) => {
            let src = cli.source_for(None, None, None, Some(&a.config));
            commands::report::run(a, &src)
        }
        Command::Score(a) => {
            let src = cli.source_for(None, None, None, Some(&a.config));
            commands::score::run(a, &src)
        }
        Command::Replay(a) => {
            let src = cli.source_for(None, None, None, Some(&a.config));
            let ui = UiArgs {
                color: a.color.or(cli.ui.color),
                ascii: a.ascii || cli.ui.ascii,
                ..UiArgs::default()
            };
            commands::replay::run(a, &src, &ui, me)
        }
        Command::Completions { shell } => {
            vramwatch::cli::write_completions(*shell, &mut std::io::stdout().lock())?;
            Ok(())
        }
        Command::Man(a) => match &a.dir {
            Some(dir) => {
                let mut out = std::io::stdout().lock();
                for page in vramwatch::cli::write_man_pages(dir)? {
                    writeln!(out, "{}", page.display())?;
                }
                Ok(())
            }
            None => vramwatch::cli::write_man(a.command.as_deref(), &mut std::io::stdout().lock()),
        },
    }
}
