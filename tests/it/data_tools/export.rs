//! `vramwatch export --csv`: the long table of `--processes`, exact bytes
//! beside the MiB, one spelling of a process's kind, cleaned cells, the
//! header of an empty table, and `-o` refusing to overwrite without
//! `--force`.

use std::fs;

use predicates::prelude::*;

use vramwatch::model::Snapshot;
use vramwatch::record::{Writer, WriterOptions};

use super::{data, vw};

fn csv_table(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let head = r.headers().unwrap().iter().map(str::to_owned).collect();
    let rows = r
        .records()
        .map(|x| x.unwrap().iter().map(str::to_owned).collect())
        .collect();
    (head, rows)
}

#[test]
fn export_processes_is_one_long_table_with_exact_bytes() {
    let d = data();
    for file in ["run.jsonl", "run.jsonl.zst"] {
        let path = d.dir.path().join(file);
        let out = vw()
            .args(["export", "--csv", "--processes"])
            .arg(&path)
            .assert()
            .success();
        let (head, rows) = csv_table(&String::from_utf8_lossy(&out.get_output().stdout));
        let col = |n: &str| {
            head.iter()
                .position(|h| h == n)
                .unwrap_or_else(|| panic!("no column {n} in {head:?}"))
        };
        assert_eq!(&head[..4], ["time", "t_ms", "seq", "gpu"]);
        let want: Vec<_> = d
            .snaps
            .iter()
            .flat_map(|s| s.procs.iter().map(move |p| (s, p)))
            .collect();
        assert_eq!(rows.len(), want.len(), "{file}");
        for (row, (s, p)) in rows.iter().zip(&want) {
            assert_eq!(row[col("t_ms")], s.t_ms.to_string());
            assert_eq!(row[col("time")], vramwatch::record::when(s.t_ms));
            assert!(row[col("time")].ends_with('Z') && row[col("time")].contains('.'));
            assert_eq!(row[col("gpu")], p.gpu.to_string());
            assert_eq!(row[col("pid")], p.pid.to_string());
            assert_eq!(row[col("start_time")], p.start_time.to_string());
            assert_eq!(row[col("kind")], "compute", "the recording's spelling");
            assert_eq!(row[col("mem_bytes")], p.mem.unwrap().to_string());
            assert_eq!(row[col("mem_peak_bytes")], p.mem_peak.unwrap().to_string());
            assert_eq!(
                row[col("rss_bytes")],
                p.rss.map_or(String::new(), |r| r.to_string())
            );
            let mib: f64 = row[col("mem_mib")].parse().unwrap();
            assert_eq!(mib * 1_048_576.0, p.mem.unwrap() as f64);
            assert_eq!(row[col("user")], p.user.as_deref().unwrap_or(""));
            assert_eq!(row[col("command")], p.command.as_deref().unwrap_or(""));
            assert!(["0", "1"].contains(&row[col("leak")].as_str()), "{row:?}");
            for c in ["growth_bps", "phase"] {
                col(c);
            }
        }
        // The per-GPU table has the exact bytes beside the MiB.
        let out = vw()
            .args(["export", "--csv", "--gpu", "1"])
            .arg(&path)
            .assert()
            .success();
        let (head, rows) = csv_table(&String::from_utf8_lossy(&out.get_output().stdout));
        let col = |n: &str| head.iter().position(|h| h == n).unwrap();
        let g = &d.snaps[5].gpus.iter().find(|g| g.index == 1).unwrap();
        assert_eq!(
            rows[5][col("mem_used_bytes")],
            g.mem.unwrap().used.to_string()
        );
        assert_eq!(
            rows[5][col("mem_peak_bytes")],
            g.mem_peak.unwrap().to_string()
        );
        assert_eq!(
            rows[5][col("mem_total_bytes")],
            g.mem.unwrap().total.to_string()
        );
    }
    // --process PID keeps one process, --gpu one GPU.
    let pid = d.snaps[10].procs[0].pid;
    let out = vw()
        .args(["export", "--csv", "--process", &pid.to_string()])
        .arg(d.dir.path().join("run.jsonl"))
        .assert()
        .success();
    let (head, rows) = csv_table(&String::from_utf8_lossy(&out.get_output().stdout));
    let n = d
        .snaps
        .iter()
        .flat_map(|s| &s.procs)
        .filter(|p| p.pid == pid)
        .count();
    assert_eq!(rows.len(), n);
    assert!(rows.iter().all(|r| r[4] == pid.to_string()) && head[4] == "pid");
    let out = vw()
        .args(["export", "--csv", "--processes", "--gpu", "0"])
        .arg(d.dir.path().join("run.jsonl"))
        .assert()
        .success();
    let (_, rows) = csv_table(&String::from_utf8_lossy(&out.get_output().stdout));
    let n = d
        .snaps
        .iter()
        .flat_map(|s| &s.procs)
        .filter(|p| p.gpu == 0)
        .count();
    assert_eq!(rows.len(), n);
    assert!(rows.iter().all(|r| r[3] == "0"));
}

