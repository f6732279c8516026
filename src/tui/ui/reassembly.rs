//! The Reassembly tab: attack counters and each fragmented packet as a grid.

use super::*;

pub(super) fn draw_reassembly(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
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
    let mut packets: Vec<&crate::sinks::index::FragPacket> = ix.frags.iter().collect();
    packets.sort_by_key(|p| (p.complete(), p.first_frame));
    let width = split[1].width.saturating_sub(40) as usize;
    let rows: Vec<TRow> = packets
        .iter()
        .skip(app.scroll.min(packets.len().saturating_sub(1)))
        .take(split[1].height as usize)
        .map(|p| {
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
            TRow::new(vec![
                Cell::from(flow),
                Cell::from(p.seq.to_string()),
                Cell::from(format!("{}/{}", p.received_count(), p.count)),
                Cell::from(if p.duplicates > 0 {
                    format!("+{}", p.duplicates)
                } else {
                    String::new()
                }),
                Cell::from(grid).style(st),
            ])
        })
        .collect();
    let incomplete = packets.iter().filter(|p| !p.complete()).count();
    let t = Table::new(
        rows,
        [
            Constraint::Length(22),
            Constraint::Length(6),
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
        " Fragmented packets: {}, {incomplete} incomplete (listed first) ",
        packets.len()
    )));
    f.render_widget(t, split[1]);
}
