//! The Bandwidth tab: where the bits go, per packet type, then per field of the type
//! drilled into; the figures `analyze --bits` prints.

use super::*;
use crate::bits::{BITS_SORTS, Profile};

pub(super) fn draw_bandwidth(f: &mut Frame, app: &App, area: Rect, d: &mut Drawn) {
    let text = match &app.bits.profile {
        Profile::NotStarted => Some(
            "the profile is counted once the capture is indexed (a live capture: write it with --write and open the file)"
                .to_string(),
        ),
        Profile::Counting { started, .. } => Some(format!(
            "counting the bits of every field ({:.0} s)…",
            started.elapsed().as_secs_f64()
        )),
        Profile::Failed(e) => Some(format!("the profile stopped: {e}")),
        Profile::Ready(_) => None,
    };
    if let Some(text) = text {
        f.render_widget(
            Paragraph::new(text)
                .wrap(Wrap { trim: true })
                .block(Block::default().borders(Borders::ALL).title(" Bandwidth ")),
            area,
        );
        return;
    }
    let lines = app.bits.lines();
    let body = table_body(area);
    let table = app.bits.table.fitted(lines.len(), body.height as usize);
    d.bits = Some(table);
    let (sel, scroll) = (table.selected, table.scroll);
    let first = if app.bits.drill.is_some() { "field" } else { "type" };
    let mut header = [first, "direction", "count", "bits", "bits/pkt", "share"].map(String::from);
    // The sort column, marked; counts are occurrences for fields, packets for types.
    let mark = if app.bits.table.descending { '▲' } else { '▼' };
    header[[3, 5, 2][app.bits.table.sort.min(2)]].push(mark);
    let texts: Vec<[String; 6]> = lines
        .iter()
        .skip(scroll)
        .take(body.height as usize)
        .map(|l| {
            [
                l.label.clone(),
                l.direction.to_string(),
                l.occurrences.to_string(),
                l.bits.to_string(),
                format!("{:.1}", l.mean_bits),
                pct(l.share),
            ]
        })
        .collect();
    let need: Vec<usize> = (0..6)
        .map(|k| {
            let widest = texts.iter().map(|t| t[k].chars().count()).max().unwrap_or(0);
            widest.max(header[k].chars().count())
        })
        .collect();
    // The label as wide as it needs when all fits; else it gives way, down to 12.
    let room = body.width as usize;
    let flex = (need.iter().map(|n| n + 1).sum::<usize>() > room).then_some(0);
    let widths = fit(&need, &[0, 4, 2, 0, 3, 1], flex, 12, room);
    let kept = |k: usize| widths[k].is_some();
    let rows: Vec<TRow> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let row = TRow::new(
                t.iter()
                    .enumerate()
                    .filter(|(k, _)| kept(*k))
                    .map(|(_, s)| Cell::from(s.clone()))
                    .collect::<Vec<_>>(),
            );
            if scroll + i == sel {
                row.style(selected_style(app))
            } else {
                row
            }
        })
        .collect();
    let (constraints, header) = super::kept_columns(&widths, header.into());
    let title = match &app.bits.drill {
        None => format!(
            " Bandwidth by type · Enter: its fields · s: sort ({}) ",
            BITS_SORTS[app.bits.table.sort.min(2)]
        ),
        Some((dir, ty)) => format!(
            " {} ({dir}) by field · Enter: its packets · Esc: types · s: sort ({}) ",
            ty.as_deref().unwrap_or(crate::bits::OVERHEAD),
            BITS_SORTS[app.bits.table.sort.min(2)]
        ),
    };
    let t = Table::new(rows, constraints)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::default().borders(Borders::ALL).title(title));
    f.render_widget(t, area);
}
