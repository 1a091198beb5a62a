//! `vramwatch config init | check | path`, and every fixture under
//! tests/fixtures/config/: each invalid config with its exact message.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use vramwatch::config::keys::{Action, parse_key};
use vramwatch::config::{self, ColorDepth, Column, Config, Level, Theme};

const INVALID: &str = "tests/fixtures/config/invalid";
const VALID: &str = "tests/fixtures/config/valid";

/// Each invalid fixture and the lines `config check` prints for it
/// (`{F}` is the fixture's path).
const EXPECTED: &[(&str, &[&str])] = &[
    (
        "bad_color",
        &["{F}:2:9: [display] color = 8: must be \"auto\", 16, 256 or \"truecolor\""],
    ),
    (
        "bad_column",
        &["{F}:2:19: [display] columns: unknown column `memroy`; did you mean `memory`?"],
    ),
    (
        "bad_command",
        &[
            "{F}:3:11: [alerts] command = \"notify-send 'GPU alert'\": expected an array of strings, the program and its arguments, such as [\"notify-send\", \"GPU alert\"], found a string",
        ],
    ),
    (
        "bad_duration",
        &[
            "{F}:2:12: [sampling] interval = \"1 fortnight\": not a duration: `fortnight` is not a time unit; use a number with a unit (ms, s, m, h, d) between 100ms and 1m",
        ],
    ),
    (
        "bad_key_spec",
        &["{F}:2:14: [keys] quit: `ctrl-` is not a key: it is empty"],
    ),
    (
        "bad_listen",
        &[
            "{F}:2:10: [serve] listen = \"localhost:9400\": `localhost` is not an IP address (host names are not looked up); use e.g. \"127.0.0.1:9400\", \"0.0.0.0:9400\" or \"[::1]:9400\"",
        ],
    ),
    (
        "bad_rate",
        &[
            "{F}:2:17: [alerts] leak_min_rate = \"4MiB\": not a rate: it needs a per-second unit; e.g. 4MiB/s",
        ],
    ),
    (
        "bad_size",
        &[
            "{F}:2:12: [record] max_size = \"1G\": not a size: `G` is ambiguous; write GiB (binary) or GB (decimal); e.g. 512MiB, 1GiB",
        ],
    ),
    (
        "bad_theme",
        &["{F}:2:9: [display] theme = \"solarized\": must be \"dark\", \"light\" or \"mono\""],
    ),
    (
        "bad_version",
        &["{F}:1:11: version = 2: unsupported config version; this vramwatch reads version 1"],
    ),
    (
        "duration_as_number",
        &[
            "{F}:3:11: [sampling] history = 3600: expected a duration such as \"500ms\", \"1s\" or \"10m\", found an integer",
        ],
    ),
    (
        "fast_longer_than_interval",
        &[
            "{F}:3:17: [sampling] fast_interval = \"1s\" must not be longer than interval = \"500ms\" (line 2)",
        ],
    ),
    (
        "huge_integer",
        &[
            "{F}:3:15: [thresholds] memory_warn = 99999999999999999999999: a number too large, must be between 0 and 100",
        ],
    ),
    (
        "huge_numbers",
        &[
            "{F}:1:11: version = 18446744073709551616: a number too large; this vramwatch reads version 1",
            "{F}:4:12: [record] max_size = 99_999_999_999_999_999_999_999: a number too large, must be between 1MiB and 1TiB",
            "{F}:7:9: [display] color = -99999999999999999999999: a number too small, must be \"auto\", 16, 256 or \"truecolor\"",
            "{F}:10:14: [thresholds] power_crit = 1e999: a number too large, must be between 0 and 200",
        ],
    ),
    (
        "key_conflict",
        &["{F}:3:19: [keys] `x` is bound to both kill (line 2) and terminate (line 3)"],
    ),
    (
        "key_conflict_default",
        &[
            "{F}:3:8: [keys] `q` is bound to both help (line 3) and quit (its default; bind quit to other keys too)",
        ],
    ),
    (
        "key_in_wrong_section",
        &["{F}:2:1: interval: unknown top-level key; `interval` belongs in [sampling]"],
    ),
    (
        "long_key",
        &[
            "{F}:3:1: [display] theme_theme_theme_theme_theme_theme_theme_theme_theme_theme_the\u{2026}: unknown key; valid keys: theme, color, columns, mouse, ascii, chart_rows, events",
        ],
    ),
    (
        "long_value",
        &[
            "{F}:2:9: [display] theme = \"solarized-solarized-solarized-solarized-solarized-solarized-so\u{2026}: must be \"dark\", \"light\" or \"mono\"",
            "{F}:3:19: [display] columns: unknown column `memory_memory_memory_memory_memory_memory_memory_memory_memory_\u{2026}`; valid columns: gpu, pid, user, container, type, memory, memory_pct, trend, peak, alloc, sm, cpu, rss, age, command",
        ],
    ),
    (
        "nested_table",
        &[
            "{F}:2:13: [thresholds.memory]: unknown table; [thresholds] has no sub-tables, its keys are memory_warn, memory_crit, temperature_warn, temperature_crit, power_warn, power_crit, utilization_warn, utilization_crit",
        ],
    ),
    (
        "not_utf8",
        &[
            "{F}:3:6: not UTF-8 text: the byte at offset 30 (0xe9) is not valid UTF-8; save the file as UTF-8",
        ],
    ),
    (
        "out_of_range",
        &[
            "{F}:12:15: [thresholds] memory_warn = 120: must be between 0 and 100",
            "{F}:13:15: [thresholds] memory_crit = 130: must be between 0 and 100",
        ],
    ),
    (
        "several_problems",
        &[
            "{F}:2:12: [sampling] interval = \"50ms\": must be between 100ms and 1m",
            "{F}:4:1: [display] colour: unknown key; did you mean `color`?",
            "{F}:5:9: [display] mouse = 1: expected true or false, found an integer",
            "{F}:7:14: [thresholds] power_warn = 90 (the default) must be below power_crit = 80 (line 7)",
        ],
    ),
    (
        "syntax_error",
        &["{F}:2:15: TOML syntax error: invalid basic string, expected `\"`"],
    ),
    (
        "typo_key",
        &["{F}:2:1: [thresholds] memroy_warn: unknown key; did you mean `memory_warn`?"],
    ),
    (
        "unknown_action",
        &["{F}:2:1: [keys] qiut: unknown action; did you mean `quit`?"],
    ),
    (
        "unknown_key",
        &[
            "{F}:4:1: [display] width: unknown key; valid keys: theme, color, columns, mouse, ascii, chart_rows, events",
        ],
    ),
    (
        "unknown_section",
        &["{F}:2:2: [sampels]: unknown section; did you mean [sampling]?"],
    ),
    (
        "warn_not_below_crit",
        &[
            "{F}:2:20: [thresholds] temperature_warn = 85 (line 2) must be below temperature_crit = 85 (line 3)",
        ],
    ),
    (
        "wrong_type",
        &["{F}:2:9: [display] mouse = \"yes\": expected true or false, found a string"],
    ),
];

