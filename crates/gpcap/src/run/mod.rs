//! Runs: captures through the engine into sinks, on one core or many. This layer sits
//! above both the engine (which knows no sink of its own) and the sinks (which know no
//! thread), and chooses how to run:
//!
//! - **serial** ([`run_files`]): one engine and its sink on the caller's thread;
//! - **pipelined** ([`pipeline`]): workers decode and validate on every core, one
//!   ordered stage runs the engine's stateful part;
//! - **sharded** ([`sharded`]): frames routed by IP address pair to engines of their
//!   own, whose sinks are merged ([`Merge`]) into what one core counts.
//!
//! Every run reads its captures through one file loop ([`files::each_file`]).

pub mod bandwidth;
pub mod diff;
pub(crate) mod files;
mod peak;
pub(crate) mod pipeline;
pub mod points_truth;
pub mod scans;
pub mod seek;
mod session;
pub(crate) mod sharded;
pub mod truth;

pub use files::{FileOutcome, Progress, RunError, run_files, sample_ends, sample_files};
pub use session::Session;

use crate::sinks::analysis::{Analyzer, Report, Statistics};
use gpcap_engine::{Batch, Config, Found, Sink};
use gpcap_wire::capture::CaptureError;
use std::path::PathBuf;
use std::sync::mpsc::SyncSender;

/// A sink whose shards add up: each shard of a run saw a share of the flows (every
/// frame of a flow in one shard), and merging them gives what one core would have
/// counted. Sharded runs merge through it.
///
/// ```
/// use gpcap::{Flow, Merge, PacketEvent, Sink, SinkError};
/// /// Game packets and bytes: sums, so shards add up.
/// #[derive(Default)]
/// struct Volume { packets: u64, bytes: u64 }
/// impl Sink for Volume {
///     fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
///         if e.is_game() {
///             self.packets += 1;
///             self.bytes += e.size as u64;
///         }
///         Ok(Flow::Continue)
///     }
/// }
/// impl Merge for Volume {
///     fn merge(&mut self, o: Self) {
///         self.packets += o.packets;
///         self.bytes += o.bytes;
///     }
/// }
/// let mut a = Volume { packets: 2, bytes: 100 };
/// a.merge(Volume { packets: 1, bytes: 20 });
/// assert_eq!((a.packets, a.bytes), (3, 120));
/// ```
pub trait Merge {
    /// Adds `other`, a shard of the same run, to this one.
    fn merge(&mut self, other: Self);
}

/// How a run over some captures goes.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).expect("the repository");
/// use gpcap::run::{Mode, analyze};
/// let cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/article.kdl")?);
/// let captures = ["captures/article.pcap".into()];
/// // A small capture runs on one core, whatever was asked for.
/// assert_eq!(Mode::choose(&captures, &cfg, Some(4)), Mode::Serial);
/// // Any mode, chosen by hand, gives the same report.
/// let serial = analyze(&captures, cfg.clone(), Mode::Serial, &mut |_, _| {})?;
/// let sharded = analyze(&captures, cfg, Mode::Sharded(2), &mut |_, _| {})?;
/// assert_eq!(serde_json::to_value(&serial)?, serde_json::to_value(&sharded)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// On the caller's thread.
    Serial,
    /// Validation on this many workers, one ordered stage.
    Pipelined(usize),
    /// This many shards by IP address pair.
    Sharded(usize),
}

impl Mode {
    /// The run for `captures` with `threads` asked for (None: one per core and one
    /// more, up to 4), chosen by the traffic's shape: small inputs (8 MiB or less) on
    /// one core; a pipeline unless the traffic spreads over many address pairs, then
    /// shards, each validating its own flows in cache (1 GB, 6.6M frames, 2 cores:
    /// 128 clients 0.94 s sharded against 1.12 s, with -d 1.62 s against 1.78 s; one
    /// client 0.83 s pipelined against 0.95 s).
    pub fn choose(captures: &[PathBuf], cfg: &Config, threads: Option<u32>) -> Mode {
        let shards = run_threads(captures, threads);
        if shards <= 1 {
            return Mode::Serial;
        }
        let shardable = sharded::shardable(cfg);
        let spread = || {
            shardable
                && captures
                    .first()
                    .is_some_and(|p| sharded::busiest_shard_share(p, shards) < 0.75)
        };
        // A verdict crosses threads as a fixed-size value: a datagram's messages do not
        // fit one, so a protocol with messages is sharded (or read on one core) instead.
        if cfg.analyzable() && !spread() {
            Mode::Pipelined(shards)
        } else if shardable {
            Mode::Sharded(shards)
        } else {
            Mode::Serial
        }
    }
}

