//! The sets from `twentyfirst/` to the newest, each held to what it
//! scored when first scored, before or after the change it was held out
//! from.

use super::*;

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
/// warm-up of `healthy_train` ×0.95 (forecast 22 s after its start), gone
/// since session 36: its candidates' moment came 3.3 s nearer in 3 s as
/// the warm-up's segments grew, within the hold's 0.5 s/s + 1 s + 10 % of
/// the 9 s to go (3.4 s), not within 0.4 s/s (3.1 s).
#[test]
fn the_corpus_held_out_from_the_twenty_third_session_changes_scores_at_least_as_it_did() {
    let s = scored_set("twentyfifth", (7, 4, 7), 7, 24.5, 0, &[]);
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
/// 2.8 GiB of entries, and forecast 10 s later. Later rules took the
/// forecast away, and session 34's the flag (raised 7 s before it showed,
/// it is not raised afresh there).
#[test]
fn the_corpus_held_out_in_the_twenty_fifth_session_scores_at_least_as_it_did() {
    let s = scored_set("twentyninth", (7, 4, 7), 7, 24.5, 0, &[]);
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
/// scores it the same. Since session 34 the flag comes at 90 s: the one
/// raised before 53 s was hidden until then and is not raised afresh
/// there (the price of three KV caches' false alarms, `docs/analysis.md`).
#[test]
fn the_corpus_held_out_from_the_twenty_sixth_session_change_scores_at_least_as_it_did() {
    let s = scored_set("thirtysecond", (5, 2, 5), 2, 90.5, 0, &[]);
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
/// growth (79 s since session 34: that flag, raised before and hidden
/// until 29 s, is not raised afresh there).
#[test]
fn the_second_set_held_out_from_the_twenty_sixth_session_change_scores_at_least_as_it_did() {
    let s = scored_set("thirtythird", (5, 2, 5), 2, 79.5, 0, &[]);
    assert!(s.shown_by_30 >= 2, "{s:?}");
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `thirtyfourth/` (plan written and committed 2026-12-06 by session 27
/// before its analysis change; recorded on an H100 with that change,
/// 363b71f, and only its first two jobs for the device time left), sealed
/// and scored once: the KV cache (τ 35 s) silent; `eval_spike/cached` ×1.0
/// no forecast at T−30 s (first T−29 s), held at T−10 s, flagged 20 s into
/// its growth. The code before the change scores it the same. Flagged
/// 22 s in since session 36 (growth faster than 1.1 % of the GPU a second
/// is loading, not 1.5 %: the flag waits out its fastest seconds).
#[test]
fn the_set_held_out_from_the_twenty_seventh_session_change_scores_at_least_as_it_did() {
    let s = scored_set("thirtyfourth", (2, 1, 2), 1, 22.5, 0, &[]);
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
/// Since session 36 (growth faster than 1.1 % of the GPU a second is
/// loading) the leak beneath the cache at τ 40 s is flagged at 62 s.
#[test]
fn the_set_held_out_from_the_twenty_seventh_session_change_on_kv_leaks_scores_at_least_as_it_did() {
    let s = scored_set(
        "thirtyfifth",
        (4, 1, 3),
        1,
        62.5,
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
/// (`healthy_train` ×0.9) were silent. Since session 36 (growth faster
/// than 1.1 % of the GPU a second is loading, not 1.5 %) the leak beneath
/// the cache is flagged at 82 s, not 23, and has no forecast at T−60 s.
#[test]
fn the_set_held_out_from_session_twenty_nines_change_scores_at_least_as_it_did() {
    let s = scored_set("thirtyeighth", (6, 4, 8), 4, 82.5, 0, &[]);
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
/// τ 45 s was flagged as leaking 105 s after its start (since session 34
/// not: that flag was raised 24 s before it showed, and is not raised
/// afresh there).
#[test]
fn the_set_held_out_from_session_thirtys_changes_scores_at_least_as_it_did() {
    let s = scored_set("thirtyninth", (5, 3, 6), 4, 91.5, 0, &[]);
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
/// reached; the KV cache at τ 50 s and the warm-up stayed quiet. Its
/// leak was flagged at +1m16s, at +1m20s since session 34 (a flag hidden
/// since its raise must be raised afresh to be shown).
#[test]
fn the_set_sealed_by_session_thirty_one_scores_at_least_as_it_did() {
    let s = scored_set("fortyfirst", (6, 4, 8), 6, 80.5, 0, &[]);
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

/// `fortyfourth/` (plan written and committed 2026-12-07 by session 33,
/// 6baba4a, after `fortythird/` was scored), recorded by session 33 with
/// 666b1f2's analysis in two calls (jobs 01 and 03, then 04, 06 and 05;
/// job 02, a KV cache at τ 25 s, left out for device time), sealed, and
/// scored once with no analysis change made: the leak beneath a KV cache
/// (τ 35 s ×1.2) had not run out by its end and was flagged 20 s into its
/// growth, no forecast range passing before the end; the curriculum held
/// at T−30 and T−10 s (never flagged, as curricula are not); `fragment`
/// had at T−10 s a range starting 6 s after its OOM, the GPU shown at
/// risk; the warm-up at ×0.8 and the data set load stayed quiet.
#[test]
fn the_set_recorded_by_session_thirty_three_scores_at_least_as_it_did() {
    let s = scored_set("fortyfourth", (5, 2, 3), 2, 20.5, 0, &[]);
    assert_eq!(s.never_flagged, 1, "{s:?}");
    one_unreached_flagged_with_no_range_passed(&s);
}

/// `fortyfifth/` (plan written and committed 2026-12-07 by session 33,
/// 46dadce, after `fortyfourth/` was scored), recorded by session 34 on an
/// H100 with d8079c8's binary in three calls (jobs 01 and 02, then 03,
/// then 04; 05 and 06 left out for device time), sealed (d0d955f), and
/// scored once with session 34's change (3144837) and once with the code
/// before it: the same table. The leak beneath a KV cache (τ 30 s ×1.1)
/// held none of T−60/−30/−10 s: none shown at T−60 and T−30 s, and at
/// T−10 s "37s (12s–1m36s)" for an OOM 10 s away (its pace after a 9 GiB
/// segment read at 0.1–0.2 GiB/s where it grew 0.4); flagged at +1m43s;
/// `eval_spike/cached` had none at T−30 s and held at T−10 s; the KV cache
/// at τ 25 s and the warm-up at ×0.75 stayed quiet.
#[test]
fn the_set_recorded_by_session_thirty_four_scores_at_least_as_it_did() {
    let s = scored_set("fortyfifth", (4, 2, 5), 1, 103.5, 0, &[]);
    assert_eq!(s.never_flagged, 0, "{s:?}");
}

/// `fortysixth/` (plan written and committed 2026-12-07 by session 34,
/// 8d48cc9, before `fortyfifth/` was recorded and before any analysis
/// change), recorded by session 36 on an H100 with 799cc20's binary in one
/// call, sealed (42c68d3), and scored once before any change: held out
/// from sessions 34's and 35's changes (3144837, e2fa4f9). All 8
/// checkpoints held (`two_proc` ×1.15, `grad_accum/leak` ×1.1,
/// `eval_spike` in its default variant, `empty_cache`, and
/// `leak_keep/logits`: T−30 and T−10 s each), every leak flagged 16–20 s
/// into its growth; the warm-up at ×1.2 and the weights load stayed quiet.
#[test]
fn the_set_recorded_by_session_thirty_six_scores_at_least_as_it_did() {
    let s = scored_set("fortysixth", (6, 4, 8), 8, 20.5, 0, &[]);
    assert_eq!(s.never_flagged, 0, "{s:?}");
}
