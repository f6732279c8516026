//! The packet list's filter: on the index's rows as they arrive, or, for a filter on
//! dissected fields, a scan in the background (on every core when the index allows:
//! [`gpcap::sinks::index::scan`]; else one pass of the engine) whose rows join the view
//! as the index reaches them, with its progress on the status line.

use super::app::App;
use gpcap::sinks::select::ScanUpdate;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;

/// A filter on dissected fields: the index holds no fields, so threads of their own read
/// the packets back and send the rows selected, in order.
pub struct FieldScan {
    updates: Receiver<ScanUpdate>,
    stop: Arc<AtomicBool>,
    /// Selected rows the index has not reached yet (the scan may run ahead of it).
    pending: std::collections::VecDeque<u32>,
    pub bytes_read: u64,
    /// The capture's size, for the percentage.
    pub total_bytes: u64,
    pub done: bool,
    pub error: Option<String>,
    pub started: std::time::Instant,
    pub seconds: f64,
    /// The result was said on the status line.
    reported: bool,
}

impl Drop for FieldScan {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl App {
    pub(super) fn scan(&mut self) {
        let before = self.view.len();
        if self.field_scan.is_some() {
            self.take_field_scan();
        } else {
            self.scan_rows();
        }
        // The packet selected before the filter changed (or the definition was
        // reloaded), once the view reaches it.
        if let Some(frame) = self.keep_frame
            && self.view.len() > before
            && self.view[before..]
                .iter()
                .any(|&i| self.index.rows.get(i as usize).is_some_and(|r| r.frame >= frame))
        {
            self.keep_frame = None;
            self.goto_frame(frame, false);
            self.load_detail();
        }
        if self.detail.is_none() && !self.view.is_empty() {
            self.load_detail();
        }
    }

    /// Moves what the field scan selected into the view, as far as the index goes.
    fn take_field_scan(&mut self) {
        let Some(fs) = self.field_scan.as_mut() else {
            return;
        };
        while let Ok(u) = fs.updates.try_recv() {
            match u {
                ScanUpdate::Rows { rows, bytes_read } => {
                    fs.pending.extend(rows);
                    fs.bytes_read = bytes_read;
                }
                ScanUpdate::Done { error } => {
                    fs.done = true;
                    fs.error = error;
                    fs.seconds = fs.started.elapsed().as_secs_f64();
                }
            }
        }
        let loaded = self.index.rows.len() as u32;
        while let Some(&r) = fs.pending.front() {
            if r >= loaded {
                break;
            }
            self.view.push(r);
            fs.pending.pop_front();
        }
        let finished = fs.done && fs.pending.is_empty() && fs.error.is_none();
        if finished && !fs.reported {
            fs.reported = true;
            self.message = Some((
                format!(
                    "{} match ({:.2} s)",
                    gpcap::present::count(self.view.len() as u64, "packet"),
                    fs.seconds
                ),
                false,
            ));
        }
    }

    /// No field scan is running, or it has ended and its rows are all in the view (as far
    /// as the index goes).
    pub fn scan_finished(&self) -> bool {
        self.field_scan
            .as_ref()
            .is_none_or(|fs| fs.done && fs.pending.is_empty())
    }

    /// How the field scan is going, for the status line.
    pub fn scan_status(&self) -> Option<String> {
        let fs = self.field_scan.as_ref()?;
        let n = gpcap::present::count(self.view.len() as u64, "packet");
        Some(match (&fs.error, fs.done) {
            (Some(e), _) => format!("filter stopped: {e} ({n} match so far)"),
            (None, true) => format!("{n} match `{}` ({:.2} s)", self.filter.text, fs.seconds),
            (None, false) => {
                // Not the index's: drawing lends the index out.
                let total = fs.total_bytes.max(1);
                format!(
                    "filtering on fields {:.0}% · {n} match",
                    (fs.bytes_read as f64 / total as f64 * 100.0).min(100.0)
                )
            }
        })
    }

    fn scan_rows(&mut self) {
        let ix = &self.index;
        let end = ix.rows.len();
        if let Some(first) = ix.rows.first() {
            self.filter.start(first.ts_ns);
        }
        for i in self.scanned..end {
            if self.filter.is_all()
                || ix
                    .rows
                    .get(i)
                    .is_some_and(|r| self.filter.matches(&r.event(&ix.flows)))
            {
                self.view.push(i as u32);
            }
        }
        self.scanned = end;
    }

    pub(super) fn refilter(&mut self) {
        let keep = self.selected_row().map(|r| r.frame);
        self.view.clear();
        self.scanned = 0;
        self.field_scan = None;
        self.detail = None;
        if self.filter.needs_engine() {
            let (tx, rx) = std::sync::mpsc::channel();
            let stop = Arc::new(AtomicBool::new(false));
            let (path, cfg, filter, flag) = (
                self.index.path.clone(),
                self.cfg.clone(),
                self.filter.clone(),
                stop.clone(),
            );
            match self.index.snapshot(&cfg, &filter) {
                Some(snap) => {
                    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
                    std::thread::spawn(move || {
                        gpcap::run::scans::scan_index(snap, cfg, filter, workers, tx, flag)
                    })
                }
                None => std::thread::spawn(move || gpcap::run::scans::scan(&path, cfg, filter, tx, flag)),
            };
            self.field_scan = Some(FieldScan {
                updates: rx,
                stop,
                pending: Default::default(),
                bytes_read: 0,
                total_bytes: self.index.total_bytes,
                done: false,
                error: None,
                started: std::time::Instant::now(),
                seconds: 0.0,
                reported: false,
            });
            self.keep_frame = keep;
        }
        self.scan();
        self.selected = 0;
        if let Some(frame) = keep {
            self.goto_frame(frame, false);
        }
        self.load_detail();
    }
}
