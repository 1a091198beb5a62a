use super::*;
use crate::config::keys::{Action, KeyMap};
use crate::config::raw::{SECTIONS, section_keys};
use crate::config::{ColorDepth, Column, Level, Theme, closest};
use std::time::Duration;

/// The one-line messages of a config that must fail.
fn errors(text: &str) -> Vec<String> {
    match parse(text, "c.toml") {
        Ok(c) => panic!("expected an error for {text:?}, got {c:?}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

fn error(text: &str) -> String {
    let e = errors(text);
    assert_eq!(e.len(), 1, "{e:?}");
    e.into_iter().next().unwrap_or_default()
}

#[test]
fn the_default_file_is_the_default_config() {
    assert_eq!(
        parse(DEFAULT_TOML, "default.toml").unwrap(),
        Config::default()
    );
}

#[test]
fn an_empty_file_is_the_default_config() {
    assert_eq!(parse("", "e.toml").unwrap(), Config::default());
    assert_eq!(
        parse("# nothing\n\n[sampling]\n", "e.toml").unwrap(),
        Config::default()
    );
}

#[test]
fn the_default_file_lists_every_action_and_column() {
    let doc: toml::Table = toml::from_str(DEFAULT_TOML).unwrap();
    let keys = doc["keys"].as_table().unwrap();
    for a in Action::ALL {
        let listed = keys.get(a.name()).and_then(|v| v.as_array());
        let listed: Vec<&str> = listed
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(listed, a.default_keys(), "{a:?}");
    }
    assert_eq!(keys.len(), Action::ALL.len());
    let columns: Vec<&str> = doc["display"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(columns, Column::ALL.map(Column::name));
}

/// Every key the schema accepts appears in the default file (`dir` as a
/// commented-out example, since its default is "unset"), right after a
/// comment that documents it.
#[test]
fn the_default_file_documents_every_key() {
    let lines: Vec<&str> = DEFAULT_TOML.lines().collect();
    let mut keys: Vec<String> = section_keys("")
        .iter()
        .filter(|k| !SECTIONS.contains(k) && **k != "keys")
        .map(|k| k.to_string())
        .collect();
    for s in SECTIONS {
        keys.extend(section_keys(s).iter().map(|k| format!("[{s}] {k}")));
    }
    keys.extend(Action::ALL.map(|a| format!("[keys] {}", a.name())));
    let mut section = String::new();
    let mut documented = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if let Some(s) = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = s.to_owned();
            continue;
        }
        let setting = t.strip_prefix("# ").unwrap_or(t);
        let Some((key, _)) = setting.split_once(" = ") else {
            continue;
        };
        if key.contains(' ') || setting.starts_with("action") {
            continue;
        }
        // A comment above it, or above the group of settings it is in.
        let above = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| l.starts_with('#') || !l.contains(" = "))
            .unwrap_or_default();
        assert!(
            above.starts_with('#'),
            "line {}: `{key}` has no comment above it",
            i + 1
        );
        documented.push(if section.is_empty() {
            key.to_owned()
        } else {
            format!("[{section}] {key}")
        });
    }
    for k in &keys {
        assert!(
            documented.contains(k),
            "{k} is not documented in config/default.toml"
        );
    }
    for d in &documented {
        assert!(
            keys.contains(d),
            "default.toml documents {d}, which the schema does not accept"
        );
    }
}

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
fn positions_are_lines_and_character_columns() {
    let t = "a\n\u{e9}\u{e9}x\n";
    assert_eq!(Position::of(t, 0), Position { line: 1, column: 1 });
    assert_eq!(Position::of(t, 2), Position { line: 2, column: 1 });
    assert_eq!(Position::of(t, 6), Position { line: 2, column: 3 });
    assert_eq!(
        Position::of(t, 3),
        Position { line: 2, column: 1 },
        "inside a character"
    );
    assert_eq!(Position::of(t, 99), Position { line: 3, column: 1 });
}

#[test]
fn out_of_range_names_file_line_column_key_and_range() {
    let t = "\n\n[thresholds]\nmemory_warn = 120\n";
    assert_eq!(
        error(t),
        "c.toml:4:15: [thresholds] memory_warn = 120: must be between 0 and 100"
    );
    assert_eq!(
        error("[sampling]\nhistory = \"30s\"\n"),
        "c.toml:2:11: [sampling] history = \"30s\": must be between 1m and 7days"
    );
    assert_eq!(
        error("[sampling]\nslow_interval = \"2h\"\n"),
        "c.toml:2:17: [sampling] slow_interval = \"2h\": must be between 1s and 1h, or \"off\""
    );
    assert_eq!(
        error("[sampling]\nenergy_interval = \"2h\"\n"),
        "c.toml:2:19: [sampling] energy_interval = \"2h\": must be between 1s and 1h, or \"off\""
    );
    assert_eq!(
        error("[record]\nmax_size = \"1KiB\"\n"),
        "c.toml:2:12: [record] max_size = \"1KiB\": must be between 1MiB and 1TiB"
    );
    assert_eq!(
        error("[alerts]\nleak_min_rate = \"1B/s\"\n"),
        "c.toml:2:17: [alerts] leak_min_rate = \"1B/s\": must be between 1KiB/s and 1TiB/s"
    );
    assert_eq!(
        error("[alerts]\nburst_level = 0\n"),
        "c.toml:2:15: [alerts] burst_level = 0: must be a percentage between 1 and 100, or \"off\""
    );
    assert_eq!(
        error("[display]\nchart_rows = 0\n"),
        "c.toml:2:14: [display] chart_rows = 0: must be a whole number from 1 to 8"
    );
    assert_eq!(
        error("[display]\nevents = \"shown\"\n"),
        "c.toml:2:10: [display] events = \"shown\": must be \"auto\", \"open\" or \"closed\""
    );
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
fn every_problem_is_reported_in_file_order() {
    let t = "[thresholds]\ntemperature_warn = -1\n[sampling]\ninterval = \"1 fortnight\"\n[display]\ntheme = \"neon\"\n";
    let e = errors(t);
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(
        e[0].starts_with(
            "c.toml:2:20: [thresholds] temperature_warn = -1: must be between 0 and 150"
        )
    );
    assert!(e[1].starts_with(
        "c.toml:4:12: [sampling] interval = \"1 fortnight\": not a duration: `fortnight` is not a time unit"
    ));
    assert!(e[2].starts_with("c.toml:6:9: [display] theme = \"neon\""));
}

#[test]
fn warn_must_be_below_crit_naming_both() {
    assert_eq!(
        error("[thresholds]\npower_warn = 99\npower_crit = 99\n"),
        "c.toml:2:14: [thresholds] power_warn = 99 (line 2) must be below power_crit = 99 (line 3)"
    );
    // Against a default: the message says so, and points at the key written.
    assert_eq!(
        error("[thresholds]\nmemory_crit = 50\n"),
        "c.toml:2:15: [thresholds] memory_warn = 80 (the default) must be below memory_crit = 50 (line 2)"
    );
}

#[test]
fn lanes_must_fit_the_interval() {
    assert_eq!(
        error("[sampling]\ninterval = \"500ms\"\nfast_interval = \"1s\"\n"),
        "c.toml:3:17: [sampling] fast_interval = \"1s\" must not be longer than interval = \"500ms\" (line 2)"
    );
    assert_eq!(
        error("[sampling]\ninterval = \"2s\"\nproc_util_interval = \"1s\"\n"),
        "c.toml:3:22: [sampling] proc_util_interval = \"1s\" must not be shorter than interval = \"2s\" (line 2)"
    );
    assert_eq!(
        error("[sampling]\ninterval = \"3s\"\nproc_util_shown_interval = \"2s\"\n"),
        "c.toml:3:28: [sampling] proc_util_shown_interval = \"2s\" must not be shorter than interval = \"3s\" (line 2)"
    );
    // Raising the interval alone keeps the process periods, or carries
    // them along when the interval passes them.
    let c = parse("[sampling]\ninterval = \"2s\"\n", "c.toml").unwrap();
    assert_eq!(c.sampling.proc_util_interval, Duration::from_secs(5));
    assert_eq!(c.sampling.proc_util_shown_interval, Duration::from_secs(2));
    let c = parse("[sampling]\ninterval = \"10s\"\n", "c.toml").unwrap();
    assert_eq!(c.sampling.proc_util_interval, Duration::from_secs(10));
    assert_eq!(c.sampling.proc_util_shown_interval, Duration::from_secs(10));
    // Never less often on screen than off it.
    let c = parse("[sampling]\nproc_util_interval = \"1s\"\n", "c.toml").unwrap();
    assert_eq!(c.sampling.proc_util_shown_interval, Duration::from_secs(1));
    assert_eq!(
        error("[sampling]\nfast_interval = \"40ms\"\n"),
        "c.toml:2:17: [alerts] burst_interval = \"50ms\" (the default) must not be longer than [sampling] fast_interval = \"40ms\" (line 2)"
    );
    // With the fast lane off, burst_interval is not compared.
    assert!(
        parse(
            "[sampling]\nfast_interval = \"off\"\n[alerts]\nburst_interval = \"1s\"\n",
            "c"
        )
        .is_ok()
    );
}

#[test]
fn unknown_keys_suggest_the_closest() {
    assert_eq!(
        error("[display]\ncolour = \"auto\"\n"),
        "c.toml:2:1: [display] colour: unknown key; did you mean `color`?"
    );
    assert_eq!(
        error("[display]\nzzz = 1\n"),
        "c.toml:2:1: [display] zzz: unknown key; valid keys: theme, color, columns, mouse, ascii, chart_rows, events"
    );
    assert_eq!(
        error("[display]\ninterval = \"1s\"\n"),
        "c.toml:2:1: [display] interval: unknown key; `interval` belongs in [sampling]"
    );
    assert_eq!(
        error("[thresholds.memory]\nwarn = 1\n"),
        "c.toml:1:13: [thresholds.memory]: unknown table; [thresholds] has no sub-tables, its keys are memory_warn, memory_crit, temperature_warn, temperature_crit, power_warn, power_crit, utilization_warn, utilization_crit"
    );
    assert_eq!(
        error("[keys]\nkil = \"x\"\n"),
        "c.toml:2:1: [keys] kil: unknown action; did you mean `kill`?"
    );
    assert_eq!(closest("zzzz", ["quit", "help"]), None);
}

#[test]
fn key_bindings_are_checked() {
    assert_eq!(
        error("[keys]\nquit = [\"q\", \"ctrl-\"]\n"),
        "c.toml:2:14: [keys] quit: `ctrl-` is not a key: it is empty"
    );
    assert_eq!(
        error("[keys]\nquit = []\n"),
        "c.toml:2:8: [keys] quit = []: quit needs at least one key"
    );
    assert_eq!(
        error("[keys]\nkill = \"x\"\nterminate = [\"y\", \"x\"]\n"),
        "c.toml:3:19: [keys] `x` is bound to both kill (line 2) and terminate (line 3)"
    );
    // Rebinding both sides of a default clash is fine; [] unbinds.
    let c = parse("[keys]\nhelp = \"q\"\nquit = \"x\"\nevents = []\n", "c").unwrap();
    assert!(c.keys.keys(Action::Events).is_empty());
    assert_eq!(c.keys.label(Action::Help), "q");
    // ctrl-C and ctrl-c are one key.
    assert_eq!(
        error("[keys]\nhelp = \"ctrl-C\"\n"),
        "c.toml:2:8: [keys] `ctrl-C` is bound to both help (line 2) and quit (its default; bind quit to other keys too)"
    );
}

#[test]
fn columns_are_checked() {
    assert_eq!(
        error("[display]\ncolumns = [\"pid\", \"memroy\"]\n"),
        "c.toml:2:19: [display] columns: unknown column `memroy`; did you mean `memory`?"
    );
    assert_eq!(
        error("[display]\ncolumns = [\"pid\", \"pid\"]\n"),
        "c.toml:2:19: [display] columns: `pid` is listed twice (first at column 12)"
    );
    assert_eq!(
        error("[display]\ncolumns = []\n"),
        "c.toml:2:11: [display] columns = []: list at least one column"
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

#[test]
fn syntax_errors_have_positions() {
    assert_eq!(
        error("[sampling\n"),
        "c.toml:1:10: TOML syntax error: unclosed table, expected `]`"
    );
    assert_eq!(
        error("[serve]\nlisten = \"a\"\nlisten = \"b\"\n"),
        "c.toml:3:1: TOML syntax error: duplicate key `listen`"
    );
}

#[test]
fn missing_files_are_named() {
    let e = load(Some(Path::new("/nonexistent/vramwatch.toml"))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/nonexistent/vramwatch.toml: no such config file (`vramwatch config init /nonexistent/vramwatch.toml` writes one)"
    );
}

proptest::proptest! {
    /// Whatever the text, loading returns a config or a positioned error,
    /// never a panic.
    #[test]
    fn arbitrary_text_never_panics(text in "(\\[[a-z]{0,12}\\]|[a-z_]{1,16} = (\"[0-9a-zA-Z/:. -]{0,12}\"|-?[0-9.]{1,6}|\\[\"?[a-z]{0,5}\"?\\]|true)|\n|#.*){0,12}") {
        match parse(&text, "p.toml") {
            Ok(_) => {}
            Err(ConfigError::Invalid { problems, .. }) => {
                proptest::prop_assert!(!problems.is_empty());
                for p in problems {
                    let at = p.at.expect("every problem has a position");
                    proptest::prop_assert!(at.line >= 1 && at.line <= text.lines().count() + 1);
                }
            }
            Err(other) => proptest::prop_assert!(false, "{other}"),
        }
    }

    #[test]
    fn known_keys_with_junk_values_never_panic(
        section in proptest::sample::select(SECTIONS.to_vec()),
        idx in 0usize..8,
        value in "(\"[0-9a-zA-Z/:. -]{0,10}\"|-?[0-9]{1,12}(\\.[0-9]{1,3})?|\\[\\]|true|false|\\{\\})",
    ) {
        let keys = section_keys(section);
        let key = keys[idx % keys.len()];
        let text = format!("[{section}]\n{key} = {value}\n");
        if let Err(ConfigError::Invalid { problems, .. }) = parse(&text, "p.toml") {
            for p in problems {
                proptest::prop_assert!(p.at.is_some(), "{}", p.message);
                proptest::prop_assert!(
                    p.message.contains(key) || p.message.starts_with("TOML syntax error"),
                    "{}",
                    p.message
                );
            }
        }
    }
}

#[test]
fn shape_and_value_problems_are_all_reported() {
    let t = "[display]\ncolour = 1\nmouse = \"yes\"\n[thresholds]\nmemory_warn = 101\n[bogus]\n";
    assert_eq!(
        errors(t),
        [
            "c.toml:2:1: [display] colour: unknown key; did you mean `color`?",
            "c.toml:3:9: [display] mouse = \"yes\": expected true or false, found a string",
            "c.toml:5:15: [thresholds] memory_warn = 101: must be between 0 and 100",
            "c.toml:6:2: [bogus]: unknown section; valid sections: [sampling], [thresholds], [alerts], [display], [keys], [record], [serve]",
        ]
    );
}

/// A refused value is reported once; its default is not then blamed in a
/// comparison with another key.
#[test]
fn refused_values_are_not_compared_again() {
    assert_eq!(
        errors("[thresholds]\nmemory_warn = 120\nmemory_crit = 50\n"),
        ["c.toml:2:15: [thresholds] memory_warn = 120: must be between 0 and 100"]
    );
    assert_eq!(
        errors("[thresholds]\nmemory_warn = \"80%\"\nmemory_crit = 50\n"),
        ["c.toml:2:15: [thresholds] memory_warn = \"80%\": expected a number, found a string"]
    );
    assert_eq!(
        errors("[sampling]\ninterval = \"50ms\"\nfast_interval = \"500ms\"\n"),
        ["c.toml:2:12: [sampling] interval = \"50ms\": must be between 100ms and 1m"]
    );
    assert_eq!(
        errors("[sampling]\nfast_interval = 5\n[alerts]\nburst_interval = \"200ms\"\n"),
        [
            "c.toml:2:17: [sampling] fast_interval = 5: expected a duration such as \"500ms\", \"1s\" or \"10m\", or \"off\", found an integer"
        ]
    );
}
