//! The recorder as a consumer of the pipeline.

use std::time::{Duration, Instant};

use super::*;
use crate::analysis::AnalysisConfig;
use crate::pipeline::Pipeline;
use crate::record::Recording;
use crate::sampler::Schedule;
use crate::source::sim::{SimSource, SimWorld};

fn pipeline(interval_ms: u64) -> Pipeline {
    let world = SimWorld::new("demo", 1, now_ms()).unwrap();
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

fn seqs(path: &Path) -> Vec<u64> {
    let r = Recording::open(path).unwrap();
    (0..r.len()).map(|i| r.get(i).unwrap().seq).collect()
}

#[test]
fn file_names_are_safe_and_dated() {
    let path = file_name(Path::new("/x"), "sim node/1", 1_795_953_600_000, true);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("vramwatch-sim_node_1-"), "{name}");
    assert!(name.ends_with(".jsonl.zst"), "{name}");
}

#[test]
fn a_recording_holds_every_snapshot_the_pipeline_made_while_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(20);
    let path = dir.path().join("r.jsonl");
    let rec = Recorder::create(path.clone(), p.hub(), WriterOptions::default(), |_| {}).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    // Stop sampling first: what was sampled is analysed, queued, written.
    p.stop();
    let summary = rec.finish();
    assert_eq!(summary.failed, None);
    assert_eq!(summary.missed, 0);
    let got = seqs(&path);
    assert!(got.len() >= 10, "{} snapshots", got.len());
    assert_eq!(summary.stats.snapshots, got.len() as u64);
    for w in got.windows(2) {
        assert_eq!(w[1], w[0] + 1, "a gap in {got:?}");
    }
}

#[test]
fn a_slow_screen_does_not_make_the_recorder_miss_a_snapshot() {
    // A consumer that takes 250 ms per snapshot (a very slow frame) while
    // snapshots come every 10 ms: it falls behind and skips; the recorder,
    // on its own queue, writes every one.
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(10);
    let mut screen = p.hub().subscribe();
    let path = dir.path().join("r.jsonl.zst");
    let rec = Recorder::create(path.clone(), p.hub(), WriterOptions::default(), |_| {}).unwrap();
    let lagged = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut skipped = 0u64;
            let until = Instant::now() + Duration::from_millis(1500);
            while Instant::now() < until {
                match screen.recv().await {
                    Ok(_) => std::thread::sleep(Duration::from_millis(250)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => skipped += n,
                    Err(_) => break,
                }
            }
            skipped
        })
    });
    let skipped = lagged.join().unwrap();
    p.stop();
    let summary = rec.finish();
    assert!(skipped > 0, "the slow screen never fell behind");
    assert_eq!(summary.missed, 0);
    let got = seqs(&path);
    assert!(got.len() > 60, "{} snapshots", got.len());
    for w in got.windows(2) {
        assert_eq!(w[1], w[0] + 1, "the recording has a gap");
    }
}

#[test]
fn stopping_finishes_the_file_while_the_pipeline_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(20);
    let path = dir.path().join("r.jsonl");
    let rec = Recorder::create(path.clone(), p.hub(), WriterOptions::default(), |_| {}).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let summary = rec.stop();
    assert_eq!(summary.failed, None);
    let n = seqs(&path).len() as u64;
    assert!(n >= 3);
    assert_eq!(summary.stats.snapshots, n);
    drop(p);
}
