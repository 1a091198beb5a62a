//! The command line, as a user runs it: options where they act, exit codes
//! (docs/cli.md), GPU selection, `snapshot --watch`, completions, man pages,
//! and `snapshot --json` against docs/snapshot-json.md.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn vw() -> Command {
    let mut c = Command::cargo_bin("vramwatch").expect("binary built");
    // Never pick up a developer's own config, or the GPUs a job was given.
    c.env("XDG_CONFIG_HOME", "/nonexistent-vramwatch-test")
        .env_remove("CUDA_VISIBLE_DEVICES");
    c
}

fn bin() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_vramwatch"));
    c.env("XDG_CONFIG_HOME", "/nonexistent-vramwatch-test")
        .env_remove("CUDA_VISIBLE_DEVICES");
    c
}

fn json_of(args: &[&str]) -> Value {
    let out = vw().args(args).output().expect("run");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

#[test]
fn snapshot_demo_json_follows_the_documented_schema() {
    let v = json_of(&["snapshot", "--demo", "--json"]);
    assert_eq!(v["schema"], "vramwatch.snapshot/1");
    assert_eq!(v["system"]["source"], "sim:demo");
    let gpus = v["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 4);
    for g in gpus {
        let m = &g["mem"];
        let (used, resv, free, total) = (
            m["used"].as_u64().unwrap(),
            m["reserved"].as_u64().unwrap(),
            m["free"].as_u64().unwrap(),
            m["total"].as_u64().unwrap(),
        );
        assert_eq!(used + resv + free, total, "memory adds up: {g}");
        let idx = g["index"].as_u64().unwrap();
        let sum: u64 = v["procs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["gpu"].as_u64() == Some(idx))
            .filter_map(|p| p["mem"].as_u64())
            .sum();
        assert_eq!(g["unaccounted"].as_u64().unwrap(), used.saturating_sub(sum));
    }
    for p in v["procs"].as_array().unwrap() {
        assert!(p["pid"].as_u64().is_some() && p["start_time"].as_u64().unwrap() > 0);
        assert!(p["command"].as_str().is_some_and(|c| !c.is_empty()));
        // CPU % to a tenth, not f32 noise.
        let cpu = p["cpu_pct"].as_f64().unwrap();
        assert_eq!((cpu * 10.0).round() / 10.0, cpu, "{}", p["cpu_pct"]);
        assert!(p["cpu_pct"].to_string().len() <= 6, "{}", p["cpu_pct"]);
    }
}

/// Every field path of a JSON document: `gpus`, `gpus[].mem`,
/// `gpus[].mem.used`, ... (array elements' fields under `name[]`).
fn field_paths(v: &Value, base: &str, out: &mut BTreeSet<String>) {
    let Value::Object(o) = v else { return };
    for (k, child) in o {
        let path = format!("{base}{k}");
        out.insert(path.clone());
        match child {
            Value::Object(_) => field_paths(child, &format!("{path}."), out),
            Value::Array(items) => {
                for item in items {
                    field_paths(item, &format!("{path}[]."), out);
                }
            }
            _ => {}
        }
    }
}

/// The fields docs/snapshot-json.md lists: each `## ` section names its
/// path in backticks (`## Top level` is the document), each table row's
/// first cell the fields, in backticks.
fn documented_fields(doc: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let ticked =
        |s: &str| -> Vec<String> { s.split('`').skip(1).step_by(2).map(str::to_owned).collect() };
    let (mut fields, mut sections) = (BTreeSet::new(), BTreeSet::new());
    let mut section: Option<String> = None;
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = if h == "Top level" {
                Some(String::new())
            } else {
                ticked(h).into_iter().next()
            };
            if let Some(s) = &section {
                sections.insert(s.clone());
            }
            continue;
        }
        let (Some(s), Some(row)) = (&section, line.strip_prefix("| ")) else {
            continue;
        };
        let first = row.split(" | ").next().unwrap_or_default();
        for f in ticked(first) {
            fields.insert(if s.is_empty() { f } else { format!("{s}.{f}") });
        }
    }
    (fields, sections)
}

#[test]
fn snapshot_json_has_exactly_the_documented_fields() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/snapshot-json.md"
    ))
    .unwrap();
    let (documented, sections) = documented_fields(&doc);
    assert!(documented.len() > 60, "{documented:?}");
    let mut v = json_of(&["snapshot", "--demo", "--json"]);
    // A single snapshot has no events: add one, as `--watch` makes them.
    let event = vramwatch::model::Event {
        t_ms: 1,
        kind: vramwatch::model::EventKind::ProcessStarted,
        gpu: Some(0),
        pid: Some(7),
        message: "PID 7 started on GPU 0: x".into(),
        after_oom: false,
    };
    v["events"] = serde_json::json!([event]);
    let mut output = BTreeSet::new();
    field_paths(&v, "", &mut output);
    assert!(output.contains("procs[].torch.devices[].largest_free_t_ms"));
    let covered = |p: &String| {
        documented.contains(p)
            || sections.contains(p)
            || documented.iter().any(|d| d.starts_with(&format!("{p}.")))
    };
    let undocumented: Vec<&String> = output.iter().filter(|p| !covered(p)).collect();
    assert!(
        undocumented.is_empty(),
        "in the output, not in docs/snapshot-json.md: {undocumented:?}"
    );
    let missing: Vec<&String> = documented.difference(&output).collect();
    assert!(
        missing.is_empty(),
        "in docs/snapshot-json.md, not in the output: {missing:?}"
    );
}