/// `vramwatch` run from the package root, with a config dir of its own so
/// the user's real config never leaks in.
fn vramwatch(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("vramwatch").expect("the vramwatch binary is built");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("NO_COLOR");
    cmd
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

#[test]
fn every_invalid_fixture_fails_with_its_exact_message() {
    let home = tempdir();
    for (name, lines) in EXPECTED {
        let file = format!("{INVALID}/{name}.toml");
        let mut expected = String::from("vramwatch: error: ");
        expected.push_str(&lines.join("\n").replace("{F}", &file));
        expected.push('\n');
        let out = vramwatch(home.path())
            .args(["config", "check", &file])
            .output()
            .expect("vramwatch runs");
        assert_eq!(out.status.code(), Some(2), "{name}: exit code");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            expected,
            "{name}: stderr"
        );
        assert!(out.stdout.is_empty(), "{name}: nothing on stdout");
    }
}

#[test]
fn every_invalid_fixture_has_an_expected_message() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(INVALID);
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("the fixture folder")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".toml"))
                .map(str::to_owned)
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = EXPECTED.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
    assert!(listed.len() >= 12);
}

#[test]
fn the_loader_agrees_with_the_cli() {
    // The library error is the CLI message without the program prefix.
    for (name, lines) in EXPECTED {
        let file = format!("{INVALID}/{name}.toml");
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(&file);
        let bytes = std::fs::read(&path).expect("fixture");
        let err = match std::str::from_utf8(&bytes) {
            Ok(text) => config::parse(text, &file).expect_err(name).to_string(),
            // Only a file can be other than UTF-8: it is named as given.
            Err(_) => config::load_file(&path)
                .expect_err(name)
                .to_string()
                .replace(&path.display().to_string(), &file),
        };
        assert_eq!(err, lines.join("\n").replace("{F}", &file), "{name}");
    }
}

