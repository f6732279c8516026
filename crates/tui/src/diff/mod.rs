//! `gpcap diff --tui`: one direction at a time, its two capture points' timelines (the
//! upstream point's with the datagrams lost on the way marked, the downstream point's
//! with the late and reordered ones), its figures, and its lost, late, reordered and
//! duplicated datagrams listed in time order. A view of its own over the finished
//! report: `←` `→` choose the direction, `↑` `↓` `PgUp` `PgDn` `Home` `End` move in the
//! list, `q` quits.

mod draw;

use gpcap::sinks::diff::DiffReport;
use gpcap::sinks::diff::pair::Event;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub use draw::{ListFit, draw, render};

/// The keys of this view, as the footer shows them.
pub const KEYS: &str = "←→ direction · ↑↓ PgUp PgDn Home End list · q quit";

/// What a listed datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Lost,
    Late,
    Reordered,
    Duplicated,
}

impl Mark {
    pub fn word(self) -> &'static str {
        match self {
            Mark::Lost => "lost",
            Mark::Late => "late",
            Mark::Reordered => "reordered",
            Mark::Duplicated => "duplicated",
        }
    }
}

/// One listed datagram: what it is, where and when it was seen.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub marks: Vec<Mark>,
    pub event: Event,
    /// 0 for A, 1 for B.
    pub point: usize,
    pub seconds: f64,
}

/// The diff view's state: the report, the direction shown, where the list is.
pub struct DiffView {
    pub report: DiffReport,
    pub direction: usize,
    pub selected: usize,
    pub offset: usize,
    pub quit: bool,
    pub color: bool,
    /// Rows of the list last drawn (for PgUp and PgDn).
    pub page: usize,
}

impl DiffView {
    pub fn new(report: DiffReport) -> Self {
        DiffView {
            report,
            direction: 0,
            selected: 0,
            offset: 0,
            quit: false,
            color: std::env::var_os("NO_COLOR").is_none(),
            page: 10,
        }
    }

    /// The listed datagrams of the shown direction, in time order, one row a datagram
    /// with every mark it has: the lost at their upstream time, the others at their
    /// downstream time (each point's own clock, as seconds since its capture began).
    pub fn rows(&self) -> Vec<Listed> {
        let Some(d) = self.report.directions.get(self.direction) else {
            return Vec::new();
        };
        let up = if d.upstream == "A" { 0 } else { 1 };
        let since = |x: usize, t: i64| {
            let first = self.report.points[x].first_ns.unwrap_or(t);
            (t - first) as f64 / 1e9
        };
        let e = &d.events;
        let mut v: Vec<Listed> = Vec::new();
        let lists = [
            (Mark::Lost, &e.lost, up),
            (Mark::Late, &e.late, 1 - up),
            (Mark::Reordered, &e.reordered, 1 - up),
            (Mark::Duplicated, &e.duplicated, 1 - up),
        ];
        for (mark, list, point) in lists {
            v.extend(list.iter().map(|x| Listed {
                marks: vec![mark],
                event: *x,
                point,
                seconds: since(point, x.ts_ns),
            }));
        }
        v.sort_by(|a, b| {
            a.seconds
                .total_cmp(&b.seconds)
                .then(a.event.frame.cmp(&b.event.frame))
        });
        // A datagram late and reordered is one row.
        let mut out: Vec<Listed> = Vec::with_capacity(v.len());
        for x in v {
            match out.last_mut() {
                Some(l) if l.point == x.point && l.event.frame == x.event.frame => l.marks.extend(x.marks),
                _ => out.push(x),
            }
        }
        out
    }

    pub fn key(&mut self, k: KeyEvent) {
        let n = self.rows().len();
        let dirs = self.report.directions.len();
        match k.code {
            KeyCode::Char('q') | KeyCode::Esc => self.quit = true,
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => self.quit = true,
            KeyCode::Right | KeyCode::Tab if dirs > 0 => self.choose((self.direction + 1) % dirs),
            KeyCode::Left | KeyCode::BackTab if dirs > 0 => self.choose((self.direction + dirs - 1) % dirs),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(n.saturating_sub(1))
            }
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::PageDown => self.selected = (self.selected + self.page).min(n.saturating_sub(1)),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(self.page),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = n.saturating_sub(1),
            _ => {}
        }
    }

    fn choose(&mut self, d: usize) {
        self.direction = d;
        self.selected = 0;
        self.offset = 0;
    }
}
