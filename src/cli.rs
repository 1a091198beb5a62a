//! Command-line interface (clap derive), and what the command line promises
//! beyond parsing: which options each command takes ([`Cli::misplaced`]),
//! what a command is given ([`Cli::source_for`]), exit codes ([`exit_code`]),
//! shell completions and man pages. `main.rs` dispatches on it.
//!
//! Options act only where they are listed: `--demo`, `--seed` and
//! `--interval` on the commands that sample, `--gpu` on those that show live
//! GPUs, `--config` on those that read the config. The dashboard's own
//! options (before any subcommand) may also be given before a subcommand
//! that takes them (`vramwatch --demo snapshot`); before one that does not,
//! they are an error rather than ignored.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::source::select::{GpuList, Selection};

/// The exit status, as `--help` and docs/cli.md give it.
pub const EXIT_STATUS: &str = "\
Exit status:
  0  success (also when the reader of the output goes away, as in `| head`)
  1  runtime failure: NVML or a GPU failed, a file could not be written, a
     recording could not be read completely (damaged, or cut short)
  2  usage or config error: a bad option or value, config file, address,
     scenario or GPU list; a file named on the command line that is missing
     or not what the command needs; no terminal for the dashboard";

/// What `export`, `report` and `score` do with a recording that is not
/// whole (docs/recording-format.md, "Damage and limits").
pub const READ_DAMAGED: &str = "\
A damaged recording, or one cut short inside its compressed data (a copy
stopped part way, `head -c`), is read as far as it can be: every part
skipped is a warning, and after the output the exit status is 1. One that
was not closed (still being recorded, or its recorder killed) is read to
its last whole snapshot with a warning: exit status 0.";

/// What `replay` does with a recording that is not whole.
pub const REPLAY_DAMAGED: &str = "\
A damaged recording, or one cut short inside its compressed data (a copy
stopped part way, `head -c`), is replayed as far as it can be read, the
footer saying what was skipped; when the dashboard is closed the warnings
are printed and the exit status is 1. One that was not closed (still being
recorded, or its recorder killed) is replayed to its last whole snapshot:
exit status 0.";

#[derive(Debug, Parser)]
#[command(
    name = "vramwatch",
    version,
    about = "A terminal dashboard for NVIDIA GPUs that puts memory first",
    long_about = "A terminal dashboard for NVIDIA GPUs that puts memory first: who holds GPU \
memory, how it moves, where the peaks are and when it will run out.\n\n\
Without a subcommand it opens the dashboard; the options below are the dashboard's. \
`--demo` runs everything on simulated GPUs.",
    after_help = EXIT_STATUS,
    subcommand_precedence_over_arg = true
)]
pub struct Cli {
    #[command(flatten)]
    pub demo: DemoArgs,

    #[command(flatten)]
    pub interval: IntervalArg,

    #[command(flatten)]
    pub gpus: GpuArgs,

    #[command(flatten)]
    pub config: ConfigArg,

    #[command(flatten)]
    pub ui: UiArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Simulated GPUs (the commands that sample).
#[derive(Debug, Clone, Args, Default)]
pub struct DemoArgs {
    /// Use simulated GPUs instead of NVML (SCENARIO: demo if not given).
    ///
    /// A subcommand right after a bare --demo is the subcommand (`vramwatch
    /// --demo snapshot`); `--demo=SCENARIO` always names a scenario.
    #[arg(
        long,
        value_name = "SCENARIO",
        num_args = 0..=1,
        default_missing_value = "demo",
        value_parser = scenarios()
    )]
    pub demo: Option<String>,

    /// Seed of the simulated scenario (default 1).
    #[arg(long, value_name = "N", requires = "demo", hide_short_help = true)]
    pub seed: Option<u64>,
}

fn scenarios() -> PossibleValuesParser {
    PossibleValuesParser::new(
        crate::source::sim::SCENARIOS
            .iter()
            .map(|(name, what)| PossibleValue::new(*name).help(*what)),
    )
}

/// The sampling interval (the commands that sample on a schedule).
#[derive(Debug, Clone, Args, Default)]
pub struct IntervalArg {
    /// Sampling interval, e.g. 500ms, 1s, 10s (100ms to 1m).
    ///
    /// The same range as `[sampling] interval` in the config, which it
    /// overrides.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Option<Duration>,
}

