//! `vramwatch score RECORDING…`: how well the analysis foresaw what really
//! happened in recorded runs. Each recording comes with its ground truth
//! (`--truth FILE`, or `<name>.truth.json` beside `<name>.jsonl[.zst]`, as
//! `python/workloads/run_corpus.sh` writes them); the recording is analysed
//! snapshot by snapshot exactly as the dashboard would have, and the
//! forecasts at T−120/−60/−30/−10 s before each OOM, the leak flag and any
//! false alarm are printed as a markdown table (docs/analysis.md), or JSON.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::analysis::AnalysisConfig;
use crate::analysis::truth::{RunScore, Summary, Truth, grouped, markdown, score_run};
use crate::cli::{ScoreArgs, ScoreBy, SourceArgs};
use crate::record::{RecordError, Recording};

/// `<dir>/<name>.truth.json` for `<dir>/<name>.jsonl[.zst]` (the name as
/// the file system has it, UTF-8 or not).
pub fn truth_beside(recording: &Path) -> PathBuf {
    let name = recording.file_name().unwrap_or_default();
    let is = |p: &Path, ext: &str| p.extension() == Some(std::ffi::OsStr::new(ext));
    let as_path = Path::new(name);
    let stem = if is(as_path, "jsonl") {
        as_path.file_stem()
    } else if is(as_path, "zst") {
        let inner = as_path.file_stem().map(Path::new);
        inner.filter(|i| is(i, "jsonl")).and_then(Path::file_stem)
    } else {
        None
    };
    let mut truth = stem.unwrap_or(name).to_os_string();
    truth.push(".truth.json");
    recording.with_file_name(truth)
}

/// Scores one recording against its truth. Damage in the recording (a
/// line that cannot be read) is told on stderr as it is for `report`; the
/// score is still given, over what could be read.
pub fn score_file(recording: &Path, truth: &Path, cfg: &AnalysisConfig) -> Result<RunScore> {
    let (score, _) = score_file_checked(recording, truth, cfg)?;
    Ok(score)
}

/// [`score_file`], and the error that says the recording was read with
/// damage skipped (exit status 1), if it was.
fn score_file_checked(
    recording: &Path,
    truth: &Path,
    cfg: &AnalysisConfig,
) -> Result<(RunScore, Option<RecordError>)> {
    // The recording first: a mistyped recording is named as such, not as
    // the truth file beside where it would be.
    let rec = Recording::open(recording)?;
    let t = Truth::read(truth)?;
    let system = rec.system();
    let Some(gpu) = t.gpu_in(&system) else {
        let why = match t.device_uuid.as_deref() {
            Some(u) => format!(
                "device_uuid {} is no GPU of the recording, and there is no device",
                crate::sanitize::clean_capped(u, 80)
            ),
            None => "says neither device nor device_uuid".to_owned(),
        };
        bail!(
            "{}: {why}, so its GPU in {} is unknown",
            crate::sanitize::path(truth),
            crate::sanitize::path(recording)
        );
    };
    if !system.gpus.iter().any(|g| g.index == gpu) {
        bail!(
            "{}: GPU {gpu} (from {}) is not in the recording ({} GPU(s))",
            recording.display(),
            truth.display(),
            system.gpus.len()
        );
    }
    // An unreadable snapshot is skipped (the reader says which), as replay does.
    let snaps = rec.iter().filter_map(Result::ok);
    let name = recording
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let score = score_run(&name, &t, gpu, cfg, snaps);
    for w in rec.warnings() {
        crate::tell!("vramwatch: warning: {w}");
    }
    Ok((score, rec.incomplete("score")))
}

/// Most recordings a folder given to `score` may hold.
const MAX_IN_FOLDER: usize = 10_000;

/// A recording to score, and the set it belongs to: the folder it was
/// found in, named from the folder given (`tune/` in `corpus/tune/`), or
/// the folder of a recording given by name.
struct Given {
    path: PathBuf,
    set: String,
}

/// The recordings `score` was given, each folder replaced by the
/// recordings in it and in the folders directly in it (a corpus and its
/// sets) that have their truth beside them, in path order; links to
/// recordings are followed, links to folders inside it are not. A
/// recording given twice (by name and in a folder, or two ways) is scored
/// once.
fn recordings(given: &[PathBuf]) -> Result<Vec<Given>> {
    let mut out: Vec<Given> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut add = |path: PathBuf, set: String| {
        if seen.insert(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone())) {
            out.push(Given { path, set });
        }
    };
    for path in given {
        if !path.is_dir() {
            let set = path
                .parent()
                .map_or(String::new(), |d| d.display().to_string());
            let set = if set.is_empty() { ".".into() } else { set };
            add(path.clone(), format!("{set}/"));
            continue;
        }
        let mut found = Vec::new();
        let mut dirs = vec![(path.clone(), 0)];
        while let Some((dir, depth)) = dirs.pop() {
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| anyhow::Error::new(e).context(crate::sanitize::path(&dir)))?;
            for e in entries {
                let e =
                    e.map_err(|e| anyhow::Error::new(e).context(crate::sanitize::path(&dir)))?;
                let kind = e.file_type()?;
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                let recording = name.ends_with(".jsonl.zst") || name.ends_with(".jsonl");
                let file = kind.is_file()
                    || (kind.is_symlink() && std::fs::metadata(&p).is_ok_and(|m| m.is_file()));
                if kind.is_dir() && depth == 0 {
                    dirs.push((p, depth + 1));
                } else if file && recording && truth_beside(&p).is_file() {
                    found.push(p);
                    if found.len() > MAX_IN_FOLDER {
                        bail!(
                            "{}: more than {MAX_IN_FOLDER} recordings with their truth; give fewer",
                            crate::sanitize::path(path)
                        );
                    }
                }
            }
        }
        if found.is_empty() {
            bail!(
                "{}: no recording with its truth beside it (NAME.jsonl.zst and NAME.truth.json) here or in the folders directly in it",
                crate::sanitize::path(path)
            );
        }
        found.sort();
        let own = path
            .file_name()
            .map_or(".".into(), |n| n.to_string_lossy().into_owned());
        for f in found {
            let set = match f.parent().and_then(|d| d.strip_prefix(path).ok()) {
                Some(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
                _ => own.clone(),
            };
            add(f, format!("{set}/"));
        }
    }
    Ok(out)
}

