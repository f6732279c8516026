//! `dissect` on several cores, printing what one core prints, byte for byte. The engine
//! and the printer's selection (filter, `--frame`) stay on the reading thread, in order,
//! for every protocol (messages, conversation state and decryption included, as on one
//! core); the packets selected are copied out in batches, formatted by worker threads,
//! and written in reading order by one writer thread. Formatting is most of `dissect`'s
//! time (`--jsonl` of 200,000 frames of the 128-client capture: about four fifths of
//! 2.1 s of CPU); batches and output buffers go round, so a warm run allocates little.

use super::printer::{Format, Printer};
use crate::filter::Filter;
use gpcap_dissect::{Dissection, Program};
use gpcap_engine::carried::Carried;
use gpcap_engine::event::Reliability;
use gpcap_engine::pool::{InOrder, OrderedPool};
use gpcap_engine::{Flow, Needs, PacketEvent, Sink, SinkError};
use gpcap_wire::capture::CaptureError;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Packets a batch holds at most, and payload bytes and fields past which it is sent
/// (a few MiB of field trees at most, whatever the packets' sizes).
const BATCH_PACKETS: usize = 128;
const BATCH_BYTES: usize = 256 << 10;
const BATCH_FIELDS: usize = 8 << 10;

/// A selected packet copied out of the engine: its event with the borrowed parts kept
/// as ranges of the batch's buffers.
struct Copied {
    event: PacketEvent<'static>,
    payload: Range<usize>,
    /// The frame's bytes, when the batch keeps them (`dissect`'s tree shows its headers).
    frame: Range<usize>,
    /// What `-t r`, `d` and `dd` count its time from (set in reading order).
    time_base: i64,
    fragment_frames: Range<usize>,
    dissection: Option<usize>,
    /// What inner layers read in it (an index of the batch's `carried`).
    carried: Option<usize>,
    /// Its acks beyond one sequence and its stream verdicts, in the batch's.
    acks: Range<usize>,
    streams: Range<usize>,
}

/// Selected packets in reading order; `first`: none was selected before them. Export's
/// workers take their packets in these batches too.
#[derive(Default)]
pub(crate) struct Batch {
    first: bool,
    /// Keep each packet's frame bytes too.
    keep_frames: bool,
    packets: Vec<Copied>,
    bytes: Vec<u8>,
    frames: Vec<u64>,
    /// Field trees: the first `used` are this batch's, the rest kept from earlier ones
    /// for their memory.
    trees: Vec<Dissection>,
    used: usize,
    /// Fields in this batch's trees.
    fields: usize,
    carried: Vec<Vec<Carried>>,
    acks: Vec<gpcap_dissect::AckItem>,
    streams: Vec<gpcap_engine::streams::StreamEvent>,
}

/// `from` copied into `to`, reusing `to`'s memory (a derived `clone_from` would not).
fn copy_into(to: &mut Dissection, from: &Dissection) {
    let Dissection {
        fields,
        messages,
        crc_at,
        crc_stand_in,
        learnt,
        send_time,
        crc,
        sequence,
        packet_type,
        fragment,
        ack,
        ack_bits,
        ack_items,
        fault,
        bits_read,
    } = from;
    to.ack_items.clone_from(ack_items);
    to.fields.clone_from(fields);
    to.messages.clone_from(messages);
    to.learnt.clone_from(learnt);
    to.fault.clone_from(fault);
    (to.crc_at, to.crc_stand_in, to.send_time, to.crc) = (*crc_at, *crc_stand_in, *send_time, *crc);
    (to.sequence, to.packet_type, to.fragment) = (*sequence, *packet_type, *fragment);
    (to.ack, to.ack_bits, to.bits_read) = (*ack, *ack_bits, *bits_read);
}

impl Batch {
    /// Copies `e` in (export's workers take their packets so).
    #[cfg_attr(not(feature = "export"), allow(dead_code))]
    pub(crate) fn push(&mut self, e: &PacketEvent<'_>) {
        self.push_timed(e, 0);
    }

