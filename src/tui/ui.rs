//! Drawing: every tab renders from the app's state and its own copy of the index (no
//! lock anywhere); nothing here changes state except remembering the list height.

use super::app::{App, Focus, Mode, Tab};
use crate::dissect::{FaultKind, Label, label_name};
use crate::present::tree::{bit_pattern, value_text};
use crate::sinks::index::{Index, NO_FLOW, Row, status};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Bar, BarChart, BarGroup, Block, Borders, Cell, Chart, Clear, Dataset, Gauge, GraphType, Paragraph,
    Row as TRow, Sparkline, Table, Tabs, Wrap,
};

fn style(app: &App, fg: Color) -> Style {
    if app.color {
        Style::default().fg(fg)
    } else {
        Style::default()
    }
}

fn selected_style(app: &App) -> Style {
    if app.color {
        Style::default().bg(Color::DarkGray).add_modifier(Modifier::BOLD)
    } else {
        Style::default().add_modifier(Modifier::REVERSED)
    }
}

/// Status of a packet: word and colour.
pub fn status_of(r: &Row) -> (&'static str, Color) {
    if r.has(status::CRC_FAIL) {
        ("CRC FAIL", Color::Red)
    } else if r.has(status::MALFORMED) {
        ("MALFORMED", Color::Magenta)
    } else if r.has(status::REASSEMBLED) {
        ("reassembled", Color::Blue)
    } else if r.has(status::TRUNCATED) {
        ("truncated", Color::DarkGray)
    } else if r.has(status::IP_FRAG) {
        ("ip-frag", Color::Yellow)
    } else if r.has(status::OVER_BUDGET) {
        ("over budget", Color::Cyan)
    } else if r.has(status::GAME) {
        ("ok", Color::Green)
    } else if r.has(status::ICMP) {
        ("icmp", Color::Yellow)
    } else if r.has(status::IP_PIECE) {
        ("ip piece", Color::DarkGray)
    } else if r.has(status::OTHER_UDP) {
        ("udp", Color::Gray)
    } else if r.has(status::BAD_FRAME) {
        ("bad frame", Color::Red)
    } else {
        ("other", Color::Gray)
    }
}

pub fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    let chunks = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(area);
    // The index is the app's own: lend it to the drawing functions for this frame.
    let ix = std::mem::take(&mut app.index);
    draw_tabs(f, app, &ix, chunks[0]);
    match app.tab {
        Tab::Packets => draw_packets(f, app, &ix, chunks[1]),
        Tab::Flows => draw_flows(f, app, &ix, chunks[1]),
        Tab::Reassembly => draw_reassembly(f, app, &ix, chunks[1]),
        Tab::Loss => draw_loss(f, app, &ix, chunks[1]),
        Tab::Mtu => draw_mtu(f, app, &ix, chunks[1]),
    }
    draw_status(f, app, &ix, chunks[2]);
    draw_keys(f, app, chunks[3]);
    if app.help {
        draw_help(f, app, area);
    }
    app.index = ix;
}

fn draw_tabs(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    let titles: Vec<Line> = Tab::ALL
        .iter()
        .enumerate()
        .map(|(i, t)| Line::from(format!("{} {}", i + 1, t.title())))
        .collect();
    let sel = Tab::ALL.iter().position(|t| *t == app.tab).unwrap_or(0);
    let split = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(57), Constraint::Min(0)])
        .split(area);
    f.render_widget(
        Tabs::new(titles)
            .select(sel)
            .highlight_style(selected_style(app))
            .divider("│"),
        split[0],
    );
    if ix.done {
        let name = ix.name.rsplit('/').next().unwrap_or("");
        let text = format!("{name} · {}", crate::present::count(ix.frames(), "frame"));
        f.render_widget(Paragraph::new(text).right_aligned(), split[1]);
    } else {
        let ratio = if ix.total_bytes > 0 {
            (ix.bytes_read as f64 / ix.total_bytes as f64).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let label = if app.live {
            format!("live · {}", crate::present::count(ix.frames(), "frame"))
        } else {
            format!(
                "indexing {:.0}% · {}",
                ratio * 100.0,
                crate::present::count(ix.frames(), "frame")
            )
        };
        f.render_widget(
            Gauge::default()
                .ratio(if app.live { 1.0 } else { ratio })
                .label(label)
                .gauge_style(style(app, Color::Blue)),
            split[1],
        );
    }
}

fn fmt_time(ns: i64, first: i64) -> String {
    format!("{:.6}", (ns - first) as f64 / 1e9)
}

