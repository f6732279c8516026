//! The packet list: columns that give way by priority (never cut a number), an Info
//! column, marks, and the column chooser.

use super::*;

/// One cell's text for a row.
fn cell(app: &App, ix: &Index, c: Column, row: u32, r: &Row, prev_ts: Option<i64>) -> String {
    let game = r.has(status::GAME) && r.ptype != u16::MAX;
    let flow = ix.flows.get(r.flow as usize);
    match c {
        Column::No => r.frame.to_string(),
        Column::Time => time_text(app, ix, r, prev_ts),
        Column::Source => match (flow, ix.icmp.get(&row)) {
            (Some(f), _) => f.src.to_string(),
            (None, Some(i)) => i.from.to_string(),
            _ => String::new(),
        },
        Column::Destination => match (flow, ix.icmp.get(&row)) {
            (Some(f), _) => f.dst.to_string(),
            (None, Some(i)) => i.to.to_string(),
            _ => String::new(),
        },
        Column::Seq if game => r.sequence().map(|s| s.to_string()).unwrap_or_default(),
        Column::Type if r.ptype != u16::MAX => app
            .program
            .as_ref()
            .and_then(|p| p.type_name(r.ptype as u32))
            .map(str::to_string)
            .unwrap_or_else(|| r.ptype.to_string()),
        // A datagram of messages (no packet type): the message types it holds.
        Column::Type if game_row(r) => app.described(row).and_then(|d| d.1.clone()).unwrap_or_default(),
        // Not the game's: the well-known service on its ports (DNS, QUIC, STUN…).
        Column::Type if r.has(status::OTHER_UDP) => flow
            .and_then(|f| gpcap_wire::decode::services::service(f.src.port(), f.dst.port()))
            .unwrap_or("")
            .to_string(),
        Column::Frag if r.has(status::REASSEMBLED) => format!("×{}", r.frag_count),
        // The id as the tree's `fragment_id` reads: from 0.
        Column::Frag if r.frag_count > 0 => format!("{} of {}", r.frag_id, r.frag_count),
        Column::Size if r.flow != NO_FLOW => r.size.to_string(),
        Column::Status => status_text(r).0,
        Column::Info => app.described(row).map(|d| d.0.clone()).unwrap_or_default(),
        _ => String::new(),
    }
}

/// A game datagram sent whole: its Type column names its messages when it has no type.
pub(crate) fn game_row(r: &Row) -> bool {
    r.has(status::GAME) && r.frag_count == 0 && !r.has(status::REASSEMBLED)
}

fn time_text(app: &App, ix: &Index, r: &Row, prev_ts: Option<i64>) -> String {
    let first = ix.rows.first().map(|r| r.ts_ns).unwrap_or(0);
    match app.time_format {
        TimeFormat::Relative if app.time_ref == Some(r.ts_ns) => "*REF*".into(),
        TimeFormat::Relative => fmt_time(r.ts_ns, app.time_ref.unwrap_or(first)),
        TimeFormat::Delta => fmt_time(r.ts_ns, prev_ts.unwrap_or(r.ts_ns)),
        TimeFormat::Absolute => {
            let ns = r.ts_ns.rem_euclid(86_400 * 1_000_000_000);
            let s = ns / 1_000_000_000;
            format!(
                "{:02}:{:02}:{:02}.{:06}",
                s / 3600,
                s / 60 % 60,
                s % 60,
                ns % 1_000_000_000 / 1000
            )
        }
    }
}

/// The Packets tab's two rows: the list, then the tree beside the bytes.
pub(super) fn split(app: &App, area: Rect) -> std::rc::Rc<[Rect]> {
    Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Percentage(app.list_share),
            Constraint::Percentage(100 - app.list_share),
        ])
        .split(area)
}

/// The list's first row on screen: the last one's, moved only as far as keeps the
/// selection in view of `height` rows.
pub(crate) fn list_scroll(scroll: usize, selected: usize, height: usize) -> usize {
    if selected < scroll {
        selected
    } else if selected >= scroll + height.max(1) {
        selected + 1 - height.max(1)
    } else {
        scroll
    }
}

