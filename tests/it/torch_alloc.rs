//! The reader of `vramwatch_torch` files against fixture files, unsafe
//! directories and files, and the real Python package (with a fake torch).

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use vramwatch::analysis::allocator::advice;
use vramwatch::model::ProcessKey;
use vramwatch::model::alloc::AllocStats;
use vramwatch::model::units::GIB;
use vramwatch::source::torch::{
    self as torch_alloc, MAX_FILE_BYTES, ReadError, START_TIME_SLACK_S, TorchAllocReader,
    effective_uid,
};

const PID: u32 = 4242;
const START: u64 = 1_760_000_000;
const KEY: ProcessKey = ProcessKey {
    pid: PID,
    start_time: START,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/torch")
        .join(name)
}

/// A private publishing directory (mode 0700) inside a temporary one.
struct Dir {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

impl Dir {
    fn new() -> Dir {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("vramwatch");
        fs::create_dir(&path).expect("mkdir");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).expect("chmod");
        Dir { _tmp: tmp, path }
    }

    fn with(name: &str) -> Dir {
        let d = Dir::new();
        d.put(name);
        d
    }

    fn file(&self) -> PathBuf {
        self.path.join(format!("{PID}.json"))
    }

    /// Puts a fixture in place atomically, as the writer does.
    fn put(&self, name: &str) {
        let tmp = self.path.join(format!(".{PID}.json.tmp"));
        fs::copy(fixture(name), &tmp).expect("copy fixture");
        fs::rename(&tmp, self.file()).expect("rename");
    }

    fn reader(&self) -> TorchAllocReader {
        TorchAllocReader::with_dirs(vec![self.path.clone()], effective_uid())
    }
}

fn read(dir: &Dir, key: ProcessKey) -> (Option<Arc<AllocStats>>, Vec<String>) {
    let mut r = dir.reader();
    r.update(&[key]);
    (r.get(key).cloned(), r.take_notes())
}

fn ignored(name: &str, reason: &str) {
    let d = Dir::with(name);
    let (got, notes) = read(&d, KEY);
    assert!(got.is_none(), "{name} was read: {got:?}");
    assert_eq!(notes.len(), 1, "{name}: {notes:?}");
    assert!(notes[0].contains("4242.json"), "{name}: {notes:?}");
    assert!(notes[0].contains(reason), "{name}: {notes:?}");
}

#[test]
fn a_valid_file_gives_every_figure() {
    let d = Dir::with("valid.json");
    let (got, notes) = read(&d, KEY);
    assert_eq!(notes, Vec::<String>::new());
    let s = got.expect("read");
    assert_eq!(
        (s.pid, s.start_time, s.t_ms),
        (PID, Some(START), 1_760_000_123_456)
    );
    assert_eq!(s.interval_ms, 500);
    assert_eq!(s.torch_version.as_deref(), Some("2.5.1+cu124"));
    assert_eq!(s.cuda_visible_devices.as_deref(), Some("2"));
    assert_eq!((s.publish_us, s.snapshot_us), (Some(48), Some(812)));
    assert!(s.cuda_initialized);
    assert_eq!(s.devices.len(), 1);
    let dev = s
        .device_for("GPU-8D3C0F2E-5A1B-4C2D-9E3F-0A1B2C3D4E5F")
        .expect("matched by UUID");
    assert_eq!(dev.allocated, 30 * GIB);
    assert_eq!(dev.reserved, 50 * GIB);
    assert_eq!(dev.active, 31 * GIB);
    assert_eq!(dev.inactive_split, 14 * GIB);
    assert_eq!(
        (dev.allocated_peak, dev.reserved_peak),
        (60 * GIB, 70 * GIB)
    );
    assert_eq!(
        (dev.active_peak, dev.inactive_split_peak),
        (61 * GIB, 16 * GIB)
    );
    assert_eq!((dev.num_alloc_retries, dev.num_ooms), (12, 0));
    assert_eq!(dev.largest_free, Some(20 << 20));
    assert_eq!(dev.cached_free(), 20 * GIB);
    assert_eq!(dev.fragmentation(), Some(0.28));
    // Fragmented with retries and no expandable segments: that advice.
    let advice = advice(&s, false);
    assert!(
        advice
            .iter()
            .any(|a| a.contains("12 allocator retries") && a.contains("expandable_segments:True")),
        "{advice:?}"
    );
}

#[test]
fn before_cuda_starts_there_are_no_devices() {
    let (got, _) = read(&Dir::with("not_cuda_yet.json"), KEY);
    let s = got.expect("read");
    assert!(!s.cuda_initialized);
    assert!(s.devices.is_empty());
    assert!(s.expandable_segments());
    assert!(advice(&s, true).is_empty());
}

