//! The library's front door: load a definition, dissect a payload, run captures through
//! the engine into a sink of your own, analyze captures into a [`Report`]. The command
//! line is built on these same calls.

use crate::Error;
use crate::analysis::{Report, Statistics};
use crate::dissect::{Dissection, Dissector, Program};
use crate::engine::{Config, Engine, FileOutcome, Sink};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Compiles the definition (`dissectors/*.kdl`) at `path`. A definition that does not
/// compile is [`Error::Definition`], each mistake with its line and column.
///
/// ```
/// let program = gpcap::load_definition("dissectors/article.kdl")?;
/// assert!(program.type_name(0).is_some());
/// # Ok::<(), gpcap::Error>(())
/// ```
pub fn load_definition(path: impl AsRef<Path>) -> Result<Arc<Program>, Error> {
    Ok(Arc::new(crate::dissect::load(path.as_ref())?))
}

/// Compiles definition text; `name` names it in diagnostics.
///
/// ```
/// let err = gpcap::compile_definition("mine.kdl", "protocol {").unwrap_err();
/// assert!(matches!(err, gpcap::Error::Definition(ref e) if e[0].line == 1));
/// ```
pub fn compile_definition(name: &str, text: &str) -> Result<Arc<Program>, Error> {
    Ok(Arc::new(crate::dissect::compile(name, text)?))
}

/// Dissects one game payload (the UDP payload, header included) with `program`: every
/// field with its bit offset and width, or the fault that stopped it. For many
/// payloads keep a [`Dissector`] and call [`Dissector::dissect_into`], which reuses
/// its buffers.
///
/// ```
/// let program = gpcap::load_definition("dissectors/article.kdl")?;
/// let d = gpcap::dissect_payload(&program, &[0u8; 3]);
/// // Three bytes cannot hold the article's header: the fault says where it stopped.
/// assert!(d.fault.is_some());
/// # Ok::<(), gpcap::Error>(())
/// ```
pub fn dissect_payload(program: &Arc<Program>, payload: &[u8]) -> Dissection {
    Dissector::new(program.clone()).dissect(payload)
}

/// Reads `captures` in order, as one trace, through the engine into `sink` (on this
/// thread, packets in capture order), then calls [`Sink::finish`]. With a definition in
/// `cfg` every game packet's field tree is in its event (`PacketEvent::dissection`).
/// A capture that cannot be opened is an error; one that breaks midway keeps what was
/// read and says where it stopped in its [`FileOutcome`].
///
/// ```
/// use gpcap::{PacketEvent, Sink};
/// struct Count(u64);
/// impl Sink for Count {
///     fn packet(&mut self, e: &PacketEvent<'_>) {
///         self.0 += e.is_game() as u64;
///     }
/// }
/// let cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/article.kdl")?);
/// let mut n = Count(0);
/// gpcap::run(&["captures/article.pcap".into()], cfg, &mut n)?;
/// assert!(n.0 > 0);
/// # Ok::<(), gpcap::Error>(())
/// ```
pub fn run<S: Sink + ?Sized>(
    captures: &[PathBuf],
    cfg: Config,
    sink: &mut S,
) -> Result<Vec<FileOutcome>, Error> {
    let record = cfg.program.is_some();
    Ok(crate::engine::run_files(
        captures,
        Engine::new(cfg, record),
        sink,
        &mut |_, _| {},
        &|_| false,
    )?)
}

/// Analyzes `captures` as one trace into the report `gpcap analyze --json` prints, on
/// every core (`threads`: shards to run, None for one per core). The same figures on one
/// core or many.
///
/// ```
/// let cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/article.kdl")?);
/// let report = gpcap::analyze(&["captures/article.pcap".into()], cfg, Some(1))?;
/// assert!(report.capture.frames > 0);
/// # Ok::<(), gpcap::Error>(())
/// ```
pub fn analyze(captures: &[PathBuf], cfg: Config, threads: Option<u32>) -> Result<Report, Error> {
    analyze_with_progress(captures, cfg, threads, &mut |_, _| {})
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

/// [`analyze`], reporting progress as (capture index, bytes read of it).
///
/// The run is chosen here, by the traffic's shape: on several cores, a pipeline (decode
/// and validate on every core, one ordered stateful stage) unless the traffic spreads
/// over many address pairs, then shards, each validating its own flows in cache (1 GB,
/// 6.6M frames, 2 cores: 128 clients 0.94 s sharded against 1.12 s, with -d 1.62 s
/// against 1.78 s; one client 0.83 s pipelined against 0.95 s). Small inputs run on
/// one core.
pub fn analyze_with_progress(
    captures: &[PathBuf],
    cfg: Config,
    threads: Option<u32>,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<Report, Error> {
    let shards = run_threads(captures, threads);
    let parallel = shards > 1;
    let spread = || {
        crate::engine::parallel::shardable(&cfg)
            && captures
                .first()
                .is_some_and(|p| crate::engine::parallel::busiest_shard_share(p, shards) < 0.75)
    };
    // A verdict crosses threads as a fixed-size value: a datagram's messages do not fit
    // one, so a protocol with messages is sharded (or read on one core) instead.
    let pipelinable = crate::engine::pipeline::pipelinable(&cfg);
    let report = if parallel && pipelinable && !spread() {
        crate::engine::pipeline::analyze_files(captures, cfg, shards, progress)?
    } else if parallel && crate::engine::parallel::shardable(&cfg) {
        crate::engine::parallel::analyze_files(captures, cfg, shards, progress)?
    } else {
        let mut stats = Statistics::new(cfg.clone());
        crate::engine::run_files(captures, Engine::new(cfg, false), &mut stats, progress, &|_| {
            false
        })?;
        stats.report()
    };
    Ok(report)
}
