//! One shape across sets: KV caches that must stay quiet, leaks beneath a
//! KV cache, the checkpoints 15 s into growth, and forecasts noted once.

use super::*;

/// KV caches whose tensors level off, where what the tensors have still to
/// add fits in the cache their allocator already holds (PyTorch frees that
/// cache and retries before an allocation fails), and where the level
/// found is kept over a pause between new entries: no "full in" and no
/// leak flag. Before session 23's change each of these was a false alarm
/// (forecasts 41 to 86 s after their starts; `twentythird/01` a leak flag
/// at 83 s too).
#[test]
fn kv_caches_whose_rest_fits_the_cache_already_held_do_not_alarm() {
    for (set, run) in [
        ("later", "03-"),
        ("twentieth", "01-"),
        ("twentysecond", "01-"),
        ("twentythird", "01-"),
    ] {
        kv_cache_is_quiet(set, run);
    }
}

/// KV caches whose tensors' fit finds a level at one sample and none at
/// the next while they still grow (entries of random sizes in bursts):
/// a steady level found within 15 s holds the leak flag back. Before
/// session 24's change, each was a false alarm by the leak flag alone
/// (`ninth/05`, τ 50 s, 54 s after its start; `twentyfirst/01`, τ 22 s,
/// 51 s after).
#[test]
fn kv_caches_whose_fit_flickers_raise_no_leak_flag() {
    for (set, run) in [("ninth", "05-"), ("twentyfirst", "01-")] {
        kv_cache_is_quiet(set, run);
    }
}

/// A KV cache whose segments came about a second apart, then stopped:
/// its memory, flat for 8 s, is no longer reaching new highs, so it is not
/// leaking now. Before session 30 (`LEAK_STALE_MIN`, 10 s then) it was
/// flagged for one second, 24 s into its fill (`thirtyseventh/05`, τ 48 s;
/// tuned on: traced after the set was scored).
#[test]
fn a_kv_cache_paused_between_its_segments_raises_no_leak_flag() {
    kv_cache_is_quiet("thirtyseventh", "05-");
}

/// KV caches whose last half of the fill holds one pace while the whole
/// fill has slowed (`thirtyfirst/01`: its tensors 0.42 GiB/s from 42 to
/// 62 s, 0.71 GiB/s at 23 s; a leak flag 66 s and "full in" 74 s after
/// its start), and whose fit reached over the top for one second of flat
/// tensors (`twentyfourth/01`: a level of 71.0 GiB on an 80 GB GPU, and
/// "full in" for that second, 50 s after its start): neither alarms since
/// session 26's change (`levelling::at_own_pace`, and a level over the
/// top counting as none said for the GPU's hold).
#[test]
fn kv_caches_whose_last_half_keeps_one_pace_do_not_alarm() {
    for (set, run) in [("thirtyfirst", "01-"), ("twentyfourth", "01-")] {
        kv_cache_is_quiet(set, run);
    }
}

