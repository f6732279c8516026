//! gpcap: a packet analyzer for the bitpacked UDP protocols of real-time games.
//!
//! Layers, each ignorant of the others' I/O: [`bits`] (the shared reader/writer) →
//! [`wire`] (CRC, header, fragments).

pub mod bits;
pub mod dissect;
pub mod wire;
