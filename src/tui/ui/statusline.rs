//! The status line and the key hints under it.

use super::*;

pub(super) fn draw_status(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    let selected = app
        .view
        .get(app.selected)
        .and_then(|&i| ix.rows.get(i as usize).copied());
    let (text, st) = match &app.mode {
        Mode::Filter(t) => (
            format!("filter: {t}▏ (Enter apply, Esc cancel; e.g. type == scene && !frag)"),
            Style::default(),
        ),
        Mode::Goto(t) => (format!("go to frame: {t}▏"), Style::default()),
        Mode::Normal => match &app.message {
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
                None => {
                    let sel = selected;
                    (
                        sel.map(|r| {
                            let fault = (r.fault > 0).then(|| {
                                FaultKind::ALL
                                    .get(r.fault as usize - 1)
                                    .map(|k| k.code())
                                    .unwrap_or("?")
                            });
                            format!(
                                "frame {} · {}{}",
                                r.frame,
                                status_of(&r).0,
                                fault.map(|k| format!(" ({k})")).unwrap_or_default()
                            )
                        })
                        .unwrap_or_default(),
                        Style::default(),
                    )
                }
            },
        },
    };
    f.render_widget(Paragraph::new(text).style(st), area);
}

pub(super) fn draw_keys(f: &mut Frame, app: &App, area: Rect) {
    let keys = match app.tab {
        Tab::Packets => "q quit ? help Tab/1-5 tabs ↑↓ move t fields Space fold / filter g go f follow",
        Tab::Mtu => "q quit ? help Tab/1-5 tabs ←/→ flow / filter g go",
        _ => "q quit ? help Tab/1-5 tabs / filter g go",
    };
    f.render_widget(Paragraph::new(keys).style(style(app, Color::DarkGray)), area);
}