#[test]
fn valid_fixtures_pass() {
    let home = tempdir();
    for name in ["minimal", "full"] {
        let file = format!("{VALID}/{name}.toml");
        vramwatch(home.path())
            .args(["config", "check", &file])
            .assert()
            .success()
            .stdout(format!("{file}: ok\n"))
            .stderr("");
    }
}

fn load_fixture(name: &str) -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(VALID).join(name);
    config::load(Some(&path)).expect("a valid fixture")
}

#[test]
fn the_minimal_fixture_changes_one_thing() {
    let c = load_fixture("minimal.toml");
    let mut expected = Config::default();
    expected.sampling.interval = std::time::Duration::from_secs(2);
    // The process period (5 s) is not shorter than a 2 s interval: kept.
    assert_eq!(c, expected);
}

#[test]
fn the_full_fixture_sets_every_key() {
    use std::time::Duration;
    let c = load_fixture("full.toml");
    let s = &c.sampling;
    assert_eq!(s.interval, Duration::from_secs(2));
    assert_eq!(s.fast_interval, Some(Duration::from_millis(250)));
    assert_eq!(s.slow_interval, None);
    assert_eq!(s.proc_util_interval, Duration::from_secs(4));
    assert_eq!(s.proc_util_shown_interval, Duration::from_secs(3));
    assert_eq!(s.history, Duration::from_secs(1800));
    assert_eq!(s.exited_keep, Duration::ZERO);
    let t = &c.thresholds;
    assert_eq!(
        t.memory,
        Level {
            warn: 70.5,
            crit: 90.0
        }
    );
    assert_eq!(
        t.temperature,
        Level {
            warn: 75.0,
            crit: 85.0
        }
    );
    assert_eq!(
        t.power,
        Level {
            warn: 100.0,
            crit: 120.0
        }
    );
    assert_eq!(
        t.utilization,
        Level {
            warn: 50.0,
            crit: 60.0
        }
    );
    let a = &c.alerts;
    assert!(a.bell);
    assert_eq!(
        a.command,
        ["notify-send", "--urgency=critical", "vramwatch"]
    );
    assert_eq!(a.forecast_below, Duration::from_secs(900));
    assert_eq!(a.leak_min_rate, 512.0 * 1024.0);
    assert_eq!(a.leak_min_duration, Duration::from_secs(60));
    assert_eq!(a.burst_level, None);
    assert_eq!(a.burst_interval, Duration::from_millis(20));
    let d = &c.display;
    assert_eq!(d.theme, Theme::Light);
    assert_eq!(d.color, ColorDepth::TrueColor);
    let names: Vec<&str> = d.columns.iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        ["gpu", "pid", "user", "memory", "peak", "trend", "command"]
    );
    assert_eq!(d.columns[5], Column::Trend);
    assert!(d.mouse);
    assert!(d.ascii);
    let key = |s| parse_key(s).expect("a key");
    assert_eq!(c.keys.keys(Action::Quit), [key("x")]);
    assert_eq!(c.keys.keys(Action::Help), [key("?"), key("q")]);
    assert_eq!(c.keys.keys(Action::Kill), [key("ctrl-k"), key("f10")]);
    assert_eq!(c.keys.keys(Action::Pause), [key("p")]);
    assert_eq!(
        c.keys.keys(Action::Up),
        Config::default().keys.keys(Action::Up)
    );
    assert_eq!(c.record.dir, Some(PathBuf::from("/var/tmp/vramwatch")));
    assert_eq!(c.record.max_size, 256 << 20);
    assert!(!c.record.compress);
    assert_eq!(c.record.sync_every, Duration::from_secs(1));
    assert_eq!(c.serve.listen, "0.0.0.0:9100");
    // Not one section left at its default.
    let d = Config::default();
    assert!(c.sampling != d.sampling && c.thresholds != d.thresholds && c.alerts != d.alerts);
    assert!(
        c.display != d.display && c.keys != d.keys && c.record != d.record && c.serve != d.serve
    );
}

