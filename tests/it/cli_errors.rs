//! The errors a new user meets first, word for word, with their exit
//! status (docs/cli.md "Exit status"): a recording that is missing, a file
//! that is not a recording (a workload truth file), a recording cut short,
//! clap's own errors, and what `--help` says of them.

use std::fs;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;
use vramwatch::record::{Header, WriteOutcome, Writer, WriterOptions};
use vramwatch::source::sim::SimWorld;

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_vramwatch");
const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/corpus/sixteenth"
);
const T0: u64 = 1_764_000_000_000;

fn vw() -> Command {
    let mut c = Command::cargo_bin("vramwatch").expect("binary built");
    // Never pick up a developer's own config.
    c.env("XDG_CONFIG_HOME", "/nonexistent-vramwatch-test");
    c
}

fn stderr_of(args: &[&str], code: i32) -> String {
    let out = vw().args(args).assert().code(code).get_output().clone();
    String::from_utf8(out.stderr).unwrap()
}

/// `n` snapshots of the demo (4 GPUs), each flushed as it is written, and
/// the recorder then killed: the file's size after each snapshot's write.
fn killed_recording(path: &Path, n: u64) -> Vec<u64> {
    let w = SimWorld::new("demo", 1, T0).unwrap();
    let opts = WriterOptions {
        flush_every: Duration::ZERO,
        ..WriterOptions::default()
    };
    let mut wr = Writer::create(path, Header::new(&w.info(), 1000, T0), opts).unwrap();
    let mut ends = Vec::new();
    for s in w.snapshots(T0, 1000, n, "me") {
        assert_eq!(wr.write(&s), WriteOutcome::Written);
        ends.push(wr.stats().bytes);
    }
    // A kill -9: the frame is never ended.
    std::mem::forget(wr);
    ends
}

#[test]
fn a_missing_recording_is_no_such_file_for_every_command() {
    let missing = "/no/such/file.jsonl.zst";
    let rec = format!("{CORPUS}/01-gpu0-vision_leak-s0.7-seed19.jsonl.zst");
    let want = format!("vramwatch: error: {missing}: no such file\n");
    for args in [
        vec!["replay", missing],
        vec!["export", "--csv", missing],
        vec!["score", missing],
        vec!["report", missing],
        vec!["report", missing, "--baseline", &rec],
        vec!["report", &rec, "--baseline", missing],
    ] {
        assert_eq!(stderr_of(&args, 2), want, "{args:?}");
    }
}

#[test]
fn a_truth_file_or_other_json_is_not_taken_for_a_recording() {
    let truth = format!("{CORPUS}/04-gpu0-kv_plateau-tau38-seed19.truth.json");
    let want = format!(
        "vramwatch: error: {truth} is not a vramwatch recording: it is a workload truth file (ground truth for `vramwatch score --truth`)\n"
    );
    for cmd in [
        &["replay"][..],
        &["export", "--csv"],
        &["report"],
        &["score"],
    ] {
        let args: Vec<&str> = cmd.iter().copied().chain([truth.as_str()]).collect();
        assert_eq!(stderr_of(&args, 2), want, "{cmd:?}");
    }
    let d = tempfile::tempdir().unwrap();
    let header = r#"{"type":"header","format":"vramwatch-recording",...}"#;
    for (name, text, why) in [
        (
            "object.jsonl",
            "{\"hello\":\"world\"}\n",
            format!("line 1 is JSON but not a vramwatch recording header (expected {header})"),
        ),
        (
            "pretty.json",
            "{\n  \"hello\": [1,\n    2]\n}",
            format!(
                "it is one JSON document over several lines; a recording is JSON Lines, its line 1 the header ({header})"
            ),
        ),
        (
            "tail.jsonl",
            "{\"type\":\"snapshot\",\"seq\":7}\n",
            format!(
                "line 1 is a \"snapshot\" line of a recording, not its header ({header}): the start of the recording is missing"
            ),
        ),
    ] {
        let p = d.path().join(name);
        fs::write(&p, text).unwrap();
        let p = p.to_str().unwrap();
        assert_eq!(
            stderr_of(&["export", "--csv", p], 2),
            format!("vramwatch: error: {p} is not a vramwatch recording: {why}\n")
        );
    }
}

