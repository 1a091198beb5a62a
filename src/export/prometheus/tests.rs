//! The exposition of simulated snapshots: names, units, labels, escaping,
//! and the format's rules (unique series, contiguous families).

use super::process::{MAX_COMMAND_LABEL, command_label};
use super::*;
use crate::config::Severity;
use crate::export::window::Peaks;
use crate::export::{AlertState, GpuExtra, ProcExtra};
use crate::model::units::{GIB, MIB};
use crate::model::{EventKind, GpuSample, GpuState, MemInfo, ProcessKey};
use crate::source::sim::SimWorld;
use std::sync::Arc;

const T0: u64 = 1_764_000_000_000;

pub(super) fn demo() -> (Arc<SystemInfo>, Snapshot) {
    let w = SimWorld::new("demo", 1, T0).unwrap();
    (w.info(), w.snapshot(3, T0 + 30_000, "me"))
}

fn render(sys: &SystemInfo, snap: &Snapshot, extra: Option<&Extra>) -> String {
    render_with(sys, snap, extra, &Render::default())
}

pub(super) fn render_with(
    sys: &SystemInfo,
    snap: &Snapshot,
    extra: Option<&Extra>,
    opts: &Render,
) -> String {
    let labels = Labels::new(sys, snap, opts);
    let xid = BTreeMap::new();
    let mut text = Body {
        system: sys,
        snap,
        labels: &labels,
        last_xid: &xid,
        extra,
    }
    .render();
    text.push_str(&render_peaks(&labels, &Peaks::of(snap)));
    text
}

#[test]
fn pytorch_allocator_figures_become_vramwatch_torch_metrics() {
    let (sys, snap) = demo();
    let text = render(&sys, &snap, None);
    let torch: Vec<_> = snap.procs.iter().filter(|p| p.torch.is_some()).collect();
    assert!(
        !torch.is_empty(),
        "the demo's training ranks publish figures"
    );
    let alloc = samples(&text, "vramwatch_torch_allocated_bytes");
    assert_eq!(alloc.len(), torch.len());
    for p in torch {
        let d = &p.torch.as_ref().unwrap().devices[0];
        let want = format!("pid=\"{}\"", p.pid);
        let (_, v) = alloc
            .iter()
            .find(|(s, _)| s.contains(&want))
            .expect("series per process");
        assert_eq!(v.parse::<f64>().unwrap(), d.allocated as f64);
    }
    assert!(text.contains("# TYPE vramwatch_torch_alloc_retries_total counter"));
    // No publisher, no family.
    let mut plain = snap.clone();
    for p in &mut plain.procs {
        p.torch = None;
    }
    assert!(!render(&sys, &plain, None).contains("vramwatch_torch_"));
}

/// `name{labels} value` lines whose name is `name` exactly.
pub(super) fn samples<'t>(text: &'t str, name: &str) -> Vec<(&'t str, &'t str)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let n = series.split('{').next()?;
            (n == name).then_some((series, value))
        })
        .collect()
}

#[test]
fn label_values_are_escaped() {
    let mut s = String::new();
    escape_label_value(&mut s, "a\\b\"c\nd é");
    assert_eq!(s, "a\\\\b\\\"c\\nd é");
    let mut h = String::new();
    escape_help(&mut h, "x\\y\nz \"q\"");
    assert_eq!(h, "x\\\\y\\nz \"q\"");
}

#[test]
fn commands_are_sanitised_and_cut() {
    assert_eq!(command_label("python train.py"), "python train.py");
    assert_eq!(command_label("evil\x1b[2Jcmd\nnext"), "evilcmd next");
    let long = "x".repeat(200);
    let cut = command_label(&long);
    assert_eq!(cut.chars().count(), MAX_COMMAND_LABEL);
    assert!(cut.ends_with('…'));
    assert_eq!(command_label(&"y".repeat(64)), "y".repeat(64));
}

#[test]
fn floats_are_written_as_prometheus_reads_them() {
    let w = |v| {
        let mut s = String::new();
        Value::Float(v).write(&mut s);
        s
    };
    assert_eq!(w(35.686), "35.686");
    assert_eq!(w(1.0), "1.0");
    assert_eq!(w(f64::INFINITY), "+Inf");
    assert_eq!(w(f64::NEG_INFINITY), "-Inf");
    assert_eq!(w(f64::NAN), "NaN");
    assert_eq!(w(1e300), "1e300");
}

