//! The Bandwidth tab's state: the profile `analyze --bits` computes (the same sink, the
//! same numbers), counted on a thread of its own when the tab first opens, so that input
//! never waits on it; rows per packet type, then per field of the type drilled into.

use gpcap::run::{Until, run_files};
use gpcap::sinks::bandwidth::{Bandwidth, Options};
use gpcap::sinks::bandwidth::{BandwidthReport, Row};
use gpcap_engine::Config;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};

/// What the tab's rows are sorted by (descending unless reversed).
pub const BITS_SORTS: [&str; 3] = ["bits", "share", "occurrences"];

/// The label of the rows outside any packet type (headers below UDP, other traffic…).
pub const OVERHEAD: &str = "(no packet type)";

/// How far the profile has got.
pub enum Profile {
    NotStarted,
    Counting {
        done: Receiver<Result<BandwidthReport, String>>,
        stop: Arc<AtomicBool>,
        started: std::time::Instant,
    },
    Ready(Box<BandwidthReport>),
    Failed(String),
}

/// One line of the tab: a packet type (or the overhead outside types) or a field of one.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub direction: &'static str,
    pub packet_type: Option<String>,
    /// The field's path, with its message type and category when not a plain field.
    pub label: String,
    pub occurrences: u64,
    pub bits: u64,
    /// Of the type's bits (fields), of the wire (types).
    pub share: f64,
    pub mean_bits: f64,
    /// What `Enter` filters the packet list on.
    pub filter: Option<String>,
}

pub struct BitsTab {
    pub profile: Profile,
    /// The (direction, packet type) drilled into.
    pub drill: Option<(&'static str, Option<String>)>,
    pub table: super::app::TableState,
    /// The type line selected before drilling, to come back to.
    type_selected: usize,
}

impl Default for BitsTab {
    fn default() -> Self {
        BitsTab {
            profile: Profile::NotStarted,
            drill: None,
            table: Default::default(),
            type_selected: 0,
        }
    }
}

impl Drop for BitsTab {
    fn drop(&mut self) {
        if let Profile::Counting { stop, .. } = &self.profile {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

impl BitsTab {
    /// Starts counting the profile of `path` (once; again after `reset`).
    pub fn start(&mut self, path: PathBuf, cfg: Config) {
        if !matches!(self.profile, Profile::NotStarted) {
            return;
        }
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            let mut sink = Bandwidth::new(cfg.program.clone(), Options::default());
            let mut progress = |_: usize, _: u64| {};
            let stopped = || flag.load(Ordering::Relaxed);
            let out = run_files(&[path], cfg, &mut Until::new(&mut sink, &stopped), &mut progress)
                .map(|_| sink.report())
                .map_err(|e| e.to_string());
            let _ = tx.send(out);
        });
        self.profile = Profile::Counting {
            done: rx,
            stop,
            started: std::time::Instant::now(),
        };
    }

    /// Takes the profile once counted.
    pub fn poll(&mut self) {
        if let Profile::Counting { done, .. } = &self.profile
            && let Ok(out) = done.try_recv()
        {
            self.profile = match out {
                Ok(r) => Profile::Ready(Box::new(r)),
                Err(e) => Profile::Failed(e),
            };
        }
    }

    /// Forgets the profile (the definition was reloaded): counted again on next view.
    pub fn reset(&mut self) {
        *self = BitsTab::default();
    }

    pub fn ready(&self) -> bool {
        matches!(self.profile, Profile::Ready(_) | Profile::Failed(_))
    }

    /// The lines shown, sorted by `table.sort` (`BITS_SORTS`).
    pub fn lines(&self) -> Vec<Line> {
        let Profile::Ready(r) = &self.profile else {
            return Vec::new();
        };
        let mut out = match &self.drill {
            None => type_lines(r),
            Some((dir, ty)) => field_lines(r, dir, ty.as_deref()),
        };
        let key = |l: &Line| match self.table.sort {
            1 => (l.share * 1e12) as u64,
            2 => l.occurrences,
            _ => l.bits,
        };
        out.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.label.cmp(&b.label)));
        if self.table.descending {
            out.reverse();
        }
        out
    }

