//! Classic pcap records read straight out of one large buffer: a 16-byte record header,
//! one length check, the data borrowed in place. This is the format of nearly every
//! capture a game server writes, and the general pcap/pcapng parser cost as much per
//! frame as decoding the frame; pcapng and the rarer variants still go through it.

use std::io::BufRead;

/// The first read asks for this much; records larger than the buffer grow it, up to
/// `super::reader::MAX_BLOCK`.
const INITIAL: usize = 1 << 20;

/// The file header of a classic pcap file: byte order, timestamp unit and link type.
#[derive(Debug, Clone, Copy)]
pub struct LegacyHeader {
    pub big_endian: bool,
    pub nanoseconds: bool,
    pub linktype: i32,
    /// The most a record may capture: the file's snaplen, or 262,144 bytes when it says
    /// less (as libpcap reads files). A record claiming more is corrupt, not cut short.
    pub max_caplen: u32,
}

impl LegacyHeader {
    /// The 24-byte file header, when it is a classic pcap one (micro- or nanosecond, either
    /// byte order; the modified Kuznetzov format is left to the general parser).
    pub fn parse(h: &[u8]) -> Option<Self> {
        let head: [u8; 24] = h.get(..24)?.try_into().ok()?;
        let le = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let (big_endian, nanoseconds) = match le {
            0xa1b2_c3d4 => (false, false),
            0xa1b2_3c4d => (false, true),
            0xd4c3_b2a1 => (true, false),
            0x4d3c_b2a1 => (true, true),
            _ => return None,
        };
        let raw = [head[20], head[21], head[22], head[23]];
        let linktype = super::link_type(if big_endian {
            u32::from_be_bytes(raw)
        } else {
            u32::from_le_bytes(raw)
        });
        let raw = [head[16], head[17], head[18], head[19]];
        let snaplen = if big_endian {
            u32::from_be_bytes(raw)
        } else {
            u32::from_le_bytes(raw)
        };
        Some(LegacyHeader {
            big_endian,
            nanoseconds,
            linktype,
            max_caplen: snaplen.max(262_144),
        })
    }
}

/// One record, located in the reader's buffer.
pub struct Record {
    pub ts_sec: u32,
    pub ts_frac: u32,
    pub origlen: u32,
    pub start: usize,
    pub len: usize,
}

/// How reading stopped short of a record.
pub enum Stop {
    /// The stream ended between records.
    End,
    /// The stream ended inside a record: this many bytes of it were there.
    Cut(usize),
    /// A record longer than `max` bytes.
    TooLarge,
    /// A record header claiming more bytes than the file's snaplen allows: corrupt.
    Corrupt(u32),
    Read(std::io::Error),
}

pub struct LegacyReader {
    src: Box<dyn BufRead + Send>,
    pub header: LegacyHeader,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Stream bytes before `buf[start]`.
    consumed: u64,
    /// Bytes of the last record handed out, consumed on the next call.
    pending: usize,
    eof: bool,
}

impl LegacyReader {
    /// `src` is positioned right after the 24-byte file header.
    pub fn new(header: LegacyHeader, src: Box<dyn BufRead + Send>) -> Self {
        LegacyReader {
            src,
            header,
            buf: vec![0; INITIAL],
            start: 0,
            end: 0,
            consumed: 24,
            pending: 0,
            eof: false,
        }
    }

    /// Stream offset of the next record (of the current one, until the next call).
    pub fn offset(&self) -> u64 {
        self.consumed
    }

    #[inline]
    pub fn data(&self, start: usize, len: usize) -> &[u8] {
        &self.buf[start..start + len]
    }

    /// The record header at `start..end` as (seconds, fraction, captured, original length).
    #[inline(always)]
    fn record_header(&self) -> Option<[u32; 4]> {
        let h = self.buf.get(self.start..self.end)?.first_chunk::<16>()?;
        let mut v = [0u32; 4];
        for (x, w) in v.iter_mut().zip(h.chunks_exact(4)) {
            let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            *x = if self.header.big_endian { w.swap_bytes() } else { w };
        }
        Some(v)
    }

    /// The next record, or why there is none; records are never longer than `max` bytes.
    #[inline]
    pub fn next(&mut self, max: usize) -> Result<Record, Stop> {
        self.start += self.pending;
        self.consumed += self.pending as u64;
        self.pending = 0;
        loop {
            let avail = self.end - self.start;
            let mut need = 16;
            if let Some([ts_sec, ts_frac, caplen, origlen]) = self.record_header() {
                if caplen > self.header.max_caplen {
                    return Err(Stop::Corrupt(caplen));
                }
                let caplen = caplen as usize;
                need = 16 + caplen;
                if avail >= need {
                    self.pending = need;
                    return Ok(Record {
                        ts_sec,
                        ts_frac,
                        origlen,
                        start: self.start + 16,
                        len: caplen,
                    });
                }
            }
            if self.eof {
                return Err(if avail == 0 { Stop::End } else { Stop::Cut(avail) });
            }
            self.fill(need, max)?;
        }
    }

    /// Reads more: the unread bytes move to the front, and the buffer grows (to `max`)
    /// for a record larger than it.
    fn fill(&mut self, need: usize, max: usize) -> Result<(), Stop> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        // Doubling only once the buffer is full: a record header claiming a huge length
        // in a short file costs what the file holds, not the claim.
        if need > self.buf.len() && self.end == self.buf.len() {
            if self.buf.len() >= max {
                return Err(Stop::TooLarge);
            }
            self.buf.resize((self.buf.len() * 2).min(max), 0);
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Stop::Read(e)),
            }
        }
    }
}
