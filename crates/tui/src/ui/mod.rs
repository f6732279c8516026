//! Drawing: every tab renders from the app's state and index (no lock anywhere) and
//! changes nothing; what a frame learns of the screen (regions, heights, scroll
//! positions) comes back as a `Drawn` the app keeps after it. One widget a file; what
//! they share is here.

use super::app::{App, Column, Drawn, Focus, Mode, Tab, TimeFormat};
use super::prompt::Ask;
use gpcap::present::tree::{bit_pattern, field_bit_pattern, value_text};
use gpcap::sinks::index::{Index, NO_FLOW, Row, status, stream_note};
use gpcap_dissect::{Label, label_name};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Cell, Chart, Clear, Dataset, Gauge, GraphType, Paragraph, Row as TRow, Table, Tabs,
    Wrap,
};

mod bandwidth;
mod chart;
mod flows;
mod help;
mod hex;
mod loss;
mod messages;
mod mtu;
mod packets;
mod reassembly;
mod statusline;
mod streams;
pub(crate) mod tabs;

pub(crate) use packets::{game_row, list_scroll};
mod tree;

use bandwidth::draw_bandwidth;
use chart::draw_time_chart;
use flows::draw_flows;
use help::draw_help;
use hex::draw_hex;
use loss::draw_loss;
use messages::draw_messages;
use mtu::draw_mtu;
use packets::draw_packets;
use reassembly::draw_reassembly;
use statusline::{draw_keys, draw_status};
use streams::draw_streams;
use tabs::draw_tabs;
use tree::draw_tree;

pub(super) fn style(app: &App, fg: Color) -> Style {
    if app.color {
        Style::default().fg(fg)
    } else {
        Style::default()
    }
}

pub(super) fn selected_style(app: &App) -> Style {
    if app.color {
        Style::default().bg(Color::DarkGray).add_modifier(Modifier::BOLD)
    } else {
        Style::default().add_modifier(Modifier::REVERSED)
    }
}

/// Status of a packet: word and colour. The words are the JSON's and the filter's
/// (`crc_mismatch`, `ip_fragmented`, `over_budget`; a row's kind as `dissect --json`'s
/// `kind`), one spelling everywhere.
pub fn status_of(r: &Row) -> (&'static str, Color) {
    if r.has(status::CRC_FAIL) {
        ("crc_mismatch", Color::Red)
    } else if r.has(status::MALFORMED) {
        ("malformed", Color::Magenta)
    } else if r.has(status::REASSEMBLED) {
        ("reassembled", Color::Blue)
    } else if r.has(status::TRUNCATED) {
        ("truncated", Color::DarkGray)
    } else if r.has(status::IP_FRAG) {
        ("ip_fragmented", Color::Yellow)
    } else if r.has(status::OVER_BUDGET) {
        ("over_budget", Color::Cyan)
    } else if r.has(status::GAME) {
        ("ok", Color::Green)
    } else if r.has(status::ICMP) {
        ("icmp", Color::Yellow)
    } else if r.has(status::IP_PIECE) {
        ("ip_piece", Color::DarkGray)
    } else if r.has(status::OTHER_UDP) {
        ("other_udp", Color::Gray)
    } else if r.has(status::BAD_FRAME) {
        ("bad_frame", Color::Red)
    } else {
        ("not_udp", Color::Gray)
    }
}

/// The Status column: the status word, then what the sequence analysis said of the
/// datagram (`ok gap 3`, `ok late`, `ok dup`, the very verdicts `analyze` counts), in
/// the colour of the worse.
pub fn status_text(r: &Row) -> (String, Color) {
    let (word, color) = status_of(r);
    let (mut note, mut hot) = if r.has(status::GAP) {
        (format!(" gap {}", r.gap), Color::Red)
    } else if r.has(status::LATE) {
        (" late".to_string(), Color::Yellow)
    } else if r.has(status::DUP) {
        (" dup".to_string(), Color::Yellow)
    } else {
        (String::new(), color)
    };
    // Its messages' verdicts in their streams (as `--brief` brackets them).
    let said: Vec<&str> = [
        (stream_note::GAP, "gap"),
        (stream_note::LATE, "late"),
        (stream_note::DUP, "dup"),
    ]
    .into_iter()
    .filter(|(bit, _)| r.streams & bit != 0)
    .map(|(_, w)| w)
    .collect();
    if !said.is_empty() {
        note.push_str(&format!(" msg {}", said.join(",")));
        if hot != Color::Red {
            hot = if r.streams & stream_note::GAP != 0 {
                Color::Red
            } else {
                Color::Yellow
            };
        }
    }
    if note.is_empty() {
        return (word.to_string(), color);
    }
    let color = if color == Color::Green { hot } else { color };
    (format!("{word}{note}"), color)
}

