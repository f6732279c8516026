//! Counts over capture time at the resolution the capture's span needs: a 0.8 s capture
//! in 2 ms steps, an hour in 10 s steps. Charts sum neighbouring steps to fit their width.

/// Steps a series may use, in nanoseconds (1 ms to an hour).
const STEPS: [i64; 17] = [
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
    60_000_000_000,
    600_000_000_000,
    3_600_000_000_000,
];

/// At most this many steps are kept (a chart is never wider).
pub const MAX_STEPS: usize = 800;

/// A count per step of capture time from `start_ns`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub start_ns: i64,
    pub step_ns: i64,
    pub values: Vec<u64>,
}

impl Series {
    /// An empty series over `[start_ns, end_ns]`, with the finest step that keeps it
    /// within [`MAX_STEPS`].
    pub fn over(start_ns: i64, end_ns: i64) -> Self {
        let span = end_ns.saturating_sub(start_ns).max(1);
        let step_ns = STEPS
            .iter()
            .copied()
            .find(|s| span / s < MAX_STEPS as i64)
            .unwrap_or(STEPS[STEPS.len() - 1]);
        let n = ((span / step_ns) as usize + 1).min(MAX_STEPS);
        Series {
            start_ns,
            step_ns,
            values: vec![0; n],
        }
    }

    /// [`Series::over`] with steps of at least `min_step_ns` (data known no finer: the
    /// ack analysis' round trips per second).
    pub fn over_at_least(start_ns: i64, end_ns: i64, min_step_ns: i64) -> Self {
        let s = Series::over(start_ns, end_ns);
        if s.step_ns >= min_step_ns {
            return s;
        }
        let span = end_ns.saturating_sub(start_ns).max(1);
        Series {
            start_ns,
            step_ns: min_step_ns,
            values: vec![0; ((span / min_step_ns) as usize + 1).min(MAX_STEPS)],
        }
    }

    /// Adds `n` at time `ts_ns` (times outside the span count at its ends).
    pub fn add(&mut self, ts_ns: i64, n: u64) {
        let i = (ts_ns.saturating_sub(self.start_ns).max(0) / self.step_ns) as usize;
        if let Some(last) = self.values.len().checked_sub(1) {
            self.values[i.min(last)] += n;
        }
    }

    /// Sets the value at `ts_ns` to at least `v` (a maximum per step).
    pub fn max_at(&mut self, ts_ns: i64, v: u64) {
        let i = (ts_ns.saturating_sub(self.start_ns).max(0) / self.step_ns) as usize;
        if let Some(last) = self.values.len().checked_sub(1) {
            let x = &mut self.values[i.min(last)];
            *x = (*x).max(v);
        }
    }

    /// The series summed into at most `bins` bins (sums, or maxima with `max`): the bins'
    /// values and the step of one bin.
    pub fn binned(&self, bins: usize, max: bool) -> (Vec<u64>, i64) {
        let per = self.values.len().div_ceil(bins.max(1)).max(1);
        let values = self
            .values
            .chunks(per)
            .map(|c| {
                if max {
                    c.iter().copied().max().unwrap_or(0)
                } else {
                    c.iter().sum()
                }
            })
            .collect();
        (values, self.step_ns.saturating_mul(per as i64))
    }
}

/// A duration as a chart's axis and titles say it: `250 ms`, `1.5 s`, `2 min`.
pub fn duration_text(ns: i64) -> String {
    let s = ns as f64 / 1e9;
    if ns < 1_000_000_000 {
        format!("{} ms", (ns as f64 / 1e6).round())
    } else if s < 120.0 {
        let t = format!("{s:.2}");
        format!("{} s", t.trim_end_matches('0').trim_end_matches('.'))
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_captures_get_fine_steps() {
        let s = Series::over(0, 830_000_000);
        assert_eq!((s.step_ns, s.values.len()), (2_000_000, 416));
        let s = Series::over(0, 3_600_000_000_000);
        assert_eq!(s.step_ns, 5_000_000_000);
        let mut s = Series::over(0, 10_000_000);
        s.add(9_999_999, 2);
        s.add(-5, 1);
        s.add(i64::MAX, 1);
        assert_eq!((s.values[0], s.values[9], s.values[10]), (1, 2, 1));
        let (b, step) = s.binned(4, false);
        assert_eq!((b.len(), step, b.iter().sum::<u64>()), (4, 3_000_000, 4));
        assert_eq!(duration_text(830_000_000), "830 ms");
        assert_eq!(duration_text(1_500_000_000), "1.5 s");
    }
}
