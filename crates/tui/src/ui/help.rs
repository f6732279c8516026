//! The help overlay: every key, from the one table of keys (`tui::keys`).

use super::*;
use crate::keys::KEYS;

pub(super) fn draw_help(f: &mut Frame, app: &App, area: Rect) {
    let w = area.width.min(90);
    let labels: Vec<String> = KEYS.iter().map(|k| k.label()).collect();
    // Keys in a column of their own where they fit, what they do wrapped beside them; a
    // longer label takes a line of its own.
    let key_width = labels
        .iter()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .min(24);
    let inner = w.saturating_sub(2) as usize;
    let what_width = inner.saturating_sub(key_width + 2).max(12);
    let mut text: Vec<Line> = Vec::new();
    for (k, key) in labels.iter().zip(KEYS) {
        let mut chunks = wrap(key.what, what_width).into_iter();
        if k.chars().count() > key_width {
            text.push(Line::from(Span::styled(k.clone(), style(app, Color::Cyan))));
        } else {
            let first = chunks.next().unwrap_or_default();
            text.push(Line::from(vec![
                Span::styled(format!("{k:key_width$}  "), style(app, Color::Cyan)),
                Span::raw(first),
            ]));
        }
        for c in chunks {
            text.push(Line::from(format!("{:key_width$}  {c}", "")));
        }
    }
    let h = area.height.min(text.len() as u16 + 2);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    let rows = h.saturating_sub(2) as usize;
    let scroll = app.help_scroll.min(text.len().saturating_sub(rows));
    text.push(Line::from(Span::styled(
        "NO_COLOR set: no colours (charts say which bar is which)",
        style(app, Color::DarkGray),
    )));
    let more = if text.len() > rows {
        format!(
            " Keys {}-{} of {} · ↑↓ PgUp PgDn scroll · Esc or ? closes ",
            scroll + 1,
            (scroll + rows).min(text.len()),
            text.len()
        )
    } else {
        " Keys · Esc or ? closes ".to_string()
    };
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(text).scroll((scroll as u16, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(more)
                .border_style(style(app, Color::Cyan)),
        ),
        r,
    );
}

/// `s` in lines of at most `width` characters, broken at spaces (a longer word alone).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in s.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push(line);
    out
}