/// Draws a frame in three steps: the Info lines of the packet rows about to be shown
/// are read first (`App::prepare`, the one step that may read the capture again), then
/// every region is drawn from the app without changing it ([`render`]), then the app
/// keeps what the frame learned (`App::settle`: where regions fell, how many rows a list
/// shows, the scroll positions that keep each selection in view).
pub fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    let body = screen(app, area)[1];
    let list = table_body(packets::split(app, body)[0]).height as usize;
    app.prepare(list);
    let drawn = render(f, app);
    app.settle(drawn);
}

/// The screen's rows: tabs, the tab's body, the status line, the key hints (or an open
/// prompt's note, which takes up to two more lines when it is long).
fn screen(app: &App, area: Rect) -> std::rc::Rc<[Rect]> {
    let under = statusline::prompt_note_lines(app, area.width).len().max(1) as u16;
    Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(under),
        ])
        .split(area)
}

/// Every region of the screen, drawn from `app`, which it does not change: what the
/// frame learned is returned for [`App::settle`].
pub fn render(f: &mut Frame, app: &App) -> Drawn {
    let area = f.area();
    let chunks = screen(app, area);
    let ix = &app.index;
    let mut d = Drawn::from(app);
    d.areas.tabs = Rect::new(chunks[0].x, chunks[0].y, chunks[0].width.min(tabs::WIDTH), 1);
    draw_tabs(f, app, ix, chunks[0]);
    let body = chunks[1];
    match app.tab {
        Tab::Packets => draw_packets(f, app, ix, body, &mut d),
        Tab::Flows if app.streams_view => draw_streams(f, app, ix, body, &mut d),
        Tab::Flows => draw_flows(f, app, ix, body, &mut d),
        Tab::Reassembly => draw_reassembly(f, app, ix, body, &mut d),
        Tab::Loss => draw_loss(f, app, ix, body, &mut d),
        Tab::Mtu => draw_mtu(f, app, ix, body),
        Tab::Bandwidth => draw_bandwidth(f, app, body, &mut d),
    }
    draw_status(f, app, ix, chunks[2]);
    draw_keys(f, app, chunks[3]);
    if app.help {
        draw_help(f, app, area);
    }
    d
}

pub(super) fn fmt_time(ns: i64, first: i64) -> String {
    format!("{:.6}", (ns - first) as f64 / 1e9)
}

pub(super) fn not_ready(f: &mut Frame, ix: &Index, area: Rect, what: &str) -> bool {
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

pub(super) fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Widths of a table's columns: each as wide as it needs (`need`), whole or not at all —
/// when they do not fit, columns give way from the highest `priority` number down (the
/// first column never) — and the `flex` column, at least `flex_min` wide, takes what is
/// left. One space between columns.
pub(super) fn fit(
    need: &[usize],
    priority: &[u8],
    flex: Option<usize>,
    flex_min: usize,
    width: usize,
) -> Vec<Option<u16>> {
    let mut keep = vec![true; need.len()];
    let cost = |k: usize| if Some(k) == flex { flex_min } else { need[k] } + 1;
    let total = |keep: &[bool]| -> usize { (0..need.len()).filter(|&k| keep[k]).map(cost).sum() };
    let mut by_priority: Vec<usize> = (1..need.len()).collect();
    by_priority.sort_by_key(|&k| std::cmp::Reverse(priority[k]));
    for k in by_priority {
        if total(&keep) <= width {
            break;
        }
        keep[k] = false;
    }
    let used: usize = (0..need.len())
        .filter(|&k| keep[k] && Some(k) != flex)
        .map(|k| need[k] + 1)
        .sum();
    (0..need.len())
        .map(|k| match keep[k] {
            false => None,
            true if Some(k) == flex => Some(width.saturating_sub(used).max(1) as u16),
            true => Some(need[k] as u16),
        })
        .collect()
}

/// The columns `fit` kept: their widths as constraints and their headers, in order.
pub(super) fn kept_columns(widths: &[Option<u16>], header: Vec<String>) -> (Vec<Constraint>, Vec<String>) {
    let constraints = widths.iter().flatten().map(|&w| Constraint::Length(w)).collect();
    let header = header
        .into_iter()
        .zip(widths)
        .filter(|(_, w)| w.is_some())
        .map(|(h, _)| h)
        .collect();
    (constraints, header)
}

/// The rows of a bordered table with a header line: where its body is drawn, for
/// scrolling and for mouse clicks.
pub(super) fn table_body(area: Rect) -> Rect {
    Rect::new(
        area.x + 1,
        area.y + 2,
        area.width.saturating_sub(2),
        area.height.saturating_sub(3),
    )
}
