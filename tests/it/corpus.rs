//! The analysis on real PyTorch workloads recorded on H200s
//! (tests/fixtures/corpus/README.md): the figures docs/analysis.md reports
//! must not get worse. Each bound is the figure measured when the
//! forecaster was last tuned (on `tune/` only); `heldout/` was not looked
//! at while tuning.

use std::path::PathBuf;

use vramwatch::analysis::AnalysisConfig;
use vramwatch::analysis::truth::{RunScore, Summary};
use vramwatch::commands::score::{score_file, truth_beside};

fn corpus(set: &str) -> Vec<RunScore> {
    corpus_with(set, &AnalysisConfig::default())
}

fn corpus_with(set: &str, cfg: &AnalysisConfig) -> Vec<RunScore> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus")
        .join(set);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the corpus folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.zst"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| score_file(f, &truth_beside(f), cfg).expect("scores"))
        .collect()
}

/// The driver's figures alone: what a job that does not publish its
/// allocator's figures (`vramwatch_torch`) gets.
fn nvml_only() -> AnalysisConfig {
    AnalysisConfig {
        allocator_demand: false,
        ..AnalysisConfig::default()
    }
}

#[test]
fn the_tuning_corpus_scores_at_least_as_well_as_when_tuned() {
    let runs = corpus("tune");
    let s = Summary::of(&runs);
    assert_eq!((s.runs, s.oom_runs, s.checkpoints), (14, 9, 16), "{s:?}");
    // 14 of 16 held when last tuned (issue 18). The two left:
    // fragment/default's T−10 s, whose newest snapshot then was still in
    // the middle of the fill, before any growth could be seen; and
    // two_proc's T−30 s, whose earliest end came 0.1 s after the OOM (the
    // transient that killed it was twice any seen before).
    assert!(s.held >= 14, "{s:?}");
    assert!(s.held + s.at_risk_only >= 14, "{s:?}");
    assert!(s.shown_by_30 >= 7, "{s:?}");
    assert!(s.false_alarm_runs <= 1, "{s:?}");
    // 24 s before the leak flag set a first-window jump aside.
    assert!(s.slowest_leak_flag_s.is_some_and(|x| x <= 20.5), "{s:?}");
    // The flat and loading runs stay silent; the known false alarm is the
    // KV cache that fills linearly for half a minute before it levels off.
    for r in runs.iter().filter(|r| !r.false_alarms.is_empty()) {
        assert!(r.label.starts_with("kv_plateau"), "{r:?}");
    }
    // From the driver's figures alone (the saturated runs are at risk,
    // not forecast): 10 held and 4 at risk when tuned; 9 and 4 since a
    // reading 999 ms after the last stays its own point (55 of 97 held
    // over every set from the driver alone, 54 before).
    let s = Summary::of(&corpus_with("tune", &nvml_only()));
    assert!(s.held >= 9 && s.held + s.at_risk_only >= 13, "{s:?}");
    assert!(s.false_alarm_runs <= 1, "{s:?}");
}

// The held-out sets were measured, not tuned on: their bounds are what
// they scored before the tuning of issue 18, so that the test fails if the
// analysis gets worse on them, without making them a target.

#[test]
fn the_held_out_corpus_scores_at_least_as_it_did() {
    let s = Summary::of(&corpus("heldout"));
    assert_eq!((s.runs, s.oom_runs), (8, 4), "{s:?}");
    assert!(s.held >= 1 && s.held + s.at_risk_only >= 3, "{s:?}");
    assert!(s.false_alarm_runs <= 1, "{s:?}");
    assert!(s.slowest_leak_flag_s.is_some_and(|x| x <= 20.5), "{s:?}");
}

#[test]
fn the_fast_corpus_scores_at_least_as_it_did() {
    let s = Summary::of(&corpus("quick"));
    assert_eq!((s.runs, s.oom_runs), (14, 9), "{s:?}");
    assert!(s.held >= 2 && s.held + s.at_risk_only >= 7, "{s:?}");
    assert!(s.false_alarm_runs <= 1, "{s:?}");
    assert!(s.slowest_leak_flag_s.is_some_and(|x| x <= 20.5), "{s:?}");
}

/// Recorded on the H200 after the tuning of issue 18 was final, from a
/// model family the corpus did not have (a ResNet image classifier:
/// python/workloads/vision_*.py). The forecast held none of its
/// checkpoints when it was first scored (docs/analysis-history.md,
/// "Recorded after tuning: a model family it never saw"); this keeps what did hold from getting
/// worse: the steady run never alarms and two checkpoints show the GPU at
/// risk. Since a forecast shown at risk is carried from now to its latest
/// end (2026-12-05, fourteenth session), those two T−10 s hold ("41s (0s–1m07s)":
/// its central moment is a linear growth's, its latest end holds).
#[test]
fn the_corpus_recorded_after_tuning_scores_at_least_as_it_did() {
    let s = Summary::of(&corpus("after"));
    assert_eq!((s.runs, s.oom_runs), (5, 4), "{s:?}");
    assert!(s.held >= 2, "{s:?}");
    assert_eq!(s.false_alarm_runs, 0, "{s:?}");
}

/// Recorded on the H200 after the second round of tuning (persistent
/// stairs, at-risk forecasts shown at once) was final, from a plan written
/// before it ran (python/workloads/plans/fresh.plan: other seeds, speeds,
/// growth times, batch and accumulation settings; slower growth, so T−60 s
/// checkpoints exist). Nothing was tuned on it; the bounds are what it
/// scored the first time: 10 of 12 held, shown by T−30 s on all 5 OOM
/// runs, no false alarm. The third round (the latest end from the
/// allocators' demand) was designed on its `grad_accum` trace and holds
/// all 12; from the driver's figures alone 9 hold (at risk, the
/// demand gave the tenth). Since a reading 999 ms after the last stays its
/// own point (2026-12-02), `two_proc`'s T−10 s is a miss (the demand's
/// range after the spike that preceded the OOM ran 0–2 s; it was 1 s of
/// 0–41 s): 11. Since a range at risk wholly before the one shown at the
/// last sample is joined to it (2026-12-06, `Forecast::joined_with`), that
/// checkpoint reads 0–44 s and holds: 12.
#[test]
fn the_corpus_recorded_after_the_second_tuning_scores_at_least_as_it_did() {
    let s = Summary::of(&corpus("fresh"));
    assert_eq!((s.runs, s.oom_runs, s.checkpoints), (6, 5, 12), "{s:?}");
    assert!(s.held >= 12, "{s:?}");
    assert!(Summary::of(&corpus_with("fresh", &nvml_only())).held >= 9);
    assert!(s.shown_by_30 >= 5, "{s:?}");
    assert_eq!(s.false_alarm_runs, 0, "{s:?}");
    assert!(s.slowest_leak_flag_s.is_some_and(|x| x <= 25.5), "{s:?}");
}

/// Recorded on the H200 after the third round was final, from a plan
/// written after it (python/workloads/plans/late.plan: seed 5, speeds
/// 1.2–1.5, other accumulation, growth times and cache time constant).
/// Nothing was tuned on it; the bounds are what it scored the first time:
/// 9 of 11 held (the code before the round: 8), shown by T−30 s on 4 of 5,
/// one false alarm — the KV cache's leak flag, never a forecast.
#[test]
fn the_corpus_recorded_after_the_third_tuning_scores_at_least_as_it_did() {
    let s = held_out("late", (7, 5, 11), 9, 24.5);
    assert!(s.shown_by_30 >= 4, "{s:?}");
}

