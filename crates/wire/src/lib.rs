//! gpcap's wire floor: what a capture holds before any game protocol is known.
//!
//! [`bits`] (the shared bit reader and writer) → [`capture`] (pcap/pcapng records) →
//! [`decode`] (link/IP/UDP, IP defragmentation) → [`validate`] (checksum, header,
//! sequence numbers). Nothing here knows a definition, the engine or a report: the
//! crate boundary keeps every import pointing down.

pub mod bits;
pub mod capture;
pub mod decode;
pub mod validate;
