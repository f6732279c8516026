//! Runs on behalf of the sinks: a sink only consumes events, so what reads a capture
//! through the engine to fill one (the ack facts a filter needs, the first failure's
//! field and bit, the TUI's index and its scans) is here, above both.

use crate::filter::Filter;
use crate::run::{Merge, run_files};
use crate::sinks::analysis::fit::FirstFailure;
use crate::sinks::analysis::{Report, Statistics};
use crate::sinks::index::{IndexSink, Update};
use crate::sinks::select::{FrameSet, ScanUpdate, Select};
use gpcap_engine::ack_facts::AckFacts;
use gpcap_engine::{Config, Flow, Kind, Needs, PacketEvent, Sink, SinkError};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;

/// Shards of one run add up (see [`Statistics::merge`]).
impl Merge for Statistics {
    fn merge(&mut self, other: Self) {
        Statistics::merge(self, other)
    }
}

/// Reports of shards of one run add up (see [`Report::merge`]).
impl Merge for Report {
    fn merge(&mut self, other: Self) {
        Report::merge(self, other)
    }
}

/// The TUI's filter on dissected fields over the index `snap`, on `workers` threads
/// ([`crate::sinks::index::scan`]), after a pass of its own for the acks when the filter
/// reads them (`rtt` and `never_acked` are settled by later packets).
pub fn scan_index(
    snap: crate::sinks::index::Snapshot,
    cfg: Config,
    mut filter: Filter,
    workers: usize,
    tx: Sender<ScanUpdate>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    if filter.needs_acks() {
        match ack_facts(std::slice::from_ref(&snap.path), cfg.clone()) {
            Ok(facts) => filter.set_acks(std::sync::Arc::new(facts)),
            Err(e) => {
                let _ = tx.send(ScanUpdate::Done {
                    error: Some(e.to_string()),
                });
                return;
            }
        }
    }
    crate::sinks::index::scan(snap, cfg, filter, workers, tx, stop);
}

/// Runs the analysis over `captures` for what the ack analysis settled of each captured
/// sequence (`never_acked` and `rtt` in filters: known only after later packets).
pub fn ack_facts(captures: &[PathBuf], cfg: Config) -> Result<AckFacts, super::RunError> {
    let mut stats = Statistics::new(cfg.clone());
    stats.keep_ack_log();
    run_files(captures, cfg, &mut stats, &mut |_, _| {})?;
    Ok(stats.ack_facts())
}

/// Reads the captures again up to the first failure, to name its field and bit.
pub fn locate(captures: &[PathBuf], cfg: &Config, first: &mut FirstFailure) -> Result<(), super::RunError> {
    struct Find<'a> {
        first: &'a mut FirstFailure,
        done: bool,
    }
    impl Find<'_> {
        fn take(&mut self, e: &PacketEvent<'_>) {
            if (e.file, e.frame) > (self.first.file, self.first.frame) {
                self.done = true;
            }
            if self.done || (e.file, e.frame) != (self.first.file, self.first.frame) {
                return;
            }
            if let Some(fault) = e.dissection.and_then(|d| d.fault.as_ref()) {
                self.first.field = Some(fault.field.clone());
                self.first.bit = Some(fault.bit);
                self.done = true;
            }
        }
    }
    impl Sink for Find<'_> {
        /// The failure's field and bit are in its field tree.
        fn needs(&self) -> Needs {
            Needs {
                fields: true,
                layers: None,
            }
        }
        fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
            self.take(e);
            Ok(Flow::stop_if(self.done))
        }
    }
    let mut find = Find { first, done: false };
    run_files(
        captures.get(..=find.first.file as usize).unwrap_or(captures),
        cfg.clone(),
        &mut find,
        &mut |_, _| {},
    )?;
    Ok(())
}

/// Reads a capture through the engine into the index (sent to `tx` in batches, so the
/// screen shows the first packets at once) and the statistics, whose report comes last.
pub fn load(path: &Path, cfg: Config, tx: Sender<Update>) {
    let index = IndexSink::new(tx);
    let bytes = index.bytes_read.clone();
    let mut sinks = (Statistics::new(cfg.clone()), index);
    let total = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let result = run_files(&[path.to_path_buf()], cfg, &mut sinks, &mut |_, offset| {
        bytes.store(offset, Ordering::Relaxed)
    });
    bytes.store(total, Ordering::Relaxed);
    let (stats, mut index) = sinks;
    match result {
        Ok(outcomes) => {
            let error = outcomes
                .iter()
                .find_map(|o| o.end.error.as_ref().or(o.end.truncated_tail.as_ref()))
                .map(|e| e.to_string());
            index.done(Some(stats.report()), error);
        }
        Err(e) => index.done(None, Some(e.to_string())),
    }
}

