//! Reading a TOML file into a validated [`Config`].
//!
//! Three steps: the TOML is parsed (syntax errors), deserialized into the
//! spanned structs of `raw.rs` (unknown keys, wrong types: `shape.rs`
//! explains them), then checked value by value in `check.rs` (units,
//! ranges, warn < crit, key conflicts). Every problem is collected, not
//! only the first. Every message names the file, line, column
//! and key, and says what would be valid:
//!
//! ```text
//! config.toml:12:15: [thresholds] memory_warn = 120: must be between 0 and 100
//! ```
//!
//! What a file can make it do is bounded: a file over [`MAX_BYTES`] is
//! refused before it is parsed, a file that is not UTF-8 is refused at its
//! first bad byte, integers too large for 64 bits are read as the largest
//! (their key's range then refuses them), what is echoed of a key or value
//! is cut to [`ECHO_CHARS`] characters, and at most [`MAX_PROBLEMS`]
//! problems are reported.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::Config;
use super::raw::RawConfig;
use super::{check, shape};

/// The documented default configuration, embedded.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

/// The config schema version this build reads (`version = 1`).
pub const SCHEMA_VERSION: i64 = 1;

/// The largest config file read: 1 MiB (the documented default is 8 KiB).
pub(crate) const MAX_BYTES: usize = 1 << 20;

/// Problems reported for one file at most; then a line says there are more.
pub(crate) const MAX_PROBLEMS: usize = 20;

/// Keys and values are echoed in messages up to this many characters.
pub(crate) const ECHO_CHARS: usize = 64;

/// How deep the tables are searched for long keys and huge integers
/// (deeper ones are refused by the deserializer anyway).
const MAX_DEPTH: usize = 64;

/// Line and column (both from 1, columns in characters) in a config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `text`.
    pub fn of(text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// One thing wrong with a config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where, when known.
    pub at: Option<Position>,
    /// What, starting with the key: `[thresholds] memory_warn = 120: must be between 0 and 100`.
    pub message: String,
}

/// A config that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// An explicitly named file does not exist.
    #[error("{path}: no such config file (`vramwatch config init {path}` writes one)")]
    NotFound { path: String },
    /// The file exists but cannot be read (permissions, a directory, ...).
    /// (A file too large or not UTF-8 is [`ConfigError::Invalid`], with
    /// where.)
    #[error("{path}: cannot read the config file: {cause}")]
    Read { path: String, cause: std::io::Error },
    /// The file was read; these are the problems, in file order.
    #[error("{}", render(path, problems))]
    Invalid {
        path: String,
        problems: Vec<Problem>,
    },
}

fn render(path: &str, problems: &[Problem]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| match p.at {
            Some(at) => format!("{path}:{}:{}: {}", at.line, at.column, p.message),
            None => format!("{path}: {}", p.message),
        })
        .collect();
    lines.join("\n")
}

/// The platform config file: `$XDG_CONFIG_HOME/vramwatch/config.toml` on Linux.
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "vramwatch").map(|d| d.config_dir().join("config.toml"))
}

/// The file [`load`] reads: `path` when given, else the platform file if it
/// exists; `None` means the defaults are used.
pub fn resolve(path: Option<&Path>) -> Option<PathBuf> {
    match path {
        Some(p) => Some(p.to_path_buf()),
        None => default_path().filter(|p| p.is_file()),
    }
}

/// Loads `path` (which must exist), or the platform file when it exists,
/// or the defaults.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
    match resolve(path) {
        Some(p) => load_file(&p),
        None => Ok(Config::default()),
    }
}

/// Loads and validates one file.
pub fn load_file(path: &Path) -> Result<Config, ConfigError> {
    use std::io::Read;
    let name = path.display().to_string();
    let failed = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ConfigError::NotFound { path: name.clone() },
        _ => ConfigError::Read {
            path: name.clone(),
            cause: e,
        },
    };
    let file = std::fs::File::open(path).map_err(failed)?;
    // Read one byte past the limit, whatever the file says its size is (a
    // FIFO or /dev/zero says 0).
    let size = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let mut bytes = Vec::new();
    file.take(MAX_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    parse_bytes(&bytes, size, &name)
}