pub(super) fn draw_packets(f: &mut Frame, app: &App, ix: &Index, area: Rect, d: &mut Drawn) {
    let rows = split(app, area);
    // The list.
    d.areas.list = table_body(rows[0]);
    let height = d.areas.list.height as usize;
    d.list_height = Some(height);
    let scroll = list_scroll(app.scroll, app.selected, height);
    d.scroll = Some(scroll);
    let shown: Vec<u32> = app.view.iter().skip(scroll).take(height).copied().collect();
    let prev = |k: usize, app: &App| -> Option<i64> {
        let pos = (scroll + k).checked_sub(1)?;
        ix.rows.get(*app.view.get(pos)? as usize).map(|r| r.ts_ns)
    };
    let columns: Vec<Column> = Column::ALL
        .into_iter()
        .filter(|c| !app.hidden.contains(c))
        .collect();
    // Every cell of the rows on screen, to size the columns to what they hold.
    let mut texts: Vec<Vec<String>> = Vec::with_capacity(shown.len());
    for (k, &i) in shown.iter().enumerate() {
        let Some(r) = ix.rows.get(i as usize) else {
            continue;
        };
        let p = prev(k, app);
        texts.push(columns.iter().map(|&c| cell(app, ix, c, i, &r, p)).collect());
    }
    let inner = rows[0].width.saturating_sub(2) as usize;
    let widths = fit_columns(&columns, &texts, inner);
    let dropped: Vec<&str> = columns
        .iter()
        .zip(&widths)
        .filter(|(_, w)| w.is_none())
        .map(|(c, _)| c.title())
        .collect();
    let body: Vec<TRow> = shown
        .iter()
        .zip(&texts)
        .enumerate()
        .filter_map(|(k, (&i, cells))| packet_row(app, ix, &columns, &widths, scroll + k, i, cells))
        .collect();
    let title = list_title(app, ix, &dropped);
    let border = if app.focus == Focus::List {
        style(app, Color::Cyan)
    } else {
        Style::default()
    };
    let constraints: Vec<Constraint> = widths.iter().flatten().map(|&w| Constraint::Length(w)).collect();
    let header: Vec<&str> = columns
        .iter()
        .zip(&widths)
        .filter(|(_, w)| w.is_some())
        .map(|(c, _)| c.title())
        .collect();
    let table = Table::new(body, constraints)
        .column_spacing(1)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(title)
                .border_style(border),
        );
    f.render_widget(table, rows[0]);

    let bottom = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([
            Constraint::Percentage(app.tree_share),
            Constraint::Percentage(100 - app.tree_share),
        ])
        .split(rows[1]);
    draw_tree(f, app, bottom[0], d);
    draw_hex(f, app, bottom[1]);
    if app.mode == Mode::Columns {
        draw_chooser(f, app, area);
    }
}

/// Row `i` of the view at position `at`, its cells clipped to the columns' `widths`
/// (a column without one has no room), the status coloured, marked and selected rows
/// set apart.
fn packet_row<'a>(
    app: &App,
    ix: &Index,
    columns: &[Column],
    widths: &[Option<u16>],
    at: usize,
    i: u32,
    cells: &[String],
) -> Option<TRow<'a>> {
    let marker = |i: u32| if app.marks.contains(&i) { "●" } else { " " };
    let r = ix.rows.get(i as usize)?;
    let (_, color) = status_text(&r);
    let mut out = Vec::new();
    for ((c, text), w) in columns.iter().zip(cells).zip(widths) {
        let Some(w) = w else { continue };
        let text = if *c == Column::No {
            format!("{}{text}", marker(i))
        } else {
            gpcap::present::clip(text, *w as usize)
        };
        let cell = Cell::from(text);
        out.push(if *c == Column::Status {
            cell.style(style(app, color))
        } else {
            cell
        });
    }
    let mut row = TRow::new(out);
    if at == app.selected {
        row = row.style(selected_style(app));
    } else if app.marks.contains(&i) {
        row = row.style(Style::default().add_modifier(Modifier::BOLD));
    }
    Some(row)
}

/// The list's title: how many packets the filter kept, the columns with no room, and
/// the time format when it is not the default.
fn list_title(app: &App, ix: &Index, dropped: &[&str]) -> String {
    let mut title = if app.filter.is_all() {
        format!(" Packets ({}) ", app.view.len())
    } else {
        format!(
            " Packets ({} of {}) — filter: {} ",
            app.view.len(),
            ix.rows.len(),
            app.filter.text
        )
    };
    if !dropped.is_empty() {
        title.push_str(&format!("· no room for {} (c) ", dropped.join(", ")));
    }
    if app.time_format != TimeFormat::Relative || app.time_ref.is_some() {
        title.push_str(&format!("· time {} ", app.time_format.label()));
    }
    title
}

/// Widths of the columns (None: no room), each as wide as its widest cell or title; the
/// Info column takes what is left.
fn fit_columns(columns: &[Column], texts: &[Vec<String>], width: usize) -> Vec<Option<u16>> {
    let need: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let widest = texts.iter().map(|t| t[k].chars().count()).max().unwrap_or(0);
            let extra = usize::from(*c == Column::No); // the mark
            (widest + extra).max(c.title().chars().count())
        })
        .collect();
    let priority: Vec<u8> = columns.iter().map(|c| c.priority()).collect();
    let flex = columns.iter().position(|c| *c == Column::Info);
    fit(&need, &priority, flex, 12, width)
}

/// The column chooser: every column, shown or hidden.
fn draw_chooser(f: &mut Frame, app: &App, area: Rect) {
    let w = 30.min(area.width);
    let h = (Column::ALL.len() as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    let lines: Vec<Line> = Column::ALL
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let on = if app.hidden.contains(c) { "[ ]" } else { "[x]" };
            let text = format!(
                "{} {on} {}",
                if k == app.column_cursor { "›" } else { " " },
                c.title()
            );
            if k == app.column_cursor {
                Line::from(Span::styled(text, selected_style(app)))
            } else {
                Line::from(text)
            }
        })
        .collect();
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Columns (Space, Esc) ")
                .border_style(style(app, Color::Cyan)),
        ),
        r,
    );
}