/// Which GPUs (the commands that show live GPUs).
#[derive(Debug, Clone, Args, Default)]
pub struct GpuArgs {
    /// Only these GPUs: indexes (`0-3` for 0 to 3), UUIDs or PCI bus ids,
    /// comma-separated.
    ///
    /// As `nvidia-smi -i` takes them: NVML indexes, UUIDs (`GPU-...`; a
    /// unique prefix will do) or PCI bus ids (`0000:18:00.0`); ranges of
    /// indexes such as `0-3` (up to 64 GPUs) as well. They are shown
    /// numbered from 0 in the order given, as CUDA numbers the devices of
    /// `CUDA_VISIBLE_DEVICES`. Default: `CUDA_VISIBLE_DEVICES` when it is
    /// set, else every GPU.
    #[arg(long, value_name = "LIST", value_parser = GpuList::parse)]
    pub gpu: Option<GpuList>,

    /// Every GPU, whatever `CUDA_VISIBLE_DEVICES` says.
    #[arg(long, conflicts_with = "gpu")]
    pub all_gpus: bool,
}

impl GpuArgs {
    fn selection(&self) -> Selection {
        match (&self.gpu, self.all_gpus) {
            (Some(list), _) => Selection::List(list.clone()),
            (None, true) => Selection::All,
            (None, false) => Selection::Auto,
        }
    }

    fn given(&self) -> bool {
        self.gpu.is_some() || self.all_gpus
    }
}

/// The config file (the commands that read it).
#[derive(Debug, Clone, Args, Default)]
pub struct ConfigArg {
    /// Config file (default: the platform config dir's
    /// vramwatch/config.toml, if it exists).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// Dashboard options.
#[derive(Debug, Clone, Args, Default)]
pub struct UiArgs {
    /// Colour depth; 16, 256 and truecolor win over NO_COLOR.
    ///
    /// `auto` (the default, or `[display] color`) reads NO_COLOR, COLORTERM
    /// and TERM. An explicit depth, here or in the config, is used even when
    /// NO_COLOR is set, as no-color.org asks.
    #[arg(long, value_enum, value_name = "DEPTH")]
    pub color: Option<ColorArg>,

    /// Disable terminate/kill actions.
    #[arg(long)]
    pub read_only: bool,

    /// Draw with ASCII only: no box drawing, blocks or braille.
    ///
    /// For terminals and fonts without them; other programs' non-ASCII
    /// characters show as `?`. `[display] ascii = true` in the config does
    /// the same.
    #[arg(long)]
    pub ascii: bool,

    /// Also serve Prometheus metrics on this address (an IP address and
    /// port, e.g. 127.0.0.1:9400).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
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
    /// Print one sample as a table (memory first) or JSON; --watch repeats.
    Snapshot(SnapshotArgs),
    /// Record to a file without a UI (for nohup, tmux, systemd).
    Record(RecordArgs),
    /// Open the dashboard over a recording, with a timeline.
    #[command(after_help = REPLAY_DAMAGED)]
    Replay(ReplayArgs),
    /// Convert a recording to CSV.
    #[command(after_help = READ_DAMAGED)]
    Export(ExportArgs),
    /// Summarise a recording: peaks, time above thresholds, top processes.
    #[command(after_help = READ_DAMAGED)]
    Report(ReportArgs),
    /// Serve Prometheus metrics (/metrics), JSON (/snapshot) and /healthz.
    Serve(ServeArgs),
    /// Every GPU of a cluster in one dashboard, read from Prometheus
    /// (docs/fleet.md).
    Fleet(crate::fleet::args::FleetArgs),
    /// Score the analysis on recordings with ground truth: forecasts before
    /// each OOM, leak flags, false alarms (docs/analysis.md).
    #[command(after_help = READ_DAMAGED)]
    Score(ScoreArgs),
    /// Write or check the config file.
    Config {
        /// The config file the action works on when it is given no PATH.
        #[arg(long, value_name = "PATH", global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print a shell completion script.
    ///
    /// For example `vramwatch completions bash >
    /// /etc/bash_completion.d/vramwatch`, or `source <(vramwatch completions
    /// bash)` in ~/.bashrc; see docs/cli.md for zsh, fish, elvish and
    /// PowerShell.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): vramwatch(1), or a subcommand's.
    Man(ManArgs),
    /// Measure the sampler's CPU cost against the raw NVML calls (for
    /// benchmarks; prints JSON).
    #[command(hide = true)]
    BenchSampler {
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        /// Instead: the CPU and wall time of each NVML call on GPU 0.
        #[arg(long)]
        calls: bool,
        /// With --calls: the calls spaced out on the sampler's schedule
        /// (the config's, with --interval: the fast lane's memory reads,
        /// the normal lane, process utilisation as while on screen, the
        /// slow lane's ECC and PCIe replays) for --seconds.
        #[arg(long, requires = "calls")]
        spaced: bool,
        #[command(flatten)]
        demo: DemoArgs,
        #[command(flatten)]
        interval: IntervalArg,
        #[command(flatten)]
        config: ConfigArg,
    },
}

#[derive(Debug, Clone, Args)]
pub struct SnapshotArgs {
    /// Print JSON (schema: docs/snapshot-json.md); with --watch, one
    /// document per line.
    #[arg(long)]
    pub json: bool,
    /// Print a sample every INTERVAL until Ctrl-C (default 1s).
    ///
    /// As `nvidia-smi -l`. INTERVAL defaults to `[sampling] interval` (1s)
    /// and is 100ms to 1m. On a terminal the table is redrawn in place.
    #[arg(
        long,
        short = 'w',
        value_name = "INTERVAL",
        num_args = 0..=1,
        value_parser = parse_interval
    )]
    pub watch: Option<Option<Duration>>,
    /// ASCII only: other programs' non-ASCII characters print as `?`.
    ///
    /// Names, users and commands keep their columns aligned on any
    /// terminal. `[display] ascii = true` in the config does the same.
    #[arg(long)]
    pub ascii: bool,
    #[command(flatten)]
    pub demo: DemoArgs,
    #[command(flatten)]
    pub gpus: GpuArgs,
    #[command(flatten)]
    pub config: ConfigArg,
}

