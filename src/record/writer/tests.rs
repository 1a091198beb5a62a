use super::*;
use crate::record::Recording;
use crate::record::format::cpu_precision;
use crate::source::sim::SimWorld;

const T0: u64 = 1_764_000_000_000;

#[test]
fn a_full_disk_is_a_warning_and_recording_resumes_when_space_returns() {
    let world = SimWorld::new("demo", 1, T0).unwrap();
    let snaps: Vec<Snapshot> = (0..40)
        .map(|i| world.snapshot(i, T0 + i * 1000, "me"))
        .collect();
    for (name, flush_s) in [
        ("full.jsonl", 0),
        ("full.jsonl.zst", 0),
        ("held.jsonl.zst", 5),
    ] {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(name);
        let opts = WriterOptions {
            block_snapshots: 7,
            flush_every: Duration::from_secs(flush_s),
            ..WriterOptions::default()
        };
        let mut w = Writer::create(&path, Header::new(&world.info(), 1000, T0), opts).unwrap();
        for s in &snaps[..10] {
            assert_eq!(w.write(s), WriteOutcome::Written);
        }
        // Room for part of one more snapshot only.
        w.fail_beyond = Some(w.stats().bytes + 60);
        let mut dropped = Vec::new();
        for s in &snaps[10..20] {
            match w.write(s) {
                WriteOutcome::Written => {}
                WriteOutcome::Warning(RecordWarning::DiskFull { seq, count, .. }) => {
                    dropped.extend(seq + 1 - count..=seq)
                }
                other => panic!("{other:?}"),
            }
        }
        // With flushes every 5 s, the snapshots held since the flush at
        // 7 s (block end) are lost with the compressor too.
        let first_lost = if flush_s == 0 { 10 } else { 7 };
        assert_eq!(dropped, (first_lost..20).collect::<Vec<u64>>(), "{name}");
        assert_eq!(w.stats().dropped, dropped.len() as u64);
        assert_eq!(w.stats().snapshots, first_lost);
        w.fail_beyond = None;
        for s in &snaps[20..] {
            assert_eq!(w.write(s), WriteOutcome::Written);
        }
        w.finish().unwrap();
        let rec = Recording::open(&path).unwrap();
        assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
        let got: Vec<u64> = rec.iter().map(|s| s.unwrap().seq).collect();
        let want: Vec<u64> = (0..40).filter(|q| !dropped.contains(q)).collect();
        assert_eq!(got, want, "{name}");
        // Process strings are there after the gap.
        let mut last = snaps[39].clone();
        for p in &mut last.procs {
            p.cpu_pct = p.cpu_pct.map(cpu_precision);
        }
        assert_eq!(rec.get(rec.len() - 1).unwrap(), last);
    }
}

/// The disk fills at every kind of moment (in a snapshot, a flush, a
/// frame end, an index record): the file always reads back, holding
/// exactly the snapshots the writer did not report lost.
#[test]
fn a_disk_full_at_any_point_leaves_a_readable_file() {
    let world = SimWorld::new("demo", 2, T0).unwrap();
    let snaps: Vec<Snapshot> = (0..30)
        .map(|i| world.snapshot(i, T0 + i * 1000, "me"))
        .collect();
    for name in ["a.jsonl", "a.jsonl.zst"] {
        for flush_s in [0, 3] {
            for room in (0..6000).step_by(173) {
                let d = tempfile::tempdir().unwrap();
                let path = d.path().join(name);
                let opts = WriterOptions {
                    block_snapshots: 4,
                    flush_every: Duration::from_secs(flush_s),
                    ..WriterOptions::default()
                };
                let mut w =
                    Writer::create(&path, Header::new(&world.info(), 1000, T0), opts).unwrap();
                let mut dropped = Vec::new();
                for (i, s) in snaps.iter().enumerate() {
                    if i == 5 {
                        w.fail_beyond = Some(w.stats().bytes + room);
                    }
                    if i == 20 {
                        w.fail_beyond = None;
                    }
                    if let WriteOutcome::Warning(RecordWarning::DiskFull { seq, count, .. }) =
                        w.write(s)
                    {
                        dropped.extend(seq + 1 - count..=seq);
                    }
                }
                let written = w.stats().snapshots;
                w.finish().unwrap();
                let what = format!("{name} flush {flush_s}s room {room}");
                let rec = Recording::open(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(rec.warnings().is_empty(), "{what}: {:?}", rec.warnings());
                let got: Vec<u64> = rec
                    .iter()
                    .map(|s| s.unwrap_or_else(|e| panic!("{what}: {e}")).seq)
                    .collect();
                let want: Vec<u64> = (0..30).filter(|q| !dropped.contains(q)).collect();
                assert_eq!(got, want, "{what}");
                assert_eq!(written, got.len() as u64, "{what}");
            }
        }
    }
}

#[test]
fn the_bytes_written_are_the_files_sizes() {
    // `record` ends with "wrote N snapshots (SIZE)": the index records
    // and frame ends count, and every rotated file with the current one
    // (it said 4K for a 5,996-byte file).
    let world = SimWorld::new("demo", 1, T0).unwrap();
    for name in ["sizes.jsonl", "sizes.jsonl.zst"] {
        for max_size in [u64::MAX, 6_000] {
            let d = tempfile::tempdir().unwrap();
            let path = d.path().join(name);
            let opts = WriterOptions {
                block_snapshots: 7,
                max_size,
                keep: 50,
                ..WriterOptions::default()
            };
            let mut w = Writer::create(&path, Header::new(&world.info(), 1000, T0), opts).unwrap();
            for i in 0..30 {
                w.write(&world.snapshot(i, T0 + i * 1000, "me"));
            }
            let stats = w.finish().unwrap();
            let on_disk: u64 = std::fs::read_dir(d.path())
                .unwrap()
                .map(|e| e.unwrap().metadata().unwrap().len())
                .sum();
            assert_eq!(stats.total_bytes, on_disk, "{name} {max_size}");
            assert_eq!(
                stats.bytes,
                std::fs::metadata(&path).unwrap().len(),
                "{name} {max_size}"
            );
            assert_eq!(stats.rotations > 0, max_size < u64::MAX, "{name}");
        }
    }
}
