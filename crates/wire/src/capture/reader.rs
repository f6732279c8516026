//! Streaming pcap/pcapng reading (pcap-parser) with bounded memory, transparent gzip,
//! per-interface link types and timestamp resolutions, and a truncated last record
//! reported rather than fatal.

use super::error::{
    BlockLength, CaptureError, CaptureErrorKind as Kind, IoOp, Malformed, NotACapture, Refill, Truncation,
};
use super::legacy::{LegacyHeader, LegacyReader, Record, Stop};
use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{PcapBlockOwned, PcapError, create_reader};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

/// One captured frame, borrowed from the reader's buffer until the next call.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// 1-based, as tshark numbers frames.
    pub number: u64,
    /// Nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    pub linktype: i32,
    pub interface: u32,
    /// Bytes on the wire; more than `data.len()` when the snaplen cut the frame.
    pub origlen: u32,
    /// Where the record starts in the (decompressed) file, for reading it again.
    pub offset: u64,
    pub data: &'a [u8],
}

impl Frame<'_> {
    pub fn snaplen_truncated(&self) -> bool {
        (self.origlen as usize) > self.data.len()
    }
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    linktype: i32,
    /// Timestamp units per second: 10^n, or 2^n when `binary` (pcapng `if_tsresol`).
    resolution: Resolution,
    offset_s: i64,
}

/// A timestamp resolution: `units / 10^decimal` seconds, or `units / 2^binary` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolution {
    Decimal(u32),
    Binary(u32),
}

impl Resolution {
    /// pcapng `if_tsresol`: the high bit says a power of two, the rest the exponent.
    fn from_tsresol(v: u8) -> Self {
        if v & 0x80 != 0 {
            Resolution::Binary((v & 0x7f) as u32)
        } else {
            Resolution::Decimal(v as u32)
        }
    }

    /// Nanoseconds of `units`, saturated to what an i64 holds (years past 2262 stay at
    /// its end rather than wrapping negative).
    #[inline]
    fn nanos(self, units: u64) -> i64 {
        let ns = match self {
            // Micro- and nanoseconds, the usual cases: a multiplication.
            Resolution::Decimal(n) if n <= 9 => units as u128 * 10u128.pow(9 - n),
            Resolution::Decimal(n) if n <= 38 => units as u128 / 10u128.pow(n - 9),
            Resolution::Decimal(_) => 0,
            Resolution::Binary(n) if n < 128 => (units as u128 * 1_000_000_000) >> n,
            Resolution::Binary(_) => 0,
        };
        i64::try_from(ns).unwrap_or(i64::MAX)
    }
}

/// Names shown for files that stand for something else: a stream (`-`, a FIFO) read
/// once into a temporary file is named as the user gave it, in errors and reports.
static SHOWN: std::sync::Mutex<Vec<(std::path::PathBuf, String)>> = std::sync::Mutex::new(Vec::new());

/// From now on, `path` is shown as `name`.
pub fn show_as(path: &Path, name: &str) {
    if let Ok(mut v) = SHOWN.lock() {
        v.push((path.to_path_buf(), name.to_string()));
    }
}

/// How `path` is named to people: as given, or as [`show_as`] said.
pub fn shown(path: &Path) -> String {
    SHOWN
        .lock()
        .ok()
        .and_then(|v| v.iter().find(|(p, _)| p == path).map(|(_, n)| n.clone()))
        .unwrap_or_else(|| path.display().to_string())
}

/// The first block of a file may need this much; blocks up to `MAX_BLOCK` grow it.
const INITIAL_BUFFER: usize = 1 << 20;
const MAX_BLOCK: usize = 256 << 20;

