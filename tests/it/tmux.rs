//! The real terminal: vramwatch in tmux over a pty, driven with send-keys,
//! read back with capture-pane — and the terminal is back to normal after
//! `q`, Ctrl-C and SIGTERM. Skips without tmux unless
//! VRAMWATCH_REQUIRE_TOOLS=1.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_vramwatch");

/// A private tmux server (own socket) with one shell at a fixed size.
pub(crate) struct Tmux {
    socket: String,
    dir: tempfile::TempDir,
}

impl Tmux {
    pub(crate) fn start(w: u16, h: u16) -> Tmux {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = format!("vw-test-{}-{}", std::process::id(), rand_suffix());
        let t = Tmux { socket, dir };
        let shell = "env -i PATH=/usr/bin:/bin TERM=xterm-256color HOME=/tmp PS1='$ ' bash --norc --noprofile";
        t.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &w.to_string(),
            "-y",
            &h.to_string(),
            shell,
        ]);
        t.wait_for("$", Duration::from_secs(5));
        t
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.run(&["send-keys", "-t", "t", k]);
            sleep(Duration::from_millis(120));
        }
    }

    pub(crate) fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-t", "t", "-l", line]);
        self.run(&["send-keys", "-t", "t", "Enter"]);
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-t", "t", "-p"])
    }

    /// The screen with its attributes as escape sequences (`-e`).
    fn styled_screen(&self) -> String {
        self.run(&["capture-pane", "-t", "t", "-p", "-e"])
    }

    /// Waits until `needle` is on screen; panics with the screen if not.
    pub(crate) fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(needle) {
                return s;
            }
            if start.elapsed() > timeout {
                panic!("`{needle}` did not appear within {timeout:?}; screen:\n{s}");
            }
            sleep(Duration::from_millis(100));
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Records `stty -a` to a file, to compare the terminal before and after.
    fn stty(&self, name: &str) -> String {
        let p = self.path(name);
        let marker = format!("saved-{name}");
        self.type_line(&format!("stty -a > {} && echo {marker}", p.display()));
        self.wait_for(&format!("\n{marker}"), Duration::from_secs(5));
        std::fs::read_to_string(p).expect("stty output")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0)
}

fn start_dashboard(t: &Tmux, extra: &str) -> String {
    t.type_line(&format!("{BIN} --demo {extra}; echo exit=$?"));
    t.wait_for("GPU MEM", Duration::from_secs(10))
}

#[test]
fn a_new_user_session_in_tmux() {
    if !common::tool_available("tmux") {
        return;
    }
    let t = Tmux::start(120, 40);
    let before = t.stty("before");
    let s = start_dashboard(&t, "");
    assert!(s.contains("vramwatch") && s.contains("H200"), "{s}");
    // Wait for a few samples.
    sleep(Duration::from_millis(2500));

    // j, Enter: the process view of the second row.
    t.keys(&["j", "Enter"]);
    let s = t.wait_for("on GPU", Duration::from_secs(3));
    assert!(
        s.contains("PID ") && s.contains("GPU memory") && s.contains("command"),
        "{s}"
    );
    t.keys(&["Escape"]);
    t.wait_for("GPU MEM", Duration::from_secs(3));

    // ?: help lists keys from the key map.
    t.keys(&["?"]);
    let s = t.wait_for("help · Esc", Duration::from_secs(3));
    assert!(s.contains("filter processes") && s.contains("quit"), "{s}");
    t.keys(&["?"]);
    t.wait_for("GPU MEM", Duration::from_secs(3));

    // /: filter to one user's processes.
    t.keys(&["/", "a", "l", "i", "c", "e", "Enter"]);
    let s = t.wait_for("filter: alice", Duration::from_secs(3));
    assert!(s.contains("finetune.py"), "{s}");
    assert!(!s.contains("vllm serve"), "filtered out: {s}");
    t.keys(&["Escape"]);

    // space: pause; the clock stops while samples go on.
    t.keys(&["Space"]);
    let s = t.wait_for("PAUSED", Duration::from_secs(3));
    sleep(Duration::from_millis(2200));
    let s2 = t.screen();
    // The header's clock (left of the pause mark) stays on its moment.
    let clock = |s: &str| {
        s.lines()
            .next()
            .unwrap_or("")
            .split('❚')
            .next()
            .unwrap_or("")
            .to_owned()
    };
    assert_eq!(clock(&s), clock(&s2), "paused header moved");
    assert_ne!(
        s2.lines().next(),
        s.lines().next(),
        "the time behind now grows"
    );
    t.keys(&["Space"]);

    // q: back to the shell with the terminal as it was.
    t.keys(&["q"]);
    let s = t.wait_for("\nexit=0", Duration::from_secs(5));
    assert!(!s.contains("GPU MEM"), "left the alternate screen: {s}");
    let after = t.stty("after");
    assert_eq!(before, after, "terminal modes restored");
}

