//! The reassembly and MTU tables: fragment loss, its amplification, and sizes against
//! the path's MTU.

use super::*;

/// Fragment reassembly and loss amplification.
pub fn render_reassembly(r: &Report) -> String {
    let mut out = String::new();
    let a = &r.reassembly;
    if a.packets_seen == 0 && a.attacks.refused() == 0 {
        return out;
    }
    let _ = writeln!(out, "Fragment reassembly");
    warn(&mut out, r, "fragment and single-datagram loss");
    let doubt = r.fit.analyses.fragments;
    let mut rows = reassembly_rows(a);
    if doubt != crate::sinks::analysis::fit::Verdict::Good {
        // Loss figures on fragment fields that do not read as such: held back.
        for (name, v) in rows.iter_mut() {
            if *name == "fragment loss p" {
                *v = match doubt {
                    crate::sinks::analysis::fit::Verdict::DoesNotFit => {
                        "held back (the fragment fields do not fit: see Fit)"
                    }
                    _ => "held back (the fragment fields' fit is doubtful: see Fit)",
                }
                .to_string();
            }
        }
    }
    let _ = writeln!(out, "{}\n", kv(&rows));
    if !a.rows.is_empty() && doubt == crate::sinks::analysis::fit::Verdict::Good {
        amplification(&mut out, r);
    }
    out
}

/// The reassembly summary: what was seen, reassembled, lost, wasted, refused, given up
/// and counted apart.
pub(super) fn reassembly_rows(a: &crate::sinks::analysis::ReassemblyReport) -> Vec<(&'static str, String)> {
    let at = &a.attacks;
    let mut rows = vec![
        ("fragmented packets seen", a.packets_seen.to_string()),
        (
            "reassembled",
            format!(
                "{} ({} dissected ok, {} malformed, {} crc_mismatch)",
                a.completed, a.dissected_ok, a.malformed, a.crc_fail
            ),
        ),
        (
            "fragment loss p",
            format!(
                "{} ({} of {} fragments missing)",
                pct(a.fragment_loss),
                a.fragments_expected.saturating_sub(a.fragments_received),
                a.fragments_expected
            ),
        ),
        (
            "single-datagram loss",
            match a.single_total {
                // Nothing measured it (no datagram sequence): not 0%.
                0 => "- (no single datagrams with a sequence)".to_string(),
                _ => format!(
                    "{} ({} of {} single datagrams, from sequence gaps on {})",
                    pct(a.single_loss),
                    a.single_lost,
                    a.single_total,
                    loss_scope(a.single_loss_scope)
                ),
            },
        ),
        ("bytes wasted", a.bytes_wasted.to_string()),
        ("peak reassembly memory", format!("{} bytes", a.peak_bytes)),
        (
            "refused fragments",
            format!(
                "id_out_of_range {}, count_out_of_range {}, count_changed {}, oversize {}, short_non_last {}, duplicate {}, stale {}{}",
                at.id_out_of_range,
                at.count_out_of_range,
                at.count_changed,
                at.oversize,
                at.short_non_last,
                at.duplicate,
                at.stale,
                match at.offset_past_total {
                    0 => String::new(),
                    n => format!(", offset_past_total {n}"),
                }
            ),
        ),
        (
            "packets given up",
            format!(
                "evicted_incomplete {}, evicted_for_memory {}, incomplete_at_end {}{}",
                at.evicted_incomplete,
                at.evicted_for_memory,
                at.incomplete_at_end,
                match at.with_holes {
                    0 => String::new(),
                    n => format!(", with_holes {n}"),
                }
            ),
        ),
    ];
    if a.single_fragment_messages > 0 {
        rows.insert(
            2,
            (
                "messages in one fragment",
                format!(
                    "{} (whole as sent: {} messages in all)",
                    a.single_fragment_messages,
                    a.single_fragment_messages + a.completed
                ),
            ),
        );
    }
    if a.counted_apart.flows > 0 {
        rows.push((
            "counted apart (not loss)",
            format!(
                "{} packets ({} fragments) of {} whose sequence or fragment fields do not fit (see Fit)",
                a.counted_apart.packets,
                a.counted_apart.fragments_received,
                crate::present::count(a.counted_apart.flows, "flow")
            ),
        ));
    }
    rows
}

/// The fragment-loss amplification table, one row per fragment count, and its finding.
pub(super) fn amplification(out: &mut String, r: &Report) {
    let a = &r.reassembly;
    let _ = writeln!(out, "Fragment-loss amplification");
    warn(out, r, "the observed loss and amplification");
    let mut t = table(&[
        "fragments",
        "seen",
        "completed",
        "lost",
        "observed loss (95% CI)",
        "predicted 1-(1-p)^n",
        "amplification",
        "bytes wasted",
    ]);
    for x in &a.rows {
        t.add_row(vec![
            x.fragments.to_string(),
            x.seen.to_string(),
            x.completed.to_string(),
            x.lost.to_string(),
            format!(
                "{} ({}–{})",
                pct(x.observed_loss),
                pct(x.observed_low),
                pct(x.observed_high)
            ),
            pct(x.predicted_loss),
            x.amplification
                .map(|v| format!("{v:.1}×"))
                .unwrap_or_else(|| "-".into()),
            x.bytes_wasted.to_string(),
        ]);
    }
    right(&mut t, 0);
    let _ = writeln!(out, "{}", shown(t, &[7, 2, 5]));
    if a.rows
        .iter()
        .any(|x| x.seen < crate::sinks::analysis::MIN_SAMPLE && x.seen > 0)
    {
        let _ = writeln!(
            out,
            "(amplification `-`: fewer than {} packets of that fragment count were seen, too few to compare; lost and its interval say what there is)",
            crate::sinks::analysis::MIN_SAMPLE
        );
    }
    if let Some(f) = &a.finding {
        let _ = writeln!(out, "Finding: {f}");
    }
    let _ = writeln!(out);
}

