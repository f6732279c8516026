//! Errors that end a command, each saying what failed and where in words. Every variant
//! keeps the typed value it came from, so a program can tell them apart; `Display`
//! renders them for people.

use crate::filter::FilterError;
use gpcap_dissect::DefinitionError;
use gpcap_wire::capture::CaptureError;

/// New kinds of failure may be added; match with a `_` arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A capture could not be opened or read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A definition did not compile: each mistake with its file, line and column.
    #[error("invalid definition\n{}", gpcap_dissect::render(.0, false))]
    Definition(Vec<DefinitionError>),
    /// Writing the dissected output (stdout, or the writer given) failed; a closed pipe
    /// is `ErrorKind::BrokenPipe`.
    #[error("stdout: {0}")]
    Output(std::io::Error),
    /// A filter (`--filter`, `--where`, ...) that does not parse, with its column.
    #[error("{option}: {error}")]
    Filter {
        option: &'static str,
        error: FilterError,
    },
    /// A Parquet dataset could not be written (in every build: only `gpcap export`,
    /// with the `export` feature, makes one).
    #[error(transparent)]
    Export(#[from] crate::sinks::ExportError),
    /// A `--fail-on` gate that does not parse.
    #[error(transparent)]
    Gate(#[from] crate::sinks::analysis::gates::GateError),
    /// A thread of the ordered `dissect` output panicked.
    #[error("dissect: a {0} thread failed")]
    ThreadFailed(Thread),
}

/// Which thread of the ordered output failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Thread {
    /// The one that writes the formatted packets in order.
    Writer,
    /// One of those that format packets.
    Formatting,
}

impl std::fmt::Display for Thread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Thread::Writer => "writer",
            Thread::Formatting => "formatting",
        })
    }
}

impl From<Vec<DefinitionError>> for Error {
    fn from(e: Vec<DefinitionError>) -> Self {
        Error::Definition(e)
    }
}
