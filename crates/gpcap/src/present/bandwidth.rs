//! "Bandwidth by field": the profile of `analyze --bits` as a table, largest first.

use crate::sinks::bandwidth::{BandwidthReport, Row};
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};
use std::fmt::Write;

/// The table's first `top` rows, and what the rest add up to.
pub fn render(b: &BandwidthReport, top: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Bandwidth by field ({} rows, {} bits captured, counted from the {}; {}):",
        b.rows.len(),
        b.captured_bits,
        b.computed_from,
        b.rests_on
    );
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(
            [
                "Bits",
                "Wire",
                "Of type",
                "Bits/pkt",
                "bit/s",
                "Type",
                "Dir",
                "Field",
                "What",
                "Estimate (observed)",
            ]
            .iter()
            .map(Cell::new),
        );
    for r in b.rows.iter().take(top) {
        t.add_row(row(r));
    }
    for i in 0..5 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    // Left out first on a narrow terminal: the rates and shares the JSON has too.
    let _ = writeln!(out, "{}", super::tables::shown(t, &[4, 3, 2, 6, 8]));
    if b.rows.len() > top {
        let rest: u64 = b.rows.iter().skip(top).map(|r| r.bits).sum();
        let _ = writeln!(
            out,
            "… {} more rows, {rest} bits ({:.1}% of the wire): --bits-top N shows more",
            b.rows.len() - top,
            rest as f64 * 100.0 / b.captured_bits.max(1) as f64
        );
    }
    let _ = writeln!(
        out,
        "Rows add up to {} of {} captured bits.",
        b.rows_bits, b.captured_bits
    );
    out
}

fn row(r: &Row) -> Vec<String> {
    let dir = match r.direction {
        "client_to_server" => "c→s",
        "server_to_client" => "s→c",
        _ => "",
    };
    let ty = match (&r.packet_type, &r.message_type) {
        (Some(t), Some(m)) => format!("{t}/{m}"),
        (Some(t), None) => t.clone(),
        (None, _) => String::new(),
    };
    vec![
        r.bits.to_string(),
        format!("{:.1}%", r.share_of_wire * 100.0),
        r.share_of_type
            .map_or(String::new(), |s| format!("{:.1}%", s * 100.0)),
        format!("{:.1}", r.mean_bits_per_packet),
        r.bits_per_s.map_or(String::new(), |b| format!("{b:.0}")),
        ty,
        dir.to_string(),
        r.path.clone(),
        r.category.to_string(),
        estimate(r),
    ]
}

/// The estimate in a few words: what the values seen would need.
fn estimate(r: &Row) -> String {
    let Some(e) = &r.estimate else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(a) = e.always {
        parts.push(format!("always {a}"));
    } else if e.constant {
        parts.push("constant".to_string());
    }
    if let Some(rb) = e.range_bits
        && !e.constant
    {
        let at = match (e.resolution, e.resolution_source) {
            (Some(res), Some("what-if")) => format!(" at {}", resolution(res)),
            _ => String::new(),
        };
        parts.push(format!("range {rb} of {} bits{at}", r.declared_bits));
    }
    if e.past_range > 0 {
        let res = e.resolution.map(resolution).unwrap_or_default();
        parts.push(format!(
            "{} values need more than 62 bits at {res}: no estimate",
            e.past_range
        ));
    }
    if let Some(h) = e.entropy_bits
        && !e.constant
    {
        parts.push(format!("H {h:.2}"));
    }
    if let Some(d) = &e.delta
        && d.samples > 0
        && !e.constant
    {
        parts.push(format!("Δ {:.2}/value, width {}", d.mean_bits, d.width));
    }
    if e.distinct_capped {
        parts.push("distinct capped".to_string());
    }
    parts.join(", ")
}

/// A resolution as written, in exponent form when very fine or coarse (1e-16, not 17
/// digits; 1e300, not 301).
fn resolution(r: f64) -> String {
    if r != 0.0 && !(1e-4..1e6).contains(&r.abs()) {
        format!("{r:e}")
    } else {
        r.to_string()
    }
}