pub fn run(args: &ScoreArgs, src: &SourceArgs) -> Result<()> {
    if args.truth.is_some() && (args.recordings.len() != 1 || args.recordings[0].is_dir()) {
        bail!(
            "--truth names the truth of one recording; give one recording, or none of --truth to use <name>.truth.json beside each"
        );
    }
    let given = recordings(&args.recordings)?;
    let config = crate::config::load(src.config.as_deref())?;
    let cfg = AnalysisConfig::from_config(&config);
    let mut runs = Vec::new();
    let mut damaged = None;
    for g in &given {
        let r = &g.path;
        let truth = args.truth.clone().unwrap_or_else(|| truth_beside(r));
        // The recording's own errors name it (`x.jsonl.zst: no such
        // file`); the others are told as met scoring it.
        let (s, damage) =
            score_file_checked(r, &truth, &cfg).map_err(|e| match e.downcast::<RecordError>() {
                Ok(e) => e.into(),
                Err(e) => e.context(format!("scoring {}", r.display())),
            })?;
        runs.push(s);
        damaged = damaged.or(damage);
    }
    // Runs from more than one set say which they are from.
    let sets: std::collections::HashSet<&str> = given.iter().map(|g| g.set.as_str()).collect();
    if args.by.is_none() && sets.len() > 1 {
        for (g, r) in given.iter().zip(runs.iter_mut()) {
            r.label = crate::sanitize::clean_capped(&format!("{} {}", g.set, r.label), 120);
        }
    }
    let all = Summary::of(&runs);
    let text = match (args.by, args.json) {
        (None, true) => {
            serde_json::to_string_pretty(&serde_json::json!({ "runs": runs, "summary": all }))?
                + "\n"
        }
        (Some(by), json) => {
            let groups = group(by, &given, runs);
            if json {
                let groups: Vec<_> = groups
                    .iter()
                    .map(|(name, runs)| serde_json::json!({"name": name, "summary": Summary::of(runs)}))
                    .collect();
                serde_json::to_string_pretty(&serde_json::json!({
                    "by": by.name(),
                    "groups": groups,
                    "summary": all,
                }))? + "\n"
            } else {
                grouped(by.name(), &groups, &all)
            }
        }
        (None, false) => markdown(&runs),
    };
    write!(std::io::stdout(), "{text}")?;
    // The scores were printed over what could be read; the exit status
    // says that something could not.
    match damaged {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// The runs in groups, each named: by the set its recording is in (in
/// the order first met), or by shape (those that ran out of memory first,
/// then by name).
fn group(by: ScoreBy, given: &[Given], runs: Vec<RunScore>) -> Vec<(String, Vec<RunScore>)> {
    let mut groups: Vec<(String, Vec<RunScore>)> = Vec::new();
    for (g, run) in given.iter().zip(runs) {
        let name = match by {
            ScoreBy::Set => crate::sanitize::clean_capped(&g.set, 80),
            ScoreBy::Shape => run.shape.clone(),
        };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, g)) => g.push(run),
            None => groups.push((name, vec![run])),
        }
    }
    if by == ScoreBy::Shape {
        groups.sort_by_cached_key(|(name, runs)| (Summary::of(runs).oom_runs == 0, name.clone()));
    }
    groups
}

#[cfg(test)]
#[path = "score_trace.rs"]
mod trace;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_truth_is_beside_its_recording_whatever_its_name() {
        let t = |p: &str| truth_beside(Path::new(p));
        assert_eq!(t("d/run.jsonl.zst"), PathBuf::from("d/run.truth.json"));
        assert_eq!(t("d/run.jsonl"), PathBuf::from("d/run.truth.json"));
        assert_eq!(t("a.b.jsonl.zst"), PathBuf::from("a.b.truth.json"));
        assert_eq!(t("run.zst"), PathBuf::from("run.zst.truth.json"));
        assert_eq!(t("run"), PathBuf::from("run.truth.json"));
        // A name that is not UTF-8 keeps its bytes (not U+FFFD).
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let name = std::ffi::OsStr::from_bytes(b"r\xff.jsonl.zst");
            let truth = truth_beside(&Path::new("d").join(name));
            let want = std::ffi::OsStr::from_bytes(b"r\xff.truth.json");
            assert_eq!(truth, Path::new("d").join(want));
        }
    }
}
