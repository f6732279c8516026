//! The per-second timeline, bounded to a day of seconds.

use super::*;

/// Valid game datagrams and sequences lost, per second of capture time.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Timeline {
    pub start_ns: Option<i64>,
    pub seconds: Vec<Second>,
    /// The second [`Timeline::slot`] found last: the start it was found from, the offsets
    /// from it (ns) that fall in it, and its index. Frames come in time order, so most
    /// fall in it without a 64-bit division.
    #[serde(skip)]
    pub(super) last: (i64, i64, i64, usize),
    /// The start before it was first moved back, and the earliest time given since:
    /// the seconds moved back past that time are trimmed at the end.
    #[serde(skip)]
    pub(super) moved: Option<(i64, i64)>,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
#[non_exhaustive]
pub struct Second {
    pub datagrams: u64,
    pub lost: u64,
}

/// Seconds kept (a day); later traffic is not charted.
pub(super) const TIMELINE_MAX: usize = 86_400;

impl Timeline {
    /// The bucket for a timestamp (None past the limit, before or after the start).
    pub fn slot(&mut self, ts_ns: i64) -> Option<&mut Second> {
        const NS: i64 = 1_000_000_000;
        let mut start = *self.start_ns.get_or_insert(ts_ns);
        if let Some((_, earliest)) = &mut self.moved {
            *earliest = (*earliest).min(ts_ns);
        }
        if ts_ns <= start.saturating_sub(NS) {
            // Earlier than the start (a clock stepped back): the start moves back.
            start = self.move_back(ts_ns)?;
        }
        let d = ts_ns.saturating_sub(start);
        let (from, lo, hi, at) = self.last;
        if from == start && d >= lo && d < hi {
            return self.seconds.get_mut(at);
        }
        let s = usize::try_from(d / NS).ok()?;
        if s >= TIMELINE_MAX {
            return None;
        }
        if self.seconds.len() <= s {
            self.seconds.resize(s + 1, Second::default());
        }
        // The offsets that divide to `s` (the division truncates: less than a second
        // before the start is second 0 too).
        let lo = if s == 0 { 1 - NS } else { s as i64 * NS };
        self.last = (start, lo, (s as i64 + 1) * NS, s);
        self.seconds.get_mut(s)
    }

    /// Moves the start back by whole seconds so that `ts_ns` falls in the timeline, at
    /// least doubling it (a clock stepping back second by second moves it rarely);
    /// `None` past the limit.
    pub(super) fn move_back(&mut self, ts_ns: i64) -> Option<i64> {
        const NS: i64 = 1_000_000_000;
        let start = self.start_ns?;
        let d = start.checked_sub(ts_ns)?;
        let need = usize::try_from(d / NS + i64::from(d % NS != 0)).ok()?;
        let room = TIMELINE_MAX.checked_sub(self.seconds.len())?;
        if need > room {
            return None;
        }
        let (origin, earliest) = self.moved.unwrap_or((start, ts_ns));
        self.moved = Some((origin, earliest.min(ts_ns)));
        let by = need.max(self.seconds.len()).min(room);
        self.seconds
            .splice(0..0, std::iter::repeat_n(Second::default(), by));
        let start = start - by as i64 * NS;
        self.start_ns = Some(start);
        self.last = (0, 0, 0, 0);
        Some(start)
    }

    /// Adds a shard's seconds, its start aligned with this one's (shards start at one
    /// time and move back by whole seconds).
    pub(super) fn merge(&mut self, o: Timeline) {
        const NS: i64 = 1_000_000_000;
        let Some(b) = o.start_ns else {
            return;
        };
        let a = *self.start_ns.get_or_insert(b);
        if b < a {
            // Moving back to another's start is no time given.
            let moved = self.moved;
            self.move_back(b);
            self.moved = moved.or(Some((a, a)));
        }
        self.moved = match (self.moved, o.moved) {
            (Some((x, e)), Some((y, f))) => Some((x.max(y), e.min(f))),
            (m, n) => m.or(n),
        };
        let start = self.start_ns.unwrap_or(b);
        let shift = usize::try_from((b - start) / NS).unwrap_or(0);
        let need = (shift + o.seconds.len()).min(TIMELINE_MAX);
        if self.seconds.len() < need {
            self.seconds.resize(need, Second::default());
        }
        for (x, y) in self.seconds.iter_mut().skip(shift).zip(o.seconds) {
            x.datagrams += y.datagrams;
            x.lost = x.lost.saturating_add(y.lost);
        }
        self.last = (0, 0, 0, 0);
    }

    /// Drops the seconds moved back past the earliest time given (at the end of a run).
    pub fn trim(&mut self) {
        const NS: i64 = 1_000_000_000;
        let (Some(start), Some((origin, earliest))) = (self.start_ns, self.moved.take()) else {
            return;
        };
        let extra = usize::try_from((earliest.min(origin) - start) / NS)
            .unwrap_or(0)
            .min(self.seconds.len());
        if extra > 0 {
            self.seconds.drain(..extra);
            self.start_ns = Some(start + extra as i64 * NS);
            self.last = (0, 0, 0, 0);
        }
    }
}
