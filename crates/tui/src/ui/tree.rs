//! The selected packet's field tree: each field with its value, bit offset and the
//! definition line it came from; a fault is a node of its own.

use super::*;

pub(super) fn draw_tree(f: &mut Frame, app: &App, area: Rect, drawn: &mut Drawn) {
    let border = if app.focus == Focus::Tree {
        style(app, Color::Cyan)
    } else {
        Style::default()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" Fields ")
        .border_style(border);
    drawn.areas.tree = Rect::new(
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(2),
        area.height.saturating_sub(2),
    );
    let Some(detail) = &app.detail else {
        f.render_widget(Paragraph::new("no packet selected").block(block), area);
        return;
    };
    if app.program.is_none()
        && let Some(lines) = reference_header(detail)
    {
        f.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(block),
            area,
        );
        return;
    }
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
    let vis = app.visible_fields();
    let height = area.height.saturating_sub(2).max(1) as usize;
    // Keep the selected row in view: scroll only when it would leave the pane.
    let pos = vis.iter().position(|&i| i == app.field).unwrap_or(0);
    let mut scroll = app.tree_scroll;
    keep_in_view(&mut scroll, pos, height, vis.len());
    drawn.tree_scroll = Some(scroll);
    let width = area.width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = Vec::new();
    for &i in vis.iter().skip(scroll).take(height) {
        lines.extend(tree_line(app, detail, d, p, i, width));
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// Scrolls only when the selected row at `pos` would leave a pane of `height` rows (as
/// the packet list does), and never past the last row.
fn keep_in_view(scroll: &mut usize, pos: usize, height: usize, len: usize) {
    *scroll = super::list_scroll(*scroll, pos, height).min(len.saturating_sub(height));
}

/// Row `i` of the tree: a field with its value and place, an inner layer's row, or the
/// fault after the fields it stopped.
fn tree_line(
    app: &App,
    detail: &crate::app::Detail,
    d: &gpcap_dissect::Dissection,
    p: &gpcap_dissect::Program,
    i: usize,
    width: usize,
) -> Option<Line<'static>> {
    let payload = detail.payload();
    let chosen = i == app.field && app.focus == Focus::Tree;
    // A pointer as well as the highlight, for terminals without colour or reverse.
    let pointer = if chosen { "›" } else { " " };
    let st = if chosen {
        selected_style(app)
    } else {
        Style::default()
    };
    if let Some((l, f)) = detail.header_at(i) {
        return Some(header_line(app, detail, l, f, i, st, chosen, width));
    }
    if let Some(r) = detail.layer_row(i) {
        // What an inner layer read: its packet's line, or one of its fields.
        let text = format!("{pointer}{}{}", "  ".repeat(r.depth as usize), r.text);
        let st = if chosen || r.term.is_some() {
            st
        } else {
            style(app, Color::Cyan).add_modifier(Modifier::BOLD)
        };
        return Some(placed(app, text, r.place.clone(), st, chosen, width));
    }
    let Some(fl) = d.fields.get(i) else {
        // The fault, after the fields it stopped.
        let fault = d.fault.as_ref()?;
        let text = format!(
            "{pointer}✗ [Malformed: {} at bit {} in {}: {}]",
            fault.kind.code(),
            fault.bit,
            fault.field,
            fault.reason
        );
        let fault_style = if chosen {
            st
        } else {
            style(app, Color::Magenta).add_modifier(Modifier::BOLD)
        };
        // Cut with `…` on a narrow pane: the Bytes pane says it whole.
        return Some(Line::from(Span::styled(
            gpcap::present::clip(&text, width),
            fault_style,
        )));
    };
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
    // Where it is: bit offset and length, and the definition's line, right-aligned
    // where there is room.
    let line_no = p.nodes.get(fl.node as usize).map_or(0, |n| n.line);
    let place = if line_no > 0 {
        format!("@{}+{} L{line_no}", fl.bit_offset, fl.bit_len)
    } else {
        format!("@{}+{}", fl.bit_offset, fl.bit_len)
    };
    Some(placed(app, text, place, st, chosen, width))
}

/// A header's row: its title (▸ closed, ▾ open), or one of its fields with its bits and
/// Wireshark's name for it right-aligned (what a filter names).
#[allow(clippy::too_many_arguments)]
fn header_line(
    app: &App,
    detail: &crate::app::Detail,
    l: &gpcap_wire::decode::headers::HeaderLayer,
    f: Option<&gpcap_wire::decode::headers::HeaderField>,
    id: usize,
    st: Style,
    chosen: bool,
    width: usize,
) -> Line<'static> {
    let pointer = if chosen { "›" } else { " " };
    let Some(f) = f else {
        let open = crate::app::header_row(id).is_some_and(|(k, _)| app.headers_open.contains(&(k as u32)));
        let text = format!(
            "{pointer}{}{}",
            if open { "▾ " } else { "▸ " },
            gpcap::present::headers::title(l)
        );
        let st = if chosen { st } else { style(app, Color::Blue) };
        return placed(
            app,
            text,
            format!("@{}+{}", l.at * 8, l.len * 8),
            st,
            chosen,
            width,
        );
    };
    let text = format!(
        "{pointer}    {}",
        gpcap::present::headers::field_line(&detail.frame, f)
    );
    placed(app, text, f.name.to_string(), st, chosen, width)
}

/// A tree row, with where it is right-aligned when there is room; a row wider than the
/// pane ends in `…` (the Bytes pane shows the selected field's place and bits whole).
fn placed(app: &App, text: String, place: String, st: Style, chosen: bool, width: usize) -> Line<'static> {
    let text = gpcap::present::clip(&text, width);
    let used = text.chars().count();
    let mut spans = vec![Span::styled(text, st)];
    if used + place.chars().count() + 2 <= width {
        let pad = width - used - place.chars().count();
        spans.push(Span::styled(" ".repeat(pad), st));
        spans.push(Span::styled(
            place,
            if chosen { st } else { style(app, Color::DarkGray) },
        ));
    }
    Line::from(spans)
}

/// Without a definition the header was still read with the reference layout (CRC32,
/// 16-bit sequence, type; a fragment's id and count): show what was read.
fn reference_header(detail: &crate::app::Detail) -> Option<Vec<Line<'static>>> {
    let r = &detail.row;
    if !r.has(status::GAME) || r.ptype == u16::MAX {
        return None;
    }
    let payload = detail.payload();
    let crc = payload
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let verdict = if r.has(status::CRC_FAIL) { "mismatch" } else { "ok" };
    let mut lines = vec![
        Line::from("reference layout (no definition: -d FILE shows the body)"),
        Line::from(match crc {
            Some(c) => format!("  crc: 0x{c:08x} ({verdict})  @0+32"),
            None => format!("  crc: ({verdict})"),
        }),
        Line::from(format!("  sequence: {}  @32+16", r.seq)),
        Line::from(format!("  type: {}", r.ptype)),
    ];
    if r.frag_count > 0 && !r.has(status::REASSEMBLED) {
        lines.push(Line::from(format!("  fragment_id: {}", r.frag_id)));
        lines.push(Line::from(format!("  num_fragments: {}", r.frag_count)));
    }
    if let Some(n) = &detail.note {
        lines.push(Line::from(n.clone()));
    }
    Some(lines)
}