pub struct CaptureReader {
    name: String,
    /// Classic pcap, read by the fast path; everything else by pcap-parser (`inner`).
    fast: Option<LegacyReader>,
    inner: Option<Box<dyn PcapReaderIterator + Send>>,
    capacity: usize,
    pending: usize,
    frames: u64,
    legacy: Option<Interface>,
    interfaces: Vec<Interface>,
    /// Byte order of the current pcapng section (None for classic pcap).
    ng_big_endian: Option<bool>,
    /// Set when the file ended inside a record (kept apart from errors: the frames read
    /// so far are good).
    pub truncated_tail: Option<CaptureError>,
    /// Blocks skipped because they could not be parsed (pcapng only; reading goes on).
    pub done: bool,
    /// Set when a gzip stream was cut short.
    gzip_cut: Option<Cut>,
    /// The error that stopped the fast path's file loop ([`CaptureReader::take_error`]).
    pub stopped: Option<CaptureError>,
    /// The last frame's time: a pcapng Simple Packet Block has none and carries it (time
    /// 0 made a capture last 53 years).
    last_ts: i64,
}

/// A Simple Packet Block's time until the reader gives it the last frame's.
const UNTIMED: i64 = i64::MIN;

/// A gzip stream that is cut short ends like a cut file: its decoder's unexpected end
/// becomes the end of the data, and `cut` remembers it.
struct CutGzip<R> {
    inner: flate2::read::MultiGzDecoder<R>,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<R: BufRead> Read for CutGzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                self.cut.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok(0)
            }
            other => other,
        }
    }
}

type Cut = std::sync::Arc<std::sync::atomic::AtomicBool>;

pub(super) fn gzip_or_plain(
    r: impl Read + Send + 'static,
) -> std::io::Result<(Box<dyn BufRead + Send>, Option<Cut>)> {
    let mut br = BufReader::with_capacity(1 << 16, r);
    let gz = br.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    if gz {
        let cut = Cut::default();
        let inner = CutGzip {
            inner: flate2::read::MultiGzDecoder::new(br),
            cut: cut.clone(),
        };
        Ok((Box::new(BufReader::with_capacity(1 << 16, inner)), Some(cut)))
    } else {
        Ok((Box::new(br), None))
    }
}

