use super::*;
use crate::model::{GpuSample, GpuState};
use crate::source::sim::SimWorld;
use std::collections::HashMap;

const T0: u64 = 1_764_000_000_000;

fn roundtrip(s: &Snapshot) -> Snapshot {
    let mut dict = HashMap::new();
    for p in &s.procs {
        let info = ProcessInfo::of(p);
        let mut text = Vec::new();
        write_process(&mut text, &info);
        let back = read_process(&text).unwrap();
        assert_eq!(back, info);
        dict.insert(info.id(), back);
    }
    let mut text = Vec::new();
    write_snapshot(&mut text, s);
    assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), 1);
    read_snapshot(text.trim_ascii_end(), |id| dict.get(&id)).unwrap()
}

#[test]
fn a_snapshot_survives_the_columns() {
    let w = SimWorld::new("demo", 3, T0).unwrap();
    let mut s = w.snapshot(9, T0 + 50_000, "me");
    s.gpus[1].state = GpuState::Lost;
    s.gpus[1].mem = None;
    s.gpus[2].bar1 = None;
    s.procs[0].cpu_pct = Some(12.3);
    s.procs[1].user = None;
    s.procs[1].ns_pid = Some(7);
    for p in &mut s.procs {
        p.cpu_pct = p.cpu_pct.map(cpu_precision);
    }
    assert_eq!(roundtrip(&s), s);
    let empty = Snapshot {
        seq: 1,
        t_ms: T0,
        ..Default::default()
    };
    assert_eq!(roundtrip(&empty), empty);
}

#[test]
fn cpu_is_kept_in_whole_percent_as_shown_and_rounding_is_stable() {
    for v in [
        0.0f32, 0.04, 0.5, 1.5, 2.5, 12.345_678, 99.95, 3199.99, 57.0,
    ] {
        let r = cpu_precision(v);
        assert!((r - v).abs() <= 0.5, "{v} -> {r}");
        assert_eq!(cpu_precision(r), r);
        // What the dashboard shows of the live figure, replayed.
        assert_eq!(format!("{r:.0}"), format!("{v:.0}"), "{v}");
        assert!(serde_json::to_string(&r).unwrap().len() <= 6, "{r}");
    }
}

#[test]
fn all_null_columns_are_left_out() {
    let w = SimWorld::new("training", 1, T0).unwrap();
    let s = w.snapshot(0, T0 + 30_000, "me");
    let mut text = Vec::new();
    write_snapshot(&mut text, &s);
    let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
    // The H200 has no fan.
    assert!(v["gpus"].get("fan_pct").is_none());
    assert!(v["gpus"].get("mem_used").is_some());
    assert_eq!(v["type"], "snapshot");
    assert!(text.starts_with(br#"{"type":"snapshot","seq":0,"t_ms":"#));
}

#[test]
fn a_short_column_is_an_error_naming_it() {
    let text =
        br#"{"type":"snapshot","seq":1,"t_ms":5,"gpus":{"index":[0,1],"temp_c":[40]},"procs":{}}"#;
    let e = read_snapshot(text, |_| None).unwrap_err().to_string();
    assert!(e.contains("gpus.temp_c") && e.contains("1 values"), "{e}");
}

#[test]
fn unknown_keys_are_ignored() {
    let text = br#"{"type":"snapshot","seq":1,"t_ms":5,"future":{"x":1},"gpus":{"index":[0],"temp_c":[40],"new_sensor":[3]},"procs":{}}"#;
    let s = read_snapshot(text, |_| None).unwrap();
    assert_eq!(s.gpus[0].temp_c, Some(40));
}

/// A field added to the model must be added to the format too: this
/// lists every key serde writes for a sample and checks the recorder
/// knows it.
#[test]
fn every_model_field_is_recorded() {
    let g = serde_json::to_value(GpuSample::default()).unwrap();
    let known_gpu = [
        "index",
        "state",
        "mem",
        "mem_peak",
        "mem_reads",
        "bar1",
        "util_gpu",
        "util_mem",
        "temp_c",
        "power_mw",
        "power_limit_mw",
        "sm_clock_mhz",
        "mem_clock_mhz",
        "fan_pct",
        "pstate",
        "pcie_rx_kbs",
        "pcie_tx_kbs",
        "energy_mj",
        "ecc_volatile",
        "enc_util",
        "dec_util",
        "mem_temp_c",
        "ecc_sbe_volatile",
        "ecc_dbe_volatile",
        "pcie_replays",
        "remapped_rows_cor",
        "remapped_rows_unc",
        "row_remap_failure",
        "lag_ms",
    ];
    let keys: Vec<&str> = g.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, known_gpu);
    let p = serde_json::to_value(ProcSample::default()).unwrap();
    let known_proc = [
        "pid",
        "start_time",
        "gpu",
        "kind",
        "mem",
        "mem_peak",
        "sm_util",
        "mem_util",
        "enc_util",
        "dec_util",
        "user",
        "name",
        "command",
        "container",
        "ns_pid",
        "container_name",
        "pod",
        "namespace",
        "pod_uid",
        "cpu_pct",
        "rss",
    ];
    let keys: Vec<&str> = p.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, known_proc);
    let s = serde_json::to_value(Snapshot::default()).unwrap();
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["seq", "t_ms", "gpus", "procs"]);
}

#[test]
fn line_types_are_recognised() {
    assert_eq!(
        line_type(br#"{"type":"snapshot","seq":1}"#).unwrap(),
        LineType::Snapshot
    );
    assert_eq!(
        line_type(br#"{ "seq": 1, "type": "event" }"#).unwrap(),
        LineType::Event
    );
    assert_eq!(line_type(br#"{"type":"gizmo"}"#).unwrap(), LineType::Other);
    assert!(line_type(b"{\"type\":\"snap").is_err());
}

/// Version 2 writes the index's process copies as `processes` (a
/// snapshot's `procs` has another shape); version 1 files said `procs`,
/// and they are read alike.
#[test]
fn the_index_lists_processes_under_one_name_and_reads_the_old_one() {
    let info = ProcessInfo {
        gpu: 1,
        pid: 7,
        start_time: 9,
        command: Some("python train.py".into()),
        ..Default::default()
    };
    let r = IndexRecord {
        dt: vec![0],
        procs: vec![IndexedProcess { at: 0, info }],
        ..Default::default()
    };
    let mut text = Vec::new();
    write_index(&mut text, &r);
    let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
    assert!(v.get("procs").is_none(), "{v}");
    assert_eq!(v["processes"][0]["command"], "python train.py");
    assert_eq!(read_index(text.trim_ascii_end()).unwrap(), r);
    let old = String::from_utf8(text)
        .unwrap()
        .replace("\"processes\":", "\"procs\":");
    assert_eq!(read_index(old.trim_end().as_bytes()).unwrap(), r);
}
