//! The Reassembly tab: attack counters and each fragmented packet as a grid.

use super::*;

pub(super) fn draw_reassembly(f: &mut Frame, app: &mut App, ix: &Index, area: Rect) {
    if not_ready(f, ix, area, "Reassembly results") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let a = &r.reassembly.attacks;
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Length(4), Constraint::Min(3)])
        .split(area);
    let counters = format!(
        "completed {}  ·  id out of range {}  count out of range {}  count changed {}  oversize {}  short non-last {}  duplicate {}  stale {}  ·  evicted {}  for memory {}  never completed {}",
        r.reassembly.completed,
        a.id_out_of_range,
        a.count_out_of_range,
        a.count_changed,
        a.oversize,
        a.short_non_last,
        a.duplicate,
        a.stale,
        a.evicted_incomplete,
        a.evicted_for_memory,
        a.incomplete_at_end
    );
    f.render_widget(
        Paragraph::new(counters).wrap(Wrap { trim: true }).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Attacks and give-ups "),
        ),
        split[0],
    );
    let order = app.frag_order(ix);
    app.areas.frags = table_body(split[1]);
    let height = app.areas.frags.height as usize;
    app.frags.fit(order.len(), height);
    let packets: Vec<&crate::sinks::index::FragPacket> =
        order.iter().filter_map(|&i| ix.frags.get(i)).collect();
    let width = split[1].width.saturating_sub(46) as usize;
    let rows: Vec<TRow> = packets
        .iter()
        .enumerate()
        .skip(app.frags.scroll)
        .take(height)
        .map(|(k, p)| {
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
            if k == app.frags.selected {
                row.style(selected_style(app))
            } else {
                row
            }
        })
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
                crate::tui::app::FRAG_COLUMNS[app.frags.sort],
                if app.frags.descending { ", descending" } else { "" }
            )
        }
    )));
    f.render_widget(t, split[1]);
}
