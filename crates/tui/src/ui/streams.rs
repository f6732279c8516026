//! The Streams view of the Flows tab: per direction and message stream, what the
//! sequence analysis and the ack analysis found — `analyze`'s *Message streams* and
//! *Acks* figures, "-" where a figure was not measured, a doubtful analysis said so.

use super::*;
use gpcap::sinks::analysis::AckStats;
use gpcap::sinks::analysis::{FlowStats, Report};

const HEADER: [&str; 14] = [
    "flow",
    "stream",
    "key",
    "received",
    "lost",
    "dup",
    "late",
    "acked",
    "never acked",
    "NAKed",
    "resent",
    "spurious",
    "ack loss",
    "rtt p50 ms",
];
/// What gives way first on a narrow screen.
const PRIORITY: [u8; 14] = [0, 0, 9, 2, 1, 3, 4, 6, 2, 8, 5, 7, 10, 5];

pub(super) fn draw_streams(f: &mut Frame, app: &App, ix: &Index, area: Rect, d: &mut Drawn) {
    if not_ready(f, ix, area, "Streams") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let order = app.stream_order(ix);
    let doubt = r.fit.warning("the sequences, acks and loss");
    // Drilled into a stream: the streams above, as few rows as they need, its messages.
    let messages = app.messages.is_some();
    let top = (order.len() as u16 + 3).clamp(4, area.height / 3).max(4);
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            if messages {
                Constraint::Length(top)
            } else {
                Constraint::Min(4)
            },
            Constraint::Length(u16::from(doubt.is_some())),
            Constraint::Min(if messages { 4 } else { 0 }),
        ])
        .split(area);
    if messages {
        draw_messages(f, app, split[2], d);
    }
    d.areas.flows = table_body(split[0]);
    let height = d.areas.flows.height as usize;
    let table = app.streams.fitted(order.len(), height);
    d.streams = Some(table);
    let texts: Vec<Vec<String>> = (order.iter().skip(table.scroll).take(height))
        .map(|&(fi, si)| stream_cells(r, &r.flows[fi], si))
        .collect();
    let need: Vec<usize> = (0..HEADER.len())
        .map(|k| {
            let widest = texts.iter().map(|t| t[k].chars().count()).max().unwrap_or(0);
            widest.max(HEADER[k].chars().count())
        })
        .collect();
    let widths = fit(
        &need,
        &PRIORITY,
        None,
        0,
        split[0].width.saturating_sub(2) as usize,
    );
    let rows: Vec<TRow> = (texts.iter().enumerate())
        .map(|(k, cells)| {
            let kept = (cells.iter().zip(&widths)).filter(|(_, w)| w.is_some());
            let row = TRow::new(kept.map(|(c, _)| Cell::from(c.clone())).collect::<Vec<_>>());
            if k + table.scroll == table.selected {
                row.style(selected_style(app))
            } else {
                row
            }
        })
        .collect();
    let (constraints, header) = kept_columns(&widths, HEADER.iter().map(|s| s.to_string()).collect());
    let title = if order.is_empty() {
        " Streams: none (the definition has no role=sequence stream=…) · v: flows ".to_string()
    } else {
        format!(
            " Streams ({}, per direction and key) · Enter: its messages · p: its datagrams · v: flows ",
            order.len()
        )
    };
    let t = Table::new(rows, constraints)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::default().borders(Borders::ALL).title(title));
    f.render_widget(t, split[0]);
    if let Some(w) = doubt {
        f.render_widget(Paragraph::new(w).style(style(app, Color::Yellow)), split[1]);
    }
}

/// One stream's cells: its sequence figures, and its acks when the definition acks it
/// and the other direction acked (else "-": not measured). The ack-implied loss is held
/// back when the ack analysis is doubtful, as `analyze` holds it back.
fn stream_cells(r: &Report, f: &FlowStats, si: usize) -> Vec<String> {
    let s = &f.streams[si];
    let acks: Option<&AckStats> = (f.stream_acks.iter())
        .find(|a| a.name == s.name && a.key == s.key)
        .map(|a| &a.acks);
    let held = r.fit.analyses.acks != gpcap::sinks::analysis::fit::Verdict::Good;
    let ack = |g: &dyn Fn(&AckStats) -> String| acks.map_or("-".to_string(), g);
    vec![
        format!("{} → {}", f.src, f.dst),
        s.name.clone(),
        s.key.clone(),
        s.seq.received.to_string(),
        s.seq.lost.to_string(),
        s.seq.duplicates.to_string(),
        s.seq.late.to_string(),
        ack(&|a| a.acked.to_string()),
        ack(&|a| a.never_acked.to_string()),
        ack(&|a| a.naked.to_string()),
        ack(&|a| a.retransmissions.to_string()),
        ack(&|a| a.spurious_retransmissions.to_string()),
        ack(&|a| {
            if held {
                "held back".into()
            } else {
                format!("{:.1}%", a.ack_implied_loss * 100.0)
            }
        }),
        ack(&|a| a.rtt_ms.map_or("-".into(), |x| format!("{:.2}", x.p50))),
    ]
}
