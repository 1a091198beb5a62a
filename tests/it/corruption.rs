//! The reading side under attack: a small recording (`.jsonl` and
//! `.jsonl.zst`, written by the library's `Writer` from the simulator) cut
//! at every byte, bit-flipped at seeded offsets, with its index edited, and
//! crafted files (a decompression bomb, runs of skippable frames, a byte
//! order mark, wrong versions, a FIFO). Every reader must not panic, stay
//! in bounded memory (the reader's statistics say what it held), read
//! every intact snapshot, and report exactly what was damaged.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use vramwatch::model::{Event, EventKind, Snapshot};
use vramwatch::record::format::{IndexRecord, cpu_precision};
use vramwatch::record::{
    GUARD_FLOOR, Header, MAX_LINE, MAX_RATIO, Reader, RecordError, Recording, VERSION,
    WriteOutcome, Writer, WriterOptions,
};
use vramwatch::sampler::{OomCounts, diff_events};
use vramwatch::source::sim::SimWorld;

const T0: u64 = 1_764_000_000_000;
const FRAME_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
const INDEX_MAGIC: [u8; 4] = [0x56, 0x2A, 0x4D, 0x18];

/// What a snapshot reads back as: CPU % to a tenth.
fn as_stored(s: &Snapshot) -> Snapshot {
    let mut s = s.clone();
    for p in &mut s.procs {
        p.cpu_pct = p.cpu_pct.map(cpu_precision);
    }
    s
}

/// A small recording's snapshots: one GPU, a process whose command line
/// changes half way (a second process line), a note every third snapshot.
fn small_snapshots(n: u64) -> (Header, Vec<Snapshot>) {
    let w = SimWorld::new("inference", 3, T0).expect("scenario");
    let mut out: Vec<Snapshot> = Vec::new();
    for i in 0..n {
        let mut s = w.snapshot(i, T0 + i * 1000, "me");
        if i >= n / 2 {
            for p in &mut s.procs {
                let cmd = format!("{} --resumed", p.command.as_deref().unwrap_or("?"));
                p.command = Some(cmd.into());
            }
        }
        if let Some(p) = out.last() {
            s.events = diff_events(p, &s, &mut OomCounts::default());
        }
        if i % 3 == 1 {
            s.events.push(Event {
                t_ms: s.t_ms,
                kind: EventKind::Note,
                gpu: Some(0),
                pid: None,
                message: format!("note {i}"),
                after_oom: false,
            });
        }
        out.push(s);
    }
    (Header::new(&w.info(), 1000, T0), out)
}

fn write(path: &Path, h: &Header, snaps: &[Snapshot], block: u32) {
    let o = WriterOptions {
        block_snapshots: block,
        flush_every: Duration::ZERO,
        sync_every: Duration::from_secs(3600),
        ..WriterOptions::default()
    };
    let mut w = Writer::create(path, h.clone(), o).expect("create");
    for s in snaps {
        assert_eq!(w.write(s), WriteOutcome::Written);
    }
    w.finish().expect("finish");
}

/// A line of the plain file.
#[derive(Clone, Debug)]
struct Line {
    /// Byte range, its newline included.
    range: std::ops::Range<usize>,
    /// The snapshot it is (or, for an event, belongs to; for a process
    /// line, precedes).
    snapshot: Option<usize>,
}

/// The small recording, plain and compressed, and what each snapshot is
/// made of.
struct Fixture {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    snaps: Vec<Snapshot>,
    plain: Vec<u8>,
    zst: Vec<u8>,
    lines: Vec<Line>,
    /// Per snapshot: the plain file's lines it is read from (its own, its
    /// events', its processes' strings).
    deps: Vec<Vec<usize>>,
    /// The `.zst` file's blocks: [offset, end) and the snapshots they hold.
    blocks: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
}

fn fixture(n: u64, block: u32) -> Fixture {
    let d = tempfile::tempdir().expect("temp dir");
    let (h, snaps) = small_snapshots(n);
    let (p, z) = (d.path().join("s.jsonl"), d.path().join("s.jsonl.zst"));
    write(&p, &h, &snaps, block);
    write(&z, &h, &snaps, block);
    let plain = fs::read(&p).unwrap();
    let zst = fs::read(&z).unwrap();
    // The plain file's lines.
    let mut lines = Vec::new();
    let mut at = 0;
    let mut snapshot = 0usize;
    let mut last_proc: HashMap<(u64, u64, u64), usize> = HashMap::new();
    let mut deps: Vec<Vec<usize>> = Vec::new();
    for l in plain.split_inclusive(|&b| b == b'\n') {
        let v: serde_json::Value = serde_json::from_slice(l).unwrap();
        let no = lines.len();
        let mut line = Line {
            range: at..at + l.len(),
            snapshot: None,
        };
        match v["type"].as_str().unwrap() {
            "snapshot" => {
                let mut d = vec![no];
                let cols = &v["procs"];
                for k in 0..cols["pid"].as_array().map_or(0, |a| a.len()) {
                    let id = (
                        cols["gpu"][k].as_u64().unwrap(),
                        cols["pid"][k].as_u64().unwrap(),
                        cols["start_time"][k].as_u64().unwrap(),
                    );
                    d.push(last_proc[&id]);
                }
                deps.push(d);
                line.snapshot = Some(snapshot);
                snapshot += 1;
            }
            "event" => {
                line.snapshot = Some(snapshot - 1);
                deps[snapshot - 1].push(no);
            }
            "process" => {
                let id = (
                    v["gpu"].as_u64().unwrap(),
                    v["pid"].as_u64().unwrap(),
                    v["start_time"].as_u64().unwrap(),
                );
                last_proc.insert(id, no);
                line.snapshot = Some(snapshot);
            }
            _ => {}
        }
        at += l.len();
        lines.push(line);
    }
    assert_eq!(snapshot, snaps.len());
    let blocks = index_frames(&zst)
        .into_iter()
        .map(|(_, _, r)| {
            let first = r.first as usize;
            (r.offset as usize..r.end as usize, first..first + r.dt.len())
        })
        .collect();
    let dir = d.path().to_owned();
    Fixture {
        _dir: d,
        dir,
        snaps: snaps.iter().map(as_stored).collect(),
        plain,
        zst,
        lines,
        deps,
        blocks,
    }
}

