//! `vramwatch snapshot`: one sample as a memory-first table or as JSON
//! (schema in docs/snapshot-json.md).

use std::fmt::Write as _;

use crate::export::snapshot_json::to_json;
use crate::model::units::bytes_short;
use crate::model::{GpuState, Snapshot, SystemInfo};

/// `vramwatch snapshot [--json]`: reads every lane once and prints.
pub fn run(json: bool, source: &crate::cli::SourceArgs, me: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::{IsTerminal, Write};
    // A simulated node is shown a minute into its scenario.
    let src = crate::source::open(source.demo.as_deref(), source.seed, me, 60)?;
    let snap = crate::sampler::sample_once(src.as_ref(), std::time::Duration::from_millis(100));
    let system = src.system();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &to_json(&system, &snap)).context("writing JSON")?;
        writeln!(out)?;
    } else {
        let width = std::io::stdout()
            .is_terminal()
            .then(|| crossterm::terminal::size().ok().map(|(w, _)| w as usize))
            .flatten();
        out.write_all(to_table(&system, &snap, width).as_bytes())?;
    }
    out.flush()?;
    Ok(())
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
    let when = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(snap.t_ms),
    );
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
        "{:>3}  {:<14} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9}  {:>4} {:>4} {:>5} {:>13} {:>6} {:>3}",
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
        "P"
    );
    for g in &snap.gpus {
        let name = system
            .gpus
            .get(g.index as usize)
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
            "{:>3}  {:<14} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9}  {:>4} {:>4} {:>5} {:>13} {:>6} {:>3}",
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
    fn lost_gpus_say_so() {
        let (sys, mut snap) = demo();
        snap.gpus[1].state = GpuState::Lost;
        let t = to_table(&sys, &snap, None);
        assert!(t.contains("LOST"));
    }
}
