//! Recording snapshots to a file and reading them back: JSON Lines, plain
//! or zstd-compressed, described in docs/recording-format.md.
//!
//! - [`format`]: the line types and the columnar snapshot encoding.
//! - [`writer`]: appends snapshots with crash safety, rotation and
//!   warnings instead of failures while recording.
//! - [`reader`]: opens a recording through its index and decodes any
//!   snapshot on demand.

pub mod format;
pub mod reader;
pub mod recorder;
pub mod writer;
mod zst;

use std::path::{Path, PathBuf};

use thiserror::Error;

pub use format::{FORMAT, Header, OLDEST_VERSION, VERSION};
pub use reader::{
    Damage, MAX_BAD_RUN, MAX_LINE, ReadStats, Reader, RecordedEvent, Recording, when,
};
pub use writer::{RecordWarning, WriteOutcome, Writer, WriterOptions, WriterStats};
pub use zst::{GUARD_FLOOR, MAX_RATIO};

/// What went wrong reading or creating a recording; every message names
/// the file, and the line where there is one. Messages are complete in
/// themselves (no error chain to print).
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("{path}: {}", crate::sanitize::io_words(error))]
    Io { path: String, error: std::io::Error },
    #[error("{path} is not a vramwatch recording: {why}")]
    NotARecording { path: String, why: String },
    #[error(
        "{path} is recording format version {found} (written by vramwatch {writer}); this vramwatch {ours} reads versions {OLDEST_VERSION} to {VERSION}: {advice}"
    )]
    Version {
        path: String,
        found: u64,
        writer: String,
        ours: &'static str,
        advice: &'static str,
    },
    #[error("{path}:{line}: {error}")]
    Line {
        path: String,
        line: u64,
        error: format::LineError,
    },
    #[error("{path}: the compressed data from byte {offset} is corrupt: {why}")]
    Corrupt {
        path: String,
        offset: u64,
        why: String,
    },
    #[error("{path} already exists: choose another name, remove it, or pass --force to overwrite")]
    Exists { path: String },
    #[error("snapshot {index} does not exist: {path} holds {len} snapshots")]
    OutOfRange {
        path: String,
        index: usize,
        len: usize,
    },
    #[error("{path}: snapshot {index} cannot be read: {why}")]
    Unreadable {
        path: String,
        index: usize,
        why: String,
    },
    #[error(
        "{path}: the zstd data up to byte {at} decompresses to {text} bytes, more than {MAX_RATIO} times its size: not a recording vramwatch wrote (a decompression bomb?); stopped reading there"
    )]
    TooLarge { path: String, at: u64, text: u64 },
    #[error(
        "{path}: {lines} damaged lines in a row from line {line}: not a recording vramwatch wrote; stopped reading there"
    )]
    TooDamaged { path: String, line: u64, lines: u64 },
    /// Read to the end with parts skipped: what was made covers what could
    /// be read. Exit code 1.
    #[error(
        "{path}: {summary}; the {what} covers the {read} snapshots that could be read (exit code 1)"
    )]
    Incomplete {
        path: String,
        summary: String,
        what: &'static str,
        read: u64,
    },
}

impl RecordError {
    pub(crate) fn io(path: &Path, error: std::io::Error) -> RecordError {
        RecordError::Io {
            path: crate::sanitize::path(path),
            error,
        }
    }

    /// Whether what was read is complete but for the damage it names
    /// (exit code 1, the output made of the rest).
    pub fn is_incomplete(&self) -> bool {
        matches!(self, RecordError::Incomplete { .. })
    }
}

/// Whether a recording at `path` is written compressed: its name ends in
/// `.zst`.
pub fn is_zstd_path(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// The name the `n`th older file gets when `path` is rotated:
/// `run.jsonl` → `run.1.jsonl`, `run.jsonl.zst` → `run.1.jsonl.zst`.
pub fn rotated_path(path: &Path, n: u32) -> PathBuf {
    with_stem_suffix(path, &format!(".{n}"))
}

/// `path` with `suffix` after its name's stem, before its extensions
/// (`.jsonl.zst` and the like kept whole): `run.jsonl.zst` with `-2` is
/// `run-2.jsonl.zst`.
pub(crate) fn with_stem_suffix(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let split = [".jsonl.zst", ".json.zst", ".jsonl", ".json", ".zst"]
        .iter()
        .find(|s| name.len() > s.len() && name.ends_with(*s))
        .map(|s| name.len() - s.len())
        .or_else(|| name.rfind('.').filter(|&i| i > 0))
        .unwrap_or(name.len());
    let (stem, ext) = name.split_at(split);
    path.with_file_name(format!("{stem}{suffix}{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_names_keep_the_extensions() {
        let r = |p: &str| rotated_path(Path::new(p), 2).display().to_string();
        assert_eq!(r("/d/run.jsonl"), "/d/run.2.jsonl");
        assert_eq!(r("/d/run.jsonl.zst"), "/d/run.2.jsonl.zst");
        assert_eq!(r("run.v1.jsonl"), "run.v1.2.jsonl");
        assert_eq!(r("run.zst"), "run.2.zst");
        assert_eq!(r("run.log"), "run.2.log");
        assert_eq!(r("run"), "run.2");
        assert_eq!(r(".jsonl"), ".jsonl.2");
        assert!(is_zstd_path(Path::new("a.jsonl.zst")));
        assert!(!is_zstd_path(Path::new("a.jsonl")));
    }
}
