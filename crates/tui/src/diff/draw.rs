//! Drawing the diff view: the direction's header and figures, its two timelines, the
//! list of its marked datagrams, the keys. Nothing here changes state but the list's
//! scroll and page height.

use super::{DiffView, KEYS, Mark};
use gpcap::sinks::diff::Direction;
use gpcap::sinks::diff::timeline::{Bin, LATE, ONLY, REORDERED, SEEN};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Wrap};

const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

fn fg(v: &DiffView, c: Color) -> Style {
    if v.color {
        Style::default().fg(c)
    } else {
        Style::default()
    }
}

/// What a frame learned of the list: the rows a page holds, and the selection and
/// first row that keep it in view at this size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListFit {
    pub page: usize,
    pub selected: usize,
    pub offset: usize,
}

/// Draws a frame from the view ([`render`]), then keeps what it learned of the list.
pub fn draw(f: &mut Frame, v: &mut DiffView) {
    if let Some(fit) = render(f, v) {
        v.page = fit.page;
        v.selected = fit.selected;
        v.offset = fit.offset;
    }
}

/// The view drawn without changing it; the list's fit when there is a list.
pub fn render(f: &mut Frame, v: &DiffView) -> Option<ListFit> {
    let area = f.area();
    let Some(d) = v.report.directions.get(v.direction) else {
        let mut text = vec![Line::from(format!(
            "Nothing to compare ({:?}): no direction of traffic was seen at both points. q quits.",
            v.report.verdict
        ))];
        text.extend(v.report.notes.iter().map(|n| Line::from(n.to_string())));
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), area);
        return None;
    };
    let d = d.clone();
    let width = area.width.max(1) as usize;
    let (head_lines, figures_lines) = (header(v, &d), figure_lines(&d));
    let tall = |lines: &[Line]| {
        lines
            .iter()
            .map(|l| l.width().max(1).div_ceil(width))
            .sum::<usize>() as u16
    };
    let [head, figures, lanes, list, keys] = Layout::vertical([
        Constraint::Length(tall(&head_lines)),
        Constraint::Length(tall(&figures_lines)),
        Constraint::Length(5),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(head_lines).wrap(Wrap { trim: true }), head);
    f.render_widget(Paragraph::new(figures_lines).wrap(Wrap { trim: true }), figures);
    draw_lanes(f, v, &d, lanes);
    let fit = draw_list(f, v, list);
    f.render_widget(Paragraph::new(KEYS), keys);
    Some(fit)
}

fn header(v: &DiffView, d: &Direction) -> Vec<Line<'static>> {
    let [a, b] = &v.report.points;
    vec![
        Line::from(Span::styled(
            format!(
                "A {} · B {} · direction {} of {}",
                a.name,
                b.name,
                v.direction + 1,
                v.report.directions.len()
            ),
            Style::default().add_modifier(Modifier::BOLD),
        )),
        Line::from(format!(
            "{} → {} at A · {} → {} at B · upstream {}",
            d.a.src, d.a.dst, d.b.src, d.b.dst, d.upstream
        )),
    ]
}

fn figure_lines(d: &Direction) -> Vec<Line<'static>> {
    let opt = |x: Option<u64>| x.map_or("-".to_string(), |x| x.to_string());
    let loss = match (d.loss, d.loss_low, d.loss_high) {
        (Some(l), Some(lo), Some(hi)) => {
            format!("{:.2}%, 95% {:.1}–{:.1}%", l * 100.0, lo * 100.0, hi * 100.0)
        }
        _ => "-".into(),
    };
    let delay = match &d.delay {
        Some(x) => format!(
            "{}p50 {:.2} · p99 {:.2} · max {:.2} ms{} · jitter {:.2} ms · {} late in {} spikes",
            x.floor_ms.map_or(String::new(), |f| format!("floor {f:.2} · ")),
            x.p50_ms,
            x.p99_ms,
            x.max_ms,
            if x.above_floor { " above the floor" } else { "" },
            x.jitter_ms,
            x.late,
            x.spikes
        ),
        None => format!(
            "delay -: {}",
            d.delay_note
                .as_ref()
                .map_or("not measured".into(), |n| n.to_string())
        ),
    };
    vec![
        Line::from(format!(
            "sent {} · arrived {} · lost between {} ({loss}) · before {} · duplicated {} · reordered {}",
            d.sent,
            d.arrived,
            d.lost,
            opt(d.lost_before),
            opt(d.duplicated),
            d.reordered
        )),
        Line::from(delay),
    ]
}

/// What column `c` of `cols` shows of `bins` (spread over `n` bins in all): their sums.
fn column(bins: &[Bin], n: usize, c: usize, cols: usize) -> Bin {
    let (lo, hi) = (c * n / cols, ((c + 1) * n / cols).max(c * n / cols + 1));
    let mut out = [0u32; 8];
    for b in bins.iter().take(hi).skip(lo) {
        for (o, x) in out.iter_mut().zip(b) {
            *o = o.saturating_add(*x);
        }
    }
    out
}

