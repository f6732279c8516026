//! The help overlay: every key.

use super::*;

/// Every key, as the help lists it.
pub const KEYS: [(&str, &str); 36] = [
    (
        "Tab Shift-Tab 1-5",
        "tabs: Packets Flows Reassembly Loss MTU (or click)",
    ),
    (
        "↑ ↓ j k PgUp PgDn Home End",
        "move in the list, the tree or the table (or wheel)",
    ),
    ("t Enter → / Esc ←", "into the field tree / back to the list"),
    ("Space Enter (tree)", "fold or unfold a group"),
    ("/", "filter: type == scene, objects.at_rest == true, crc.fail …"),
    ("F Ctrl-F", "find: a filter over the list's columns"),
    ("n N", "next / previous packet found"),
    ("] [", "next / previous malformed packet or CRC failure"),
    ("} {", "next / previous sequence gap"),
    ("g", "go to a frame number"),
    ("f", "follow the selected packet's conversation"),
    ("a (tree)", "filter on the selected field's value"),
    ("A (tree)", "add the field's value to the filter (&&)"),
    ("y", "copy the field's value (tree) or the packet's line"),
    ("Y (tree)", "copy the field as JSON (clipboard: OSC 52)"),
    ("m M", "mark / unmark the packet; clear every mark"),
    ("w", "write the marked packets, else the shown ones, to pcapng"),
    ("T", "set (or clear) the time reference on the packet"),
    ("d", "time as relative, delta or absolute"),
    ("c", "choose the list's columns"),
    ("r", "reload the definition and dissect again"),
    ("Enter (Flows)", "the flow's packets"),
    ("Enter (Reassembly)", "the packet's fragments and its tree"),
    ("s S (Flows, Reassembly)", "sort by the next column / reverse"),
    ("← → (MTU)", "choose the flow"),
    ("?", "this help (any key closes)"),
    ("q Ctrl-C", "quit"),
    ("Prompts:", ""),
    ("← → Home End Ctrl-A Ctrl-E", "move the cursor"),
    ("Ctrl-← Ctrl-→ Alt-B Alt-F", "move by word"),
    ("Backspace Delete Ctrl-D", "delete a character"),
    ("Ctrl-W Alt-Backspace Alt-D", "delete a word"),
    ("Ctrl-U Ctrl-K", "delete to the start / to the end"),
    ("↑ ↓ Ctrl-P Ctrl-N", "earlier prompts"),
    ("Enter Esc", "apply / cancel"),
    ("NO_COLOR", "set it to turn colours off"),
];

pub(super) fn draw_help(f: &mut Frame, app: &App, area: Rect) {
    let w = area.width.min(90);
    let key_width = KEYS.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    // Side by side where they fit; else each key above what it does.
    let side = (w as usize) >= key_width + 2 + 40 + 2;
    let mut text: Vec<Line> = Vec::new();
    for (k, what) in KEYS {
        if side {
            text.push(Line::from(vec![
                Span::styled(format!("{k:key_width$}  "), style(app, Color::Cyan)),
                Span::raw(what),
            ]));
        } else {
            text.push(Line::from(Span::styled(k, style(app, Color::Cyan))));
            if !what.is_empty() {
                text.push(Line::from(format!("    {what}")));
            }
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
    let more = if text.len() > rows {
        format!(
            " Keys {}-{} of {} (↑↓ scroll, any other key closes) ",
            scroll + 1,
            (scroll + rows).min(text.len()),
            text.len()
        )
    } else {
        " Keys (any key closes) ".to_string()
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
