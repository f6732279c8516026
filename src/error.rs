//! Errors that end a command, each saying what failed and where in words.

use crate::capture::CaptureError;
use crate::filter::FilterError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A capture could not be opened or read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A definition did not compile; `rendered` holds the located diagnostics.
    #[error("invalid definition\n{rendered}")]
    Definition { rendered: String },
    /// Reading or writing a file or stream failed.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{option}: {error}")]
    Filter {
        option: &'static str,
        error: FilterError,
    },
    /// An argument that is out of range or does not fit the others.
    #[error("{0}")]
    Usage(String),
}

impl Error {
    pub fn io(what: impl std::fmt::Display, source: std::io::Error) -> Self {
        Error::Io {
            what: what.to_string(),
            source,
        }
    }
}
