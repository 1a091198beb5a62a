//! What the analysis says, as the screen shows it. Live, the figures are
//! the pipeline's (the App analyses nothing); in a replay the App owns an
//! analyzer over the recording, brought to the position shown.

use std::sync::Arc;

use crate::analysis::{AnalysisConfig, Analyzer, Assessment, Eta, Phase};
use crate::history::History;
use crate::model::Millis;
use crate::pipeline::Analyzed;

/// Slots analysed before the position where a replay's analysis starts
/// afresh (no mark at or before it: a jump back past the marks kept, or a
/// reloaded window).
const ANALYSIS_CONTEXT: u64 = 60;
/// A copy of the analyzer is kept every this many slots analysed ...
const MARK_EVERY: u64 = 30;
/// ... the newest this many (ten minutes of a 1 s recording; on the
/// simulated 8 GPUs × 300 processes, 1.6 MB each).
const MARKS_KEPT: usize = 20;

/// What the analysis says about a GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuInsight {
    /// Growth of used memory, bytes/s.
    pub rate_bps: f64,
    pub phase: Phase,
    /// When it will be full, when growth is sustained.
    pub full_in: Option<Eta>,
    /// The recent peak share of its memory (%) while the GPU is at risk:
    /// so close to full that the next larger allocation may fail.
    pub at_risk_pct: Option<f64>,
    /// Where a fill that is slowing down will level off, bytes.
    pub levels_at: Option<u64>,
}

/// What the analysis says about a process.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcInsight {
    pub rate_bps: f64,
    pub phase: Phase,
    /// Its leak flag, if raised.
    pub leak: Option<crate::analysis::LeakFlag>,
    /// When it reaches the GPU's free memory.
    pub full_in: Option<Eta>,
}

impl ProcInsight {
    /// The growth to show and sort by: a leak in the tensors at their
    /// rate (the driver's figure, the allocator's cache, may stand still
    /// around them); else the driver's.
    pub fn shown_rate(&self) -> f64 {
        match self.leak {
            Some(f) if f.seen_in == crate::analysis::LeakSeen::Tensors => f.rate.bps,
            _ => self.rate_bps,
        }
    }
}

/// Where the App's analysis figures come from.
pub(crate) enum Insight {
    /// The pipeline's newest analysed snapshot.
    Live(Option<Arc<Analyzed>>),
    /// An analyzer over the recording, at `analyzed_to`.
    Replay {
        analyzer: Box<Analyzer>,
        assessment: Assessment,
        analyzed_to: Option<Millis>,
        marks: Marks,
    },
}

/// Copies of a replay's analyzer as it was at slots it went through, so
/// that a step back shows what the pass forward showed there (started
/// afresh a minute before, the rate and the forecast's range could differ:
/// `twentieth/02` at its last samples).
#[derive(Default)]
pub(crate) struct Marks {
    /// By slot: the analyzer once it had observed that slot.
    kept: std::collections::BTreeMap<u64, Box<Analyzer>>,
}

impl Marks {
    /// Keeps a copy of `analyzer`, which has just observed `slot`, if
    /// `slot` is one to mark.
    fn offer(&mut self, slot: u64, analyzer: &Analyzer, history: &History) {
        if !slot.is_multiple_of(MARK_EVERY) {
            return;
        }
        self.kept.insert(slot, Box::new(analyzer.clone()));
        // Not past what History still holds after them.
        let first = history.first_slot();
        self.kept.retain(|at, _| at + 1 >= first);
        while self.kept.len() > MARKS_KEPT {
            self.kept.pop_first();
        }
    }

    /// The newest mark at or before `slot` from which `history` still holds
    /// every snapshot after it: (its slot, a copy of its analyzer).
    fn before(&self, slot: u64, history: &History) -> Option<(u64, Box<Analyzer>)> {
        let (&at, a) = self.kept.range(..=slot).next_back()?;
        (at + 1 >= history.first_slot()).then(|| (at, a.clone()))
    }
}