/// The index frames of a `.zst` file: where, the payload's length, the
/// record.
fn index_frames(zst: &[u8]) -> Vec<(usize, usize, IndexRecord)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = zst[from..].windows(4).position(|w| w == INDEX_MAGIC) {
        let at = from + i;
        from = at + 1;
        let n = u32::from_le_bytes(zst[at + 4..at + 8].try_into().unwrap()) as usize;
        if at + 8 + n > zst.len() || zst[at + 8..at + 12] != FRAME_MAGIC {
            continue;
        }
        let json = zstd::bulk::decompress(&zst[at + 8..at + 8 + n], 1 << 22).unwrap();
        out.push((at, n, serde_json::from_slice(&json).unwrap()));
    }
    out
}

/// Everything the streaming reader gives.
struct Streamed {
    snaps: Vec<Snapshot>,
    reader: Reader,
    error: Option<RecordError>,
}

fn stream(path: &Path) -> Result<Streamed, RecordError> {
    let mut reader = Reader::open(path)?;
    let mut snaps = Vec::new();
    let mut error = None;
    for s in reader.by_ref() {
        match s {
            Ok(s) => snaps.push(s),
            Err(e) => error = Some(e),
        }
    }
    let st = reader.stats();
    assert!(st.longest_line <= MAX_LINE, "{st:?}");
    assert!(
        st.text_bytes <= GUARD_FLOOR + MAX_RATIO * st.file_bytes.max(1) + (1 << 20),
        "{st:?}"
    );
    Ok(Streamed {
        snaps,
        reader,
        error,
    })
}

/// Every snapshot the random-access reader gives, in order.
fn random(path: &Path) -> Result<(Vec<Snapshot>, Recording), RecordError> {
    let rec = Recording::open(path)?;
    let snaps = rec.iter().filter_map(Result::ok).collect();
    Ok((snaps, rec))
}

/// Asserts `got` are `want`, saying which differs (not the whole dump).
fn same(got: &[Snapshot], want: &[Snapshot], case: &str) {
    let seqs = |v: &[Snapshot]| v.iter().map(|s| s.seq).collect::<Vec<_>>();
    assert_eq!(seqs(got), seqs(want), "{case}: seqs");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g == w, "{case}: snapshot {i} differs");
    }
}

/// Whether `want` appear in `got`, in order.
fn contains_in_order(got: &[Snapshot], want: &[&Snapshot]) -> bool {
    let mut it = got.iter();
    want.iter().all(|w| {
        let found = it.any(|g| g == *w);
        if !found && let Some(g) = got.iter().find(|g| g.seq == w.seq) {
            eprintln!("seq {} differs:\n got {g:?}\nwant {w:?}", w.seq);
        }
        found
    })
}

/// Snapshot `i` up to the event lines before `cut` (a cut after a
/// snapshot's line keeps it, losing at most events).
fn events_cut(f: &Fixture, i: usize, got: &Snapshot) -> bool {
    let mut want = f.snaps[i].clone();
    if !want.events.starts_with(&got.events) {
        return false;
    }
    want.events.truncate(got.events.len());
    *got == want
}

/// The snapshots a cut plain file holds whole.
fn whole_before(f: &Fixture, cut: usize) -> usize {
    f.lines
        .iter()
        .filter(|l| {
            l.range.end <= cut && f.plain[l.range.start..].starts_with(b"{\"type\":\"snapshot\"")
        })
        .count()
}

