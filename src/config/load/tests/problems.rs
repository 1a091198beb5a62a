//! How a problem is reported: file, line and column, the key, what would
//! be valid or the closest name, every problem in file order.

use super::*;
use crate::config::closest;
use crate::config::keys::Action;

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
