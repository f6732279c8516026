//! The selected packet's field tree.

use super::*;

pub(super) fn draw_tree(f: &mut Frame, app: &App, area: Rect) {
    let border = if app.focus == Focus::Tree {
        style(app, Color::Cyan)
    } else {
        Style::default()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" Fields ")
        .border_style(border);
    let Some(detail) = &app.detail else {
        f.render_widget(Paragraph::new("no packet selected").block(block), area);
        return;
    };
    let (Some(d), Some(p)) = (&detail.dissection, &app.program) else {
        let text = detail.note.clone().unwrap_or_else(|| {
            if app.program.is_none() {
                "no definition: run with -d dissectors/NAME.kdl to see fields".into()
            } else {
                "not a datagram of the protocol".into()
            }
        });
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }).block(block), area);
        return;
    };
    let payload = detail.payload();
    let vis = app.visible_fields();
    let height = area.height.saturating_sub(2) as usize;
    let pos = vis.iter().position(|&i| i == app.field).unwrap_or(0);
    let start = pos
        .saturating_sub(height / 2)
        .min(vis.len().saturating_sub(height));
    let mut lines: Vec<Line> = Vec::new();
    if let Some(fault) = &d.fault {
        lines.push(Line::from(Span::styled(
            format!(
                "Malformed: {} at bit {} in {}: {}",
                fault.kind.code(),
                fault.bit,
                fault.field,
                fault.reason
            ),
            style(app, Color::Magenta).add_modifier(Modifier::BOLD),
        )));
    }
    for &i in vis.iter().skip(start).take(height.saturating_sub(lines.len())) {
        let fl = &d.fields[i];
        let name = match fl.label {
            Label::Index(k) => format!("[{k}]"),
            other => label_name(p, other).to_string(),
        };
        let marker = if fl.is_group() {
            if app.collapsed.contains(&(i as u32)) {
                "▸ "
            } else {
                "▾ "
            }
        } else {
            "  "
        };
        let value = value_text(p, fl, payload);
        let chosen = i == app.field && app.focus == Focus::Tree;
        // A pointer as well as the highlight, for terminals without colour or reverse.
        let pointer = if chosen { "›" } else { " " };
        let indent = "  ".repeat(fl.depth as usize);
        let text = if fl.kind == "derived" {
            // Computed, not read: in brackets, as Wireshark shows generated fields.
            format!("{pointer}{indent}{marker}[{name}: {value}]")
        } else {
            format!(
                "{pointer}{indent}{marker}{name}{}{value}",
                if value.is_empty() { "" } else { ": " }
            )
        };
        let st = if chosen {
            selected_style(app)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(text, st)));
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}
