//! Replay: a recording read back is the source; History holds a window of
//! it that ends at the furthest position loaded. Moving forward a little
//! pushes the next snapshots; a jump reloads a short window before the
//! target, so a day-long recording opens and jumps without being loaded
//! whole.

use crate::model::{Event, Millis, Snapshot};

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