/// Runs the engine (recording fields) over the capture and sends the positions `filter`
/// selects, in batches, until the capture ends or `stop` is set: the TUI's filter on
/// dissected fields, which its index of rows cannot answer.
pub fn scan(
    path: &Path,
    cfg: Config,
    filter: Filter,
    tx: std::sync::mpsc::Sender<ScanUpdate>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    struct Batches<'a> {
        select: Select,
        tx: std::sync::mpsc::Sender<ScanUpdate>,
        bytes_read: &'a std::cell::Cell<u64>,
        closed: bool,
        stop: &'a AtomicBool,
    }
    impl Batches<'_> {
        fn send(&mut self) {
            let rows = self.select.take_rows();
            let u = ScanUpdate::Rows {
                rows,
                bytes_read: self.bytes_read.get(),
            };
            if self.tx.send(u).is_err() {
                self.closed = true;
            }
        }
    }
    impl Sink for Batches<'_> {
        /// The scan reads dissected fields.
        fn needs(&self) -> Needs {
            Needs {
                fields: true,
                layers: None,
            }
        }
        fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
            let _ = self.select.packet(e);
            if self.select.position.is_multiple_of(16384) {
                self.send();
            }
            Ok(Flow::stop_if(self.closed || self.stop.load(Ordering::Relaxed)))
        }
    }
    let mut filter = filter;
    if filter.needs_acks() {
        // `rtt` and `never_acked` are settled by later packets: a pass of their own first.
        match ack_facts(&[path.to_path_buf()], cfg.clone()) {
            Ok(facts) => filter.set_acks(std::sync::Arc::new(facts)),
            Err(e) => {
                let _ = tx.send(ScanUpdate::Done {
                    error: Some(e.to_string()),
                });
                return;
            }
        }
    }
    let read = std::cell::Cell::new(0u64);
    let mut sink = Batches {
        select: Select::new(filter),
        tx,
        bytes_read: &read,
        closed: false,
        stop: &stop,
    };
    let result = run_files(&[path.to_path_buf()], cfg, &mut sink, &mut |_, offset| {
        read.set(offset)
    });
    read.set(std::fs::metadata(path).map(|m| m.len()).unwrap_or(0));
    sink.send();
    let error = match result {
        Ok(outcomes) => outcomes
            .iter()
            .find_map(|o| o.end.error.as_ref())
            .map(|e| e.to_string()),
        Err(e) => Some(e.to_string()),
    };
    let _ = sink.tx.send(ScanUpdate::Done { error });
}

/// The frames that carry the events at `rows` (positions in the engine's order, as the
/// TUI numbers its rows; a reassembled packet's are its fragments'): what `w` writes.
pub fn frames_of_rows(path: &Path, cfg: Config, rows: &[u32]) -> Result<FrameSet, super::RunError> {
    struct Pick<'a> {
        rows: &'a [u32],
        position: u32,
        frames: FrameSet,
    }
    impl Pick<'_> {
        /// One event ([`Sink::packet`]).
        fn take(&mut self, e: &PacketEvent<'_>) {
            let at = self.position;
            self.position = self.position.saturating_add(1);
            if self.rows.binary_search(&at).is_err() {
                return;
            }
            if e.kind == Kind::Reassembled {
                for &f in e.fragment_frames {
                    self.frames.insert(f);
                }
            } else {
                self.frames.insert(e.frame);
            }
        }
    }

    impl Sink for Pick<'_> {
        fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
            self.take(e);
            // Past the last row asked for: the rest of the capture is not read.
            Ok(Flow::stop_if(self.rows.last().is_none_or(|&l| self.position > l)))
        }
    }
    let mut sorted = rows.to_vec();
    sorted.sort_unstable();
    let mut pick = Pick {
        rows: &sorted,
        position: 0,
        frames: FrameSet::default(),
    };
    run_files(&[path.to_path_buf()], cfg, &mut pick, &mut |_, _| {})?;
    Ok(pick.frames)
}
