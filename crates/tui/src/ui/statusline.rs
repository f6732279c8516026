//! The status line (a prompt being edited, a message, or the selected packet) and the
//! key hints under it.

use super::*;

pub(super) fn draw_status(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if let Mode::Prompt(p) = &app.mode {
        f.render_widget(Paragraph::new(prompt_line(app, p, area.width as usize)), area);
        return;
    }
    let selected = app.view.get(app.selected).and_then(|&i| ix.rows.get(i as usize));
    let (text, st) = match &app.message {
        Some((m, true)) => (m.clone(), style(app, Color::Red)),
        Some((m, false)) => (m.clone(), Style::default()),
        None => match &ix.error {
            Some(e) => (e.clone(), style(app, Color::Red)),
            None if app
                .field_scan
                .as_ref()
                .is_some_and(|s| !s.done || s.error.is_some()) =>
            {
                (app.scan_status().unwrap_or_default(), Style::default())
            }
            None if ix.live_status.is_some() && selected.is_none() => {
                (ix.live_status.clone().unwrap_or_default(), Style::default())
            }
            None => (
                selected
                    .map(|r| {
                        let fault = r.fault().map(|k| format!(" ({})", k.code())).unwrap_or_default();
                        let marked = if app.view.get(app.selected).is_some_and(|i| app.marks.contains(i)) {
                            " · marked"
                        } else {
                            ""
                        };
                        format!("frame {} · {}{fault}{marked}", r.frame, status_text(&r).0)
                    })
                    .unwrap_or_default()
                    + &fit_note(ix),
                Style::default(),
            ),
        },
    };
    f.render_widget(Paragraph::new(text).style(st), area);
}

/// The description's fit when it is not good (as `analyze` judges it), after the packet.
fn fit_note(ix: &Index) -> String {
    match &ix.report {
        Some(r) if !r.fit.is_good() => format!(" · fit {}", gpcap::present::fit::summary(&r.fit)),
        _ => String::new(),
    }
}

/// The key hints of where the app is, as (keys, what) pairs: drawn whole or not at all.
fn hints(app: &App) -> &'static [(&'static str, &'static str)] {
    match (app.tab, app.focus, &app.mode) {
        (_, _, Mode::Prompt(p)) if p.selected => &[
            ("Enter", "take it"),
            ("type", "to replace it"),
            ("←→ End", "edit it"),
            ("Esc", "cancel"),
        ],
        (_, _, Mode::Prompt(_)) => &[
            ("Enter", "apply"),
            ("Esc", "cancel"),
            ("↑↓", "earlier"),
            ("C-u", "clear"),
        ],
        (_, _, Mode::Columns) => &[("↑↓", "choose"), ("Space", "show/hide"), ("Esc", "close")],
        (Tab::Packets, Focus::Tree, _) => &[
            ("q", "quit"),
            ("?", "help"),
            ("↑↓", "field"),
            ("Space", "fold"),
            ("a", "filter on it"),
            ("A", "and it"),
            ("y", "copy"),
            ("Esc", "list"),
            ("Y", "as JSON"),
            ("+-", "list size"),
            ("<>", "pane width"),
        ],
        (Tab::Packets, _, _) => &[
            ("q", "quit"),
            ("?", "help"),
            ("/", "filter"),
            ("F", "find"),
            ("t", "fields"),
            ("w", "write"),
            ("m", "mark"),
            ("]", "malformed"),
            ("}", "gap"),
            ("n", "next"),
            ("d", "time"),
            ("c", "columns"),
            ("+-", "list size"),
        ],
        (Tab::Flows, _, _) if app.streams_view && app.messages.is_some() => &[
            ("q", "quit"),
            ("?", "help"),
            ("↑↓", "message"),
            ("Enter", "its packet"),
            ("Esc", "streams"),
            ("/", "filter"),
        ],
        (Tab::Flows, _, _) if app.streams_view => &[
            ("q", "quit"),
            ("?", "help"),
            ("↑↓", "stream"),
            ("Enter", "its messages"),
            ("p", "its datagrams"),
            ("v", "flows"),
            ("/", "filter"),
        ],
        (Tab::Flows, _, _) => &[
            ("q", "quit"),
            ("?", "help"),
            ("↑↓", "flow"),
            ("Enter", "its packets"),
            ("b", "both ways"),
            ("s", "sort"),
            ("S", "reverse"),
            ("/", "filter"),
        ],
        (Tab::Loss, _, _) => &[
            ("q", "quit"),
            ("?", "help"),
            ("↑↓", "fragment counts"),
            ("1-6", "tabs"),
            ("/", "filter"),
        ],
        (Tab::Reassembly, _, _) => &[
            ("q", "quit"),
            ("?", "help"),
            ("↑↓", "packet"),
            ("Enter", "its fragments"),
            ("s", "sort"),
            ("S", "reverse"),
            ("/", "filter"),
        ],
        (Tab::Bandwidth, _, _) => &[
            ("q", "quit"),
            ("?", "help"),
            ("↑↓", "row"),
            ("Enter", "fields / its packets"),
            ("Esc", "types"),
            ("s", "sort"),
            ("S", "reverse"),
        ],
        (Tab::Mtu, _, _) => &[
            ("q", "quit"),
            ("?", "help"),
            ("←→", "flow"),
            ("1-6", "tabs"),
            ("/", "filter"),
        ],
    }
}

