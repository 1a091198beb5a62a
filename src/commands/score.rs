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

/// `<dir>/<name>.truth.json` for `<dir>/<name>.jsonl[.zst]`.
pub fn truth_beside(recording: &Path) -> PathBuf {
    let name = recording
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".jsonl.zst")
        .or_else(|| name.strip_suffix(".jsonl"))
        .unwrap_or(&name);
    recording.with_file_name(format!("{stem}.truth.json"))
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
            crate::sanitize::clean(&truth.display().to_string()),
            crate::sanitize::clean(&recording.display().to_string())
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

/// The recordings `score` was given, each folder replaced by the
/// recordings in it and in its folders (one level down: a corpus and its
/// sets) that have their truth beside them, in path order. Links to
/// folders are not followed.
fn recordings(given: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in given {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let mut found = Vec::new();
        let mut dirs = vec![(path.clone(), 0)];
        while let Some((dir, depth)) = dirs.pop() {
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| anyhow::anyhow!("{}: {e}", sanitize_path(&dir)))?;
            for e in entries.filter_map(std::result::Result::ok) {
                let Ok(kind) = e.file_type() else { continue };
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if kind.is_dir() && depth == 0 {
                    dirs.push((p, depth + 1));
                } else if kind.is_file()
                    && (name.ends_with(".jsonl.zst") || name.ends_with(".jsonl"))
                    && truth_beside(&p).is_file()
                {
                    found.push(p);
                    if found.len() > MAX_IN_FOLDER {
                        bail!(
                            "{}: more than {MAX_IN_FOLDER} recordings with their truth; give fewer",
                            sanitize_path(path)
                        );
                    }
                }
            }
        }
        if found.is_empty() {
            bail!(
                "{}: no recording with its truth beside it (NAME.jsonl.zst and NAME.truth.json) here or in the folders in it",
                sanitize_path(path)
            );
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

fn sanitize_path(p: &Path) -> String {
    crate::sanitize::clean(&p.display().to_string())
}

pub fn run(args: &ScoreArgs, src: &SourceArgs) -> Result<()> {
    let given = recordings(&args.recordings)?;
    if args.truth.is_some() && (given.len() != 1 || args.recordings[0].is_dir()) {
        bail!(
            "--truth names the truth of one recording; give one recording, or none of --truth to use <name>.truth.json beside each"
        );
    }
    let config = crate::config::load(src.config.as_deref())?;
    let cfg = AnalysisConfig::from_config(&config);
    let mut runs = Vec::new();
    let mut damaged = None;
    for r in &given {
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
    let groups = args.by.map(|by| group(by, &given, &runs));
    let text = match (&groups, args.json) {
        (None, true) => {
            serde_json::to_string_pretty(&serde_json::json!({
                "runs": runs,
                "summary": Summary::of(&runs),
            }))? + "\n"
        }
        (Some(g), true) => {
            let groups: Vec<_> = g
                .iter()
                .map(|(name, runs)| serde_json::json!({"name": name, "summary": Summary::of(runs)}))
                .collect();
            serde_json::to_string_pretty(&serde_json::json!({
                "groups": groups,
                "summary": Summary::of(&runs),
            }))? + "\n"
        }
        (None, false) => markdown(&runs),
        (Some(g), false) => grouped(
            match args.by {
                Some(ScoreBy::Set) => "set",
                _ => "shape",
            },
            g,
        ),
    };
    write!(std::io::stdout(), "{text}")?;
    // The scores were printed over what could be read; the exit status
    // says that something could not.
    match damaged {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// The runs in groups, each named: by the folder its recording is in
/// (in the order first met), or by shape (those that ran out of memory
/// first, then by name).
fn group(by: ScoreBy, recordings: &[PathBuf], runs: &[RunScore]) -> Vec<(String, Vec<RunScore>)> {
    let mut groups: Vec<(String, Vec<RunScore>)> = Vec::new();
    for (path, run) in recordings.iter().zip(runs) {
        let name = match by {
            ScoreBy::Set => {
                let dir = path.parent().and_then(Path::file_name);
                let dir = dir.map_or(".".into(), |d| d.to_string_lossy().into_owned());
                crate::sanitize::clean_capped(&format!("{dir}/"), 60)
            }
            ScoreBy::Shape => run.shape.clone(),
        };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, g)) => g.push(run.clone()),
            None => groups.push((name, vec![run.clone()])),
        }
    }
    if by == ScoreBy::Shape {
        let ran_out = |g: &[RunScore]| Summary::of(g).oom_runs > 0;
        groups.sort_by(|a, b| ran_out(&b.1).cmp(&ran_out(&a.1)).then(a.0.cmp(&b.0)));
    }
    groups
}

#[cfg(test)]
#[path = "score_trace.rs"]
mod trace;