    /// `Enter`: into a type's fields; on a field, the filter to apply.
    pub fn enter(&mut self) -> Option<String> {
        let lines = self.lines();
        let line = lines.get(self.table.selected)?;
        if self.drill.is_some() {
            return line.filter.clone();
        }
        self.drill = Some((line.direction, line.packet_type.clone()));
        self.type_selected = self.table.selected;
        self.table.selected = 0;
        self.table.scroll = 0;
        None
    }

    /// `Esc`/`←`: back to the types.
    pub fn back(&mut self) {
        if self.drill.take().is_some() {
            self.table.selected = self.type_selected;
            self.table.scroll = 0;
        }
    }

    /// `s`: the next sort column; `S`: reverse.
    pub fn sort(&mut self, reverse: bool) {
        if reverse {
            self.table.descending = !self.table.descending;
        } else {
            self.table.sort = (self.table.sort + 1) % BITS_SORTS.len();
        }
    }

    pub fn step(&mut self, delta: isize) {
        self.table.selected = (self.table.selected as isize + delta).max(0) as usize;
    }
}

/// A line per (direction, packet type) as `types` has them, and one for the rows of no
/// packet type: together they are the wire.
fn type_lines(r: &BandwidthReport) -> Vec<Line> {
    let wire = r.captured_bits.max(1) as f64;
    let mut out: Vec<Line> = r
        .types
        .iter()
        .map(|t| Line {
            direction: t.direction,
            packet_type: t.packet_type.clone(),
            label: t.packet_type.clone().unwrap_or_else(|| OVERHEAD.into()),
            occurrences: t.packets,
            bits: t.bits,
            share: t.share_of_wire,
            mean_bits: t.bits as f64 / t.packets.max(1) as f64,
            filter: t.packet_type.clone(),
        })
        .collect();
    let other: Vec<&Row> = r.rows.iter().filter(|x| x.packet_type.is_none()).collect();
    if !other.is_empty() {
        let bits: u64 = other.iter().map(|x| x.bits).sum();
        out.push(Line {
            direction: "any",
            packet_type: None,
            label: OVERHEAD.into(),
            occurrences: other.iter().map(|x| x.occurrences).sum(),
            bits,
            share: bits as f64 / wire,
            // Each row's mean is over every frame: their sum is the line's.
            mean_bits: other.iter().map(|x| x.mean_bits_per_packet).sum(),
            filter: None,
        });
    }
    out
}

/// The rows of one (direction, packet type), a line each.
fn field_lines(r: &BandwidthReport, dir: &str, ty: Option<&str>) -> Vec<Line> {
    r.rows
        .iter()
        .filter(|x| x.direction == dir && x.packet_type.as_deref() == ty)
        .map(|x| {
            let mut label = match &x.message_type {
                Some(m) => format!("[{m}] {}", x.path),
                None => x.path.clone(),
            };
            if x.category != "field" {
                label = if x.path.is_empty() {
                    x.category.to_string()
                } else {
                    format!("{label} ({})", x.category)
                };
            }
            // A body field is a filter path (`scene.objects.position.x`: packets that have
            // it); other rows (headers, padding, overhead) select their type.
            let filter = match (ty, x.category == "field" && !x.path.is_empty()) {
                (Some(t), true) => Some(format!("{t}.{}", x.path)),
                (Some(t), false) => Some(t.to_string()),
                (None, _) => None,
            };
            Line {
                direction: x.direction,
                packet_type: x.packet_type.clone(),
                label,
                occurrences: x.occurrences,
                bits: x.bits,
                share: x.share_of_type.unwrap_or(x.share_of_wire),
                mean_bits: x.mean_bits_per_packet,
                filter,
            }
        })
        .collect()
}
