//! Time on screen: live (the newest snapshot), paused (a slot of History),
//! or a replay. In a replay a recording read back is the source; History
//! holds a window of it that ends at the furthest position loaded. Moving
//! forward a little pushes the next snapshots; a jump reloads a short
//! window before the target, so a day-long recording opens and jumps
//! without being loaded whole.

use super::insight::{Insight, Paused};
use super::{App, Settings};
use crate::analysis::AnalysisConfig;
use crate::model::{Event, Millis, Snapshot};

/// Live sampling or a recording played back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Live,
    Replay(Playback),
}

/// Replay playback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Playback {
    pub playing: bool,
    /// 1, 2, 4 ... 64 × real time.
    pub speed: u32,
}

pub const MAX_SPEED: u32 = 64;

/// What replay needs from a recording.
pub trait Timeline {
    /// Snapshots in the recording.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Time of snapshot `i` (unix ms).
    fn time(&self, i: usize) -> Millis;
    /// Snapshot `i`; `None` if it cannot be read back (the reader says why).
    fn get(&self, i: usize) -> Option<Snapshot>;
    /// Every event of the recording, in time order.
    fn events(&self) -> Vec<Event>;
    /// The index of the last snapshot at or before `t_ms` (0 before the start).
    fn position_at(&self, t_ms: Millis) -> usize {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.time(mid) <= t_ms {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.saturating_sub(1)
    }
}

/// Snapshots in memory as a timeline (tests, small recordings).
pub struct VecTimeline(pub Vec<Snapshot>);

impl Timeline for VecTimeline {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn time(&self, i: usize) -> Millis {
        self.0.get(i).map_or(0, |s| s.t_ms)
    }
    fn get(&self, i: usize) -> Option<Snapshot> {
        self.0.get(i).cloned()
    }
    fn events(&self) -> Vec<Event> {
        self.0
            .iter()
            .flat_map(|s| s.events.iter().cloned())
            .collect()
    }
}

/// Snapshots loaded before a jump's target, so charts have a past.
pub const PRELOAD: usize = 120;
/// Steps forward up to this many are loaded one by one (no reload).
pub const STEP_LOAD: usize = 600;

/// The recording and which part of it History holds.
pub struct Replay {
    pub timeline: Box<dyn Timeline>,
    /// Position shown (index into the recording).
    pub pos: usize,
    /// Indices loaded into History: `lo..=hi`.
    pub lo: usize,
    pub hi: usize,
    /// Snapshots that could not be read back.
    pub unreadable: usize,
}

impl Replay {
    pub fn new(timeline: Box<dyn Timeline>) -> Replay {
        Replay {
            timeline,
            pos: 0,
            lo: 0,
            hi: 0,
            unreadable: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.timeline.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timeline.is_empty()
    }

    /// (first, last) time of the recording.
    pub fn span(&self) -> Option<(Millis, Millis)> {
        let n = self.timeline.len();
        (n > 0).then(|| (self.timeline.time(0), self.timeline.time(n - 1)))
    }
}

impl App {
    /// An App over a recording, at its start, paused.
    pub fn replaying_from(settings: Settings, timeline: Box<dyn Timeline>) -> App {
        let cfg = AnalysisConfig::from_config(&settings.config);
        let mut app = App::with(
            settings,
            Mode::Replay(Playback {
                playing: false,
                speed: 1,
            }),
            Insight::replay(&cfg),
        );
        app.cursor = Some(0);
        app.events = timeline.events().into();
        let r = Replay::new(timeline);
        app.now_ms = r.span().map_or(0, |s| s.1);
        app.replay = Some(r);
        app.seek(0);
        app
    }

    /// (position, length) of the replay.
    pub fn replay_position(&self) -> Option<(usize, usize)> {
        self.replay.as_ref().map(|r| (r.pos, r.len()))
    }

