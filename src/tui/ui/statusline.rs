//! The status line (a prompt being edited, a message, or the selected packet) and the
//! key hints under it.

use super::*;

pub(super) fn draw_status(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if let Mode::Prompt(p) = &app.mode {
        let (before, after) = p.split();
        let mut rest = after.chars();
        // The cursor: the character under it in reverse video (a space at the end).
        let under = rest.next().map_or(" ".to_string(), |c| c.to_string());
        let hint = match p.ask {
            Ask::Filter => "  (Enter apply, Esc cancel, ↑↓ history; e.g. type == scene && objects.at_rest)",
            Ask::Find => "  (Enter find, then n/N; e.g. crc.fail || size > 1200)",
            Ask::Write => "  (Enter write: marked packets, else the shown ones)",
            Ask::Goto => "",
        };
        let line = Line::from(vec![
            Span::raw(format!("{}: {before}", p.ask.label())),
            Span::styled(under, Style::default().add_modifier(Modifier::REVERSED)),
            Span::raw(rest.collect::<String>()),
            Span::styled(hint, style(app, Color::DarkGray)),
        ]);
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    let selected = app
        .view
        .get(app.selected)
        .and_then(|&i| ix.rows.get(i as usize).copied());
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
                        format!("frame {} · {}{fault}{marked}", r.frame, status_of(&r).0)
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
        (Tab::Flows, _, _) => "q quit ? help ↑↓ flow Enter its packets s sort S reverse / filter",
        (Tab::Reassembly, _, _) => "q quit ? help ↑↓ packet Enter its fragments s sort S reverse / filter",
        (Tab::Mtu, _, _) => "q quit ? help Tab/1-5 tabs ←/→ flow / filter g go",
        _ => "q quit ? help Tab/1-5 tabs / filter g go",
    };
    f.render_widget(Paragraph::new(keys).style(style(app, Color::DarkGray)), area);
}
