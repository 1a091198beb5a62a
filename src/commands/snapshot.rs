//! `vramwatch snapshot`: one sample as a memory-first table or as JSON
//! (schema in docs/snapshot-json.md); with `--watch`, one every interval
//! until Ctrl-C (as `nvidia-smi -l`).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cli::{Failure, SnapshotArgs, SourceArgs};
use crate::export::snapshot_json::to_json;
use crate::model::units::bytes_short;
use crate::model::{GpuState, Snapshot, SystemInfo};
use crate::source::Source;

/// How long CPU use is measured for the CPU % column.
const CPU_WINDOW: Duration = Duration::from_millis(100);

/// How the samples are printed.
struct Output {
    json: bool,
    ascii: bool,
    /// A terminal: the table is cut to its width (and, watching, redrawn).
    tty: bool,
    /// Above the table: which GPUs are shown, when not all.
    shown: Option<String>,
}

/// `vramwatch snapshot [--json] [--watch [INTERVAL]] [--ascii]`.
pub fn run(args: &SnapshotArgs, source: &SourceArgs, me: &str) -> Result<()> {
    let config = crate::config::load(source.config.as_deref())?;
    // A simulated node is shown a minute into its scenario.
    let (src, shown) = super::open_chosen(source, me, 60)?;
    let out = Output {
        json: args.json,
        ascii: args.ascii || config.display.ascii,
        tty: std::io::stdout().is_terminal(),
        shown,
    };
    match args.watch {
        None => {
            let snap = crate::sampler::sample_once(src.as_ref(), CPU_WINDOW);
            print(&out, &src.system(), &snap, false)?;
            lost(&snap)
        }
        Some(every) => watch(
            src.as_ref(),
            &out,
            every.unwrap_or(config.sampling.interval),
        ),
    }
}

/// A runtime failure when a GPU gave no readings (after they are printed).
fn lost(snap: &Snapshot) -> Result<()> {
    let lost: Vec<String> = snap
        .gpus
        .iter()
        .filter(|g| g.state == GpuState::Lost)
        .map(|g| g.index.to_string())
        .collect();
    if lost.is_empty() {
        return Ok(());
    }
    Err(Failure(format!(
        "GPU{} {} gave no readings (lost)",
        if lost.len() == 1 { "" } else { "s" },
        lost.join(", ")
    ))
    .into())
}

/// Samples every `every` until SIGINT or SIGTERM (either ends it with
/// success); sequence numbers count up and `events` say what changed since
/// the sample before.
fn watch(src: &dyn Source, out: &Output, every: Duration) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let stop = super::serve::Shutdown::listen()?.wait();
        tokio::pin!(stop);
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut prev: Option<Snapshot> = None;
        let mut counts = crate::sampler::OomCounts::default();
        loop {
            tokio::select! {
                r = &mut stop => return r,
                _ = tick.tick() => {
                    let mut snap = crate::sampler::sample_once(src, CPU_WINDOW);
                    if let Some(p) = &prev {
                        snap.seq = p.seq + 1;
                        let changes = crate::sampler::diff_events(p, &snap, &mut counts);
                        snap.events.extend(changes);
                    }
                    print(out, &src.system(), &snap, true)?;
                    prev = Some(snap);
                }
            }
        }
    })
}

/// Prints one sample: pretty JSON, or one line of JSON when `watching`; the
/// table, redrawn from the top of a terminal when `watching`.
fn print(out: &Output, system: &SystemInfo, snap: &Snapshot, watching: bool) -> Result<()> {
    let mut w = std::io::stdout().lock();
    if out.json {
        let doc = to_json(system, snap);
        if watching {
            serde_json::to_writer(&mut w, &doc).context("writing JSON")?;
        } else {
            serde_json::to_writer_pretty(&mut w, &doc).context("writing JSON")?;
        }
        writeln!(w)?;
    } else {
        let width = out
            .tty
            .then(|| crossterm::terminal::size().ok().map(|(w, _)| w as usize))
            .flatten();
        let mut table = String::new();
        if let Some(s) = &out.shown {
            let _ = writeln!(table, "{s}");
        }
        table.push_str(&to_table(system, snap, width));
        if out.ascii {
            table = ascii_only(&table);
        }
        if watching {
            if out.tty && std::env::var("TERM").map_or(true, |t| t != "dumb") {
                // Home and clear, as `watch` does.
                w.write_all(b"\x1b[H\x1b[2J")?;
            } else if snap.seq > 0 {
                writeln!(w)?;
            }
        }
        w.write_all(table.as_bytes())?;
    }
    w.flush()?;
    Ok(())
}