#[test]
fn ctrl_c_and_sigterm_restore_the_terminal() {
    if !common::tool_available("tmux") {
        return;
    }
    let t = Tmux::start(80, 24);
    let before = t.stty("before");

    start_dashboard(&t, "");
    t.keys(&["C-c"]);
    t.wait_for("\nexit=0", Duration::from_secs(5));
    assert_eq!(before, t.stty("after-ctrl-c"));

    t.type_line("clear");
    start_dashboard(&t, "--read-only");
    let pid_file = t.path("pid");
    // Find the dashboard's PID from outside and send SIGTERM.
    let pgrep = Command::new("pgrep")
        .args(["-n", "-f", &format!("{BIN} --demo --read-only")])
        .output();
    let pid = pgrep
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    assert!(!pid.is_empty(), "dashboard pid not found");
    std::fs::write(&pid_file, &pid).expect("write pid");
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    let s = t.wait_for("\nexit=", Duration::from_secs(5));
    assert!(s.contains("\nexit=0"), "{s}");
    assert_eq!(before, t.stty("after-term"));
}

/// The bytes the dashboard wrote, read raw from the pane (`pipe-pane`):
/// the first frame already has figures, not a skeleton saying "no
/// readings" that the next frame repaints whole.
#[test]
fn the_first_frame_has_figures() {
    if !common::tool_available("tmux") {
        return;
    }
    let t = Tmux::start(120, 40);
    let raw = t.path("raw");
    t.run(&[
        "pipe-pane",
        "-t",
        "t",
        "-o",
        &format!("cat >> {}", raw.display()),
    ]);
    start_dashboard(&t, "");
    t.keys(&["q"]);
    t.wait_for("\nexit=0", Duration::from_secs(5));
    let bytes = std::fs::read(&raw).expect("the pane's output");
    let text = String::from_utf8_lossy(&bytes);
    // Frames are not delimited in the stream: what can be checked is that
    // the card's "no readings" text (`ui::gpu_card`), which only a frame
    // drawn before any snapshot shows, was never written.
    assert!(
        text.contains("GPU MEM") && text.contains("vllm"),
        "{text:?}"
    );
    assert!(!text.contains("not yet sampled"), "a skeleton was painted");
}

#[test]
fn small_and_large_terminals_render() {
    if !common::tool_available("tmux") {
        return;
    }
    for (w, h, needle) in [
        (80u16, 24u16, "GPU MEM"),
        (200, 60, "unaccounted"),
        (45, 10, "enlarge"),
    ] {
        let t = Tmux::start(w, h);
        t.type_line(&format!("{BIN} --demo; echo exit=$?"));
        let s = t.wait_for(needle, Duration::from_secs(10));
        assert!(s.lines().all(|l| l.chars().count() <= w as usize), "{s}");
        t.keys(&["q"]);
        t.wait_for("\nexit=0", Duration::from_secs(5));
    }
}

/// How many of the screen's SGR sequences set a foreground or background
/// colour (30–38, 40–48, 90–97, 100–107); resets (39, 49) do not count.
fn colour_sequences(styled: &str) -> usize {
    styled
        .split('\x1b')
        .filter_map(|seq| seq.strip_prefix('[')?.split_once('m').map(|(p, _)| p))
        .filter(|params| {
            params.split(';').any(|p| {
                matches!(
                    p.parse::<u16>(),
                    Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)
                )
            })
        })
        .count()
}