/// Recorded on the H200 after the fourth round's first version (the leak
/// flag sets aside a jump in a span's first window), from a plan written
/// before it ran (python/workloads/plans/later.plan: seed 6, mostly
/// jump-then-growth shapes). Nothing was tuned on it (the final rule,
/// chosen after, scores it the same); the bounds are what it scored the
/// first time: every OOM run flagged within 20 s of its growth (24 s with
/// the jump rule switched off), 6 of 8 held, one false alarm — the KV
/// cache (forecast and leak flag).
#[test]
fn the_corpus_recorded_after_the_fourth_tuning_scores_at_least_as_it_did() {
    let s = held_out("later", (8, 4, 8), 6, 20.5);
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// Recorded on the H200 after the fourth round's final rule, from a plan
/// written before it ran (python/workloads/plans/last.plan: seed 7).
/// Nothing was tuned on it in the round it was recorded for; the bounds
/// are what it scored the first time (leak flags 19-25 s, 20-25 s with
/// jumps not told apart; 4 of 6 held; the KV cache the one false alarm),
/// but for its `empty_cache()` sawtooth, what the fifth round's change
/// was found on: T−10 s held (5 of 6) and flagged at 20 s since.
#[test]
fn the_corpus_recorded_after_the_final_jump_rule_scores_at_least_as_it_did() {
    let s = held_out("last", (6, 3, 6), 5, 20.5);
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// Recorded on the H200 after the fifth round (a reading counts as high
/// as the next one confirms), from a plan written before it ran
/// (python/workloads/plans/fifth.plan: seed 8, `empty_cache()` sawtooths
/// at ×0.9 and ×1.4, eval peaks, a KV cache with τ 60 s). Nothing was
/// tuned on it; the bounds are what it scored the first time: 7 of 8 held
/// (6 with the code before the round), shown by T−30 s on 3 of 4, leak
/// flags within 19 s (the ×1.4 sawtooth, OOM 34 s in, never flagged), the
/// KV cache the one false alarm. Since a leak is also looked for in the
/// tensors (the allocator's `allocated`) where the GPU is at risk, the
/// ×1.4 sawtooth is flagged 29.7 s in.
#[test]
fn the_corpus_recorded_after_the_fifth_round_scores_at_least_as_it_did() {
    let s = held_out("fifth", (7, 4, 8), 7, 30.0);
    assert!(s.shown_by_30 >= 3, "{s:?}");
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// Recorded on the H200 in the seventh session (plans/sixth.plan, seed 9)
/// before any analysis code of that session changed: 6 of 9 held, shown
/// by T−30 s on 3 of 4 OOM runs, both KV caches alarmed (τ 20 s, and τ 10
/// s, whose fill the GPU's prefill rate kept linear: it never slowed down
/// before the run ended). Then its `two_proc` trace showed a transient of
/// the steady process (+20 GiB for one sample) ending the grower's regime
/// twice; a shift that comes back the next sample is now a peak of the
/// regime (`Envelope::undo`): 8 of 9, 4 of 4 — this set is tuned on since.
#[test]
fn the_corpus_recorded_in_the_seventh_session_scores_at_least_as_it_did() {
    // Two KV caches, both alarmed.
    let s = scored_set("sixth", (7, 4, 9), 8, 24.5, 2, &["kv_plateau"]);
    assert!(s.shown_by_30 >= 4, "{s:?}");
}

/// Recorded on the H200 after the sixth round was final
/// (plans/seventh.plan, seed 10): its first run on 2026-12-01 (the device
/// time ran out after it), the other six on 2026-12-02
/// (plans/seventh-rest.plan) before any analysis change. Scored then, its
/// held-out figure: 7 of 8 held, shown by T−30 s on 4 of 4, leak flags
/// 19–24 s, false alarms on 2 of 3 (the KV cache's leak flag, and a
/// forecast for 4 s on `healthy_train` ×0.9, whose sequence-length warm-up
/// grew at 1.6 GiB/s, under a fill's rate). Its `eval_spike` trace then
/// showed readings 999 ms after the last folded into it (a spike's rise
/// lost); with that fixed, 8 of 8 — tuned on since.
#[test]
fn the_corpus_recorded_after_the_sixth_round_scores_at_least_as_it_did() {
    let s = scored_set(
        "seventh",
        (7, 4, 8),
        8,
        24.5,
        2,
        &["kv_plateau", "healthy_train"],
    );
    assert!(s.shown_by_30 >= 4, "{s:?}");
}

/// Held out from everything the session of 2026-12-02 changed
/// (plans/eighth.plan, seed 11, written and its first job recorded before
/// any analysis change, the rest recorded before the change was made, and
/// scored once, after it was final): 7 of 9 held, shown by T−30 s on 4 of
/// 4, the KV cache's leak flag the one false alarm; leak flags 20–45 s
/// after the growth began (`curriculum` 45 s, `eval_spike` 39 s), and
/// `vision_leak` ×1.2 (19 s from growth to OOM) never flagged. The code
/// before that session's change scores it the same (7 of 9).
#[test]
fn the_corpus_held_out_from_the_fold_fix_scores_at_least_as_it_did() {
    let s = scored_set("eighth", (8, 5, 9), 7, 45.5, 1, &["kv_plateau"]);
    assert!(s.shown_by_30 >= 4, "{s:?}");
}

/// Held out from everything: plans/ninth.plan (seed 12; shapes and
/// settings no scored run had used) written on 2026-12-04 with no analysis
/// change since `eighth/` was scored, recorded on one H200 and scored once:
/// 4 of 8 held (4 of 5 where the growth had run 15 s or more), shown by
/// T−30 s on 1 of 4 (three OOMs came 30–34 s after their growth began),
/// the KV cache (τ 50 s) the one false alarm (leak flag and forecast);
/// leak flags 18–39 s after the growth began, `eval_spike/cached` never
/// flagged. Its `eval_spike/cached` trace then showed a forecast at risk
/// blinking from one sample to the next; with a forecast at risk held
/// over one sample, 5 of 8 (its T−10 s) — tuned on since.
#[test]
fn the_corpus_held_out_from_every_change_scores_at_least_as_it_did() {
    let s = held_out("ninth", (8, 4, 8), 5, 39.5);
    assert!(s.shown_by_30 >= 1, "{s:?}");
}

/// Held out from the at-risk hold (a forecast shown at risk stays over one
/// sample that gives none): plans/tenth.plan (seed 13), written and
/// committed on 2026-12-04 after the hold was final, recorded on one H200
/// on 2026-12-05 and scored once: 6 of 8 held (5 of 6 where the growth had
/// run 15 s or more), shown by T−30 s on 4 of 4, no false alarm (the KV
/// cache at τ 15 s, `healthy_train` ×1.5 and `weights_load` ×1.2 stayed
/// silent); leak flags 19–20 s after the growth began, `eval_spike/cached`
/// and `fragment/default` ×1.2 (5 s from growth to OOM) never flagged.
/// 7 of 8 since a forecast shown at risk is carried to its latest end
/// (`eval_spike/cached`'s T−10 s: "9s (0s–19s)"). Since a leak is also
/// looked for in the tensors where the GPU is at risk, `eval_spike/cached`
/// is flagged 24 s in (its cache holds the GPU's memory flat while its
/// tensors grow).
#[test]
fn the_corpus_held_out_from_the_at_risk_hold_scores_at_least_as_it_did() {
    let s = scored_set("tenth", (8, 5, 8), 7, 24.5, 0, &[]);
    assert!(s.shown_by_30 >= 4, "{s:?}");
}

/// Held out from this session's changes (2026-12-05; none of them
/// changed the analysis): plans/eleventh.plan (seed 14), written and
/// committed before the session changed anything, recorded on one H200
/// and scored once: 6 of 9 held (5 of 6 where the growth had run 15 s or
/// more), 2 more at risk, shown by T−30 s on 2 of 4; false alarms on 2 of
/// 3 (the KV cache at τ 30 s, leak flag and forecast; `healthy_train`
/// ×0.8, a forecast for its slow warm-up, as ×0.9 on `seventh/`); leak
/// flags 20–44 s after the growth began, three OOM runs never flagged.
/// 7 of 9 since a forecast shown at risk is carried to its latest end
/// (`eval_spike/cached`'s T−10 s, at risk before: "2s (0s–15s)").
#[test]
fn the_corpus_held_out_from_the_eleventh_session_scores_at_least_as_it_did() {
    let s = scored_set(
        "eleventh",
        (8, 5, 9),
        7,
        44.5,
        2,
        &["kv_plateau", "healthy_train"],
    );
    assert!(s.shown_by_30 >= 2 && s.held + s.at_risk_only >= 8, "{s:?}");
}

/// Held out from every analysis change up to the fourteenth session's
/// (plans/twelfth.plan, seed 15, written on 2026-12-05 07:00 UTC; recorded
/// on one H200 at 12:51 UTC) and scored once, with the code before and
/// after that session's at-risk carry (the same): 5 of 9 held (5 of 5
/// where the growth had run 15 s or more; the four misses are T−30 s, 7–8
/// s into growth), 1 more at risk, shown by T−30 s on 1 of 4; false alarms
/// on 2 of 3 (`healthy_train` ×0.7, a forecast for its slow warm-up, as
/// ×0.8 and ×0.9 before; the KV cache at τ 40 s, forecast and leak flag);
/// leak flags 16–25 s after the growth began, two OOM runs never flagged.
/// Traced after it was scored; a forecast from a 3 s regime of 4 readings
/// (it was 4 s and 6) holds its three T−30 s: 8 of 9, shown by T−30 s on
/// 3 of 4 — tuned on since.
#[test]
fn the_corpus_held_out_from_the_fourteenth_session_scores_at_least_as_it_did() {
    let s = scored_set(
        "twelfth",
        (8, 5, 9),
        8,
        25.5,
        2,
        &["kv_plateau", "healthy_train"],
    );
    assert!(s.shown_by_30 >= 3 && s.settled_held >= 5, "{s:?}");
}

/// Held out from the fourteenth session's changes (plans/thirteenth.plan,
/// seed 16, written on 2026-12-05 12:20 UTC before any of them; recorded
/// on one H200 at 13:00 UTC) and scored once with the at-risk carry and
/// once with the younger regime, after each was final: 6 of 7 held both
/// times (5 of 5 where the growth had run 15 s or more; `vision_leak`
/// ×1.3's T−10 s missed, 18 s from growth to OOM), shown by T−30 s on 3 of
/// 3; false alarms on 2 of 4, both KV caches (τ 55 s: forecast and leak
/// flag 19 s into its fill; τ 22 s: leak flag at 30 s); `healthy_train`
/// ×0.85 and `weights_load` ×0.8 silent; leak flags 19–25 s after the
/// growth began, `vision_leak` never flagged.
#[test]
fn the_corpus_held_out_from_the_younger_regime_scores_at_least_as_it_did() {
    let s = scored_set("thirteenth", (8, 4, 7), 6, 25.5, 2, &["kv_plateau"]);
    assert!(s.shown_by_30 >= 3 && s.settled_held >= 5, "{s:?}");
}

/// Held out from the fifteenth session's changes (plans/fourteenth.plan,
/// seed 17, written on 2026-12-05 14:40 UTC before any of them) and the
/// first set recorded on an H100 80GB (15:01 UTC), scored once with the
/// code before that session and once after its changes were final: 6 of 7
/// held (4 of 4 where the growth had run 15 s or more; `fragment/default`
/// ×1.1's T−10 s at risk, 18 s from growth to OOM), shown by T−30 s on 3
/// of 3; no false alarm (the KV cache at τ 33 s, `healthy_train` ×0.95,
/// `vision_steady` ×1.1 and `dataset_load` ×0.9 silent); leak flags within
/// 20 s. (The tensors' leak flag taken below the risk too flagged the KV
/// cache 46 s into its fill: the at-risk condition, chosen after this set
/// was scored, is what keeps it silent, so this set is not held out from
/// that condition.)
#[test]
fn the_corpus_held_out_from_the_tensors_view_scores_at_least_as_it_did() {
    let s = scored_set("fourteenth", (8, 4, 7), 6, 20.5, 0, &[]);
    assert!(s.shown_by_30 >= 3 && s.settled_held >= 4, "{s:?}");
}

/// Held out from the sixteenth session's changes (plans/fifteenth.plan,
/// seed 18, written on 2026-12-05 16:08 UTC after the fifteenth session's
/// changes were final; recorded on one H100 80GB at 17:19 UTC) and scored
/// once with that code (e9a675f) before any change: 4 of 7 held (4 of 6
/// where the growth had run 15 s or more), shown by T−30 s on 2 of 3; one
/// false alarm, `healthy_train` ×0.75's slow warm-up forecast ("~16s"
/// 21 s after its start); both KV caches silent; leak flags 19–20 s after
/// the growth began, `vision_leak` ×0.9 and `eval_spike/cached` ×1.05
/// never flagged. Tuned on since: a rise that falls back within 30 s is a
/// transient for the forecast and the leak flag (`vision_leak`'s 13 GiB
/// validation was 17 % of the H100 and started both again): 5 of 7 held,
/// `vision_leak` flagged 24 s into its growth (2 s before its OOM); and
/// from 90 % read with no forecast of the driver's own, the allocators'
/// demand is forecast from (`eval_spike/cached`'s cache held 95.6 % flat
/// for its last 22 s): 6 of 7.
#[test]
fn the_corpus_held_out_from_the_sixteenth_session_scores_at_least_as_it_did() {
    let s = scored_set("fifteenth", (8, 4, 7), 6, 24.5, 1, &["healthy_train"]);
    assert!(s.shown_by_30 >= 2 && s.settled_held >= 6, "{s:?}");
}

/// Held out from the sixteenth session's rules (plans/sixteenth.plan, seed
/// 19, written on 2026-12-05 18:31 UTC after the spike and one-step rules;
/// recorded on one H100 80GB at 18:54 UTC with ee6cc11, the last analysis
/// change) and scored once: 5 of 8 held (5 of 5 where the growth had run
/// 15 s or more; the three T−30 s, 7–9 s into growth, not yet shown),
/// shown by T−30 s on 1 of 4; one false alarm, the KV cache at τ 38 s (a
/// forecast 36 s into its fill); `vision_steady` ×0.9 and `healthy_train`
/// ×1.1 silent; every leak flagged within 20 s. The code before the
/// session: 4 of 8, `vision_leak` ×0.7 never flagged (its validation,
/// above a level shift on the H100, started the detector again).
#[test]
fn the_corpus_held_out_from_the_spike_rule_scores_at_least_as_it_did() {
    let s = scored_set("sixteenth", (7, 4, 8), 5, 20.5, 1, &["kv_plateau"]);
    assert!(s.shown_by_30 >= 1 && s.settled_held >= 5, "{s:?}");
}

/// Held out (plans/seventeenth.plan, seed 20, written on 2026-12-05 20:07
/// UTC before the seventeenth session changed anything; recorded on one
/// H100 80GB on 2026-12-06 02:43 UTC, the first device call that started
/// in three sessions) and scored once with the analysis as it was then
/// (dd5a4b6): 6 of 8 held (3 of 5 where the growth had run 15 s or more:
/// `eval_spike/empty_cache` ×1.15's T−10 s ended its range at 9 s, the
/// OOM came at 10 s; `fragment/expandable` ×1.1's T−30 s at 29 s, the OOM
/// at 30 s), shown by T−30 s on 4 of 4; no false alarm (the KV cache at
/// τ 25 s, `healthy_train` ×0.85 and `dataset_load` ×1.2 silent); leak
/// flags 20 s after the growth began, `curriculum/seqlen` never flagged.
/// The levelling's flat-start rule (made before this set was recorded)
/// prints the same table. Since session 22 (the driver's latest end kept
/// beside the demand's at risk) 7 of 8: `eval_spike/empty_cache`'s T−10 s
/// reads "0s (0s–30s)"; with a young regime's newer-half rate inside the
/// range, 8 of 8.
#[test]
fn the_corpus_held_out_from_the_levelling_rules_scores_at_least_as_it_did() {
    let s = scored_set("seventeenth", (7, 4, 8), 8, 20.5, 0, &[]);
    assert!(s.shown_by_30 >= 4 && s.settled_held >= 3, "{s:?}");
}

/// `eighteenth/` (plan written 2026-12-06 00:40 UTC; recorded on an H100
/// 04:37 UTC in session 20, its third job left out by the deadline): a
/// leak beneath a KV cache and a KV cache at τ 26 s. Scored once as found:
/// 2 of 3 checkpoints held (T−60 s missed: the driver's figure held flat
/// at 88 % by the cache for 44 s while the tensors grew 0.35 GiB/s), leak
/// flag 144 s after the growth began, the cache silent. Then the
/// allocators' view was taken from 85 % instead of 90 % and the tensors'
/// flag wherever that view is (tuned on this run after it was scored):
/// 3 of 3, the flag at 79 s. Since session 26 took a fill's last half
/// that does not slow at its own pace (`levelling::at_own_pace`), the
/// cache above the leak reads as levelling off 10 s longer: the flag at
/// 89 s, the first forecast T−1m09s instead of T−1m11s.
#[test]
fn the_leak_beneath_a_cache_is_forecast_and_flagged() {
    let s = scored_set("eighteenth", (2, 1, 3), 3, 90.0, 0, &[]);
    assert!(s.shown_by_30 >= 1, "{s:?}");
}

/// `nineteenth/` (plan written and committed 2026-12-06 04:40 UTC, before
/// session 20 changed anything; recorded on an H100 04:41–04:49 UTC; its
/// last job, `weights_load`, left out by the deadline), sealed until the
/// session's analysis changes were made, then scored once: 6 of 8
/// checkpoints, 5 of 6 where the growth had run 15 s, shown by T−30 s on 3
/// of 4 OOM runs, leak flags within 24 s, no false alarm (the first KV
/// cache recorded with the τ raise, and `healthy_train` ×0.7, silent).
/// Since session 22 (the driver's latest end kept beside the demand's at
/// risk) 7 of 8.
#[test]
fn the_corpus_held_out_from_the_twentieth_session_scores_at_least_as_it_did() {
    let s = scored_set("nineteenth", (6, 4, 8), 7, 24.5, 0, &[]);
    assert!(s.shown_by_30 >= 3 && s.settled_held >= 5, "{s:?}");
}

/// `twentieth/`, a tuning set (recorded on an H100 2026-12-06: job 01 at
/// 06:27 UTC, 02–04 at 07:18–07:23 UTC): three KV caches with the τ raise
/// and a leak beneath one. Job 01 (τ 15 s asked, 27.3 s served) alarms by
/// forecast 74 s after the start, with this code and the code of 31fbf82:
/// the caching allocator took the driver from 54.5 to 69.5 GB in two steps
/// while the tensors were at 94–97 % of their plateau. Job 04 (τ 30 s)
/// alarmed the same way 93 s after its start until a rise had to be 2 % of
/// the GPU to start a fill anew (its cache arrives in bursts of a request's
/// blocks) and the tensors' pace was taken across the seconds their
/// figures stalled. The leak beneath a cache (02) holds only T−10 s; its
/// flag comes 89 s into the growth.
#[test]
fn the_kv_caches_with_the_tau_raise_alarm_once_by_forecast_only() {
    let runs = corpus("twentieth");
    let s = scored_set("twentieth", (4, 1, 3), 1, 90.0, 1, &["kv_plateau/default"]);
    for r in &runs {
        assert!(
            r.false_alarms.iter().all(|a| a.starts_with("forecast")),
            "{r:?}"
        );
    }
    assert!(s.false_alarm_runs <= 1, "{s:?}");
}

/// `twentyfirst/` (plan written and committed 2026-12-06 07:10 UTC,
/// fae1d1e, before session 21 changed anything; recorded on an H100
/// 07:10–07:18 UTC), sealed until the session's analysis change was made,
/// then scored once: 5 of 7 checkpoints (5 of 5 where the growth had run
/// 15 s, 2 more at risk), shown by T−30 s on 2 of 3 OOM runs, leak flags
/// within 24 s; one false alarm, the KV cache (τ 22 s asked, 26.6 s
/// served), by forecast 48 s and flag 51 s after its start. The code of
/// the session's start scores it the same.
#[test]
fn the_corpus_held_out_from_the_twenty_first_session_scores_at_least_as_it_did() {
    let s = scored_set(
        "twentyfirst",
        (7, 4, 7),
        5,
        24.5,
        1,
        &["kv_plateau/default"],
    );
    assert!(s.shown_by_30 >= 2 && s.settled_held >= 5, "{s:?}");
}

/// `twentysecond/` (plan written 2026-12-06 08:54 UTC, 2894662, after
/// session 21's analysis change; recorded on an H100 with 62729f1 and kept
/// sealed), scored once at the start of session 22 before any change:
/// 1 of 3 checkpoints (vision_leak's T−10 s; two_proc's T−30 and T−10 s
/// missed, T−10 s at risk), leak flag 20.5 s into two_proc's growth,
/// vision_leak ×0.8 (29 s of growth) never flagged; false alarms on both
/// runs that must not alarm: the KV cache (τ 25 s) by forecast 41 s and
/// healthy_train ×0.85's warm-up by forecast 15 s after the start. The
/// leak beneath a cache ×1.2 had no OOM before its end (122 s of growth):
/// flagged 99 s in, first forecast 52 s in, no range that passed. Then
/// tuned on: with the driver's latest end kept when the demand's forecast
/// is shown at risk, two_proc's T−10 s holds too; with the allocation
/// step taken over the regime's last three quarters, its T−30 s (3 of 3).
#[test]
fn the_corpus_held_out_from_the_twenty_second_session_scores_at_least_as_it_did() {
    let s = scored_set(
        "twentysecond",
        (5, 2, 3),
        3,
        21.0,
        2,
        &["kv_plateau/default", "healthy_train"],
    );
    assert!(s.shown_by_30 >= 1 && s.settled_held >= 1, "{s:?}");
    one_unreached_flagged_with_no_range_passed(&s);
}

/// `twentythird/` (plan written and committed 2026-12-06, 89e0140, before
/// session 22 changed the analysis; recorded on an H100 with 3d1caad),
/// sealed until the session's two analysis changes were made, then scored
/// once: 8 of 9 checkpoints (7 of 7 where the growth had run 15 s; the
/// ninth, `vision_leak` ×1.1's T−10 s 21 s into its growth, at risk),
/// shown by T−30 s on 4 of 4, leak flags within 20 s (`vision_leak` never
/// flagged); one false alarm, the KV cache (τ 28 s): leak flag 83 s and
/// forecast 86 s after its start (none since session 23's idle-cache and
/// pause rules). The code of the session's start scores it the same.
#[test]
fn the_corpus_held_out_from_the_twenty_second_session_changes_scores_at_least_as_it_did() {
    let s = scored_set("twentythird", (7, 5, 9), 8, 20.5, 0, &[]);
    assert!(s.shown_by_30 >= 4 && s.settled_held >= 7, "{s:?}");
}

/// `twentyfourth/` (plan written and committed 2026-12-06, 81852e4, after
/// session 22's first two analysis changes; recorded on an H100 with that
/// code), sealed until session 23 began, then scored once with the code it
/// started from (a3dc792): 8 of 8 checkpoints (6 of 6 where the growth had
/// run 15 s), shown by T−30 s on 4 of 4, leak flags within 25 s
/// (`curriculum` never flagged); one false alarm, the KV cache (τ 24 s):
/// forecast 50 s and leak flag 76 s after its start.
#[test]
fn the_corpus_sealed_by_the_twenty_second_session_scores_at_least_as_it_did() {
    let s = scored_set(
        "twentyfourth",
        (6, 4, 8),
        8,
        25.5,
        1,
        &["kv_plateau/default"],
    );
    assert!(s.shown_by_30 >= 4 && s.settled_held >= 6, "{s:?}");
}

/// `twentyfifth/` (plan written and committed 2026-12-06, ba6c306, before
/// session 23 changed the analysis; recorded on an H100 with a3dc792),
/// sealed until the session's analysis change (07901e0) was made, then
/// scored once: 7 of 7 checkpoints (5 of 5 where the growth had run
/// 15 s), shown by T−30 s on 3 of 3, leak flags within 24 s; the KV cache
/// (τ 32 s) and the data set load did not alarm; one false alarm, the
/// warm-up of `healthy_train` ×0.95 (forecast 22 s after its start).
#[test]
fn the_corpus_held_out_from_the_twenty_third_session_changes_scores_at_least_as_it_did() {
    let s = scored_set("twentyfifth", (7, 4, 7), 7, 24.5, 1, &["healthy_train"]);
    assert!(s.shown_by_30 >= 3 && s.settled_held >= 5, "{s:?}");
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `twentysixth/` (plan written and committed 2026-12-06, c227653, after
/// session 23's analysis change; recorded on an H100 at the start of
/// session 24 with the code that session started from, 5898003), scored
/// once before any change: 6 of 7 checkpoints (5 of 5 where the growth had
/// run 15 s) and the seventh shown at risk (`fragment` ×1.1, 14 s of
/// growth), shown by T−30 s on 3 of 3, leak flags within 19 s on two runs
/// (`curriculum/batch` and the 14-second `fragment` never flagged); no
/// false alarm on the KV cache (τ 26 s), `healthy_train` ×1.1 or
/// `weights_load`.
#[test]
fn the_corpus_recorded_at_the_start_of_the_twenty_fourth_session_scores_at_least_as_it_did() {
    let s = scored_set("twentysixth", (7, 4, 7), 6, 19.5, 0, &[]);
    assert!(s.shown_by_30 >= 3 && s.settled_held >= 5, "{s:?}");
    assert!(s.held + s.at_risk_only >= 7, "{s:?}");
    assert!(s.never_flagged <= 2, "{s:?}");
}

/// `twentyseventh/` (plan written and committed 2026-12-06, e398690, after
/// `twentysixth/` was scored and before session 24 changed the analysis;
/// recorded on an H100 with 5898003), sealed until the session's analysis
/// change (16a5055: a steady level holds the leak flag back) was made,
/// then scored once: 8 of 8 checkpoints (7 of 7 where the growth had run
/// 15 s), shown by T−30 s on 4 of 4, leak flags 19 s after the growth on
/// all 4 OOM runs; no false alarm on the KV cache (τ 36 s),
/// `healthy_train` ×1.0 or `vision_steady` ×1.05. The session-start code
/// scores it the same.
#[test]
fn the_corpus_held_out_from_the_twenty_fourth_session_changes_scores_at_least_as_it_did() {
    let s = scored_set("twentyseventh", (7, 4, 8), 8, 19.5, 0, &[]);
    assert!(s.shown_by_30 >= 4 && s.settled_held >= 7, "{s:?}");
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `twentyeighth/` (plan written and committed 2026-12-06, c2cdd0e, after
/// session 24's analysis change; recorded on an H100 at the start of
/// session 25 with the code that session started from, 772ebb3), scored
/// once before any change: 5 of 7 checkpoints (4 of 4 where the growth had
/// run 15 s), one more shown at risk (`vision_leak` ×1.05, 22 s of growth,
/// at T−10 s), shown by T−30 s on 2 of 3, leak flags 20–25 s after the
/// growth on three runs (`vision_leak` never flagged); no false alarm on
/// the KV cache (τ 42 s), `healthy_train` ×0.9 or `dataset_load` ×1.05.
#[test]
fn the_corpus_recorded_at_the_start_of_the_twenty_fifth_session_scores_at_least_as_it_did() {
    let s = scored_set("twentyeighth", (7, 4, 7), 5, 25.5, 0, &[]);
    assert!(s.shown_by_30 >= 2 && s.settled_held >= 4, "{s:?}");
    assert!(s.held + s.at_risk_only >= 6, "{s:?}");
    assert!(s.never_flagged <= 1, "{s:?}");
}

/// `twentyninth/` (plan written and committed 2026-12-06, faeee17, after
/// `twentyeighth/` was scored; recorded on an H100 with 772ebb3), sealed
/// and scored once with the code session 25 started from (it made no
/// analysis change): 7 of 7 checkpoints (5 of 5 where the growth had run
/// 15 s), shown by T−30 s on 3 of 3, leak flags 20–24 s after the growth
/// on three runs (`curriculum/seqlen` never flagged); `healthy_train`
/// ×1.05 and `weights_load` silent, but the KV cache (τ 50 s) flagged
/// 77 s into its fill, when its allocator took 12 GiB of new segments for
/// 2.8 GiB of entries, and forecast 10 s later.
#[test]
fn the_corpus_held_out_in_the_twenty_fifth_session_scores_at_least_as_it_did() {
    let s = scored_set("twentyninth", (7, 4, 7), 7, 24.5, 1, &["kv_plateau"]);
    assert!(s.shown_by_30 >= 3 && s.settled_held >= 5, "{s:?}");
    assert!(s.never_flagged <= 1, "{s:?}");
}

/// `thirtieth/` (plan written and committed 2026-12-06, a36d8cc, after
/// `twentyninth/` was scored and traced; recorded on an H100 with the
/// analysis of 772ebb3, its job 05 left out by the runner's deadline),
/// sealed (6df9971) and scored once; session 25 made no analysis change:
/// 4 of 5 checkpoints (3 of 3 where the growth had run 15 s), the fifth
/// shown at risk (`vision_leak` ×1, 23 s of growth), shown by T−30 s on 2
/// of 2, leak flags 19 s after the growth on two runs (`vision_leak`
/// never); no false alarm on the KV cache (τ 46 s) or `healthy_train`
/// ×0.95.
#[test]
fn the_corpus_held_out_at_the_end_of_the_twenty_fifth_session_scores_at_least_as_it_did() {
    let s = scored_set("thirtieth", (5, 3, 5), 4, 19.5, 0, &[]);
    assert!(s.shown_by_30 >= 2 && s.settled_held >= 3, "{s:?}");
    assert!(s.held + s.at_risk_only >= 5, "{s:?}");
    assert!(s.never_flagged <= 1, "{s:?}");
}

/// `thirtyfirst/` (plan written and committed 2026-12-06, 3325b57, at the
/// end of session 25; recorded on an H100 at the start of session 26 with
/// the code it started from, 214e53f, whose analysis last changed in
/// 1720e87), sealed and scored once before any change: 4 of 4 checkpoints
/// (3 of 3 where the growth had run 15 s), shown by T−30 s on 1 of 1, the
/// leak flag 19 s after the growth on `grad_accum/leak` (`vision_leak` and
/// `fragment` never flagged); `healthy_train` ×1.15 silent, but both KV
/// caches alarmed: τ 31 s by leak flag 66 s and forecast 74 s after its
/// start, τ 55 s by forecast 43 s after its start.
#[test]
fn the_corpus_recorded_at_the_start_of_the_twenty_sixth_session_scores_at_least_as_it_did() {
    let s = scored_set("thirtyfirst", (6, 3, 4), 4, 19.5, 1, &["kv_plateau"]);
    assert!(s.shown_by_30 >= 1 && s.settled_held >= 3, "{s:?}");
    assert!(s.never_flagged <= 2, "{s:?}");
}

/// `thirtysecond/` (plan written and committed 2026-12-06 after
/// `thirtyfirst/` was traced, before session 26's levelling change;
/// recorded on an H200 with that change), sealed and scored once: both KV
/// caches (τ 40 and 60 s), `healthy_train` ×1.0 silent; `leak_keep/logits`
/// 2 of 2 checkpoints, flagged 19 s into its growth; but the leak beneath
/// a KV cache 0 of 3: no forecast at T−60 s, and at T−30 and T−10 s ranges
/// that ended before its OOM (3 s (0–19 s), 1 s (0–3 s)); first forecast
/// T−56 s, leak flag 53 s into its growth. The code before the change
/// scores it the same.
#[test]
fn the_corpus_held_out_from_the_twenty_sixth_session_change_scores_at_least_as_it_did() {
    let s = scored_set("thirtysecond", (5, 2, 5), 2, 53.5, 0, &[]);
    assert!(s.shown_by_30 >= 2 && s.settled_held >= 1, "{s:?}");
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `thirtythird/` (plan written and committed 2026-12-06 at the end of
/// session 26, after its levelling change; recorded on an H200 at the
/// start of session 27 with 15e9691), sealed and scored once before any
/// change: both KV caches (τ 30 and 45 s) and `healthy_train` ×1.1
/// silent; `empty_cache_saw` ×1.0 2 of 2 checkpoints, flagged 20 s into
/// its growth; the leak beneath a KV cache 0 of 3 again (T−60 s
/// "21s (12s–37s)", T−30 s "1s (0s–20s)", T−10 s "0s (0s–0s)" for an OOM
/// 60, 30 and 10 s away), at risk at one of them; flagged 29 s into its
/// growth.
#[test]
fn the_second_set_held_out_from_the_twenty_sixth_session_change_scores_at_least_as_it_did() {
    let s = scored_set("thirtythird", (5, 2, 5), 2, 29.5, 0, &[]);
    assert!(s.shown_by_30 >= 2, "{s:?}");
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

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

/// `thirtyfourth/` (plan written and committed 2026-12-06 by session 27
/// before its analysis change; recorded on an H100 with that change,
/// 363b71f, and only its first two jobs for the device time left), sealed
/// and scored once: the KV cache (τ 35 s) silent; `eval_spike/cached` ×1.0
/// no forecast at T−30 s (first T−29 s), held at T−10 s, flagged 20 s into
/// its growth. The code before the change scores it the same.
#[test]
fn the_set_held_out_from_the_twenty_seventh_session_change_scores_at_least_as_it_did() {
    let s = scored_set("thirtyfourth", (2, 1, 2), 1, 20.5, 0, &[]);
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `thirtyfifth/` (plan written and committed 2026-12-07 by session 28,
/// 4722528, to test session 27's change on leaks beneath a KV cache it
/// was not tuned on; recorded on an H100 with bb3b9c7), sealed and scored
/// once: the leak beneath a cache (τ 40 s ×1.4) held 1 of 3 (none shown
/// at T−60 and T−30 s; "11s (0s–54s)" at T−10 s), flagged 51 s into its
/// growth; the one at τ 20 s ×1.1 had no OOM by its end (133 s of
/// growth), flagged 41 s in, no range that passed; both KV caches (τ 20
/// and 40 s) alarmed late: forecast 50 s and 73 s into their growth, one
/// also flagged at 74 s. The code before session 27's change (fdd68dd)
/// prints the same table: the change neither gained nor lost here.
#[test]
fn the_set_held_out_from_the_twenty_seventh_session_change_on_kv_leaks_scores_at_least_as_it_did() {
    let s = scored_set(
        "thirtyfifth",
        (4, 1, 3),
        1,
        51.5,
        2,
        &["kv_plateau/default"],
    );
    one_unreached_flagged_with_no_range_passed(&s);
}

/// `thirtysixth/` (plan written and committed 2026-12-07 by session 28,
/// d7220da, after `thirtyfifth/` was scored, with no analysis change that
/// session; recorded on an H100 with bb3b9c7, its first three jobs for the
/// device time left), sealed and scored once: 4 of 4 checkpoints held
/// (`curriculum/seqlen` ×0.9 T−30 and T−10 s, never flagged; `two_proc`
/// ×1.0 T−30 and T−10 s, flagged 17 s into its growth), and the slow
/// warm-up (`healthy_train` ×0.8) silent.
#[test]
fn the_set_held_out_from_the_analysis_as_session_twenty_eight_found_it_scores_at_least_as_it_did() {
    let s = scored_set("thirtysixth", (3, 2, 4), 4, 17.5, 0, &[]);
    assert_eq!(s.never_flagged, 1, "{s:?}");
}

/// `thirtyseventh/` (plan written and committed 2026-12-07 by session 29,
/// 2fca6bd, before any change that session; recorded on an H200 with
/// 9a58cd3, six jobs in two calls), sealed and scored once: 3 of 5
/// checkpoints held. Both `vision_leak` runs (×1.0, ×0.9) held at T−10 s
/// (one flagged 25 s into its growth, one never); the leak beneath a KV
/// cache (τ 30 s ×1.2) had no forecast at T−60 or T−30 s, held at T−10 s
/// and was flagged at 39 s; the KV cache at τ 25 s (seed 45) was flagged
/// 24 s into its fill, the one at τ 30 s (seed 43) and the warm-up
/// (`healthy_train` ×0.85) were silent.
#[test]
fn the_set_held_out_from_the_analysis_as_session_twenty_nine_found_it_scores_at_least_as_it_did() {
    let s = scored_set(
        "thirtyseventh",
        (6, 3, 5),
        3,
        39.5,
        1,
        &["kv_plateau/default"],
    );
    assert_eq!(s.never_flagged, 1, "{s:?}");
}

/// `thirtyeighth/` (plan written and committed 2026-12-07 by session 29,
/// eab190f, before its analysis change 835be61; recorded on an H100 with
/// 45bce56 at the start of session 30), sealed and scored once, with
/// 45bce56 and with session 30's two changes (the same but `fragment`'s
/// T−10 s range): 4 of 8 checkpoints held. The leak beneath a KV cache
/// (τ 40 s ×1.3), flagged 23 s into its growth, held at T−30 and T−10 s,
/// not at T−60 s ("33s (25s–46s)": the cache's fill in its pace);
/// `eval_spike/cached` no forecast at T−30 s (6 s into its growth), held
/// at T−10 s, flagged at 31 s; `fragment` ×0.9 at risk at T−30 s, held at
/// T−10 s; `vision_leak` ×1.1 (OOM 21 s into its growth) at risk at
/// T−10 s, never flagged. The KV cache (τ 35 s) and the warm-up
/// (`healthy_train` ×0.9) were silent.
#[test]
fn the_set_held_out_from_session_twenty_nines_change_scores_at_least_as_it_did() {
    let s = scored_set("thirtyeighth", (6, 4, 8), 4, 31.5, 0, &[]);
    assert_eq!(s.never_flagged, 1, "{s:?}");
}

/// `thirtyninth/` (plan written and committed 2026-12-07 by session 30,
/// af79d01, after its two analysis changes; recorded on an H100 in two
/// calls, each part sealed and scored once): the leak beneath a KV cache
/// (τ 35 s ×1.1) had no forecast at T−60 s (its driver figure flat for
/// 30 s, then a step: "one step" until 50 s into its growth, "unsteady"
/// at 59 s), held at T−30 s ("0s (0s–30s)") and T−10 s, and was flagged
/// 91 s into its growth. Of jobs 02–05 (session 31, with c873d1d):
/// `eval_spike/cached` ×0.9 had none at T−30 s (9 s into its growth) and
/// held at T−10 s, `vision_leak` ×0.8 held at T−10 s, and the KV cache at
/// τ 45 s was flagged as leaking 105 s after its start.
#[test]
fn the_set_held_out_from_session_thirtys_changes_scores_at_least_as_it_did() {
    let s = scored_set("thirtyninth", (5, 3, 6), 4, 91.5, 1, &["kv_plateau"]);
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `fortieth/` (plan written and committed 2026-12-07 by session 31,
/// 29d7363, after its change b5611b8), sealed and scored once: both
/// leaks beneath a KV cache had no forecast at T−60 s (their driver's
/// figure a staircase of 5–19 GiB segments, the larger ones level shifts)
/// and held at T−30 and T−10 s; `eval_spike/cached` ×1.1 had none at
/// T−30 s, 3 s into its growth, and held at T−10 s; the KV cache and the
/// warm-up stayed quiet. The same table with the code before the change.
#[test]
fn the_set_held_out_from_session_thirty_ones_change_scores_at_least_as_it_did() {
    let s = scored_set("fortieth", (5, 3, 8), 5, 83.5, 0, &[]);
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `fortyfirst/` (plan written and committed 2026-12-07 by session 31,
/// 56b6375, after `fortieth/` was scored), recorded with b5611b8's
/// analysis, sealed, and scored once by session 32 before any change: the
/// leak beneath a KV cache (τ 35 s ×1.3) showed a forecast at T−1m31s
/// that was gone by T−60 and T−30 s, and held at T−10 s; `vision_leak`,
/// `empty_cache_saw` and `two_proc` held at every checkpoint their growth
/// reached; the KV cache at τ 50 s and the warm-up stayed quiet.
#[test]
fn the_set_sealed_by_session_thirty_one_scores_at_least_as_it_did() {
    let s = scored_set("fortyfirst", (6, 4, 8), 6, 76.5, 0, &[]);
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `fortysecond/` (plan written and committed 2026-12-07 by session 32,
/// c80280c, after its change a0ebe68), sealed and scored once, with
/// a0ebe68 and with 88152f8 (before the change): the same table.
/// `fragment/expandable`, `grad_accum/leak` and `eval_spike/cached` held
/// at every checkpoint but `eval_spike`'s T−30 s; the KV cache at τ 30 s
/// was forecast full 31 s after its start (by the forecast, not the
/// leak flag); the leak beneath a KV cache (τ 25 s ×1.2) had not run out
/// by its end and was flagged at +1m16s, and a forecast shown 92 s after
/// its start, "~16s (1s–39s)", closed its range with no OOM.
#[test]
fn the_set_held_out_from_session_thirty_twos_change_scores_at_least_as_it_did() {
    let s = scored_set("fortysecond", (6, 3, 6), 5, 31.5, 1, &["kv_plateau"]);
    assert_eq!(s.never_flagged, 0, "{s:?}");
    assert_eq!((s.unreached_runs, s.unreached_flagged), (1, 1), "{s:?}");
    assert!(s.unreached_range_passed <= 1, "{s:?}");
}

/// `fortythird/` (plan written and committed 2026-12-07 by session 32,
/// 74803c9, after `fortysecond/` was scored), recorded by session 33 with
/// 666b1f2's analysis (a0ebe68's), sealed, and scored once before any
/// analysis change: the leak beneath a KV cache (τ 30 s ×1.3) had no
/// forecast at T−60 and T−30 s, was flagged at +1m31s and held at T−10 s;
/// `eval_spike/cached` had none at T−30 s and held at T−10 s; `two_proc`
/// and `vision_leak` held at every checkpoint their growth reached; the
/// KV cache at τ 35 s and the warm-up stayed quiet.
#[test]
fn the_set_sealed_by_session_thirty_two_scores_at_least_as_it_did() {
    let s = scored_set("fortythird", (6, 4, 8), 5, 91.5, 0, &[]);
    assert_eq!(s.never_flagged, 0, "{s:?}");
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
/// was "33s (25s–46s)", now "33s (25s–1m04s)" (tuned on: traced after it
/// was scored). And while a leak is flagged (session 32) a candidate is
/// held 1 s, not 3, and a forecast shown stands over the samples that
/// give none (an allocator segment's level shift): `fortyfirst/01` T−30 s
/// had none (its candidates waiting out the hold, then a new regime), now
/// "18s (0s–1m11s)"; `thirtyfifth/01` T−30 s had none (a 8.4 GiB segment
/// 13 s before), now "4s (0s–33s)" (both tuned on: traced after they were
/// scored).
#[test]
fn leaks_beneath_a_kv_cache_are_forecast_at_the_pace_left_once_it_has_filled() {
    for (set, run, leads) in [
        ("thirtysecond", "02-", &[30, 10][..]),
        ("thirtythird", "02-", &[30, 10][..]),
        ("thirtyfifth", "01-", &[30, 10][..]),
        ("thirtyseventh", "03-", &[30, 10][..]),
        ("thirtyeighth", "01-", &[60, 30, 10][..]),
        ("fortyfirst", "01-", &[30, 10][..]),
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

/// The run of `set` whose name starts with `run` is a KV cache, and raised
/// no false alarm.
fn kv_cache_is_quiet(set: &str, run: &str) {
    let runs = corpus(set);
    let r = runs
        .iter()
        .find(|r| r.run.starts_with(run))
        .unwrap_or_else(|| panic!("{set}/{run}"));
    assert!(r.label.starts_with("kv_plateau/default"), "{r:?}");
    assert_eq!(r.false_alarms, Vec::<String>::new(), "{set}: {r:?}");
}

/// A held-out set's summary, checked for its (runs, OOM runs, checkpoints),
/// at least `held` checkpoints held, every leak flag within
/// `slowest_leak_s` of its growth, and no false alarm but the KV cache's.
fn held_out(set: &str, shape: (usize, usize, usize), held: usize, slowest_leak_s: f64) -> Summary {
    scored_set(set, shape, held, slowest_leak_s, 1, &["kv_plateau"])
}

/// As [`held_out`], with at most `false_alarms` runs alarmed, each one of
/// the workloads `may_alarm` names.
fn scored_set(
    set: &str,
    shape: (usize, usize, usize),
    held: usize,
    slowest_leak_s: f64,
    false_alarms: usize,
    may_alarm: &[&str],
) -> Summary {
    let runs = corpus(set);
    let s = Summary::of(&runs);
    assert_eq!((s.runs, s.oom_runs, s.checkpoints), shape, "{set}: {s:?}");
    assert!(s.held >= held, "{set}: {s:?}");
    assert!(
        s.slowest_leak_flag_s.is_some_and(|x| x <= slowest_leak_s),
        "{set}: {s:?}"
    );
    assert!(s.false_alarm_runs <= false_alarms, "{set}: {s:?}");
    for r in runs.iter().filter(|r| !r.false_alarms.is_empty()) {
        assert!(
            may_alarm.iter().any(|w| r.label.starts_with(w)),
            "{set}: {r:?}"
        );
    }
    s
}

/// The set has one run that grew towards an OOM that had not come by its
/// end: flagged as leaking, and no forecast range passed before the end.
fn one_unreached_flagged_with_no_range_passed(s: &Summary) {
    assert_eq!((s.unreached_runs, s.unreached_flagged), (1, 1), "{s:?}");
    assert_eq!(s.unreached_range_passed, 0, "{s:?}");
}

/// docs/analysis.md's "Where it stands" tables are what `score --by set`
/// and `score --by shape` print over every recording now: a change that
/// moves a figure fails here until the doc says so.
#[test]
fn where_it_stands_in_the_docs_is_what_score_prints_now() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/analysis.md")).unwrap();
    for by in ["set", "shape"] {
        let out = assert_cmd::Command::cargo_bin("vramwatch")
            .unwrap()
            .current_dir(&root)
            .args(["score", "--by", by, "tests/fixtures/corpus"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let printed = String::from_utf8(out.stdout).unwrap();
        assert!(printed.contains("| **all** |"), "{printed}");
        let open = format!("<!-- vramwatch score --by {by} tests/fixtures/corpus -->\n");
        let start = doc.find(&open).map(|i| i + open.len());
        let block = start.and_then(|i| doc[i..].find("<!-- end -->").map(|j| &doc[i..i + j]));
        assert_eq!(
            block,
            Some(printed.as_str()),
            "docs/analysis.md, \"Where it stands\": the table by {by} is not what \
             `vramwatch score --by {by} tests/fixtures/corpus` prints now"
        );
    }
}

#[test]
fn a_folder_given_to_score_is_the_recordings_in_it_with_their_truth() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let score = |args: &[&str]| {
        assert_cmd::Command::cargo_bin("vramwatch")
            .unwrap()
            .current_dir(&root)
            .arg("score")
            .args(args)
            .output()
            .unwrap()
    };
    let set = "tests/fixtures/corpus/twentyninth";
    let mut files: Vec<String> = std::fs::read_dir(root.join(set))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| format!("{set}/{}", e.file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".jsonl.zst"))
        .collect();
    files.sort();
    let by_files = score(&files.iter().map(String::as_str).collect::<Vec<_>>());
    let by_folder = score(&[set]);
    assert!(by_folder.status.success(), "{by_folder:?}");
    assert_eq!(by_folder.stdout, by_files.stdout);
    assert!(String::from_utf8_lossy(&by_folder.stdout).contains("7 runs (4 OOM"));
    // Runs from more than one set say which they are from.
    let two = score(&[set, "tests/fixtures/corpus/thirtieth"]);
    let text = String::from_utf8_lossy(&two.stdout);
    assert!(
        text.contains("| twentyninth/ kv_plateau/default ×1 |"),
        "{text}"
    );
    assert!(
        text.contains("| thirtieth/ two_proc/default ×1 |"),
        "{text}"
    );
    // A recording given twice (in its folder and by name) is scored once.
    let twice = score(&[set, &files[0]]);
    assert_eq!(twice.stdout, by_folder.stdout);
    // A folder with no recording and truth in it is named, exit status 2.
    let none = score(&["src"]);
    assert_eq!(none.status.code(), Some(2), "{none:?}");
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        err.contains("src: no recording with its truth beside it"),
        "{err}"
    );
}

#[test]
fn score_by_a_group_that_is_not_one_is_a_usage_error() {
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .args(["score", "--by", "speed", "x.jsonl.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'speed'") && err.contains("set") && err.contains("shape"),
        "{err}"
    );
}

#[test]
fn score_prints_the_table_and_says_what_is_missing() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/tune");
    let rec = dir.join("01-gpu0-leak_keep-s1.0.jsonl.zst");
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .arg("score")
        .arg(&rec)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| leak_keep/logits ×1 | OOM |"), "{text}");
    assert!(text.contains("1 run (1 OOM, 0 must not alarm)"), "{text}");
    // JSON for machines.
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .args(["score", "--json"])
        .arg(&rec)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["oom_runs"], 1);
    // A recording without its truth: the error names the file it wanted.
    let tmp = tempfile::tempdir().unwrap();
    let lone = tmp.path().join("x.jsonl.zst");
    std::fs::copy(&rec, &lone).unwrap();
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .arg("score")
        .arg(&lone)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("x.truth.json") && err.contains("cannot read"),
        "{err}"
    );
    // A recording that is not there is named, not the truth beside it.
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .arg("score")
        .arg(tmp.path().join("nope.jsonl.zst"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nope.jsonl.zst") && !err.contains("nope.truth.json"),
        "{err}"
    );
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
