//! The pipeline: one analysis per snapshot, every consumer the same figures.

use std::time::Duration;

use super::*;
use crate::model::now_ms;
use crate::source::sim::{SimSource, SimWorld};

fn start(scenario: &str, interval_ms: u64) -> Pipeline {
    let world = SimWorld::new(scenario, 1, now_ms().saturating_sub(60_000)).unwrap();
    Pipeline::start(
        Box::new(SimSource::new(world, "me".into())),
        Schedule {
            interval: Duration::from_millis(interval_ms),
            fast: Some(Duration::from_millis(10)),
            slow: None,
            pcie: None,
            energy: None,
            proc_util: Duration::from_millis(interval_ms),
            proc_util_shown: Duration::from_millis(interval_ms),
            burst: None,
            preview: false,
        },
        AnalysisConfig::default(),
    )
    .unwrap()
}

#[test]
fn every_consumer_gets_the_same_analysis_of_each_snapshot() {
    let p = start("leak", 20);
    let a = p.hub().subscribe_all(1000);
    let b = p.hub().subscribe_all(1000);
    std::thread::sleep(Duration::from_millis(400));
    p.stop();
    let a: Vec<Arc<Analyzed>> = a.into_iter().collect();
    let b: Vec<Arc<Analyzed>> = b.into_iter().collect();
    assert!(a.len() >= 5, "{} snapshots", a.len());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        // Not two equal analyses: one, shared.
        assert!(Arc::ptr_eq(x, y), "seq {} analysed twice", x.seq());
    }
    for w in a.windows(2) {
        assert_eq!(w[1].seq(), w[0].seq() + 1);
        assert!(w[1].assessment.t_ms > w[0].assessment.t_ms);
    }
    assert_eq!(a[0].assessment.t_ms, a[0].snapshot.t_ms);
}

#[test]
fn the_streams_end_when_the_pipeline_stops() {
    let p = start("demo", 20);
    let hub = p.hub().clone();
    let all = hub.subscribe_all(1000);
    let mut skip = hub.subscribe();
    let latest = hub.latest();
    std::thread::sleep(Duration::from_millis(100));
    drop(p);
    // The queue ends after what was made.
    let n = all.into_iter().count();
    assert!(n >= 1);
    // The broadcast says closed once drained.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        while !matches!(skip.recv().await, Err(broadcast::error::RecvError::Closed)) {}
    });
    assert!(latest.borrow().is_some());
    // Subscribing after the end gives streams that are already over.
    assert!(hub.subscribe_all(4).recv().is_err());
}

#[test]
fn a_full_queue_shows_as_a_gap_never_as_a_stall() {
    // A consumer of a queue of 2 that takes 50 ms per snapshot, with one
    // every 10 ms: the stage goes on, the consumer sees gaps.
    let p = start("demo", 10);
    let tiny = p.hub().subscribe_all(2);
    let reader = std::thread::spawn(move || {
        let mut gaps = GapCounter::default();
        let mut got = 0;
        for a in tiny {
            gaps.saw(a.seq());
            got += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        (got, gaps.missed)
    });
    let fast = p.hub().subscribe_all(1000);
    std::thread::sleep(Duration::from_millis(500));
    p.stop();
    let made = fast.into_iter().count() as u64;
    let (got, missed) = reader.join().unwrap();
    assert!(missed > 0, "{got} received, none missed");
    assert!(made >= 30, "the stage kept its pace: {made}");
}

#[test]
fn a_slow_frame_costs_the_recorder_nothing() {
    // The dashboard draws from `latest()`; a frame that takes 150 ms (with
    // a snapshot every 10 ms) must not cost a lossless consumer such as the
    // recorder a single snapshot.
    let p = start("demo", 10);
    let mut latest = p.hub().latest();
    let recorder = p.hub().subscribe_all(1000);
    let drawer = std::thread::spawn(move || {
        let mut frames = 0;
        while latest.has_changed().is_ok() && frames < 4 {
            let _shown = latest.borrow_and_update().clone();
            std::thread::sleep(Duration::from_millis(150));
            frames += 1;
        }
        frames
    });
    std::thread::sleep(Duration::from_millis(500));
    p.stop();
    let seqs: Vec<u64> = recorder.into_iter().map(|a| a.seq()).collect();
    assert!(drawer.join().unwrap() >= 3, "the drawer drew slowly");
    assert!(seqs.len() >= 30, "{} snapshots", seqs.len());
    for w in seqs.windows(2) {
        assert_eq!(w[1], w[0] + 1, "the recorder missed a snapshot");
    }
}

#[test]
fn gaps_are_counted_from_seq() {
    let mut g = GapCounter::default();
    assert_eq!(g.saw(5), 0, "the first one seen starts the count");
    assert_eq!(g.saw(6), 0);
    assert_eq!(g.saw(9), 2);
    assert_eq!(g.saw(10), 0);
    assert_eq!(g.missed, 2);
}

#[test]
fn analysed_snapshots_carry_their_alerts_as_events_when_recorded() {
    let snaps = SimWorld::new("leak", 1, 1_000_000)
        .unwrap()
        .snapshots(1_000_000, 1000, 60, "me");
    let all = analyse_all(&AnalysisConfig::default(), snaps);
    let with = all
        .iter()
        .find(|a| !a.alerts.is_empty())
        .expect("the leak raises an alert");
    let rec = with.recorded();
    assert_eq!(
        rec.events.len(),
        with.snapshot.events.len() + with.alerts.len() + with.notes.len()
    );
    assert_eq!(with.events().count(), rec.events.len());
    let without = all
        .iter()
        .find(|a| a.alerts.is_empty() && a.notes.is_empty())
        .unwrap();
    assert!(Arc::ptr_eq(&without.recorded(), &without.snapshot));
    // The forecast's first showing is noted once: in the forecast alert
    // raised with it, not in a note of its own as well.
    let shown: Vec<_> = all
        .iter()
        .flat_map(|a| a.events())
        .filter(|n| n.message.contains("forecast first shown"))
        .collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].message.starts_with("[warn forecast_full] GPU "),
        "{shown:?}"
    );
}