    /// As [`Batch::push`], with the reference its time counts from.
    fn push_timed(&mut self, e: &PacketEvent<'_>, time_base: i64) {
        let frame_at = self.bytes.len();
        if self.keep_frames {
            self.bytes.extend_from_slice(e.frame_data);
        }
        let frame = frame_at..self.bytes.len();
        let at = self.bytes.len();
        self.bytes.extend_from_slice(e.payload);
        let f = self.frames.len();
        self.frames.extend_from_slice(e.fragment_frames);
        let dissection = e.dissection.map(|d| {
            self.fit(d.fields.len());
            self.fields += d.fields.len();
            match self.trees.get_mut(self.used) {
                Some(to) => copy_into(to, d),
                None => self.trees.push(d.clone()),
            }
            self.used += 1;
            self.used - 1
        });
        let carried = (!e.carried.is_empty()).then(|| {
            self.carried.push(e.carried.to_vec());
            self.carried.len() - 1
        });
        let (a, st) = (self.acks.len(), self.streams.len());
        self.acks.extend_from_slice(e.acks());
        self.streams.extend_from_slice(e.stream_events());
        self.packets.push(Copied {
            acks: a..self.acks.len(),
            streams: st..self.streams.len(),
            event: e.detached(),
            frame,
            time_base,
            payload: at..self.bytes.len(),
            fragment_frames: f..self.frames.len(),
            dissection,
            carried,
        });
    }

    /// Puts at `used` the spare tree that holds `n` fields with the least room to spare
    /// (the roomiest when none does): a tree keeps the room of the largest packet it
    /// ever held, and were trees taken in turn, every one would grow to the capture's
    /// largest packet (a 200,000-frame `--jsonl` peaked at 546 MB and page-faulted
    /// 0.6 s of system time; one core: 14 MB).
    fn fit(&mut self, n: usize) {
        let spare = self.trees.get(self.used..).unwrap_or(&[]);
        let room = |t: &Dissection| t.fields.capacity();
        let best = (spare.iter().enumerate())
            .filter(|(_, t)| room(t) >= n)
            .min_by_key(|(_, t)| room(t))
            .or_else(|| spare.iter().enumerate().max_by_key(|(_, t)| room(t)));
        if let Some((k, _)) = best {
            self.trees.swap(self.used, self.used + k);
        }
    }

    fn full(&self) -> bool {
        self.packets.len() >= BATCH_PACKETS || self.bytes.len() >= BATCH_BYTES || self.fields >= BATCH_FIELDS
    }

    /// Field room held by the batch's trees, its own and spare.
    #[cfg(test)]
    fn room(&self) -> usize {
        self.trees.iter().map(|t| t.fields.capacity()).sum()
    }

    /// Packets held, and their payload bytes.
    #[cfg_attr(not(feature = "export"), allow(dead_code))]
    pub(crate) fn size(&self) -> (usize, usize) {
        (self.packets.len(), self.bytes.len())
    }

    /// Empties the batch, keeping its memory (its field trees' too).
    pub(crate) fn clear(&mut self) {
        self.packets.clear();
        self.bytes.clear();
        self.frames.clear();
        self.used = 0;
        self.fields = 0;
        self.carried.clear();
        self.acks.clear();
        self.streams.clear();
    }

    /// Each packet's time reference (`-t`), in the order of [`Batch::events`].
    fn time_bases(&self) -> impl Iterator<Item = i64> + '_ {
        self.packets.iter().map(|c| c.time_base)
    }

    /// Each packet's acks and stream verdicts, for [`Batch::events_with`].
    fn reliabilities(&self) -> Vec<Reliability<'_>> {
        (self.packets.iter())
            .map(|c| Reliability {
                acks: self.acks.get(c.acks.clone()).unwrap_or(&[]),
                stream_events: self.streams.get(c.streams.clone()).unwrap_or(&[]),
            })
            .collect()
    }

    /// [`Batch::events`] with what the reliability layer said of each (`rel`, from
    /// [`Batch::reliabilities`]): the stream verdicts `dissect` prints.
    fn events_with<'a>(&'a self, rel: &'a [Reliability<'a>]) -> impl Iterator<Item = PacketEvent<'a>> {
        (self.events().zip(rel)).map(|(e, r)| PacketEvent {
            reliability: (!r.acks.is_empty() || !r.stream_events.is_empty()).then_some(r),
            ..e
        })
    }

    /// Each packet's event as the engine handed it on (without its reliability facts:
    /// [`Batch::events_with`]).
    pub(crate) fn events(&self) -> impl Iterator<Item = PacketEvent<'_>> {
        self.packets.iter().map(|c| PacketEvent {
            payload: self.bytes.get(c.payload.clone()).unwrap_or(&[]),
            frame_data: self.bytes.get(c.frame.clone()).unwrap_or(&[]),
            fragment_frames: self.frames.get(c.fragment_frames.clone()).unwrap_or(&[]),
            dissection: c.dissection.and_then(|i| self.trees.get(i)),
            carried: c
                .carried
                .and_then(|i| self.carried.get(i))
                .map_or(&[], |v| &v[..]),
            ..c.event
        })
    }
}

