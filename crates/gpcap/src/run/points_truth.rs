//! Compares `gpcap diff`'s report with the truth of a two-point session: counts exact,
//! delay percentiles within [`DELAY_TOLERANCE_MS`] once the clocks are fitted.

use crate::sinks::diff::report::{ClockStatus, DiffReport, Verdict};
use gpcap_generate::points::PointsTruth;

/// How far a delay percentile may be from the truth, in milliseconds.
pub const DELAY_TOLERANCE_MS: f64 = 0.1;

/// Every disagreement, in words; empty when they agree.
pub fn compare(truth: &PointsTruth, r: &DiffReport) -> Vec<String> {
    let mut diffs = Vec::new();
    if r.verdict != Verdict::Compared {
        return vec![format!("verdict: expected compared, reported {:?}", r.verdict)];
    }
    for x in 0..2 {
        eq(
            &mut diffs,
            format!("{} frames", ["A", "B"][x]),
            truth.frames[x],
            Some(r.points[x].frames),
        );
    }
    for t in &truth.directions {
        let Some(d) = r
            .directions
            .iter()
            .find(|d| format!("{}>{}", d.a.src, d.a.dst) == t.flow_a)
        else {
            diffs.push(format!("{}: no direction reported", t.flow_a));
            continue;
        };
        let name = &t.flow_a;
        if d.upstream != t.upstream {
            diffs.push(format!(
                "{name}: upstream: expected {}, reported {}",
                t.upstream, d.upstream
            ));
        }
        if format!("{}>{}", d.b.src, d.b.dst) != t.flow_b {
            diffs.push(format!("{name}: paired with {} at B, expected {}", d.b, t.flow_b));
        }
        eq(&mut diffs, format!("{name}: sent"), t.sent, Some(d.sent));
        eq(&mut diffs, format!("{name}: arrived"), t.arrived, Some(d.arrived));
        eq(
            &mut diffs,
            format!("{name}: lost between"),
            t.lost_between,
            Some(d.lost),
        );
        eq(
            &mut diffs,
            format!("{name}: lost before"),
            t.lost_before,
            d.lost_before,
        );
        eq(
            &mut diffs,
            format!("{name}: duplicated"),
            t.duplicated,
            d.duplicated,
        );
        eq(
            &mut diffs,
            format!("{name}: reordered"),
            t.reordered,
            Some(d.reordered),
        );
        eq(
            &mut diffs,
            format!("{name}: damaged downstream"),
            t.damaged,
            Some(d.damaged_downstream),
        );
        eq(
            &mut diffs,
            format!("{name}: not compared"),
            0,
            Some(d.not_compared),
        );
        for (k, n) in &t.fragments_lost {
            let got = d
                .fragments
                .iter()
                .find(|f| format!("{}/{}", f.id, f.count) == *k)
                .map_or(0, |f| f.lost);
            eq(&mut diffs, format!("{name}: fragment {k} lost"), *n, Some(got));
        }
        for f in d.fragments.iter().filter(|f| f.lost > 0) {
            if !t.fragments_lost.contains_key(&format!("{}/{}", f.id, f.count)) {
                eq(
                    &mut diffs,
                    format!("{name}: fragment {}/{} lost", f.id, f.count),
                    0,
                    Some(f.lost),
                );
            }
        }
        delays(&mut diffs, name, t, d);
    }
    clock(&mut diffs, truth, r);
    diffs
}

fn eq(diffs: &mut Vec<String>, what: String, expected: u64, got: Option<u64>) {
    if Some(expected) != got {
        diffs.push(format!(
            "{what}: expected {expected}, reported {}",
            got.map_or("-".into(), |g| g.to_string())
        ));
    }
}

fn delays(
    diffs: &mut Vec<String>,
    name: &str,
    t: &gpcap_generate::points::DirectionTruth,
    d: &crate::sinks::diff::Direction,
) {
    let Some(want) = &t.delay_ms else { return };
    let Some(got) = d.delay.as_ref().filter(|g| !g.above_floor) else {
        diffs.push(format!(
            "{name}: delays: expected them, reported {}",
            d.delay_note.as_ref().map_or("none".into(), |n| n.to_string())
        ));
        return;
    };
    let pairs = [
        ("floor", want.floor, got.floor_ms.unwrap_or(f64::NAN)),
        ("p50", want.p50, got.p50_ms),
        ("p90", want.p90, got.p90_ms),
        ("p99", want.p99, got.p99_ms),
        ("p99.9", want.p999, got.p999_ms),
        ("max", want.max, got.max_ms),
    ];
    for (what, w, g) in pairs {
        // NaN (no figure) is a mismatch too.
        let off = (w - g).abs();
        if off.is_nan() || off > DELAY_TOLERANCE_MS {
            diffs.push(format!(
                "{name}: delay {what}: expected {w:.4} ms, reported {g:.4} ms"
            ));
        }
    }
}

fn clock(diffs: &mut Vec<String>, truth: &PointsTruth, r: &DiffReport) {
    let c = &r.clock;
    if c.status != ClockStatus::Fitted {
        diffs.push(format!(
            "clock: expected fitted, reported {:?}: {}",
            c.status,
            c.reason.as_ref().map_or(String::new(), |r| r.to_string())
        ));
        return;
    }
    if let (Some(o), Some(origin)) = (c.offset_ms, c.origin_ns) {
        let want = truth.offset_at(origin) / 1e6;
        if (o - want).abs() > DELAY_TOLERANCE_MS {
            diffs.push(format!("clock offset: expected {want:.4} ms, reported {o:.4} ms"));
        }
    }
    // A skew is as wrong as the drift it leaves over the traffic: within the delays'
    // tolerance (the line rests on the few lowest delays, each a little above it).
    if let Some(s) = c.skew_ppm.filter(|_| c.skew_estimated)
        && (s - truth.skew_ppm).abs() * 1e-6 * c.span_s * 1e3 > DELAY_TOLERANCE_MS
    {
        diffs.push(format!(
            "clock skew: expected {:.2} ppm, reported {s:.2} ppm (a drift of {:.3} ms over {:.1} s)",
            truth.skew_ppm,
            (s - truth.skew_ppm).abs() * 1e-3 * c.span_s,
            c.span_s
        ));
    }
}
