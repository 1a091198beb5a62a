//! The sets from `tune/` to `twentieth/`, each held to what it scored.

use super::*;

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
/// growth began, `vision_leak` never flagged. Since session 34 the τ 22 s
/// cache's flag, raised 10 s into its fill and hidden until 30 s, must be
/// raised afresh to be shown, and is not: one false alarm.
#[test]
fn the_corpus_held_out_from_the_younger_regime_scores_at_least_as_it_did() {
    let s = scored_set("thirteenth", (8, 4, 7), 6, 25.5, 1, &["kv_plateau"]);
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
