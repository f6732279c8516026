//! gpcap: a packet analyzer for the bitpacked UDP protocols of real-time games.
//!
//! Layers, each ignorant of the others' I/O: [`bits`] (the shared reader/writer) →
//! [`wire`] (CRC, header, fragments).

pub mod analysis;
pub mod bits;
pub mod capture;
pub mod dissect;
pub mod filter;
pub mod generate;
pub mod identify;
#[cfg(feature = "live")]
pub mod live;
pub mod present;
pub mod session;
pub mod tui;
pub mod wire;
