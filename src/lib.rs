//! gpcap: a packet analyzer for the bitpacked UDP protocols of real-time games.
//!
//! The pipeline, one module each, none of which prints:
//! [`capture`] (pcap/pcapng records) → [`decode`] (link/IP/UDP, IP defragmentation) →
//! [`validate`] (checksum, header, sequence numbers) → [`dissect`] (definitions run on the
//! shared [`bits`] reader) → [`engine`] (one event per frame and per reassembled packet)
//! → [`sinks`] (statistics and the report, the TUI's index, printers, writers) →
//! presentation ([`present`] text and JSON, [`tui`] with the `cli` feature).
//! [`generate`] writes traffic from a definition; [`identify`] recovers protocol ids.

pub mod bits;
pub mod capture;
pub mod decode;
pub mod dissect;
pub mod engine;
pub mod error;
pub mod filter;
pub mod generate;
pub mod identify;
pub mod live;
pub mod present;
pub mod sinks;
#[cfg(feature = "cli")]
pub mod tui;
pub mod validate;

pub use error::Error;
pub use sinks::analysis;
