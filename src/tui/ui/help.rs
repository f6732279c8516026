//! The help overlay: every key.

use super::*;

pub(super) fn draw_help(f: &mut Frame, app: &App, area: Rect) {
    let w = area.width.min(70);
    let h = area.height.min(20);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    let text = vec![
        Line::from("Tab, Shift-Tab, 1-5   switch tabs: Packets Flows Reassembly Loss MTU"),
        Line::from("↑ ↓ j k PgUp PgDn Home End   move in the list or the field tree"),
        Line::from("t or Enter   into the field tree (Esc or ← back to the list)"),
        Line::from("Space/Enter in the tree   fold or unfold a group"),
        Line::from("/   filter: type == scene, seq > 100, crc.fail, frag, ipfrag,"),
        Line::from("    malformed, size > 1200, flow 10.0.0.1:40000, && || ! ( )"),
        Line::from("g   go to a frame number"),
        Line::from("f   follow the selected packet's conversation"),
        Line::from("←/→ on the MTU tab   choose the flow"),
        Line::from("q or Ctrl-C   quit"),
        Line::from(""),
        Line::from("Selecting a field highlights its bytes; bytes it covers only in"),
        Line::from("part are underlined and its exact bits are shown above the dump."),
        Line::from("Set NO_COLOR to turn colours off."),
    ];
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(text).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Help (any key closes) ")
                .border_style(style(app, Color::Cyan)),
        ),
        r,
    );
}
