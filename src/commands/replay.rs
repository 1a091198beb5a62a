//! `vramwatch replay FILE`: the dashboard over a recording, with a timeline.
//! The recording is the source: it is opened with its index (a day-long
//! file opens without being decoded), and the App loads windows of it as
//! the user moves. What could not be read is skipped (a snapshot that
//! cannot be read is a gap); after the dashboard closes, the warnings are
//! printed and the command fails with exit code 1 if anything was skipped.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::app::playback::Timeline;
use crate::app::{App, Settings};
use crate::cli::{ReplayArgs, SourceArgs, UiArgs};
use crate::commands::dashboard;
use crate::config::Config;
use crate::model::{Event, Millis, Snapshot};
use crate::record::Recording;
use crate::theme::{Theme, depth_from_env};

/// A recording as replay's timeline.
pub struct RecordingTimeline(pub Arc<Recording>);

impl Timeline for RecordingTimeline {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn time(&self, i: usize) -> Millis {
        self.0.times().get(i).copied().unwrap_or(0)
    }

    fn get(&self, i: usize) -> Option<Snapshot> {
        // A snapshot that cannot be read is a gap (the App counts them; the
        // recording keeps why, for the warnings at the end).
        self.0.get(i).ok()
    }

    fn events(&self) -> Vec<Event> {
        self.0.events().iter().map(|e| e.event.clone()).collect()
    }

    fn position_at(&self, t_ms: Millis) -> usize {
        self.0.position_at(t_ms)
    }
}

/// Opens `path` and builds the App over it (the part tests and benches
/// use), with the theme given (`None`: full colour).
pub fn open_app(path: &Path, config: Config, me: String, theme: Option<Theme>) -> Result<App> {
    app_over(Arc::new(Recording::open(path)?), config, me, theme)
}

/// The App over an opened recording.
fn app_over(rec: Arc<Recording>, config: Config, me: String, theme: Option<Theme>) -> Result<App> {
    let name = crate::sanitize::path(rec.path());
    if rec.is_empty() {
        let d = rec.damage();
        if d.is_empty() {
            anyhow::bail!("{name}: the recording holds no snapshots");
        }
        // Say why: every snapshot line was damaged.
        let first = d
            .places
            .first()
            .map_or(String::new(), |p| format!(" (first: {p})"));
        return Err(crate::cli::Failure(format!(
            "{name}: the recording holds no readable snapshot: {}{first}",
            d.summary()
        ))
        .into());
    }
    let system = rec.system();
    let interval = Some(std::time::Duration::from_millis(
        rec.header().interval_ms.max(100),
    ));
    let config = config.with_interval(interval);
    // A file cut short is told first: what it lost is not in the timeline.
    let warnings: Vec<String> = rec.cut_short().into_iter().chain(rec.warnings()).collect();
    let mut settings = Settings::new(config, system, me);
    settings.read_only = true;
    if let Some(t) = theme {
        settings.theme = t;
    }
    let mut app = App::replaying_from(settings, Box::new(RecordingTimeline(rec)));
    if let Some(w) = warnings.first() {
        app.update(crate::app::Event::Outcome(crate::app::Outcome {
            ok: false,
            text: format!(
                "{} ({})",
                without_name(w, &name),
                crate::model::units::plural(warnings.len() as u64, "warning", "warnings")
            ),
        }));
    }
    Ok(app)
}

/// A warning about the file being replayed, for the footer: the name the
/// user just typed left out ("a.jsonl:12: …" → "line 12: …"), so what is
/// wrong fits the line.
fn without_name(w: &str, name: &str) -> String {
    match w.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
        Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => format!("line {r}"),
        Some(r) => r.trim_start().to_owned(),
        None => w.to_owned(),
    }
}

pub fn run(args: &ReplayArgs, src: &SourceArgs, ui: &UiArgs, me: String) -> Result<()> {
    let config = dashboard::load_config(src, ui)?;
    let theme = Theme::new(config.display.theme, depth_from_env(config.display.color));
    let name = crate::sanitize::path(&args.file);
    // Its errors name the file (`x.jsonl.zst: no such file`).
    let rec = Arc::new(Recording::open(&args.file)?);
    let app = app_over(rec.clone(), config, me, Some(theme))
        .with_context(|| format!("replaying {name}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(dashboard::run(
        app,
        dashboard::Feed::None,
        dashboard::Hooks::default(),
    ))?;
    match rec.incomplete("replay") {
        Some(e) => {
            for w in rec.warnings() {
                crate::tell!("vramwatch: warning: {w}");
            }
            Err(e.into())
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::without_name;

    #[test]
    fn a_footer_warning_leaves_out_the_file_name() {
        assert_eq!(
            without_name(
                "/tmp/a.jsonl.zst: the recording was not closed",
                "/tmp/a.jsonl.zst"
            ),
            "the recording was not closed"
        );
        assert_eq!(
            without_name(
                "/tmp/a.jsonl:12: the line is cut off: skipped",
                "/tmp/a.jsonl"
            ),
            "line 12: the line is cut off: skipped"
        );
        assert_eq!(without_name("other: x", "/tmp/a.jsonl"), "other: x");
    }
}