#[test]
fn snapshot_table_is_memory_first() {
    vw().args(["snapshot", "--demo", "training"])
        .assert()
        .success()
        .stdout(predicate::str::contains("USED MiB").and(predicate::str::contains("train.py")));
}

#[test]
fn demo_before_a_subcommand_is_not_a_scenario() {
    vw().args(["--demo", "snapshot"])
        .assert()
        .success()
        .stdout(predicate::str::contains("source sim:demo"));
    vw().args(["--demo=idle", "--seed", "3", "snapshot", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"source\": \"sim:idle\""));
    // The subcommand's own --demo wins.
    vw().args(["--demo", "snapshot", "--demo", "leak"])
        .assert()
        .success()
        .stdout(predicate::str::contains("source sim:leak"));
}

#[test]
fn options_are_refused_where_they_would_do_nothing() {
    for args in [
        &["export", "x.jsonl", "--csv", "--demo"][..],
        &["report", "x.jsonl", "--interval", "1s"],
        &["replay", "x.jsonl", "--seed", "2"],
        &["score", "x.jsonl", "--demo"],
        &["config", "check", "--demo"],
        &["export", "x.jsonl", "--csv", "--config", "c.toml"],
    ] {
        vw().args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("unexpected argument"));
    }
    vw().args(["--demo", "export", "x.jsonl", "--csv"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`--demo` does nothing for `vramwatch export`",
        ));
    vw().args(["--interval", "2s", "snapshot", "--demo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--watch INTERVAL"));
    // `--spaced` changes how `--calls` times the calls: alone it is refused.
    vw().args(["bench-sampler", "--spaced"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--calls"));
    vw().args(["export", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--demo").not());
    for sub in ["snapshot", "record", "serve"] {
        vw().args([sub, "--help"]).assert().success().stdout(
            predicate::str::contains("--demo")
                .and(predicate::str::contains("--gpu"))
                .and(predicate::str::contains("--config")),
        );
    }
}

#[test]
fn no_driver_is_a_one_line_runtime_failure() {
    let out = vw()
        .env("VRAMWATCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .arg("snapshot")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/libnvidia-ml.so.1") && err.contains("--demo"),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
}

#[test]
fn usage_and_config_errors_exit_2_with_a_reason() {
    vw().args(["snapshot", "--demo", "nosuch"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nosuch").and(predicate::str::contains("crowded")));
    vw().args(["--color", "purple"]).assert().code(2);
    vw().args(["--seed", "3"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--demo"));
    // The CLI keeps to the config's range for the interval ...
    for bad in ["10ms", "99999h", "2years"] {
        vw().args([
            "record",
            "--demo",
            "-o",
            "/nonexistent/x.jsonl",
            "--interval",
            bad,
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "must be between 100ms and 1m, as [sampling] interval",
        ));
    }
    vw().args(["snapshot", "--demo", "--watch", "2h"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("between 100ms and 1m"));
    // ... and its forms of listen address.
    vw().args(["serve", "--demo", "--listen", "localhost:9999"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`localhost:9999` is not a listen address: `localhost` is not an IP address (host names are not looked up)",
        ));
    vw().args(["--demo", "--serve", "0.0.0.0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("it has no port"));
    vw().args(["--gpu", "0", "--all-gpus"]).assert().code(2);
    vw().args(["replay", "/nonexistent/rec.jsonl"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "/nonexistent/rec.jsonl: no such file",
        ));
    vw().args(["man", "nosuch"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`nosuch` is not a subcommand"));
    // A path of the wrong kind is the user's to fix, as a missing one is
    // (these exited 1).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    for args in [
        vec!["record", "--demo", "--duration", "1s", "-o", d, "--force"],
        vec!["config", "init", d, "--force"],
        vec!["man", "--dir", file.to_str().unwrap()],
    ] {
        vw().args(&args).assert().code(2);
    }
}

#[test]
fn snapshot_honours_the_config() {
    let d = tempfile::tempdir().unwrap();
    let broken = d.path().join("broken.toml");
    std::fs::write(&broken, "[display\nascii = true\n").unwrap();
    for args in [&["snapshot", "--demo", "--config"][..], &["--config"]] {
        let mut c = vw();
        c.args(args).arg(&broken);
        if args[0] == "--config" {
            c.args(["snapshot", "--demo"]);
        }
        c.assert().code(2).stdout("").stderr(
            predicate::str::contains("broken.toml:1:")
                .and(predicate::str::contains("TOML syntax error")),
        );
    }
    vw().args(["snapshot", "--demo", "--config", "/nonexistent/c.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such config file"));
    // The config's interval paces --watch.
    let fast = d.path().join("fast.toml");
    std::fs::write(
        &fast,
        "[sampling]\ninterval = \"200ms\"\n[display]\nascii = true\n",
    )
    .unwrap();
    let lines = watch_lines(&["--config", fast.to_str().unwrap()], 3);
    let t: Vec<u64> = lines.iter().map(|l| l["t_ms"].as_u64().unwrap()).collect();
    assert!(t[2] - t[0] < 1500, "every 200ms, not every 1s: {t:?}");
    let out = vw()
        .args(["snapshot", "--demo", "--config"])
        .arg(&fast)
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_ascii());
}

#[test]
fn runtime_failures_exit_1() {
    let d = tempfile::tempdir().unwrap();
    let rec = d.path().join("r.jsonl");
    vw().args([
        "record",
        "--demo",
        "--duration",
        "1s",
        "--interval",
        "200ms",
        "-o",
    ])
    .arg(&rec)
    .assert()
    .success();
    // Writing fails.
    vw().args(["export", "--csv", "-o", "/dev/full"])
        .arg(&rec)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no space left on device"));
    // A recording that cannot be read completely: a snapshot line in the
    // middle is broken (a cut-off last line is only a warning).
    let text = std::fs::read_to_string(&rec).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with("{\"type\":\"snapshot\""))
        .unwrap();
    lines[i] = "{\"type\":\"snapshot\",\"seq\":0,garbage";
    let broken = d.path().join("broken.jsonl");
    std::fs::write(&broken, lines.join("\n") + "\n").unwrap();
    vw().args(["export", "--csv"])
        .arg(&broken)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("broken.jsonl:"));
}

#[test]
fn gpus_are_chosen_by_flag_or_cuda_visible_devices() {
    let all = json_of(&["snapshot", "--demo", "--json"]);
    let uuid = |v: &Value, i: usize| v["system"]["gpus"][i]["uuid"].as_str().unwrap().to_owned();
    let v = json_of(&["snapshot", "--demo", "--json", "--gpu", "2,0"]);
    assert_eq!(v["gpus"].as_array().unwrap().len(), 2);
    assert_eq!((uuid(&v, 0), uuid(&v, 1)), (uuid(&all, 2), uuid(&all, 0)));
    assert_eq!(v["gpus"][1]["index"], 1);
    let prefix = &uuid(&all, 3)[..14];
    let v = json_of(&["snapshot", "--demo", "--json", "--gpu", prefix]);
    assert_eq!(uuid(&v, 0), uuid(&all, 3));
    assert!(
        v["procs"].as_array().unwrap().iter().all(|p| p["gpu"] == 0),
        "the processes of the chosen GPU only"
    );
    vw().args(["snapshot", "--demo", "--gpu", "2"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "showing GPU 2 as 0 (--gpu 2)\n",
        ));
    vw().args(["snapshot", "--demo", "--gpu", "1,9"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--gpu 1,9: `9` is none of this machine's GPUs 0-3",
        ));
    vw().args(["snapshot", "--demo", "--gpu", "1-2"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "showing GPUs 1, 2 as 0, 1 (--gpu 1,2)\n",
        ));
    vw().args(["snapshot", "--demo", "--gpu", "3-1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`3-1` counts down; a range of GPU indexes counts up, like 1-3",
        ));
    // CUDA_VISIBLE_DEVICES, unless --gpu or --all-gpus.
    let count = |env: &str, extra: &[&str]| {
        let out = vw()
            .env("CUDA_VISIBLE_DEVICES", env)
            .args(["snapshot", "--demo", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["gpus"].as_array().unwrap().len()
    };
    assert_eq!(count("3,1", &[]), 2);
    assert_eq!(count("3,1", &["--all-gpus"]), 4);
    assert_eq!(count("3,1", &["--gpu", "0"]), 1);
    assert_eq!(count(&uuid(&all, 2), &[]), 1);
    let out = vw()
        .env("CUDA_VISIBLE_DEVICES", "1,7,2")
        .args(["snapshot", "--demo", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`7` is none of this machine's GPUs"));
    vw().env("CUDA_VISIBLE_DEVICES", "-1")
        .args(["snapshot", "--demo"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("CUDA_VISIBLE_DEVICES=-1 selects no GPU")
                .and(predicate::str::contains("--all-gpus")),
        );
}

/// `snapshot --demo --json --watch 200ms` (plus `extra`) until it has
/// printed `n` lines; then SIGINT, which it must take as the normal end.
fn watch_lines(extra: &[&str], n: usize) -> Vec<Value> {
    let mut child = bin()
        .args(["snapshot", "--demo", "--json", "--watch"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(out).lines().take(n) {
        lines.push(serde_json::from_str::<Value>(&line.unwrap()).expect("one document a line"));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "Ctrl-C ends --watch with success");
    assert_eq!(lines.len(), n);
    lines
}

#[test]
fn snapshot_watch_repeats_until_ctrl_c() {
    let lines = watch_lines_with_interval("200ms", 3);
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [0, 1, 2]);
    // A table on a pipe: one after another.
    let mut child = bin()
        .args(["snapshot", "--demo", "training", "-w", "100ms"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let heads: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(Result::unwrap)
        .filter(|l| l.starts_with("GPU  NAME"))
        .take(2)
        .collect();
    assert_eq!(heads.len(), 2);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

fn watch_lines_with_interval(every: &str, n: usize) -> Vec<Value> {
    let mut child = bin()
        .args(["snapshot", "--demo", "--json", "--watch", every])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let lines: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .take(n)
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    lines
}

#[test]
fn version_and_help() {
    vw().arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::contains(env!("CARGO_PKG_VERSION")));
    vw().arg("--help").assert().success().stdout(
        predicate::str::contains("snapshot")
            .and(predicate::str::contains("--demo"))
            .and(predicate::str::contains("Exit status:"))
            .and(predicate::str::contains("2  usage or config error")),
    );
}

#[test]
fn completions_for_every_shell() {
    for (shell, marker) in [
        ("bash", "_vramwatch()"),
        ("zsh", "#compdef vramwatch"),
        ("fish", "complete -c vramwatch"),
        ("elvish", "edit:completion:arg-completer[vramwatch]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = vw().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(marker), "{shell}: no `{marker}`");
        assert!(
            script.contains("snapshot") && script.contains("all-gpus"),
            "{shell}"
        );
    }
    vw().args(["completions", "tcsh"]).assert().code(2);
    // The bash script is valid bash.
    if crate::common::tool_available("bash") {
        let out = vw().args(["completions", "bash"]).output().unwrap();
        let check = std::process::Command::new("bash")
            .args(["-n", "-c"])
            .arg(String::from_utf8(out.stdout).unwrap())
            .status()
            .unwrap();
        assert!(check.success());
    }
}

#[test]
fn man_pages() {
    let out = vw().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH vramwatch 1"), "{page}");
    for want in [
        ".SH SYNOPSIS",
        "snapshot",
        "\\-\\-demo",
        "Exit status",
        "vramwatch\\-snapshot(1)",
    ] {
        assert!(page.contains(want), "no `{want}` in the man page");
    }
    vw().args(["man", "snapshot"]).assert().success().stdout(
        predicate::str::contains(".TH vramwatch-snapshot 1")
            .and(predicate::str::contains("\\-\\-watch")),
    );
    let d = tempfile::tempdir().unwrap();
    vw().args(["man", "--dir"]).arg(d.path()).assert().success();
    for f in [
        "vramwatch.1",
        "vramwatch-snapshot.1",
        "vramwatch-completions.1",
    ] {
        assert!(d.path().join(f).is_file(), "{f}");
    }
    assert!(
        !d.path().join("vramwatch-bench-sampler.1").exists(),
        "hidden"
    );
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    // `vramwatch snapshot --json | head -1`, `vramwatch completions bash | head`
    for args in [
        &["snapshot", "--demo", "crowded", "--json"][..],
        &["completions", "bash"],
        &["man"],
    ] {
        let mut child = bin()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Standard error closed before anything is written to it (`vramwatch
/// report x 2>&1 | true`): the message is lost, the exit status is still
/// the documented one (a panic on the write gave 101).
#[test]
fn a_closed_standard_error_keeps_the_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.jsonl.zst");
    let recording = tmp.path().join("one.jsonl.zst");
    let code = |args: &[&std::ffi::OsStr]| {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        bin()
            .args(args)
            .stdout(Stdio::null())
            .stderr(writer)
            .status()
            .expect("run")
            .code()
    };
    // A usage error: 2.
    assert_eq!(code(&["report".as_ref(), missing.as_os_str()]), Some(2));
    // A notice on standard error, then success: 0.
    assert_eq!(
        code(&[
            "record".as_ref(),
            "--demo".as_ref(),
            "--duration".as_ref(),
            "1s".as_ref(),
            "-o".as_ref(),
            recording.as_os_str(),
        ]),
        Some(0)
    );
}

/// An output that is the recording being read is refused before anything
/// is written: `report F --svg F` and `export --csv F -o F --force`
/// replaced the recording (a fuzzing pass), also through another name.
#[test]
fn an_output_that_is_the_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("r.jsonl.zst");
    std::fs::copy("tests/fixtures/h200/leak-oom.jsonl.zst", &rec).unwrap();
    let before = std::fs::read(&rec).unwrap();
    let link = dir.path().join("link.jsonl.zst");
    std::os::unix::fs::symlink(&rec, &link).unwrap();
    let r = rec.to_str().unwrap();
    let l = link.to_str().unwrap();
    for (args, flag) in [
        (vec!["report", r, "--svg", r], "--svg"),
        (vec!["export", "--csv", r, "-o", l, "--force"], "-o"),
        (vec!["report", r, "--baseline", r, "--svg", l], "--svg"),
    ] {
        vw().args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("{flag} ")))
            .stderr(predicate::str::contains("is the recording being read"));
        assert_eq!(std::fs::read(&rec).unwrap(), before, "{args:?}");
    }
}

/// A recording whose every snapshot line is damaged says so when replayed,
/// as `report` does (it said only "holds no snapshots", exit 2).
#[test]
fn replaying_only_damaged_snapshots_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("r.jsonl");
    vw().args([
        "record",
        "--demo",
        "--interval",
        "200ms",
        "--duration",
        "1s",
        "-o",
    ])
    .arg(&rec)
    .assert()
    .success();
    let text = std::fs::read_to_string(&rec).unwrap().replace(
        "{\"type\":\"snapshot\",",
        "{\"type\":\"snapshot\",\"seq\":1,",
    );
    std::fs::write(&rec, text).unwrap();
    vw().arg("replay")
        .arg(&rec)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("holds no readable snapshot"))
        .stderr(predicate::str::contains("duplicate field `seq`"));
}

#[test]
fn a_bad_interval_is_told_the_interval_s_own_range() {
    // The advice is the units and `--interval`'s range (100ms to 1m), as
    // the config file's `[sampling] interval` gives it, not examples that
    // may lie outside it.
    for (bad, says) in [
        (
            "banana",
            "not a duration; use a number with a unit (ms, s, m, h, d) between 100ms and 1m",
        ),
        ("5ms", "must be between 100ms and 1m"),
        (
            "99999999999999999999999s",
            "too large, must be between 100ms and 1m",
        ),
    ] {
        vw().args(["--interval", bad, "snapshot", "--demo"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
}