#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// File to write (`.jsonl`, or `.jsonl.zst` to compress).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Stop after this long (e.g. 10m, 8h); default: until Ctrl-C or SIGTERM.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Also serve Prometheus metrics on this address (an IP address and port).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub serve: Option<String>,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,
    /// Run this command (after `--`), record while it runs, stop when it
    /// exits and exit with its exit code: `record -o run.jsonl.zst --
    /// python train.py --steps 200`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
    #[command(flatten)]
    pub demo: DemoArgs,
    #[command(flatten)]
    pub interval: IntervalArg,
    #[command(flatten)]
    pub gpus: GpuArgs,
    #[command(flatten)]
    pub config: ConfigArg,
}

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// A recording (`.jsonl` or `.jsonl.zst`).
    pub file: PathBuf,
    /// Colour depth (as the dashboard's --color).
    #[arg(long, value_enum, value_name = "DEPTH")]
    pub color: Option<ColorArg>,
    /// Draw with ASCII only (as the dashboard's --ascii).
    #[arg(long)]
    pub ascii: bool,
    #[command(flatten)]
    pub config: ConfigArg,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// A recording (`.jsonl` or `.jsonl.zst`).
    pub file: PathBuf,
    /// Write CSV (the only format so far).
    #[arg(long, required = true)]
    pub csv: bool,
    /// Only this GPU (its number in the recording).
    #[arg(long, value_name = "N")]
    pub gpu: Option<u32>,
    /// One row per process per snapshot (a long table) instead of one per
    /// GPU.
    #[arg(long)]
    pub processes: bool,
    /// Only the rows of this process (implies --processes).
    #[arg(long, value_name = "PID")]
    pub process: Option<u32>,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the -o file if it exists.
    #[arg(long, requires = "output")]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A recording (`.jsonl` or `.jsonl.zst`).
    pub file: PathBuf,
    /// Also draw memory over time as SVG (with --baseline: both runs on
    /// one time axis).
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,
    /// Compare FILE with this earlier recording of the same job
    /// (docs/baseline.md).
    #[arg(long, value_name = "OLD")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: exit 1 when FILE exceeds OLD by more than LIMIT, a
    /// percentage (5%) or an amount of memory (512MiB, 1GiB).
    #[arg(long, value_name = "LIMIT", requires = "baseline")]
    pub fail_above: Option<String>,
    /// With --baseline: the figure --fail-above checks.
    #[arg(long, value_name = "FIGURE", requires = "baseline",
          value_parser = ["peak", "mean", "p95"], default_value = "peak")]
    pub metric: String,
    /// With --baseline: print JSON instead of the table.
    #[arg(long, requires = "baseline")]
    pub json: bool,
    /// With --baseline --svg: start each run's time axis at its GPU's first
    /// process (start), or use the clock (wall).
    #[arg(long, value_name = "AXIS", requires = "baseline",
          value_parser = ["start", "wall"], default_value = "start")]
    pub align: String,
    /// With --baseline: pair GPUs by `auto`, `index`, `model`, or NEW=OLD
    /// pairs such as 0=1,1=0.
    #[arg(
        long,
        value_name = "RULE",
        requires = "baseline",
        default_value = "auto"
    )]
    pub match_gpu: String,
    #[command(flatten)]
    pub config: ConfigArg,
}

