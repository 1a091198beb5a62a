//! Which top-level options each subcommand takes (`--demo`, `--interval`,
//! `--gpu`, `--config`, `--color` only where they act), and the usage
//! error for one given where it would do nothing.

use super::*;

/// Which of the top-level options each subcommand takes.
#[derive(Clone, Copy, Default)]
struct Takes {
    demo: bool,
    interval: bool,
    gpus: bool,
    config: bool,
    color: bool,
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Snapshot(_) => "snapshot",
            Command::Record(_) => "record",
            Command::Replay(_) => "replay",
            Command::Export(_) => "export",
            Command::Report(_) => "report",
            Command::Serve(_) => "serve",
            Command::Score(_) => "score",
            Command::Config { .. } => "config",
            Command::Completions { .. } => "completions",
            Command::Man(_) => "man",
            Command::BenchSampler { .. } => "bench-sampler",
            Command::Fleet(_) => "fleet",
        }
    }

    fn takes(&self) -> Takes {
        let sampler = Takes {
            demo: true,
            interval: true,
            gpus: true,
            config: true,
            color: false,
        };
        let config = Takes {
            config: true,
            ..Takes::default()
        };
        match self {
            Command::Record(_) | Command::Serve(_) => sampler,
            Command::Snapshot(_) => Takes {
                interval: false,
                ..sampler
            },
            Command::BenchSampler { .. } => Takes {
                gpus: false,
                ..sampler
            },
            Command::Replay(_) => Takes {
                color: true,
                ..config
            },
            Command::Report(_) | Command::Score(_) | Command::Config { .. } => config,
            // Its own --interval is a refresh interval; --config and
            // --color may come before `fleet` too.
            Command::Fleet(_) => Takes {
                color: true,
                ..config
            },
            Command::Export(_) | Command::Completions { .. } | Command::Man(_) => Takes::default(),
        }
    }
}

impl Cli {
    /// The first option given before the subcommand that the subcommand
    /// does not take, as a usage error: it would do nothing there.
    pub fn misplaced(&self) -> Option<clap::Error> {
        let cmd = self.command.as_ref()?;
        let t = cmd.takes();
        let given = [
            ("--demo", self.demo.demo.is_some(), t.demo),
            ("--seed", self.demo.seed.is_some(), t.demo),
            ("--interval", self.interval.interval.is_some(), t.interval),
            ("--gpu", self.gpus.gpu.is_some(), t.gpus),
            ("--all-gpus", self.gpus.all_gpus, t.gpus),
            ("--config", self.config.config.is_some(), t.config),
            ("--color", self.ui.color.is_some(), t.color),
            ("--read-only", self.ui.read_only, false),
            ("--serve", self.ui.serve.is_some(), false),
        ];
        let (flag, _, _) = given.iter().find(|(_, given, takes)| *given && !takes)?;
        let name = cmd.name();
        let hint = match (*flag, name) {
            ("--interval", "snapshot") => " (`snapshot --watch INTERVAL` repeats it)".to_owned(),
            ("--serve", "record") => " (give it after `record`)".to_owned(),
            _ => String::new(),
        };
        let msg = format!(
            "`{flag}` does nothing for `vramwatch {name}`, so it is not one of its options{hint}; see `vramwatch {name} --help`"
        );
        let mut cli = Cli::command();
        Some(clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, msg).format(&mut cli))
    }

    /// What a command is given: the subcommand's own options where it has
    /// them (`None` where it takes none of that kind), else those given
    /// before it.
    pub fn source_for(
        &self,
        demo: Option<&DemoArgs>,
        interval: Option<&IntervalArg>,
        gpus: Option<&GpuArgs>,
        config: Option<&ConfigArg>,
    ) -> SourceArgs {
        let d = demo.filter(|d| d.demo.is_some()).unwrap_or(&self.demo);
        let g = gpus.filter(|g| g.given()).unwrap_or(&self.gpus);
        SourceArgs {
            demo: d.demo.clone(),
            seed: demo.and_then(|d| d.seed).or(self.demo.seed).unwrap_or(1),
            config: config
                .and_then(|c| c.config.clone())
                .or_else(|| self.config.config.clone()),
            interval: interval.and_then(|i| i.interval).or(self.interval.interval),
            gpus: g.selection(),
        }
    }

    /// The dashboard's own options.
    pub fn dashboard(&self) -> SourceArgs {
        self.source_for(None, None, None, None)
    }
}
