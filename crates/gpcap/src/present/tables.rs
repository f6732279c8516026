//! The analysis report as comfy-table tables, fitted to a width when there is one (a
//! terminal's): columns left out by each table's stated priority, then long cells
//! wrapped — numbers are never cut — and a line under the table naming what was left out.

use crate::sinks::analysis::Report;
use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, presets};
use std::cell::Cell as Shared;
use std::fmt::Write;

thread_local! {
    /// The width tables are fitted to while rendering (`None`: as wide as they are).
    static WIDTH: Shared<Option<usize>> = const { Shared::new(None) };
}

mod acks;
mod identify;
mod reassembly;
pub(crate) use acks::*;
pub use identify::*;
pub use reassembly::*;

/// Runs `f` with tables fitted to `width` columns (`None`: every column, as wide as it
/// needs: `--wide`, or output that is not a terminal).
pub fn with_width<T>(width: Option<usize>, f: impl FnOnce() -> T) -> T {
    let before = WIDTH.with(|w| w.replace(width.map(|w| w.max(40))));
    let out = f();
    WIDTH.with(|w| w.set(before));
    out
}

/// The whole report fitted to `width` (see [`fitted`]).
pub fn render_at(r: &Report, width: Option<usize>) -> String {
    fitted(width, || render(r))
}

/// What `render` writes, fitted to `width`: its tables (see [`with_width`]) and its lines
/// of prose, folded at spaces with their indentation kept.
pub fn fitted(width: Option<usize>, render: impl FnOnce() -> String) -> String {
    let text = with_width(width, render);
    let Some(width) = width.map(|w| w.max(40)) else {
        return text;
    };
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let table = body.starts_with(['┌', '│', '├', '╞', '└']);
        if table || body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent: String = body.chars().take_while(|c| *c == ' ').collect();
        let room = width.saturating_sub(indent.len()).max(20);
        for part in super::wrap(body.trim_start(), room) {
            let _ = writeln!(out, "{indent}{part}");
        }
        if !line.ends_with('\n') {
            out.pop();
        }
    }
    out
}

/// A table as text, fitted to the width in force: the columns of `drop` left out in that
/// order until it fits (never the first), then the widest text columns wrapped; the
/// columns left out are named under it.
pub(crate) fn shown(mut t: Table, drop: &[usize]) -> String {
    let Some(width) = WIDTH.with(Shared::get) else {
        return t.to_string();
    };
    let widths = t.column_max_content_widths();
    let mut shown: Vec<bool> = vec![true; widths.len()];
    let total = |shown: &[bool]| -> usize {
        let cols = shown.iter().filter(|s| **s).count();
        widths
            .iter()
            .zip(shown)
            .filter(|(_, s)| **s)
            .map(|(w, _)| *w as usize + 2)
            .sum::<usize>()
            + cols
            + 1
    };
    let names: Vec<String> = t
        .header()
        .map(|h| h.cell_iter().map(|c| c.content()).collect())
        .unwrap_or_default();
    let mut left_out = Vec::new();
    for &k in drop {
        if total(&shown) <= width {
            break;
        }
        if k == 0 || k >= shown.len() {
            continue;
        }
        shown[k] = false;
        if let Some(c) = t.column_mut(k) {
            c.set_constraint(ColumnConstraint::Hidden);
        }
        left_out.push(names.get(k).cloned().unwrap_or_default());
    }
    if total(&shown) > width {
        // Numbers keep their width; text columns wrap into what is left.
        let numeric: Vec<bool> = (0..widths.len()).map(|k| numbers_only(&t, k)).collect();
        for (k, n) in numeric.iter().enumerate() {
            if *n
                && shown[k]
                && let Some(c) = t.column_mut(k)
            {
                c.set_constraint(ColumnConstraint::ContentWidth);
            }
        }
        t.set_content_arrangement(ContentArrangement::Dynamic);
        t.set_width(width.min(u16::MAX as usize) as u16);
    }
    let mut out = t.to_string();
    if !left_out.is_empty() {
        let _ = write!(
            out,
            "\n(left out for {width} columns: {}; --wide shows every column)",
            left_out.join(", ")
        );
    }
    out
}

/// Whether every cell of column `k` (the header aside) is a number, a percentage, a
/// ratio or `-`: what must never be wrapped.
fn numbers_only(t: &Table, k: usize) -> bool {
    t.column_cells_iter(k).flatten().all(|c| {
        c.content()
            .chars()
            .all(|ch| ch.is_ascii_digit() || ".-%×() –".contains(ch))
    })
}