/// Checks what the readers make of a file cut at `cut` (the random-access
/// one only when `both`).
fn check_cut(f: &Fixture, path: &Path, cut: usize, want: usize, both: bool) {
    let mut reads = vec![(
        "stream",
        stream(path).map(|s| {
            assert!(s.error.is_none(), "cut at {cut}: {:?}", s.error);
            let d = s.reader.damage();
            assert!(d.is_empty(), "cut at {cut}: {d:?}");
            s.snaps
        }),
    )];
    if both {
        reads.push((
            "random",
            random(path).map(|(s, rec)| {
                assert!(rec.damage().is_empty(), "cut at {cut}: {:?}", rec.damage());
                s
            }),
        ));
    }
    for (which, got) in reads {
        match got {
            Ok(got) => {
                assert_eq!(got.len(), want, "{which}: cut at {cut}");
                for (i, g) in got.iter().enumerate() {
                    if i + 1 < want {
                        assert!(*g == f.snaps[i], "{which}: cut at {cut}: {i}");
                    } else {
                        assert!(events_cut(f, i, g), "{which}: cut at {cut}: {i}");
                    }
                }
            }
            // Only a cut inside the header stops a reader.
            Err(e) => {
                assert!(cut < f.lines[0].range.end, "{which}: cut at {cut}: {e}");
                assert!(
                    e.to_string().contains("is not a vramwatch recording"),
                    "{e}"
                );
            }
        }
    }
}

#[test]
fn cut_at_every_byte_every_whole_snapshot_reads_and_nothing_is_damaged() {
    let t = Instant::now();
    let f = fixture(5, 2);
    let path = f.dir.join("cut.jsonl");
    // The random-access reader at every 4th byte and both sides of every
    // line's end.
    let ends: Vec<usize> = f.lines.iter().map(|l| l.range.end).collect();
    for cut in 0..=f.plain.len() {
        fs::write(&path, &f.plain[..cut]).unwrap();
        let near = ends.iter().any(|&e| e.abs_diff(cut) <= 2);
        check_cut(&f, &path, cut, whole_before(&f, cut), near || cut % 4 == 0);
    }
    let plain = t.elapsed();
    // The compressed file at every other byte, and at both sides of every
    // frame's start: zstd itself says what is there.
    let path = f.dir.join("cut.jsonl.zst");
    let starts: Vec<usize> = f
        .zst
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == FRAME_MAGIC || *w == INDEX_MAGIC)
        .flat_map(|(i, _)| [i.saturating_sub(1), i, i + 1, i + 4, i + 8])
        .collect();
    let mut cuts: Vec<usize> = (0..=f.zst.len()).step_by(2).chain(starts).collect();
    cuts.retain(|&c| c <= f.zst.len());
    cuts.sort_unstable();
    cuts.dedup();
    for cut in cuts {
        fs::write(&path, &f.zst[..cut]).unwrap();
        let text = zstd_prefix(&f.zst[..cut]);
        let want = text
            .split_inclusive(|&b| b == b'\n')
            .filter(|l| l.ends_with(b"\n") && l.starts_with(b"{\"type\":\"snapshot\""))
            .count();
        check_cut(&f, &path, cut, want, true);
    }
    eprintln!(
        "cut {} bytes in {plain:?}, {} bytes in {:?}",
        f.plain.len(),
        f.zst.len(),
        t.elapsed() - plain
    );
}