/// Non-ASCII characters (from other programs: names, users, commands) as
/// `?`, one for one, so the columns still line up.
pub fn ascii_only(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii() { c } else { '?' })
        .collect()
}

fn mib(b: Option<u64>) -> String {
    b.map_or_else(|| "N/A".into(), |b| crate::model::units::mib(b).to_string())
}

fn opt<T: std::fmt::Display>(v: Option<T>, unit: &str) -> String {
    v.map_or_else(|| "N/A".into(), |v| format!("{v}{unit}"))
}

/// The table, `width` columns wide (the command column is cut to fit;
/// `None` = never cut, for pipes and files).
pub fn to_table(system: &SystemInfo, snap: &Snapshot, width: Option<usize>) -> String {
    let mut out = String::new();
    let when =
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_millis(snap.t_ms));
    let _ = writeln!(
        out,
        "{}  driver {}  CUDA {}  {}  source {}",
        system.host,
        system.driver_version.as_deref().unwrap_or("N/A"),
        system.cuda_version.as_deref().unwrap_or("N/A"),
        when,
        system.source
    );
    let _ = writeln!(
        out,
        "{:>3}  {:<14} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9}  {:>4} {:>4} {:>5} {:>13} {:>6} {:>4}",
        "GPU",
        "NAME",
        "USED MiB",
        "RESV MiB",
        "FREE MiB",
        "TOTAL MiB",
        "USE%",
        "PEAK MiB",
        "UNACCT",
        "UTIL",
        "MEM%",
        "TEMP",
        "POWER W",
        "SM MHz",
        "PERF"
    );
    for g in &snap.gpus {
        let name = system
            .gpus
            .iter()
            .find(|d| d.index == g.index)
            .map_or("?", |d| d.name.as_str());
        let name: String = name.chars().take(14).collect();
        if g.state == GpuState::Lost {
            let _ = writeln!(out, "{:>3}  {:<14} LOST: no readings", g.index, name);
            continue;
        }
        let m = g.mem;
        let power = match (g.power_mw, g.power_limit_mw) {
            (Some(p), Some(l)) => format!("{} / {}", p / 1000, l / 1000),
            (Some(p), None) => format!("{}", p / 1000),
            _ => "N/A".into(),
        };
        let _ = writeln!(
            out,
            "{:>3}  {:<14} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9}  {:>4} {:>4} {:>5} {:>13} {:>6} {:>4}",
            g.index,
            name,
            mib(m.map(|m| m.used)),
            mib(m.map(|m| m.reserved)),
            mib(m.map(|m| m.free)),
            mib(m.map(|m| m.total)),
            m.map_or("N/A".into(), |m| format!("{:.1}%", m.used_pct())),
            mib(g.mem_peak),
            mib(g.unaccounted(&snap.procs)),
            opt(g.util_gpu, "%"),
            opt(g.util_mem, "%"),
            opt(g.temp_c, "C"),
            power,
            opt(g.sm_clock_mhz, ""),
            opt(g.pstate.map(|p| format!("P{p}")), ""),
        );
    }
    let _ = writeln!(out);
    if snap.procs.is_empty() {
        let _ = writeln!(out, "No processes on any GPU.");
        return out;
    }
    let head = format!(
        "{:>8} {:>3} {:>4} {:>9} {:>5} {:<12} {:<12} {:>6} {:>7}  ",
        "PID", "GPU", "TYPE", "MEM MiB", "SM%", "USER", "CONTAINER", "CPU%", "RSS"
    );
    let _ = writeln!(out, "{head}COMMAND");
    let mut procs: Vec<_> = snap.procs.iter().collect();
    procs.sort_by(|a, b| b.mem.cmp(&a.mem).then(a.pid.cmp(&b.pid)));
    for p in procs {
        let cut = |s: &str, n: usize| -> String { s.chars().take(n).collect() };
        let row = format!(
            "{:>8} {:>3} {:>4} {:>9} {:>5} {:<12} {:<12} {:>6} {:>7}  ",
            p.pid,
            p.gpu,
            p.kind.letter(),
            mib(p.mem),
            opt(p.sm_util, ""),
            cut(p.user.as_deref().unwrap_or("?"), 12),
            cut(p.container.as_deref().unwrap_or("-"), 12),
            p.cpu_pct.map_or("N/A".into(), |c| format!("{c:.0}")),
            p.rss.map_or("N/A".into(), bytes_short),
        );
        let room = width.map_or(usize::MAX, |w| w.saturating_sub(row.chars().count()).max(8));
        let _ = writeln!(out, "{row}{}", cut(p.label(), room));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::sim::SimWorld;

    const T0: u64 = 1_764_000_000_000;

    fn demo() -> (std::sync::Arc<SystemInfo>, Snapshot) {
        let w = SimWorld::new("demo", 1, T0).unwrap();
        (w.info(), w.snapshot(0, T0 + 30_000, "me"))
    }

    #[test]
    fn table_lists_every_gpu_and_process_memory_first() {
        let (sys, snap) = demo();
        let t = to_table(&sys, &snap, None);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].contains("USED MiB") && lines[1].contains("UNACCT"));
        assert_eq!(
            lines.iter().filter(|l| l.contains("NVIDIA H200")).count(),
            4
        );
        for p in &snap.procs {
            assert!(
                t.contains(&format!("{:>8} ", p.pid)),
                "pid {} missing",
                p.pid
            );
        }
        // GPU 2 carries 2 GiB that no process accounts for.
        let g2 = lines
            .iter()
            .find(|l| l.trim_start().starts_with("2  NVIDIA"))
            .unwrap();
        let unacct: u64 = g2.split_whitespace().nth(9).unwrap().parse().unwrap();
        assert!(unacct >= 2048, "{g2}");
    }

    #[test]
    fn narrow_tables_cut_the_command_only() {
        let (sys, snap) = demo();
        let t = to_table(&sys, &snap, Some(100));
        let proc_lines = t.lines().skip_while(|l| !l.contains("COMMAND")).skip(1);
        for l in proc_lines {
            assert!(l.chars().count() <= 100, "{l}");
        }
    }

    #[test]
    fn lost_gpus_say_so_and_fail() {
        let (sys, mut snap) = demo();
        assert!(lost(&snap).is_ok());
        snap.gpus[1].state = GpuState::Lost;
        let t = to_table(&sys, &snap, None);
        assert!(t.contains("LOST"));
        let e = lost(&snap).unwrap_err();
        assert_eq!(e.to_string(), "GPU 1 gave no readings (lost)");
        assert_eq!(crate::cli::exit_code(&e), 1);
    }

    #[test]
    fn ascii_only_keeps_the_columns() {
        let s = "  1 naïve-job 日本 x";
        let a = ascii_only(s);
        assert_eq!(a, "  1 na?ve-job ?? x");
        assert_eq!(a.chars().count(), s.chars().count());
    }

    #[test]
    fn cpu_percent_is_rounded_to_a_tenth() {
        let (sys, mut snap) = demo();
        snap.procs[0].cpu_pct = Some(142.556_44);
        snap.procs[1].cpu_pct = None;
        let doc = to_json(&sys, &snap);
        assert_eq!(doc["procs"][0]["cpu_pct"].to_string(), "142.6");
        assert!(doc["procs"][1]["cpu_pct"].is_null());
    }
}