pub(super) const SHOWN_SIZES: usize = 40;

/// The IP-fragmented game datagrams, and those the link MTU does not explain: fragmented
/// at a smaller MTU on their path (the fragments show it).
pub(super) fn ip_fragmented_text(m: &crate::sinks::analysis::MtuReport) -> String {
    let within = m.ip_fragmented_within_link_mtu;
    match m.fragment_mtu {
        Some(f) if within > 0 => format!(
            "{} ({within} of them within the link MTU of {}: fragmented at {f} bytes, the largest IP fragment — the path's MTU is smaller; --link-mtu {f} counts against it)",
            m.ip_fragmented, m.link_mtu
        ),
        Some(f) => format!(
            "{} (fragmented at {f} bytes, the largest IP fragment)",
            m.ip_fragmented
        ),
        None => m.ip_fragmented.to_string(),
    }
}

/// MTU diagnosis.
pub(crate) fn render_mtu(r: &Report) -> String {
    let mut out = String::new();
    let m = &r.mtu;
    let seen = match m.fragment_mtu {
        Some(f) if f < m.link_mtu && m.ip_fragmented_within_link_mtu > 0 => {
            format!("; the IP fragments show {f}")
        }
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "MTU diagnosis (budget {} bytes, link MTU {}{seen})",
        m.budget, m.link_mtu
    );
    warn(&mut out, r, "the sizes before loss bursts");
    let rows = vec![
        ("udp payloads over_budget", m.over_budget.to_string()),
        (
            "ip datagrams over link MTU",
            format!("{} ({} with don't-fragment)", m.over_link_mtu, m.df_over_link_mtu),
        ),
        ("ip_fragmented game datagrams", ip_fragmented_text(m)),
        (
            "ip datagrams never reassembled",
            m.ip_never_reassembled.to_string(),
        ),
        (
            "game fragments over fragment size",
            m.fragments_over_size.to_string(),
        ),
        ("icmp fragmentation-needed / too-big", m.icmp_total.to_string()),
        (
            "sizes before loss bursts",
            if m.bursts.bursts == 0 {
                "no loss bursts".into()
            } else {
                format!(
                    "{}: mean {:.0} B, {} over_budget before; mean {:.0} B, {} over_budget otherwise",
                    crate::present::count(m.bursts.bursts, "burst"),
                    m.bursts.before_mean_size,
                    pct(m.bursts.before_over_budget),
                    m.bursts.rest_mean_size,
                    pct(m.bursts.rest_over_budget)
                )
            },
        ),
    ];
    let mut rows = rows;
    if m.icmp_total > 0 {
        // The datagrams a router dropped for the MTU leave sequence gaps: linked here.
        rows.push((
            "sequence gaps after an ICMP",
            format!(
                "{} of the {} gaps follow a datagram over the path MTU (a gap is a run of lost sequences: {} sequences lost in all)",
                m.gaps_after_path_mtu,
                m.gaps,
                r.flows.iter().map(|f| f.seq.lost).sum::<u64>()
            ),
        ));
    }
    let _ = writeln!(out, "{}", kv(&rows));
    if r.capture.burst_window_capped > 0 && m.bursts.bursts > 0 {
        let _ = writeln!(
            out,
            "(sizes before loss bursts are sampled on {}: their window of the second stopped growing at the flow state budget)",
            crate::present::count(r.capture.burst_window_capped, "flow")
        );
    }
    if let Some(f) = &m.bursts.finding {
        let _ = writeln!(out, "Finding: {f}");
    }
    if !m.icmp.is_empty() {
        let mut t = table(&["frame", "from", "mtu", "quoted flow", "quoted size"]);
        for i in &m.icmp {
            t.add_row(vec![
                i.frame.to_string(),
                i.from.to_string(),
                i.mtu.to_string(),
                i.flow.map(|f| f.to_string()).unwrap_or_default(),
                i.quoted_ip_len.map(|x| x.to_string()).unwrap_or_default(),
            ]);
        }
        let _ = writeln!(out, "{}", shown(t, &[1]));
    }
    let mut game: Vec<_> = r.flows.iter().filter(|f| f.is_game()).collect();
    if game.len() > SHOWN_SIZES {
        game.sort_by_key(|f| std::cmp::Reverse(f.datagrams));
        game.truncate(SHOWN_SIZES);
    }
    if !game.is_empty() {
        let mut t = table(&["flow", "p50", "p95", "p99", "max", "over_budget", "ip_fragmented"]);
        for f in game {
            t.add_row(vec![
                f.id().to_string(),
                f.sizes.p50.to_string(),
                f.sizes.p95.to_string(),
                f.sizes.p99.to_string(),
                f.sizes.max.to_string(),
                f.over_budget.to_string(),
                f.ip_fragmented.to_string(),
            ]);
        }
        right(&mut t, 1);
        let _ = writeln!(out, "Payload sizes per flow\n{}", shown(t, &[3, 2]));
    }
    out
}

/// The flows a single-datagram loss was measured on, in words.
pub(super) fn loss_scope(s: crate::sinks::analysis::LossScope) -> &'static str {
    use crate::sinks::analysis::LossScope;
    match s {
        LossScope::None => "",
        LossScope::SameFlows => "same flows",
        LossScope::NeverFragmenting => "flows that never fragment",
    }
}
