//! The packet list.

use super::*;

pub(super) fn draw_packets(f: &mut Frame, app: &mut App, ix: &Index, area: Rect) {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
        .split(area);
    // The list.
    let height = rows[0].height.saturating_sub(3) as usize;
    app.list_height = height;
    if app.selected < app.scroll {
        app.scroll = app.selected;
    } else if app.selected >= app.scroll + height.max(1) {
        app.scroll = app.selected + 1 - height.max(1);
    }
    let first_ts = ix.rows.first().map(|r| r.ts_ns).unwrap_or(0);
    let names = |t: u16| -> String {
        if t == u16::MAX {
            return String::new();
        }
        app.program
            .as_ref()
            .and_then(|p| p.type_name(t as u32))
            .map(str::to_string)
            .unwrap_or_else(|| t.to_string())
    };
    let body: Vec<TRow> = app
        .view
        .iter()
        .skip(app.scroll)
        .take(height)
        .enumerate()
        .filter_map(|(k, &i)| {
            let r = ix.rows.get(i as usize)?;
            let flow = ix
                .flows
                .get(r.flow as usize)
                .map(|fl| format!("{} → {}", fl.src, fl.dst))
                .unwrap_or_default();
            let (word, color) = status_of(r);
            let game = r.has(status::GAME) && r.ptype != u16::MAX;
            let cells = vec![
                Cell::from(r.frame.to_string()),
                Cell::from(fmt_time(r.ts_ns, first_ts)),
                Cell::from(flow),
                Cell::from(if game { r.seq.to_string() } else { String::new() }),
                Cell::from(names(r.ptype)),
                Cell::from(if r.has(status::REASSEMBLED) {
                    format!("×{}", r.frag_count)
                } else if r.frag_count > 0 {
                    format!("{}/{}", r.frag_id as u32 + 1, r.frag_count)
                } else {
                    String::new()
                }),
                Cell::from(if r.flow != NO_FLOW {
                    r.size.to_string()
                } else {
                    String::new()
                }),
                Cell::from(word).style(style(app, color)),
            ];
            let mut row = TRow::new(cells);
            if app.scroll + k == app.selected {
                row = row.style(selected_style(app));
            }
            Some(row)
        })
        .collect();
    let title = if app.filter.is_all() {
        format!(" Packets ({}) ", app.view.len())
    } else {
        format!(
            " Packets ({} of {}) — filter: {} ",
            app.view.len(),
            ix.rows.len(),
            app.filter.text
        )
    };
    let border = if app.focus == Focus::List {
        style(app, Color::Cyan)
    } else {
        Style::default()
    };
    let table = Table::new(
        body,
        [
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Min(20),
            Constraint::Length(5),
            Constraint::Length(8),
            Constraint::Length(5),
            Constraint::Length(5),
            Constraint::Length(11),
        ],
    )
    .header(
        TRow::new(["No.", "Time", "Flow", "Seq", "Type", "Frag", "Size", "Status"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(title)
            .border_style(border),
    );
    f.render_widget(table, rows[0]);

    let bottom = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(rows[1]);
    draw_tree(f, app, bottom[0]);
    draw_hex(f, app, bottom[1]);
}