impl CaptureReader {
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        Self::open_with(path, true)
    }

    fn open_with(path: &Path, fast: bool) -> Result<Self, CaptureError> {
        let name = shown(path);
        let f = File::open(path).map_err(|e| CaptureError::at_start(&name, Kind::io(IoOp::Open, e)))?;
        Self::from_read_with(&name, f, fast)
    }

    fn empty(name: &str, gzip_cut: Option<Cut>) -> Self {
        CaptureReader {
            name: name.to_string(),
            fast: None,
            inner: None,
            capacity: INITIAL_BUFFER,
            pending: 0,
            frames: 0,
            legacy: None,
            interfaces: Vec::new(),
            ng_big_endian: None,
            truncated_tail: None,
            done: false,
            gzip_cut,
            stopped: None,
            last_ts: 0,
        }
    }

    /// Reads a capture from any byte stream (gzip detected by its magic).
    pub fn from_read(name: &str, r: impl Read + Send + 'static) -> Result<Self, CaptureError> {
        Self::from_read_with(name, r, true)
    }

    /// Reads with the general pcap/pcapng parser even for classic pcap: what the fast
    /// path is tested against.
    #[doc(hidden)]
    pub fn open_general(path: &Path) -> Result<Self, CaptureError> {
        Self::open_with(path, false)
    }

    fn from_read_with(name: &str, r: impl Read + Send + 'static, fast: bool) -> Result<Self, CaptureError> {
        let err = |kind: Kind| CaptureError::at_start(name, kind);
        let (mut r, gzip_cut) = gzip_or_plain(r).map_err(|e| err(Kind::io(IoOp::Read, e)))?;
        // Peeked, not consumed: anything but classic pcap goes to the general parser whole.
        let head = r.fill_buf().map_err(|e| err(Kind::io(IoOp::Read, e)))?;
        let legacy = LegacyHeader::parse(head).filter(|_| fast);
        let mut reader = Self::empty(name, gzip_cut);
        if let Some(h) = legacy {
            r.consume(24);
            reader.fast = Some(LegacyReader::new(h, r));
            return Ok(reader);
        }
        let inner = create_reader(INITIAL_BUFFER, r).map_err(|e| {
            err(Kind::NotACapture(match e {
                PcapError::HeaderNotRecognized => NotACapture::UnknownMagic,
                PcapError::Eof | PcapError::UnexpectedEof | PcapError::Incomplete(_) => NotACapture::TooShort,
                PcapError::ReadError => NotACapture::ReadFailed,
                PcapError::BufferTooSmall => NotACapture::TooLarge,
                PcapError::NomError(..) | PcapError::OwnedNomError(..) => NotACapture::Malformed,
            }))
        })?;
        reader.inner = Some(inner);
        Ok(reader)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes consumed from the (decompressed) stream so far.
    pub fn offset(&self) -> u64 {
        match (&self.fast, &self.inner) {
            (Some(f), _) => f.offset(),
            (None, Some(i)) => i.consumed() as u64,
            (None, None) => 0,
        }
    }

    /// The link type of every frame, known from the header alone (classic pcap); a
    /// pcapng stream tells it with its first interface block.
    pub fn linktype_hint(&self) -> Option<i32> {
        self.fast.as_ref().map(|f| f.header.linktype)
    }

    pub fn frames_read(&self) -> u64 {
        self.frames
    }

    fn error(&self, kind: impl Into<Kind>) -> CaptureError {
        self.error_at(self.offset(), kind)
    }

    fn error_at(&self, offset: u64, kind: impl Into<Kind>) -> CaptureError {
        CaptureError {
            file: self.name.clone(),
            offset,
            frame: self.frames,
            kind: kind.into(),
        }
    }

    /// The fast path's next frame (classic pcap).
    #[inline(always)]
    fn next_fast(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        let Some(next) = self.fast.as_mut().map(|f| f.next(MAX_BLOCK)) else {
            return Ok(None);
        };
        match next {
            Ok(rec) => Ok(self.fast_frame(rec)),
            Err(stop) => self.fast_stopped(stop).map_or(Ok(None), Err),
        }
    }

    /// The frame of a record the fast path read.
    #[inline(always)]
    fn fast_frame(&mut self, rec: Record) -> Option<Frame<'_>> {
        let fast = self.fast.as_ref()?;
        self.frames += 1;
        let h = fast.header;
        let frac = if h.nanoseconds {
            rec.ts_frac as i64
        } else {
            rec.ts_frac as i64 * 1000
        };
        Some(Frame {
            number: self.frames,
            ts_ns: rec.ts_sec as i64 * 1_000_000_000 + frac,
            linktype: h.linktype,
            interface: 0,
            origlen: rec.origlen.max(rec.len as u32),
            offset: fast.offset(),
            data: fast.data(rec.start, rec.len),
        })
    }

    /// Whether frames come from the fast path (classic pcap): [`CaptureReader::next_fast_frame`].
    pub fn is_fast(&self) -> bool {
        self.fast.is_some()
    }

    /// The file loop's next frame on the fast path: None at the end, or when reading
    /// stopped on an error ([`CaptureReader::take_error`]). Only a frame comes back, in
    /// registers: a result that could also be the general path's frame, returned out of
    /// line through memory, was read back before its stores had landed (a
    /// store-forwarding stall, 40% of the serial loop outside the engine).
    #[inline(always)]
    pub fn next_fast_frame(&mut self) -> Option<Frame<'_>> {
        if self.done {
            return None;
        }
        let next = self.fast.as_mut().map(|f| f.next(MAX_BLOCK))?;
        match next {
            Ok(rec) => self.fast_frame(rec),
            Err(stop) => {
                self.stopped = self.fast_stopped(stop);
                None
            }
        }
    }

    /// The error that ended [`CaptureReader::next_fast_frame`], if one did.
    pub fn take_error(&mut self) -> Option<CaptureError> {
        self.stopped.take()
    }

    /// Why the fast path stopped, said as the general path says it (rare: out of line).
    #[cold]
    #[inline(never)]
    fn fast_stopped(&mut self, stop: Stop) -> Option<CaptureError> {
        self.done = true;
        let gzip_cut = self.gzip_cut.as_ref().is_some_and(|c| c.load(Relaxed));
        match stop {
            Stop::End | Stop::Cut(_) if gzip_cut => {
                self.truncated_tail = Some(self.error(Truncation::GzipCut));
                None
            }
            Stop::End => None,
            Stop::Cut(left) => {
                self.truncated_tail = Some(self.error(Truncation::LastRecord { bytes: left }));
                None
            }
            Stop::TooLarge => Some(self.error(Malformed::TooLarge {
                max_mib: MAX_BLOCK >> 20,
            })),
            Stop::Corrupt(caplen) => Some(self.error(Malformed::CorruptHeader {
                caplen,
                frames_before: self.frames,
            })),
            Stop::Read(e) => Some(self.error(Kind::io(IoOp::ReadRecord, e))),
        }
    }

    /// The next frame, `Ok(None)` at the end (see `truncated_tail`), or an error that
    /// ends reading (the frames before it stay valid).
    ///
    /// Inlined, so that the frame reaches its consumer in registers: returned through
    /// memory it was read back before its stores had landed (a store-forwarding stall
    /// that cost as much as reading the file).
    #[inline]
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        if self.fast.is_some() {
            return self.next_fast();
        }
        self.next_general()
    }

    /// Every format but classic pcap, through pcap-parser.
    #[inline(never)]
    fn next_general(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        let Some(mut inner) = self.inner.take() else {
            return Ok(None);
        };
        let r = self.next_parsed(&mut inner);
        // The frame borrows the buffer: put the parser back, then lend it again.
        self.inner = Some(inner);
        match r {
            Ok(Some((start, len, meta))) => {
                let data = self
                    .inner
                    .as_ref()
                    .and_then(|i| i.data().get(start..start.saturating_add(len)));
                match data {
                    Some(data) => Ok(Some(Frame { data, ..meta })),
                    None => {
                        self.done = true;
                        Err(self.error(Malformed::OutsideBuffer))
                    }
                }
            }
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The next frame pcap-parser reads (pcapng, and pcap where the fast path does not
    /// go): its place in the parser's buffer and the frame without its bytes. A step at a
    /// time: what the parser gave ([`CaptureReader::block_step`],
    /// [`CaptureReader::error_step`]), then done with ([`CaptureReader::take_step`]).
    fn next_parsed(
        &mut self,
        inner: &mut Box<dyn PcapReaderIterator + Send>,
    ) -> Result<Option<(usize, usize, Frame<'static>)>, CaptureError> {
        if self.pending > 0 {
            inner.consume(self.pending);
            self.pending = 0;
        }
        if self.done {
            return Ok(None);
        }
        loop {
            let base = inner.data().as_ptr() as usize;
            let step = match inner.next() {
                Ok((consumed, block)) => self.block_step(consumed, block, base),
                Err(e) => {
                    let e = Parse::of(&e);
                    self.error_step(e, inner)
                }
            };
            if let Some(done) = self.take_step(step, inner) {
                return done;
            }
        }
    }

    /// What a block read is: a frame (where its bytes are, from `base`, the start of the
    /// parser's buffer), a header or section to learn from and skip, or a frame of an
    /// interface never described.
    fn block_step(&mut self, consumed: usize, block: PcapBlockOwned<'_>, base: usize) -> Step {
        let locate = |data: &[u8]| (data.as_ptr() as usize).wrapping_sub(base);
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                let digits = if h.is_nanosecond_precision() { 9 } else { 6 };
                self.legacy = Some(Interface {
                    linktype: super::link_type(h.network.0 as u32),
                    resolution: Resolution::Decimal(digits),
                    offset_s: 0,
                });
                Step::Skip(consumed)
            }
            PcapBlockOwned::Legacy(b) => {
                let i = self.legacy.unwrap_or(Interface {
                    linktype: 1,
                    resolution: Resolution::Decimal(6),
                    offset_s: 0,
                });
                let frac = i.resolution.nanos(b.ts_usec as u64);
                Step::Frame(Located {
                    consumed,
                    start: locate(b.data),
                    len: b.data.len(),
                    ts_ns: b.ts_sec as i64 * 1_000_000_000 + frac,
                    linktype: i.linktype,
                    interface: 0,
                    origlen: b.origlen,
                })
            }
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                self.ng_big_endian = Some(shb.big_endian());
                self.interfaces.clear();
                Step::Skip(consumed)
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                self.interfaces.push(Interface {
                    linktype: idb.linktype.0,
                    resolution: Resolution::from_tsresol(idb.if_tsresol),
                    offset_s: idb.ts_offset(),
                });
                Step::Skip(consumed)
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                self.enhanced_step(consumed, &epb, locate(epb.data))
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => match self.interfaces.first().copied() {
                None => Step::Fail(Malformed::SimpleBeforeInterface.into()),
                Some(i) => Step::Frame(Located {
                    consumed,
                    start: locate(spb.data),
                    len: spb.data.len().min(spb.origlen as usize),
                    ts_ns: UNTIMED,
                    linktype: i.linktype,
                    interface: 0,
                    origlen: spb.origlen,
                }),
            },
            PcapBlockOwned::NG(_) => Step::Skip(consumed),
        }
    }

    /// An enhanced packet block (its bytes at `start`): a frame of the interface it
    /// names, timed in that interface's resolution and offset.
    fn enhanced_step(&self, consumed: usize, epb: &pcap_parser::EnhancedPacketBlock, start: usize) -> Step {
        let Some(i) = self.interfaces.get(epb.if_id as usize).copied() else {
            return Step::Fail(
                Malformed::UnknownInterface {
                    id: epb.if_id,
                    described: self.interfaces.len(),
                }
                .into(),
            );
        };
        let units = (epb.ts_high as u64) << 32 | epb.ts_low as u64;
        let ns = i.resolution.nanos(units);
        Step::Frame(Located {
            consumed,
            start,
            len: (epb.caplen as usize).min(epb.data.len()),
            ts_ns: ns.saturating_add(i.offset_s.saturating_mul(1_000_000_000)),
            linktype: i.linktype,
            interface: epb.if_id,
            origlen: epb.origlen,
        })
    }

    /// What the parser's error means here: more to read (a refill), the end (with a
    /// last record cut short, or a bad block length, said), or a capture that does not
    /// parse.
    fn error_step(&mut self, e: Parse, inner: &mut Box<dyn PcapReaderIterator + Send>) -> Step {
        match e {
            Parse::Eof => Step::End,
            Parse::Incomplete if inner.reader_exhausted() => {
                let rest = inner.data();
                let left = rest.len();
                if let Some(problem) = self.ng_big_endian.and_then(|be| bad_block_length(rest, be)) {
                    return Step::Fail(Malformed::BlockLength(problem).into());
                }
                if left > 0 {
                    self.truncated_tail =
                        Some(self.error_at(inner.consumed() as u64, Truncation::LastRecord { bytes: left }));
                }
                Step::End
            }
            Parse::Incomplete | Parse::BufferTooSmall => Step::Refill,
            Parse::Nom => Step::Fail(
                self.ng_big_endian
                    .and_then(|be| bad_block_length(inner.data(), be))
                    .map_or(Malformed::Record.into(), |b| Malformed::BlockLength(b).into()),
            ),
            Parse::Read => Step::Fail(Malformed::ReadFailed.into()),
            Parse::UnknownHeader => Step::Fail(Malformed::UnknownSection.into()),
        }
    }

    /// Does what `step` says: the frame to hand out, the end, or an error (`Some`), or
    /// a block skipped or the buffer refilled (None: read on).
    #[allow(clippy::type_complexity)]
    fn take_step(
        &mut self,
        step: Step,
        inner: &mut Box<dyn PcapReaderIterator + Send>,
    ) -> Option<Result<Option<(usize, usize, Frame<'static>)>, CaptureError>> {
        match step {
            Step::Frame(at) => {
                self.pending = at.consumed;
                self.frames += 1;
                if at.ts_ns != UNTIMED {
                    self.last_ts = at.ts_ns;
                }
                let frame = Frame {
                    number: self.frames,
                    ts_ns: self.last_ts,
                    linktype: at.linktype,
                    interface: at.interface,
                    origlen: at.origlen.max(at.len as u32),
                    offset: inner.consumed() as u64,
                    data: &[],
                };
                Some(Ok(Some((at.start, at.len, frame))))
            }
            Step::Skip(n) => {
                inner.consume(n);
                None
            }
            Step::Refill => self.refill(inner).err().map(Err),
            Step::End => {
                self.done = true;
                let cut = self.gzip_cut.as_ref().is_some_and(|c| c.load(Relaxed));
                if self.truncated_tail.is_none() && cut {
                    self.truncated_tail = Some(self.error_at(inner.consumed() as u64, Truncation::GzipCut));
                }
                Some(Ok(None))
            }
            Step::Fail(m) => {
                self.done = true;
                Some(Err(self.error_at(inner.consumed() as u64, m)))
            }
        }
    }

    /// More of the capture into the parser's buffer, grown first (up to [`MAX_BLOCK`])
    /// when a block does not fit in it.
    fn refill(&mut self, inner: &mut Box<dyn PcapReaderIterator + Send>) -> Result<(), CaptureError> {
        let full = inner.position() == 0 && inner.data().len() >= self.capacity / 2;
        if full {
            if self.capacity >= MAX_BLOCK {
                self.done = true;
                let max_mib = MAX_BLOCK >> 20;
                return Err(self.error_at(inner.consumed() as u64, Malformed::TooLarge { max_mib }));
            }
            self.capacity *= 2;
            inner.grow(self.capacity);
        }
        if let Err(e) = inner.refill() {
            self.done = true;
            let m = Malformed::Refill(parser_error(&e));
            return Err(self.error_at(inner.consumed() as u64, m));
        }
        Ok(())
    }
}

