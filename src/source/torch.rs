//! Inside the PyTorch caching allocator, for processes that opt in with
//! `vramwatch_torch.start()` (the Python package in `python/`).
//!
//! NVML sees what a process has reserved from the driver. PyTorch's caching
//! allocator keeps freed blocks for reuse, so that figure is the allocator's
//! *reserved* memory, not what tensors use (*allocated*); the gap, and the
//! part of it split into pieces too small to reuse (*fragmentation*), is the
//! story behind most `CUDA out of memory` reports. The Python side writes the
//! allocator's figures twice a second to `<dir>/<pid>.json`; this module
//! reads them back for the processes vramwatch sees on a GPU (the figures
//! are `model::alloc`, the advice `analysis::allocator`). The format and
//! the rules are in docs/pytorch.md.
//!
//! Only files we can trust are read: the directory must be ours and closed
//! to others (mode 0700), the file ours, regular, at most
//! [`MAX_FILE_BYTES`], and its PID and start time those of the process it is
//! asked for. Anything else is ignored with a note ([`TorchAllocReader::notes`]),
//! never printed and never a crash.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use thiserror::Error;

use crate::model::ProcessKey;
use crate::model::alloc::AllocStats;
use crate::sanitize;

/// The file format version this reader understands. Fields may be added
/// within a version (a reader ignores fields it does not know); a change
/// that breaks readers bumps it, and files of other versions are ignored.
pub const SCHEMA_VERSION: u32 = 1;

/// Larger files are ignored: a real one is under 2 KiB per device.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Devices kept from one file (more are ignored).
pub const MAX_DEVICES: usize = 64;

/// The start time in the file may differ from vramwatch's by this many
/// seconds: both are `starttime / CLK_TCK + btime`, but `btime` is derived
/// from the wall clock and moves by a second when NTP steps it between the
/// two reads. A different process with the same PID within one second is
/// not a realistic case.
pub const START_TIME_SLACK_S: u64 = 1;

/// Notes kept (the oldest are dropped).
pub const MAX_NOTES: usize = 64;

/// Where the Python side writes, in the order it prefers them:
/// `$XDG_RUNTIME_DIR/vramwatch`, `/run/user/<uid>/vramwatch` (the usual
/// runtime dir, for a vramwatch started without the variable), and
/// `/tmp/vramwatch-<uid>` (its fallback).
pub fn default_dirs(uid: u32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(base) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && base.is_absolute()
    {
        dirs.push(base.join("vramwatch"));
    }
    let run_user = PathBuf::from(format!("/run/user/{uid}/vramwatch"));
    if !dirs.contains(&run_user) {
        dirs.push(run_user);
    }
    dirs.push(PathBuf::from(format!("/tmp/vramwatch-{uid}")));
    dirs
}

/// The effective user id of this process.
pub fn effective_uid() -> u32 {
    nix::unistd::Uid::effective().as_raw()
}

/// Cleans what came from the file before it reaches a screen: strings lose
/// control characters and are capped, the device list is capped.
fn sanitised(mut s: AllocStats) -> AllocStats {
    let clean = |v: &mut Option<String>, cap| {
        if let Some(v) = v.as_mut() {
            *v = sanitize::clean_capped(v, cap);
        }
    };
    clean(&mut s.writer, 64);
    clean(&mut s.torch_version, 64);
    clean(&mut s.alloc_conf, 256);
    clean(&mut s.cuda_visible_devices, 256);
    clean(&mut s.error, 256);
    s.devices.truncate(MAX_DEVICES);
    for d in &mut s.devices {
        clean(&mut d.uuid, 64);
    }
    s
}

/// Why a file was not used.
#[derive(Debug, Error)]
pub enum ReadError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: directory is {why}; it must be ours with mode 0700")]
    UnsafeDir { path: PathBuf, why: String },
    #[error("{path}: owned by uid {owner}, not by us (uid {ours})")]
    NotOurs {
        path: PathBuf,
        owner: u32,
        ours: u32,
    },
    #[error("{path}: not a regular file")]
    NotRegular { path: PathBuf },
    #[error("{path}: {len} bytes, more than the {max} allowed", max = MAX_FILE_BYTES)]
    TooLarge { path: PathBuf, len: u64 },
    #[error("{path}: line {line}, column {column}: {message}")]
    Malformed {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: schema {found}, this vramwatch reads schema {SCHEMA_VERSION}")]
    Schema { path: PathBuf, found: u32 },
    #[error("{path}: written by PID {found}, not by PID {want}")]
    WrongPid {
        path: PathBuf,
        found: u32,
        want: u32,
    },
    #[error(
        "{path}: start time {} is not the process's ({want}): left by an earlier process with PID {pid}",
        found.map_or_else(|| "missing".to_owned(), |t| t.to_string())
    )]
    WrongStartTime {
        path: PathBuf,
        found: Option<u64>,
        want: u64,
        pid: u32,
    },
    #[error("{path}: the start time of PID {pid} is unknown, so the file cannot be matched")]
    UnknownStartTime { path: PathBuf, pid: u32 },
}

