//! `gpcap diff`'s report as text: the clocks, a table of the directions, then each
//! direction's pairing, delays, loss bursts and fragments.

use super::count;
use super::tables::{right, table};
use crate::sinks::diff::report::{ClockStatus, DiffReport, Direction, Verdict};
use std::fmt::Write;

/// `-` for a figure that was not measured.
fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// Loss with its 95% interval: "2.10% (1.4–3.1%)".
fn loss(d: &Direction) -> String {
    match (d.loss, d.loss_low, d.loss_high) {
        (Some(l), Some(lo), Some(hi)) => format!("{} ({:.1}–{:.1}%)", pct(l), lo * 100.0, hi * 100.0),
        _ => "-".into(),
    }
}

pub fn render(r: &DiffReport) -> String {
    let mut out = String::new();
    let [a, b] = &r.points;
    let _ = writeln!(
        out,
        "A = {} ({}), B = {} ({})",
        a.name,
        count(a.game_datagrams, "game datagram"),
        b.name,
        count(b.game_datagrams, "game datagram")
    );
    match r.verdict {
        Verdict::Compared => {}
        Verdict::NoGameTraffic => {
            let _ = writeln!(
                out,
                "Nothing to compare: {} holds no game datagram.",
                if a.game_datagrams == 0 { &a.name } else { &b.name }
            );
        }
        Verdict::NoCommonFlow => {
            let _ = writeln!(
                out,
                "Nothing to compare: no flow of A is a flow of B (no addresses and no datagram in common): captures of different sessions, or of different parts of one. No figures."
            );
        }
        Verdict::NoCommonDatagram => {
            let _ = writeln!(
                out,
                "Nothing to compare: the flows paired by their addresses share no datagram: captures of different sessions (or of different times). No figures."
            );
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if r.verdict != Verdict::Compared {
        return out;
    }
    render_clock(&mut out, r);
    render_table(&mut out, r);
    for d in &r.directions {
        render_direction(&mut out, d);
    }
    let unpaired: u64 = r.points.iter().map(|p| p.unpaired_flows).sum();
    if unpaired > 0 {
        let _ = writeln!(
            out,
            "\nFlows at one point only: {} at A ({}), {} at B ({}) — not compared",
            r.points[0].unpaired_flows,
            count(r.points[0].unpaired_datagrams, "datagram"),
            r.points[1].unpaired_flows,
            count(r.points[1].unpaired_datagrams, "datagram")
        );
    }
    out
}

fn render_clock(out: &mut String, r: &DiffReport) {
    let c = &r.clock;
    let _ = writeln!(out, "\nClocks");
    match c.status {
        ClockStatus::Same => {
            let _ = writeln!(out, "  one clock (--clock same): delays as stamped");
        }
        ClockStatus::NotFitted => {
            let _ = writeln!(
                out,
                "  not fitted: {}",
                c.reason.as_ref().map_or("-".into(), |r| r.to_string())
            );
        }
        ClockStatus::Fitted => {
            let offset = c.offset_ms.map_or_else(
                || "unknown (traffic one way only)".to_string(),
                |o| format!("{o:.3} ms"),
            );
            let skew = match (c.skew_ppm, c.skew_estimated) {
                (Some(s), true) => format!("{s:.2} ppm"),
                _ => format!("not estimated ({:.1} s of traffic), taken as 0", c.span_s),
            };
            let _ = writeln!(out, "  B − A: {offset}; B runs faster by {skew}");
            let _ = writeln!(
                out,
                "  fitted on {} over {:.1} s; floor moves by {} ms across the capture",
                count(c.samples, "datagram"),
                c.span_s,
                c.floor_spread_ms.map_or("-".into(), |f| format!("{f:.2}"))
            );
            let _ = writeln!(out, "  method: {}", c.method);
        }
    }
}

fn render_table(out: &mut String, r: &DiffReport) {
    let _ = writeln!(
        out,
        "\nDirections (lost between the points, with a 95% Wilson interval; before: the upstream point's sequence gaps)"
    );
    let mut t = table(&[
        "flow at A",
        "up",
        "sent",
        "arrived",
        "lost between",
        "before",
        "dup",
        "reordered",
        "delay p50",
        "p99",
    ]);
    for d in &r.directions {
        let delay = d.delay.as_ref();
        t.add_row(vec![
            format!("{} → {}", d.a.src, d.a.dst),
            d.upstream.to_string(),
            d.sent.to_string(),
            d.arrived.to_string(),
            format!("{} {}", d.lost, loss(d)),
            opt(d.lost_before),
            opt(d.duplicated),
            d.reordered.to_string(),
            delay.map_or("-".into(), |x| format!("{:.2} ms", x.p50_ms)),
            delay.map_or("-".into(), |x| format!("{:.2} ms", x.p99_ms)),
        ]);
    }
    right(&mut t, 2);
    let _ = writeln!(out, "{t}");
}

fn render_direction(out: &mut String, d: &Direction) {
    let _ = writeln!(
        out,
        "\n{} → {} (A) · {} → {} (B)",
        d.a.src, d.a.dst, d.b.src, d.b.dst
    );
    let _ = writeln!(out, "  paired: {}", d.pairing);
    let _ = writeln!(out, "  upstream: {} ({})", d.upstream, d.upstream_by);
    let _ = writeln!(
        out,
        "  sent past {}: {}, arrived: {}, lost between: {} {}, lost before {}: {}, gaps at {}: {}",
        d.upstream,
        d.sent,
        d.arrived,
        d.lost,
        loss(d),
        d.upstream,
        opt(d.lost_before),
        if d.upstream == "A" { "B" } else { "A" },
        opt(d.gaps_downstream)
    );
    let _ = writeln!(
        out,
        "  duplicated between: {} (copies before: {}), reordered: {}, seen downstream only: {}, damaged on arrival: {}, not compared: {}",
        opt(d.duplicated),
        opt(d.duplicated_before),
        d.reordered,
        d.downstream_only,
        d.damaged_downstream,
        d.not_compared
    );
    let b = &d.bursts;
    if b.runs > 0 {
        let _ = writeln!(
            out,
            "  loss bursts: {} runs, longest {}, mean {:.2}",
            b.runs, b.longest, b.mean
        );
    }
    match &d.delay {
        Some(x) => {
            let what = if x.above_floor {
                "delay above the floor"
            } else {
                "one-way delay"
            };
            let floor = x.floor_ms.map_or(String::new(), |f| format!("floor {f:.3} ms, "));
            let _ = writeln!(
                out,
                "  {what}: {floor}p50 {:.3}, p90 {:.3}, p99 {:.3}, p99.9 {:.3}, max {:.3} ms; jitter (RFC 3550) {:.3} ms{}",
                x.p50_ms,
                x.p90_ms,
                x.p99_ms,
                x.p999_ms,
                x.max_ms,
                x.jitter_ms,
                if x.sampled_one_in > 1 {
                    format!(" (from 1 in {} datagrams)", x.sampled_one_in)
                } else {
                    String::new()
                }
            );
            let _ = writeln!(
                out,
                "  late (over {:.2} ms): {} in {}",
                x.late_threshold_ms,
                count(x.late, "datagram"),
                count(x.spikes, "spike")
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  delay: - ({})",
                d.delay_note
                    .as_ref()
                    .map_or("not measured".into(), |n| n.to_string())
            );
        }
    }
    if let (Some(note), Some(_)) = (&d.delay_note, &d.delay) {
        let _ = writeln!(out, "  ({note})");
    }
    let lost: Vec<String> = d
        .fragments
        .iter()
        .filter(|f| f.lost > 0)
        .map(|f| format!("{} of {}: {} of {}", f.id, f.count, f.lost, f.sent))
        .collect();
    if !lost.is_empty() {
        let _ = writeln!(
            out,
            "  fragments lost between (id of count: lost of sent): {}",
            lost.join(", ")
        );
    }
}