#[derive(Debug, Clone, Args)]
pub struct ScoreArgs {
    /// Recordings (`.jsonl` or `.jsonl.zst`), each with its truth beside it
    /// as `<name>.truth.json`; a folder stands for the recordings in it and
    /// in the folders directly in it that have their truth beside them.
    #[arg(required = true, value_name = "RECORDING")]
    pub recordings: Vec<PathBuf>,
    /// The truth file of the one recording given.
    #[arg(long, value_name = "FILE")]
    pub truth: Option<PathBuf>,
    /// Print JSON instead of the markdown table.
    #[arg(long)]
    pub json: bool,
    /// Instead of a line per run, a line per group of runs and one for
    /// them all: `set`, the folder each recording is in (a corpus set);
    /// `shape`, the workload and its variant, whatever the speed.
    #[arg(long, value_enum, value_name = "GROUP")]
    pub by: Option<ScoreBy>,
    #[command(flatten)]
    pub config: ConfigArg,
}

/// How `score --by` groups the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScoreBy {
    /// The folder each recording is in.
    Set,
    /// The workload and its variant.
    Shape,
}

impl ScoreBy {
    /// The word on the command line, and heading the table's first column.
    pub fn name(self) -> &'static str {
        match self {
            ScoreBy::Set => "set",
            ScoreBy::Shape => "shape",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on: an IP address and port (default: [serve]
    /// listen in the config, 127.0.0.1:9400).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub listen: Option<String>,
    #[command(flatten)]
    pub demo: DemoArgs,
    #[command(flatten)]
    pub interval: IntervalArg,
    #[command(flatten)]
    pub gpus: GpuArgs,
    #[command(flatten)]
    pub config: ConfigArg,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// A subcommand's page (vramwatch-snapshot(1), ...) instead.
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "dir")]
    pub command: Option<String>,
    /// Write every page (vramwatch.1, vramwatch-snapshot.1, ...) into DIR.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ConfigAction {
    /// Write the documented default config (to PATH or the platform file).
    Init {
        /// Where to write it (default: `--config PATH`, else the platform
        /// file `vramwatch config path` prints, ~/.config/vramwatch/config.toml
        /// on Linux); its directory is created, and an existing file is
        /// refused unless `--force` is given.
        #[arg(value_name = "PATH")]
        path: Option<PathBuf>,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Validate a config file (PATH or the platform file).
    Check {
        /// The file to check; default: `--config PATH`, else the platform
        /// file (`vramwatch config path` prints it).
        #[arg(value_name = "PATH")]
        path: Option<PathBuf>,
    },
    /// Print where the config file is looked for.
    Path,
}

/// What a command that samples, or reads the config, is given: the
/// subcommand's own options, else the same options given before it.
#[derive(Debug, Clone)]
pub struct SourceArgs {
    /// A simulated scenario instead of NVML.
    pub demo: Option<String>,
    pub seed: u64,
    pub config: Option<PathBuf>,
    pub interval: Option<Duration>,
    /// Which GPUs to show.
    pub gpus: Selection,
}

impl Default for SourceArgs {
    fn default() -> Self {
        SourceArgs {
            demo: None,
            seed: 1,
            config: None,
            interval: None,
            gpus: Selection::Auto,
        }
    }
}

/// Parses `--interval`: a duration within the config's range for
/// `[sampling] interval`.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    crate::config::parse_interval(s)
}

/// Parses `--listen` and `--serve` as the config reads `[serve] listen`.
pub fn parse_listen(s: &str) -> Result<String, String> {
    crate::config::parse_listen(s)
        .map(|a| a.to_string())
        .map_err(|why| format!("`{s}` is not a listen address: {why}"))
}

/// The longest `record --duration`: a year (leave it out to record until
/// stopped). Longer would overflow the clock's arithmetic.
const MAX_RECORD_DURATION: Duration = Duration::from_secs(366 * 86_400);

/// Parses `record --duration`, like `90s`, `10m`, `1h30m`: from 100ms to
/// [`MAX_RECORD_DURATION`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let shown = crate::sanitize::clean_capped(s, 40);
    let d = crate::config::units::parse_duration(s).map_err(|why| format!("`{shown}`: {why}"))?;
    if d < Duration::from_millis(100) || d > MAX_RECORD_DURATION {
        return Err(format!(
            "`{shown}` is out of range: from 100ms to 366d (leave --duration out to record until stopped)"
        ));
    }
    Ok(d)
}

mod exit;
mod outputs;
mod pages;
mod takes;

pub use exit::{Failure, Usage, exit_code, exit_on_clap_error, message};
pub use outputs::not_an_input;
pub use pages::{write_completions, write_man, write_man_pages};

#[cfg(test)]
mod tests;
