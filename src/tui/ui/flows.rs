//! The Flows tab: every conversation with its sequence and ack analysis.

use super::*;

pub(super) fn draw_flows(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if not_ready(f, ix, area, "Flows") {
        return;
    }
    let Some(r) = &ix.report else { return };
    // Ack columns when the definition marks ack fields (the same numbers as analyze).
    let acks = r.flows.iter().any(|fl| fl.acks.is_some());
    let rows: Vec<TRow> = r
        .flows
        .iter()
        .map(|fl| {
            let total = fl.seq.received + fl.seq.lost;
            let loss = if total > 0 {
                fl.seq.lost as f64 / total as f64
            } else {
                0.0
            };
            let loss_style = if loss > 0.01 {
                style(app, Color::Red)
            } else {
                Style::default()
            };
            let mut cells = vec![
                Cell::from(format!("{} → {}", fl.src, fl.dst)),
                Cell::from(fl.datagrams.to_string()),
                Cell::from(format!("{:.1}", fl.packets_per_s)),
                Cell::from(format!("{:.1}", fl.bits_per_s / 1000.0)),
                Cell::from(pct(loss)).style(loss_style),
                Cell::from(fl.seq.duplicates.to_string()),
                Cell::from(fl.seq.late.to_string()),
                Cell::from(fl.crc_fail.to_string()),
                Cell::from(fl.largest_payload.to_string()),
                Cell::from(fl.fragments.to_string()),
            ];
            if acks {
                let a = fl.acks.as_ref();
                cells.push(Cell::from(a.map_or("-".into(), |a| a.acked.to_string())));
                cells.push(Cell::from(a.map_or("-".into(), |a| pct(a.ack_implied_loss))));
                cells.push(Cell::from(
                    a.and_then(|a| a.rtt_ms)
                        .map_or("-".into(), |r| format!("{:.2}", r.p50)),
                ));
            }
            TRow::new(cells)
        })
        .collect();
    let mut widths = vec![
        Constraint::Min(24),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(6),
    ];
    let mut header = vec![
        "flow",
        "datagrams",
        "pkt/s",
        "kbit/s",
        "loss",
        "dup",
        "late",
        "crc fail",
        "largest",
        "frags",
    ];
    if acks {
        widths.extend([
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(8),
        ]);
        header.extend(["acked", "ack loss", "rtt p50"]);
    }
    let t = Table::new(rows, widths)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" Flows ({}) ", r.flows.len())),
        );
    f.render_widget(t, area);
}
