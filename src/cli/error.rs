//! The command line's errors: the library's typed [`gpcap::Error`], or what only the
//! command line says (a flag that does not fit, a file or socket of its own that failed).

/// An error that ends a command (exit 2), said in words.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Lib(#[from] gpcap::Error),
    /// An argument that is out of range or does not fit the others.
    #[error("{0}")]
    Usage(String),
    /// Reading or writing a file, stream or socket of the command failed.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

impl Error {
    pub fn io(what: impl std::fmt::Display, source: std::io::Error) -> Self {
        Error::Io {
            what: what.to_string(),
            source,
        }
    }
}

impl From<gpcap::run::RunError> for Error {
    fn from(e: gpcap::run::RunError) -> Self {
        Error::Lib(e.into())
    }
}

impl From<gpcap::CaptureError> for Error {
    fn from(e: gpcap::CaptureError) -> Self {
        Error::Lib(e.into())
    }
}

impl From<Vec<gpcap::DefinitionError>> for Error {
    fn from(e: Vec<gpcap::DefinitionError>) -> Self {
        Error::Lib(e.into())
    }
}

impl From<gpcap::analysis::gates::GateError> for Error {
    fn from(e: gpcap::analysis::gates::GateError) -> Self {
        Error::Lib(e.into())
    }
}

#[cfg(feature = "export")]
impl From<gpcap::sinks::export::ExportError> for Error {
    fn from(e: gpcap::sinks::export::ExportError) -> Self {
        Error::Lib(e.into())
    }
}
