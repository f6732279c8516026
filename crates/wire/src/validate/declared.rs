//! Checksums as real protocols declare them: an algorithm over the whole datagram with
//! the checksum field's bytes replaced by zeros or by a value learnt earlier in the
//! conversation (ENet: the connection's connectID), optionally after the articles'
//! hidden protocol-id prefix.

use super::{CrcStatus, ProtocolId};
use serde::Serialize;

/// The checksum field's width: every declared algorithm is 32 bits.
pub const FIELD_BYTES: usize = 4;

/// Checks `payload` by `algorithm` (after the protocol id when `prefix`), the field at bit `at` holding `stored`; `stand_in`: the
/// bytes that stand in the field while computing (zeros when `None`).
pub fn verify(
    algorithm: ChecksumAlgorithm,
    prefix: bool,
    id: Option<ProtocolId>,
    payload: &[u8],
    at: u64,
    stored: u32,
    stand_in: Option<&[u8]>,
) -> CrcStatus {
    let start = (at / 8) as usize;
    let Some(after) = payload
        .get(start + FIELD_BYTES..)
        .filter(|_| at.is_multiple_of(8))
    else {
        return CrcStatus::TooShort { len: payload.len() };
    };
    let mut field = [0u8; FIELD_BYTES];
    if let Some(b) = stand_in {
        // A shorter value fills the field's first bytes; a longer one is cut.
        let n = b.len().min(FIELD_BYTES);
        field[..n].copy_from_slice(&b[..n]);
    }
    let (prefix, width) = id.filter(|_| prefix).map_or(([0u8; 8], 0), |i| i.prefix());
    let computed = algorithm.compute(&[&prefix[..width], &payload[..start], &field, after]);
    if computed == stored {
        CrcStatus::Ok
    } else {
        CrcStatus::Mismatch { stored, computed }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChecksumAlgorithm {
    Crc32,
    Crc32c,
    Adler32,
}

impl ChecksumAlgorithm {
    /// The checksum of `parts` one after another.
    pub fn compute(self, parts: &[&[u8]]) -> u32 {
        match self {
            ChecksumAlgorithm::Crc32 => {
                let mut h = crc32fast::Hasher::new();
                parts.iter().for_each(|p| h.update(p));
                h.finalize()
            }
            ChecksumAlgorithm::Crc32c => parts.iter().fold(0, |c, p| crc32c::crc32c_append(c, p)),
            ChecksumAlgorithm::Adler32 => {
                let mut a = adler2::Adler32::new();
                parts.iter().for_each(|p| a.write_slice(p));
                a.checksum()
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "crc32",
            ChecksumAlgorithm::Crc32c => "crc32c",
            ChecksumAlgorithm::Adler32 => "adler32",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_is_replaced_where_it_lies() {
        let mut d = vec![0x8f, 0xff, 0, 0, 0, 0, 0x82, 0xff, 0x00, 0x01];
        let c = crc32fast::hash(&d);
        d[2..6].copy_from_slice(&c.to_be_bytes());
        let r = ChecksumAlgorithm::Crc32;
        assert_eq!(verify(r, false, None, &d, 16, c, None), CrcStatus::Ok);
        let key = [1, 2, 3, 4];
        let mut e = d.clone();
        e[2..6].copy_from_slice(&key);
        let c2 = crc32fast::hash(&e);
        assert_eq!(verify(r, false, None, &d, 16, c2, Some(&key)), CrcStatus::Ok);
        assert!(matches!(
            verify(r, false, None, &d, 16, c2, None),
            CrcStatus::Mismatch { .. }
        ));
        assert_eq!(
            verify(r, false, None, &d[..5], 16, c, None),
            CrcStatus::TooShort { len: 5 }
        );
    }

    #[test]
    fn crc32c_and_adler32_are_the_known_ones() {
        // RFC 3720's check value for "123456789", and Adler-32 of "Wikipedia".
        assert_eq!(
            ChecksumAlgorithm::Crc32c.compute(&[b"1234", b"56789"]),
            0xe306_9283
        );
        assert_eq!(
            ChecksumAlgorithm::Adler32.compute(&[b"Wiki", b"pedia"]),
            0x11e6_0398
        );
        assert_eq!(ChecksumAlgorithm::Crc32.compute(&[b"123456789"]), 0xcbf4_3926);
    }
}
