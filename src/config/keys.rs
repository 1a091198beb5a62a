//! Key bindings: actions, their default keys, and the key syntax used in
//! `[keys]` (`q`, `ctrl-c`, `shift-tab`, `f9`, `enter`, `space`, `pgdn`, ...).
//! The help screen is generated from the same table.

use std::collections::BTreeMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Everything a key can do in the dashboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Quit,
    Help,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    First,
    Last,
    Enter,
    Back,
    Filter,
    SortNext,
    SortPrev,
    SortNextColumn,
    InvertSort,
    Pause,
    StepBack,
    StepForward,
    PrevEvent,
    NextEvent,
    Faster,
    Slower,
    Record,
    Terminate,
    Kill,
    NextPane,
    Events,
    Suspend,
}

impl Action {
    pub const ALL: [Action; 30] = [
        Action::Quit,
        Action::Help,
        Action::Up,
        Action::Down,
        Action::PageUp,
        Action::PageDown,
        Action::Home,
        Action::End,
        Action::First,
        Action::Last,
        Action::Enter,
        Action::Back,
        Action::Filter,
        Action::SortNext,
        Action::SortPrev,
        Action::SortNextColumn,
        Action::InvertSort,
        Action::Pause,
        Action::StepBack,
        Action::StepForward,
        Action::PrevEvent,
        Action::NextEvent,
        Action::Faster,
        Action::Slower,
        Action::Record,
        Action::Terminate,
        Action::Kill,
        Action::NextPane,
        Action::Events,
        Action::Suspend,
    ];

    /// The name used in `[keys]`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Help => "help",
            Action::Up => "up",
            Action::Down => "down",
            Action::PageUp => "page_up",
            Action::PageDown => "page_down",
            Action::Home => "home",
            Action::End => "end",
            Action::First => "first",
            Action::Last => "last",
            Action::Enter => "open",
            Action::Back => "back",
            Action::Filter => "filter",
            Action::SortNext => "sort_select",
            Action::SortPrev => "sort_left",
            Action::SortNextColumn => "sort_right",
            Action::InvertSort => "sort_invert",
            Action::Pause => "pause",
            Action::StepBack => "step_back",
            Action::StepForward => "step_forward",
            Action::PrevEvent => "prev_event",
            Action::NextEvent => "next_event",
            Action::Faster => "faster",
            Action::Slower => "slower",
            Action::Record => "record",
            Action::Terminate => "terminate",
            Action::Kill => "kill",
            Action::NextPane => "next_pane",
            Action::Events => "events",
            Action::Suspend => "suspend",
        }
    }

    pub fn from_name(s: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == s)
    }

    /// One line for the help screen.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Help => "this help",
            Action::Up => "select up",
            Action::Down => "select down",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Home => "first row (replay: start of recording)",
            Action::End => "last row (replay: end of recording)",
            Action::First => "first row",
            Action::Last => "last row",
            Action::Enter => "open process (or GPU) view",
            Action::Back => "back / clear filter / close dialog",
            Action::Filter => "filter processes (command, user, container, PID)",
            Action::SortNext => "next sort column",
            Action::SortPrev => "sort by the column to the left",
            Action::SortNextColumn => "sort by the column to the right",
            Action::InvertSort => "invert sort order",
            Action::Pause => "pause / resume (play / pause in replay)",
            Action::StepBack => "step back in time (paused or replay)",
            Action::StepForward => "step forward in time (paused or replay)",
            Action::PrevEvent => "jump to previous event",
            Action::NextEvent => "jump to next event",
            Action::Faster => "replay faster",
            Action::Slower => "replay slower",
            Action::Record => "start / stop recording",
            Action::Terminate => "terminate process (SIGTERM)",
            Action::Kill => "kill process (SIGKILL)",
            Action::NextPane => "switch focus GPUs / processes",
            Action::Events => "events pane: open / go to it; in it, close",
            Action::Suspend => "suspend to the shell (fg to return)",
        }
    }

    /// The default keys, htop/nvtop habits.
    pub fn default_keys(self) -> &'static [&'static str] {
        match self {
            Action::Quit => &["q", "ctrl-c"],
            Action::Help => &["?", "f1"],
            Action::Up => &["up", "k"],
            Action::Down => &["down", "j"],
            Action::PageUp => &["pgup", "ctrl-b"],
            Action::PageDown => &["pgdn", "ctrl-f"],
            Action::Home => &["home"],
            Action::End => &["end"],
            Action::First => &["g"],
            Action::Last => &["G"],
            Action::Enter => &["enter", "l"],
            Action::Back => &["esc", "h", "backspace"],
            Action::Filter => &["/", "f3"],
            Action::SortNext => &["s", "f6"],
            Action::SortPrev => &["<"],
            Action::SortNextColumn => &[">"],
            Action::InvertSort => &["I"],
            Action::Pause => &["space"],
            Action::StepBack => &["left"],
            Action::StepForward => &["right"],
            Action::PrevEvent => &["["],
            Action::NextEvent => &["]"],
            Action::Faster => &["+", "="],
            Action::Slower => &["-"],
            Action::Record => &["r"],
            Action::Terminate => &["T", "f9"],
            Action::Kill => &["K"],
            Action::NextPane => &["tab"],
            Action::Events => &["e"],
            Action::Suspend => &["ctrl-z"],
        }
    }
}