/// A batch formatted, or the (file, offset, frame) of the packet whose formatting failed.
type Formatted = Result<Vec<u8>, (u32, u64, u64)>;

/// Things handed back once used (batches by the workers, output buffers by the writer),
/// so that a warm run allocates nothing per batch; a few kept at most.
struct Pool<T>(Mutex<Vec<T>>);

impl<T: Default> Pool<T> {
    fn take(&self) -> T {
        self.0.lock().ok().and_then(|mut v| v.pop()).unwrap_or_default()
    }

    fn give(&self, t: T) {
        if let Ok(mut v) = self.0.lock()
            && v.len() < 8
        {
            v.push(t);
        }
    }
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool(Mutex::new(Vec::new()))
    }
}

/// The pools a printer's threads share.
#[derive(Default)]
struct Pools {
    batches: Pool<Batch>,
    bufs: Pool<Vec<u8>>,
}

/// The `dissect` printer on `workers` formatting threads (see the module's comment).
pub struct OrderedPrinter {
    select: Printer<std::io::Sink>,
    batch: Batch,
    pool: OrderedPool<Batch, Written>,
    /// Set when output cannot go on (a write failed, a worker failed).
    stop: Arc<AtomicBool>,
    names: Vec<String>,
    pools: Arc<Pools>,
    /// `-t`, read by the workers for each batch.
    times: Arc<Mutex<super::printer::TimeFormat>>,
    /// Tests: formatting this frame fails, as a bug in a worker would.
    #[doc(hidden)]
    pub fail_on: Arc<Mutex<Option<u64>>>,
}

/// What the writer thread ends with.
struct Written {
    printer: Printer<Box<dyn Write + Send>>,
    failed: Option<(u32, u64, u64)>,
}

impl OrderedPrinter {
    /// As [`Printer::new`], with `workers` formatting threads (at least one).
    pub fn new(
        out: Box<dyn Write + Send>,
        program: Option<Arc<Program>>,
        filter: Filter,
        format: Format,
        only: Option<u64>,
        workers: usize,
    ) -> Self {
        // The formatting workers print what the ack analysis' pass settled, as one core.
        let acks = filter.ack_facts();
        let mut select = Printer::new(std::io::sink(), program.clone(), filter, format);
        select.only = only;
        let mut printer = Printer::new(out, program.clone(), Filter::all(), format);
        printer.begin();
        let stop = Arc::new(AtomicBool::new(false));
        let fail_on = Arc::new(Mutex::new(None));
        let pools = Arc::new(Pools::default());
        let times = Arc::new(Mutex::new(super::printer::TimeFormat::default()));
        let make = |_| {
            let mut p = Printer::new(std::io::sink(), program.clone(), Filter::all(), format);
            p.set_acks(acks.clone());
            formatting(p, (fail_on.clone(), times.clone()), pools.clone())
        };
        let writer = {
            let (stop, pools) = (stop.clone(), pools.clone());
            move |formatted| write_in_order(printer, formatted, stop, pools)
        };
        // Bounded queues: a few batches in flight whatever the capture's size.
        let pool = OrderedPool::new("gpcap-format", workers, 2, make, writer);
        OrderedPrinter {
            select,
            batch: Batch {
                first: true,
                keep_frames: format == Format::Tree,
                ..Batch::default()
            },
            pool,
            stop,
            names: Vec::new(),
            pools,
            times,
            fail_on,
        }
    }

    /// Packets selected for printing.
    pub fn printed(&self) -> u64 {
        self.select.printed
    }

    /// `-t`: the selecting printer keeps the references, the workers are told the
    /// format (before anything is read).
    fn set_times(&mut self, t: super::printer::TimeFormat) {
        self.select.times = t;
        if let Ok(mut f) = self.times.lock() {
            *f = t;
        }
    }