/// What one read of pcap-parser gave ([`CaptureReader::next_parsed`]'s steps).
enum Step {
    Frame(Located),
    Skip(usize),
    Refill,
    End,
    Fail(Kind),
}

/// A frame pcap-parser read: bytes consumed, where its data is in the parser's buffer,
/// and what its block says of it.
struct Located {
    consumed: usize,
    start: usize,
    len: usize,
    ts_ns: i64,
    linktype: i32,
    interface: u32,
    origlen: u32,
}

/// pcap-parser's error, without the borrow of its buffer.
#[derive(Clone, Copy)]
enum Parse {
    Eof,
    /// Incomplete, or an unexpected end: more to read, or a last record cut short.
    Incomplete,
    BufferTooSmall,
    Nom,
    Read,
    UnknownHeader,
}

impl Parse {
    fn of(e: &PcapError<&[u8]>) -> Parse {
        match e {
            PcapError::Eof => Parse::Eof,
            PcapError::Incomplete(_) | PcapError::UnexpectedEof => Parse::Incomplete,
            PcapError::BufferTooSmall => Parse::BufferTooSmall,
            PcapError::NomError(..) | PcapError::OwnedNomError(..) => Parse::Nom,
            PcapError::ReadError => Parse::Read,
            PcapError::HeaderNotRecognized => Parse::UnknownHeader,
        }
    }
}

/// pcap-parser's error, in words.
fn parser_error(e: &PcapError<&[u8]>) -> Refill {
    match e {
        PcapError::ReadError => Refill::Read,
        PcapError::BufferTooSmall => Refill::BufferTooSmall,
        PcapError::HeaderNotRecognized => Refill::UnknownHeader,
        _ => Refill::DoesNotParse,
    }
}

/// Why a pcapng block that does not parse is malformed rather than cut short: its total
/// length (bytes 4..8) is under the 12-byte minimum, not a multiple of 4, or fits in
/// what is left of the file.
fn bad_block_length(rest: &[u8], big_endian: bool) -> Option<BlockLength> {
    let raw: [u8; 4] = rest.get(4..8)?.try_into().ok()?;
    let len = if big_endian {
        u32::from_be_bytes(raw)
    } else {
        u32::from_le_bytes(raw)
    };
    if len < 12 {
        Some(BlockLength::UnderMinimum(len))
    } else if !len.is_multiple_of(4) {
        Some(BlockLength::NotMultipleOf4(len))
    } else if (len as usize) <= rest.len() {
        Some(BlockLength::Contents(len))
    } else {
        None
    }
}