fn draw_lanes(f: &mut Frame, v: &DiffView, d: &Direction, area: Rect) {
    let up = if d.upstream == "A" { 0 } else { 1 };
    let n = v
        .report
        .directions
        .iter()
        .map(|d| d.timeline.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let cols = area.width.saturating_sub(4).max(1) as usize;
    let sums: Vec<Bin> = (0..cols).map(|c| column(&d.timeline, n, c, cols)).collect();
    let top = sums
        .iter()
        .map(|b| b[SEEN].max(b[SEEN + 1]))
        .max()
        .unwrap_or(0)
        .max(1);
    let lane = |x: usize| -> Line<'static> {
        let mut spans = vec![Span::raw(format!("{} ", ["A", "B"][x]))];
        for b in &sums {
            let (ch, style) = if x == up && b[ONLY + up] > 0 {
                ('✗', fg(v, Color::Red))
            } else if x != up && b[LATE + x] > 0 {
                ('▲', fg(v, Color::Yellow))
            } else if x != up && b[REORDERED + x] > 0 {
                ('↕', fg(v, Color::Magenta))
            } else {
                let level = (b[SEEN + x] as u64 * 8).div_ceil(top as u64) as usize;
                (LEVELS[level.min(8)], fg(v, Color::Cyan))
            };
            spans.push(Span::styled(ch.to_string(), style));
        }
        Line::from(spans)
    };
    let span_ns = n as i64 * v.report.timeline_width_ns;
    let axis = axis_line(span_ns, cols);
    let lines = if up == 0 {
        vec![lane(0), lane(1), axis]
    } else {
        vec![lane(1), lane(0), axis]
    };
    let title = " timelines (A's clock): ✗ lost on the way · ▲ late · ↕ reordered ";
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

fn seconds(ns: i64) -> String {
    let s = ns as f64 / 1e9;
    if s < 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

/// `0 s`, the middle and the end under the lanes.
fn axis_line(span_ns: i64, cols: usize) -> Line<'static> {
    let (mid, end) = (seconds(span_ns / 2), seconds(span_ns));
    let mut s = String::from("  0 s");
    let at_mid = 2 + cols / 2 - mid.len() / 2;
    while s.chars().count() < at_mid {
        s.push(' ');
    }
    s.push_str(&mid);
    let at_end = (2 + cols).saturating_sub(end.len());
    while s.chars().count() < at_end {
        s.push(' ');
    }
    if s.chars().count() + end.len() <= 2 + cols {
        s.push_str(&end);
    }
    Line::from(s)
}

fn draw_list(f: &mut Frame, v: &DiffView, area: Rect) -> ListFit {
    let rows = v.rows();
    let height = area.height.saturating_sub(3).max(1) as usize;
    let selected = v.selected.min(rows.len().saturating_sub(1));
    let offset = if selected < v.offset {
        selected
    } else if selected >= v.offset + height {
        selected + 1 - height
    } else {
        v.offset
    };
    let count = |m: Mark| rows.iter().filter(|r| r.marks.contains(&m)).count();
    let title = format!(
        " {} lost · {} late · {} reordered · {} duplicated{} ",
        count(Mark::Lost),
        count(Mark::Late),
        count(Mark::Reordered),
        count(Mark::Duplicated),
        if area.width >= 90 {
            " (the first 1000 of each kind)"
        } else {
            ""
        }
    );
    let body: Vec<Row> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, r)| {
            let at = ["A", "B"][r.point];
            let color = match r.marks[0] {
                Mark::Lost => Color::Red,
                Mark::Late => Color::Yellow,
                Mark::Reordered => Color::Magenta,
                Mark::Duplicated => Color::Blue,
            };
            let style = if i == selected {
                if v.color {
                    Style::default().bg(Color::DarkGray).add_modifier(Modifier::BOLD)
                } else {
                    Style::default().add_modifier(Modifier::REVERSED)
                }
            } else {
                Style::default()
            };
            let words: Vec<&str> = r.marks.iter().map(|m| m.word()).collect();
            let e = &r.event;
            Row::new(vec![
                Cell::from(Span::styled(words.join(" "), fg(v, color))),
                Cell::from(format!("{at} +{:.3} s", r.seconds)),
                Cell::from(format!("{at} {}", e.frame)),
                Cell::from(e.seq.map_or("-".into(), |s| s.to_string())),
                Cell::from(e.fragment.map_or(String::new(), |(id, n)| format!("{id} of {n}"))),
            ])
            .style(style)
        })
        .collect();
    let table = Table::new(
        body,
        [
            Constraint::Length(14),
            Constraint::Length(13),
            Constraint::Length(10),
            Constraint::Length(8),
            Constraint::Min(6),
        ],
    )
    .header(
        Row::new(vec!["datagram", "at", "frame", "seq", "fragment"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(title));
    f.render_widget(table, area);
    ListFit {
        page: height,
        selected,
        offset,
    }
}