/// As many whole hints as fit in `width`, in order (the first ones matter most), never a
/// key without its word.
pub(super) fn fitted_hints(hints: &[(&str, &str)], width: usize) -> String {
    let mut out = String::new();
    for (key, what) in hints {
        let item = format!("{key} {what}");
        let sep = if out.is_empty() { 0 } else { 2 };
        if out.chars().count() + sep + item.chars().count() > width {
            break;
        }
        if sep > 0 {
            out.push_str("  ");
        }
        out.push_str(&item);
    }
    out
}

/// The lines under an open prompt: its note (the refusal in red, or a hint), wrapped to
/// `width`, at most 3; none when the prompt has nothing to say.
pub(super) fn prompt_note_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let Mode::Prompt(p) = &app.mode else {
        return Vec::new();
    };
    let Some((text, error)) = &p.note else {
        return Vec::new();
    };
    let st = if *error {
        style(app, Color::Red)
    } else {
        Style::default()
    };
    let mut lines: Vec<Line> = gpcap::present::wrap(text, width.max(10) as usize)
        .into_iter()
        .map(|l| Line::from(Span::styled(l, st)))
        .collect();
    if lines.len() > 3 {
        lines.truncate(3);
        if let Some(last) = lines.last_mut() {
            let t: String = last.spans.iter().map(|s| s.content.to_string()).collect();
            *last = Line::from(Span::styled(
                gpcap::present::clip(&format!("{t}…"), width as usize),
                st,
            ));
        }
    }
    lines
}

pub(super) fn draw_keys(f: &mut Frame, app: &App, area: Rect) {
    let notes = prompt_note_lines(app, area.width);
    if !notes.is_empty() {
        f.render_widget(Paragraph::new(notes), area);
        return;
    }
    let keys = fitted_hints(hints(app), area.width as usize);
    f.render_widget(Paragraph::new(keys).style(style(app, Color::DarkGray)), area);
}

/// The prompt's line: its label, the text scrolled so that the cursor is always in view
/// (a long paste shows its end at once), and a hint where there is room. Near the limit
/// it says how full it is, and when text was refused, that it was.
fn prompt_line(app: &App, p: &crate::prompt::Prompt, width: usize) -> Line<'static> {
    use crate::prompt::MAX_CHARS;
    let (before, after) = p.split();
    let label = format!("{}: ", p.ask.label());
    let full = if p.refused {
        format!("  full: a prompt holds {MAX_CHARS} characters; nothing more was added")
    } else if p.len() * 4 >= MAX_CHARS * 3 {
        format!("  ({}/{MAX_CHARS} characters)", p.len())
    } else {
        String::new()
    };
    let room = width
        .saturating_sub(label.chars().count() + full.chars().count() + 1)
        .max(8);
    let before: Vec<char> = before.chars().collect();
    // Keep the cursor in the right part of the line: a cut start is marked with `…`.
    let keep = room.saturating_sub(1).max(1) * 3 / 4;
    let shown_before: String = if before.len() > keep.max(1) && before.len() + after.chars().count() >= room {
        std::iter::once('…')
            .chain(before[before.len() + 1 - keep.max(1)..].iter().copied())
            .collect()
    } else {
        before.iter().collect()
    };
    let mut rest = after.chars();
    // The cursor: the character under it in reverse video (a space at the end).
    let under = rest.next().map_or(" ".to_string(), |c| c.to_string());
    let left = room.saturating_sub(shown_before.chars().count() + 1);
    let rest: String = rest.take(left).collect();
    let hint = match p.ask {
        Ask::Filter => "  (Enter apply, Esc cancel, ↑↓ history; e.g. type == scene && objects.at_rest)",
        Ask::Find => "  (Enter find, then n/N; e.g. crc.fail || size > 1200)",
        Ask::Write => {
            "  (Enter: the marked packets, else the shown ones; a bare name is written in the working directory)"
        }
        Ask::Goto | Ask::Replace => "",
    };
    let used = label.chars().count()
        + shown_before.chars().count()
        + 1
        + rest.chars().count()
        + full.chars().count();
    let short = match p.ask {
        Ask::Write => "  (in the working directory unless a path)",
        _ => "",
    };
    let hint = [hint, short]
        .into_iter()
        .find(|h| full.is_empty() && used + h.chars().count() <= width)
        .unwrap_or("");
    let full_style = if p.refused {
        style(app, Color::Red).add_modifier(Modifier::BOLD)
    } else {
        style(app, Color::Yellow)
    };
    Line::from(vec![
        Span::raw(label),
        Span::raw(shown_before),
        Span::styled(under, Style::default().add_modifier(Modifier::REVERSED)),
        Span::raw(rest),
        Span::styled(full, full_style),
        Span::styled(hint, style(app, Color::DarkGray)),
    ])
}