#[test]
fn device_metrics_use_dcgm_names_labels_and_units() {
    let (sys, snap) = demo();
    let text = render(&sys, &snap, None);
    let g0 = &snap.gpus[0];
    let d0 = &sys.gpus[0];
    let used = samples(&text, "DCGM_FI_DEV_FB_USED");
    assert_eq!(used.len(), 4);
    let want = format!(
        "DCGM_FI_DEV_FB_USED{{gpu=\"0\",UUID=\"{}\",pci_bus_id=\"{}\",device=\"nvidia0\",modelName=\"NVIDIA H200\",Hostname=\"sim-node\"",
        d0.uuid, d0.pci_bus_id
    );
    assert!(used[0].0.starts_with(&want), "{}", used[0].0);
    // MiB, whole, as DCGM reports them.
    let m = g0.mem.unwrap();
    assert_eq!(used[0].1, m.used.div_ceil(MIB).to_string());
    assert_eq!(
        samples(&text, "DCGM_FI_DEV_FB_RESERVED")[0].1,
        m.reserved.div_ceil(MIB).to_string()
    );
    assert_eq!(
        samples(&text, "DCGM_FI_DEV_FB_FREE")[0].1,
        m.free.div_ceil(MIB).to_string()
    );
    // Watts, not milliwatts; mJ stays mJ.
    let w: f64 = samples(&text, "DCGM_FI_DEV_POWER_USAGE")[0]
        .1
        .parse()
        .unwrap();
    assert_eq!(w, f64::from(g0.power_mw.unwrap()) / 1000.0);
    assert!(w > 1.0 && w < 1000.0, "{w} W");
    assert_eq!(
        samples(&text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")[0].1,
        g0.energy_mj.unwrap().to_string()
    );
    assert!(text.contains("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
    assert!(text.contains("# TYPE DCGM_FI_DEV_FB_USED gauge\n"));
    assert!(text.contains("# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"));
    for name in [
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
    ] {
        assert_eq!(samples(&text, name).len(), 4, "{name}");
    }
    assert_eq!(
        samples(&text, "DCGM_FI_DEV_SM_CLOCK")[1].1,
        snap.gpus[1].sm_clock_mhz.unwrap().to_string()
    );
}

#[test]
fn vramwatch_metrics_are_in_bytes_with_process_labels() {
    let (sys, snap) = demo();
    let text = render(&sys, &snap, None);
    let used = samples(&text, "vramwatch_gpu_memory_used_bytes");
    assert_eq!(used[0].1, snap.gpus[0].mem.unwrap().used.to_string());
    assert!(!used[0].0.contains("modelName"));
    let un = samples(&text, "vramwatch_gpu_memory_unaccounted_bytes");
    assert_eq!(
        un[2].1,
        snap.gpus[2].unaccounted(&snap.procs).unwrap().to_string()
    );
    let procs = samples(&text, "vramwatch_process_memory_bytes");
    let with_mem = snap.procs.iter().filter(|p| p.mem.is_some()).count();
    assert_eq!(procs.len(), with_mem);
    let p = snap.procs.iter().find(|p| p.mem.is_some()).unwrap();
    let line = procs
        .iter()
        .find(|(s, _)| {
            s.contains(&format!("pid=\"{}\"", p.pid)) && s.contains(&format!("gpu=\"{}\"", p.gpu))
        })
        .unwrap();
    assert_eq!(line.1, p.mem.unwrap().to_string());
    assert_eq!(
        line.0,
        format!(
            "vramwatch_process_memory_bytes{{gpu=\"{}\",Hostname=\"sim-node\",pid=\"{}\",start_time=\"{}\"}}",
            p.gpu, p.pid, p.start_time
        )
    );
    let info = samples(&text, "vramwatch_process_info");
    let info = info
        .iter()
        .find(|(s, _)| {
            s.contains(&format!(
                "pid=\"{}\",start_time=\"{}\"",
                p.pid, p.start_time
            ))
        })
        .unwrap();
    assert!(
        info.0
            .contains(&format!("user=\"{}\"", p.user.as_deref().unwrap()))
    );
    assert!(info.0.contains("command=\"") && info.0.contains("container_id=\""));
    assert_eq!(info.1, "1");
    assert_eq!(
        samples(&text, "vramwatch_process_memory_peak_bytes").len(),
        snap.procs.iter().filter(|p| p.mem_peak.is_some()).count()
    );
    assert_eq!(
        samples(&text, "vramwatch_gpu_memory_peak_bytes")[0].1,
        snap.gpus[0].mem_peak.unwrap().to_string()
    );
    assert_eq!(samples(&text, "vramwatch_snapshot_seq")[0].1, "3");
    // One-hot state per GPU.
    let st = samples(&text, "vramwatch_gpu_state");
    assert_eq!(st.len(), 12);
    assert!(st[0].0.ends_with("state=\"ok\"}") && st[0].1 == "1");
}

#[test]
fn hostile_process_strings_cannot_break_the_format() {
    let (sys, mut snap) = demo();
    snap.procs[0].command = Some("x\" } evil{a=\"1\"} 99\n# TYPE fake gauge\\".into());
    snap.procs[0].user = Some("us\"er\\".into());
    let text = render(&sys, &snap, None);
    for l in text.lines() {
        assert!(
            !l.starts_with("fake") && !l.starts_with("# TYPE fake"),
            "{l}"
        );
    }
    let line = samples(&text, "vramwatch_process_info")
        .into_iter()
        .find(|(s, _)| s.contains("evil"))
        .unwrap();
    assert!(
        line.0
            .contains(r#"command="x\" } evil{a=\"1\"} 99 # TYPE fake gauge\\""#),
        "{}",
        line.0
    );
    assert!(line.0.contains(r#"user="us\"er\\""#));
}

#[test]
fn duplicate_processes_on_a_gpu_become_one_series() {
    let (sys, mut snap) = demo();
    let mut dup = snap.procs[0].clone();
    dup.mem = Some(GIB);
    let first = snap.procs[0].mem.unwrap();
    snap.procs.push(dup);
    let text = render(&sys, &snap, None);
    let key = format!("pid=\"{}\"", snap.procs[0].pid);
    let gpu = format!("gpu=\"{}\"", snap.procs[0].gpu);
    let lines: Vec<_> = samples(&text, "vramwatch_process_memory_bytes")
        .into_iter()
        .filter(|(s, _)| s.contains(&key) && s.contains(&gpu))
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].1, (first + GIB).to_string());
}

#[test]
fn every_series_is_unique_and_families_are_contiguous() {
    let w = SimWorld::new("crowded", 3, T0).unwrap();
    let snap = w.snapshot(0, T0 + 60_000, "me");
    let text = render(&w.info(), &snap, None);
    let mut series = std::collections::HashSet::new();
    let mut families = Vec::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            families.push(rest.split(' ').next().unwrap().to_owned());
            continue;
        }
        if l.starts_with('#') {
            continue;
        }
        let (s, _) = l.rsplit_once(' ').unwrap();
        assert!(series.insert(s.to_owned()), "duplicate series {s}");
        let name = s.split('{').next().unwrap();
        assert_eq!(families.last().map(String::as_str), Some(name), "{l}");
    }
    let n = families.len();
    families.sort();
    families.dedup();
    assert_eq!(families.len(), n, "a family appears twice");
}

#[test]
fn lost_gpus_drop_readings_but_keep_state_and_xid() {
    let (sys, mut snap) = demo();
    snap.gpus[1] = GpuSample {
        index: 1,
        state: GpuState::Lost,
        ..Default::default()
    };
    let labels = Labels::new(&sys, &snap, &Render::default());
    let xid = BTreeMap::from([(1, 79)]);
    let text = Body {
        system: &sys,
        snap: &snap,
        labels: &labels,
        last_xid: &xid,
        extra: None,
    }
    .render();
    assert_eq!(samples(&text, "DCGM_FI_DEV_FB_USED").len(), 3);
    let x = samples(&text, "DCGM_FI_DEV_XID_ERRORS");
    assert_eq!(x[1].1, "79");
    assert_eq!(x[0].1, "0");
    assert!(text.contains("gpu=\"1\",UUID") && text.contains("state=\"lost\"} 1"));
}

#[test]
fn analysis_figures_show_when_fed() {
    let (sys, snap) = demo();
    assert!(!render(&sys, &snap, None).contains("seconds_to_full"));
    let p = &snap.procs[0];
    let extra = Extra {
        gpus: vec![
            GpuExtra {
                index: 1,
                growth_bps: Some(4.0 * MIB as f64),
                seconds_to_full: Some(250.5),
                seconds_to_full_low: Some(240.0),
                seconds_to_full_high: None,
                at_risk_ratio: None,
            },
            GpuExtra {
                index: 0,
                growth_bps: Some(-1.5),
                seconds_to_full: None,
                seconds_to_full_low: None,
                seconds_to_full_high: None,
                at_risk_ratio: Some(0.991),
            },
            // Not in the snapshot: ignored.
            GpuExtra {
                index: 9,
                growth_bps: Some(1.0),
                seconds_to_full: Some(1.0),
                ..Default::default()
            },
        ],
        procs: vec![ProcExtra {
            key: ProcessKey {
                pid: p.pid,
                start_time: p.start_time,
            },
            gpu: p.gpu,
            growth_bps: Some(1024.0),
            leak_suspected: true,
        }],
        alerts: vec![AlertState {
            name: "forecast".into(),
            gpu: Some(1),
            pid: None,
            severity: Severity::Critical,
            active: true,
        }],
    };
    let text = render(&sys, &snap, Some(&extra));
    let s2f = samples(&text, "vramwatch_gpu_memory_seconds_to_full");
    assert_eq!(s2f.len(), 1);
    assert!(s2f[0].0.contains("gpu=\"1\"") && s2f[0].1 == "250.5");
    let low = samples(&text, "vramwatch_gpu_memory_seconds_to_full_low");
    assert_eq!(low.len(), 1);
    assert_eq!(low[0].1, "240.0");
    assert!(
        samples(&text, "vramwatch_gpu_memory_seconds_to_full_high").is_empty(),
        "open-ended: absent"
    );
    let risk = samples(&text, "vramwatch_gpu_memory_at_risk_ratio");
    assert_eq!(risk.len(), 1);
    assert!(risk[0].0.contains("gpu=\"0\"") && risk[0].1 == "0.991");
    let g = samples(&text, "vramwatch_gpu_memory_growth_bytes_per_second");
    assert_eq!(g.len(), 2);
    assert_eq!(g[1].1, "-1.5");
    let leak = samples(&text, "vramwatch_process_leak_suspected");
    assert_eq!(leak.len(), 1);
    assert!(leak[0].0.contains(&format!("pid=\"{}\"", p.pid)) && leak[0].1 == "1");
    let a = samples(&text, "vramwatch_alert_active");
    assert_eq!(
        a[0].0,
        "vramwatch_alert_active{alert=\"forecast\",severity=\"critical\",gpu=\"1\",pid=\"\",Hostname=\"sim-node\"}"
    );
}

#[test]
fn xid_codes_are_read_from_events() {
    // The sampler's own wording, so a change there fails here.
    let mut a = crate::sampler::Assembler::new(1);
    a.fold_slow(
        0,
        Ok(crate::source::SlowReading {
            xids: vec![79],
            ..Default::default()
        }),
    );
    let s = a.publish(0, 0);
    let e = &s.events[0];
    assert_eq!(xid_of(e.kind, &e.message), Some(79));
    assert_eq!(xid_of(EventKind::Note, "XID 79 on GPU 0"), None);
    assert_eq!(xid_of(EventKind::Xid, "garbage"), None);
}

#[test]
fn a_gpu_without_memory_readings_has_no_memory_series() {
    let (sys, mut snap) = demo();
    snap.gpus[3].mem = None;
    snap.gpus[3].mem_peak = None;
    let text = render(&sys, &snap, None);
    assert_eq!(samples(&text, "DCGM_FI_DEV_FB_FREE").len(), 3);
    assert_eq!(samples(&text, "vramwatch_gpu_memory_peak_bytes").len(), 3);
    let _ = MemInfo::default();
}

/// Issue 17's fields: dcgm-exporter's names, types and HELP texts (as its
/// etc/default-counters.csv writes them), one series per GPU that has the
/// figure.
const ISSUE_17: [(&str, &str, &str); 9] = [
    (
        "DCGM_FI_DEV_MEMORY_TEMP",
        "gauge",
        "Memory temperature (in C).",
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "counter",
        "Total number of PCIe retries.",
    ),
    (
        "DCGM_FI_DEV_ENC_UTIL",
        "gauge",
        "Encoder utilization (in %).",
    ),
    (
        "DCGM_FI_DEV_DEC_UTIL",
        "gauge",
        "Decoder utilization (in %).",
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors",
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "gauge",
        "Whether remapping of rows has failed",
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Total number of single-bit volatile ECC errors.",
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Total number of double-bit volatile ECC errors.",
    ),
];

#[test]
fn health_fields_use_dcgm_names_types_and_help() {
    let (sys, mut snap) = demo();
    let g = &mut snap.gpus[2];
    g.mem_temp_c = Some(47);
    g.pcie_replays = Some(3);
    g.enc_util = Some(12);
    g.dec_util = Some(34);
    g.remapped_rows_unc = Some(1);
    g.remapped_rows_cor = Some(5);
    g.row_remap_failure = Some(true);
    g.ecc_sbe_volatile = Some(7);
    g.ecc_dbe_volatile = Some(2);
    let text = render(&sys, &snap, None);
    let want = ["47", "3", "12", "34", "1", "5", "1", "7", "2"];
    for ((name, kind, help), want) in ISSUE_17.into_iter().zip(want) {
        assert!(
            text.contains(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n")),
            "{name}"
        );
        let s = samples(&text, name);
        assert_eq!(s.len(), 4, "{name}: one per GPU of the demo");
        assert!(
            s[2].0.starts_with(&format!("{name}{{gpu=\"2\",UUID=")) && s[2].0.contains("modelName"),
            "{}",
            s[2].0
        );
        assert_eq!(s[2].1, want, "{name}");
    }
    // The demo's own figures: idle video engines, no errors, no failure.
    assert_eq!(samples(&text, "DCGM_FI_DEV_ENC_UTIL")[0].1, "0");
    assert_eq!(samples(&text, "DCGM_FI_DEV_ROW_REMAP_FAILURE")[0].1, "0");
    assert_eq!(
        samples(&text, "DCGM_FI_DEV_MEMORY_TEMP")[0].1,
        snap.gpus[0].mem_temp_c.unwrap().to_string()
    );
    // dcgm-exporter's order: memory temperature right after the clocks,
    // remapped rows after the framebuffer.
    let at = |n: &str| text.find(&format!("# TYPE {n} ")).unwrap();
    assert!(at("DCGM_FI_DEV_MEM_CLOCK") < at("DCGM_FI_DEV_MEMORY_TEMP"));
    assert!(at("DCGM_FI_DEV_MEMORY_TEMP") < at("DCGM_FI_DEV_GPU_TEMP"));
    assert!(at("DCGM_FI_DEV_FB_USED") < at("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"));
}

#[test]
fn health_fields_nvml_does_not_give_are_absent_not_zero() {
    let (sys, mut snap) = demo();
    let none = |g: &mut GpuSample| {
        g.mem_temp_c = None;
        g.pcie_replays = None;
        g.enc_util = None;
        g.dec_util = None;
        g.remapped_rows_unc = None;
        g.remapped_rows_cor = None;
        g.row_remap_failure = None;
        g.ecc_sbe_volatile = None;
        g.ecc_dbe_volatile = None;
    };
    none(&mut snap.gpus[1]);
    let text = render(&sys, &snap, None);
    for (name, _, _) in ISSUE_17 {
        let s = samples(&text, name);
        assert_eq!(s.len(), 3, "{name}");
        assert!(s.iter().all(|(l, _)| !l.contains("gpu=\"1\"")), "{name}");
    }
    // No GPU has them: no family, not even its HELP line.
    snap.gpus.iter_mut().for_each(none);
    let text = render(&sys, &snap, None);
    for (name, _, _) in ISSUE_17 {
        assert!(!text.contains(name), "{name}");
    }
    // The other device families are still there.
    assert_eq!(samples(&text, "DCGM_FI_DEV_GPU_TEMP").len(), 4);
}