/// Checks the size and the encoding of a file's bytes (`size`: what the
/// file system says, when it is a regular file), then parses them.
fn parse_bytes(bytes: &[u8], size: Option<u64>, name: &str) -> Result<Config, ConfigError> {
    let invalid = |at, message| ConfigError::Invalid {
        path: name.to_owned(),
        problems: vec![Problem { at, message }],
    };
    if bytes.len() > MAX_BYTES {
        return Err(invalid(None, too_big(size)));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text, name),
        Err(e) => {
            let good = e.valid_up_to();
            let before = std::str::from_utf8(&bytes[..good]).unwrap_or_default();
            let at = Position::of(before, good);
            let message = format!(
                "not UTF-8 text: the byte at offset {good} (0x{:02x}) is not valid UTF-8; save the file as UTF-8",
                bytes[good]
            );
            Err(invalid(Some(at), message))
        }
    }
}

/// The message for a file over [`MAX_BYTES`] (`size`: what the file
/// system says, when it knows).
fn too_big(size: Option<u64>) -> String {
    let size = match size {
        Some(n) if n > MAX_BYTES as u64 => format!("{n} bytes"),
        _ => "larger than 1 MiB".to_owned(),
    };
    format!("the file is {size}; a config file is at most 1 MiB ({MAX_BYTES} bytes)")
}

/// Parses and validates config text; `name` is used in messages.
pub fn parse(text: &str, name: &str) -> Result<Config, ConfigError> {
    let invalid = |problems| ConfigError::Invalid {
        path: name.to_owned(),
        problems,
    };
    if text.len() > MAX_BYTES {
        let too_big = too_big(Some(text.len() as u64));
        return Err(invalid(vec![Problem {
            at: None,
            message: too_big,
        }]));
    }
    let tree = match DeTable::parse(text) {
        Ok(t) => t,
        Err(e) => {
            let at = e.span().map(|s| Position::of(text, s.start));
            let mut message = format!(
                "TOML syntax error: {}",
                e.message().trim().replace('\n', "; ")
            );
            if let Some(s) = e.span().filter(|_| e.message() == "duplicate key") {
                message.push_str(&format!(" `{}`", echo(text.get(s).unwrap_or_default())));
            }
            return Err(invalid(vec![Problem { at, message }]));
        }
    };
    let mut tree = tree;
    tame(tree.get_mut(), 0);
    // Shape errors stop serde at the first; drop the offending key and go
    // again, so one run reports them all (bounded: each pass removes a
    // key, and past MAX_PROBLEMS the rest are not looked for).
    let mut problems: Vec<Found> = Vec::new();
    let mut refused = Vec::new();
    let raw = loop {
        match RawConfig::deserialize(toml::de::Deserializer::from(tree.clone())) {
            Ok(raw) => break raw,
            Err(e) => {
                let (at, message, path) = shape::problem(text, tree.get_ref(), &e);
                problems.push((at.map(|a| a..a), message));
                refused.push(shape::label(&path));
                if path.is_empty()
                    || problems.len() > MAX_PROBLEMS
                    || !remove(tree.get_mut(), &path)
                {
                    return Err(invalid(finish(text, problems)));
                }
            }
        }
    };
    let (config, problems) = check::config(text, raw, problems, refused);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(invalid(finish(text, problems)))
    }
}

/// A problem before it is placed: the byte span it is about, and the message.
pub(super) type Found = (Option<Range<usize>>, String);

/// Problems in file order, with positions: the first [`MAX_PROBLEMS`],
/// then a line saying there are more.
fn finish(text: &str, mut problems: Vec<Found>) -> Vec<Problem> {
    problems.sort_by_key(|(span, _)| span.as_ref().map(|s| s.start));
    let more = problems.len().saturating_sub(MAX_PROBLEMS);
    let mut out: Vec<Problem> = problems
        .into_iter()
        .take(MAX_PROBLEMS)
        .map(|(span, message)| Problem {
            at: span.map(|s| Position::of(text, s.start)),
            message: cap_quoted(&message),
        })
        .collect();
    if more > 0 {
        out.push(Problem {
            at: None,
            message: format!(
                "more problems than the {MAX_PROBLEMS} above (not listed); fix these and check again"
            ),
        });
    }
    out
}

