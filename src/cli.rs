//! Command-line interface (clap derive). `main.rs` dispatches on it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "vramwatch",
    version,
    about = "A terminal dashboard for NVIDIA GPUs that puts memory first",
    long_about = "A terminal dashboard for NVIDIA GPUs that puts memory first: who holds GPU \
memory, how it moves, where the peaks are and when it will run out.\n\n\
Without a subcommand it opens the dashboard. `--demo` runs everything on simulated GPUs."
)]
pub struct Cli {
    #[command(flatten)]
    pub source: SourceArgs,

    #[command(flatten)]
    pub ui: UiArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Where the figures come from.
#[derive(Debug, Clone, Args, Default)]
pub struct SourceArgs {
    /// Use simulated GPUs instead of NVML. SCENARIO: demo (default), training,
    /// leak, inference, idle, crowded.
    #[arg(long, value_name = "SCENARIO", num_args = 0..=1, default_missing_value = "demo", global = true)]
    pub demo: Option<String>,

    /// Seed of the simulated scenario.
    #[arg(long, default_value_t = 1, global = true, hide_short_help = true)]
    pub seed: u64,

    /// Config file (default: the platform config dir's vramwatch/config.toml).
    #[arg(long, value_name = "PATH", global = true)]
    pub config: Option<PathBuf>,

    /// Display and sampling interval, e.g. 1s, 500ms (minimum 100ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_interval, global = true)]
    pub interval: Option<Duration>,
}

/// Dashboard options.
#[derive(Debug, Clone, Args, Default)]
pub struct UiArgs {
    /// Colour depth: auto reads COLORTERM and TERM; NO_COLOR turns colour off.
    #[arg(long, value_enum, value_name = "DEPTH")]
    pub color: Option<ColorArg>,

    /// Disable terminate/kill actions.
    #[arg(long)]
    pub read_only: bool,

    /// Also serve Prometheus metrics on this address (e.g. 127.0.0.1:9400).
    #[arg(long, value_name = "ADDR")]
    pub serve: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    Auto,
    #[value(name = "16")]
    Ansi16,
    #[value(name = "256")]
    Ansi256,
    Truecolor,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print one sample as a table (memory first) or JSON, then exit.
    Snapshot {
        /// Print JSON (schema: docs/snapshot-json.md).
        #[arg(long)]
        json: bool,
    },
    /// Record to a file without a UI (for nohup, tmux, systemd).
    Record(RecordArgs),
    /// Open the dashboard over a recording, with a timeline.
    Replay(ReplayArgs),
    /// Convert a recording to CSV.
    Export(ExportArgs),
    /// Summarise a recording: peaks, time above thresholds, top processes.
    Report(ReportArgs),
    /// Serve Prometheus metrics (/metrics), JSON (/snapshot) and /healthz.
    Serve(ServeArgs),
    /// Score the analysis on recordings with ground truth: forecasts before
    /// each OOM, leak flags, false alarms (docs/analysis.md).
    Score(ScoreArgs),
    /// Write or check the config file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Measure the sampler's CPU cost against the raw NVML calls (for
    /// benchmarks; prints JSON).
    #[command(hide = true)]
    BenchSampler {
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        /// Instead: the CPU and wall time of each NVML call on GPU 0.
        #[arg(long)]
        calls: bool,
    },
}

#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// File to write (`.jsonl`, or `.jsonl.zst` to compress).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Stop after this long (e.g. 10m, 8h); default: until Ctrl-C or SIGTERM.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Also serve Prometheus metrics on this address.
    #[arg(long, value_name = "ADDR")]
    pub serve: Option<String>,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// A recording (`.jsonl` or `.jsonl.zst`).
    pub file: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// A recording (`.jsonl` or `.jsonl.zst`).
    pub file: PathBuf,
    /// Write CSV (the only format so far).
    #[arg(long, required = true)]
    pub csv: bool,
    /// Only this GPU.
    #[arg(long, value_name = "N")]
    pub gpu: Option<u32>,
    /// One row per sample of this process instead of one per GPU.
    #[arg(long, value_name = "PID")]
    pub process: Option<u32>,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A recording (`.jsonl` or `.jsonl.zst`).
    pub file: PathBuf,
    /// Also draw memory over time as SVG.
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ScoreArgs {
    /// Recordings (`.jsonl` or `.jsonl.zst`), each with its truth beside it
    /// as `<name>.truth.json`.
    #[arg(required = true, value_name = "RECORDING")]
    pub recordings: Vec<PathBuf>,
    /// The truth file of the one recording given.
    #[arg(long, value_name = "FILE")]
    pub truth: Option<PathBuf>,
    /// Print JSON instead of the markdown table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on (default from the config: 127.0.0.1:9400).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ConfigAction {
    /// Write the documented default config (to PATH or the platform file).
    Init {
        path: Option<PathBuf>,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Validate a config file (PATH or the platform file).
    Check { path: Option<PathBuf> },
    /// Print where the config file is looked for.
    Path,
}

/// Parses an interval like `1s`, `250ms`, `2m`; at least 100 ms.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_millis(100) {
        return Err(format!(
            "`{s}` is shorter than the minimum interval of 100ms"
        ));
    }
    Ok(d)
}

/// Parses a duration like `90s`, `10m`, `1h30m`, `500ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("`{s}` is not a duration ({e}); use e.g. 500ms, 1s, 10m, 2h"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn demo_takes_an_optional_scenario() {
        let c = Cli::try_parse_from(["vramwatch", "--demo"]).unwrap();
        assert_eq!(c.source.demo.as_deref(), Some("demo"));
        let c = Cli::try_parse_from(["vramwatch", "--demo", "leak"]).unwrap();
        assert_eq!(c.source.demo.as_deref(), Some("leak"));
        let c = Cli::try_parse_from(["vramwatch", "snapshot", "--demo", "--json"]).unwrap();
        assert_eq!(c.source.demo.as_deref(), Some("demo"));
        assert!(matches!(c.command, Some(Command::Snapshot { json: true })));
        let c = Cli::try_parse_from(["vramwatch"]).unwrap();
        assert!(c.source.demo.is_none() && c.command.is_none());
    }

    #[test]
    fn intervals_have_a_floor() {
        assert_eq!(parse_interval("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_interval("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_interval("50ms").unwrap_err().contains("minimum"));
        assert!(
            parse_interval("soon")
                .unwrap_err()
                .contains("not a duration")
        );
    }
}
