//! The real binary in tmux against a Prometheus that never answers, and
//! docs/fleet.md against the queries as sent.

use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;

/// Whether this build's binary has the `fleet` subcommand (it is wired in
/// `cli.rs` and `main.rs`).
fn binary_has_fleet() -> bool {
    let ok = Command::new(env!("CARGO_BIN_EXE_vramwatch"))
        .args(["fleet", "--help"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: this vramwatch binary has no `fleet` subcommand yet");
    }
    ok
}

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(["-L", socket, "-f", "/dev/null"])
        .args(args)
        .output()
        .expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn wait_screen(socket: &str, what: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let s = tmux(socket, &["capture-pane", "-p", "-t", "t"]);
        if s.contains(what) {
            return s;
        }
        assert!(Instant::now() < deadline, "no {what:?} on screen:\n{s}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `what` has left the screen.
fn wait_gone(socket: &str, what: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let s = tmux(socket, &["capture-pane", "-p", "-t", "t"]);
        if !s.contains(what) {
            return;
        }
        assert!(Instant::now() < deadline, "{what:?} stays on screen:\n{s}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn in_tmux_it_stays_responsive_while_prometheus_is_silent() {
    if !common::tool_available("tmux") || !binary_has_fleet() {
        return;
    }
    // A Prometheus that accepts and never answers.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let socket = format!("vw-fleet-{}", std::process::id());
    let cmd = format!(
        "env -i PATH=/usr/bin:/bin TERM=xterm-256color HOME=/tmp {} fleet --prometheus http://{addr} --timeout 3s; echo EXITED $?; sleep 30",
        env!("CARGO_BIN_EXE_vramwatch")
    );
    tmux(
        &socket,
        &[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "100",
            "-y",
            "30",
            &cmd,
        ],
    );
    let s = wait_screen(&socket, "no answer within 3.0s", Duration::from_secs(15));
    assert!(s.contains("vramwatch fleet"), "{s}");
    // Keys answer at once while refreshes keep timing out: a UI that waited
    // on a refresh would take up to its 3 s timeout (3 s of every 5).
    let t0 = Instant::now();
    tmux(&socket, &["send-keys", "-t", "t", "?"]);
    wait_screen(&socket, "fleet help", Duration::from_secs(3));
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    // Esc and q sent back to back reach the terminal as one read, which
    // reads as Alt-q; wait for the help to close before quitting.
    tmux(&socket, &["send-keys", "-t", "t", "Escape"]);
    wait_gone(&socket, "fleet help", Duration::from_secs(3));
    tmux(&socket, &["send-keys", "-t", "t", "q"]);
    wait_screen(&socket, "EXITED 0", Duration::from_secs(5));
    tmux(&socket, &["kill-server"]);
    drop(l);
}

/// Every query the fleet sends, as docs/fleet.md shows them (`HOST(…)` for
/// the host label chain), for selector `{job="gpu"}`, a 5 s interval, the
/// top 50, PIDs 4242 and 5150, and a host with one target, `node-a:9400`.
fn documented_queries() -> Vec<(String, String)> {
    use vramwatch::fleet::queries::{HostQuery, Queries, instance_matcher};
    let q = Queries::new("{job=\"gpu\"}", &[], 5).unwrap().shorthand();
    let mut out: Vec<(String, String)> = HostQuery::ALL
        .iter()
        .map(|h| (format!("{h:?}"), q.host_query(*h)))
        .collect();
    let one = instance_matcher(&["node-a:9400".into()]);
    out.push(("top processes".into(), q.top_procs(50, "")));
    out.push((
        "their growth and leak flags".into(),
        q.proc_figures(&[4242, 5150], ""),
    ));
    out.push(("last good scrape".into(), q.last_good(&one)));
    out.push(("host: GPUs now".into(), q.host_gpus(&one)));
    out.push(("host: memory % (range)".into(), q.gpu_memory_pct(&one)));
    out.push(("host: utilisation (range)".into(), q.gpu_util(&one)));
    out.push(("host: top processes".into(), q.top_procs(50, &one)));
    out.push(("events".into(), q.alerts_firing()));
    out
}

#[test]
fn docs_show_every_query_as_sent() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fleet.md"))
        .expect("docs/fleet.md");
    let missing: Vec<String> = documented_queries()
        .into_iter()
        .filter(|(_, q)| !doc.contains(q.as_str()))
        .map(|(k, q)| format!("{k}: {q}"))
        .collect();
    assert!(
        missing.is_empty(),
        "not in docs/fleet.md:\n{}",
        missing.join("\n")
    );
}