/// Makes the tree safe to deserialize and to quote: an integer too large
/// (or small) for 64 bits becomes the largest (smallest), which its key's
/// range then refuses while the message echoes it as written (serde would
/// say "expected a number, found an integer"); a key longer than
/// [`ECHO_CHARS`] (none is valid) is renamed to its first characters, so
/// messages that name it stay short.
fn tame(table: &mut DeTable<'_>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if table
        .keys()
        .any(|k| k.get_ref().chars().nth(ECHO_CHARS).is_some())
    {
        let all = std::mem::take(table);
        for (k, v) in all {
            let k = if k.get_ref().chars().nth(ECHO_CHARS).is_some() {
                Spanned::new(k.span(), std::borrow::Cow::Owned(cap(k.get_ref())))
            } else {
                k
            };
            table.insert(k, v);
        }
    }
    for (_, v) in table.iter_mut() {
        tame_value(v.get_mut(), depth + 1);
    }
}

fn tame_value(value: &mut DeValue<'_>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let clamped = match value {
        DeValue::Integer(i) if i64::from_str_radix(i.as_str(), i.radix()).is_err() => {
            if i.as_str().starts_with('-') {
                "-9223372036854775808"
            } else {
                "9223372036854775807"
            }
        }
        DeValue::Float(f) if huge_number(f.as_str()).is_some() => {
            if f.as_str().starts_with('-') {
                "-1.7976931348623157e308"
            } else {
                "1.7976931348623157e308"
            }
        }
        DeValue::Array(items) => {
            for item in items.iter_mut() {
                tame_value(item.get_mut(), depth + 1);
            }
            return;
        }
        DeValue::Table(t) => return tame(t, depth + 1),
        _ => return,
    };
    if let Ok(v) = DeValue::parse(clamped) {
        *value = v.into_inner();
    }
}

/// Whether a number as written is too large to hold: an integer outside
/// 64 bits, or a float beyond the largest (`inf` is written so). `Some(true)`
/// above, `Some(false)` below, `None` when it fits or is not a number.
pub(super) fn huge_number(src: &str) -> Option<bool> {
    let t: String = src.trim().chars().filter(|c| *c != '_').collect();
    if let Some(huge) = huge_integer(&t) {
        return Some(huge);
    }
    if t.contains("inf") || t.contains("nan") {
        return None;
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_infinite() => Some(v > 0.0),
        _ => None,
    }
}

/// [`huge_number`] for integers (without `_`).
fn huge_integer(t: &str) -> Option<bool> {
    let (negative, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (radix, digits) = match digits.get(..2) {
        Some("0x") => (16, &digits[2..]),
        Some("0o") => (8, &digits[2..]),
        Some("0b") => (2, &digits[2..]),
        _ => (10, digits),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let signed = if negative {
        format!("-{digits}")
    } else {
        digits.to_owned()
    };
    match i64::from_str_radix(&signed, radix) {
        Ok(_) => None,
        Err(_) => Some(!negative),
    }
}

/// `s` cut to [`ECHO_CHARS`] characters, ending in "…" when cut.
pub(super) fn cap(s: &str) -> String {
    if s.chars().nth(ECHO_CHARS).is_none() {
        return s.to_owned();
    }
    let mut cut: String = s.chars().take(ECHO_CHARS - 1).collect();
    cut.push('\u{2026}');
    cut
}

/// A message with every `quoted` part cut to [`ECHO_CHARS`] characters:
/// the last guard against a long key, value or unit quoted whole.
fn cap_quoted(message: &str) -> String {
    let parts: Vec<&str> = message.split('`').collect();
    if parts.len() < 3 || parts.iter().all(|p| p.chars().nth(ECHO_CHARS).is_none()) {
        return message.to_owned();
    }
    let last = parts.len() - 1;
    parts
        .iter()
        .enumerate()
        // Odd parts are quoted (between a pair of backticks).
        .map(|(i, p)| {
            if i % 2 == 1 && i < last {
                cap(p)
            } else {
                (*p).to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// Removes the key at `path` (names from the top) from `table`.
fn remove(table: &mut DeTable<'_>, path: &[String]) -> bool {
    match path {
        [] => false,
        [last] => table.remove(last.as_str()).is_some(),
        [first, rest @ ..] => match table.get_mut(first.as_str()).map(Spanned::get_mut) {
            Some(DeValue::Table(t)) => remove(t, rest),
            _ => false,
        },
    }
}

/// A value as written, on one line and cut to [`ECHO_CHARS`] characters.
pub(super) fn echo(src: &str) -> String {
    let mut one_line = String::new();
    for word in src.split_whitespace() {
        if !one_line.is_empty() {
            one_line.push(' ');
        }
        one_line.push_str(word);
        if one_line.len() > 4 * ECHO_CHARS {
            break;
        }
    }
    cap(&one_line)
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod limits_tests;
