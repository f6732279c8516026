//! The two capture points' clocks: their offset and skew, fitted to the delays of the
//! datagrams seen at both, as in the one-way-delay literature (Moon, Skelly and
//! Towsley, "Estimation and removal of clock skew from network delay measurements",
//! 1999): the measured delays of one direction lie above a line whose slope is the
//! skew and whose intercept is the offset plus the path's fixed delay; the line is the
//! one below every point that minimises the sum of the distances to them, a linear
//! program whose answer is an edge of the points' lower convex hull. The hull is kept as
//! the datagrams go (bounded), both directions share the skew, and the offset is split
//! from the fixed delay by assuming it is the same both ways (as NTP does).

/// A hull holds at most this many vertices; past it every other one is dropped (a
/// hull this large means points on a curve, not a clock).
const MAX_HULL: usize = 4096;

/// The largest skew a clock may have and still be fitted, in parts per million: a
/// crystal is within ±100, a bad one ±500; beyond it a clock stepped or was slewed.
pub const MAX_SKEW_PPM: f64 = 1000.0;

/// The lower convex hull of points (x, y) pushed in order of x (Andrew's monotone chain).
#[derive(Debug, Clone, Default)]
pub struct Hull {
    pts: Vec<(f64, f64)>,
}

impl Hull {
    pub fn push(&mut self, x: f64, y: f64) {
        // Capture timestamps can step back a little: such a point joins at the last x.
        let x = self.pts.last().map_or(x, |&(lx, _)| x.max(lx));
        if let Some(&(lx, ly)) = self.pts.last()
            && lx == x
        {
            if y >= ly {
                return;
            }
            self.pts.pop();
        }
        while self.pts.len() >= 2 {
            let (x1, y1) = self.pts[self.pts.len() - 2];
            let (x2, y2) = self.pts[self.pts.len() - 1];
            // Drop the last vertex when it lies on or above the segment to the new point.
            if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) <= 0.0 {
                self.pts.pop();
            } else {
                break;
            }
        }
        self.pts.push((x, y));
        if self.pts.len() > MAX_HULL {
            let last = self.pts.len() - 1;
            let mut k = 0;
            self.pts.retain(|_| {
                k += 1;
                k == 1 || k - 1 == last || k % 2 == 1
            });
        }
    }

    /// min over the hull of `y - s x`: the highest line of slope `s` below every point.
    pub fn intercept(&self, s: f64) -> f64 {
        self.pts
            .iter()
            .map(|&(x, y)| y - s * x)
            .fold(f64::INFINITY, f64::min)
    }

    pub fn len(&self) -> usize {
        self.pts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pts.is_empty()
    }
}

/// One direction's delays as the fit reads them: the hull and the sums the linear
/// program's objective needs. `y` is the delay as the clocks read it, `x` the time.
#[derive(Debug, Clone, Default)]
pub struct Line {
    pub hull: Hull,
    pub n: u64,
    pub sum_x: f64,
    pub sum_y: f64,
    pub first_x: Option<f64>,
    pub last_x: f64,
}

impl Line {
    pub fn push(&mut self, x: f64, y: f64) {
        self.hull.push(x, y);
        self.n += 1;
        self.sum_x += x;
        self.sum_y += y;
        self.first_x.get_or_insert(x);
        self.last_x = self.last_x.max(x);
    }

    pub fn span(&self) -> f64 {
        self.first_x.map_or(0.0, |f| self.last_x - f)
    }
}

/// A line taken into the fit, and the sign of the skew in it: +1 when `y` grows with
/// the second clock's skew (upstream at A), -1 when it shrinks (upstream at B).
pub struct Signed<'a> {
    pub line: &'a Line,
    pub sign: f64,
}

/// The linear program's objective at skew `s`: the sum over every line of the
/// distances from its points to its highest line of slope `sign × s` below them.
fn objective(lines: &[Signed], s: f64) -> f64 {
    lines
        .iter()
        .map(|l| {
            let slope = l.sign * s;
            let a = l.line.hull.intercept(slope);
            l.line.sum_y - l.line.n as f64 * a - slope * l.line.sum_x
        })
        .sum()
}

/// The skew (dimensionless: 1e-6 is 1 ppm) that every line shares, and each line's
/// intercept at it. The objective is convex in `s` (a sum of maxima of linear
/// functions), so a golden-section search finds its minimum within `±bound`.
pub fn fit(lines: &[Signed], bound: f64) -> (f64, Vec<f64>) {
    let (mut lo, mut hi) = (-bound, bound);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = hi - g * (hi - lo);
    let mut d = lo + g * (hi - lo);
    let (mut fc, mut fd) = (objective(lines, c), objective(lines, d));
    for _ in 0..200 {
        if fc <= fd {
            hi = d;
            d = c;
            fd = fc;
            c = hi - g * (hi - lo);
            fc = objective(lines, c);
        } else {
            lo = c;
            c = d;
            fc = fd;
            d = lo + g * (hi - lo);
            fd = objective(lines, d);
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    let s = (lo + hi) / 2.0;
    let intercepts = lines.iter().map(|l| l.line.hull.intercept(l.sign * s)).collect();
    (s, intercepts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little pseudo-random noise, for points above a known line.
    fn noise(i: u64) -> f64 {
        let z = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0xD1B5_4A32_D192_ED03;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn the_hull_is_the_lower_envelope() {
        let mut h = Hull::default();
        for (x, y) in [(0.0, 5.0), (1.0, 1.0), (2.0, 3.0), (3.0, 0.0), (4.0, 4.0)] {
            h.push(x, y);
        }
        assert_eq!(h.pts, vec![(0.0, 5.0), (1.0, 1.0), (3.0, 0.0), (4.0, 4.0)]);
        assert_eq!(h.intercept(0.0), 0.0);
        assert_eq!(h.intercept(1.0), -3.0);
    }

    /// Two directions of one conversation, clocks an hour apart and 80 ppm apart, delays
    /// 20 ms plus up to 5 ms: the skew and both intercepts come back within a
    /// microsecond's worth.
    #[test]
    fn skew_and_offset_of_two_directions() {
        let (off, skew, floor) = (3_600e9, 80e-6, 20e6);
        let (mut up, mut down) = (Line::default(), Line::default());
        for i in 0..6000u64 {
            let x = i as f64 * 10e6; // every 10 ms, 60 s
            up.push(x, off + skew * x + floor + 5e6 * noise(i));
            down.push(x, floor - off - skew * x + 5e6 * noise(i + 99_999));
        }
        let lines = [
            Signed { line: &up, sign: 1.0 },
            Signed {
                line: &down,
                sign: -1.0,
            },
        ];
        let (s, a) = fit(&lines, 2e-3);
        assert!((s - skew).abs() < 1e-7, "skew {s}");
        let (o, f) = ((a[0] - a[1]) / 2.0, (a[0] + a[1]) / 2.0);
        assert!((o - off).abs() < 20e3, "offset {o}");
        assert!((f - floor).abs() < 20e3, "floor {f}");
    }
}