/// Parses a file's text. Unknown fields are ignored (fields a later writer
/// adds within the schema).
pub fn parse(text: &str) -> Result<AllocStats, serde_json::Error> {
    serde_json::from_str::<AllocStats>(text).map(sanitised)
}

/// Checks that `dir` is a directory owned by `uid` with no group or other
/// permissions, without following a symlink.
pub fn check_dir(dir: &Path, uid: u32) -> Result<(), ReadError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| ReadError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let unsafe_dir = |why: String| ReadError::UnsafeDir {
        path: dir.to_owned(),
        why,
    };
    if !meta.file_type().is_dir() {
        return Err(unsafe_dir("not a directory".into()));
    }
    if meta.uid() != uid {
        return Err(unsafe_dir(format!("owned by uid {}", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(unsafe_dir(format!("mode {:03o}", meta.mode() & 0o777)));
    }
    Ok(())
}

/// Reads and checks one file for the process `key`: owned by `uid`, a
/// regular file (a symlink or a FIFO is refused without blocking), at most
/// [`MAX_FILE_BYTES`], well-formed, of [`SCHEMA_VERSION`], written by
/// `key.pid` with `key.start_time` (within [`START_TIME_SLACK_S`]). The
/// directory is not checked here: see [`check_dir`].
pub fn read_file(path: &Path, key: ProcessKey, uid: u32) -> Result<AllocStats, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let text = read_checked(&file, path, uid)?;
    let stats = parse(&text).map_err(|e| ReadError::Malformed {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if stats.schema != SCHEMA_VERSION {
        return Err(ReadError::Schema {
            path: path.to_owned(),
            found: stats.schema,
        });
    }
    if stats.pid != key.pid {
        return Err(ReadError::WrongPid {
            path: path.to_owned(),
            found: stats.pid,
            want: key.pid,
        });
    }
    if key.start_time == 0 {
        return Err(ReadError::UnknownStartTime {
            path: path.to_owned(),
            pid: key.pid,
        });
    }
    let same_start = stats
        .start_time
        .is_some_and(|t| t.abs_diff(key.start_time) <= START_TIME_SLACK_S);
    if !same_start {
        return Err(ReadError::WrongStartTime {
            path: path.to_owned(),
            found: stats.start_time,
            want: key.start_time,
            pid: key.pid,
        });
    }
    Ok(stats)
}

/// The text of an open file, after checking what it is through the open
/// handle (no race with a rename between the check and the read).
fn read_checked(file: &File, path: &Path, uid: u32) -> Result<String, ReadError> {
    let meta = file.metadata().map_err(|source| ReadError::Io {
        path: path.to_owned(),
        source,
    })?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular {
            path: path.to_owned(),
        });
    }
    if meta.uid() != uid {
        return Err(ReadError::NotOurs {
            path: path.to_owned(),
            owner: meta.uid(),
            ours: uid,
        });
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            len: meta.len(),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte over the limit tells a file that grew since the check.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            len: bytes.len() as u64,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line_start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        ReadError::Malformed {
            path: path.to_owned(),
            line: good.iter().filter(|b| **b == b'\n').count() + 1,
            column: good.len() - line_start + 1,
            message: "not UTF-8".into(),
        }
    })
}

/// What identifies one version of a file: an atomic replace gives a new
/// inode, a rewrite in place a new mtime or length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Version {
    ino: u64,
    mtime: Option<SystemTime>,
    len: u64,
}

#[derive(Debug)]
struct Entry {
    key: ProcessKey,
    path: PathBuf,
    version: Version,
    stats: Option<Arc<AllocStats>>,
}

/// Reads the files of the processes vramwatch sees, once per interval,
/// re-reading a file only when it changed.
#[derive(Debug)]
pub struct TorchAllocReader {
    dirs: Vec<PathBuf>,
    uid: u32,
    entries: HashMap<u32, Entry>,
    notes: Vec<String>,
    /// Directory notes already given (a bad directory is said once).
    dir_noted: HashMap<PathBuf, String>,
    parses: u64,
}

impl Default for TorchAllocReader {
    fn default() -> Self {
        Self::new()
    }
}

