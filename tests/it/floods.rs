//! A hostile recording that floods the readers: process or event lines by
//! the thousand between two snapshots, or a snapshot claiming tens of
//! thousands of processes. Both readers (the streaming `Reader` behind
//! `report` and `export`, the random-access `Recording` behind `replay`)
//! skip what is past a snapshot's limits as damage, so what they hold
//! stays bounded (a fuzzing run took `report` to 4 GB and an abort), and
//! still read every snapshot.

use std::fs;
use std::path::Path;
use std::time::Duration;

use vramwatch::record::{Header, Reader, Recording, WriteOutcome, Writer, WriterOptions};
use vramwatch::source::sim::SimWorld;

const T0: u64 = 1_764_000_000_000;
/// The readers' limits (`record::format`'s `MAX_SNAPSHOT_PROCS` and
/// `MAX_SNAPSHOT_EVENTS`).
const MAX_PROCS: usize = 16_384;
const MAX_EVENTS: usize = 4_096;

/// A plain recording of `n` snapshots of the simulator, as lines.
fn lines(dir: &Path, n: u64) -> Vec<String> {
    let w = SimWorld::new("inference", 3, T0).expect("scenario");
    let path = dir.join("small.jsonl");
    let o = WriterOptions {
        flush_every: Duration::ZERO,
        ..WriterOptions::default()
    };
    let mut wr = Writer::create(&path, Header::new(&w.info(), 1000, T0), o).expect("create");
    for i in 0..n {
        assert_eq!(
            wr.write(&w.snapshot(i, T0 + i * 1000, "me")),
            WriteOutcome::Written
        );
    }
    wr.finish().expect("finish");
    fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Snapshots and damaged lines as each reader sees `path`.
fn read_both(path: &Path) -> [(usize, u64, Vec<String>); 2] {
    let mut r = Reader::open(path).expect("stream");
    let streamed = r.by_ref().filter_map(Result::ok).count();
    let d = r.damage();
    let rec = Recording::open(path).expect("random access");
    let random = rec.iter().filter_map(Result::ok).count();
    let e = rec.damage();
    [
        (streamed, d.lines, d.places.clone()),
        (random, e.lines, e.places.clone()),
    ]
}

#[test]
fn floods_between_snapshots_are_skipped_as_damage() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = lines(dir.path(), 5);
    let first = l
        .iter()
        .position(|x| x.starts_with("{\"type\":\"snapshot\""))
        .expect("a snapshot line");
    let seq: u64 = serde_json::from_str::<serde_json::Value>(&l[first]).unwrap()["seq"]
        .as_u64()
        .unwrap();
    let extra = 20;
    let mut flood = Vec::new();
    for i in 0..MAX_PROCS + extra {
        flood.push(format!(
            "{{\"type\":\"process\",\"gpu\":0,\"pid\":{},\"start_time\":{i},\"user\":\"u\",\"name\":\"n\",\"command\":\"c {i}\"}}",
            1_000_000 + i
        ));
    }
    for i in 0..MAX_EVENTS + extra {
        flood.push(format!(
            "{{\"type\":\"event\",\"seq\":{seq},\"t_ms\":{T0},\"kind\":\"note\",\"gpu\":0,\"message\":\"m {i}\"}}"
        ));
    }
    l.splice(first + 1..first + 1, flood);
    let path = dir.path().join("flood.jsonl");
    fs::write(&path, l.join("\n") + "\n").unwrap();
    for (who, (snaps, damaged, places)) in ["stream", "random access"].iter().zip(read_both(&path))
    {
        assert_eq!(snaps, 5, "{who}: every snapshot read");
        // As many process lines and event lines as are past the limits
        // (the places list only the first ten).
        assert_eq!(damaged, 2 * extra as u64, "{who}: {places:?}");
        assert!(
            places[0].contains("more than 16384 process lines for one snapshot"),
            "{who}: {places:?}"
        );
    }
}

#[test]
fn a_snapshot_with_too_many_processes_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = lines(dir.path(), 4);
    let at = l
        .iter()
        .rposition(|x| x.starts_with("{\"type\":\"snapshot\""))
        .expect("a snapshot line");
    let mut v: serde_json::Value = serde_json::from_str(&l[at]).unwrap();
    let n = MAX_PROCS + 1;
    // Every process column as long as the pids (else it is damaged for
    // another reason: columns of different lengths).
    for (key, col) in v["procs"].as_object_mut().unwrap().iter_mut() {
        let first = col[0].clone();
        *col = serde_json::Value::Array(if key == "pid" {
            (1..=n).map(serde_json::Value::from).collect()
        } else {
            vec![first; n]
        });
    }
    l[at] = v.to_string();
    let path = dir.path().join("crowded.jsonl");
    fs::write(&path, l.join("\n") + "\n").unwrap();
    for (who, (snaps, damaged, places)) in ["stream", "random access"].iter().zip(read_both(&path))
    {
        // The random-access reader finds it where it decodes the snapshot
        // and lists the place without counting a line.
        assert_eq!(snaps, 3, "{who}: {places:?}");
        assert!(damaged <= 1, "{who}: {places:?}");
        assert!(
            places[0].contains("holds 16385 processes; a snapshot holds at most 16384"),
            "{who}: {places:?}"
        );
    }
}