/// Leaks beneath a KV cache: once the cache has filled, only the leak's
/// pace is left, and the regime starts again where the growth slowed for
/// good (session 27). Before, the whole regime's rate (the cache's fill
/// in it) ran every range out before the OOM: `thirtysecond/02` T−30 s
/// "3s (0s–19s)", `thirtythird/02` T−30 s "1s (0s–20s)" and T−10 s
/// "0s (0s–0s)". And a GPU on which a process is flagged as leaking is
/// not a fill levelling off (session 29): `thirtyseventh/03`, flagged 39 s
/// into its growth, was refused as one until 69 s and had no forecast at
/// T−30 s; now "27s (13s–49s)" (tuned on: traced after it was scored).
/// The allocators' envelope is told the same (session 30):
/// `thirtysecond/02` T−10 s was "2s (0s–10s)", now "2s (0s–15s)". And
/// where a fill slows with a leak flagged, the range takes in a pace
/// slower than the whole regime's (session 31): `thirtyeighth/01` T−60 s
/// was "33s (25s–46s)", then "33s (25s–1m04s)" (tuned on: traced after it
/// was scored); none since session 36, whose fill ceiling (1.1 % of the
/// GPU a second) holds its leak flag back to 82 s. And while a leak is flagged (session 32) a candidate is
/// held 1 s, not 3, and a forecast shown stands over the samples that
/// give none (an allocator segment's level shift): `fortyfirst/01` T−30 s
/// had none (its candidates waiting out the hold, then a new regime), now
/// "18s (0s–1m11s)"; `thirtyfifth/01` T−30 s had none (a 8.4 GiB segment
/// 13 s before), now "4s (0s–33s)" (both tuned on: traced after they were
/// scored). And while a process's tensors there grow (session 35), flagged
/// or not: `fortyfifth/02` T−60 s had none (a 9 GiB segment 10 s before,
/// then 30 s flat while its tensors grew 0.4 GiB/s), now "34s (0s–2m09s)"
/// (tuned on: traced after it was scored).
#[test]
fn leaks_beneath_a_kv_cache_are_forecast_at_the_pace_left_once_it_has_filled() {
    for (set, run, leads) in [
        ("thirtysecond", "02-", &[30, 10][..]),
        ("thirtythird", "02-", &[30, 10][..]),
        ("thirtyfifth", "01-", &[30, 10][..]),
        ("thirtyseventh", "03-", &[30, 10][..]),
        ("thirtyeighth", "01-", &[30, 10][..]),
        ("fortyfirst", "01-", &[30, 10][..]),
        ("fortyfifth", "02-", &[60][..]),
    ] {
        let runs = corpus(set);
        let r = runs.iter().find(|r| r.run.starts_with(run)).unwrap();
        assert!(r.label.starts_with("kv_plateau/leak"), "{r:?}");
        for lead in leads {
            let c = r.checkpoints.iter().find(|c| c.lead_s == *lead).unwrap();
            assert!(
                c.shown.is_some_and(|s| s.held),
                "{set}/{run} T−{lead}: {c:?}"
            );
        }
    }
}

/// Across every set (tuned on or not), the checkpoints with at least 15 s
/// of growth behind them: 48 of 49 held when this was first counted
/// (docs/analysis-history.md, "Seventh session"); the other misses are in the
/// first seconds of a growth. The one left: `heldout/`'s
/// fragment/expandable at T−10 s, whose range (2–9 s) ended a second too
/// early. 47 since a reading 999 ms after the last stays its own point:
/// `fresh/`'s `two_proc` at T−10 s (see its test); 61 of 63 with
/// `sixth/` and `seventh/`.
#[test]
fn once_the_growth_has_run_fifteen_seconds_the_forecast_holds() {
    let sets = [
        "tune", "heldout", "quick", "after", "fresh", "late", "later", "last", "fifth",
    ];
    // (`sixth/` is left out: it came later; its own test above.)
    let (mut n, mut held) = (0, 0);
    for set in sets {
        let s = Summary::of(&corpus(set));
        n += s.settled_checkpoints;
        held += s.settled_held;
    }
    assert_eq!(n, 49);
    assert!(held >= 47, "{held} of {n}");
}

/// A forecast that comes and goes within a minute is one episode: one
/// "forecast first shown" note, not one each time. `sixteenth/01`'s leak
/// is forecast, withdrawn over a validation's spike, and forecast again
/// (`fifth/02`, a KV cache at τ 60 s shown three times as its fill's rate
/// wavered, was this test's recording until its tensors' levelling off
/// withheld those: `levelling`; `tenth/01`,
/// shown three times on a saturated GPU, was this test's recording until
/// a forecast at risk was carried to its latest end: it is shown once).
#[test]
fn a_forecast_that_comes_back_soon_is_noted_once() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus/sixteenth/01-gpu0-vision_leak-s0.7-seed19.jsonl.zst");
    let rec = vramwatch::record::Recording::open(&path).expect("opens");
    let snaps = rec.iter().map(|s| s.expect("reads"));
    let all = vramwatch::pipeline::analyse_all(&AnalysisConfig::default(), snaps);
    // (Noted in the forecast alert raised with it, where there is one; the
    // recording's own events, of the code that recorded it, left out.)
    let shown: Vec<_> = all
        .iter()
        .flat_map(|a| a.alerts.iter().map(|a| a.to_event()).chain(a.notes.clone()))
        .filter(|n| n.message.contains("forecast first shown"))
        .collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    // And it was shown more than once.
    let showings = all
        .windows(2)
        .filter(|w| w[0].assessment.gpu(0).is_none_or(|g| g.forecast.is_none()))
        .filter(|w| w[1].assessment.gpu(0).is_some_and(|g| g.forecast.is_some()))
        .count();
    assert!(showings >= 2, "{showings}");
}