impl TorchAllocReader {
    /// Reads the default directories ([`default_dirs`]) as this user.
    pub fn new() -> TorchAllocReader {
        let uid = effective_uid();
        TorchAllocReader::with_dirs(default_dirs(uid), uid)
    }

    /// Reads `dirs`, in order (the first holding a file for a PID wins),
    /// trusting only files and directories owned by `uid`.
    pub fn with_dirs(dirs: Vec<PathBuf>, uid: u32) -> TorchAllocReader {
        TorchAllocReader {
            dirs,
            uid,
            entries: HashMap::new(),
            notes: Vec::new(),
            dir_noted: HashMap::new(),
            parses: 0,
        }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Brings the figures of these processes up to date (the processes in
    /// this interval's snapshot) and forgets every other process. Costs one
    /// `stat` per process and directory, and a read only for files that
    /// changed.
    pub fn update(&mut self, keys: &[ProcessKey]) {
        let dirs: Vec<PathBuf> = self
            .dirs
            .clone()
            .into_iter()
            .filter(|d| self.dir_usable(d))
            .collect();
        self.entries
            .retain(|pid, e| keys.iter().any(|k| k.pid == *pid && *k == e.key));
        // A process on two GPUs comes twice.
        let mut seen = std::collections::HashSet::new();
        for key in keys {
            if seen.insert(*key) {
                self.update_one(&dirs, *key);
            }
        }
    }

    /// The latest figures of a process, if it publishes them and they
    /// passed every check.
    pub fn get(&self, key: ProcessKey) -> Option<&Arc<AllocStats>> {
        self.entries
            .get(&key.pid)
            .filter(|e| e.key == key)
            .and_then(|e| e.stats.as_ref())
    }

    /// Why files were ignored, oldest first (at most [`MAX_NOTES`]). For a
    /// debug view or a log file: never print these while the TUI runs.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Files parsed so far (a file that did not change is not parsed again).
    pub fn parses(&self) -> u64 {
        self.parses
    }

    fn note(&mut self, text: String) {
        if self.notes.len() >= MAX_NOTES {
            self.notes.remove(0);
        }
        self.notes.push(text);
    }

    /// A directory that is missing is simply unused; one that exists but is
    /// not safe is noted once (again if the reason changes).
    fn dir_usable(&mut self, dir: &Path) -> bool {
        match check_dir(dir, self.uid) {
            Ok(()) => {
                self.dir_noted.remove(dir);
                true
            }
            Err(ReadError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                false
            }
            Err(e) => {
                let text = e.to_string();
                if self.dir_noted.get(dir) != Some(&text) {
                    self.dir_noted.insert(dir.to_owned(), text.clone());
                    self.note(format!("ignored {text}"));
                }
                false
            }
        }
    }

    fn update_one(&mut self, dirs: &[PathBuf], key: ProcessKey) {
        let found = dirs.iter().find_map(|d| {
            let path = d.join(format!("{}.json", key.pid));
            let meta = std::fs::symlink_metadata(&path).ok()?;
            Some((path, meta))
        });
        let Some((path, meta)) = found else {
            self.entries.remove(&key.pid);
            return;
        };
        let version = Version {
            ino: meta.ino(),
            mtime: meta.modified().ok(),
            len: meta.len(),
        };
        if let Some(e) = self.entries.get(&key.pid)
            && e.key == key
            && e.path == path
            && e.version == version
        {
            return;
        }
        self.parses += 1;
        let stats = match read_file(&path, key, self.uid) {
            Ok(s) => Some(Arc::new(s)),
            Err(e) => {
                self.note(format!("ignored {e}"));
                None
            }
        };
        self.entries.insert(
            key.pid,
            Entry {
                key,
                path,
                version,
                stats,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_cleans_strings_from_the_file() {
        let s = parse(
            r#"{"schema":1,"pid":2,"start_time":3,"t_ms":4,"alloc_conf":"\u001b[31mexpandable_segments:True\u0007","devices":[{"index":0,"allocated":1,"reserved":2,"uuid":"\u001b]0;x\u0007GPU-1"}]}"#,
        )
        .unwrap();
        assert_eq!(s.alloc_conf.as_deref(), Some("expandable_segments:True"));
        assert_eq!(s.devices[0].uuid.as_deref(), Some("GPU-1"));
    }

    #[test]
    fn default_dirs_cover_the_python_sides_choices() {
        let dirs = default_dirs(1234);
        assert!(dirs.contains(&PathBuf::from("/run/user/1234/vramwatch")));
        assert_eq!(dirs.last(), Some(&PathBuf::from("/tmp/vramwatch-1234")));
    }
}
