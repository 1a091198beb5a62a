//! What a valid file sets: every section and key read, and values in
//! the other forms a key accepts (`"off"`, `"16"`, `"2GiB"`, `~/`).

use super::*;
use crate::config::keys::{Action, KeyMap};
use crate::config::{ColorDepth, Column, Level, Theme};
use std::time::Duration;

#[test]
fn energy_interval_is_a_duration_or_off_like_pcie_interval() {
    let sampling = |text: &str| parse(&format!("[sampling]\n{text}\n"), "c.toml").unwrap();
    let c = sampling("energy_interval = \"1m\"");
    assert_eq!(c.sampling.energy_interval, Some(Duration::from_secs(60)));
    assert_eq!(c.schedule().energy, Some(Duration::from_secs(60)));
    assert_eq!(
        sampling("energy_interval = \"off\"")
            .sampling
            .energy_interval,
        None
    );
    assert_eq!(
        sampling("pcie_interval = \"off\"").sampling.energy_interval,
        Some(Duration::from_secs(30)),
        "absent: the default, whatever pcie_interval says"
    );
    for (text, want) in [
        (
            "energy_interval = \"500ms\"",
            "c.toml:2:19: [sampling] energy_interval = \"500ms\": must be between 1s and 1h, or \"off\"",
        ),
        (
            "energy_interval = \"2h\"",
            "c.toml:2:19: [sampling] energy_interval = \"2h\": must be between 1s and 1h, or \"off\"",
        ),
        (
            "energy_interval = 30",
            "c.toml:2:19: [sampling] energy_interval = 30: expected a duration such as \"500ms\", \"1s\" or \"10m\", or \"off\", found an integer",
        ),
        (
            "pcie_interval = \"0s\"",
            "c.toml:2:17: [sampling] pcie_interval = \"0s\": must be between 1s and 1h, or \"off\"",
        ),
    ] {
        assert_eq!(error(&format!("[sampling]\n{text}\n")), want, "{text}");
    }
    assert!(
        error("[sampling]\nenergy_interval = \"soon\"\n")
            .starts_with("c.toml:2:19: [sampling] energy_interval = \"soon\": "),
        "names file, line, column and key"
    );
}

#[test]
fn every_section_and_key_is_read() {
    let text = r#"
version = 1
[sampling]
interval = "2s"
fast_interval = "off"
slow_interval = "10s"
proc_util_interval = "4s"
proc_util_shown_interval = "3s"
history = "2h"
exited_keep = "0s"
[thresholds]
memory_warn = 70.5
memory_crit = 90
temperature_warn = 70
temperature_crit = 85
power_warn = 100
power_crit = 120
utilization_warn = 50
utilization_crit = 60
[alerts]
bell = true
command = ["notify-send", "vramwatch"]
forecast_below = "off"
leak_min_rate = "1.5MiB/s"
leak_min_duration = "1m"
burst_level = "off"
burst_interval = "20ms"
[display]
theme = "mono"
color = 256
columns = ["pid", "memory", "command"]
mouse = true
[keys]
quit = "x"
help = ["?", "q"]
[record]
dir = "/var/tmp/rec"
max_size = 104857600
compress = false
sync_every = "500ms"
[serve]
listen = "[::1]:9100"
"#;
    let c = parse(text, "c.toml").unwrap();
    assert_eq!(c.sampling.interval, Duration::from_secs(2));
    assert_eq!(c.sampling.fast_interval, None);
    assert_eq!(c.sampling.slow_interval, Some(Duration::from_secs(10)));
    assert_eq!(c.sampling.proc_util_interval, Duration::from_secs(4));
    assert_eq!(c.sampling.proc_util_shown_interval, Duration::from_secs(3));
    assert_eq!(c.sampling.history, Duration::from_secs(7200));
    assert_eq!(c.sampling.exited_keep, Duration::ZERO);
    assert_eq!(
        c.thresholds.memory,
        Level {
            warn: 70.5,
            crit: 90.0
        }
    );
    assert_eq!(
        c.thresholds.temperature,
        Level {
            warn: 70.0,
            crit: 85.0
        }
    );
    assert_eq!(
        c.thresholds.power,
        Level {
            warn: 100.0,
            crit: 120.0
        }
    );
    assert_eq!(
        c.thresholds.utilization,
        Level {
            warn: 50.0,
            crit: 60.0
        }
    );
    assert!(c.alerts.bell);
    assert_eq!(c.alerts.command, ["notify-send", "vramwatch"]);
    assert_eq!(c.alerts.forecast_below, Duration::ZERO);
    assert_eq!(c.alerts.leak_min_rate, 1.5 * 1024.0 * 1024.0);
    assert_eq!(c.alerts.leak_min_duration, Duration::from_secs(60));
    assert_eq!(c.alerts.burst_level, None);
    assert_eq!(c.alerts.burst_interval, Duration::from_millis(20));
    assert_eq!(c.display.theme, Theme::Mono);
    assert_eq!(c.display.color, ColorDepth::Ansi256);
    assert_eq!(
        c.display.columns,
        [Column::Pid, Column::Memory, Column::Command]
    );
    assert!(c.display.mouse);
    assert_eq!(c.keys.label(Action::Quit), "x");
    assert_eq!(c.keys.label(Action::Help), "?, q");
    assert_eq!(
        c.keys.keys(Action::Kill),
        KeyMap::default().keys(Action::Kill)
    );
    assert_eq!(c.record.dir, Some(PathBuf::from("/var/tmp/rec")));
    assert_eq!(c.record.max_size, 100 << 20);
    assert!(!c.record.compress);
    assert_eq!(c.record.sync_every, Duration::from_millis(500));
    assert_eq!(c.serve.listen, "[::1]:9100");
}

