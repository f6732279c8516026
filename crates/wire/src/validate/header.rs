//! The reference packet header and fragment header (SPEC §1), parameterised by
//! [`HeaderFormat`] so a dissector definition can override every number.

use crate::bits::{BitResult, ReadStream, Stream, serialize_bits};
use serde::Serialize;

/// How the fragment count is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CountEncoding {
    /// The count itself (the article's published code); at most 255 fragments.
    #[default]
    Count,
    /// count - 1, so that 256 fits in 8 bits.
    CountMinusOne,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HeaderFormat {
    /// Packet types, including type 0 for fragments: the type is `int(0, num_types-1)`.
    pub num_types: u32,
    pub count_encoding: CountEncoding,
    /// Bytes of data in every fragment but the last.
    pub fragment_size: u32,
    pub max_fragments: u32,
    /// Packets larger than this are fragmented (the MTU budget).
    pub mtu_budget: u32,
}

impl Default for HeaderFormat {
    fn default() -> Self {
        HeaderFormat {
            num_types: 6,
            count_encoding: CountEncoding::Count,
            fragment_size: 1024,
            max_fragments: 256,
            mtu_budget: 1200,
        }
    }
}

/// Packet type 0 carries fragments.
pub const FRAGMENT_TYPE: u32 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Header {
    pub crc: u32,
    pub sequence: u16,
    pub packet_type: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct FragmentHeader {
    pub fragment_id: u32,
    pub num_fragments: u32,
}

pub fn serialize_header<S: Stream>(s: &mut S, h: &mut Header, fmt: &HeaderFormat) -> BitResult<()> {
    serialize_bits(s, &mut h.crc, 32)?;
    let mut seq = h.sequence as u32;
    serialize_bits(s, &mut seq, 16)?;
    h.sequence = seq as u16;
    let mut t = h.packet_type as i64;
    s.int(&mut t, 0, fmt.num_types.saturating_sub(1) as i64)?;
    h.packet_type = t as u32;
    Ok(())
}

/// Fragment id (8 bits), fragment count (8 bits, either encoding), then align.
pub fn serialize_fragment_header<S: Stream>(
    s: &mut S,
    f: &mut FragmentHeader,
    fmt: &HeaderFormat,
) -> BitResult<()> {
    serialize_bits(s, &mut f.fragment_id, 8)?;
    let mut raw = match fmt.count_encoding {
        CountEncoding::Count => f.num_fragments,
        CountEncoding::CountMinusOne => f.num_fragments.wrapping_sub(1) & 0xff,
    };
    serialize_bits(s, &mut raw, 8)?;
    f.num_fragments = match fmt.count_encoding {
        CountEncoding::Count => raw,
        CountEncoding::CountMinusOne => raw + 1,
    };
    s.align()
}

/// A datagram's header, and for fragments the fragment header and where its data starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DecodedHeader {
    pub header: Header,
    pub fragment: Option<FragmentHeader>,
    /// Byte offset of the body (fragment data for fragments).
    pub body_offset: usize,
    /// Bit offset where the body starts (for non-fragments, not byte aligned).
    pub body_bit: u64,
}

/// Reads the header (and fragment header for type 0) of one datagram. Inlined: once per
/// datagram, its result returned through memory was read back before it had landed.
#[inline]
pub fn read_header(data: &[u8], fmt: &HeaderFormat) -> BitResult<DecodedHeader> {
    let mut s = ReadStream::new(data);
    let mut header = Header::default();
    serialize_header(&mut s, &mut header, fmt)?;
    let mut fragment = None;
    if header.packet_type == FRAGMENT_TYPE {
        let mut f = FragmentHeader::default();
        serialize_fragment_header(&mut s, &mut f, fmt)?;
        fragment = Some(f);
    }
    let body_bit = s.bits_processed();
    Ok(DecodedHeader {
        header,
        fragment,
        body_offset: body_bit.div_ceil(8) as usize,
        body_bit,
    })
}
