//! Analysis as a pipeline, for any traffic shape (one flow included): a reader copies
//! frames into batches, validation workers (decode, checksum, header and body — the
//! stateless part) compute each datagram's verdict on every core, and one analyzer
//! takes the batches back in order and runs only the stateful part (flows, sequences,
//! reassembly, IP defragmentation, statistics). The analyzer is the sequential one with
//! the verdicts handed in, so the report is the sequential report by construction.

use super::files::{Progress, Reading, each_file};
use super::{analyze_batch, thread_failed};
use crate::engine::join::Joiner;
use crate::engine::{Batch, Config, Engine, FileEnd, Found, Needs, Recycler, Sink, Validator, layers};
use crate::sinks::analysis::{Analyzer, Report, Statistics};
use gpcap_wire::capture::{CaptureError, Frame};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

/// In reading order; workers pass everything but frames through untouched.
enum Msg {
    Begin(String),
    Frames(Batch, Found),
    End(FileEnd),
}

/// Analyzes captures with `workers` validation threads. Errors as sequential: a file that
/// cannot be opened is an error, one that breaks midway keeps what was read.
pub fn analyze_files(
    paths: &[PathBuf],
    cfg: Config,
    workers: usize,
    progress: Progress,
) -> Result<Report, CaptureError> {
    let analyzer = Analyzer::new(cfg.clone());
    run_pipelined(paths, cfg, analyzer, workers, progress).map(|(stats, _)| stats.report())
}

/// [`analyze_files`] with `analyzer` (and its other sink, such as the bandwidth profile
/// of `analyze --bits`) as the ordered stage: the finished statistics and that sink,
/// the same as a sequential run's.
pub fn run_pipelined<X: Sink + Send + 'static>(
    paths: &[PathBuf],
    cfg: Config,
    analyzer: Analyzer<X>,
    workers: usize,
    progress: Progress,
) -> Result<(Statistics, X), CaptureError> {
    let workers = workers.max(1);
    // Bounded queues: memory stays a few batches whatever the capture's size.
    let (work_tx, work_rx) = sync_channel::<(u64, Msg)>(workers * 2);
    let (done_tx, done_rx) = sync_channel::<(u64, Msg)>(workers * 2);
    let work_rx = Arc::new(Mutex::new(work_rx));
    // Sealed packets of a key log's connections open on the workers (the analyzer
    // records no field trees).
    let opener = layers::opener(&cfg, Needs::default()).map(Arc::new);
    let mut threads = Vec::new();
    for _ in 0..workers {
        let rx = work_rx.clone();
        let tx = done_tx.clone();
        let cfg = cfg.clone();
        let opener = opener.clone();
        threads.push(std::thread::spawn(move || {
            let mut v = Validator::new(&cfg, false);
            let ports = cfg.port_set();
            let mut joiner = Joiner::default();
            // Joining pays for bodies to validate: without a definition a packet's verdict
            // is a checksum and a header, less than joining costs (one client, 1 GB:
            // 0.67 s without against 0.73 s with).
            let join = cfg.program.is_some();
            loop {
                let next = rx.lock().map(|r| r.recv());
                let Ok(Ok((seq, msg))) = next else { break };
                let msg = match msg {
                    Msg::Frames(batch, mut found) => {
                        found.pre.clear();
                        found
                            .pre
                            .extend(batch.frames().map(|f| Engine::prepare(&ports, &mut v, &f)));
                        if join {
                            joiner.join(&batch, &mut found.pre, &mut v, &mut found.joined);
                        }
                        if let Some(o) = &opener {
                            found.plain.clear();
                            for (f, p) in batch.frames().zip(found.pre.iter_mut()) {
                                p.open_ahead(&f, o, &mut found.plain);
                            }
                        }
                        Msg::Frames(batch, found)
                    }
                    other => other,
                };
                if tx.send((seq, msg)).is_err() {
                    break;
                }
            }
        }));
    }
    drop(done_tx);
    let pool = Recycler::<(Batch, Found)>::new(workers * 4 + 4);
    let analyzer = {
        let back = pool.returner();
        std::thread::spawn(move || ordered(analyzer, done_rx, back))
    };
    let mut reading = Reader {
        tx: &work_tx,
        pool: &pool,
        seq: 0,
        batch: None,
    };
    let read = each_file(paths, progress, &mut reading);
    drop(work_tx);
    for t in threads {
        t.join().map_err(|_| thread_failed())?;
    }
    let report = analyzer.join().map_err(|_| thread_failed())?;
    read.map(|_| report)
}

/// The reader's side: frames copied into batches, sent in reading order with the files'
/// beginnings and ends.
struct Reader<'a> {
    tx: &'a SyncSender<(u64, Msg)>,
    pool: &'a Recycler<(Batch, Found)>,
    seq: u64,
    batch: Option<(Batch, Found)>,
}

impl Reader<'_> {
    fn send(&mut self, msg: Msg) {
        let _ = self.tx.send((self.seq, msg));
        self.seq += 1;
    }
}

impl Reading for Reader<'_> {
    fn begin(&mut self, _file: usize, name: &str) {
        self.send(Msg::Begin(name.to_string()));
    }

    #[inline(always)]
    fn frame(&mut self, f: Frame) -> bool {
        let pool = self.pool;
        let batch = self
            .batch
            .get_or_insert_with(|| pool.take(|| (Batch::new(), Found::default())));
        if batch.0.push(f) {
            let (b, found) = self.batch.take().unwrap_or_default();
            self.send(Msg::Frames(b, found));
        }
        true
    }

    fn end(&mut self, _file: usize, end: &FileEnd) {
        if let Some((b, found)) = self.batch.take().filter(|b| !b.0.is_empty()) {
            self.send(Msg::Frames(b, found));
        }
        self.send(Msg::End(end.clone()));
    }
}

/// The analyzer's side: messages back in reading order, frames with their verdicts.
fn ordered<X: Sink>(
    mut a: Analyzer<X>,
    rx: Receiver<(u64, Msg)>,
    back: SyncSender<(Batch, Found)>,
) -> (Statistics, X) {
    let mut waiting: BTreeMap<u64, Msg> = BTreeMap::new();
    let mut next = 0u64;
    for (seq, msg) in rx {
        waiting.insert(seq, msg);
        while let Some(msg) = waiting.remove(&next) {
            next += 1;
            match msg {
                Msg::Begin(name) => a.begin_file(&name),
                Msg::Frames(batch, pre) => analyze_batch(&mut a, (batch, pre), &back),
                Msg::End(end) => a.end_file(end.error, end.truncated_tail),
            }
        }
    }
    a.finish_parts()
}