pub(crate) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().map(Cell::new));
    t
}

pub(crate) fn right(t: &mut Table, from: usize) {
    let n = t.column_count();
    for i in from..n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Two columns, a name and its value, fitted to the width in force (values wrap).
fn kv(rows: &[(&str, String)]) -> String {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    for (k, v) in rows {
        t.add_row(vec![k.to_string(), v.clone()]);
    }
    shown(t, &[])
}

/// The fit's warning above a table whose figures rest on it.
fn warn(out: &mut String, r: &Report, what: &str) {
    if let Some(w) = r.fit.warning(what) {
        let _ = writeln!(out, "{w}");
    }
}

/// The whole report, section by section.
/// The columns every flow table starts with (after the flow), and their cells.
const TRAFFIC: [&str; 6] = ["datagrams", "bytes", "secs", "pkt/s", "kbit/s", "largest"];

fn traffic_cells(f: &crate::sinks::analysis::FlowStats) -> Vec<String> {
    vec![
        format!("{} → {}", f.src, f.dst),
        f.datagrams.to_string(),
        f.bytes.to_string(),
        format!("{:.2}", f.duration_s),
        format!("{:.1}", f.packets_per_s),
        format!("{:.1}", f.bits_per_s / 1000.0),
        f.largest_payload.to_string(),
    ]
}

/// The note under a table that shows only the busiest `shown` of `total` rows.
fn more_rows(out: &mut String, total: usize, shown: usize, what: &str) {
    if total > shown {
        let _ = writeln!(
            out,
            "({} more {what}, fewer datagrams each; --json lists them all)",
            total - shown
        );
    }
}

/// The capture summary: files, frames, link types, what was not UDP, read errors.
fn render_capture(out: &mut String, c: &crate::sinks::analysis::CaptureSummary) {
    let _ = writeln!(out, "Capture");
    let mut files: Vec<String> = c
        .files
        .iter()
        .take(3)
        .map(|f| format!("{} ({})", f.name, super::count(f.frames, "frame")))
        .collect();
    if c.files.len() > 3 {
        files.push(format!("and {} more", c.files.len() - 3));
    }
    let mut rows = vec![
        (
            if c.files.len() > 1 {
                "files (one trace)"
            } else {
                "files"
            },
            files.join(", "),
        ),
        ("frames", c.frames.to_string()),
        ("bytes captured", c.bytes.to_string()),
        ("duration", format!("{:.3} s", c.duration_s)),
        (
            "link types",
            c.link_types
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("udp datagrams", c.udp_datagrams.to_string()),
        ("  on other ports", c.other_udp.to_string()),
        (
            "ip fragments",
            format!("{} ({} datagrams rebuilt)", c.ip_fragments, c.ip_reassembled),
        ),
        ("icmp too-big", c.icmp_too_big.to_string()),
    ];
    if !c.vlans.is_empty() {
        let mut vlans: Vec<String> = c
            .vlans
            .iter()
            .take(8)
            .map(|(id, n)| format!("{id} ({n} frames)"))
            .collect();
        if c.vlans.len() > 8 {
            vlans.push(format!("and {} more", c.vlans.len() - 8));
        }
        rows.push(("802.1Q VLANs", vlans.join(", ")));
    }
    if !c.not_udp.is_empty() {
        rows.push((
            "not udp",
            c.not_udp
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    if !c.decode_errors.is_empty() {
        rows.push((
            "malformed frames",
            c.decode_errors
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    rows.push(("truncated by snaplen", c.snaplen_truncated.to_string()));
    if c.time_went_back > 0 {
        rows.push((
            "time went back",
            format!(
                "{} datagrams earlier than one their flow sent before them (a clock stepped back): flows are timed from their earliest to their latest",
                c.time_went_back
            ),
        ));
    }
    for f in &c.files {
        if let Some(e) = &f.error {
            rows.push(("read error", e.to_string()));
        }
        if let Some(e) = &f.truncated_tail {
            rows.push(("truncated file", e.to_string()));
        }
    }
    let _ = writeln!(out, "{}\n", kv(&rows));
}

/// A capture without a game protocol: its summary and UDP conversations, busiest first.
pub fn render_conversations(r: &crate::sinks::analysis::Conversations) -> String {
    let mut out = String::new();
    render_capture(&mut out, &r.capture);
    let _ = writeln!(out, "UDP conversations");
    let mut t = table(
        &[
            &["conversation"],
            &TRAFFIC[..],
            &["p50 size", "ip_fragmented", "service"],
        ]
        .concat(),
    );
    const SHOWN: usize = 40;
    for crate::sinks::analysis::Conversation(f) in r.conversations.iter().take(SHOWN) {
        let mut row = traffic_cells(f);
        row.extend([f.sizes.p50.to_string(), f.ip_fragmented.to_string()]);
        // The well-known service on its ports, as Wireshark would name it.
        row.push(
            gpcap_wire::decode::services::service(f.src.port(), f.dst.port())
                .unwrap_or("-")
                .to_string(),
        );
        t.add_row(row);
    }
    right(&mut t, 1);
    if let Some(c) = t.column_mut(9) {
        c.set_cell_alignment(CellAlignment::Left);
    }
    let _ = writeln!(out, "{}", shown(t, &[3, 5, 7, 2, 6, 8, 4]));
    more_rows(&mut out, r.conversations.len(), SHOWN, "conversations");
    let _ = writeln!(out, "\n{}", r.note);
    out
}

/// The text report of `gpcap analyze`, section by section.
pub fn render(r: &Report) -> String {
    let mut out = super::fit::render(r);
    render_capture(&mut out, &r.capture);
    if r.fit.note.is_some() {
        // Zero configuration whose reference header does not fit: no numbers built on it.
        return out;
    }
    render_validation(&mut out, r);
    render_flows(&mut out, r);
    render_types(&mut out, r);
    if let Some(m) = &r.messages {
        render_messages(&mut out, m);
        render_streams(&mut out, r);
    }
    render_malformed(&mut out, r);
    let _ = writeln!(out);
    out.push_str(&render_acks(r));
    out.push_str(&render_reassembly(r));
    out.push_str(&render_mtu(r));
    out.push_str(&super::layers::render(r));
    out
}

/// The mismatches, and how many are on flows whose mismatches validate with another
/// protocol id: another protocol or version, not damage.
fn crc_mismatch_text(r: &Report) -> String {
    let n = r.validation.crc_mismatch;
    let other: Vec<&crate::sinks::analysis::FlowStats> =
        r.flows.iter().filter(|f| f.crc_other_id.is_some()).collect();
    if other.is_empty() {
        return n.to_string();
    }
    let on: u64 = other.iter().map(|f| f.crc_fail).sum();
    let mut ids: Vec<&str> = other
        .iter()
        .filter_map(|f| f.crc_other_id.as_ref())
        .map(|o| o.id.as_str())
        .collect();
    ids.sort();
    ids.dedup();
    format!(
        "{n} ({on} on {} whose mismatches validate with protocol id {}: another protocol or version, not damage; {} other)",
        super::count(other.len() as u64, "flow"),
        ids.join(", "),
        n.saturating_sub(on)
    )
}

/// Protocol validation: what was examined and how it validated.
fn render_validation(out: &mut String, r: &Report) {
    let p = &r.protocol;
    let v = &r.validation;
    let _ = writeln!(out, "Protocol validation");
    let mut rows = vec![
        (
            "protocol",
            format!(
                "{} {} ({})",
                p.name.clone().unwrap_or_default(),
                match (p.protocol_id, p.checksum) {
                    (Some(i), _) => i.to_string(),
                    (None, gpcap_dissect::program::Checksum::None) => String::new(),
                    (None, _) => "unknown".into(),
                },
                match p.source.as_str() {
                    "identified" => "identified from the traffic",
                    "definition" => "from the definition",
                    "flag" => "from --protocol-id",
                    other => other,
                }
            )
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        ),
        (
            "ports",
            if p.any_port {
                "any".into()
            } else {
                p.ports
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            },
        ),
        ("datagrams examined", v.examined.to_string()),
        ("crc_ok", v.crc_ok.to_string()),
        ("crc_mismatch", crc_mismatch_text(r)),
        ("too_short", v.too_short.to_string()),
        ("truncated (not validated)", v.truncated.to_string()),
        ("packets", v.packets.to_string()),
        ("fragments", v.fragments.to_string()),
    ];
    for (k, n) in &v.header_errors {
        rows.push(("header error", format!("{k} {n}")));
    }
    if let Some(rule) = &p.checksum_rule {
        rows.insert(2, ("validation", rule.clone()));
        if v.crc_unverified > 0 {
            rows.push((
                "crc_unverified",
                format!(
                    "{} (the value standing in the checksum was never sent in their conversation)",
                    v.crc_unverified
                ),
            ));
        }
    } else if !p.checksum.is_crc32() {
        rows.insert(
            2,
            (
                "validation",
                "no checksum declared: a datagram on the ports whose header reads cleanly (counted as \"crc_ok\")".into(),
            ),
        );
    }
    if r.flows.iter().any(|f| f.role.is_some()) {
        let worst: Vec<String> = r
            .flows
            .iter()
            .filter(|f| f.wrong_direction > 0)
            .take(3)
            .map(|f| {
                let by = match f.role {
                    Some(gpcap_dissect::program::Side::Server) => "the server",
                    _ => "a client",
                };
                format!("{} from {by} on {} → {}", f.wrong_direction, f.src, f.dst)
            })
            .collect();
        rows.push((
            "wrong_direction",
            if worst.is_empty() {
                "0 (every packet type came from the side it is declared from)".into()
            } else {
                format!("{} ({})", v.wrong_direction, worst.join("; "))
            },
        ));
    }
    let _ = writeln!(out, "{}\n", kv(&rows));
}

/// The busiest flows, their sequence jumps and the flows past the flow table.
fn render_flows(out: &mut String, r: &Report) {
    let _ = writeln!(out, "Flows");
    warn(out, r, "the lost, dup and late columns");
    let mut t = table(
        &[
            &["flow"],
            &TRAFFIC[..],
            &[
                "crc_ok",
                "crc_mismatch",
                "lost",
                "dup",
                "late",
                "frags",
                "ip_fragmented",
            ],
        ]
        .concat(),
    );
    // The busiest flows; the JSON has them all.
    const SHOWN: usize = 40;
    let mut flows: Vec<&crate::sinks::analysis::FlowStats> = r.flows.iter().collect();
    if flows.len() > SHOWN {
        flows.sort_by_key(|f| std::cmp::Reverse(f.datagrams));
    }
    for f in flows.iter().take(SHOWN) {
        let mut row = traffic_cells(f);
        // No datagram carried a sequence (messages may, in their streams): not measured.
        let measured = f.seq.first.is_some() || f.seq.received > 0;
        let seq = |n: u64| if measured { n.to_string() } else { "-".into() };
        row.extend([
            f.crc_ok.to_string(),
            f.crc_fail.to_string(),
            seq(f.seq.lost),
            seq(f.seq.duplicates),
            seq(f.seq.late),
            f.fragments.to_string(),
            f.ip_fragmented.to_string(),
        ]);
        t.add_row(row);
    }
    right(&mut t, 1);
    // Left out first: the rates and sizes (the JSON has them), then the rarer verdicts.
    let _ = writeln!(out, "{}", shown(t, &[3, 5, 2, 6, 7, 4, 12, 13, 10]));
    more_rows(out, r.flows.len(), SHOWN, "flows");
    let jumps: u64 = r.flows.iter().map(|f| f.seq.jumps).sum();
    if jumps > 0 {
        let _ = writeln!(
            out,
            "({jumps} datagrams on {} flows carried a sequence more than {} from the newest: counted as sequence jumps, not as loss or lateness)",
            r.flows.iter().filter(|f| f.seq.jumps > 0).count(),
            gpcap_engine::seq::MAX_JUMP
        );
    }
    for f in r.flows.iter().filter(|f| f.crc_other_id.is_some()) {
        if let Some(o) = &f.crc_other_id {
            let _ = writeln!(
                out,
                "({} → {}: {} of its first {} crc_mismatch datagrams validate with protocol id {}: another protocol or version on the ports, not damage)",
                f.src, f.dst, o.matching, o.sampled, o.id
            );
        }
    }
    if let Some(u) = &r.untracked {
        let _ = writeln!(
            out,
            "({} datagrams of flows past the flow table were validated and counted together — {} crc_ok, {} crc_mismatch, {} malformed — without sequence or reassembly analysis)",
            r.capture.flows_not_tracked, u.crc_ok, u.crc_fail, u.malformed
        );
    }
    let _ = writeln!(out);
}

/// Datagrams and reassembled packets per packet type, over every flow.
fn render_types(out: &mut String, r: &Report) {
    let mut totals: Vec<(u64, u64)> = Vec::new();
    for f in &r.flows {
        let n = f.types.len().max(f.reassembled_types.len());
        if totals.len() < n {
            totals.resize(n, (0, 0));
        }
        for (i, n) in f.types.iter().enumerate() {
            totals[i].0 += n;
        }
        for (i, n) in f.reassembled_types.iter().enumerate() {
            totals[i].1 += n;
        }
    }
    if totals.iter().any(|&(d, p)| d + p > 0) {
        let _ = writeln!(out, "Packet types");
        let mut t = table(&["type", "name", "datagrams", "reassembled packets"]);
        for (i, (d, p)) in totals.iter().enumerate().filter(|(_, (d, p))| d + p > 0) {
            let name = r.type_names.get(i).cloned().flatten().unwrap_or_default();
            t.add_row(vec![i.to_string(), name, d.to_string(), p.to_string()]);
        }
        right(&mut t, 2);
        right(&mut t, 3);
        let _ = writeln!(out, "{}", shown(t, &[]));
        let _ = writeln!(
            out,
            "(datagrams as received, fragments as their own type; reassembled packets by the type of the whole packet)\n"
        );
    }
}

/// Malformed packets by cause.
fn render_malformed(out: &mut String, r: &Report) {
    let _ = writeln!(out, "Malformed packets: {}", r.malformed.total);
    if r.malformed.total > 0 {
        let mut t = table(&["cause", "packets"]);
        for (k, n) in &r.malformed.by_cause {
            t.add_row(vec![k.clone(), n.to_string()]);
        }
        right(&mut t, 1);
        let _ = writeln!(out, "{}", shown(t, &[]));
    }
}

/// Message streams per flow and stream name, their keys' counters added up.
fn render_streams(out: &mut String, r: &Report) {
    let mut t = table(&["flow", "stream", "keys", "received", "lost", "dup", "late"]);
    let mut rows = 0;
    for f in &r.flows {
        let mut by_name: Vec<(&str, [u64; 5])> = Vec::new();
        for s in &f.streams {
            let i = match by_name.iter().position(|(n, _)| *n == s.name) {
                Some(i) => i,
                None => {
                    by_name.push((&s.name, [0; 5]));
                    by_name.len() - 1
                }
            };
            let c = &mut by_name[i].1;
            c[0] += 1;
            c[1] += s.seq.received;
            c[2] += s.seq.lost;
            c[3] += s.seq.duplicates;
            c[4] += s.seq.late;
        }
        for (name, c) in by_name {
            rows += 1;
            let mut row = vec![format!("{} → {}", f.src, f.dst), name.to_string()];
            row.extend(c.iter().map(|x| x.to_string()));
            t.add_row(row);
        }
    }
    if rows == 0 {
        return;
    }
    right(&mut t, 2);
    let _ = writeln!(out, "Message streams");
    let _ = writeln!(out, "{}", shown(t, &[2, 5]));
    let _ = writeln!(
        out,
        "(a counter per flow, stream and key value — `flows[].streams` in JSON; lost: sequences skipped and never seen, dup: extra copies)"
    );
    let untracked = r.messages.as_ref().map_or(0, |m| m.streams_not_tracked);
    if untracked > 0 {
        let _ = writeln!(
            out,
            "{untracked} messages of streams past the first {} are in no row: not sequence-analyzed",
            gpcap_engine::streams::MAX_STREAMS
        );
    }
    let _ = writeln!(out);
}

/// Messages by type, and datagrams by how many messages they carry.
fn render_messages(out: &mut String, m: &crate::sinks::analysis::MessageReport) {
    let _ = writeln!(out, "Messages: {}", m.total);
    let mut t = table(&["message type", "messages"]);
    let mut by_type: Vec<(&String, &u64)> = m.by_type.iter().collect();
    by_type.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
    for (name, n) in by_type {
        t.add_row(vec![name.clone(), n.to_string()]);
    }
    if m.unreadable > 0 {
        t.add_row(vec!["(header unreadable)".into(), m.unreadable.to_string()]);
    }
    right(&mut t, 1);
    let _ = writeln!(out, "{}", shown(t, &[]));
    let several: u64 = m
        .per_datagram
        .iter()
        .filter(|(k, _)| **k > 1)
        .map(|(_, n)| n)
        .sum();
    let spread: Vec<String> = m.per_datagram.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    let _ = writeln!(
        out,
        "(datagrams by messages carried — {}; {several} carry several)\n",
        spread.join(", ")
    );
}
