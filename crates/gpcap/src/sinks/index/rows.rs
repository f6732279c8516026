//! The index's rows, packed: 28 bytes a row where [`Row`] takes 56, so that a 10M-frame
//! capture's index fits in under 300 MB. Rows are kept in chunks of [`CHUNK`]; each chunk
//! holds the frame, file offset and time of its first row, and its rows hold differences
//! from them in a few bits with the other columns. A row whose values do not fit (a
//! sequence past 32 bits, a gap of a second across a slow chunk, a clock stepping back)
//! is kept whole beside its chunk: nothing is rounded or lost. Full chunks are shared
//! (`Arc`) and never change, so a scan on other threads reads them without a copy.

use super::Row;
use std::sync::Arc;

/// Rows a chunk holds.
pub(crate) const CHUNK: usize = 1024;

/// One row in 7 words (see [`Packed::pack`] for the bits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Packed([u32; 7]);

const _: () = assert!(std::mem::size_of::<Packed>() == 28);

/// Bits of the packed differences and columns.
const TS_BITS: u32 = 40;
const FLOW_BITS: u32 = 24;
const OFFSET_BITS: u32 = 28;
const FRAME_BITS: u32 = 12;
const SIZE_BITS: u32 = 20;
const LINK_BITS: u32 = 4;
/// `NO_FLOW` packed.
const FLOW_NONE: u64 = (1 << FLOW_BITS) - 1;
/// The row is kept whole in `Chunk::wide`.
const WIDE: u32 = 1 << 31;

/// Rows sharing a first frame, offset and time.
#[derive(Debug, Clone, Default)]
pub struct Chunk {
    frame: u64,
    offset: u64,
    ts_ns: i64,
    /// Link types of the chunk's rows (a row holds its index here).
    links: [u16; (1 << LINK_BITS) - 1],
    link_count: u8,
    rows: Vec<Packed>,
    /// Rows that did not fit, by position in the chunk (ascending).
    wide: Vec<(u16, Row)>,
}

fn fits(v: u64, bits: u32) -> bool {
    v < 1 << bits
}

impl Chunk {
    fn new(first: &Row) -> Self {
        Chunk {
            frame: first.frame,
            offset: first.offset,
            ts_ns: first.ts_ns,
            rows: Vec::with_capacity(CHUNK),
            ..Chunk::default()
        }
    }

    fn link(&mut self, linktype: u16) -> Option<u32> {
        let known = &self.links[..self.link_count as usize];
        if let Some(i) = known.iter().position(|&l| l == linktype) {
            return Some(i as u32);
        }
        let i = self.link_count as usize;
        *self.links.get_mut(i)? = linktype;
        self.link_count += 1;
        Some(i as u32)
    }

    /// `r` in 28 bytes, or `None` when a value does not fit.
    fn pack(&mut self, r: &Row) -> Option<Packed> {
        let ts = u64::try_from(r.ts_ns.checked_sub(self.ts_ns)?).ok()?;
        let offset = r.offset.checked_sub(self.offset)?;
        let frame = r.frame.checked_sub(self.frame)?;
        let flow = match r.flow as u64 {
            _ if r.flow == super::NO_FLOW => FLOW_NONE,
            f if f < FLOW_NONE => f,
            _ => return None,
        };
        let seq = if r.seq == u64::MAX {
            u32::MAX
        } else {
            u32::try_from(r.seq).ok().filter(|&s| s != u32::MAX)?
        };
        let small = fits(ts, TS_BITS)
            && fits(offset, OFFSET_BITS)
            && fits(frame, FRAME_BITS)
            && fits(r.size as u64, SIZE_BITS)
            // Bit 31 of the last word marks a row kept whole: 7 bits of fragment count.
            && r.frag_count < 128
            && r.gap < 256
            && r.fault < 128
            && r.streams == 0;
        if !small {
            return None;
        }
        let link = self.link(r.linktype)?;
        let a = ts << FLOW_BITS | flow;
        let b = offset << (64 - OFFSET_BITS)
            | frame << (SIZE_BITS + LINK_BITS)
            | (r.size as u64) << LINK_BITS
            | link as u64;
        Some(Packed([
            a as u32,
            (a >> 32) as u32,
            b as u32,
            (b >> 32) as u32,
            seq,
            (r.ptype as u32) << 16 | r.status as u32,
            (r.frag_count as u32) << 24 | (r.frag_id as u32) << 16 | (r.gap << 8) | r.fault as u32,
        ]))
    }