#[test]
fn init_writes_the_documented_default_and_refuses_to_overwrite() {
    let home = tempdir();
    let path = home.path().join("deep/er/vramwatch.toml");
    let shown = path.display().to_string();
    vramwatch(home.path())
        .args(["config", "init", &shown])
        .assert()
        .success()
        .stdout(format!("wrote {shown}\n"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        config::DEFAULT_TOML
    );
    vramwatch(home.path())
        .args(["config", "check", &shown])
        .assert()
        .success()
        .stdout(format!("{shown}: ok\n"));

    std::fs::write(&path, "# mine\n").unwrap();
    vramwatch(home.path())
        .args(["config", "init", &shown])
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "vramwatch: error: {shown} already exists; `--force` overwrites it (`vramwatch config check {shown}` validates it)\n"
        ));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "# mine\n",
        "untouched"
    );

    vramwatch(home.path())
        .args(["config", "init", &shown, "--force"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        config::DEFAULT_TOML
    );
}

#[test]
fn without_a_path_the_platform_file_is_used() {
    let home = tempdir();
    let platform = home.path().join("config/vramwatch/config.toml");
    let shown = platform.display().to_string();
    vramwatch(home.path())
        .args(["config", "path"])
        .assert()
        .success()
        .stdout(format!("{shown}\n"))
        .stderr(predicate::str::contains("does not exist yet"));
    vramwatch(home.path())
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(format!(
            "{shown}: not found; the built-in defaults are in use (`vramwatch config init` writes them there)\n"
        ));
    vramwatch(home.path())
        .args(["config", "init"])
        .assert()
        .success()
        .stdout(format!("wrote {shown}\n"));
    assert!(platform.is_file());
    vramwatch(home.path())
        .args(["config", "path"])
        .assert()
        .success()
        .stdout(format!("{shown}\n"))
        .stderr("");
    vramwatch(home.path())
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(format!("{shown}: ok\n"));
    // A broken platform file is reported like any other.
    std::fs::write(&platform, "[display]\nmouse = 3\n").unwrap();
    vramwatch(home.path())
        .args(["config", "check"])
        .assert()
        .code(2)
        .stderr(format!(
            "vramwatch: error: {shown}:2:9: [display] mouse = 3: expected true or false, found an integer\n"
        ));
}

#[test]
fn the_global_config_flag_is_honoured() {
    let home = tempdir();
    let file = format!("{INVALID}/bad_theme.toml");
    vramwatch(home.path())
        .args(["--config", &file, "config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{file}:2:9: [display] theme"
        )));
    vramwatch(home.path())
        .args(["config", "path", "--config", &file])
        .assert()
        .success()
        .stdout(format!("{file}\n"));
    // A PATH given to the subcommand wins over --config.
    let ok = format!("{VALID}/minimal.toml");
    vramwatch(home.path())
        .args(["--config", &file, "config", "check", &ok])
        .assert()
        .success()
        .stdout(format!("{ok}: ok\n"));
}

#[test]
fn unreadable_files_are_named() {
    let home = tempdir();
    vramwatch(home.path())
        .args(["config", "check", "no/such/file.toml"])
        .assert()
        .code(2)
        .stderr(
            "vramwatch: error: no/such/file.toml: no such config file (`vramwatch config init no/such/file.toml` writes one)\n",
        );
    let binary = home.path().join("binary.toml");
    std::fs::write(&binary, b"version = 1\n\xff\xfe\n").unwrap();
    let shown = binary.display().to_string();
    vramwatch(home.path())
        .args(["config", "check", &shown])
        .assert()
        .code(2)
        .stderr(format!(
            "vramwatch: error: {shown}:2:1: not UTF-8 text: the byte at offset 12 (0xff) is not valid UTF-8; save the file as UTF-8\n"
        ));
    let dir = home.path().display().to_string();
    vramwatch(home.path())
        .args(["config", "check", &dir])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(format!(
            "vramwatch: error: {dir}: cannot read the config file: "
        )));
}

