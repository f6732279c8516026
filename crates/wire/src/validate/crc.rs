//! The magic-prefix CRC32 of SPEC §1: standard CRC-32 over the protocol id's little-endian
//! bytes followed by the packet with its 4-byte CRC field zeroed.

use serde::Serialize;
use std::fmt;

/// A protocol id, 32 bits by default; some games prefix 64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProtocolId {
    pub value: u64,
    /// Prefix width in bytes: 4 or 8.
    pub width: u8,
}

impl ProtocolId {
    pub const fn new32(value: u32) -> Self {
        ProtocolId {
            value: value as u64,
            width: 4,
        }
    }

    pub const fn new64(value: u64) -> Self {
        ProtocolId { value, width: 8 }
    }

    pub fn prefix(&self) -> ([u8; 8], usize) {
        (self.value.to_le_bytes(), self.width as usize)
    }

    /// Parses `0x55667788`, `55667788` or a decimal number; more than 8 hex digits makes
    /// a 64-bit id.
    pub fn parse(s: &str) -> Option<Self> {
        let t = s.trim();
        let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(h) => (h, 16),
            None => (t, 10),
        };
        let digits: String = digits.chars().filter(|c| *c != '_').collect();
        let v = u64::from_str_radix(&digits, radix).ok()?;
        let wide = if radix == 16 {
            digits.len() > 8
        } else {
            v > u32::MAX as u64
        };
        Some(if wide {
            ProtocolId::new64(v)
        } else {
            ProtocolId::new32(v as u32)
        })
    }
}

impl fmt::Display for ProtocolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.width == 8 {
            write!(f, "0x{:016X}", self.value)
        } else {
            write!(f, "0x{:08X}", self.value)
        }
    }
}

impl<'de> serde::Deserialize<'de> for ProtocolId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ProtocolId::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("bad protocol id {s}")))
    }
}

impl Serialize for ProtocolId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// The CRC a sender with `id` stores in `packet` (at least 4 bytes; `None` if shorter).
pub fn packet_crc(id: ProtocolId, packet: &[u8]) -> Option<u32> {
    CrcSeed::new(id).packet_crc(packet)
}

/// The CRC state after the protocol id and the zeroed CRC field: the same for every
/// packet of a protocol, so a validator computes it once. Most game datagrams are tens of
/// bytes, and hashing those 8 bytes anew was a third of the checksum's cost. The hasher
/// is kept whole and cloned per packet: building one detects the CPU's features again
/// (about 40 instructions a datagram).
#[derive(Clone)]
pub struct CrcSeed(crc32fast::Hasher);

impl CrcSeed {
    pub fn new(id: ProtocolId) -> Self {
        let (prefix, n) = id.prefix();
        let mut h = crc32fast::Hasher::new();
        h.update(&prefix[..n]);
        h.update(&[0u8; 4]);
        CrcSeed(crc32fast::Hasher::new_with_initial(h.finalize()))
    }

    /// The CRC a sender stores in `packet` (at least 4 bytes; `None` if shorter).
    #[inline]
    pub fn packet_crc(&self, packet: &[u8]) -> Option<u32> {
        let rest = packet.get(4..)?;
        let mut h = self.0.clone();
        h.update(rest);
        Some(h.finalize())
    }

    #[inline]
    pub fn verify(&self, packet: &[u8]) -> CrcStatus {
        match (stored_crc(packet), self.packet_crc(packet)) {
            (Some(stored), Some(computed)) if stored == computed => CrcStatus::Ok,
            (Some(stored), Some(computed)) => CrcStatus::Mismatch { stored, computed },
            _ => CrcStatus::TooShort { len: packet.len() },
        }
    }
}

/// The CRC stored in the first 4 bytes, little-endian.
pub fn stored_crc(packet: &[u8]) -> Option<u32> {
    packet.first_chunk::<4>().map(|b| u32::from_le_bytes(*b))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CrcStatus {
    Ok,
    Mismatch { stored: u32, computed: u32 },
    TooShort { len: usize },
}

pub fn verify_crc(id: ProtocolId, packet: &[u8]) -> CrcStatus {
    CrcSeed::new(id).verify(packet)
}

/// Computes and stores the CRC in place; false if the packet is shorter than 4 bytes.
pub fn write_crc(id: ProtocolId, packet: &mut [u8]) -> bool {
    match packet_crc(id, packet) {
        Some(c) => {
            packet[..4].copy_from_slice(&c.to_le_bytes());
            true
        }
        None => false,
    }
}
