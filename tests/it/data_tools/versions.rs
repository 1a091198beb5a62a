//! Versions and shapes: every key holds one kind of value in every line
//! type (what DuckDB and pandas need), a version 1 `.jsonl` file reads
//! with its index, and every recording shipped with vramwatch (all version
//! 1) opens in every command.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use predicates::prelude::*;

use vramwatch::model::Snapshot;
use vramwatch::record::format::cpu_precision;
use vramwatch::record::{Header, Reader, Recording, VERSION, WriteOutcome, Writer, WriterOptions};
use vramwatch::source::sim::SimWorld;

use super::{root, vw};

const T0: u64 = 1_764_000_000_000;

/// `n` snapshots of a scenario, 1 s apart, with the events a sampler adds.
fn snapshots(scenario: &str, n: u64) -> (Header, Vec<Snapshot>) {
    let w = SimWorld::new(scenario, 5, T0).expect("scenario");
    (
        Header::new(&w.info(), 1000, T0),
        w.snapshots(T0, 1000, n, "me"),
    )
}

/// What a snapshot reads back as: CPU % to a tenth (the format's precision).
fn as_stored(s: &Snapshot) -> Snapshot {
    let mut s = s.clone();
    for p in &mut s.procs {
        p.cpu_pct = p.cpu_pct.map(cpu_precision);
    }
    s
}

/// Writes `snaps` to `path` in blocks of `block` snapshots.
fn write(path: &Path, header: &Header, snaps: &[Snapshot], block: u32) {
    let opts = WriterOptions {
        block_snapshots: block,
        flush_every: Duration::ZERO,
        sync_every: Duration::from_secs(3600),
        ..WriterOptions::default()
    };
    let mut w = Writer::create(path, header.clone(), opts).expect("create");
    for s in snaps {
        assert_eq!(w.write(s), WriteOutcome::Written);
    }
    w.finish().expect("finish");
}

/// The shape of a JSON value, for [`shapes`].
fn shape(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "list",
        serde_json::Value::Object(_) => "object",
    }
}

/// Every path of `v` (`procs.mem`, `processes[].command`) with the shapes
/// its values have, and the line types it is in.
fn shapes(
    path: &str,
    ty: &str,
    v: &serde_json::Value,
    out: &mut std::collections::BTreeMap<String, std::collections::BTreeMap<&'static str, String>>,
) {
    if !v.is_null() {
        out.entry(path.to_owned())
            .or_default()
            .entry(shape(v))
            .or_insert_with(|| ty.to_owned());
    }
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                shapes(&p, ty, x, out);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                shapes(&format!("{path}[]"), ty, x, out);
            }
        }
        _ => {}
    }
}

/// DuckDB and pandas read all lines of a file as one table: a key must
/// hold one kind of value (number, string, list, object) in every line
/// type, at every depth. Version 1's index reused `procs` for a list of
/// objects where a snapshot's `procs` is an object of columns, and DuckDB
/// could not unnest it.
#[test]
fn every_key_has_one_shape_in_every_line_type() {
    let (h, snaps) = snapshots("demo", 40);
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("shapes.jsonl");
    write(&path, &h, &snaps, 7);
    let text = fs::read_to_string(&path).unwrap();
    let mut out = std::collections::BTreeMap::new();
    let mut types = std::collections::BTreeSet::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let ty = v["type"].as_str().unwrap().to_owned();
        shapes("", &ty, &v, &mut out);
        types.insert(ty);
    }
    assert_eq!(
        types.into_iter().collect::<Vec<_>>(),
        ["event", "header", "index", "process", "snapshot"]
    );
    assert!(out.contains_key("processes[].command"), "{out:?}");
    let mixed: Vec<_> = out.iter().filter(|(_, s)| s.len() > 1).collect();
    assert!(mixed.is_empty(), "keys with more than one shape: {mixed:?}");
}