/// A key as written in the config: a code and modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyName,
    pub ctrl: bool,
    pub alt: bool,
}

/// The keys we can bind (a subset of crossterm's `KeyCode`, orderable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyName {
    Char(char),
    F(u8),
    Enter,
    Esc,
    Backspace,
    Tab,
    BackTab,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
    Delete,
    Insert,
}

/// Why a key spec could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{spec}` is not a key: {why}")]
pub struct KeyError {
    pub spec: String,
    pub why: &'static str,
}

const KEY_HELP: &str = "use a character (q, K, /), space, enter, esc, tab, backspace, up, down, left, right, home, end, pgup, pgdn, del, ins, f1..f12, with ctrl- or alt- in front if needed";

/// Parses `q`, `K`, `ctrl-c`, `alt-x`, `f9`, `space`, `pgdn`, `shift-tab`.
pub fn parse_key(spec: &str) -> Result<Key, KeyError> {
    let err = |why| KeyError {
        spec: spec.to_owned(),
        why,
    };
    let mut ctrl = false;
    let mut alt = false;
    let mut rest = spec;
    loop {
        let lower = rest.to_ascii_lowercase();
        if rest.len() > 1 && lower.starts_with("ctrl-") {
            ctrl = true;
            rest = &rest[5..];
        } else if rest.len() > 1 && lower.starts_with("alt-") {
            alt = true;
            rest = &rest[4..];
        } else {
            break;
        }
    }
    let lower = rest.to_ascii_lowercase();
    let code = match lower.as_str() {
        "" => return Err(err("it is empty")),
        "space" => KeyName::Char(' '),
        "enter" | "return" => KeyName::Enter,
        "esc" | "escape" => KeyName::Esc,
        "backspace" => KeyName::Backspace,
        "tab" => KeyName::Tab,
        "shift-tab" | "backtab" => KeyName::BackTab,
        "up" => KeyName::Up,
        "down" => KeyName::Down,
        "left" => KeyName::Left,
        "right" => KeyName::Right,
        "home" => KeyName::Home,
        "end" => KeyName::End,
        "pgup" | "pageup" => KeyName::PageUp,
        "pgdn" | "pagedown" => KeyName::PageDown,
        "del" | "delete" => KeyName::Delete,
        "ins" | "insert" => KeyName::Insert,
        f if f.starts_with('f') && f.len() > 1 && f[1..].bytes().all(|b| b.is_ascii_digit()) => {
            match f[1..].parse::<u8>() {
                Ok(n @ 1..=12) => KeyName::F(n),
                _ => return Err(err("function keys go from f1 to f12")),
            }
        }
        _ => {
            let mut chars = rest.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if !c.is_control() => {
                    // ctrl-C and ctrl-c are the same key to a terminal.
                    KeyName::Char(if ctrl { c.to_ascii_lowercase() } else { c })
                }
                _ => return Err(err(KEY_HELP)),
            }
        }
    };
    Ok(Key { code, ctrl, alt })
}

impl Key {
    /// The key a terminal event stands for (Shift is folded into the
    /// character: `K` is shift-k).
    pub fn from_event(ev: &KeyEvent) -> Option<Key> {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let alt = ev.modifiers.contains(KeyModifiers::ALT);
        let code = match ev.code {
            KeyCode::Char(c) => KeyName::Char(if ctrl { c.to_ascii_lowercase() } else { c }),
            KeyCode::F(n) => KeyName::F(n),
            KeyCode::Enter => KeyName::Enter,
            KeyCode::Esc => KeyName::Esc,
            KeyCode::Backspace => KeyName::Backspace,
            KeyCode::Tab => KeyName::Tab,
            KeyCode::BackTab => KeyName::BackTab,
            KeyCode::Up => KeyName::Up,
            KeyCode::Down => KeyName::Down,
            KeyCode::Left => KeyName::Left,
            KeyCode::Right => KeyName::Right,
            KeyCode::Home => KeyName::Home,
            KeyCode::End => KeyName::End,
            KeyCode::PageUp => KeyName::PageUp,
            KeyCode::PageDown => KeyName::PageDown,
            KeyCode::Delete => KeyName::Delete,
            KeyCode::Insert => KeyName::Insert,
            _ => return None,
        };
        Some(Key { code, ctrl, alt })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("Ctrl-")?;
        }
        if self.alt {
            f.write_str("Alt-")?;
        }
        match self.code {
            KeyName::Char(' ') => f.write_str("Space"),
            KeyName::Char(c) => write!(f, "{c}"),
            KeyName::F(n) => write!(f, "F{n}"),
            KeyName::Enter => f.write_str("Enter"),
            KeyName::Esc => f.write_str("Esc"),
            KeyName::Backspace => f.write_str("Backspace"),
            KeyName::Tab => f.write_str("Tab"),
            KeyName::BackTab => f.write_str("Shift-Tab"),
            KeyName::Up => f.write_str("↑"),
            KeyName::Down => f.write_str("↓"),
            KeyName::Left => f.write_str("←"),
            KeyName::Right => f.write_str("→"),
            KeyName::Home => f.write_str("Home"),
            KeyName::End => f.write_str("End"),
            KeyName::PageUp => f.write_str("PgUp"),
            KeyName::PageDown => f.write_str("PgDn"),
            KeyName::Delete => f.write_str("Del"),
            KeyName::Insert => f.write_str("Ins"),
        }
    }
}

