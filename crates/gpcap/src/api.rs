//! The library's front door: load a definition, dissect a payload, run captures through
//! the engine into a sink of your own, analyze captures into a [`Report`]. The command
//! line is built on these same calls.

use crate::error::Error;
use crate::run::{FileOutcome, Mode};
use crate::sinks::analysis::Report;
use gpcap_dissect::{Dissection, Dissector, Program};
use gpcap_engine::{Config, Sink};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Compiles the definition (`dissectors/*.kdl`) at `path`. A definition that does not
/// compile is [`Error::Definition`], each mistake with its line and column.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).expect("the repository");
/// let program = gpcap::load_definition("dissectors/article.kdl")?;
/// assert!(program.type_name(0).is_some());
/// # Ok::<(), gpcap::Error>(())
/// ```
pub fn load_definition(path: impl AsRef<Path>) -> Result<Arc<Program>, Error> {
    Ok(Arc::new(gpcap_dissect::load(path.as_ref())?))
}

/// Compiles definition text; `name` names it in diagnostics.
///
/// ```
/// let err = gpcap::compile_definition("mine.kdl", "protocol {").unwrap_err();
/// assert!(matches!(err, gpcap::Error::Definition(ref e) if e[0].line == 1));
/// ```
pub fn compile_definition(name: &str, text: &str) -> Result<Arc<Program>, Error> {
    Ok(Arc::new(gpcap_dissect::compile(name, text)?))
}

/// Dissects one game payload (the UDP payload, header included) with `program`: every
/// field with its bit offset and width, or the fault that stopped it. For many
/// payloads keep a [`Dissector`] and call [`Dissector::dissect_into`], which reuses
/// its buffers.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).expect("the repository");
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
/// thread, packets in capture order), then calls [`Sink::finish`]. The engine does what
/// the sink declares it needs ([`Sink::needs`]: the field trees of game packets in
/// `PacketEvent::dissection`, say); the run ends early when the sink returns
/// [`Flow::Stop`](crate::Flow), and with the sink's error when it fails
/// ([`Error::Sink`]).
/// A capture that cannot be opened is an error; one that breaks midway keeps what was
/// read and says where it stopped in its [`FileOutcome`].
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).expect("the repository");
/// use gpcap::{Flow, PacketEvent, Sink, SinkError};
/// struct Count(u64);
/// impl Sink for Count {
///     fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
///         self.0 += e.is_game() as u64;
///         Ok(Flow::Continue)
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
    Ok(crate::run::run_files(captures, cfg, sink, &mut |_, _| {})?)
}

/// Analyzes `captures` as one trace into the report `gpcap analyze --json` prints, on
/// several cores (`threads`: the threads to run; None for one more than the cores, at
/// most 4; inputs of 8 MiB or less run on one core, see [`crate::run_threads`]). The same
/// figures on one core or many.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).expect("the repository");
/// let cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/article.kdl")?);
/// let report = gpcap::analyze(&["captures/article.pcap".into()], cfg, Some(1))?;
/// assert!(report.capture.frames > 0);
/// # Ok::<(), gpcap::Error>(())
/// ```
pub fn analyze(captures: &[PathBuf], cfg: Config, threads: Option<u32>) -> Result<Report, Error> {
    analyze_with_progress(captures, cfg, threads, &mut |_, _| {})
}

/// [`analyze`], reporting progress as (capture index, bytes read of it).
///
/// The run is chosen by [`Mode::choose`]: on several cores, a pipeline (decode and
/// validate on every core, one ordered stateful stage) unless the traffic spreads over
/// many address pairs, then shards. Small inputs run on one core.
pub fn analyze_with_progress(
    captures: &[PathBuf],
    cfg: Config,
    threads: Option<u32>,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<Report, Error> {
    let mode = Mode::choose(captures, &cfg, threads);
    Ok(crate::run::analyze(captures, cfg, mode, progress)?)
}
