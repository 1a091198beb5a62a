//! Every PromQL query the fleet sends, in one place (docs/fleet.md lists
//! them). Each aggregates on the server (`sum by`, `max by`, `count by`,
//! `topk`) so a refresh moves a few series per host, never the raw series
//! of the whole fleet.
//!
//! The host of a series is the first present of the configured labels
//! (default `host`, `Hostname`, `hostname`, `instance`): a chain of
//! `label_replace` writes it into [`HOST`] on the server, lowest priority
//! first, each present label overwriting the one before.

/// The label the host name is written to.
pub const HOST: &str = "vw_host";

/// The labels the host is read from, first present wins.
pub const DEFAULT_HOST_LABELS: [&str; 4] = ["host", "Hostname", "hostname", "instance"];

/// How far back a host that stopped reporting is still listed (as down or
/// stale), and how far back the last good scrape is looked for.
pub const REMEMBER: &str = "10m";

/// The per-host figures of the hosts screen, one query each, sent at once.
/// Each aggregates first by the labels a host is read from (so the
/// `label_replace` chain runs over one series per target, not per GPU),
/// then by host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostQuery {
    /// `(host, instance)` → GPUs seen in the last [`REMEMBER`].
    Instances,
    /// `(host, instance, __name__)` → sum of FB used, free, reserved (MiB).
    Memory,
    /// host → the fullest GPU's memory in use (used + reserved), %.
    Fullest,
    /// host → the busiest GPU's utilisation, %.
    Util,
    /// host → the fastest-growing GPU's growth, bytes/s.
    Growth,
    /// host → the soonest forecast time to full, s.
    FullIn,
    /// `(host, alert)` → vramwatch alert series at 1 (`leak`: one per
    /// leaking process).
    Alerts,
    /// host → vramwatch targets seen in the last [`REMEMBER`] (process data).
    Vramwatch,
    /// `(instance)` → `up` (with the host label written too).
    Up,
    /// `(instance)` → seconds since the last scrape.
    ScrapeAge,
    /// `(instance)` → scrapes in the last minute (the interval).
    Scrapes,
}

impl HostQuery {
    /// What the query asks, for a warning that it failed.
    pub fn what(self) -> &'static str {
        match self {
            HostQuery::Instances => "GPUs per target",
            HostQuery::Memory => "memory",
            HostQuery::Fullest => "fullest GPU",
            HostQuery::Util => "busiest GPU",
            HostQuery::Growth => "growth",
            HostQuery::FullIn => "time to full",
            HostQuery::Alerts => "alerts",
            HostQuery::Vramwatch => "vramwatch targets",
            HostQuery::Up => "up",
            HostQuery::ScrapeAge => "scrape age",
            HostQuery::Scrapes => "scrapes a minute",
        }
    }
}

impl HostQuery {
    pub const ALL: [HostQuery; 11] = [
        HostQuery::Instances,
        HostQuery::Memory,
        HostQuery::Fullest,
        HostQuery::Util,
        HostQuery::Growth,
        HostQuery::FullIn,
        HostQuery::Alerts,
        HostQuery::Vramwatch,
        HostQuery::Up,
        HostQuery::ScrapeAge,
        HostQuery::Scrapes,
    ];
}

/// The fleet's queries for one selector and host label list.
#[derive(Clone, Debug, PartialEq)]
pub struct Queries {
    /// The selector's matchers without braces (`job="gpu"`), maybe empty.
    matchers: String,
    host_labels: Vec<String>,
    /// Step of the last-good-scrape subquery, seconds.
    step_s: u64,
    /// Write the host chain as `HOST(…)` (docs/fleet.md's shorthand).
    shorthand: bool,
}

