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
    /// A sink could not go on (its own error inside: an export whose write failed); the
    /// run stopped there.
    #[error(transparent)]
    Sink(#[from] gpcap_engine::SinkError),
    /// A `--fail-on` gate that does not parse.
    #[error(transparent)]
    Gate(#[from] crate::sinks::analysis::gates::GateError),
    /// A thread of the ordered `dissect` output panicked.
    #[error("dissect: a {0} thread failed")]
    ThreadFailed(Thread),
}

pub use crate::sinks::ordered::Thread;

impl From<crate::run::RunError> for Error {
    fn from(e: crate::run::RunError) -> Self {
        match e {
            crate::run::RunError::Capture(e) => Error::Capture(e),
            crate::run::RunError::Sink(e) => Error::Sink(e),
        }
    }
}

impl From<crate::sinks::ordered::PrintError> for Error {
    fn from(e: crate::sinks::ordered::PrintError) -> Self {
        use crate::sinks::ordered::PrintError;
        match e {
            PrintError::Output(e) => Error::Output(e),
            PrintError::Capture(e) => Error::Capture(e),
            PrintError::ThreadFailed(t) => Error::ThreadFailed(t),
        }
    }
}

impl From<Vec<DefinitionError>> for Error {
    fn from(e: Vec<DefinitionError>) -> Self {
        Error::Definition(e)
    }
}
