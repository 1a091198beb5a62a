//! Recording files: write simulated snapshots, read them back, and damage
//! the files the ways crashes and other tools do.

use std::fs;
use std::path::Path;
use std::time::Duration;

use vramwatch::model::Snapshot;
use vramwatch::record::format::cpu_precision;
use vramwatch::record::{
    Header, RecordError, Recording, VERSION, WriteOutcome, Writer, WriterOptions, rotated_path,
};
use vramwatch::source::sim::SimWorld;

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

/// Options with every snapshot flushed (`.zst` too).
fn opts(block: u32) -> WriterOptions {
    WriterOptions {
        block_snapshots: block,
        flush_every: Duration::ZERO,
        sync_every: Duration::from_secs(3600),
        ..WriterOptions::default()
    }
}

fn write(path: &Path, header: &Header, snaps: &[Snapshot], o: WriterOptions) -> Writer {
    let mut w = Writer::create(path, header.clone(), o).expect("create");
    for s in snaps {
        assert_eq!(w.write(s), WriteOutcome::Written);
    }
    w
}

fn assert_same(rec: &Recording, snaps: &[Snapshot]) {
    assert_eq!(rec.len(), snaps.len());
    for (i, s) in snaps.iter().enumerate() {
        let got = rec.get(i).expect("snapshot decodes");
        assert_eq!(got, as_stored(s), "snapshot {i} differs");
        assert_eq!(rec.times()[i], s.t_ms);
    }
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn round_trip_plain_and_zstd_are_identical() {
    // The demo node: processes start, a leak runs into OOM and restarts,
    // a short job exits: process lines change and events happen.
    let (h, snaps) = snapshots("demo", 400);
    assert!(snaps.iter().any(|s| !s.events.is_empty()));
    for name in ["run.jsonl", "run.jsonl.zst"] {
        let d = dir();
        let path = d.path().join(name);
        // Blocks of 37: many index records, the last block partial.
        let stats = write(&path, &h, &snaps, opts(37)).finish().expect("finish");
        assert_eq!(stats.snapshots, 400);
        let rec = Recording::open(&path).expect("open");
        assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
        assert_eq!(rec.compressed(), name.ends_with(".zst"));
        assert_eq!(rec.header().system, h.system);
        assert_same(&rec, &snaps);
        // Every event, with the position of its snapshot.
        let want: Vec<(usize, _)> = snaps
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.events.iter().map(move |e| (i, e.clone())))
            .collect();
        let got: Vec<(usize, _)> = rec
            .events()
            .iter()
            .map(|e| (e.index, e.event.clone()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(rec.position_at(T0 + 10_500), 10);
        // Random access in any order gives the same.
        for i in [399, 0, 200, 36, 37, 38, 399] {
            assert_eq!(rec.get(i).unwrap(), as_stored(&snaps[i]));
        }
        assert!(matches!(rec.get(400), Err(RecordError::OutOfRange { .. })));
    }
}

#[test]
fn a_crowded_node_round_trips_and_zstd_is_much_smaller() {
    let (h, snaps) = snapshots("crowded", 40);
    let d = dir();
    let plain = d.path().join("c.jsonl");
    let zst = d.path().join("c.jsonl.zst");
    write(&plain, &h, &snaps, opts(600)).finish().unwrap();
    write(&zst, &h, &snaps, opts(600)).finish().unwrap();
    for p in [&plain, &zst] {
        assert_same(&Recording::open(p).unwrap(), &snaps);
    }
    let (a, b) = (
        fs::metadata(&plain).unwrap().len(),
        fs::metadata(&zst).unwrap().len(),
    );
    assert!(b * 4 < a, "zstd {b} vs plain {a}");
    // Process strings are written once, not per snapshot (the index
    // record repeats them, for the reader).
    let text = fs::read_to_string(&plain).unwrap();
    let data: String = text
        .lines()
        .filter(|l| !l.starts_with("{\"type\":\"index\""))
        .collect();
    for p in &snaps[39].procs {
        let cmd = format!("\"command\":\"{}\"", p.command.as_deref().unwrap());
        assert_eq!(data.matches(&cmd).count(), 1, "{cmd} repeated");
    }
}

/// The byte size of the file after each snapshot (no block ends: the
/// writer is never finished).
fn crash_file(path: &Path, snaps: &[Snapshot], h: &Header) -> Vec<u64> {
    let mut w = Writer::create(path, h.clone(), opts(10_000)).expect("create");
    let mut ends = Vec::new();
    for s in snaps {
        assert_eq!(w.write(s), WriteOutcome::Written);
        ends.push(w.stats().bytes);
    }
    // A kill -9: nothing more is written, not even the block's end.
    std::mem::forget(w);
    ends
}

#[test]
fn after_a_crash_at_any_byte_at_most_the_line_being_written_is_lost() {
    let (h, snaps) = snapshots("demo", 60);
    for name in ["crash.jsonl", "crash.jsonl.zst"] {
        let d = dir();
        let path = d.path().join(name);
        let ends = crash_file(&path, &snaps, &h);
        let full = fs::read(&path).unwrap();
        assert_eq!(full.len() as u64, *ends.last().unwrap());
        // Where each snapshot line ends: a cut after it keeps the snapshot
        // (losing at most its event lines). In `.zst` what decodes ends at
        // a flush, after a whole snapshot's lines.
        let complete: Vec<u64> = if name.ends_with(".zst") {
            ends.clone()
        } else {
            let mut at = 0u64;
            let mut v = Vec::new();
            for l in full.split_inclusive(|&b| b == b'\n') {
                at += l.len() as u64;
                if l.starts_with(b"{\"type\":\"snapshot\"") {
                    v.push(at);
                }
            }
            v
        };
        assert_eq!(complete.len(), 60);
        // Every byte of the last snapshot (every 5th uncompressed), every
        // 7th of the two before, both sides of every snapshot's end and
        // line end, and a spread of others.
        let step = if name.ends_with(".zst") { 1 } else { 5 };
        let mut cuts: Vec<u64> = (ends[58]..=ends[59]).step_by(step).collect();
        cuts.extend((ends[56]..ends[58]).step_by(7));
        cuts.extend(
            ends.iter()
                .chain(&complete)
                .flat_map(|&e| [e - 1, e, e + 1]),
        );
        cuts.extend((1..40).map(|k| ends[0] + k * (ends[59] - ends[0]) / 40));
        cuts.retain(|&c| c <= ends[59]);
        let cut = d.path().join(format!("cut-{name}"));
        for c in cuts {
            fs::write(&cut, &full[..c as usize]).unwrap();
            let rec = Recording::open(&cut).unwrap_or_else(|e| panic!("cut at {c}: {e}"));
            let whole = complete.iter().filter(|&&e| e <= c).count();
            assert_eq!(rec.len(), whole, "cut at {c}");
            if whole > 0 {
                let got = rec.get(whole - 1).unwrap();
                let mut want = as_stored(&snaps[whole - 1]);
                // Event lines after the cut are lost; the rest is whole.
                assert!(want.events.starts_with(&got.events), "cut at {c}");
                want.events.truncate(got.events.len());
                assert_eq!(got, want, "cut at {c}");
                if ends.contains(&c) {
                    assert_eq!(got, as_stored(&snaps[whole - 1]));
                }
            }
            // A compressed file whose frame the writer never ended says
            // that it was not closed (a crash, or a recording still being
            // written), though every line it holds is whole; cut inside a
            // block (not where a write of the writer ended), that it was
            // cut short there, which makes it incomplete (exit status 1).
            if whole > 0 && name.ends_with(".zst") {
                let unclosed = rec.warnings().iter().any(|w| w.contains("was not closed"));
                let short = rec.cut_short();
                assert!(
                    unclosed != short.is_some(),
                    "cut at {c}: {:?} {short:?}",
                    rec.warnings()
                );
                if ends.contains(&c) {
                    assert!(unclosed && rec.incomplete("replay").is_none(), "cut at {c}");
                }
                if let Some(w) = short {
                    assert!(w.contains(&format!("cut short at byte {c},")), "{w}");
                    let e = rec.incomplete("replay").unwrap().to_string();
                    assert!(e.contains("cut short") && e.contains("exit code 1"), "{e}");
                }
            }
            // A plain file cut inside a line says so.
            let torn = c > ends[0] && full[c as usize - 1] != b'\n';
            if torn && name.ends_with(".jsonl") {
                assert!(
                    rec.warnings().iter().any(|w| w.contains("cut off")),
                    "cut at {c}: {:?}",
                    rec.warnings()
                );
            }
        }
    }
}

#[test]
fn a_compressed_file_flushed_every_5s_loses_at_most_5s_to_a_crash() {
    let (h, snaps) = snapshots("demo", 23);
    let d = dir();
    let path = d.path().join("held.jsonl.zst");
    let o = WriterOptions {
        flush_every: Duration::from_secs(5),
        ..opts(10_000)
    };
    let mut w = Writer::create(&path, h, o).unwrap();
    for s in &snaps {
        assert_eq!(w.write(s), WriteOutcome::Written);
    }
    std::mem::forget(w);
    // Flushed with snapshots 0, 5, 10, 15 and 20 (1 s apart): 21 are in
    // the file, the 2 after the last flush are lost.
    let rec = Recording::open(&path).unwrap();
    assert_eq!(rec.len(), 21);
    assert_eq!(rec.get(20).unwrap(), as_stored(&snaps[20]));
}

#[test]
fn a_cut_through_index_records_still_reads() {
    let (h, snaps) = snapshots("demo", 50);
    for name in ["blocks.jsonl", "blocks.jsonl.zst"] {
        let d = dir();
        let path = d.path().join(name);
        write(&path, &h, &snaps, opts(4)).finish().unwrap();
        let full = fs::read(&path).unwrap();
        let cut = d.path().join(format!("cut-{name}"));
        let mut last = 0;
        for c in (full.len() / 2..=full.len())
            .step_by(97)
            .chain([full.len()])
        {
            fs::write(&cut, &full[..c]).unwrap();
            let rec = Recording::open(&cut).unwrap_or_else(|e| panic!("cut at {c}: {e}"));
            assert!(rec.len() >= last, "cut at {c}");
            last = rec.len();
            for i in [0, rec.len() - 1] {
                assert_eq!(rec.get(i).unwrap(), as_stored(&snaps[i]));
            }
        }
        assert_eq!(last, 50);
    }
}

#[test]
fn trailing_zero_bytes_after_a_power_cut_are_ignored() {
    let (h, snaps) = snapshots("training", 12);
    let d = dir();
    let path = d.path().join("z.jsonl");
    write(&path, &h, &snaps, opts(5)).finish().unwrap();
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend([0u8; 4096]);
    fs::write(&path, bytes).unwrap();
    assert_same(&Recording::open(&path).unwrap(), &snaps);
}

/// Line number (1-based) of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .expect("needle")
        + 1
}

#[test]
fn a_corrupt_line_in_the_middle_is_skipped_and_named_by_file_and_line() {
    let (h, snaps) = snapshots("demo", 30);
    let d = dir();
    let path = d.path().join("bad.jsonl");
    write(&path, &h, &snaps, opts(8)).finish().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let needle = "\"seq\":17,";
    let n = line_of(&text, needle);
    // Same length, so the index still points at the right bytes.
    let broken = text.replacen(needle, "\"seq\":1?,", 1);
    fs::write(&path, &broken).unwrap();
    // Through the index: the snapshot is listed, and reading it says why
    // it cannot be; the others read.
    let rec = Recording::open(&path).expect("the index covers the bad line");
    assert_eq!(rec.len(), 30);
    let e = rec.get(17).unwrap_err().to_string();
    assert!(e.contains(&format!("bad.jsonl:{n}:")), "{e}");
    assert!(e.contains("not valid JSON"), "{e}");
    for i in (0..30).filter(|&i| i != 17) {
        assert_eq!(rec.get(i).unwrap(), as_stored(&snaps[i]));
    }
    assert_eq!(rec.damage().lines, 1);
    assert_eq!(rec.damage().unreadable, 1);
    assert!(rec.incomplete("replay").is_some());
    // Without an index the whole file is read at open: the line is skipped
    // and named, the snapshot counted lost, the rest read.
    let unindexed: String = broken
        .lines()
        .filter(|l| !l.starts_with("{\"type\":\"index\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let n = line_of(&unindexed, "\"seq\":1?,");
    fs::write(&path, unindexed).unwrap();
    let rec = Recording::open(&path).expect("read around the damage");
    assert_eq!(rec.len(), 29);
    let w = rec.warnings().join("\n");
    assert!(
        w.contains(&format!("bad.jsonl:{n}:")) && w.contains("skipped"),
        "{w}"
    );
    assert_eq!(rec.damage().lost_snapshots, 1);
    let seqs: Vec<u64> = rec.iter().map(|s| s.unwrap().seq).collect();
    assert_eq!(seqs, (0..30).filter(|&q| q != 17).collect::<Vec<_>>());
}

#[test]
fn a_file_without_its_index_reads_the_same() {
    // What `zstd -d | zstd` or `jq -c .` leave: the data, no index.
    let (h, snaps) = snapshots("demo", 130);
    let d = dir();
    let zst = d.path().join("a.jsonl.zst");
    write(&zst, &h, &snaps, opts(16)).finish().unwrap();
    let text = zstd::stream::decode_all(fs::File::open(&zst).unwrap()).unwrap();
    assert!(!String::from_utf8_lossy(&text).contains("\"type\":\"index\""));
    let plain = d.path().join("b.jsonl");
    fs::write(&plain, &text).unwrap();
    let recompressed = d.path().join("c.jsonl.zst");
    fs::write(
        &recompressed,
        zstd::stream::encode_all(&text[..], 19).unwrap(),
    )
    .unwrap();
    for p in [&plain, &recompressed] {
        let rec = Recording::open(p).unwrap();
        assert_same(&rec, &snaps);
        assert_eq!(
            rec.events().len(),
            snaps.iter().map(|s| s.events.len()).sum::<usize>()
        );
    }
}

#[test]
fn unknown_fields_and_line_types_from_a_newer_writer_are_tolerated() {
    let (h, snaps) = snapshots("demo", 20);
    let d = dir();
    let path = d.path().join("future.jsonl");
    write(&path, &h, &snaps, opts(600)).finish().unwrap();
    let mut out = String::new();
    for (i, l) in fs::read_to_string(&path).unwrap().lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        let o = v.as_object_mut().unwrap();
        o.insert("added_in_v1_7".into(), serde_json::json!({"x": [1, 2]}));
        if o["type"] == "snapshot" {
            let n = o["gpus"]["index"].as_array().unwrap().len();
            o["gpus"]
                .as_object_mut()
                .unwrap()
                .insert("hbm_temp_c".into(), serde_json::json!(vec![55; n]));
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
        if i == 3 {
            out.push_str("{\"type\":\"annotation\",\"text\":\"checkpoint saved\"}\n");
        }
    }
    fs::write(&path, out).unwrap();
    let rec = Recording::open(&path).unwrap();
    assert_same(&rec, &snaps);
    assert!(
        rec.warnings().iter().any(|w| w.contains("does not know")),
        "{:?}",
        rec.warnings()
    );
}

fn with_header(path: &Path, edit: impl Fn(&mut serde_json::Value)) {
    let text = fs::read_to_string(path).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
    edit(&mut v);
    fs::write(
        path,
        format!("{}\n{rest}", serde_json::to_string(&v).unwrap()),
    )
    .unwrap();
}

#[test]
fn other_format_versions_are_refused_with_a_clear_message() {
    let (h, snaps) = snapshots("training", 3);
    let d = dir();
    let path = d.path().join("v.jsonl");
    write(&path, &h, &snaps, opts(600)).finish().unwrap();
    let newer = u64::from(VERSION) + 1;
    with_header(&path, |v| {
        v["version"] = newer.into();
        v["vramwatch_version"] = "3.1.0".into();
    });
    let e = Recording::open(&path).err().unwrap().to_string();
    assert!(
        e.contains("v.jsonl")
            && e.contains(&format!("version {newer}"))
            && e.contains("reads versions 1 to")
            && e.contains("3.1.0")
            && e.contains("upgrade"),
        "{e}"
    );
    with_header(&path, |v| v["version"] = 0.into());
    let e = Recording::open(&path).err().unwrap().to_string();
    assert!(e.contains("version 0") && e.contains("older"), "{e}");
}

#[test]
fn files_that_are_not_recordings_say_so() {
    let d = dir();
    let cases: [(&str, &[u8], &str); 4] = [
        ("empty.jsonl", b"", "empty"),
        ("csv.jsonl", b"a,b,c\n1,2,3\n", "not JSON"),
        (
            "other.jsonl",
            b"{\"type\":\"header\",\"format\":\"other\"}\n",
            "format",
        ),
        ("half.jsonl", b"{\"type\":\"header\",\"for", "incomplete"),
    ];
    for (name, bytes, why) in cases {
        let p = d.path().join(name);
        fs::write(&p, bytes).unwrap();
        let e = Recording::open(&p).err().unwrap().to_string();
        assert!(e.contains(name) && e.contains(why), "{e}");
    }
    let e = Recording::open(&d.path().join("missing.jsonl"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("missing.jsonl: no such file") && !e.contains("os error"),
        "{e}"
    );
}

fn seqs(path: &Path) -> Vec<u64> {
    let rec = Recording::open(path).unwrap();
    rec.iter().map(|s| s.unwrap().seq).collect()
}

#[test]
fn files_rotate_at_max_size_each_with_its_header() {
    let (h, snaps) = snapshots("demo", 120);
    for name in ["rot.jsonl", "rot.jsonl.zst"] {
        let d = dir();
        let path = d.path().join(name);
        let one = {
            let p = d.path().join(format!("size-{name}"));
            write(&p, &h, &snaps[..10], opts(600)).finish().unwrap();
            fs::metadata(&p).unwrap().len()
        };
        let o = WriterOptions {
            max_size: one * 2,
            keep: 2,
            ..opts(7)
        };
        let mut w = Writer::create(&path, h.clone(), o).unwrap();
        let mut rotations = 0;
        for s in &snaps {
            match w.write(s) {
                WriteOutcome::Written => {}
                WriteOutcome::Rotated { previous } => {
                    assert_eq!(previous, rotated_path(&path, 1));
                    rotations += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        w.finish().unwrap();
        assert!(rotations >= 4, "{rotations} rotations");
        assert!(!rotated_path(&path, 3).exists(), "keep = 2");
        let (p2, p1) = (rotated_path(&path, 2), rotated_path(&path, 1));
        let (a, b, c) = (seqs(&p2), seqs(&p1), seqs(&path));
        // In order, contiguous, ending with the last snapshot.
        let all: Vec<u64> = a.iter().chain(&b).chain(&c).copied().collect();
        assert_eq!(all, (all[0]..120).collect::<Vec<_>>());
        for p in [&p2, &p1] {
            assert!(fs::metadata(p).unwrap().len() <= one * 3, "{}", p.display());
        }
        let parts: Vec<u32> = [&p2, &p1, &path]
            .iter()
            .map(|p| Recording::open(p).unwrap().header().part)
            .collect();
        assert_eq!(parts, [rotations - 2, rotations - 1, rotations]);
    }
}

#[test]
fn a_removed_file_is_noticed_and_recording_goes_on_in_a_new_one() {
    let (h, snaps) = snapshots("training", 20);
    let d = dir();
    let path = d.path().join("gone.jsonl.zst");
    let o = WriterOptions {
        sync_every: Duration::ZERO,
        ..opts(600)
    };
    let mut w = Writer::create(&path, h.clone(), o).unwrap();
    for s in &snaps[..5] {
        assert_eq!(w.write(s), WriteOutcome::Written);
    }
    fs::remove_file(&path).unwrap();
    match w.write(&snaps[5]) {
        WriteOutcome::Warning(warn) => assert!(warn.to_string().contains("removed"), "{warn}"),
        other => panic!("{other:?}"),
    }
    for s in &snaps[6..] {
        assert_eq!(w.write(s), WriteOutcome::Written);
    }
    w.finish().unwrap();
    let rec = Recording::open(&path).unwrap();
    assert_same(&rec, &snaps[6..]);
    assert_eq!(rec.header().part, 1);
}

#[test]
fn an_existing_file_is_not_overwritten_unless_asked() {
    let (h, snaps) = snapshots("training", 2);
    let d = dir();
    let path = d.path().join("x.jsonl");
    fs::write(&path, "keep me\n").unwrap();
    let e = Writer::create(&path, h.clone(), opts(600))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "keep me\n");
    let o = WriterOptions {
        overwrite: true,
        ..opts(600)
    };
    write(&path, &h, &snaps, o).finish().unwrap();
    assert_same(&Recording::open(&path).unwrap(), &snaps);
}

/// A damaged index never gives wrong data or a panic: it is either
/// noticed at open (and the file read instead), or when a block it
/// describes is decoded (an error naming the file).
#[test]
fn a_damaged_index_is_rebuilt_or_reported_never_believed() {
    let (h, snaps) = snapshots("demo", 40);
    let d = dir();
    let path = d.path().join("idx.jsonl");
    write(&path, &h, &snaps, opts(6)).finish().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let edits: [(&str, serde_json::Value); 7] = [
        ("offset", (1u64 << 60).into()),
        ("end", 3u64.into()),
        ("first", 999.into()),
        ("first_line", u64::MAX.into()),
        ("prev", 0.into()),
        ("dt", serde_json::json!([i64::MAX, i64::MIN, 5])),
        ("lines", u64::MAX.into()),
    ];
    for (key, value) in edits {
        // Damage the last index line, then one in the middle.
        for which in [usize::MAX, 3] {
            let mut n = 0;
            let idx_lines = text
                .lines()
                .filter(|l| l.starts_with("{\"type\":\"index\""))
                .count();
            let target = which.min(idx_lines - 1);
            let out: String = text
                .lines()
                .map(|l| {
                    if l.starts_with("{\"type\":\"index\"") {
                        n += 1;
                        if n - 1 == target {
                            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                            v[key] = value.clone();
                            return serde_json::to_string(&v).unwrap() + "\n";
                        }
                    }
                    format!("{l}\n")
                })
                .collect();
            fs::write(&path, out).unwrap();
            let rec = Recording::open(&path).unwrap_or_else(|e| panic!("{key}: {e}"));
            let mut errors = 0;
            for (i, want) in snaps.iter().enumerate().take(rec.len()) {
                match rec.get(i) {
                    Ok(s) => assert_eq!(s, as_stored(want), "{key} at {which}: {i}"),
                    Err(e) => {
                        assert!(e.to_string().contains("idx.jsonl"), "{e}");
                        errors += 1;
                    }
                }
            }
            assert!(rec.len() == 40 || errors > 0, "{key} at {which}");
        }
    }
}