impl Insight {
    pub(crate) fn replay(cfg: &AnalysisConfig) -> Insight {
        Insight::Replay {
            analyzer: Box::new(Analyzer::new(cfg)),
            assessment: Assessment::default(),
            analyzed_to: None,
            marks: Marks::default(),
        }
    }

    /// The assessment shown, and the time it is of.
    pub(crate) fn current(&self) -> Option<(&Assessment, Millis)> {
        match self {
            Insight::Live(Some(a)) => Some((&a.assessment, a.snapshot.t_ms)),
            Insight::Live(None) => None,
            Insight::Replay {
                assessment,
                analyzed_to: Some(t),
                ..
            } => Some((assessment, *t)),
            Insight::Replay { .. } => None,
        }
    }

    /// The newest analysed snapshot live, to freeze when the screen pauses.
    fn live(&self) -> Option<&Arc<Analyzed>> {
        match self {
            Insight::Live(a) => a.as_ref(),
            Insight::Replay { .. } => None,
        }
    }

    /// Forgets where a replay's analysis was (History was reloaded).
    pub(crate) fn invalidate(&mut self) {
        if let Insight::Replay {
            analyzed_to, marks, ..
        } = self
        {
            *analyzed_to = None;
            *marks = Marks::default();
        }
    }

    /// Brings a replay's analysis to `slot` of `history`: forward from
    /// where it was, else from the newest mark before it, else afresh over
    /// the loaded window before it.
    pub(crate) fn sync(&mut self, history: &History, slot: u64) {
        let Insight::Replay {
            analyzer,
            assessment,
            analyzed_to,
            marks,
        } = self
        else {
            return;
        };
        let Some(t) = history.time_at(slot) else {
            return;
        };
        if *analyzed_to == Some(t) {
            return;
        }
        let from = match analyzed_to.and_then(|a| history.slot_at_time(a)) {
            Some(done) if *analyzed_to < Some(t) && done >= history.first_slot() => done + 1,
            _ if let Some((at, a)) = marks.before(slot, history) => {
                *analyzer = a;
                at + 1
            }
            _ => {
                // Afresh: a minute before the slot is enough for the rate
                // window (30 s) and a leak flag (20 s), and keeps stepping
                // back through a big node's recording quick.
                analyzer.reset();
                slot.saturating_sub(ANALYSIS_CONTEXT)
                    .max(history.first_slot())
            }
        };
        for s in from..=slot {
            if let Some(snap) = history.snapshot_at(s) {
                // A replay's alerts are the recording's own events.
                let _ = analyzer.observe(&snap);
                marks.offer(s, analyzer, history);
            }
        }
        *assessment = analyzer.assessment(t);
        *analyzed_to = Some(t);
    }
}

/// The analysis of a paused live screen, so that nothing from after the
/// moment shown appears (as in a replay): at the moment it paused on, the
/// pipeline's own analysis of that snapshot; at any other slot, an analyzer
/// over History brought to it as a replay's is (the minute before it).
pub(crate) struct Paused {
    /// The pipeline's analysis when the screen paused.
    at_pause: Option<Arc<Analyzed>>,
    /// Brought to the slot shown when that is another moment.
    elsewhere: Insight,
    /// The slot shown is the moment paused on.
    on_pause_moment: bool,
}

impl Paused {
    pub(crate) fn new(live: &Insight, cfg: &AnalysisConfig) -> Paused {
        Paused {
            at_pause: live.live().cloned(),
            elsewhere: Insight::replay(cfg),
            on_pause_moment: false,
        }
    }

    /// Brings the analysis to `slot` of `history`.
    pub(crate) fn sync(&mut self, history: &History, slot: u64) {
        let t = history.time_at(slot);
        self.on_pause_moment = self
            .at_pause
            .as_ref()
            .is_some_and(|a| Some(a.snapshot.t_ms) == t);
        if !self.on_pause_moment {
            self.elsewhere.sync(history, slot);
        }
    }

    pub(crate) fn current(&self) -> Option<(&Assessment, Millis)> {
        match (&self.at_pause, self.on_pause_moment) {
            (Some(a), true) => Some((&a.assessment, a.snapshot.t_ms)),
            _ => self.elsewhere.current(),
        }
    }
}