#[test]
fn fields_of_a_later_writer_are_ignored() {
    let (got, notes) = read(&Dir::with("future_fields.json"), KEY);
    assert!(notes.is_empty(), "{notes:?}");
    let s = got.expect("read");
    assert_eq!(s.devices[0].allocated, GIB);
    assert_eq!(s.devices[0].reserved, 2 * GIB);
    // Fields it does not have take their defaults.
    assert_eq!(s.devices[0].num_alloc_retries, 0);
    assert_eq!(s.devices[0].largest_free, None);
}

#[test]
fn a_torn_write_is_ignored() {
    ignored("partial.json", "EOF while parsing");
}

#[test]
fn malformed_json_is_ignored_with_its_line_and_column() {
    ignored("malformed.json", "line 4, column 3");
}

#[test]
fn wrong_types_are_ignored() {
    ignored("bad_types.json", "invalid value: integer `-5`");
}

#[test]
fn oversized_files_are_ignored_unread() {
    assert!(fs::metadata(fixture("oversized.json")).unwrap().len() > MAX_FILE_BYTES);
    ignored("oversized.json", "more than the 65536 allowed");
}

#[test]
fn a_file_written_by_another_pid_is_ignored() {
    ignored("wrong_pid.json", "written by PID 4343, not by PID 4242");
}

#[test]
fn a_file_left_by_an_earlier_process_with_the_same_pid_is_ignored() {
    ignored("wrong_start_time.json", "left by an earlier process");
    // The same file, asked for with another start time: a recycled PID.
    let d = Dir::with("valid.json");
    let later = ProcessKey {
        pid: PID,
        start_time: START + 3600,
    };
    let (got, notes) = read(&d, later);
    assert!(got.is_none());
    assert!(
        notes[0].contains("start time 1760000000 is not the process's (1760003600)"),
        "{notes:?}"
    );
}

#[test]
fn start_times_may_differ_by_the_slack_only() {
    let d = Dir::with("valid.json");
    for (delta, ok) in [(0i64, true), (1, true), (-1, true), (2, false), (-2, false)] {
        assert_eq!(START_TIME_SLACK_S, 1);
        let key = ProcessKey {
            pid: PID,
            start_time: START.checked_add_signed(delta).unwrap(),
        };
        assert_eq!(read(&d, key).0.is_some(), ok, "delta {delta}");
    }
    // An unknown start time (0) cannot be checked: not read.
    let unknown = ProcessKey {
        pid: PID,
        start_time: 0,
    };
    let (got, notes) = read(&d, unknown);
    assert!(got.is_none());
    assert!(
        notes[0].contains("start time of PID 4242 is unknown"),
        "{notes:?}"
    );
}

#[test]
fn another_schema_is_ignored() {
    ignored("schema2.json", "schema 2, this vramwatch reads schema 1");
}

#[test]
fn a_process_without_a_file_has_nothing_and_no_note() {
    let d = Dir::new();
    let (got, notes) = read(&d, KEY);
    assert!(got.is_none());
    assert!(notes.is_empty());
    // Nor does a missing directory make a note.
    let mut r = TorchAllocReader::with_dirs(vec![d.path.join("absent")], effective_uid());
    r.update(&[KEY]);
    assert!(r.get(KEY).is_none() && r.notes().is_empty());
}

#[test]
fn unchanged_files_are_not_read_again_and_changes_are_seen() {
    let d = Dir::with("valid.json");
    let mut r = d.reader();
    r.update(&[KEY]);
    let first = r.get(KEY).cloned().expect("read");
    // Twice in one list (a process on two GPUs), and again: read once.
    r.update(&[KEY, KEY]);
    assert!(Arc::ptr_eq(&first, r.get(KEY).unwrap()));
    assert_eq!(r.parses(), 1);
    // A new version (an atomic replace, as the writer does) is read.
    d.put("future_fields.json");
    r.update(&[KEY]);
    assert_eq!(r.parses(), 2);
    assert_eq!(r.get(KEY).unwrap().devices[0].allocated, GIB);
    // A bad version replaces the good one (no stale figures), and is noted once.
    d.put("partial.json");
    r.update(&[KEY]);
    r.update(&[KEY]);
    assert!(r.get(KEY).is_none());
    assert_eq!(r.take_notes().len(), 1);
    // Removed: gone.
    d.put("valid.json");
    r.update(&[KEY]);
    assert!(r.get(KEY).is_some());
    fs::remove_file(d.file()).unwrap();
    r.update(&[KEY]);
    assert!(r.get(KEY).is_none());
}