    fn push(&mut self, r: &Row) {
        let packed = match self.pack(r) {
            Some(p) => p,
            None => {
                self.wide.push((self.rows.len() as u16, *r));
                let mut p = Packed::default();
                p.0[6] = WIDE;
                p
            }
        };
        self.rows.push(packed);
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row at `i` of the chunk.
    pub fn get(&self, i: usize) -> Option<Row> {
        let p = self.rows.get(i)?.0;
        if p[6] & WIDE != 0 {
            let at = self.wide.binary_search_by_key(&(i as u16), |w| w.0).ok()?;
            return Some(self.wide[at].1);
        }
        let a = p[0] as u64 | (p[1] as u64) << 32;
        let b = p[2] as u64 | (p[3] as u64) << 32;
        let mask = |bits: u32| (1u64 << bits) - 1;
        let flow = a & mask(FLOW_BITS);
        Some(Row {
            frame: self.frame + (b >> (SIZE_BITS + LINK_BITS) & mask(FRAME_BITS)),
            offset: self.offset + (b >> (64 - OFFSET_BITS)),
            ts_ns: self.ts_ns.wrapping_add((a >> FLOW_BITS) as i64),
            flow: if flow == FLOW_NONE {
                super::NO_FLOW
            } else {
                flow as u32
            },
            size: (b >> LINK_BITS & mask(SIZE_BITS)) as u32,
            seq: if p[4] == u32::MAX { u64::MAX } else { p[4] as u64 },
            ptype: (p[5] >> 16) as u16,
            frag_count: (p[6] >> 24) as u16,
            linktype: self.links[(b & mask(LINK_BITS)) as usize],
            status: p[5] as u16,
            frag_id: (p[6] >> 16) as u8,
            fault: (p[6] & 0x7f) as u8,
            gap: p[6] >> 8 & 0xff,
            streams: 0,
        })
    }

    /// Heap and inline bytes of the chunk.
    fn bytes(&self) -> usize {
        std::mem::size_of::<Chunk>()
            + self.rows.capacity() * std::mem::size_of::<Packed>()
            + self.wide.capacity() * std::mem::size_of::<(u16, Row)>()
    }
}

/// The rows of the index, in engine order (see the module's comment).
#[derive(Debug, Clone, Default)]
pub struct Rows {
    chunks: Vec<Arc<Chunk>>,
    len: usize,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> Option<Row> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn first(&self) -> Option<Row> {
        self.get(0)
    }

    pub fn last(&self) -> Option<Row> {
        self.get(self.len.checked_sub(1)?)
    }

    pub fn push(&mut self, r: Row) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Arc::new(Chunk::new(&r)));
        }
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).push(&r);
            self.len += 1;
        }
    }

    /// The rows in order.
    pub fn iter(&self) -> impl Iterator<Item = Row> + '_ {
        self.chunks
            .iter()
            .flat_map(|c| (0..c.len()).filter_map(move |i| c.get(i)))
    }

    /// The chunks in order: every one but the last holds `CHUNK` rows.
    pub fn chunks(&self) -> &[Arc<Chunk>] {
        &self.chunks
    }

    /// Bytes the rows take in memory.
    pub fn bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Arc<Chunk>>()
            + self.chunks.iter().map(|c| c.bytes() + 16).sum::<usize>()
    }
}

impl Extend<Row> for Rows {
    fn extend<I: IntoIterator<Item = Row>>(&mut self, rows: I) {
        for r in rows {
            self.push(r);
        }
    }
}

