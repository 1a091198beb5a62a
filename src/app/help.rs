//! The help screen's text: every key, generated from the key map, and what
//! the marks on screen mean. `ui::help` draws it; `update` scrolls it.

use crate::config::keys::{Action, KeyMap};

/// One line per action: keys, then what it does.
pub(crate) fn key_lines(keys: &KeyMap) -> Vec<(String, &'static str)> {
    Action::ALL
        .iter()
        .map(|a| (keys.label(*a), a.describe()))
        .collect()
}

/// Keys and gestures outside the key map (a key here does nothing when
/// `[keys]` binds it to an action).
pub(crate) const FIXED: [(&str, &str); 5] = [
    ("Shift-← →", "scroll the command column (← → step in time)"),
    ("u", "one user's processes; again: the next user, then all"),
    (
        "/ gpu:1",
        "in the filter: only GPU 1 (also gpu:0,2 and user:NAME)",
    ),
    (
        "click",
        "select a process or event; a header sorts, a GPU filters",
    ),
    ("wheel", "scroll the table or the events pane"),
];

/// Symbols and what they mean.
pub(crate) const LEGEND: [(&str, &str); 15] = [
    ("█ ▒ ░", "memory used, reserved by the driver, free"),
    ("┃", "highest memory seen since start (fast lane included)"),
    (
        "▲ ‼",
        "over the warn / critical threshold (also shown in colour)",
    ),
    (
        "▲12M/s ▼ ─",
        "growing, shrinking, flat; LEAK = growth sustained",
    ),
    (
        "∿ swings",
        "up and down; sorted by its highest of the last 5 s",
    ),
    (
        "warming up",
        "too few samples since a start or a jump (about 10 s)",
    ),
    ("dim", "another user's process; italic = exited"),
    ("unaccounted", "device memory no listed process holds"),
    (
        "full in ~1m",
        "when memory runs out at this growth (and its range)",
    ),
    (
        "levels ~124G",
        "growth slowing down: a fill expected to level off there",
    ),
    (
        "at risk",
        "peaks at the top: the next larger allocation may fail",
    ),
    ("mem sparkline", "highest memory in each 5-sample bucket"),
    ("N/A", "the GPU does not report this figure"),
    ("⚠ 3", "alerts raised so far (to the moment shown)"),
    ("›", "an event after the moment shown (paused, replay)"),
];

/// Lines of help text (for scrolling).
pub(crate) fn line_count(keys: &KeyMap) -> usize {
    key_lines(keys).len() + FIXED.len() + 1 + LEGEND.len()
}

/// Lines of `total` the help box shows in a terminal `height` rows tall:
/// as many as fit inside its border.
pub(crate) fn shown_lines(total: usize, height: u16) -> u16 {
    let total = total.min(u16::MAX as usize - 2) as u16;
    (total + 2).min(height).saturating_sub(2)
}

/// The furthest the help scrolls: its last line at the bottom of the box.
pub(crate) fn max_scroll(total: usize, height: u16) -> u16 {
    (total.min(u16::MAX as usize) as u16).saturating_sub(shown_lines(total, height))
}
