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