impl FromIterator<Row> for Rows {
    fn from_iter<I: IntoIterator<Item = Row>>(rows: I) -> Self {
        let mut all = Rows::default();
        all.extend(rows);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row() -> impl Strategy<Value = Row> {
        // Small and extreme values alike, so rows both pack and stay wide.
        let n = |max: u64| prop_oneof![0..16u64, 0..max, Just(max)];
        (
            (
                n(u64::MAX),
                n(u64::MAX),
                any::<i64>(),
                n(u32::MAX as u64),
                n(u32::MAX as u64),
            ),
            (
                n(u64::MAX),
                any::<u16>(),
                n(u16::MAX as u64),
                any::<u16>(),
                any::<u16>(),
            ),
            (
                any::<u8>(),
                n(255),
                n(u32::MAX as u64),
                prop_oneof![Just(0u8), 0..8u8],
            ),
        )
            .prop_map(
                |(
                    (frame, offset, ts_ns, flow, size),
                    (seq, ptype, fc, lt, st),
                    (fid, fault, gap, streams),
                )| Row {
                    frame,
                    offset,
                    ts_ns,
                    flow: flow as u32,
                    size: size as u32,
                    seq,
                    ptype,
                    frag_count: fc as u16,
                    linktype: lt,
                    status: st,
                    frag_id: fid,
                    fault: fault as u8,
                    gap: gap as u32,
                    streams,
                },
            )
    }

    /// Rows as a capture has them: frames, offsets and times rising by small steps.
    fn capture_rows() -> impl Strategy<Value = Vec<Row>> {
        proptest::collection::vec((0..3u64, 40..2000u64, 0..5_000_000i64, 0..300u32), 0..2100).prop_map(
            |steps| {
                let (mut frame, mut offset, mut ts) = (1u64, 24u64, 1_700_000_000_000_000_000i64);
                steps
                    .into_iter()
                    .map(|(df, doff, dts, flow)| {
                        frame += df;
                        offset += doff;
                        ts += dts;
                        Row {
                            frame,
                            offset,
                            ts_ns: ts,
                            flow,
                            size: doff as u32,
                            seq: frame * 3,
                            ptype: (flow % 7) as u16,
                            status: 32,
                            linktype: 1,
                            ..Row::default()
                        }
                    })
                    .collect()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn any_rows_read_back_as_pushed(rows in proptest::collection::vec(row(), 0..2100)) {
            let packed: Rows = rows.iter().copied().collect();
            prop_assert_eq!(packed.len(), rows.len());
            prop_assert_eq!(packed.iter().collect::<Vec<_>>(), rows.clone());
            for (i, r) in rows.iter().enumerate() {
                prop_assert_eq!(packed.get(i), Some(*r));
            }
            prop_assert_eq!(packed.get(rows.len()), None);
        }

        #[test]
        fn capture_rows_read_back_in_28_bytes(rows in capture_rows()) {
            let packed: Rows = rows.iter().copied().collect();
            prop_assert_eq!(packed.iter().collect::<Vec<_>>(), rows.clone());
            prop_assert!(packed.chunks().iter().all(|c| c.wide.is_empty()));
        }
    }

    /// Regression: a packet of 128 to 255 fragments packed its count into the bit that
    /// marks a row kept whole, and the row read back as missing.
    #[test]
    fn a_packet_of_128_fragments_reads_back() {
        for frag_count in [127u16, 128, 200, 255, 256] {
            let r = Row {
                frame: 7,
                offset: 100,
                ts_ns: 1_000,
                flow: 1,
                size: 1200,
                frag_count,
                ..Row::default()
            };
            let rows: Rows = [r].into_iter().collect();
            assert_eq!(rows.get(0), Some(r), "{frag_count} fragments");
        }
    }

    #[test]
    fn a_full_index_takes_under_32_bytes_a_row() {
        let rows: Rows = (0..100_000u64)
            .map(|i| Row {
                frame: i + 1,
                offset: 24 + i * 150,
                ts_ns: i as i64 * 50_000,
                flow: (i % 256) as u32,
                size: 120,
                seq: i / 256,
                status: 32,
                linktype: 1,
                ..Row::default()
            })
            .collect();
        assert!(
            rows.bytes() <= 32 * rows.len(),
            "{} bytes a row",
            rows.bytes() / rows.len()
        );
    }
}