#[test]
fn a_zst_recording_cut_short_is_exported_as_far_as_it_reads_and_exits_1() {
    let d = tempfile::tempdir().unwrap();
    let full = d.path().join("full.jsonl.zst");
    let ends = killed_recording(&full, 20);
    let bytes = fs::read(&full).unwrap();
    let cut = d.path().join("cut.jsonl.zst");
    let name = cut.to_str().unwrap();
    let rows = |out: &[u8]| String::from_utf8_lossy(out).lines().count();
    // Where the recorder's last write ended (killed, or still recording):
    // nothing is lost, a warning says it was not closed, exit status 0.
    fs::write(&cut, &bytes[..ends[9] as usize]).unwrap();
    let out = vw().args(["export", "--csv", name]).assert().success();
    let out = out.get_output();
    assert_eq!(rows(&out.stdout), 1 + 10 * 4);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "vramwatch: warning: {name}: the recording was not closed"
        )),
        "{err}"
    );
    // Inside the block the 11th snapshot's write made: what was read is
    // exported, and one line says where the file was cut; exit status 1.
    let at = (ends[9] + ends[10]) / 2;
    fs::write(&cut, &bytes[..at as usize]).unwrap();
    let out = vw().args(["export", "--csv", name]).assert().code(1);
    let out = out.get_output();
    assert_eq!(rows(&out.stdout), 1 + 10 * 4);
    let err = String::from_utf8_lossy(&out.stderr);
    let head = format!(
        "vramwatch: error: {name}: cut short at byte {at}, inside its compressed data (a copy stopped part way, `head -c`, a power cut?): what followed line "
    );
    let tail = " is lost; the CSV covers the 10 snapshots that could be read (exit code 1)\n";
    assert!(
        err.starts_with(&head) && err.ends_with(tail) && err.lines().count() == 1,
        "{err}"
    );
    // `report` and `score`'s reading do the same.
    vw().args(["report", name])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("10 snapshots"))
        .stderr(
            predicate::str::starts_with(head.as_str()).and(predicate::str::contains(
                "the report covers the 10 snapshots that could be read (exit code 1)",
            )),
        );
    // A recording that was closed, then cut by `head -c` part way through.
    let whole = fs::read(format!(
        "{CORPUS}/01-gpu0-vision_leak-s0.7-seed19.jsonl.zst"
    ))
    .unwrap();
    fs::write(&cut, &whole[..3000]).unwrap();
    let err = stderr_of(&["export", "--csv", name], 1);
    assert!(
        err.starts_with(&format!(
            "vramwatch: error: {name}: cut short at byte 3000, inside its compressed data"
        )) && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn replaying_a_recording_cut_short_says_so_and_exits_1() {
    if !common::tool_available("tmux") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let full = d.path().join("full.jsonl.zst");
    let ends = killed_recording(&full, 20);
    let at = (ends[9] + ends[10]) / 2;
    let cut = d.path().join("cut.jsonl.zst");
    fs::write(&cut, &fs::read(&full).unwrap()[..at as usize]).unwrap();
    let t = crate::tmux::Tmux::start(160, 40);
    t.type_line(&format!("{BIN} replay {}; echo exit=$?", cut.display()));
    // The footer says it while the rest is replayed.
    let s = t.wait_for("cut short at byte", Duration::from_secs(10));
    assert!(s.contains("1/10"), "{s}");
    t.keys(&["q"]);
    let s = t.wait_for("\nexit=1", Duration::from_secs(5));
    assert!(
        s.contains("vramwatch: error: ") && s.contains("the replay covers the 10 snapshots"),
        "{s}"
    );
}

#[test]
fn clap_errors_are_prefixed_as_every_error_and_help_is_not_an_error() {
    assert_eq!(
        stderr_of(&["--bogus"], 2),
        "vramwatch: error: unexpected argument '--bogus' found\n\nUsage: vramwatch [OPTIONS] [COMMAND]\n\nFor more information, try '--help'.\n"
    );
    assert_eq!(
        stderr_of(&["replay"], 2),
        "vramwatch: error: the following required arguments were not provided:\n  <FILE>\n\nUsage: vramwatch replay <FILE>\n\nFor more information, try '--help'.\n"
    );
    // vramwatch's own usage error, made by clap.
    assert!(
        stderr_of(&["--demo", "export", "x.jsonl", "--csv"], 2)
            .starts_with("vramwatch: error: `--demo` does nothing for `vramwatch export`")
    );
    for args in [&["--help"][..], &["-h"], &["replay", "--help"], &["help"]] {
        vw().args(args)
            .assert()
            .success()
            .stderr("")
            .stdout(predicate::str::contains("Usage: vramwatch"));
    }
    vw().arg("--version")
        .assert()
        .success()
        .stderr("")
        .stdout(format!("vramwatch {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn help_says_what_damage_and_a_cut_do_to_the_exit_status() {
    let help = |args: &[&str]| {
        let out = vw().args(args).assert().success().get_output().clone();
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(
        help(&["--help"])
            .contains("recording could not be read completely (damaged, or cut short)")
    );
    for cmd in ["export", "report", "score"] {
        let h = help(&[cmd, "--help"]);
        assert!(
            h.contains("cut short inside its compressed data")
                && h.contains("after the output the exit status is 1")
                && h.contains("with a warning: exit status 0"),
            "{cmd}: {h}"
        );
    }
    let h = help(&["replay", "--help"]);
    assert!(
        h.contains(
            "when the dashboard is closed the warnings\nare printed and the exit status is 1"
        ),
        "{h}"
    );
}

#[test]
fn config_init_says_where_it_writes_and_that_it_does_not_overwrite() {
    vw().args(["config", "init", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "[PATH]  Where to write it (default: `--config PATH`, else the platform file `vramwatch config path` prints, ~/.config/vramwatch/config.toml on Linux); its directory is created, and an existing file is refused unless `--force` is given",
        ));
    vw().args(["config", "check", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "[PATH]  The file to check; default:",
        ));
    // What the help says is what it does.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("new/dir/config.toml");
    let p = p.to_str().unwrap();
    vw().args(["config", "init", p]).assert().success();
    assert_eq!(
        stderr_of(&["config", "init", p], 2),
        format!(
            "vramwatch: error: {p} already exists; `--force` overwrites it (`vramwatch config check {p}` validates it)\n"
        )
    );
    vw().args(["config", "init", "--force", p])
        .assert()
        .success();
}