fn draw_packets(f: &mut Frame, app: &mut App, ix: &Index, area: Rect) {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
        .split(area);
    // The list.
    let height = rows[0].height.saturating_sub(3) as usize;
    app.list_height = height;
    if app.selected < app.scroll {
        app.scroll = app.selected;
    } else if app.selected >= app.scroll + height.max(1) {
        app.scroll = app.selected + 1 - height.max(1);
    }
    let first_ts = ix.rows.first().map(|r| r.ts_ns).unwrap_or(0);
    let names = |t: u16| -> String {
        if t == u16::MAX {
            return String::new();
        }
        app.program
            .as_ref()
            .and_then(|p| p.type_name(t as u32))
            .map(str::to_string)
            .unwrap_or_else(|| t.to_string())
    };
    let body: Vec<TRow> = app
        .view
        .iter()
        .skip(app.scroll)
        .take(height)
        .enumerate()
        .filter_map(|(k, &i)| {
            let r = ix.rows.get(i as usize)?;
            let flow = ix
                .flows
                .get(r.flow as usize)
                .map(|fl| format!("{} → {}", fl.src, fl.dst))
                .unwrap_or_default();
            let (word, color) = status_of(r);
            let game = r.has(status::GAME) && r.ptype != u16::MAX;
            let cells = vec![
                Cell::from(r.frame.to_string()),
                Cell::from(fmt_time(r.ts_ns, first_ts)),
                Cell::from(flow),
                Cell::from(if game { r.seq.to_string() } else { String::new() }),
                Cell::from(names(r.ptype)),
                Cell::from(if r.has(status::REASSEMBLED) {
                    format!("×{}", r.frag_count)
                } else if r.frag_count > 0 {
                    format!("{}/{}", r.frag_id as u32 + 1, r.frag_count)
                } else {
                    String::new()
                }),
                Cell::from(if r.flow != NO_FLOW {
                    r.size.to_string()
                } else {
                    String::new()
                }),
                Cell::from(word).style(style(app, color)),
            ];
            let mut row = TRow::new(cells);
            if app.scroll + k == app.selected {
                row = row.style(selected_style(app));
            }
            Some(row)
        })
        .collect();
    let title = if app.filter.is_all() {
        format!(" Packets ({}) ", app.view.len())
    } else {
        format!(
            " Packets ({} of {}) — filter: {} ",
            app.view.len(),
            ix.rows.len(),
            app.filter.text
        )
    };
    let border = if app.focus == Focus::List {
        style(app, Color::Cyan)
    } else {
        Style::default()
    };
    let table = Table::new(
        body,
        [
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Min(20),
            Constraint::Length(5),
            Constraint::Length(8),
            Constraint::Length(5),
            Constraint::Length(5),
            Constraint::Length(11),
        ],
    )
    .header(
        TRow::new(["No.", "Time", "Flow", "Seq", "Type", "Frag", "Size", "Status"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(title)
            .border_style(border),
    );
    f.render_widget(table, rows[0]);

    let bottom = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(rows[1]);
    draw_tree(f, app, bottom[0]);
    draw_hex(f, app, bottom[1]);
}

fn draw_tree(f: &mut Frame, app: &App, area: Rect) {
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

fn draw_hex(f: &mut Frame, app: &App, area: Rect) {
    let block = Block::default().borders(Borders::ALL).title(" Bytes ");
    let Some(detail) = &app.detail else {
        f.render_widget(block, area);
        return;
    };
    let payload = detail.payload();
    let data: &[u8] = if payload.is_empty() {
        &detail.frame
    } else {
        payload
    };
    let field = detail
        .dissection
        .as_ref()
        .and_then(|d| d.fields.get(app.field))
        .filter(|_| app.focus == Focus::Tree);
    let (b0, b1) = field
        .map(|fl| (fl.bit_offset, fl.bit_offset + fl.bit_len))
        .unwrap_or((u64::MAX, u64::MAX));
    let mut lines: Vec<Line> = Vec::new();
    if let Some(fl) = field {
        lines.push(Line::from(format!(
            "bit offset {}, {} bits",
            fl.bit_offset, fl.bit_len
        )));
        let doc = app.program.as_ref().and_then(|p| match fl.label {
            Label::Node(n) => p.nodes.get(n as usize).and_then(|node| node.doc.clone()),
            _ => None,
        });
        if let Some(doc) = doc {
            lines.push(Line::from(Span::styled(doc, style(app, Color::Gray))));
        }
        if fl.bit_len <= 64 {
            lines.push(Line::from(format!(
                "bits: {}",
                bit_pattern(data, fl.bit_offset, fl.bit_len)
            )));
        }
    } else {
        lines.push(Line::from(if payload.is_empty() {
            "frame bytes"
        } else {
            "UDP payload"
        }));
    }
    let height = area.height.saturating_sub(2) as usize;
    // 16 bytes a line when the pane is wide enough, as in Wireshark; else 8.
    let per: usize = if area.width >= 76 { 16 } else { 8 };
    let first_line = if b0 != u64::MAX {
        (b0 / 8) as usize / per
    } else {
        0
    };
    let start_line = first_line.saturating_sub(1);
    for (n, chunk) in data
        .chunks(per)
        .enumerate()
        .skip(start_line)
        .take(height.saturating_sub(lines.len()))
    {
        let mut spans = vec![Span::raw(format!("{:04x}  ", n * per))];
        for (k, b) in chunk.iter().enumerate() {
            let byte = (n * per + k) as u64;
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
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

fn not_ready(f: &mut Frame, ix: &Index, area: Rect, what: &str) -> bool {
    if ix.report.is_some() {
        return false;
    }
    let text = format!(
        "{what} appear when the capture is indexed ({} frames so far)",
        ix.rows.len()
    );
    f.render_widget(
        Paragraph::new(text).block(Block::default().borders(Borders::ALL)),
        area,
    );
    true
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn draw_flows(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if not_ready(f, ix, area, "Flows") {
        return;
    }
    let Some(r) = &ix.report else { return };
    // Ack columns when the definition marks ack fields (the same numbers as analyze).
    let acks = r.flows.iter().any(|fl| fl.acks.is_some());
    let rows: Vec<TRow> = r
        .flows
        .iter()
        .map(|fl| {
            let total = fl.seq.received + fl.seq.lost;
            let loss = if total > 0 {
                fl.seq.lost as f64 / total as f64
            } else {
                0.0
            };
            let loss_style = if loss > 0.01 {
                style(app, Color::Red)
            } else {
                Style::default()
            };
            let mut cells = vec![
                Cell::from(format!("{} → {}", fl.src, fl.dst)),
                Cell::from(fl.datagrams.to_string()),
                Cell::from(format!("{:.1}", fl.packets_per_s)),
                Cell::from(format!("{:.1}", fl.bits_per_s / 1000.0)),
                Cell::from(pct(loss)).style(loss_style),
                Cell::from(fl.seq.duplicates.to_string()),
                Cell::from(fl.seq.late.to_string()),
                Cell::from(fl.crc_fail.to_string()),
                Cell::from(fl.largest_payload.to_string()),
                Cell::from(fl.fragments.to_string()),
            ];
            if acks {
                let a = fl.acks.as_ref();
                cells.push(Cell::from(a.map_or("-".into(), |a| a.acked.to_string())));
                cells.push(Cell::from(a.map_or("-".into(), |a| pct(a.ack_implied_loss))));
                cells.push(Cell::from(
                    a.and_then(|a| a.rtt_ms)
                        .map_or("-".into(), |r| format!("{:.2}", r.p50)),
                ));
            }
            TRow::new(cells)
        })
        .collect();
    let mut widths = vec![
        Constraint::Min(24),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(6),
    ];
    let mut header = vec![
        "flow",
        "datagrams",
        "pkt/s",
        "kbit/s",
        "loss",
        "dup",
        "late",
        "crc fail",
        "largest",
        "frags",
    ];
    if acks {
        widths.extend([
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(8),
        ]);
        header.extend(["acked", "ack loss", "rtt p50"]);
    }
    let t = Table::new(rows, widths)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" Flows ({}) ", r.flows.len())),
        );
    f.render_widget(t, area);
}

fn draw_reassembly(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if not_ready(f, ix, area, "Reassembly results") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let a = &r.reassembly.attacks;
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Length(4), Constraint::Min(3)])
        .split(area);
    let counters = format!(
        "completed {}  ·  id out of range {}  count out of range {}  count changed {}  oversize {}  short non-last {}  duplicate {}  stale {}  ·  evicted {}  for memory {}  never completed {}",
        r.reassembly.completed,
        a.id_out_of_range,
        a.count_out_of_range,
        a.count_changed,
        a.oversize,
        a.short_non_last,
        a.duplicate,
        a.stale,
        a.evicted_incomplete,
        a.evicted_for_memory,
        a.incomplete_at_end
    );
    f.render_widget(
        Paragraph::new(counters).wrap(Wrap { trim: true }).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Attacks and give-ups "),
        ),
        split[0],
    );
    let mut packets: Vec<&crate::sinks::index::FragPacket> = ix.frags.iter().collect();
    packets.sort_by_key(|p| (p.complete(), p.first_frame));
    let width = split[1].width.saturating_sub(40) as usize;
    let rows: Vec<TRow> = packets
        .iter()
        .skip(app.scroll.min(packets.len().saturating_sub(1)))
        .take(split[1].height as usize)
        .map(|p| {
            let flow = ix
                .flows
                .get(p.flow as usize)
                .map(|f| format!("{}", f.src))
                .unwrap_or_default();
            let mut grid: String = (0..p.count as u32)
                .take(width)
                .map(|i| if p.has(i) { '█' } else { '·' })
                .collect();
            if p.count as usize > width {
                grid.push('…');
            }
            let st = if p.complete() {
                style(app, Color::Green)
            } else {
                style(app, Color::Red)
            };
            TRow::new(vec![
                Cell::from(flow),
                Cell::from(p.seq.to_string()),
                Cell::from(format!("{}/{}", p.received_count(), p.count)),
                Cell::from(if p.duplicates > 0 {
                    format!("+{}", p.duplicates)
                } else {
                    String::new()
                }),
                Cell::from(grid).style(st),
            ])
        })
        .collect();
    let incomplete = packets.iter().filter(|p| !p.complete()).count();
    let t = Table::new(
        rows,
        [
            Constraint::Length(22),
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(4),
            Constraint::Min(10),
        ],
    )
    .header(
        TRow::new([
            "sender",
            "seq",
            "frags",
            "dup",
            "fragments (█ received · missing)",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(format!(
        " Fragmented packets: {}, {incomplete} incomplete (listed first) ",
        packets.len()
    )));
    f.render_widget(t, split[1]);
}

fn draw_loss(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if not_ready(f, ix, area, "Loss charts") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let a = &r.reassembly;
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Percentage(55),
            Constraint::Length(3),
            Constraint::Min(4),
        ])
        .split(area);
    let groups: Vec<BarGroup> = a
        .rows
        .iter()
        .map(|x| {
            BarGroup::default()
                .label(Line::from(x.fragments.to_string()))
                .bars(&[
                    Bar::default()
                        .value((x.observed_loss * 1000.0) as u64)
                        .text_value(pct(x.observed_loss))
                        .style(style(app, Color::Red)),
                    Bar::default()
                        .value((x.predicted_loss * 1000.0) as u64)
                        .text_value(pct(x.predicted_loss))
                        .style(style(app, Color::Blue)),
                ])
        })
        .collect();
    let mut chart = BarChart::default()
        .block(Block::default().borders(Borders::ALL).title(format!(
            " Loss by fragment count: observed (red) vs predicted 1-(1-p)^n (blue), p = {} ",
            pct(a.fragment_loss)
        )))
        .bar_width(5)
        .group_gap(2);
    for g in groups {
        chart = chart.data(g);
    }
    if a.rows.is_empty() {
        f.render_widget(
            Paragraph::new("no fragmented packets").block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" Loss by fragment count "),
            ),
            split[0],
        );
    } else {
        f.render_widget(chart, split[0]);
    }
    let finding = a.finding.clone().unwrap_or_else(|| {
        format!(
            "single-datagram loss {} · no amplification finding",
            pct(a.single_loss)
        )
    });
    f.render_widget(Paragraph::new(finding).wrap(Wrap { trim: true }), split[1]);
    let lost: Vec<u64> = r.timeline.seconds.iter().map(|s| s.lost as u64).collect();
    let bursts: Vec<String> = {
        let mut v: Vec<(usize, u32)> = r
            .timeline
            .seconds
            .iter()
            .enumerate()
            .filter(|(_, s)| s.lost > 0)
            .map(|(i, s)| (i, s.lost))
            .collect();
        v.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        v.iter()
            .take(5)
            .map(|(i, n)| format!("{n} lost at {i}s"))
            .collect()
    };
    let title = format!(
        " Sequences lost per second ({} s; worst: {}) ",
        lost.len(),
        if bursts.is_empty() {
            "none".into()
        } else {
            bursts.join(", ")
        }
    );
    f.render_widget(
        Sparkline::default()
            .data(&lost)
            .style(style(app, Color::Red))
            .block(Block::default().borders(Borders::ALL).title(title)),
        split[2],
    );
}

