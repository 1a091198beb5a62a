//! The outages, as the writer thread reports them, against a writer whose
//! disk fills up and empties.

use super::*;
use crate::source::sim::SimWorld;

const T0: Millis = 1_764_000_000_000;

/// Writes snapshots `from..to` (1 s apart) with the disk full (no byte
/// more fits) or not; returns the reports.
fn run(
    w: &mut Writer,
    r: &mut Reporting,
    world: &SimWorld,
    seqs: std::ops::Range<u64>,
    full: bool,
) -> Vec<Report> {
    w.fail_beyond = full.then(|| w.stats().bytes);
    let mut got = Vec::new();
    for i in seqs {
        let snap = world.snapshot(i, T0 + i * 1000, "me");
        r.write(w, &snap, &mut |rep| got.push(rep));
    }
    got
}

fn news(reports: &[Report]) -> Vec<OutageNews> {
    reports
        .iter()
        .filter_map(|r| match r {
            Report::Wrote { outage, .. } => outage.as_deref().cloned(),
            _ => None,
        })
        .collect()
}

fn writer(dir: &Path, name: &str, flush_s: u64, world: &SimWorld) -> Writer {
    let opts = WriterOptions {
        block_snapshots: 7,
        flush_every: Duration::from_secs(flush_s),
        ..WriterOptions::default()
    };
    Writer::create(&dir.join(name), Header::new(&world.info(), 1000, T0), opts).unwrap()
}

#[test]
fn every_outage_is_reported_as_it_begins_goes_on_and_ends() {
    let world = SimWorld::new("demo", 1, T0).unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut w = writer(d.path(), "r.jsonl", 0, &world);
    let mut r = Reporting::default();
    assert!(news(&run(&mut w, &mut r, &world, 0..10, false)).is_empty());
    // The disk is full from 10 to 20: one outage.
    let full = run(&mut w, &mut r, &world, 10..20, true);
    let n = news(&full);
    assert_eq!(n.len(), 10);
    let OutageNews::Began(first) = &n[0] else {
        panic!("{:?}", n[0])
    };
    assert_eq!(
        (first.number, first.since_ms, first.first_lost, first.lost),
        (1, T0 + 10_000, 10, 1)
    );
    assert_eq!(first.cause_text(), "the disk is full");
    assert!(n[1..].iter().all(|x| matches!(x, OutageNews::GoesOn(_))));
    // Each write's warning comes after its news, and is the outage's latest.
    let OutageNews::GoesOn(last) = &n[9] else {
        panic!()
    };
    assert_eq!(full.last(), Some(&Report::Warning(last.latest.clone())));
    assert_eq!(
        (last.lost, last.last_lost, last.last_ms),
        (10, 19, T0 + 19_000)
    );
    // Space comes back at 20: it ends there.
    let n = news(&run(&mut w, &mut r, &world, 20..25, false));
    let [OutageNews::Ended(o)] = n.as_slice() else {
        panic!("{n:?}")
    };
    assert_eq!(
        (o.number, o.lost, o.ended),
        (1, 10, Some((T0 + 20_000, 20)))
    );
    // A second outage, soon after, is news of its own; the recording
    // stops during it.
    let n = news(&run(&mut w, &mut r, &world, 25..30, true));
    assert!(matches!(&n[0], OutageNews::Began(o) if o.number == 2 && o.first_lost == 25));
    let outages = r.outages.into_list();
    assert_eq!(outages.len(), 2);
    assert_eq!(outages[1].lost, 5);
    assert_eq!(outages[1].ended, None);
    // The writer's count agrees.
    assert_eq!(w.stats().dropped, 15);
}

/// Snapshots held by the compressor are lost with a failed flush: they
/// count, from the first one held; a snapshot only held does not end
/// an outage.
#[test]
fn snapshots_lost_with_the_compressor_are_counted() {
    let world = SimWorld::new("demo", 1, T0).unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut w = writer(d.path(), "r.jsonl.zst", 5, &world);
    let mut r = Reporting::default();
    run(&mut w, &mut r, &world, 0..10, false);
    let n = news(&run(&mut w, &mut r, &world, 10..20, true));
    let OutageNews::Began(o) = &n[0] else {
        panic!("{n:?}")
    };
    assert!(o.first_lost < 10, "held snapshots from {}", o.first_lost);
    let n = news(&run(&mut w, &mut r, &world, 20..40, false));
    let ended: Vec<&Outage> = n
        .iter()
        .filter_map(|x| match x {
            OutageNews::Ended(o) => Some(o),
            _ => None,
        })
        .collect();
    assert_eq!(ended.len(), 1, "{n:?}");
    let outages = r.outages.into_list();
    assert_eq!(
        outages.iter().map(|o| o.lost).sum::<u64>(),
        w.stats().dropped
    );
    assert_eq!(
        outages[0].lost,
        outages[0].last_lost + 1 - outages[0].first_lost
    );
}

#[test]
fn a_file_that_cannot_be_opened_loses_the_snapshot_but_a_failed_rotation_does_not() {
    let mut o = Outages::default();
    let path = PathBuf::from("/r/x.jsonl");
    let before = WriterStats {
        path: path.clone(),
        snapshots: 5,
        total_bytes: 100,
        ..WriterStats::default()
    };
    let cannot = |seq: u64, reason: &str| RecordWarning::CannotOpen {
        path: "/r/x.jsonl".into(),
        seq,
        reason: reason.into(),
    };
    // Rotation failed after the snapshot was written: no loss.
    let written = WriterStats {
        snapshots: 6,
        total_bytes: 200,
        ..before.clone()
    };
    let w = cannot(5, "rotating: denied");
    assert_eq!(o.after_write(5, T0, &before, &written, Some(&w)), None);
    // The file could not be opened again: the snapshot is lost.
    let w = cannot(6, "denied");
    let n = o.after_write(6, T0 + 1000, &written, &written, Some(&w));
    assert!(
        matches!(&n, Some(OutageNews::Began(x)) if x.lost == 1 && x.first_lost == 6),
        "{n:?}"
    );
    assert_eq!(
        cause_text(&w),
        "the file cannot be opened: denied",
        "the path and seq are said elsewhere"
    );
}