/// A version 1 `.jsonl` file (its index lists processes as `procs`) reads
/// as before: the index is trusted (no warning), and a snapshot read
/// through it, the last first, has its processes' strings.
#[test]
fn a_version_1_file_reads_with_its_index() {
    let (h, snaps) = snapshots("demo", 40);
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("v1.jsonl");
    write(&path, &h, &snaps, 6);
    let text = fs::read_to_string(&path).unwrap();
    // Rewrite it as version 1 wrote it, byte for byte: the header says 1,
    // each index line says `procs` (4 bytes shorter), so its byte offsets
    // and those of the records after it move.
    let mut old = String::new();
    let mut renamed = 0;
    let mut prev: Option<usize> = None;
    let num = |line: &str, key: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        v[key].to_string()
    };
    for line in text.lines() {
        let line = if line.starts_with("{\"type\":\"header\"") {
            line.replacen(&format!("\"version\":{VERSION},"), "\"version\":1,", 1)
        } else if line.starts_with("{\"type\":\"index\"") {
            renamed += 1;
            let start = prev.map_or(0, |p| p + old[p..].find('\n').unwrap() + 1);
            let l = line
                .replacen("\"processes\":[", "\"procs\":[", 1)
                .replacen(
                    &format!("\"offset\":{},", num(line, "offset")),
                    &format!("\"offset\":{start},"),
                    1,
                )
                .replacen(
                    &format!("\"end\":{},", num(line, "end")),
                    &format!("\"end\":{},", old.len()),
                    1,
                )
                .replacen(
                    &format!("\"prev\":{}}}", num(line, "prev")),
                    &format!(
                        "\"prev\":{}}}",
                        prev.map_or("null".into(), |p| p.to_string())
                    ),
                    1,
                );
            let v: serde_json::Value = serde_json::from_str(&l).unwrap();
            assert!(
                v.get("procs").is_some() && v.get("processes").is_none(),
                "{l}"
            );
            assert_eq!(v["offset"], start);
            assert_eq!(v["end"], old.len());
            prev = Some(old.len());
            l
        } else {
            line.to_owned()
        };
        old.push_str(&line);
        old.push('\n');
    }
    assert!(renamed >= 6);
    assert!(
        old.starts_with("{\"type\":\"header\",\"format\":\"vramwatch-recording\",\"version\":1,")
    );
    fs::write(&path, &old).unwrap();
    let rec = Recording::open(&path).unwrap();
    assert_eq!(rec.header().version, 1);
    for i in (0..snaps.len()).rev() {
        let got = rec.get(i).unwrap();
        assert_eq!(got, as_stored(&snaps[i]), "snapshot {i}");
        assert!(
            got.procs.iter().any(|p| p.command.is_some()),
            "snapshot {i}"
        );
    }
    assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
}

/// Every recording shipped with vramwatch.
fn shipped() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.to_string_lossy().contains(".jsonl") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("assets"), &mut out);
    walk(&root().join("tests/fixtures"), &mut out);
    out.sort();
    out
}

/// The recordings shipped with vramwatch are format version 1; this one
/// reads them all, in every command: `replay` (its App over the
/// recording, and every snapshot through the index, the last first, each
/// with its processes' strings), `report`, `export` (per GPU and per
/// process) and `score` (where the truth is beside it).
#[test]
fn every_shipped_recording_opens_in_every_command() {
    let files = shipped();
    assert!(files.len() >= 38, "{files:?}");
    let mut scored = Vec::new();
    for f in &files {
        let name = f.display().to_string();
        let mut reader = Reader::open(f).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(reader.header().version >= 1, "{name}");
        let streamed: Vec<Snapshot> = reader.by_ref().map(|s| s.unwrap()).collect();
        assert!(!streamed.is_empty(), "{name}");
        assert!(
            reader.warnings().is_empty(),
            "{name}: {:?}",
            reader.warnings()
        );
        assert!(reader.damage().is_empty(), "{name}");

        // replay: the index is trusted (a warning would say it was not) and
        // gives what reading the file does, even jumping to the end first.
        let rec = Recording::open(f).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(rec.len(), streamed.len(), "{name}");
        for i in (0..rec.len()).rev() {
            assert_eq!(rec.get(i).unwrap(), streamed[i], "{name}: snapshot {i}");
        }
        assert!(rec.warnings().is_empty(), "{name}: {:?}", rec.warnings());
        vramwatch::commands::replay::open_app(
            f,
            vramwatch::config::Config::default(),
            "me".into(),
            None,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));

        vw().arg("report")
            .arg(f)
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(
                "{} snapshots",
                streamed.len()
            )));
        let gpus: usize = streamed.iter().map(|s| s.gpus.len()).sum();
        let procs: usize = streamed.iter().map(|s| s.procs.len()).sum();
        for (flag, rows) in [(None, gpus), (Some("--processes"), procs)] {
            let out = vw()
                .args(["export", "--csv"])
                .args(flag)
                .arg(f)
                .assert()
                .success();
            let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
            assert_eq!(text.lines().count(), rows + 1, "{name} {flag:?}");
        }
        if vramwatch::commands::score::truth_beside(f).exists() {
            scored.push(f.clone());
        }
    }
    assert!(scored.len() >= 36, "{scored:?}");
    vw().arg("score")
        .args(&scored)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("{} runs", scored.len())));
}
