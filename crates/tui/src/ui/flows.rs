//! The Flows tab: every conversation with its sequence and ack analysis, sortable, and
//! the selected flow over time (datagrams, sequence gaps, round trips per second).

use super::*;
use crate::app::FLOW_COLUMNS;

pub(super) fn draw_flows(f: &mut Frame, app: &App, ix: &Index, area: Rect, d: &mut Drawn) {
    if not_ready(f, ix, area, "Flows") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Min(5),
            Constraint::Length(if area.height >= 20 { 8 } else { 5 }),
        ])
        .split(area);
    let order = app.flow_order(ix);
    d.areas.flows = table_body(split[0]);
    let height = d.areas.flows.height as usize;
    let table = app.flows.fitted(order.len(), height);
    d.flows = Some(table);
    // Ack columns when the definition marks ack fields (the same numbers as analyze).
    let acks = r.flows.iter().any(|fl| fl.acks.is_some());
    let shown: Vec<(usize, usize)> = order
        .iter()
        .copied()
        .enumerate()
        .skip(table.scroll)
        .take(height)
        .collect();
    let texts: Vec<Vec<String>> = shown
        .iter()
        .filter_map(|&(_, i)| r.flows.get(i))
        .map(|fl| flow_cells(fl, acks))
        .collect();
    let header = flow_header(app, acks);
    // What gives way first on a narrow screen: acks and details, then rates.
    const PRIORITY: [u8; 14] = [0, 0, 1, 5, 7, 2, 8, 9, 3, 6, 4, 10, 11, 12];
    let need: Vec<usize> = (0..header.len())
        .map(|k| {
            let widest = texts.iter().map(|t| t[k].chars().count()).max().unwrap_or(0);
            widest.max(header[k].chars().count())
        })
        .collect();
    let widths = fit(
        &need,
        &PRIORITY[..header.len()],
        None,
        0,
        split[0].width.saturating_sub(2) as usize,
    );
    let kept = |k: usize| widths[k].is_some();
    let rows = flow_rows(app, table.selected, &shown, &texts, &kept);
    let (constraints, header) = super::kept_columns(&widths, header);
    let t = Table::new(rows, constraints)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::default().borders(Borders::ALL).title(format!(
            " Flows ({}, one a direction) · Enter: its packets · b: both ways · s: sort ",
            r.flows.len()
        )));
    f.render_widget(t, split[0]);
    draw_series(f, app, ix, table.selected, split[1]);
}

/// One flow's cells: addresses, rates, loss and sequence counts, and its acks when the
/// definition marks ack fields.
fn flow_cells(fl: &gpcap::sinks::analysis::FlowStats, acks: bool) -> Vec<String> {
    let total = fl.seq.received + fl.seq.lost;
    let loss = if total > 0 {
        fl.seq.lost as f64 / total as f64
    } else {
        0.0
    };
    let mut cells = vec![
        fl.src.to_string(),
        fl.dst.to_string(),
        fl.datagrams.to_string(),
        format!("{:.1}", fl.packets_per_s),
        format!("{:.1}", fl.bits_per_s / 1000.0),
        pct(loss),
        fl.seq.duplicates.to_string(),
        fl.seq.late.to_string(),
        fl.crc_fail.to_string(),
        fl.largest_payload.to_string(),
        fl.fragments.to_string(),
    ];
    if acks {
        let a = fl.acks.as_ref();
        cells.push(a.map_or("-".into(), |a| a.acked.to_string()));
        cells.push(a.map_or("-".into(), |a| pct(a.ack_implied_loss)));
        cells.push(
            a.and_then(|a| a.rtt_ms)
                .map_or("-".into(), |r| format!("{:.2}", r.p50)),
        );
    }
    cells
}

/// The column names, the sort column marked with its direction.
fn flow_header(app: &App, acks: bool) -> Vec<String> {
    // Source and destination stand for the sort key `flow`; the rest follow FLOW_COLUMNS.
    let mut header: Vec<String> = ["source", "destination"].iter().map(|s| s.to_string()).collect();
    header.extend(
        FLOW_COLUMNS[1..if acks { 13 } else { 10 }]
            .iter()
            .map(|s| s.to_string()),
    );
    if app.flows.sort > 0
        && let Some(h) = header.get_mut(app.flows.sort + 1)
    {
        h.push(if app.flows.descending { '▼' } else { '▲' });
    }
    header
}

/// The shown flows' rows, those with over 1% loss in red, the selected one marked;
/// only the columns `kept` on this screen.
fn flow_rows<'a>(
    app: &App,
    selected: usize,
    shown: &[(usize, usize)],
    texts: &'a [Vec<String>],
    kept: &dyn Fn(usize) -> bool,
) -> Vec<TRow<'a>> {
    shown
        .iter()
        .zip(texts)
        .map(|(&(k, _), cells)| {
            let row = TRow::new(
                cells
                    .iter()
                    .enumerate()
                    .filter(|(c, _)| kept(*c))
                    .map(|(c, t)| {
                        let loss_hot =
                            c == 5 && t.trim_end_matches('%').parse::<f64>().is_ok_and(|x| x > 1.0);
                        let cell = Cell::from(t.clone());
                        if loss_hot {
                            cell.style(style(app, Color::Red))
                        } else {
                            cell
                        }
                    })
                    .collect::<Vec<_>>(),
            );
            if k == selected {
                row.style(selected_style(app))
            } else {
                row
            }
        })
        .collect()
}

/// The selected flow per second of capture time.
fn draw_series(f: &mut Frame, app: &App, ix: &Index, selected: usize, area: Rect) {
    let order = app.flow_order(ix);
    let Some(r) = &ix.report else { return };
    let Some(fl) = order.get(selected).and_then(|&i| r.flows.get(i)) else {
        return;
    };
    let Some(s) = &app.flow_series else {
        f.render_widget(Block::default().borders(Borders::ALL), area);
        return;
    };
    // Stacked when the pane is tall enough to read each; side by side otherwise.
    let parts = if s.rtt_ms.is_some() { 3 } else { 2 };
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints(vec![Constraint::Ratio(1, parts); parts as usize])
        .split(area);
    // The flow's own count, the number analyze prints: gaps later filled are not lost.
    let lost = fl.seq.lost;
    draw_time_chart(
        f,
        app,
        cols[0],
        &if cols[0].width > 64 {
            format!("{} → {}: datagrams", fl.src, fl.dst)
        } else {
            "datagrams".to_string()
        },
        &s.datagrams,
        Color::Cyan,
        false,
    );
    draw_time_chart(
        f,
        app,
        cols[1],
        &format!("lost ({lost})"),
        &s.gaps,
        Color::Red,
        false,
    );
    if let (Some(rtt), Some(col)) = (&s.rtt_ms, cols.get(2)) {
        draw_time_chart(f, app, *col, "mean rtt ms", rtt, Color::Yellow, true);
    }
}