    /// Output can no longer be written: reading may stop.
    pub fn is_done(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn send(&mut self) {
        let mut next = self.pools.batches.take();
        next.first = self.select.printed == 0;
        next.keep_frames = self.batch.keep_frames;
        let batch = std::mem::replace(&mut self.batch, next);
        if !self.pool.send(batch) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Prints what is left, closes the JSON array and flushes; the error that stopped
    /// output, if any (a failed worker names the file and frame it was formatting).
    pub fn end(mut self) -> Result<(), PrintError> {
        if !self.batch.packets.is_empty() && !self.is_done() {
            self.send();
        }
        let done = self.pool.finish();
        let worker_died = done.worker_died;
        let Written { mut printer, failed } = done.ordered.ok_or(PrintError::ThreadFailed(Thread::Writer))?;
        if let Some((file, offset, frame)) = failed {
            return Err(PrintError::Capture(CaptureError {
                file: self.names.get(file as usize).cloned().unwrap_or_default(),
                offset,
                frame,
                kind: gpcap_wire::capture::CaptureErrorKind::OutputStopped,
            }));
        }
        if worker_died {
            return Err(PrintError::ThreadFailed(Thread::Formatting));
        }
        printer.set_first(self.select.printed == 0);
        printer.end().map_err(PrintError::Output)
    }
}

impl OrderedPrinter {
    /// One event ([`Sink::packet`]).
    fn take(&mut self, e: &PacketEvent<'_>) {
        if !self.select.selects(e) {
            return;
        }
        self.batch.push_timed(e, self.select.time_base);
        if self.batch.full() {
            self.send();
        }
    }
}

impl Sink for OrderedPrinter {
    fn begin_file(&mut self, file: u32, name: &str) {
        let i = file as usize;
        if self.names.len() <= i {
            self.names.resize(i + 1, String::new());
        }
        self.names[i] = name.to_string();
    }

    fn needs(&self) -> Needs {
        self.select.needs()
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        self.take(e);
        Ok(Flow::stop_if(self.is_done() || self.select.full()))
    }
}

/// The `dissect` printer on one core or several: the same bytes either way.
pub enum DissectPrinter {
    One(Box<Printer<Box<dyn Write + Send>>>),
    Many(Box<OrderedPrinter>),
}

impl DissectPrinter {
    /// A printer writing to `out`, formatting on `threads` threads when more than one.
    pub fn new(
        out: Box<dyn Write + Send>,
        program: Option<Arc<Program>>,
        filter: Filter,
        format: Format,
        only: Option<u64>,
        threads: usize,
    ) -> Self {
        if threads > 1 {
            return DissectPrinter::Many(Box::new(OrderedPrinter::new(
                out, program, filter, format, only, threads,
            )));
        }
        let mut p = Printer::new(out, program, filter, format);
        p.only = only;
        p.begin();
        DissectPrinter::One(Box::new(p))
    }

    /// Times as tshark's `-t` shows them.
    pub fn times(mut self, t: super::printer::TimeFormat) -> Self {
        match &mut self {
            DissectPrinter::One(p) => p.times = t,
            DissectPrinter::Many(p) => p.set_times(t),
        }
        self
    }

    /// At most `n` packets printed (`-c`); reading stops at the last.
    pub fn limit(mut self, n: Option<u64>) -> Self {
        match &mut self {
            DissectPrinter::One(p) => p.limit = n,
            DissectPrinter::Many(p) => p.select.limit = n,
        }
        self
    }

    /// Packets selected for printing.
    pub fn printed(&self) -> u64 {
        match self {
            DissectPrinter::One(p) => p.printed,
            DissectPrinter::Many(p) => p.printed(),
        }
    }

    /// Output can no longer be written: reading may stop.
    pub fn is_done(&self) -> bool {
        match self {
            DissectPrinter::One(p) => p.is_done(),
            DissectPrinter::Many(p) => p.is_done(),
        }
    }

    /// Closes the output (see [`OrderedPrinter::end`]); a write error is
    /// `PrintError::Output`.
    pub fn end(self) -> Result<(), PrintError> {
        match self {
            DissectPrinter::One(mut p) => p.end().map_err(PrintError::Output),
            DissectPrinter::Many(p) => (*p).end(),
        }
    }
}

impl Sink for DissectPrinter {
    fn begin_file(&mut self, file: u32, name: &str) {
        if let DissectPrinter::Many(p) = self {
            p.begin_file(file, name)
        }
    }

    fn needs(&self) -> Needs {
        match self {
            DissectPrinter::One(p) => p.needs(),
            DissectPrinter::Many(p) => p.needs(),
        }
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        match self {
            DissectPrinter::One(p) => p.packet(e),
            DissectPrinter::Many(p) => p.packet(e),
        }
    }
}

/// A worker: formats batches as one core prints them; a panic while formatting is sent
/// on as the packet it stopped at, so the run ends with an error, not a hang.
fn formatting(
    mut p: Printer<std::io::Sink>,
    (fail_on, times): (Arc<Mutex<Option<u64>>>, Arc<Mutex<super::printer::TimeFormat>>),
    pools: Arc<Pools>,
) -> impl FnMut(Batch) -> Option<Formatted> + Send + 'static {
    move |mut batch| {
        let fail_on = fail_on.lock().map(|f| *f).unwrap_or(None);
        p.times = times.lock().map(|t| *t).unwrap_or_default();
        let at = std::cell::Cell::new((0, 0, 0));
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            p.set_first(batch.first);
            let rel = batch.reliabilities();
            for (e, base) in batch.events_with(&rel).zip(batch.time_bases()) {
                at.set((e.file, e.offset, e.frame));
                assert!(fail_on != Some(e.frame), "formatting frame {} failed", e.frame);
                p.time_base = base;
                p.format(&e);
            }
            p.take_formatted(pools.bufs.take())
        }));
        if run.is_err() {
            // What the failed batch left half written.
            p.take_formatted(Vec::new());
        }
        batch.clear();
        pools.batches.give(batch);
        Some(run.map_err(|_| at.get()))
    }
}