/// A config is at most 1 MiB: a larger file (here 8 MB, a 2M-element
/// array that would take hundreds of MB to parse) is refused by its size,
/// before it is parsed, by every command that reads it.
#[test]
fn a_config_over_1_mib_is_refused_unread() {
    let home = tempdir();
    let big = home.path().join("big.toml");
    let mut text = String::from("[alerts]\ncommand = [");
    text.push_str(&"\"x\",".repeat(2_000_000));
    text.push_str("\"x\"]\n");
    std::fs::write(&big, &text).unwrap();
    let shown = big.display().to_string();
    let want = format!(
        "vramwatch: error: {shown}: the file is {} bytes; a config file is at most 1 MiB (1048576 bytes)\n",
        text.len()
    );
    vramwatch(home.path())
        .args(["config", "check", &shown])
        .assert()
        .code(2)
        .stderr(want.clone());
    vramwatch(home.path())
        .args(["--config", &shown, "snapshot", "--demo"])
        .assert()
        .code(2)
        .stderr(want);
}

/// `--interval` and `[sampling] interval`, `--listen`/`--serve` and
/// `[serve] listen`: one check each, so the same values pass and fail.
#[test]
fn the_command_line_and_the_file_share_their_limits() {
    let home = tempdir();
    let file = home.path().join("c.toml");
    let check = |toml: String| {
        std::fs::write(&file, toml).unwrap();
        let out = vramwatch(home.path())
            .args(["config", "check"])
            .arg(&file)
            .output()
            .unwrap();
        out.status.code()
    };
    for (interval, ok) in [
        ("100ms", true),
        ("1m", true),
        ("99ms", false),
        ("61s", false),
        ("99999h", false),
        ("2years", false),
        ("soon", false),
    ] {
        let in_file = check(format!("[sampling]\ninterval = \"{interval}\"\n"));
        assert_eq!(in_file, Some(if ok { 0 } else { 2 }), "file: {interval}");
        let on_line = vramwatch(home.path())
            .args([
                "serve",
                "--demo",
                "--interval",
                interval,
                "--listen",
                "nonsense",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&on_line.stderr);
        assert_eq!(on_line.status.code(), Some(2));
        // A bad interval is named before the (also bad) address.
        assert_eq!(err.contains("--interval"), !ok, "cli: {interval}: {err}");
    }
    for (listen, ok) in [
        ("127.0.0.1:9400", true),
        ("[::1]:0", true),
        ("0.0.0.0:1", true),
        ("localhost:9999", false),
        ("localhost", false),
        ("127.0.0.1", false),
        ("127.0.0.1:99999", false),
        ("", false),
    ] {
        let in_file = check(format!("[serve]\nlisten = \"{listen}\"\n"));
        assert_eq!(in_file, Some(if ok { 0 } else { 2 }), "file: {listen}");
        let parsed = vramwatch::cli::parse_listen(listen);
        assert_eq!(parsed.is_ok(), ok, "cli: {listen}: {parsed:?}");
        assert_eq!(config::parse_listen(listen).is_ok(), ok, "{listen}");
    }
}

/// What a message quotes from the config (a value, a path) reaches the
/// terminal without its escape sequences: a fuzzing pass found an OSC
/// sequence in `[display] columns` echoed raw.
#[test]
fn a_config_error_quotes_no_escape_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("esc\u{1b}[31m.toml");
    std::fs::write(
        &path,
        "[display]\ncolumns = [\"\\u001b]0;pwn\\u0007x\"]\n[keys]\nquit = \"\\u001b[31m\"\n",
    )
    .unwrap();
    let out = Command::cargo_bin("vramwatch")
        .unwrap()
        .args(["config", "check"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown column `x`"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}
