//! Splitting a packet into game-level fragments (SPEC §1), the sender's side.

use super::crc::{ProtocolId, write_crc};
use super::header::{
    FRAGMENT_TYPE, FragmentHeader, Header, HeaderFormat, serialize_fragment_header, serialize_header,
};
use crate::bits::{BitError, BitResult, ErrorKind, Stream, WriteStream};

/// The fragments of `packet`, each a complete datagram with its own CRC.
pub fn write_fragments(
    id: ProtocolId,
    fmt: &HeaderFormat,
    sequence: u16,
    packet: &[u8],
) -> BitResult<Vec<Vec<u8>>> {
    let size = fmt.fragment_size.max(1) as usize;
    let count = packet.len().div_ceil(size).max(1);
    if count as u32 > fmt.max_fragments {
        return Err(BitError::new(
            ErrorKind::OutOfRange {
                value: count as i64,
                min: 1,
                max: fmt.max_fragments as i64,
            },
            0,
        ));
    }
    let mut out = Vec::with_capacity(count);
    for (i, chunk) in packet.chunks(size).enumerate() {
        let mut s = WriteStream::new();
        let mut h = Header {
            crc: 0,
            sequence,
            packet_type: FRAGMENT_TYPE,
        };
        serialize_header(&mut s, &mut h, fmt)?;
        let mut f = FragmentHeader {
            fragment_id: i as u32,
            num_fragments: count as u32,
        };
        serialize_fragment_header(&mut s, &mut f, fmt)?;
        s.bytes(&mut chunk.to_vec())?;
        let mut bytes = s.finish();
        write_crc(id, &mut bytes);
        out.push(bytes);
    }
    Ok(out)
}