/// The writer: batches back in reading order, written as they come; stops at the first
/// write error or failed batch (dropping its receiver ends the workers and the reader).
fn write_in_order(
    mut printer: Printer<Box<dyn Write + Send>>,
    formatted: InOrder<Formatted>,
    stop: Arc<AtomicBool>,
    pools: Arc<Pools>,
) -> Written {
    let mut failed = None;
    for f in formatted {
        let mut bytes = match f {
            Ok(bytes) => bytes,
            Err(at) => {
                failed = Some(at);
                break;
            }
        };
        if let Err(e) = printer.out().write_all(&bytes) {
            printer.error.get_or_insert(e);
            break;
        }
        bytes.clear();
        pools.bufs.give(bytes);
    }
    stop.store(true, Ordering::Relaxed);
    Written { printer, failed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpcap_dissect::{Field, Label, Value};

    fn tree(n: usize) -> Dissection {
        let f = Field {
            node: 0,
            label: Label::Node(0),
            kind: "bits",
            parent: u32::MAX,
            depth: 0,
            bit_offset: 0,
            bit_len: 8,
            raw: 0,
            value: Value::UInt(0),
        };
        Dissection {
            fields: vec![f; n],
            ..Dissection::default()
        }
    }

    /// One large packet a batch, each time in another place: the batch keeps room for
    /// about one large tree, not one per place (which is what it held before).
    #[test]
    fn a_batch_keeps_room_for_its_largest_packets_not_one_per_place() {
        let (small, large) = (tree(10), tree(5_000));
        let mut batch = Batch::default();
        for round in 0..BATCH_PACKETS {
            for k in 0..BATCH_PACKETS / 2 {
                let d = if k == round % (BATCH_PACKETS / 2) {
                    &large
                } else {
                    &small
                };
                batch.push(&PacketEvent {
                    dissection: Some(d),
                    ..PacketEvent::empty()
                });
            }
            assert_eq!(
                batch.events().filter_map(|e| e.dissection).count(),
                BATCH_PACKETS / 2
            );
            let big = batch.events().filter(|e| e.dissection == Some(&large)).count();
            assert_eq!(big, 1);
            batch.clear();
        }
        let room = batch.room();
        assert!(room < 2 * 5_000 + BATCH_PACKETS * 10, "room for {room} fields");
    }
}

/// Why the ordered output stopped before its end: the crate's [`crate::Error`] takes
/// each as the variant of the same name.
#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    /// Writing the output failed; a closed pipe is `ErrorKind::BrokenPipe`.
    #[error("stdout: {0}")]
    Output(std::io::Error),
    /// The capture being formatted stopped the output (its file, offset and frame).
    #[error(transparent)]
    Capture(CaptureError),
    /// A thread of the output panicked.
    #[error("dissect: a {0} thread failed")]
    ThreadFailed(Thread),
}

/// Which thread of the ordered output failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Thread {
    /// The one that writes the formatted packets in order.
    Writer,
    /// One of those that format packets.
    Formatting,
}

impl std::fmt::Display for Thread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Thread::Writer => "writer",
            Thread::Formatting => "formatting",
        })
    }
}
