//! The acks table: per direction, what the other side acked, how, and the round trips.

use super::*;

/// What each direction's peer acknowledged (definitions with ack roles).
pub(crate) fn render_acks(r: &Report) -> String {
    let mut out = String::new();
    let flows: Vec<&crate::sinks::analysis::FlowStats> =
        r.flows.iter().filter(|f| f.acks.is_some()).collect();
    let dropped = r.capture.acks_not_tracked;
    let unmatched = r.capture.acks_unmatched;
    if flows.is_empty() && dropped == 0 && unmatched == 0 {
        return out;
    }
    let _ = writeln!(out, "Acks (what the other direction reported received)");
    if unmatched > 0 {
        let _ = writeln!(
            out,
            "({} with acks named sequences the other direction had not sent (none of its datagrams carried that sequence or stream): nothing for them to settle)",
            crate::present::count(unmatched, "datagram")
        );
    }
    if flows.is_empty() {
        let _ = writeln!(out);
        return out;
    }
    warn(&mut out, r, "the sequences, acks and loss");
    if dropped > 0 {
        let _ = writeln!(
            out,
            "(partial: {} not tracked — their ack analysis would have gone past the flow state budget — and not in this table)",
            crate::present::count(dropped, "flow")
        );
    }
    let all = || flows.iter().filter_map(|f| f.acks.as_ref());
    // Columns a protocol has a use for only: how sequences were acked when more than
    // one mechanism did, NAKs, copies resent, acks lost beside the data.
    let mechanisms = |a: &crate::sinks::analysis::acks::AckStats| {
        let b = &a.acked_by;
        [b.single, b.bits, b.cumulative, b.ranges]
            .iter()
            .filter(|&&n| n > 0)
            .count()
    };
    let by = all().any(|a| mechanisms(a) > 1 || a.acked_by.cumulative + a.acked_by.ranges > 0);
    let naked = all().any(|a| a.naked > 0);
    let resent = all().any(|a| a.retransmissions > 0);
    let lost_acks = all().any(|a| a.acks_lost > 0);
    let mut head = vec!["flow", "sequences", "acked"];
    head.extend(by.then_some("acked by"));
    head.extend(["never acked"]);
    head.extend(naked.then_some("NAKed"));
    head.extend(resent.then_some("resent (spurious)"));
    head.extend(lost_acks.then_some("acks lost"));
    head.extend([
        "ack-implied loss",
        "captured loss",
        "rtt p50 ms",
        "p90",
        "p99",
        "max",
    ]);
    let mut t = table(&head);
    for f in flows.iter().take(40) {
        let Some(a) = &f.acks else { continue };
        let ms = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
        let rtt = a.rtt_ms;
        let mut row = vec![
            format!("{} → {}", f.src, f.dst),
            a.sequences.to_string(),
            a.acked.to_string(),
        ];
        if by {
            let b = &a.acked_by;
            let parts: Vec<String> = [
                (b.single, "one by one"),
                (b.bits, "bits"),
                (b.cumulative, "cumulative"),
                (b.ranges, "ranges"),
            ]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, w)| format!("{n} {w}"))
            .collect();
            row.push(parts.join(", "));
        }
        row.push(a.never_acked.to_string());
        if naked {
            row.push(a.naked.to_string());
        }
        if resent {
            row.push(format!("{} ({})", a.retransmissions, a.spurious_retransmissions));
        }
        if lost_acks {
            row.push(a.acks_lost.to_string());
        }
        let held = r.fit.analyses.acks != crate::sinks::analysis::fit::Verdict::Good;
        row.extend([
            if held {
                "held back".to_string()
            } else {
                format!("{:.1}%", a.ack_implied_loss * 100.0)
            },
            captured_loss(f),
            ms(rtt.map(|r| r.p50)),
            ms(rtt.map(|r| r.p90)),
            ms(rtt.map(|r| r.p99)),
            ms(rtt.map(|r| r.max)),
        ]);
        t.add_row(row);
    }
    for c in 1..head.len() {
        right(&mut t, c);
    }
    let _ = writeln!(out, "{}", shown(t, &[9, 8, 7, 1, 2, 5]));
    more_rows(&mut out, flows.len(), 40, "flows");
    let end: u64 = all().map(|a| a.unacked_at_end).sum();
    let unseen: u64 = all().map(|a| a.acked_not_captured).sum();
    let _ = writeln!(
        out,
        "(ack-implied loss counts sequences the peer never acknowledged, lost on the way or never delivered whole; captured loss counts sequence gaps in the capture. They differ by where the capture was taken: a datagram dropped after the capture point is captured but never acked{}. {} newest {} not acked when the capture ended and are not counted.{}{})\n",
        if unseen > 0 {
            format!("; {unseen} acked sequences are missing from the capture")
        } else {
            String::new()
        },
        end,
        if end == 1 {
            "sequence was"
        } else {
            "sequences were"
        },
        ack_evidence(&flows),
        rtt_sources(&flows),
    );
    out
}

/// The loss the capture itself shows for what a direction's acks settle: gaps in its
/// acked message streams, else in its datagram sequence; "-" when it carries neither.
pub(super) fn captured_loss(f: &crate::sinks::analysis::FlowStats) -> String {
    let (lost, received) = if f.stream_acks.is_empty() {
        (f.seq.lost, f.seq.received)
    } else {
        (f.streams.iter())
            .filter(|s| f.stream_acks.iter().any(|a| a.name == s.name && a.key == s.key))
            .fold((0, 0), |(l, r), s| (l + s.seq.lost, r + s.seq.received))
    };
    if received + lost == 0 {
        return "-".into();
    }
    format!("{:.1}%", lost as f64 * 100.0 / (received + lost) as f64)
}

/// What tells lost acks from lost data, when the acks say it: sequences acked only by a
/// later cumulative ack (their own acks lost), never-acked ones resent or NAKed (the
/// data lost).
pub(super) fn ack_evidence(flows: &[&crate::sinks::analysis::FlowStats]) -> String {
    let all = || flows.iter().filter_map(|f| f.acks.as_ref());
    let (acks, data): (u64, u64) = all().fold((0, 0), |(a, d), x| {
        (a + x.acks_lost, d + x.never_acked_resent_or_naked)
    });
    let mut out = String::new();
    if acks > 0 {
        let _ = write!(
            out,
            " Acks lost: {acks} sequences arrived (a later cumulative ack covered them) whose own acks never did."
        );
    }
    if data > 0 {
        let _ = write!(
            out,
            " Data lost: {data} never-acked sequences were resent or NAKed."
        );
    }
    out
}

/// Where the round trips come from, when said.
pub(super) fn rtt_sources(flows: &[&crate::sinks::analysis::FlowStats]) -> String {
    let mut sources: Vec<&str> = flows
        .iter()
        .filter_map(|f| f.acks.as_ref()?.rtt_source.as_deref())
        .collect();
    sources.sort_unstable();
    sources.dedup();
    match sources.as_slice() {
        [] => String::new(),
        [one] => format!(" Round trips from {one}."),
        many => format!(" Round trips from {}.", many.join("; ")),
    }
}