fn draw_mtu(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if not_ready(f, ix, area, "MTU findings") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let m = &r.mtu;
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(55), Constraint::Min(4)])
        .split(area);
    let game: Vec<&crate::analysis::FlowStats> = r.flows.iter().filter(|f| f.is_game()).collect();
    if let Some(fl) = game.get(app.mtu_flow.min(game.len().saturating_sub(1))) {
        let step = 64u32;
        let top = fl.size_hist.max.max(m.link_mtu).max(m.budget) + step;
        let points: Vec<(f64, f64)> = (0..top / step)
            .map(|b| {
                let lo = b * step;
                let n: u64 = (lo..lo + step)
                    .step_by(16)
                    .map(|s| fl.size_hist.bucket(s) as u64)
                    .sum();
                (lo as f64, n as f64)
            })
            .collect();
        let ymax = points.iter().map(|p| p.1).fold(1.0, f64::max);
        let budget = [(m.budget as f64, 0.0), (m.budget as f64, ymax)];
        let mtu = [(m.link_mtu as f64 - 28.0, 0.0), (m.link_mtu as f64 - 28.0, ymax)];
        let datasets = vec![
            Dataset::default()
                .name("payload sizes")
                .graph_type(GraphType::Bar)
                .style(style(app, Color::Cyan))
                .data(&points),
            Dataset::default()
                .name(format!("budget {}", m.budget))
                .graph_type(GraphType::Line)
                .style(style(app, Color::Yellow))
                .data(&budget),
            Dataset::default()
                .name(format!("link MTU {} (payload {})", m.link_mtu, m.link_mtu - 28))
                .graph_type(GraphType::Line)
                .style(style(app, Color::Red))
                .data(&mtu),
        ];
        let chart = Chart::new(datasets)
            .block(Block::default().borders(Borders::ALL).title(format!(
                " Payload sizes of {} → {} (←/→ flow {}/{}) ",
                fl.src,
                fl.dst,
                app.mtu_flow.min(game.len() - 1) + 1,
                game.len()
            )))
            .x_axis(Axis::default().bounds([0.0, top as f64]).labels(vec![
                Line::from("0"),
                Line::from(format!("{}", top / 2)),
                Line::from(format!("{top}")),
            ]))
            .y_axis(
                Axis::default()
                    .bounds([0.0, ymax])
                    .labels(vec![Line::from("0"), Line::from(format!("{ymax:.0}"))]),
            );
        f.render_widget(chart, split[0]);
    } else {
        f.render_widget(
            Paragraph::new("no game flows").block(Block::default().borders(Borders::ALL)),
            split[0],
        );
    }
    let mut lines = vec![Line::from(format!(
        "over budget {} · over link MTU {} ({} don't-fragment) · IP-fragmented {} ({} never reassembled) · DF over path MTU {} · ICMP {}",
        m.over_budget,
        m.over_link_mtu,
        m.df_over_link_mtu,
        m.ip_fragmented,
        m.ip_never_reassembled,
        m.df_over_path_mtu,
        m.icmp_total
    ))];
    for i in m.icmp.iter().take(6) {
        lines.push(Line::from(Span::styled(
            format!(
                "frame {}: {} says MTU {} for {} (datagram of {} bytes)",
                i.frame,
                i.from,
                i.mtu,
                i.flow.map(|f| f.to_string()).unwrap_or_else(|| "?".into()),
                i.quoted_ip_len
                    .map(|x| x.to_string())
                    .unwrap_or_else(|| "?".into())
            ),
            style(app, Color::Yellow),
        )));
    }
    for v in m.ip_fragmented_list.iter().take(6) {
        lines.push(Line::from(format!(
            "frame {}: {} sent {} bytes in {} IP fragments",
            v.frame, v.flow, v.ip_len, v.fragments
        )));
    }
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::ALL).title(" Violations ")),
        split[1],
    );
}

fn draw_status(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
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

fn draw_keys(f: &mut Frame, app: &App, area: Rect) {
    let keys = match app.tab {
        Tab::Packets => "q quit ? help Tab/1-5 tabs ↑↓ move t fields Space fold / filter g go f follow",
        Tab::Mtu => "q quit ? help Tab/1-5 tabs ←/→ flow / filter g go",
        _ => "q quit ? help Tab/1-5 tabs / filter g go",
    };
    f.render_widget(Paragraph::new(keys).style(style(app, Color::DarkGray)), area);
}

fn draw_help(f: &mut Frame, app: &App, area: Rect) {
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