#[test]
fn processes_no_longer_asked_for_are_forgotten() {
    let d = Dir::with("valid.json");
    let mut r = d.reader();
    r.update(&[KEY]);
    assert!(r.get(KEY).is_some());
    r.update(&[]);
    assert!(r.get(KEY).is_none());
    // get() never answers for another start time.
    r.update(&[KEY]);
    let other = ProcessKey {
        pid: PID,
        start_time: START + 100,
    };
    assert!(r.get(other).is_none());
}

#[test]
fn a_directory_open_to_others_is_not_read_and_said_once() {
    let d = Dir::with("valid.json");
    fs::set_permissions(&d.path, fs::Permissions::from_mode(0o755)).unwrap();
    let mut r = d.reader();
    r.update(&[KEY]);
    r.update(&[KEY]);
    assert!(r.get(KEY).is_none());
    let notes = r.take_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("mode 755"), "{notes:?}");
    // Fixed: read.
    fs::set_permissions(&d.path, fs::Permissions::from_mode(0o700)).unwrap();
    r.update(&[KEY]);
    assert!(r.get(KEY).is_some());
}

#[test]
fn a_directory_of_another_user_is_not_read() {
    let d = Dir::with("valid.json");
    let someone_else = effective_uid() + 1;
    let mut r = TorchAllocReader::with_dirs(vec![d.path.clone()], someone_else);
    r.update(&[KEY]);
    assert!(r.get(KEY).is_none());
    assert!(
        r.notes()[0].contains(&format!("owned by uid {}", effective_uid())),
        "{:?}",
        r.notes()
    );
}

#[test]
fn a_file_of_another_user_is_not_read() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: needs root to give a file to another user");
        return;
    }
    let d = Dir::with("valid.json");
    std::os::unix::fs::chown(d.file(), Some(65534), Some(65534)).unwrap();
    let (got, notes) = read(&d, KEY);
    assert!(got.is_none());
    assert!(notes[0].contains("owned by uid 65534"), "{notes:?}");
}

#[test]
fn symlinks_are_not_followed() {
    // A link in place of the file.
    let d = Dir::new();
    let elsewhere = d.path.parent().unwrap().join("elsewhere.json");
    fs::copy(fixture("valid.json"), &elsewhere).unwrap();
    symlink(&elsewhere, d.file()).unwrap();
    let (got, notes) = read(&d, KEY);
    assert!(got.is_none());
    assert_eq!(notes.len(), 1, "{notes:?}");
    // A link in place of the directory.
    let real = Dir::with("valid.json");
    let link = d.path.parent().unwrap().join("linkdir");
    symlink(&real.path, &link).unwrap();
    let mut r = TorchAllocReader::with_dirs(vec![link], effective_uid());
    r.update(&[KEY]);
    assert!(r.get(KEY).is_none());
    assert!(r.notes()[0].contains("not a directory"), "{:?}", r.notes());
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    if !common::tool_available("mkfifo") {
        return;
    }
    let d = Dir::new();
    let ok = Command::new("mkfifo").arg(d.file()).status().unwrap();
    assert!(ok.success());
    let (got, notes) = read(&d, KEY);
    assert!(got.is_none());
    assert!(notes[0].contains("not a regular file"), "{notes:?}");
}

#[test]
fn bytes_that_are_not_utf8_are_placed() {
    let d = Dir::new();
    fs::write(d.file(), b"{\n  \"schema\": 1,\n  \"x\": \"ab\xff\"\n}\n").unwrap();
    let err = torch_alloc::read_file(&d.file(), KEY, effective_uid()).unwrap_err();
    assert!(
        err.to_string().ends_with("line 3, column 11: not UTF-8"),
        "{err}"
    );
}

#[test]
fn read_file_errors_name_the_file() {
    let d = Dir::with("malformed.json");
    let err = torch_alloc::read_file(&d.file(), KEY, effective_uid()).unwrap_err();
    assert!(
        matches!(err, ReadError::Malformed { line: 4, .. }),
        "{err:?}"
    );
    assert!(err.to_string().starts_with(&d.file().display().to_string()));
}

#[test]
fn the_first_directory_holding_a_file_wins() {
    let a = Dir::new();
    let b = Dir::with("valid.json");
    let mut r = TorchAllocReader::with_dirs(vec![a.path.clone(), b.path.clone()], effective_uid());
    r.update(&[KEY]);
    assert!(r.get(KEY).is_some());
    a.put("future_fields.json");
    r.update(&[KEY]);
    assert_eq!(r.get(KEY).unwrap().devices[0].allocated, GIB);
}

