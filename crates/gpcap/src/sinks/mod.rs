//! Consumers of the engine's events: the statistics behind every report, the TUI's
//! packet index, the `dissect` printers and the capture writer.

pub mod analysis;
pub mod bandwidth;
pub mod diff;
#[cfg(feature = "export")]
pub mod export;
pub mod index;
pub mod ordered;
pub mod printer;
pub mod replay;
pub mod select;
pub(crate) mod writer;

/// Why an export failed: the file and what went wrong. Defined in every build, so that
/// the crate's `Error` has the same variants whatever the features.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot write {path}: {reason}")]
pub struct ExportError {
    pub path: String,
    pub reason: String,
}