/// Threads a run over `captures` is worth (`threads` asked for, None for one per core and
/// one more, up to 4): 1 when there is one core or the input is small (8 MiB or less),
/// where starting threads costs more than it saves. `analyze`, `dissect` and `export`
/// choose by it.
pub fn run_threads(captures: &[PathBuf], threads: Option<u32>) -> usize {
    let total: u64 = captures
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let shards = threads.map_or((cores + 1).min(4), |t| t as usize);
    if shards > 1 && total > 8 << 20 { shards } else { 1 }
}

/// Whether validation can run apart from the ordered stage for `cfg` (see
/// [`Config::pipelinable`]).
pub fn pipelinable(cfg: &Config) -> bool {
    cfg.pipelinable()
}

/// Whether shards by address pair see every sequence space whole (see
/// [`sharded::shardable`]).
pub(crate) fn shardable(cfg: &Config) -> bool {
    sharded::shardable(cfg)
}

/// Analyzes `captures` into the report, run as `mode` says; the same report whatever
/// the mode.
pub fn analyze(
    captures: &[PathBuf],
    cfg: Config,
    mode: Mode,
    progress: Progress,
) -> Result<Report, RunError> {
    match mode {
        Mode::Pipelined(n) => Ok(pipeline::analyze_files(captures, cfg, n, progress)?),
        Mode::Sharded(n) => sharded::analyze_files(captures, cfg, n, progress),
        Mode::Serial => serial(captures, cfg, progress),
    }
}

/// The report on one core.
fn serial(captures: &[PathBuf], cfg: Config, progress: Progress) -> Result<Report, RunError> {
    let mut stats = Statistics::new(cfg.clone());
    run_files(captures, cfg, &mut stats, progress)?;
    Ok(stats.report())
}

pub use sharded::busiest_shard_share;
pub(crate) use sharded::{release_freed_memory, shard_files};

/// Runs a batch's frames through `a`'s stateful stage with what was found in them (the
/// pipeline's ordered stage), or whole when nothing was (shards), then sends its emptied
/// memory back to the reader.
fn analyze_batch<X: Sink>(
    a: &mut Analyzer<X>,
    (mut batch, mut found): (Batch, Found),
    back: &SyncSender<(Batch, Found)>,
) {
    if found.pre.is_empty() {
        for f in batch.frames() {
            a.frame(&f);
        }
    } else {
        for (f, p) in batch.frames().zip(found.pre.iter()) {
            a.frame_with(&f, p, (&found.joined, &found.plain));
        }
    }
    batch.clear();
    found.clear();
    let _ = back.try_send((batch, found));
}

/// A worker thread panicked: said as a capture error, in words.
fn thread_failed() -> CaptureError {
    CaptureError::at_start("", gpcap_wire::capture::CaptureErrorKind::ThreadFailed)
}

/// A sink whose run also stops when `stop` says so (a signal, a limit outside the sink).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).expect("the repository");
/// use std::sync::atomic::{AtomicBool, Ordering};
/// let cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/article.kdl")?);
/// let interrupted = AtomicBool::new(true);
/// let stop = || interrupted.load(Ordering::Relaxed);
/// let mut stats = gpcap::Statistics::new(cfg.clone());
/// let out = gpcap::run(&["captures/article.pcap".into()], cfg, &mut gpcap::run::Until::new(&mut stats, &stop))?;
/// assert_eq!(out[0].frames, 1, "stopped after the first frame");
/// # Ok::<(), gpcap::Error>(())
/// ```
pub struct Until<'a, S> {
    pub sink: S,
    stop: &'a dyn Fn() -> bool,
}

impl<'a, S: Sink> Until<'a, S> {
    pub fn new(sink: S, stop: &'a dyn Fn() -> bool) -> Self {
        Until { sink, stop }
    }
}

impl<S: Sink> Sink for Until<'_, S> {
    fn needs(&self) -> gpcap_engine::Needs {
        self.sink.needs()
    }
    fn begin_file(&mut self, file: u32, name: &str) {
        self.sink.begin_file(file, name)
    }
    #[inline]
    fn packet(
        &mut self,
        e: &gpcap_engine::PacketEvent<'_>,
    ) -> Result<gpcap_engine::Flow, gpcap_engine::SinkError> {
        Ok(self
            .sink
            .packet(e)?
            .and(gpcap_engine::Flow::stop_if((self.stop)())))
    }
    fn end_file(&mut self, file: u32, end: &gpcap_engine::FileEnd) {
        self.sink.end_file(file, end)
    }
    fn flow_end(&mut self, end: &gpcap_engine::FlowEnd) {
        self.sink.flow_end(end)
    }
    fn finish(&mut self, summary: &gpcap_engine::Summary) {
        self.sink.finish(summary)
    }
}