/// `NO_COLOR` turns colour off under `auto`, and an explicit `--color`
/// beats it (no-color.org: flags and configuration override it). crossterm
/// drops every colour by itself when `NO_COLOR` is set, so without
/// `tui`'s override the second half fails.
#[test]
fn no_color_is_honoured_and_an_explicit_depth_beats_it() {
    if !common::tool_available("tmux") {
        return;
    }
    let t = Tmux::start(120, 40);
    t.type_line(&format!("NO_COLOR=1 {BIN} --demo; echo exit=$?"));
    t.wait_for("GPU MEM", Duration::from_secs(10));
    sleep(Duration::from_millis(500));
    let plain = t.styled_screen();
    t.keys(&["q"]);
    t.wait_for("\nexit=0", Duration::from_secs(5));
    assert_eq!(colour_sequences(&plain), 0, "{plain:?}");

    let t = Tmux::start(120, 40);
    t.type_line(&format!(
        "NO_COLOR=1 {BIN} --demo --color 256; echo exit=$?"
    ));
    t.wait_for("GPU MEM", Duration::from_secs(10));
    sleep(Duration::from_millis(500));
    let coloured = t.styled_screen();
    t.keys(&["q"]);
    t.wait_for("\nexit=0", Duration::from_secs(5));
    assert!(colour_sequences(&coloured) > 20, "{coloured:?}");
}

#[test]
fn not_a_terminal_is_a_clear_error() {
    let out = Command::new(BIN).arg("--demo").output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a terminal") && err.contains("vramwatch snapshot"),
        "{err}"
    );
}

#[test]
fn replaying_the_h200_recording_steps_to_an_event() {
    if !common::tool_available("tmux") {
        return;
    }
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/h200-2gpu-10min.jsonl.zst"
    );
    let t = Tmux::start(120, 40);
    t.type_line(&format!("{BIN} replay {file}; echo exit=$?"));
    let s = t.wait_for("1/600", Duration::from_secs(10));
    assert!(s.contains("NVIDIA H200") && s.contains("580.159.04"), "{s}");
    // The events pane and the jumps between events.
    t.keys(&["e"]);
    t.wait_for("events", Duration::from_secs(3));
    // `]` says on the bottom line which event it landed on: jump until
    // that is the first leak alert.
    let head = |s: &str| s.lines().next().unwrap_or("").to_owned();
    let mut s = t.screen();
    for _ in 0..12 {
        let before = head(&s);
        t.keys(&["]"]);
        // The playhead moved: the header's position changed.
        let start = Instant::now();
        loop {
            s = t.screen();
            if head(&s) != before || start.elapsed() > Duration::from_secs(3) {
                break;
            }
            sleep(Duration::from_millis(50));
        }
        s = t.wait_for("\n event ", Duration::from_secs(3));
        if s.lines().last().is_some_and(|l| l.contains("leaking")) {
            break;
        }
    }
    assert!(
        s.lines()
            .last()
            .is_some_and(|l| l.starts_with(" event ") && l.contains("leaking")),
        "{s}"
    );
    let header = s.lines().next().unwrap_or("").to_owned();
    assert!(
        !header.contains(" 1/600"),
        "moved along the timeline: {header}"
    );
    // The leaking process is in the table, marked.
    assert!(s.contains("LEAK"), "{s}");
    t.keys(&["End"]);
    t.wait_for("600/600", Duration::from_secs(5));
    t.keys(&["q"]);
    t.wait_for("\nexit=0", Duration::from_secs(5));
}

#[test]
fn the_keys_a_new_user_tries_on_a_replay() {
    if !common::tool_available("tmux") {
        return;
    }
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/h200-2gpu-10min.jsonl.zst"
    );
    let t = Tmux::start(120, 40);
    t.type_line(&format!("{BIN} replay {file}; echo exit=$?"));
    t.wait_for("1/600", Duration::from_secs(10));
    t.keys(&["End"]);
    t.wait_for("600/600", Duration::from_secs(5));
    // The workers are told apart by their pipe handles.
    let s = t.wait_for("pipe_handle=", Duration::from_secs(3));
    assert!(s.contains("mem") && s.contains("util"), "{s}");
    // Shift-→ scrolls the command column; ← → still step in time.
    t.keys(&["S-Right"]);
    t.wait_for("COMMAND ◂8", Duration::from_secs(3));
    t.keys(&["S-Left"]);
    // u: one user's processes.
    t.keys(&["u"]);
    t.wait_for("root's processes", Duration::from_secs(3));
    t.keys(&["Escape"]);
    // t: says why there is no tree.
    t.keys(&["t"]);
    t.wait_for("parent PIDs", Duration::from_secs(3));
    // The events pane: select the oldest event and go there.
    t.keys(&["e", "G", "Enter"]);
    let s = t.wait_for("at 18:10", Duration::from_secs(5));
    assert!(!s.contains("600/600"), "the playhead moved: {s}");
    t.keys(&["q"]);
    t.wait_for("\nexit=0", Duration::from_secs(5));
}