#[test]
fn the_events_pane_starts_as_configured() {
    use crate::config::EventsPane;
    for (v, want) in [
        ("auto", EventsPane::Auto),
        ("open", EventsPane::Open),
        ("closed", EventsPane::Closed),
    ] {
        let c = parse(&format!("[display]\nevents = \"{v}\"\n"), "c.toml").unwrap();
        assert_eq!(c.display.events, want, "{v}");
    }
    assert_eq!(
        parse("", "c.toml").unwrap().display.events,
        EventsPane::Auto
    );
}

#[test]
fn odd_values_are_read_or_refused() {
    let c = parse(
        "[display]\ncolor = \"16\"\n[record]\nmax_size = \"2GiB\"\n",
        "c",
    )
    .unwrap();
    assert_eq!(c.display.color, ColorDepth::Ansi16);
    assert_eq!(c.record.max_size, 2 << 30);
    assert_eq!(
        error("[record]\nmax_size = 1.5\n"),
        "c.toml:2:12: [record] max_size = 1.5: a number of bytes is a whole number"
    );
    assert_eq!(
        error("[record]\ndir = \"recordings\"\n"),
        "c.toml:2:7: [record] dir = \"recordings\": must be an absolute path (or start with ~/)"
    );
    assert_eq!(
        error("[alerts]\ncommand = [\"\", \"x\"]\n"),
        "c.toml:2:11: [alerts] command = [\"\", \"x\"]: the first element, the program, is empty"
    );
    assert_eq!(
        error("[display]\ntheme = 1\n"),
        "c.toml:2:9: [display] theme = 1: expected \"dark\", \"light\" or \"mono\", found an integer"
    );
    assert_eq!(
        error("[sampling]\ninterval = 1\n"),
        "c.toml:2:12: [sampling] interval = 1: expected a duration such as \"500ms\", \"1s\" or \"10m\", found an integer"
    );
    assert_eq!(
        error("[alerts]\ncommand = [\"a\", 2]\n"),
        "c.toml:2:17: [alerts] command = [\"a\", 2]: expected a string (in quotes), found an integer"
    );
}

#[test]
fn home_is_expanded_in_the_record_dir() {
    if let Some(home) = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()) {
        let c = parse("[record]\ndir = \"~/rec\"\n", "c").unwrap();
        assert_eq!(c.record.dir, Some(home.join("rec")));
    }
}
