//! The selected packet's bytes, with the selected field's bits highlighted.

use super::*;

pub(super) fn draw_hex(f: &mut Frame, app: &App, area: Rect) {
    let block = Block::default().borders(Borders::ALL).title(" Bytes ");
    let Some(detail) = &app.detail else {
        f.render_widget(block, area);
        return;
    };
    let payload = detail.payload();
    // The whole frame, as Wireshark's bytes pane (a packet no one frame holds: its bytes);
    // the dissection's bits count from the payload's first byte, `base` bits in.
    let data: &[u8] = &detail.frame;
    let base = detail.payload_bit();
    let in_tree = app.focus == Focus::Tree;
    let field = detail
        .dissection
        .as_ref()
        .and_then(|d| d.fields.get(app.field))
        .filter(|_| in_tree);
    // The fault's node (one past the last field): the bits from where reading failed to
    // the end of what was there.
    let fault = detail
        .dissection
        .as_ref()
        .filter(|d| in_tree && app.field == d.fields.len())
        .and_then(|d| d.fault.as_ref());
    // A row an inner layer read: its bits in this datagram.
    let layer = detail.layer_row(app.field).filter(|_| in_tree);
    let header = detail.header_at(app.field).filter(|_| in_tree);
    let (b0, b1) = match (field, fault, layer.and_then(|r| r.bits), header) {
        (Some(fl), _, _, _) => (base + fl.bit_offset, base + fl.bit_offset + fl.bit_len),
        (None, Some(fault), _, _) => (
            base + fault.bit,
            (data.len() as u64 * 8).max(base + fault.bit + 1),
        ),
        (None, None, Some((at, len)), _) => (base + at, base + at + len),
        (None, None, None, Some((_, Some(h)))) => (h.bit as u64, (h.bit + h.bits as usize) as u64),
        (None, None, None, Some((l, None))) => (l.at as u64 * 8, (l.at + l.len) as u64 * 8),
        _ => (u64::MAX, u64::MAX),
    };
    let mut lines: Vec<Line> = Vec::new();
    if let Some(r) = layer {
        layer_lines(app, r, &mut lines);
    }
    if let Some(fault) = fault {
        lines.push(Line::from(Span::styled(
            format!(
                "{} at bit {} (payload byte {}, frame byte {}): {}",
                fault.kind.code(),
                fault.bit,
                fault.bit / 8,
                (base + fault.bit) / 8,
                fault.reason
            ),
            style(app, Color::Magenta),
        )));
    }
    if let Some(fl) = field {
        field_lines(app, fl, payload, &mut lines);
    } else if let Some((l, h)) = header {
        lines.push(Line::from(match h {
            Some(h) => format!("{} · frame bits {}+{}", h.name, h.bit, h.bits),
            None => format!("{} header · frame bytes {}–{}", l.proto, l.at, l.at + l.len - 1),
        }));
        if let Some(bits) = h.and_then(|h| gpcap::present::headers::bit_pattern(data, h)) {
            lines.push(Line::from(format!("bits: {bits}")));
        }
    } else if fault.is_none() && layer.is_none() {
        lines.push(Line::from(match detail.payload {
            Some((a, b)) if a > 0 => format!(
                "frame: {} bytes · UDP payload {} bytes from byte {a}",
                data.len(),
                b - a
            ),
            Some(_) => format!("{} bytes", data.len()),
            None => format!("frame: {} bytes", data.len()),
        }));
    }
    let height = area.height.saturating_sub(2) as usize;
    let inner = area.width.saturating_sub(2) as usize;
    // The lines above the dump (a fault, a doc, a bit pattern) wrap: they are read whole.
    let mut lines: Vec<Line> = lines.into_iter().flat_map(|l| wrapped(l, inner)).collect();
    let per = bytes_per_line(inner);
    let first_line = if b0 != u64::MAX {
        (b0 / 8) as usize / per
    } else {
        0
    };
    let start_line = first_line.saturating_sub(1);
    let room = height.saturating_sub(lines.len());
    for (n, chunk) in data.chunks(per).enumerate().skip(start_line).take(room) {
        lines.push(hex_row(app, n * per, chunk, per, (b0, b1)));
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// 16 bytes a line when the pane holds them whole (offset, hex and text), as in
/// Wireshark; else 8, else 4: the text column is never cut.
fn bytes_per_line(inner: usize) -> usize {
    [16, 8, 4].into_iter().find(|&n| 6 + 4 * n <= inner).unwrap_or(4)
}

/// A line of one style in lines of `width` characters.
fn wrapped(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    let text: String = line.spans.iter().map(|s| s.content.to_string()).collect();
    if text.chars().count() <= width {
        return vec![line];
    }
    let st = line.spans.first().map(|s| s.style).unwrap_or_default();
    gpcap::present::wrap(&text, width)
        .into_iter()
        .map(|t| Line::from(Span::styled(t, st)))
        .collect()
}

/// What an inner layer's row says about its bits here: where they are, its doc, its
/// bit pattern.
fn layer_lines(app: &App, r: &crate::layered::LayerRow, lines: &mut Vec<Line<'_>>) {
    lines.push(Line::from(match r.bits {
        Some((at, len)) => format!("{} · bits {at}+{len} of this datagram", r.text),
        None => format!("{} · in a reassembled packet: no bits here", r.text),
    }));
    if let Some(doc) = &r.doc {
        lines.push(Line::from(Span::styled(doc.clone(), style(app, Color::Gray))));
    }
    if let Some(bits) = &r.pattern {
        lines.push(Line::from(format!("bits: {bits}")));
    }
}

/// The selected field's place, doc and bit pattern.
fn field_lines(app: &App, fl: &gpcap_dissect::Field, data: &[u8], lines: &mut Vec<Line<'_>>) {
    let line = app
        .program
        .as_ref()
        .and_then(|p| p.nodes.get(fl.node as usize))
        .map_or(0, |n| n.line);
    lines.push(Line::from(if line > 0 {
        format!("bits {}+{} · definition line {line}", fl.bit_offset, fl.bit_len)
    } else {
        format!("bit offset {}, {} bits", fl.bit_offset, fl.bit_len)
    }));
    let doc = app.program.as_ref().and_then(|p| match fl.label {
        Label::Node(n) => p.nodes.get(n as usize).and_then(|node| node.doc.clone()),
        _ => None,
    });
    if let Some(doc) = doc {
        lines.push(Line::from(Span::styled(doc, style(app, Color::Gray))));
    }
    if fl.bit_len <= 64 {
        let bits = match app.program.as_deref() {
            Some(p) => field_bit_pattern(p, fl, data),
            None => bit_pattern(data, fl.bit_offset, fl.bit_len),
        };
        lines.push(Line::from(format!("bits: {bits}")));
    }
}

/// One line of the dump: the offset, `per` bytes in hex (the selected bits `b0..b1`
/// highlighted, bytes they cover in part underlined), then as text.
fn hex_row(app: &App, at: usize, chunk: &[u8], per: usize, (b0, b1): (u64, u64)) -> Line<'static> {
    let mut spans = vec![Span::raw(format!("{at:04x} "))];
    for (k, b) in chunk.iter().enumerate() {
        let byte = (at + k) as u64;
        let lo = byte * 8;
        let covered = b0 < lo + 8 && b1 > lo;
        let full = b0 <= lo && b1 >= lo + 8;
        let st = if full {
            selected_style(app)
        } else if covered {
            selected_style(app).add_modifier(Modifier::UNDERLINED)
        } else {
            Style::default()
        };
        spans.push(Span::styled(format!("{b:02x}"), st));
        spans.push(Span::raw(" "));
    }
    let ascii: String = chunk
        .iter()
        .map(|&b| if (0x20..0x7f).contains(&b) { b as char } else { '.' })
        .collect();
    spans.push(Span::raw(format!(
        "{:pad$} {ascii}",
        "",
        pad = (per - chunk.len()) * 3
    )));
    Line::from(spans)
}
