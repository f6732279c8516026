//! The Reassembly tab: attack counters and each fragmented packet as a grid.

use super::*;

pub(super) fn draw_reassembly(f: &mut Frame, app: &App, ix: &Index, area: Rect, d: &mut Drawn) {
    if not_ready(f, ix, area, "Reassembly results") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let lines = counter_lines(r, area.width.saturating_sub(2).max(1) as usize);
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Length(lines.len() as u16 + 2), Constraint::Min(3)])
        .split(area);
    let text: Vec<Line> = lines.into_iter().map(Line::from).collect();
    f.render_widget(
        Paragraph::new(text).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Reassembly: completed, given up, and attacks "),
        ),
        split[0],
    );
    draw_fragmented(f, app, ix, split[1], d);
}

/// Every reassembly counter whole, laid out to `inner` columns: as many to a line as fit.
fn counter_lines(r: &gpcap::sinks::analysis::Report, inner: usize) -> Vec<String> {
    let a = &r.reassembly.attacks;
    // Every counter whole: items are laid out to the width, and the pane is as tall as
    // they need.
    let items = [
        format!("completed {}", r.reassembly.completed),
        format!("incomplete_at_end {}", a.incomplete_at_end),
        format!("evicted_incomplete {}", a.evicted_incomplete),
        format!("evicted_for_memory {}", a.evicted_for_memory),
        format!("id_out_of_range {}", a.id_out_of_range),
        format!("count_out_of_range {}", a.count_out_of_range),
        format!("count_changed {}", a.count_changed),
        format!("oversize {}", a.oversize),
        format!("short_non_last {}", a.short_non_last),
        format!("duplicate {}", a.duplicate),
        format!("stale {}", a.stale),
    ];
    let mut lines: Vec<String> = vec![String::new()];
    for item in &items {
        let last = lines.last_mut().expect("one line at least");
        if last.is_empty() {
            last.push_str(item);
        } else if last.chars().count() + 3 + item.chars().count() <= inner {
            last.push_str(" · ");
            last.push_str(item);
        } else {
            lines.push(item.clone());
        }
    }
    lines
}

/// The fragmented packets, one row each with its fragments as a grid, incomplete first
/// unless sorted otherwise.
fn draw_fragmented(f: &mut Frame, app: &App, ix: &Index, area: Rect, d: &mut Drawn) {
    let order = app.frag_order(ix);
    d.areas.frags = table_body(area);
    let height = d.areas.frags.height as usize;
    let table = app.frags.fitted(order.len(), height);
    d.frags = Some(table);
    let packets: Vec<&gpcap::sinks::index::FragPacket> =
        order.iter().filter_map(|&i| ix.frags.get(i)).collect();
    let width = area.width.saturating_sub(46) as usize;
    let rows: Vec<TRow> = packets
        .iter()
        .enumerate()
        .skip(table.scroll)
        .take(height)
        .map(|(k, p)| fragment_row(app, ix, k == table.selected, p, width))
        .collect();
    let incomplete = packets.iter().filter(|p| !p.complete()).count();
    let t = Table::new(
        rows,
        [
            Constraint::Length(22),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Length(4),
            Constraint::Min(10),
        ],
    )
    .header(
        TRow::new([
            "sender",
            "seq",
            "frags",
            "dup",
            "fragments (█ received · missing)",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(format!(
        " Fragmented packets: {}, {incomplete} incomplete · {} · Enter: its fragments · s: sort ",
        packets.len(),
        if app.frags.sort == 0 {
            "incomplete first".to_string()
        } else {
            format!(
                "by {}{}",
                crate::app::FRAG_COLUMNS[app.frags.sort],
                if app.frags.descending { ", descending" } else { "" }
            )
        }
    )));
    f.render_widget(t, area);
}

/// One fragmented packet: its sender, sequence, fragments received of its count,
/// duplicates, and a grid `width` cells wide (green when complete, red when not).
fn fragment_row(
    app: &App,
    ix: &Index,
    selected: bool,
    p: &gpcap::sinks::index::FragPacket,
    width: usize,
) -> TRow<'static> {
    let flow = ix
        .flows
        .get(p.flow as usize)
        .map(|f| format!("{}", f.src))
        .unwrap_or_default();
    let mut grid: String = (0..p.count as u32)
        .take(width)
        .map(|i| if p.has(i) { '█' } else { '·' })
        .collect();
    if p.count as usize > width {
        grid.push('…');
    }
    let st = if p.complete() {
        style(app, Color::Green)
    } else {
        style(app, Color::Red)
    };
    let row = TRow::new(vec![
        Cell::from(flow),
        Cell::from(p.seq.to_string()),
        Cell::from(format!("{}/{}", p.received_count(), p.count)),
        Cell::from(if p.duplicates > 0 {
            format!("+{}", p.duplicates)
        } else {
            String::new()
        }),
        Cell::from(grid).style(st),
    ]);
    if selected {
        row.style(selected_style(app))
    } else {
        row
    }
}
