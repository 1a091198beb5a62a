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
    /// The file exists but cannot be read (permissions, not UTF-8, ...).
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
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ConfigError::NotFound { path: name.clone() },
        _ => ConfigError::Read {
            path: name.clone(),
            cause: e,
        },
    })?;
    parse(&text, &name)
}

/// Parses and validates config text; `name` is used in messages.
pub fn parse(text: &str, name: &str) -> Result<Config, ConfigError> {
    let invalid = |problems| ConfigError::Invalid {
        path: name.to_owned(),
        problems,
    };
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
    // Shape errors stop serde at the first; drop the offending key and go
    // again, so one run reports them all (bounded: each pass removes a key).
    let mut tree = tree;
    let mut problems: Vec<Found> = Vec::new();
    let mut refused = Vec::new();
    let raw = loop {
        match RawConfig::deserialize(toml::de::Deserializer::from(tree.clone())) {
            Ok(raw) => break raw,
            Err(e) => {
                let (at, message, path) = shape::problem(text, tree.get_ref(), &e);
                problems.push((at.map(|a| a..a), message));
                refused.push(shape::label(&path));
                if path.is_empty() || !remove(tree.get_mut(), &path) {
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

/// Problems in file order, with positions.
fn finish(text: &str, mut problems: Vec<Found>) -> Vec<Problem> {
    problems.sort_by_key(|(span, _)| span.as_ref().map(|s| s.start));
    problems
        .into_iter()
        .map(|(span, message)| Problem {
            at: span.map(|s| Position::of(text, s.start)),
            message,
        })
        .collect()
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

/// A value as written, shortened to one line.
pub(super) fn echo(src: &str) -> String {
    let one_line = src.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 48 {
        let cut: String = one_line.chars().take(45).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

#[cfg(test)]
mod tests;