/// Action → keys, and the reverse lookup.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyMap {
    by_action: BTreeMap<Action, Vec<Key>>,
}

impl Default for KeyMap {
    fn default() -> Self {
        let by_action = Action::ALL
            .into_iter()
            .map(|a| {
                let keys = a
                    .default_keys()
                    .iter()
                    .filter_map(|s| parse_key(s).ok())
                    .collect();
                (a, keys)
            })
            .collect();
        KeyMap { by_action }
    }
}

impl KeyMap {
    /// Replaces the keys of `action`.
    pub fn bind(&mut self, action: Action, keys: Vec<Key>) {
        self.by_action.insert(action, keys);
    }

    pub fn keys(&self, action: Action) -> &[Key] {
        self.by_action.get(&action).map_or(&[], Vec::as_slice)
    }

    /// The action a key event triggers, if any.
    pub fn action(&self, ev: &KeyEvent) -> Option<Action> {
        let key = Key::from_event(ev)?;
        self.by_action
            .iter()
            .find(|(_, keys)| keys.contains(&key))
            .map(|(a, _)| *a)
    }

    /// A key bound to two actions: `(key, first, second)`.
    pub fn conflict(&self) -> Option<(Key, Action, Action)> {
        let mut seen: BTreeMap<Key, Action> = BTreeMap::new();
        for (a, keys) in &self.by_action {
            for k in keys {
                if let Some(prev) = seen.insert(*k, *a)
                    && prev != *a
                {
                    return Some((*k, prev, *a));
                }
            }
        }
        None
    }

    /// "q, Ctrl-c" for the help screen and the footer.
    pub fn label(&self, action: Action) -> String {
        self.keys(action)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn specs_parse() {
        assert_eq!(parse_key("q").unwrap().code, KeyName::Char('q'));
        assert_eq!(parse_key("K").unwrap().code, KeyName::Char('K'));
        let c = parse_key("ctrl-c").unwrap();
        assert!(c.ctrl && c.code == KeyName::Char('c'));
        assert_eq!(parse_key("Ctrl-C").unwrap(), c);
        assert_eq!(parse_key("f9").unwrap().code, KeyName::F(9));
        assert_eq!(parse_key("space").unwrap().code, KeyName::Char(' '));
        assert_eq!(parse_key("-").unwrap().code, KeyName::Char('-'));
        assert_eq!(parse_key("shift-tab").unwrap().code, KeyName::BackTab);
    }

    #[test]
    fn bad_specs_say_why() {
        assert!(parse_key("").unwrap_err().why.contains("empty"));
        assert!(parse_key("f13").unwrap_err().why.contains("f1 to f12"));
        let e = parse_key("banana").unwrap_err().to_string();
        assert!(e.contains("`banana`") && e.contains("ctrl-"), "{e}");
    }

    #[test]
    fn defaults_have_no_conflicts_and_cover_every_action() {
        let m = KeyMap::default();
        assert_eq!(m.conflict(), None);
        for a in Action::ALL {
            assert!(!m.keys(a).is_empty(), "{a:?} has no key");
            assert_eq!(Action::from_name(a.name()), Some(a));
        }
    }

    #[test]
    fn events_map_to_actions() {
        let m = KeyMap::default();
        assert_eq!(
            m.action(&ev(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            m.action(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            m.action(&ev(KeyCode::Char('K'), KeyModifiers::SHIFT)),
            Some(Action::Kill)
        );
        assert_eq!(
            m.action(&ev(KeyCode::Char('k'), KeyModifiers::NONE)),
            Some(Action::Up)
        );
        assert_eq!(
            m.action(&ev(KeyCode::F(9), KeyModifiers::NONE)),
            Some(Action::Terminate)
        );
        assert_eq!(m.action(&ev(KeyCode::Char('x'), KeyModifiers::NONE)), None);
    }

    #[test]
    fn rebinding_replaces_and_conflicts_are_found() {
        let mut m = KeyMap::default();
        m.bind(Action::Quit, vec![parse_key("x").unwrap()]);
        assert_eq!(
            m.action(&ev(KeyCode::Char('x'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(m.action(&ev(KeyCode::Char('q'), KeyModifiers::NONE)), None);
        m.bind(Action::Help, vec![parse_key("x").unwrap()]);
        assert!(m.conflict().is_some());
        assert_eq!(m.label(Action::Quit), "x");
    }
}
