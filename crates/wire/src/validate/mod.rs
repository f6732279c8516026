//! The reference packet format: magic-prefix CRC32, header, fragment header, sequences.

pub mod article;
pub(crate) mod crc;
pub mod declared;
pub(crate) mod fragment;
pub(crate) mod header;
mod refused;
pub(crate) mod seq;

pub use crc::{CrcSeed, CrcStatus, ProtocolId, packet_crc, stored_crc, verify_crc, write_crc};
pub use fragment::write_fragments;
pub use header::{
    CountEncoding, DecodedHeader, FRAGMENT_TYPE, FragmentHeader, Header, HeaderFormat, read_header,
    serialize_fragment_header, serialize_header,
};
pub use refused::AttackCounters;
pub use seq::{sequence_diff, sequence_greater_than, sequence_less_than};
