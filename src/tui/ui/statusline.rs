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
        Some(r) if !r.fit.is_good() => format!(" · fit {}", crate::present::fit::summary(&r.fit)),
        _ => String::new(),
    }
}

pub(super) fn draw_keys(f: &mut Frame, app: &App, area: Rect) {
    let keys = match (app.tab, app.focus, &app.mode) {
        (_, _, Mode::Columns) => "↑↓ choose · Space show/hide · Esc close",
        (Tab::Packets, Focus::Tree, _) => {
            "q quit ? help ↑↓ field Space fold a filter on it A and it y copy Y as JSON Esc list"
        }
        (Tab::Packets, _, _) => {
            "q quit ? help / filter F find n next ] malformed } gap m mark w write d time c columns t fields"
        }
        (Tab::Flows, _, _) => "q quit ? help ↑↓ flow Enter its packets b both ways s sort S reverse / filter",
        (Tab::Loss, _, _) => "q quit ? help ↑↓ fragment counts Tab/1-6 tabs / filter g go",
        (Tab::Reassembly, _, _) => "q quit ? help ↑↓ packet Enter its fragments s sort S reverse / filter",
        (Tab::Bandwidth, _, _) => {
            "q quit ? help ↑↓ row Enter fields / its packets Esc types s sort S reverse"
        }
        (Tab::Mtu, _, _) => "q quit ? help Tab/1-6 tabs ←/→ flow / filter g go",
    };
    f.render_widget(Paragraph::new(keys).style(style(app, Color::DarkGray)), area);
}

/// The prompt's line: its label, the text scrolled so that the cursor is always in view
/// (a long paste shows its end at once), and a hint where there is room. Near the limit
/// it says how full it is, and when text was refused, that it was.
fn prompt_line(app: &App, p: &crate::tui::prompt::Prompt, width: usize) -> Line<'static> {
    use crate::tui::prompt::MAX_CHARS;
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
