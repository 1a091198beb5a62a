//! `vramwatch score` as a user runs it, and docs/analysis.md's "Where it
//! stands" tables kept equal to what it prints.

use super::*;

/// docs/analysis.md's "Where it stands" tables are what `score --by set`
/// and `score --by shape` print over every recording now: a change that
/// moves a figure fails here until the doc says so.
#[test]
fn where_it_stands_in_the_docs_is_what_score_prints_now() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/analysis.md")).unwrap();
    for by in ["set", "shape"] {
        let out = assert_cmd::Command::cargo_bin("vramwatch")
            .unwrap()
            .current_dir(&root)
            .args(["score", "--by", by, "tests/fixtures/corpus"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let printed = String::from_utf8(out.stdout).unwrap();
        assert!(printed.contains("| **all** |"), "{printed}");
        let open = format!("<!-- vramwatch score --by {by} tests/fixtures/corpus -->\n");
        let start = doc.find(&open).map(|i| i + open.len());
        let block = start.and_then(|i| doc[i..].find("<!-- end -->").map(|j| &doc[i..i + j]));
        assert_eq!(
            block,
            Some(printed.as_str()),
            "docs/analysis.md, \"Where it stands\": the table by {by} is not what \
             `vramwatch score --by {by} tests/fixtures/corpus` prints now"
        );
    }
}

#[test]
fn a_folder_given_to_score_is_the_recordings_in_it_with_their_truth() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let score = |args: &[&str]| {
        assert_cmd::Command::cargo_bin("vramwatch")
            .unwrap()
            .current_dir(&root)
            .arg("score")
            .args(args)
            .output()
            .unwrap()
    };
    let set = "tests/fixtures/corpus/twentyninth";
    let mut files: Vec<String> = std::fs::read_dir(root.join(set))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| format!("{set}/{}", e.file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".jsonl.zst"))
        .collect();
    files.sort();
    let by_files = score(&files.iter().map(String::as_str).collect::<Vec<_>>());
    let by_folder = score(&[set]);
    assert!(by_folder.status.success(), "{by_folder:?}");
    assert_eq!(by_folder.stdout, by_files.stdout);
    assert!(String::from_utf8_lossy(&by_folder.stdout).contains("7 runs (4 OOM"));
    // Runs from more than one set say which they are from.
    let two = score(&[set, "tests/fixtures/corpus/thirtieth"]);
    let text = String::from_utf8_lossy(&two.stdout);
    assert!(
        text.contains("| twentyninth/ kv_plateau/default ×1 |"),
        "{text}"
    );
    assert!(
        text.contains("| thirtieth/ two_proc/default ×1 |"),
        "{text}"
    );
    // A recording given twice (in its folder and by name) is scored once.
    let twice = score(&[set, &files[0]]);
    assert_eq!(twice.stdout, by_folder.stdout);
    // A folder with no recording and truth in it is named, exit status 2.
    let none = score(&["src"]);
    assert_eq!(none.status.code(), Some(2), "{none:?}");
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        err.contains("src: no recording with its truth beside it"),
        "{err}"
    );
}

#[test]
fn score_by_a_group_that_is_not_one_is_a_usage_error() {
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .args(["score", "--by", "speed", "x.jsonl.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'speed'") && err.contains("set") && err.contains("shape"),
        "{err}"
    );
}

#[test]
fn score_prints_the_table_and_says_what_is_missing() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/tune");
    let rec = dir.join("01-gpu0-leak_keep-s1.0.jsonl.zst");
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .arg("score")
        .arg(&rec)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| leak_keep/logits ×1 | OOM |"), "{text}");
    assert!(text.contains("1 run (1 OOM, 0 must not alarm)"), "{text}");
    // JSON for machines.
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .args(["score", "--json"])
        .arg(&rec)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["oom_runs"], 1);
    // A recording without its truth: the error names the file it wanted.
    let tmp = tempfile::tempdir().unwrap();
    let lone = tmp.path().join("x.jsonl.zst");
    std::fs::copy(&rec, &lone).unwrap();
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .arg("score")
        .arg(&lone)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("x.truth.json") && err.contains("cannot read"),
        "{err}"
    );
    // A recording that is not there is named, not the truth beside it.
    let out = assert_cmd::Command::cargo_bin("vramwatch")
        .unwrap()
        .arg("score")
        .arg(tmp.path().join("nope.jsonl.zst"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nope.jsonl.zst") && !err.contains("nope.truth.json"),
        "{err}"
    );
}