/// What zstd's own decoder makes of (the start of) a file.
fn zstd_prefix(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    let Ok(mut d) = zstd::stream::read::Decoder::new(bytes) else {
        return out;
    };
    let mut buf = [0u8; 4096];
    while let Ok(n) = d.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// A small deterministic generator (no dependency for seeds).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn a_flipped_bit_costs_only_what_it_touches() {
    let f = fixture(12, 3);
    let mut rng = Rng(0x005E_ED0F_B175);
    let path = f.dir.join("flip.jsonl");
    for _ in 0..200 {
        let at = (rng.next() % f.plain.len() as u64) as usize;
        let bit = 1u8 << (rng.next() % 8);
        let mut bytes = f.plain.clone();
        bytes[at] ^= bit;
        fs::write(&path, &bytes).unwrap();
        let hit = f.lines.iter().position(|l| l.range.contains(&at)).unwrap();
        let intact: Vec<&Snapshot> = (0..f.snaps.len())
            .filter(|&i| !f.deps[i].contains(&hit))
            .map(|i| &f.snaps[i])
            .collect();
        let what = format!("bit {bit:#x} of byte {at} (line {})", hit + 1);
        let s = match stream(&path) {
            Ok(s) => s,
            Err(e) => {
                assert_eq!(hit, 0, "{what}: {e}");
                continue;
            }
        };
        assert!(s.error.is_none(), "{what}: {:?}", s.error);
        assert!(
            contains_in_order(&s.snaps, &intact),
            "{what}: read {:?}, intact {:?}, {:?}\n{}",
            s.snaps.iter().map(|s| s.seq).collect::<Vec<_>>(),
            intact.iter().map(|s| s.seq).collect::<Vec<_>>(),
            s.reader.damage(),
            String::from_utf8_lossy(&bytes[f.lines[hit].range.clone()])
        );
        let lost = f.snaps.iter().filter(|w| !s.snaps.contains(w)).count();
        let changed = s.snaps.iter().filter(|g| !f.snaps.contains(g)).count();
        // What is missing is damage said, or came back changed (a flip
        // that leaves valid JSON cannot be seen).
        let d = s.reader.damage();
        assert!(
            lost == 0 || !d.is_empty() || changed > 0,
            "{what}: {:?} {}",
            s.snaps.iter().map(|s| s.seq).collect::<Vec<_>>(),
            String::from_utf8_lossy(&bytes[f.lines[hit].range.clone()])
        );
        if !d.is_empty() {
            assert!(
                d.places.iter().any(|p| p.contains("flip.jsonl:")),
                "{what}: {d:?}"
            );
            assert!(d.lines <= 2, "{what}: {d:?}");
        }
        // The random-access reader (through the index, or the whole file
        // when the flip hit the index) reads the same intact snapshots.
        let (got, _) = random(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(contains_in_order(&got, &intact), "{what}");
    }
    // The compressed file: a flip spoils at most its frame (what zstd
    // decodes after it in the frame may be wrong or lost).
    let path = f.dir.join("flip.jsonl.zst");
    for _ in 0..200 {
        let at = (rng.next() % f.zst.len() as u64) as usize;
        let bit = 1u8 << (rng.next() % 8);
        let mut bytes = f.zst.clone();
        bytes[at] ^= bit;
        fs::write(&path, &bytes).unwrap();
        let hit = f.blocks.iter().position(|(r, _)| r.contains(&at));
        let block_of = |line: usize| {
            let s = f.lines[line].snapshot.unwrap_or(0);
            f.blocks.iter().position(|(_, snaps)| snaps.contains(&s))
        };
        let intact: Vec<&Snapshot> = (0..f.snaps.len())
            .filter(|&i| hit.is_none() || f.deps[i].iter().all(|&l| block_of(l) != hit))
            .map(|i| &f.snaps[i])
            .collect();
        let what = format!("bit {bit:#x} of byte {at} (block {hit:?})");
        let s = match stream(&path) {
            Ok(s) => s,
            Err(e) => {
                assert_eq!(hit, Some(0), "{what}: {e}");
                continue;
            }
        };
        assert!(s.error.is_none(), "{what}: {:?}", s.error);
        assert!(
            contains_in_order(&s.snaps, &intact),
            "{what}: read {:?}, intact {:?}, {:?} {:?}",
            s.snaps.iter().map(|s| s.seq).collect::<Vec<_>>(),
            intact.iter().map(|s| s.seq).collect::<Vec<_>>(),
            s.reader.damage(),
            s.reader.warnings()
        );
        let lost = f.snaps.iter().filter(|w| !s.snaps.contains(w)).count();
        let changed = s.snaps.iter().filter(|g| !f.snaps.contains(g)).count();
        assert!(
            lost == 0 || !s.reader.damage().is_empty() || changed > 0,
            "{what}: {:?} {:?}",
            s.snaps.iter().map(|s| s.seq).collect::<Vec<_>>(),
            s.reader.warnings()
        );
        let (got, _) = random(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(contains_in_order(&got, &intact), "{what}");
    }
}

/// Replaces the `k`th index record of a `.zst` file by `edit` of it.
fn edit_zst_index(zst: &[u8], k: usize, edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    let frames = index_frames(zst);
    let (at, n, _) = &frames[k];
    let json = zstd::bulk::decompress(&zst[at + 8..at + 8 + n], 1 << 22).unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    edit(&mut v);
    let payload = zstd::bulk::compress(serde_json::to_string(&v).unwrap().as_bytes(), 3).unwrap();
    let mut out = zst[..*at].to_vec();
    out.extend(INDEX_MAGIC);
    out.extend((payload.len() as u32).to_le_bytes());
    out.extend(&payload);
    out.extend(&zst[at + 8 + n..]);
    out
}

/// Replaces the `k`th index line of a plain file by `edit` of it.
fn edit_plain_index(plain: &[u8], k: usize, edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    let mut n = 0;
    let mut out = Vec::new();
    for l in plain.split_inclusive(|&b| b == b'\n') {
        if l.starts_with(b"{\"type\":\"index\"") {
            if n == k {
                let mut v: serde_json::Value = serde_json::from_slice(l).unwrap();
                edit(&mut v);
                out.extend(serde_json::to_string(&v).unwrap().as_bytes());
                out.push(b'\n');
                n += 1;
                continue;
            }
            n += 1;
        }
        out.extend(l);
    }
    out
}

#[test]
fn an_edited_index_is_caught_and_every_snapshot_still_read() {
    let f = fixture(12, 3);
    let last = f.blocks.len() - 1;
    let times: Vec<u64> = f.snaps.iter().map(|s| s.t_ms).collect();
    // The first record lists process lines (under `processes`), so the
    // edit of their strings below changes something.
    edit_plain_index(&f.plain, 0, |v| {
        assert!(
            v["processes"].as_array().is_some_and(|a| !a.is_empty()),
            "{v}"
        );
    });
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        // One digit of t0: 46 days.
        (
            "t0 digit",
            Box::new(|v| v["t0"] = (v["t0"].as_u64().unwrap() + 4_000_000_000).into()),
        ),
        (
            "dt",
            Box::new(|v| {
                let dt = v["dt"].as_array_mut().unwrap();
                if let Some(x) = dt.last_mut() {
                    *x = 61_000.into();
                }
            }),
        ),
        (
            "dt shorter",
            Box::new(|v| {
                v["dt"].as_array_mut().unwrap().pop();
            }),
        ),
        (
            "lines",
            Box::new(|v| v["lines"] = (v["lines"].as_u64().unwrap() + 1).into()),
        ),
        (
            "offset +100",
            Box::new(|v| v["offset"] = (v["offset"].as_u64().unwrap() + 100).into()),
        ),
        (
            "offset -1",
            Box::new(|v| v["offset"] = v["offset"].as_u64().unwrap().saturating_sub(1).into()),
        ),
        ("first", Box::new(|v| v["first"] = 5.into())),
        ("first_line", Box::new(|v| v["first_line"] = 2.into())),
        ("prev", Box::new(|v| v["prev"] = 7.into())),
        (
            "process strings",
            Box::new(|v| {
                let p = v["processes"].as_array_mut().and_then(|a| a.first_mut());
                if let Some(p) = p {
                    p["command"] = "rm -rf /".into();
                }
            }),
        ),
        (
            "event message",
            Box::new(|v| {
                if let Some(e) = v["events"].as_array_mut().and_then(|a| a.first_mut()) {
                    e["message"] = "made up".into();
                }
            }),
        ),
        (
            "events dropped",
            Box::new(|v| v["events"] = serde_json::json!([])),
        ),
    ];
    for (what, edit) in &edits {
        for k in [0, 1, last] {
            for (name, bytes) in [
                ("i.jsonl", edit_plain_index(&f.plain, k, edit)),
                ("i.jsonl.zst", edit_zst_index(&f.zst, k, edit)),
            ] {
                let path = f.dir.join(name);
                fs::write(&path, &bytes).unwrap();
                let case = format!("{name}: {what} in record {k}");
                let rec = Recording::open(&path).unwrap_or_else(|e| panic!("{case}: {e}"));
                let got: Vec<Snapshot> = rec
                    .iter()
                    .map(|s| s.unwrap_or_else(|e| panic!("{case}: {e}")))
                    .collect();
                same(&got, &f.snaps, &case);
                // After every block was read, no time of the index is left
                // unchecked, and nothing counts as damaged.
                assert_eq!(&rec.times()[..], &times[..], "{case}");
                assert!(rec.damage().is_empty(), "{case}: {:?}", rec.damage());
                // The streaming reader does not use the index at all.
                let s = stream(&path).unwrap();
                same(&s.snaps, &f.snaps, &case);
            }
        }
    }
    // A t0 edit is caught when the file is opened: the times are right
    // before any snapshot is read, and a warning says so.
    for (name, bytes) in [
        ("t.jsonl", edit_plain_index(&f.plain, 1, &edits[0].1)),
        ("t.jsonl.zst", edit_zst_index(&f.zst, 1, &edits[0].1)),
    ] {
        let path = f.dir.join(name);
        fs::write(&path, &bytes).unwrap();
        let rec = Recording::open(&path).unwrap();
        assert_eq!(&rec.times()[..], &times[..], "{name}");
        let w = rec.warnings().join("\n");
        assert!(w.contains("index"), "{w}");
    }
}

#[test]
fn a_damaged_index_frame_length_loses_nothing() {
    let f = fixture(12, 3);
    let frames = index_frames(&f.zst);
    let path = f.dir.join("len.jsonl.zst");
    for (k, (at, n, _)) in frames.iter().enumerate() {
        for bad in [n + 1000, n.saturating_sub(3), 0, u32::MAX as usize] {
            let mut bytes = f.zst.clone();
            bytes[at + 4..at + 8].copy_from_slice(&(bad as u32).to_le_bytes());
            fs::write(&path, &bytes).unwrap();
            let case = format!("frame {k}: length {bad}");
            let s = stream(&path).unwrap();
            same(&s.snaps, &f.snaps, &case);
            assert!(
                s.reader.damage().is_empty(),
                "{case}: {:?}",
                s.reader.damage()
            );
            let (got, rec) = random(&path).unwrap();
            same(&got, &f.snaps, &case);
            assert!(rec.damage().is_empty(), "{case}: {:?}", rec.damage());
        }
    }
}

/// A `.zst` file: a frame holding `head`, then `rest`.
fn zst_file(head: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut out = zstd::bulk::compress(head, 3).unwrap();
    out.extend_from_slice(rest);
    out
}

fn header_line() -> Vec<u8> {
    let (h, _) = small_snapshots(1);
    let mut line = serde_json::to_vec(&serde_json::json!({
        "type": "header", "format": "vramwatch-recording", "version": VERSION,
        "vramwatch_version": "0.1.0", "host": h.host, "start_ms": T0,
        "interval_ms": 1000, "part": 0, "system": h.system,
    }))
    .unwrap();
    line.push(b'\n');
    line
}

/// A zstd frame of `n` RLE blocks of 128 KiB of `byte`: 4 bytes for each
/// 128 KiB of text.
fn rle_frame(byte: u8, n: usize) -> Vec<u8> {
    let mut f = FRAME_MAGIC.to_vec();
    // No content size, no checksum; a window of 2^17.
    f.extend([0x00, 0x38]);
    for i in 0..n {
        let last = u32::from(i + 1 == n);
        let head = (128u32 << 10) << 3 | 1 << 1 | last;
        f.extend(&head.to_le_bytes()[..3]);
        f.push(byte);
    }
    f
}

#[test]
fn a_decompression_bomb_trips_the_guard() {
    let d = tempfile::tempdir().unwrap();
    // 4 MiB that decompress to 128 GiB: one line with no end, and lines
    // that are empty.
    for (name, byte) in [("line.jsonl.zst", b'x'), ("lines.jsonl.zst", b'\n')] {
        let path = d.path().join(name);
        fs::write(&path, zst_file(&header_line(), &rle_frame(byte, 1 << 20))).unwrap();
        let t = Instant::now();
        let s = stream(&path).unwrap();
        match s.error {
            Some(RecordError::TooLarge { text, .. }) => {
                assert!(
                    text <= GUARD_FLOOR + MAX_RATIO * (4 << 20) + (1 << 20),
                    "{text}"
                )
            }
            // Empty lines: given up on long before.
            Some(RecordError::TooDamaged { lines, .. }) if byte == b'\n' => {
                assert_eq!(lines, vramwatch::record::MAX_BAD_RUN)
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(s.reader.stats().longest_line <= MAX_LINE);
        let e = Recording::open(&path).err().expect("the guard trips");
        let e = e.to_string();
        assert!(
            e.contains("decompression bomb") || e.contains("in a row"),
            "{e}"
        );
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    }
}

#[test]
fn runs_of_skippable_frames_open_in_linear_time() {
    let d = tempfile::tempdir().unwrap();
    let head = header_line();
    let n = (4 << 20) / 8;
    let mut zero = Vec::with_capacity(4 << 20);
    let mut past_end = Vec::with_capacity(4 << 20);
    let mut to_end = Vec::with_capacity(4 << 20);
    let mut looking = Vec::with_capacity(4 << 20);
    for i in 0..n {
        zero.extend(INDEX_MAGIC);
        zero.extend([0u8; 4]);
        past_end.extend(INDEX_MAGIC);
        past_end.extend(0xFFFF_FFF0u32.to_le_bytes());
        to_end.extend(INDEX_MAGIC);
        to_end.extend((((n - i - 1) * 8) as u32).to_le_bytes());
        // Headers whose payload looks like an index record's frame.
        looking.extend(INDEX_MAGIC);
        looking.extend(0xFFFF_FFF0u32.to_le_bytes());
        looking.extend(FRAME_MAGIC);
    }
    for (name, rest, damaged) in [
        ("zero.jsonl.zst", zero, false),
        ("past.jsonl.zst", past_end, true),
        ("toend.jsonl.zst", to_end, false),
        ("looking.jsonl.zst", looking, true),
    ] {
        let path = d.path().join(name);
        fs::write(&path, zst_file(&head, &rest)).unwrap();
        let t = Instant::now();
        let s = stream(&path).unwrap();
        assert!(s.error.is_none() && s.snaps.is_empty(), "{name}");
        assert_eq!(
            !s.reader.damage().is_empty(),
            damaged,
            "{name}: {:?}",
            s.reader.damage()
        );
        let rec = Recording::open(&path).unwrap();
        assert!(rec.is_empty());
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{name}: {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn crafted_headers_fifos_and_devices_say_what_they_are() {
    let f = fixture(4, 3);
    let rest = &f.plain[f.lines[0].range.end..];
    let head = std::str::from_utf8(&f.plain[..f.lines[0].range.end]).unwrap();
    let ours = format!("\"version\":{VERSION},");
    assert!(head.contains(&ours), "{head}");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "str.jsonl",
            head.replace(&ours, "\"version\":\"1\",").into(),
            "the string \"1\"",
        ),
        (
            "neg.jsonl",
            head.replace(&ours, "\"version\":-1,").into(),
            "is -1",
        ),
        (
            "big.jsonl",
            head.replace(&ours, "\"version\":18446744073709551616,")
                .into(),
            "18446744073709551616, which is not a format version",
        ),
        (
            "none.jsonl",
            head.replace(&ours, "").into(),
            "has no \"version\"",
        ),
        ("zeros.jsonl", vec![0u8; 4096], "only zero bytes"),
        ("gz.jsonl", vec![0x1F, 0x8B, 8, 0, 0, 0], "gzip"),
        (
            "rand.jsonl.zst",
            {
                let mut r = Rng(7);
                let mut b = FRAME_MAGIC.to_vec();
                b.extend((0..5000).map(|_| r.next() as u8));
                b
            },
            "frame at byte 0 cannot be decompressed",
        ),
    ];
    for (name, mut bytes, want) in cases {
        if name.ends_with("jsonl") && bytes.ends_with(b"\n") {
            bytes.extend_from_slice(rest);
        }
        let path = f.dir.join(name);
        fs::write(&path, &bytes).unwrap();
        for e in [
            Reader::open(&path).err().map(|e| e.to_string()),
            Recording::open(&path).err().map(|e| e.to_string()),
        ] {
            let e = e.unwrap_or_else(|| panic!("{name} opened"));
            assert!(e.contains(name) && e.contains(want), "{e}");
        }
    }
    // A byte order mark is named, and read past.
    let path = f.dir.join("bom.jsonl");
    let mut bytes = vec![0xEF, 0xBB, 0xBF];
    bytes.extend(&f.plain);
    fs::write(&path, &bytes).unwrap();
    let s = stream(&path).unwrap();
    same(&s.snaps, &f.snaps, "bom");
    assert!(
        s.reader
            .warnings()
            .iter()
            .any(|w| w.contains("byte order mark"))
    );
    let (got, rec) = random(&path).unwrap();
    same(&got, &f.snaps, "bom");
    assert!(rec.warnings().iter().any(|w| w.contains("byte order mark")));
    // A FIFO and a device: refused at once, not read (which would hang or
    // never end).
    let fifo = f.dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let mut paths = vec![PathBuf::from("/dev/zero")];
    if made.is_ok_and(|s| s.success()) {
        paths.push(fifo);
    }
    for p in paths {
        let t = Instant::now();
        for e in [
            Reader::open(&p).err().map(|e| e.to_string()),
            Recording::open(&p).err().map(|e| e.to_string()),
        ] {
            let e = e.expect("refused");
            assert!(e.contains("not a regular file"), "{e}");
        }
        assert!(t.elapsed() < Duration::from_secs(5));
    }
    // A file name's escape sequences do not reach a message.
    let path = f.dir.join("a\x1b]0;title\x07b.jsonl");
    fs::write(&path, b"hello\n").unwrap();
    let e = Reader::open(&path).err().unwrap().to_string();
    assert!(
        !e.contains('\x1b') && !e.contains('\x07') && e.contains("ab.jsonl"),
        "{e:?}"
    );
}

#[test]
fn strings_from_a_recording_are_cleaned() {
    let f = fixture(6, 3);
    let text = String::from_utf8(f.plain.clone()).unwrap();
    let evil = text
        .replace("\"host\":\"", "\"host\":\"\\u001b]0;pwned\\u0007")
        .replace("\"name\":\"", "\"name\":\"\\u001b[31m")
        .replace("\"message\":\"", "\"message\":\"\\u001b[2J");
    let evil: String = evil
        .lines()
        .filter(|l| !l.starts_with("{\"type\":\"index\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let path = f.dir.join("evil.jsonl");
    fs::write(&path, evil).unwrap();
    let s = stream(&path).unwrap();
    let all = format!("{:?} {:?}", s.reader.header(), s.snaps);
    assert!(!all.contains('\u{1b}') && !all.contains('\u{7}'), "{all}");
    let (got, rec) = random(&path).unwrap();
    let all = format!("{:?} {:?} {:?}", rec.header(), got, rec.events());
    assert!(!all.contains('\u{1b}') && !all.contains('\u{7}'));
}

/// Arbitrary damage to a small recording: bytes inserted, removed,
/// overwritten, spliced from elsewhere. No reader panics or holds more
/// than its limits; what it reads comes from the file.
mod arbitrary {
    use super::*;
    use proptest::prelude::*;

    fn files() -> &'static (Fixture, Fixture) {
        static F: std::sync::OnceLock<(Fixture, Fixture)> = std::sync::OnceLock::new();
        F.get_or_init(|| (fixture(6, 2), fixture(3, 1)))
    }

    #[derive(Debug, Clone)]
    enum Op {
        Flip(usize, u8),
        Insert(usize, Vec<u8>),
        Remove(usize, usize),
        Splice(usize, usize, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Op::Flip(a, b)),
            (
                any::<usize>(),
                proptest::collection::vec(any::<u8>(), 1..40)
            )
                .prop_map(|(a, b)| Op::Insert(a, b)),
            (any::<usize>(), 1..200usize).prop_map(|(a, n)| Op::Remove(a, n)),
            (any::<usize>(), any::<usize>(), 1..300usize).prop_map(|(a, b, n)| Op::Splice(a, b, n)),
        ]
    }

    fn apply(bytes: &mut Vec<u8>, op: &Op) {
        let len = bytes.len().max(1);
        match op {
            Op::Flip(a, b) => {
                if !bytes.is_empty() {
                    bytes[a % len] ^= b | 1;
                }
            }
            Op::Insert(a, v) => {
                let at = a % (bytes.len() + 1);
                bytes.splice(at..at, v.iter().copied());
            }
            Op::Remove(a, n) => {
                let at = a % len;
                let end = (at + n).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            Op::Splice(a, b, n) => {
                let (from, to) = (a % len, b % len);
                let end = (from + n).min(bytes.len());
                let chunk: Vec<u8> = bytes.get(from..end).unwrap_or(&[]).to_vec();
                let to = to.min(bytes.len());
                bytes.splice(to..to, chunk);
            }
        }
    }

    fn read_all(path: &Path) {
        if let Ok(s) = stream(path) {
            assert!(s.snaps.len() as u64 == s.reader.snapshots());
        }
        if let Ok(rec) = Recording::open(path) {
            for i in 0..rec.len() {
                let _ = rec.get(i);
            }
            let _ = (rec.warnings(), rec.damage(), rec.times(), rec.events());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn no_reader_panics_on_damaged_bytes(zst in any::<bool>(), small in any::<bool>(), ops in proptest::collection::vec(op(), 1..6)) {
            let (a, b) = files();
            let f = if small { b } else { a };
            let mut bytes = if zst { f.zst.clone() } else { f.plain.clone() };
            for o in &ops {
                apply(&mut bytes, o);
            }
            let d = tempfile::tempdir().unwrap();
            let path = d.path().join(if zst { "p.jsonl.zst" } else { "p.jsonl" });
            fs::write(&path, &bytes).unwrap();
            read_all(&path);
        }

        #[test]
        fn no_reader_panics_on_random_bytes(zst in any::<bool>(), bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let mut b = if zst { FRAME_MAGIC.to_vec() } else { Vec::new() };
            b.extend(bytes);
            let d = tempfile::tempdir().unwrap();
            let path = d.path().join("r.jsonl.zst");
            fs::write(&path, &b).unwrap();
            read_all(&path);
        }
    }
}

/// The CLI: exit codes, messages, and `export -o` leaving no partial file.
mod cli {
    use super::*;
    use assert_cmd::Command;
    use predicates::prelude::*;

    fn vw() -> Command {
        Command::cargo_bin("vramwatch").expect("binary")
    }

    #[test]
    fn damage_is_skipped_counted_and_exits_1_and_export_leaves_no_partial_file() {
        let f = fixture(12, 3);
        // One snapshot line broken (same length: the index stays right).
        let snap = f
            .lines
            .iter()
            .filter(|l| l.snapshot == Some(5))
            .find(|l| f.plain[l.range.start..].starts_with(b"{\"type\":\"snapshot\""));
        let l = snap.unwrap().clone();
        let mut bytes = f.plain.clone();
        bytes[l.range.start + 25] = b'?';
        let no = f.lines.iter().position(|x| x.range == l.range).unwrap() + 1;
        let path = f.dir.join("bad.jsonl");
        fs::write(&path, &bytes).unwrap();
        vw().arg("report")
            .arg(&path)
            .assert()
            .code(1)
            .stdout(predicate::str::contains("11 snapshots"))
            .stderr(
                predicate::str::contains(format!("bad.jsonl:{no}:"))
                    .and(predicate::str::contains(
                        "1 damaged line skipped, 1 snapshot lost",
                    ))
                    .and(predicate::str::contains("exit code 1")),
            );
        let out = f.dir.join("out.csv");
        vw().args(["export", "--csv", "-o"])
            .arg(&out)
            .arg(&path)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("wrote 11 rows"));
        assert_eq!(fs::read_to_string(&out).unwrap().lines().count(), 12);
        // A bomb stops the export: no output file, no temporary one.
        let bomb = f.dir.join("bomb.jsonl.zst");
        fs::write(&bomb, zst_file(&header_line(), &rle_frame(b'x', 1 << 16))).unwrap();
        fs::remove_file(&out).unwrap();
        vw().args(["export", "--csv", "-o"])
            .arg(&out)
            .arg(&bomb)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("decompression bomb"));
        let left: Vec<_> = fs::read_dir(&f.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("out.csv"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn fifos_devices_and_full_disks_get_a_clear_error() {
        let f = fixture(4, 3);
        let fifo = f.dir.join("pipe");
        if std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
        {
            for cmd in [vec!["report"], vec!["export", "--csv"]] {
                vw().args(&cmd)
                    .arg(&fifo)
                    .timeout(Duration::from_secs(10))
                    .assert()
                    .code(2)
                    .stderr(predicate::str::contains("not a regular file"));
            }
        }
        let path = f.dir.join("ok.jsonl");
        fs::write(&path, &f.plain).unwrap();
        if Path::new("/dev/full").exists() {
            vw().args(["report", "--svg", "/dev/full"])
                .arg(&path)
                .assert()
                .code(1)
                .stderr(
                    predicate::str::contains("/dev/full: no space left on device")
                        .and(predicate::str::contains("Os {").not()),
                );
        }
    }
}

fn write_sim(path: &Path, scenario: &str, n: u64, opts: WriterOptions) -> u64 {
    let w = SimWorld::new(scenario, 5, T0).expect("scenario");
    let mut wr = Writer::create(path, Header::new(&w.info(), 1000, T0), opts).expect("create");
    for s in w.snapshots(T0, 1000, n, "me") {
        wr.write(&s);
    }
    wr.finish().expect("finish").snapshots
}

/// Writes long recordings for measuring by hand (peak memory of `report`
/// and `export` on them):
/// `VW_GEN=DIR VW_GEN_SECS=3600 cargo test --test it corruption::generate -- --ignored`.
#[test]
#[ignore]
fn generate() {
    let Ok(dir) = std::env::var("VW_GEN") else {
        return;
    };
    let secs: u64 = std::env::var("VW_GEN_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600);
    let scenario = std::env::var("VW_GEN_SCENARIO").unwrap_or_else(|_| "crowded".into());
    let path = Path::new(&dir).join(format!("{scenario}-{secs}.jsonl.zst"));
    write_sim(&path, &scenario, secs, WriterOptions::default());
}
