//! The score as the markdown table `vramwatch score` prints and
//! docs/analysis.md holds.

use super::{Expect, RunScore, SETTLED_GROWTH_S, Summary};

/// The markdown table of `runs` and a line of totals, as docs/analysis.md
/// holds it.
pub fn markdown(runs: &[RunScore]) -> String {
    let mut out = String::from(
        "| run | expect | growth→OOM | T−120 s | T−60 s | T−30 s | T−10 s | first forecast | leak flag | false alarms |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let dur = |s: f64| crate::model::units::duration_short(s.max(0.0).round() as u64);
    for r in runs {
        let cells: Vec<String> = r
            .checkpoints
            .iter()
            .map(|c| match (r.expect, c.counts, c.shown) {
                (Expect::NoAlarm, _, _) => "—".into(),
                _ if r.unreached.is_some() => "—".into(),
                (_, false, _) => "(before growth)".into(),
                (_, true, None) if c.at_risk => "at risk ⚠".into(),
                (_, true, None) => "none ✗".into(),
                (_, true, Some(s)) => format!(
                    "{} ({}–{}) {}",
                    dur(s.eta_s),
                    dur(s.low_s),
                    s.high_s.map_or("?".into(), dur),
                    if s.held { "✓" } else { "✗" }
                ),
            })
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.label.replace('|', "/"),
            match r.expect {
                Expect::Oom => "OOM",
                Expect::NoAlarm => "no alarm",
            },
            match &r.unreached {
                Some(u) => format!(
                    "no OOM by the end ({})",
                    u.growth_to_end_s
                        .map_or("?".into(), |e| format!("+{}", dur(e)))
                ),
                None => r.growth_to_oom_s.map_or("—".into(), dur),
            },
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            r.first_forecast_before_oom_s
                .map_or("none".into(), |s| match r.expect {
                    Expect::Oom if r.unreached.is_none() => format!("T−{}", dur(s)),
                    _ => format!("+{}", dur(s)),
                }),
            r.leak_flag_after_growth_s
                .map_or("none".into(), |s| format!("+{}", dur(s))),
            match r.unreached.as_ref().and_then(|u| u.range_passed.as_deref()) {
                Some(passed) => passed.replace('|', "/"),
                None if r.false_alarms.is_empty() => "0".into(),
                None => r.false_alarms.join("; ").replace('|', "/"),
            },
        ));
    }
    let s = Summary::of(runs);
    out.push_str(&format!(
        "\n{} ({} OOM, {} must not alarm). Forecast held the OOM at {} of {} checkpoints T−60/−30/−10 s ({}; the ranges that held {}; where the growth had run {} or more: {} of {}, {}); at {} more the GPU was shown at risk instead; shown by T−30 s on {} of {} OOM runs; leak flag at most {} after growth began ({} never flagged); false alarms on {} of {} runs that must not alarm.\n",
        crate::model::units::plural(s.runs as u64, "run", "runs"),
        s.oom_runs,
        s.no_alarm_runs,
        s.held,
        s.checkpoints,
        pct(s.held, s.checkpoints),
        s.held_width.map_or("—".into(), |w| format!(
            "{w:.2}× the time left wide, median"
        )),
        dur(SETTLED_GROWTH_S),
        s.settled_held,
        s.settled_checkpoints,
        pct(s.settled_held, s.settled_checkpoints),
        s.at_risk_only,
        s.shown_by_30,
        s.could_show_by_30,
        s.slowest_leak_flag_s.map_or("—".into(), dur),
        crate::model::units::plural(s.never_flagged as u64, "OOM run", "OOM runs"),
        s.false_alarm_runs,
        s.no_alarm_runs,
    ));
    if s.unreached_runs > 0 {
        out.push_str(&format!(
            "{} grew towards an OOM that had not come by the end (not counted above): flagged as leaking on {}; a forecast range passed with no OOM on {}.\n",
            crate::model::units::plural(s.unreached_runs as u64, "run", "runs"),
            s.unreached_flagged,
            s.unreached_range_passed,
        ));
    }
    out
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "—".into()
    } else {
        format!("{:.0}%", a as f64 * 100.0 / b as f64)
    }
}

/// One line per group of runs (a corpus set, a workload's shape) and a
/// line for them all (`all`, the summary of every run): the totals of
/// [`markdown`]'s last line side by side, and when the leak flags came.
/// `what` heads the first column.
pub(crate) fn grouped(what: &str, groups: &[(String, Vec<RunScore>)], all: &Summary) -> String {
    let mut out = format!(
        "| {what} | runs | OOM | checkpoints held | where the growth had run {SETTLED_GROWTH_S} s | not held, at risk | a forecast at T−30 s | leak flag ≤ 20 s / 21–25 s / later / never | false alarms |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let rows = groups
        .iter()
        .map(|(name, runs)| {
            let name = name.replace(['|', '`'], "'");
            (format!("`{name}`"), Summary::of(runs))
        })
        .chain(std::iter::once(("**all**".to_owned(), all.clone())));
    for (name, s) in rows {
        let of = |a: usize, b: usize| {
            if b == 0 {
                "—".to_owned()
            } else {
                format!("{a} of {b}")
            }
        };
        let oom = s.oom_runs > 0;
        let (at_risk, flags) = if oom {
            (
                s.at_risk_only.to_string(),
                format!(
                    "{} / {} / {} / {}",
                    s.flagged_within_20, s.flagged_within_25, s.flagged_later, s.never_flagged
                ),
            )
        } else {
            ("—".into(), "—".into())
        };
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {at_risk} | {} | {flags} | {} |\n",
            s.runs,
            s.oom_runs,
            of(s.held, s.checkpoints),
            of(s.settled_held, s.settled_checkpoints),
            of(s.shown_by_30, s.could_show_by_30),
            of(s.false_alarm_runs, s.no_alarm_runs),
        ));
    }
    if all.unreached_runs > 0 {
        out.push_str(&format!(
            "\n{} grew towards an OOM that had not come by the end: counted in runs only.\n",
            crate::model::units::plural(all.unreached_runs as u64, "run", "runs"),
        ));
    }
    out
}