/// The real Python package, with the fake torch of its tests, writes a file
/// for a live process; the reader finds it under the process's key as the
/// host facts (sysinfo) compute it, with the same start time exactly.
#[test]
fn round_trip_with_the_python_package() {
    if !common::tool_available("python3") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = tempfile::tempdir().unwrap();
    let code = r#"
import os, sys
sys.path[:0] = [os.path.join(sys.argv[1], "python"), os.path.join(sys.argv[1], "python", "tests")]
import fake_torch
cuda = fake_torch.install(version="2.6.0+fake")
cuda.init(count=2)
G = 1 << 30
cuda.use(1, allocated=5 * G, reserved=12 * G, active=5 * G, inactive_split=4 * G,
         allocated_peak=9 * G, reserved_peak=14 * G, retries=6, ooms=1)
cuda.uuids[1] = "58c6c0b0-aaaa-bbbb-cccc-ddddeeeeffff"
cuda.segments = [fake_torch.segment(1, [(3 << 20, "inactive"), (8 << 20, "active_allocated"), (7 << 20, "inactive")])]
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:256"
import vramwatch_torch
assert vramwatch_torch.start(interval=0.05), "not started"
print(vramwatch_torch.path(), flush=True)
sys.stdin.read()
"#;
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(code)
        .arg(root)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env_remove("VRAMWATCH_TORCH_DISABLE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let dir = runtime.path().join("vramwatch");
    assert_eq!(
        PathBuf::from(line.trim()),
        dir.join(format!("{}.json", child.id()))
    );

    // The key vramwatch has for the process.
    let mut procs = [vramwatch::model::ProcSample {
        pid: child.id(),
        ..Default::default()
    }];
    use vramwatch::source::HostFacts;
    vramwatch::source::host::ProcHost::new(Vec::new()).enrich(0, &mut procs, true);
    let key = procs[0].key();
    assert!(key.start_time > 0);

    let mut r = TorchAllocReader::with_dirs(vec![dir.clone()], effective_uid());
    r.update(&[key]);
    let s = r.get(key).cloned();
    let notes = r.take_notes();
    // Stop the child before asserting, so a failure does not leave it.
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    let s = s.unwrap_or_else(|| panic!("not read: {notes:?}"));
    assert_eq!(
        s.start_time,
        Some(key.start_time),
        "same start time, exactly"
    );
    assert_eq!(s.torch_version.as_deref(), Some("2.6.0+fake"));
    assert_eq!(s.alloc_conf.as_deref(), Some("max_split_size_mb:256"));
    assert_eq!(s.devices.len(), 1, "device 0 was never used");
    let d = s
        .device_for("GPU-58C6C0B0-AAAA-BBBB-CCCC-DDDDEEEEFFFF")
        .expect("matched by UUID");
    assert_eq!(d.index, 1);
    assert_eq!(
        (d.allocated, d.reserved, d.inactive_split),
        (5 * GIB, 12 * GIB, 4 * GIB)
    );
    assert_eq!((d.allocated_peak, d.reserved_peak), (9 * GIB, 14 * GIB));
    assert_eq!((d.num_alloc_retries, d.num_ooms), (6, 1));
    assert_eq!(d.largest_free, Some(7 << 20));
    let advice = advice(&s, true);
    assert!(
        advice
            .iter()
            .any(|a| a.contains("expandable_segments:True")),
        "{advice:?}"
    );
    assert!(
        advice.iter().any(|a| a.contains("1 out-of-memory error")),
        "{advice:?}"
    );

    // The child exited normally: its file is gone, and so are its figures.
    assert!(status.success());
    assert!(!dir.join(format!("{}.json", key.pid)).exists());
    r.update(&[key]);
    assert!(r.get(key).is_none());
}

#[test]
fn a_file_growing_past_the_limit_after_the_check_is_refused() {
    // Written in place (not atomically) to just over the limit: refused by
    // size whether the stat or the read sees it first.
    let d = Dir::new();
    let mut f = fs::File::create(d.file()).unwrap();
    let text = fs::read_to_string(fixture("valid.json")).unwrap();
    f.write_all(text.trim_end().trim_end_matches('}').as_bytes())
        .unwrap();
    f.write_all(format!(",\"pad\":\"{}\"}}", "y".repeat(MAX_FILE_BYTES as usize)).as_bytes())
        .unwrap();
    drop(f);
    let (got, notes) = read(&d, KEY);
    assert!(got.is_none());
    assert!(notes[0].contains("allowed"), "{notes:?}");
}