/// Checks a selector (`{job="gpu"}` or `job="gpu"`) and returns its
/// matchers without braces.
pub fn matchers_of(selector: &str) -> Result<String, String> {
    let s = selector.trim();
    let inner = match (s.strip_prefix('{'), s.ends_with('}')) {
        (Some(rest), true) => &rest[..rest.len() - 1],
        (None, false) => s,
        _ => return Err(format!("--selector `{s}`: unbalanced braces")),
    };
    if inner.contains(['{', '}']) {
        return Err(format!(
            "--selector `{s}`: give label matchers only, e.g. {{job=\"gpu\",cluster=\"a\"}}"
        ));
    }
    let inner = inner.trim().trim_end_matches(',').trim();
    if !inner.is_empty() && !inner.contains(['=', '~']) {
        return Err(format!(
            "--selector `{s}`: not a label matcher; use e.g. {{job=\"gpu\"}}"
        ));
    }
    Ok(inner.to_owned())
}

/// `s` as a PromQL string literal's contents.
pub fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// `s` as a literal part of a regular expression.
pub fn regex_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Queries {
    pub fn new(selector: &str, host_labels: &[String], step_s: u64) -> Result<Queries, String> {
        let matchers = matchers_of(selector)?;
        let host_labels: Vec<String> = if host_labels.is_empty() {
            DEFAULT_HOST_LABELS.iter().map(|s| s.to_string()).collect()
        } else {
            host_labels.to_vec()
        };
        for l in &host_labels {
            let ok = l
                .chars()
                .enumerate()
                .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
            if !ok || l.is_empty() {
                return Err(format!("--host-label `{l}` is not a label name"));
            }
        }
        Ok(Queries {
            matchers,
            host_labels,
            step_s: step_s.max(1),
            shorthand: false,
        })
    }

    /// The queries as docs/fleet.md shows them: `HOST(e)` for the
    /// `label_replace` chain.
    pub fn shorthand(mut self) -> Queries {
        self.shorthand = true;
        self
    }

    pub fn host_labels(&self) -> &[String] {
        &self.host_labels
    }

    /// The selector's matchers (for messages).
    pub fn matchers(&self) -> &str {
        &self.matchers
    }

    /// `name{matchers, extra}`.
    pub fn sel(&self, name: &str, extra: &str) -> String {
        let parts: Vec<&str> = [extra, self.matchers.as_str()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect();
        format!("{name}{{{}}}", parts.join(","))
    }

    /// `{__name__=~"a|b", matchers, extra}`.
    fn sel_names(&self, names: &[&str], extra: &str) -> String {
        let n = format!("__name__=~\"{}\"", names.join("|"));
        let extra = if extra.is_empty() {
            n
        } else {
            format!("{n},{extra}")
        };
        self.sel("", &extra)
    }

    /// `e` with the host written to [`HOST`].
    pub fn host(&self, e: &str) -> String {
        if self.shorthand {
            return format!("HOST({e})");
        }
        let mut out = e.to_owned();
        for l in self.host_labels.iter().rev() {
            out = format!("label_replace({out}, \"{HOST}\", \"$1\", \"{l}\", \"(.+)\")");
        }
        out
    }

    /// The labels a host is read from, and `instance`: `a, b, instance`.
    fn target_labels(&self) -> String {
        let mut l: Vec<&str> = self.host_labels.iter().map(String::as_str).collect();
        if !l.contains(&"instance") {
            l.push("instance");
        }
        l.join(", ")
    }

    /// `outer by (HOST[, more]) (HOST(inner by (target labels[, more]) (e)))`.
    fn per_host(&self, outer: &str, inner: &str, more: &str, e: &str) -> String {
        let more = if more.is_empty() {
            String::new()
        } else {
            format!(", {more}")
        };
        let inner = format!("{inner} by ({}{more}) ({e})", self.target_labels());
        format!("{outer} by ({HOST}{more}) ({})", self.host(&inner))
    }

    /// Memory in use per GPU (used + reserved, where reserved is exported),
    /// in MiB, and what is free.
    fn in_use(&self, extra: &str) -> (String, String) {
        let used = self.sel("DCGM_FI_DEV_FB_USED", extra);
        let resv = self.sel("DCGM_FI_DEV_FB_RESERVED", extra);
        let free = self.sel("DCGM_FI_DEV_FB_FREE", extra);
        (format!("({used} + ({resv} or {used} * 0))"), free)
    }

    /// Memory in use per GPU, % of its total.
    fn in_use_pct(&self, extra: &str) -> String {
        let (in_use, free) = self.in_use(extra);
        format!("100 - 100 * {free} / ({in_use} + {free})")
    }

    /// One host-screen query.
    pub fn host_query(&self, q: HostQuery) -> String {
        let s = |n: &str| self.sel(n, "");
        let fb = [
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_FB_FREE",
            "DCGM_FI_DEV_FB_RESERVED",
        ];
        let last = |n: &str| format!("last_over_time({}[{REMEMBER}])", s(n));
        match q {
            HostQuery::Instances => format!(
                "sum by ({HOST}, instance) ({})",
                self.host(&format!(
                    "count by ({}) ({})",
                    self.target_labels(),
                    last("DCGM_FI_DEV_FB_FREE")
                ))
            ),
            HostQuery::Memory => format!(
                "sum by ({HOST}, instance, __name__) ({})",
                self.host(&format!(
                    "sum by ({}, __name__) ({})",
                    self.target_labels(),
                    self.sel_names(&fb, "")
                ))
            ),
            HostQuery::Fullest => self.per_host("max", "max", "", &self.in_use_pct("")),
            HostQuery::Util => self.per_host("max", "max", "", &s("DCGM_FI_DEV_GPU_UTIL")),
            HostQuery::Growth => self.per_host(
                "max",
                "max",
                "",
                &s("vramwatch_gpu_memory_growth_bytes_per_second"),
            ),
            HostQuery::FullIn => {
                self.per_host("min", "min", "", &s("vramwatch_gpu_memory_seconds_to_full"))
            }
            HostQuery::Alerts => self.per_host(
                "sum",
                "count",
                "alert",
                &format!("{} == 1", s("vramwatch_alert_active")),
            ),
            HostQuery::Vramwatch => {
                self.per_host("sum", "count", "", &last("vramwatch_snapshot_seq"))
            }
            HostQuery::Up => self.host(&s("up")),
            HostQuery::ScrapeAge => format!("time() - timestamp({})", s("up")),
            HostQuery::Scrapes => format!("count_over_time({}[1m])", s("up")),
        }
    }

    /// `(instance)` → seconds since the last successful scrape, for the
    /// targets `extra` selects (those not up: asked only when there are).
    pub fn last_good(&self, extra: &str) -> String {
        let up = self.sel("up", extra);
        format!(
            "time() - max_over_time((timestamp({up}) and {up} == 1)[{REMEMBER}:{}s])",
            self.step_s
        )
    }

    /// The `n` processes holding the most memory (with `extra` matchers,
    /// e.g. one host's instances); the host written after `topk`.
    pub fn top_procs(&self, n: usize, extra: &str) -> String {
        self.host(&format!(
            "topk({n}, {})",
            self.sel("vramwatch_process_memory_bytes", extra)
        ))
    }

    /// Who the processes with these PIDs are (`vramwatch_process_info`:
    /// user, command, container), their growth and leak flags: those
    /// [`Queries::top_procs`] found, joined to them in the client by target,
    /// PID and `start_time` (and GPU for the growth and leak flags).
    pub fn proc_figures(&self, pids: &[u32], extra: &str) -> String {
        let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
        let m = format!("pid=~\"{}\"", pids.join("|"));
        let extra = if extra.is_empty() {
            m
        } else {
            format!("{m},{extra}")
        };
        self.sel_names(
            &[
                "vramwatch_process_info",
                "vramwatch_process_memory_growth_bytes_per_second",
                "vramwatch_process_leak_suspected",
            ],
            &extra,
        )
    }

    /// Every GPU figure of the drill-down, as they are now.
    pub fn host_gpus(&self, extra: &str) -> String {
        self.host(&self.sel_names(
            &[
                "DCGM_FI_DEV_FB_USED",
                "DCGM_FI_DEV_FB_FREE",
                "DCGM_FI_DEV_FB_RESERVED",
                "DCGM_FI_DEV_GPU_UTIL",
                "DCGM_FI_DEV_GPU_TEMP",
                "DCGM_FI_DEV_POWER_USAGE",
                "vramwatch_gpu_memory_growth_bytes_per_second",
                "vramwatch_gpu_memory_seconds_to_full",
                "vramwatch_gpu_memory_seconds_to_full_high",
            ],
            extra,
        ))
    }

    /// Memory in use per GPU, %, for the drill-down's sparklines.
    pub fn gpu_memory_pct(&self, extra: &str) -> String {
        format!("max by (gpu) ({})", self.in_use_pct(extra))
    }

    /// Utilisation per GPU, %, for the drill-down's sparklines.
    pub fn gpu_util(&self, extra: &str) -> String {
        format!("max by (gpu) ({})", self.sel("DCGM_FI_DEV_GPU_UTIL", extra))
    }

    /// vramwatch's alert rules firing now, across the fleet.
    pub fn alerts_firing(&self) -> String {
        self.host(&format!("{} == 1", self.sel("vramwatch_alert_active", "")))
    }
}

/// A matcher for the series of a host's targets: `instance="a"` or
/// `instance=~"a|b"`.
pub fn instance_matcher(instances: &[String]) -> String {
    match instances {
        [one] => format!("instance=\"{}\"", escape(one)),
        many => {
            let alts: Vec<String> = many.iter().map(|i| regex_literal(i)).collect();
            format!("instance=~\"{}\"", escape(&alts.join("|")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(sel: &str) -> Queries {
        Queries::new(sel, &[], 5).unwrap()
    }

    #[test]
    fn selectors_are_matchers() {
        assert_eq!(matchers_of("{job=\"gpu\"}").unwrap(), "job=\"gpu\"");
        assert_eq!(matchers_of("job=\"gpu\",").unwrap(), "job=\"gpu\"");
        assert_eq!(matchers_of("").unwrap(), "");
        assert_eq!(matchers_of("{}").unwrap(), "");
        assert!(matchers_of("{job=\"gpu\"").is_err());
        assert!(matchers_of("up{job=\"gpu\"}").is_err());
        assert!(matchers_of("gpu").is_err());
    }

    #[test]
    fn the_host_is_the_first_present_label() {
        let h = q("").host("x");
        // Lowest priority innermost: `instance` first, `host` last (wins).
        assert_eq!(
            h,
            "label_replace(label_replace(label_replace(label_replace(x, \"vw_host\", \"$1\", \"instance\", \"(.+)\"), \"vw_host\", \"$1\", \"hostname\", \"(.+)\"), \"vw_host\", \"$1\", \"Hostname\", \"(.+)\"), \"vw_host\", \"$1\", \"host\", \"(.+)\")"
        );
        assert!(Queries::new("", &["bad label".into()], 5).is_err());
    }

    #[test]
    fn the_selector_goes_into_every_query() {
        let qs = q("{job=\"gpu\"}");
        for hq in HostQuery::ALL {
            let text = qs.host_query(hq);
            assert!(text.contains("job=\"gpu\""), "{hq:?}: {text}");
        }
        assert!(
            qs.last_good("instance=\"a\"")
                .contains("up{instance=\"a\",job=\"gpu\"}")
        );
        assert_eq!(
            qs.proc_figures(&[7, 9], ""),
            "{__name__=~\"vramwatch_process_info|vramwatch_process_memory_growth_bytes_per_second|vramwatch_process_leak_suspected\",pid=~\"7|9\",job=\"gpu\"}"
        );
        // The host is written once per target, not per series.
        assert_eq!(
            qs.clone().shorthand().host_query(HostQuery::Util),
            "max by (vw_host) (HOST(max by (host, Hostname, hostname, instance) (DCGM_FI_DEV_GPU_UTIL{job=\"gpu\"})))"
        );
        assert_eq!(qs.sel("up", ""), "up{job=\"gpu\"}");
        assert_eq!(q("").sel("up", ""), "up{}");
        assert_eq!(
            qs.sel("up", "instance=\"a\""),
            "up{instance=\"a\",job=\"gpu\"}"
        );
    }

    #[test]
    fn instances_are_matched_literally() {
        assert_eq!(instance_matcher(&["a:1".into()]), "instance=\"a:1\"");
        assert_eq!(
            instance_matcher(&["10.0.0.1:9400".into(), "b".into()]),
            "instance=~\"10\\\\.0\\\\.0\\\\.1:9400|b\""
        );
    }
}
