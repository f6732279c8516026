//! Analysis as a pipeline, for any traffic shape (one flow included): a reader copies
//! frames into batches, validation workers (decode, checksum, header and body — the
//! stateless part) compute each datagram's verdict on every core, and one analyzer
//! takes the batches back in order and runs only the stateful part (flows, sequences,
//! reassembly, IP defragmentation, statistics). The analyzer is the sequential one with
//! the verdicts handed in, so the report is the sequential report by construction.

use super::files::{Progress, Reading, each_file};
use super::{analyze_batch, thread_failed};
use crate::sinks::analysis::{Analyzer, Report, Statistics};
use gpcap_engine::join::Joiner;
use gpcap_engine::pool::{InOrder, OrderedPool};
use gpcap_engine::{Batch, Config, Engine, FileEnd, Found, Needs, Recycler, Sink, Validator, layers};
use gpcap_wire::capture::{CaptureError, Frame};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::SyncSender;

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
    // Sealed packets of a key log's connections open on the workers (the analyzer
    // records no field trees).
    let opener = layers::opener(&cfg, Needs::default()).map(Arc::new);
    let recycler = Recycler::<(Batch, Found)>::new(workers.max(1) * 4 + 4);
    let back = recycler.returner();
    let make = |_| validating(&cfg, opener.clone());
    // Bounded queues: memory stays a few batches whatever the capture's size.
    let mut pool = OrderedPool::new("gpcap-validate", workers, 2, make, move |msgs| {
        ordered(analyzer, msgs, back)
    });
    let mut reading = Reader {
        pool: &mut pool,
        recycler: &recycler,
        batch: None,
    };
    let read = each_file(paths, progress, &mut reading);
    let done = pool.finish();
    let report = done
        .ordered
        .filter(|_| !done.worker_died)
        .ok_or_else(thread_failed)?;
    read.map(|_| report)
}

/// A validation worker: each batch's verdicts (decode, checksum, header and body), the
/// datagrams IP fragments or a key log's connections join; the rest passed through.
fn validating(
    cfg: &Config,
    opener: Option<Arc<gpcap_decrypt::ahead::Opener>>,
) -> impl FnMut(Msg) -> Option<Msg> + Send + 'static {
    let mut v = Validator::new(cfg, false);
    let ports = cfg.port_set();
    let mut joiner = Joiner::default();
    // Joining pays for bodies to validate: without a definition a packet's verdict is a
    // checksum and a header, less than joining costs (one client, 1 GB: 0.67 s without
    // against 0.73 s with).
    let join = cfg.program.is_some();
    move |msg| {
        Some(match msg {
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
        })
    }
}

/// The reader's side: frames copied into batches, sent in reading order with the files'
/// beginnings and ends.
struct Reader<'a, R> {
    pool: &'a mut OrderedPool<Msg, R>,
    recycler: &'a Recycler<(Batch, Found)>,
    batch: Option<(Batch, Found)>,
}

impl<R: Send + 'static> Reader<'_, R> {
    fn send(&mut self, msg: Msg) {
        self.pool.send(msg);
    }
}

impl<R: Send + 'static> Reading for Reader<'_, R> {
    fn begin(&mut self, _file: usize, name: &str) {
        self.send(Msg::Begin(name.to_string()));
    }

    #[inline(always)]
    fn frame(&mut self, f: Frame) -> bool {
        let recycler = self.recycler;
        let batch = self
            .batch
            .get_or_insert_with(|| recycler.take(|| (Batch::new(), Found::default())));
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
    msgs: InOrder<Msg>,
    back: SyncSender<(Batch, Found)>,
) -> (Statistics, X) {
    for msg in msgs {
        match msg {
            Msg::Begin(name) => a.begin_file(&name),
            Msg::Frames(batch, pre) => analyze_batch(&mut a, (batch, pre), &back),
            Msg::End(end) => a.end_file(end.error, end.truncated_tail),
        }
    }
    a.finish_parts()
}
