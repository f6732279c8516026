//! The Streams view's drill-down: the stream's messages, one a row, with the frame that
//! carried each, its index in the datagram, its sequence and its verdicts.

use super::*;

pub(super) fn draw_messages(f: &mut Frame, app: &App, area: Rect, d: &mut Drawn) {
    let picked = selected_style(app);
    let Some(m) = app.messages.as_ref() else { return };
    let height = table_body(area).height as usize;
    let table = m.table.fitted(m.rows.len(), height);
    d.messages = Some(table);
    let title = match (&m.error, m.reading()) {
        (Some(e), _) => format!(" {}: {e} ", m.title),
        (None, true) => format!(" {}: reading its messages… ", m.title),
        (None, false) if m.more > 0 => format!(
            " {}: the first {} messages ({} more) · Enter: its packet · Esc: back ",
            m.title,
            m.rows.len(),
            m.more
        ),
        (None, false) => format!(
            " {}: {} messages · Enter: its packet · Esc: back ",
            m.title,
            m.rows.len()
        ),
    };
    let (selected, scroll) = (table.selected, table.scroll);
    let rows: Vec<TRow> = (m.rows.iter().enumerate().skip(scroll).take(height))
        .map(|(k, r)| {
            let row = TRow::new(vec![
                Cell::from(r.frame.to_string()),
                Cell::from(r.message.to_string()),
                Cell::from(r.sequence.to_string()),
                Cell::from(r.verdict.clone()),
            ]);
            if k == selected { row.style(picked) } else { row }
        })
        .collect();
    let widths = [
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Min(10),
    ];
    let header = TRow::new(vec!["frame", "message", "sequence", "verdict"])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let t = Table::new(rows, widths)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title));
    f.render_widget(t, area);
}
