//! Errors that end a command, each saying what failed and where in words. Every variant
//! keeps the typed value it came from, so a program can tell them apart; `Display`
//! renders them for people.

use crate::capture::CaptureError;
use crate::dissect::DefinitionError;
use crate::filter::FilterError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A capture could not be opened or read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A definition did not compile: each mistake with its file, line and column.
    #[error("invalid definition\n{}", crate::dissect::render(.0, false))]
    Definition(Vec<DefinitionError>),
    /// Reading or writing a file or stream failed.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{option}: {error}")]
    Filter {
        option: &'static str,
        error: FilterError,
    },
    /// A Parquet dataset could not be written.
    #[cfg(feature = "export")]
    #[error(transparent)]
    Export(#[from] crate::sinks::export::ExportError),
    /// An argument that is out of range or does not fit the others.
    #[error("{0}")]
    Usage(String),
}

impl From<Vec<DefinitionError>> for Error {
    fn from(e: Vec<DefinitionError>) -> Self {
        Error::Definition(e)
    }
}

impl Error {
    pub fn io(what: impl std::fmt::Display, source: std::io::Error) -> Self {
        Error::Io {
            what: what.to_string(),
            source,
        }
    }
}
