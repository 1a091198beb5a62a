//! Slot lookup: which global slot numbers are kept, their times, which
//! are gaps, and the slot at a given time.

use super::History;
use crate::model::Millis;

impl History {
    /// Global number of the oldest slot kept.
    pub fn first_slot(&self) -> u64 {
        self.first_slot
    }

    /// Global number of the newest slot, if any.
    pub fn last_slot(&self) -> Option<u64> {
        (!self.times.is_empty()).then(|| self.first_slot + self.times.len() as u64 - 1)
    }

    pub fn time_at(&self, slot: u64) -> Option<Millis> {
        let i = slot.checked_sub(self.first_slot)?;
        self.times.get(i as usize).copied()
    }

    pub fn is_gap(&self, slot: u64) -> bool {
        slot.checked_sub(self.first_slot)
            .and_then(|i| self.gaps.get(i as usize).copied())
            .unwrap_or(true)
    }

    /// The newest slot at or before `t_ms`.
    pub fn slot_at_time(&self, t_ms: Millis) -> Option<u64> {
        let i = self.times.partition_point(|&t| t <= t_ms);
        (i > 0).then(|| self.first_slot + i as u64 - 1)
    }
}