#[test]
fn export_cells_are_cleaned_and_an_empty_table_keeps_its_header() {
    let d = tempfile::tempdir().unwrap();
    let w = vramwatch::source::sim::SimWorld::new("idle", 1, 1_764_000_000_000).unwrap();
    let mut snaps: Vec<Snapshot> = (0..3)
        .map(|i| w.snapshot(i, 1_764_000_000_000 + i * 1000, "me"))
        .collect();
    for s in &mut snaps {
        for p in &mut s.procs {
            p.command = Some("=HYPERLINK(\"http://x\")\u{1b}[31m".into());
            p.user = Some("-alice".into());
        }
    }
    let header = vramwatch::record::Header::new(&w.info(), 1000, 1_764_000_000_000);
    let path = d.path().join("f.jsonl");
    let mut wr = Writer::create(&path, header.clone(), WriterOptions::default()).unwrap();
    for s in &snaps {
        wr.write(s);
    }
    wr.finish().unwrap();
    let out = vw()
        .args(["export", "--csv", "--processes"])
        .arg(&path)
        .assert()
        .success();
    let (head, rows) = csv_table(&String::from_utf8_lossy(&out.get_output().stdout));
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r[col("command")], "'=HYPERLINK(\"http://x\")");
        assert_eq!(r[col("user")], "'-alice");
    }

    // No process at all: the header alone.
    for s in &mut snaps {
        s.procs.clear();
    }
    let empty = d.path().join("empty.jsonl");
    let mut wr = Writer::create(&empty, header, WriterOptions::default()).unwrap();
    for s in &snaps {
        wr.write(s);
    }
    wr.finish().unwrap();
    let out = vw()
        .args(["export", "--csv", "--processes"])
        .arg(&empty)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with("time,t_ms,seq,gpu,pid,start_time,kind,"),
        "{text}"
    );
}

#[test]
fn export_refuses_to_overwrite_without_force() {
    let d = data();
    let csv = d.dir.path().join("out.csv");
    let file = d.dir.path().join("run.jsonl.zst");
    fs::write(&csv, "keep me\n").unwrap();
    vw().args(["export", "--csv", "-o"])
        .arg(&csv)
        .arg(&file)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("out.csv already exists")
                .and(predicate::str::contains("--force")),
        );
    assert_eq!(fs::read_to_string(&csv).unwrap(), "keep me\n");
    vw().args(["export", "--csv", "--processes", "--force", "-o"])
        .arg(&csv)
        .arg(&file)
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote"));
    assert!(
        fs::read_to_string(&csv)
            .unwrap()
            .starts_with("time,t_ms,seq,gpu,pid,")
    );
    // A new file needs no --force; --force needs -o.
    let new = d.dir.path().join("new.csv");
    vw().args(["export", "--csv", "-o"])
        .arg(&new)
        .arg(&file)
        .assert()
        .success();
    vw().args(["export", "--csv", "--force"])
        .arg(&file)
        .assert()
        .code(2);
    let left: Vec<String> = fs::read_dir(d.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// An output that is a link is written through, not replaced by a file of
/// its own (`-o /dev/stdout` is a link to `/proc/self/fd/1`); a device or
/// a pipe is written in place and not synced (that fails with EINVAL), so
/// `export`, `report --svg` and `record` end with status 0 there.
#[test]
fn links_devices_and_pipes_are_written_in_place() {
    let is_link =
        |p: &std::path::Path| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    let d = data();
    let run = d.dir.path().join("run.jsonl");
    let target = d.dir.path().join("target.csv");
    let link = d.dir.path().join("link.csv");
    fs::write(&target, "old\n").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    vw().args(["export", "--csv", "-o"])
        .arg(&link)
        .arg(&run)
        .assert()
        .failure()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
    vw().args(["export", "--csv", "--force", "-o"])
        .arg(&link)
        .arg(&run)
        .assert()
        .success();
    assert!(is_link(&link), "{} was replaced", link.display());
    let text = fs::read_to_string(&target).unwrap();
    assert!(
        text.starts_with("time,") && text.lines().count() > 2,
        "{text}"
    );
    // A link whose target is not there yet: the target is made.
    let svg = d.dir.path().join("drawn.svg");
    let svg_link = d.dir.path().join("link.svg");
    std::os::unix::fs::symlink(&svg, &svg_link).unwrap();
    vw().args(["report", "--svg"])
        .arg(&svg_link)
        .arg(&run)
        .assert()
        .success();
    assert!(is_link(&svg_link), "{} was replaced", svg_link.display());
    assert!(fs::read_to_string(&svg).unwrap().contains("<svg"));
    // A device.
    vw().args(["export", "--csv", "--force", "-o", "/dev/null"])
        .arg(&run)
        .assert()
        .success();
    vw().args(["report", "--svg", "/dev/null"])
        .arg(&run)
        .assert()
        .success();
    let to_null = ["--demo", "--duration", "1s", "--force", "-o", "/dev/null"];
    vw().arg("record").args(to_null).assert().success();
    // A pipe: `-o /dev/stdout` while the output is one.
    let out = vw()
        .args(["export", "--csv", "--force", "-o", "/dev/stdout"])
        .arg(&run)
        .assert()
        .success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).starts_with("time,"));
}