    /// Shows recording position `target`, loading what History lacks.
    pub(super) fn seek(&mut self, target: usize) {
        let Some(r) = self.replay.as_mut() else {
            return;
        };
        if r.is_empty() {
            return;
        }
        let target = target.min(r.len() - 1);
        let loaded = !self.history.is_empty();
        if !(loaded && target >= r.lo && target <= r.hi) {
            let (from, fresh) = if loaded && target > r.hi && target - r.hi <= STEP_LOAD {
                (r.hi + 1, false)
            } else {
                (target.saturating_sub(PRELOAD), true)
            };
            if fresh {
                self.history = self.history.cleared();
                self.insight.invalidate();
                r.lo = from;
            }
            for i in from..=target {
                match r.timeline.get(i) {
                    Some(s) => self.history.push(&s),
                    None => r.unreadable += 1,
                }
            }
            r.hi = target;
            // Keep `lo` honest once History has evicted the oldest slots.
            if let Some(t) = self.history.time_at(self.history.first_slot()) {
                r.lo = r.lo.max(r.timeline.position_at(t));
            }
        }
        r.pos = target;
        let at_end = target + 1 == r.len();
        let t = r.timeline.time(target);
        self.cursor = self.history.slot_at_time(t);
        if let Some(slot) = self.slot() {
            self.insight.sync(&self.history, slot);
        }
        if at_end {
            self.stop_playing();
        }
        self.fix_selection();
    }

    /// Keeps the analysis of a paused live screen at the slot shown: made
    /// when live pauses (freezing the pipeline's analysis of that moment),
    /// dropped when it resumes.
    pub(super) fn sync_paused(&mut self) {
        if !self.paused() {
            self.paused_analysis = None;
            return;
        }
        let Some(slot) = self.slot() else {
            return;
        };
        let (config, insight) = (&self.settings.config, &self.insight);
        self.paused_analysis
            .get_or_insert_with(|| Paused::new(insight, &AnalysisConfig::from_config(config)))
            .sync(&self.history, slot);
    }

    pub(super) fn stop_playing(&mut self) {
        if let Mode::Replay(p) = &mut self.mode {
            p.playing = false;
        }
    }

    /// Moves the time cursor by `delta` slots (pausing live mode); in a
    /// replay, by `delta` snapshots of the recording.
    pub(super) fn step(&mut self, delta: i64) {
        if let Some(pos) = self.replay.as_ref().map(|r| r.pos) {
            self.seek((pos as i64 + delta).max(0) as usize);
            return;
        }
        let Some(last) = self.history.last_slot() else {
            return;
        };
        let first = self.history.first_slot();
        let cur = self.cursor.unwrap_or(last);
        let next = (cur as i64 + delta).clamp(first as i64, last as i64) as u64;
        self.cursor = Some(next);
        self.fix_selection();
    }

    /// Jumps to the nearest event before or after the time shown, selects
    /// it in the events pane and says which it is.
    pub(super) fn jump_to_event(&mut self, forward: bool) -> bool {
        let cur = self.shown_ms();
        let times = self.events.iter().map(|e| e.t_ms);
        let t = if forward {
            times.filter(|&t| t > cur).min()
        } else {
            times.filter(|&t| t < cur).max()
        };
        let Some(t) = t else { return false };
        if !self.go_to_time(t) {
            return false;
        }
        self.landed_on(t);
        true
    }

    /// Space: play/pause a replay (from the start again at its end), or
    /// pause/resume live.
    pub(super) fn toggle_pause(&mut self) {
        match self.mode {
            Mode::Replay(p) => {
                let at_end = self.replay.as_ref().is_some_and(|r| r.pos + 1 >= r.len());
                if !p.playing && at_end {
                    self.seek(0);
                }
                if let Mode::Replay(p) = &mut self.mode {
                    p.playing = !p.playing;
                }
            }
            Mode::Live => {
                self.cursor = match self.cursor {
                    Some(_) => None,
                    None => self.history.last_slot(),
                };
                self.fix_selection();
            }
        }
    }

    /// Home/End in a replay: its first or last snapshot.
    pub(super) fn seek_end(&mut self, home: bool) -> bool {
        let Some(len) = self.replay.as_ref().map(|r| r.len()) else {
            return false;
        };
        self.seek(if home { 0 } else { len.saturating_sub(1) });
        self.stop_playing();
        true
    }

    pub(super) fn change_speed(&mut self, faster: bool) {
        if let Mode::Replay(p) = &mut self.mode {
            p.speed = if faster {
                (p.speed * 2).min(MAX_SPEED)
            } else {
                (p.speed / 2).max(1)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_at_finds_the_last_snapshot_not_after() {
        let snaps = (0..5)
            .map(|i| Snapshot {
                t_ms: 1000 * (i + 1),
                ..Default::default()
            })
            .collect();
        let t = VecTimeline(snaps);
        assert_eq!(t.position_at(0), 0);
        assert_eq!(t.position_at(1000), 0);
        assert_eq!(t.position_at(2500), 1);
        assert_eq!(t.position_at(5000), 4);
        assert_eq!(t.position_at(9999), 4);
    }
}
