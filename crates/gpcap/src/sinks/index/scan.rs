//! The TUI's filter on dissected fields, on every core. The index already holds what the
//! engine's ordered stage settled for every packet (flow, sequence verdicts, reassembly,
//! checksums); only the field tree is missing, and it depends on the packet's bytes alone
//! when the definition keeps no conversation state (no messages, no remembered values,
//! no keys). So the rows are cut into pieces, each worker reads its pieces' frames back
//! from the file, dissects them as the engine does and tests the filter on the row's
//! event with the tree, and the pieces' selections are sent on in row order: the rows
//! one engine pass over the capture selects, on one core or many.

use super::{Index, Kept, Row, Rows, status};
use crate::filter::Filter;
use crate::sinks::select::ScanUpdate;
use gpcap_engine::{Config, FlowId, PacketEvent, Validator};
use gpcap_wire::capture::CaptureError;
use gpcap_wire::capture::FrameAt;
use gpcap_wire::decode::{Decoded, decode};
use hashbrown::HashMap;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};

/// Rows a worker takes at a time.
const PIECE: usize = 16 * super::CHUNK;

/// What a scan over the index reads, shared with the screen: full chunks of rows never
/// change, and the kept bytes are settled once the capture is indexed.
#[derive(Clone)]
pub struct Snapshot {
    /// The capture the rows index.
    pub path: PathBuf,
    rows: Rows,
    flows: Arc<Vec<FlowId>>,
    kept: Arc<HashMap<u32, Kept>>,
    fragments: Arc<super::Fragments>,
    total_bytes: u64,
    /// Rows a worker takes at a time.
    piece: usize,
}

impl Snapshot {
    /// Workers take `rows` rows at a time (tests cut small pieces).
    pub fn with_piece(mut self, rows: usize) -> Self {
        self.piece = rows.max(1);
        self
    }
}

impl Index {
    /// What a scan of `filter` on other threads reads, when it selects exactly what a pass
    /// of the engine would: the capture indexed whole from a file that can be read at any
    /// record, every reassembled packet's bytes kept, and a definition whose field trees
    /// depend on the packet's bytes alone. `None`: run the engine instead.
    pub fn snapshot(&self, cfg: &Config, filter: &Filter) -> Option<Snapshot> {
        let p = cfg.program.as_deref()?;
        let stateless = cfg.stack.is_none()
            && p.messages.is_none()
            && p.params.remembered.is_empty()
            && p.params.message_fragments.is_empty();
        let whole = self.done && self.error.is_none() && self.store.is_none();
        // Reassembled packets not kept are put back together from their fragments.
        let kept = (self.kept.len() + self.fragments.len()) as u64 == self.needs_kept;
        // The frames' own headers (`ip.ttl`, `frame.len`) are read in the engine's pass,
        // which holds every frame a packet came in (a reassembled one: the last).
        if !(stateless && whole && kept && !filter.reads_layers() && !filter.reads_frames()) {
            return None;
        }
        FrameAt::open(&self.path).ok().filter(FrameAt::seekable)?;
        Some(Snapshot {
            path: self.path.clone(),
            rows: self.rows.clone(),
            flows: Arc::new(self.flows.clone()),
            kept: self.kept.clone(),
            fragments: self.fragments.clone(),
            total_bytes: self.total_bytes,
            piece: PIECE,
        })
    }
}

/// The reassembled packet at `row`, whose bytes were not kept, put back together from its
/// fragments' frames as the engine put it (for the detail view); `validator` reads the
/// fragments. Only for definitions whose fragments are whole datagrams (no messages).
pub fn put_back(ix: &Index, validator: &mut Validator, row: u32) -> Result<Kept, String> {
    let frames = ix
        .fragments
        .of(row)
        .ok_or("its fragments' frames were not kept")?;
    let file = FrameAt::open(&ix.path).map_err(|e| e.to_string())?;
    let mut payload = Vec::new();
    for &frame in frames {
        let missing = || format!("frame {frame}, a fragment, cannot be read back");
        let at = row_of_frame(&ix.rows, frame).ok_or_else(missing)?;
        let r = ix.rows.get(at).ok_or_else(missing)?;
        let read;
        let bytes = match ix.kept.get(&(at as u32)) {
            Some(k) => &k.payload[..],
            None => {
                read = file.frame(r.offset).map_err(|e| e.to_string())?;
                match decode(r.linktype as i32, &read.data) {
                    Decoded::Udp { payload, .. } => payload,
                    _ => return Err(missing()),
                }
            }
        };
        let v = validator.datagram(bytes);
        let f = v.fragment.ok_or_else(missing)?;
        payload.extend_from_slice(
            bytes
                .get(f.data_offset..f.data_offset + f.data_len)
                .ok_or_else(missing)?,
        );
    }
    Ok(Kept {
        payload,
        fragment_frames: frames.to_vec(),
    })
}

/// The first row of `frame` (rows are in frame order).
fn row_of_frame(rows: &Rows, frame: u64) -> Option<usize> {
    let (mut lo, mut hi) = (0, rows.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if rows.get(mid).is_some_and(|r| r.frame < frame) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    rows.get(lo).filter(|r| r.frame == frame).map(|_| lo)
}

/// Whether the engine kept the bytes of this row (no single frame holds them).
pub(crate) fn needs_kept(r: &Row) -> bool {
    r.has(status::REASSEMBLED) || (r.has(status::GAME) && r.has(status::IP_FRAG))
}

/// Tests `filter` on every row of `snap` with `workers` threads and sends the positions
/// selected to `tx` in row order, as [`crate::run::scans::scan`] does with the engine,
/// until the rows end or `stop` is set. A filter that needs the acks has them set
/// ([`crate::run::scans::scan_index`] runs their pass first).
pub fn scan(
    snap: Snapshot,
    cfg: Config,
    mut filter: Filter,
    workers: usize,
    tx: Sender<ScanUpdate>,
    stop: Arc<AtomicBool>,
) {
    if let Some(first) = snap.rows.first() {
        filter.start(first.ts_ns);
    }
    let pieces = snap.rows.len().div_ceil(snap.piece);
    let next = Arc::new(AtomicUsize::new(0));
    let (done_tx, done_rx) = channel::<(usize, Result<Vec<u32>, String>)>();
    let threads: Vec<_> = (0..workers.max(1))
        .map(|_| {
            let (snap, cfg, filter) = (snap.clone(), cfg.clone(), filter.clone());
            let (next, stop, done_tx) = (next.clone(), stop.clone(), done_tx.clone());
            std::thread::spawn(move || {
                let mut w = Worker::new(&snap, &cfg, filter);
                loop {
                    let piece = next.fetch_add(1, Ordering::Relaxed);
                    if piece >= pieces || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if done_tx.send((piece, w.piece(piece))).is_err() {
                        break;
                    }
                }
            })
        })
        .collect();
    drop(done_tx);
    let error = in_order(&snap, done_rx, &tx, &stop);
    stop.store(true, Ordering::Relaxed);
    let died = threads.into_iter().any(|t| t.join().is_err());
    let error = error.or_else(|| died.then(|| "a filtering thread failed".to_string()));
    let _ = tx.send(ScanUpdate::Done { error });
}

/// Sends the pieces' selections on in row order, with the bytes read so far; the first
/// error ends the scan.
fn in_order(
    snap: &Snapshot,
    done: std::sync::mpsc::Receiver<(usize, Result<Vec<u32>, String>)>,
    tx: &Sender<ScanUpdate>,
    stop: &AtomicBool,
) -> Option<String> {
    let pieces = snap.rows.len().div_ceil(snap.piece);
    let mut waiting = BTreeMap::new();
    let mut next = 0;
    for (piece, rows) in done {
        waiting.insert(piece, rows);
        while let Some(rows) = waiting.remove(&next) {
            next += 1;
            let rows = match rows {
                Ok(rows) => rows,
                Err(e) => return Some(e),
            };
            let end = (next * snap.piece).min(snap.rows.len());
            let bytes_read = if next == pieces {
                snap.total_bytes
            } else {
                snap.rows.get(end).map_or(snap.total_bytes, |r| r.offset)
            };
            if tx.send(ScanUpdate::Rows { rows, bytes_read }).is_err() {
                stop.store(true, Ordering::Relaxed);
                return None;
            }
        }
    }
    (next < pieces && !stop.load(Ordering::Relaxed)).then(|| "a filtering thread stopped".to_string())
}

/// One thread's dissector and filter.
struct Worker<'a> {
    snap: &'a Snapshot,
    validator: Validator,
    /// Validates without recording fields: a fragment's bytes, when no tree is needed.
    quick: Validator,
    filter: Filter,
    file: Option<FrameAt>,
    /// The fragments' bytes read in this piece, by frame: what a reassembled packet
    /// whose bytes were not kept is put back together from.
    carried: HashMap<u64, (usize, usize)>,
    bytes: Vec<u8>,
    /// A reassembled packet put back together.
    packet: Vec<u8>,
}

impl<'a> Worker<'a> {
    fn new(snap: &'a Snapshot, cfg: &Config, filter: Filter) -> Self {
        Worker {
            snap,
            validator: Validator::new(cfg, true),
            quick: Validator::new(cfg, false),
            filter,
            file: None,
            carried: HashMap::new(),
            bytes: Vec::new(),
            packet: Vec::new(),
        }
    }

    /// The rows of `piece` the filter selects; a panic is the frame it stopped at.
    fn piece(&mut self, piece: usize) -> Result<Vec<u32>, String> {
        let at = std::cell::Cell::new(0u64);
        let name = gpcap_wire::capture::shown(&self.snap.path);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.rows(piece, &at))).unwrap_or_else(
            |_| {
                Err(format!(
                    "{name}: frame {}: filtering this packet failed",
                    at.get()
                ))
            },
        )
    }

    fn rows(&mut self, piece: usize, at: &std::cell::Cell<u64>) -> Result<Vec<u32>, String> {
        let snap = self.snap;
        let size = snap.piece;
        let (start, end) = (piece * size, ((piece + 1) * size).min(snap.rows.len()));
        self.carried.clear();
        self.bytes.clear();
        let mut out = Vec::new();
        let mut reader: Option<Records> = None;
        for i in start..end {
            let Some(r) = snap.rows.get(i) else { break };
            at.set(r.frame);
            let e = r.event(&snap.flows);
            // The row's own facts may settle the filter: no tree is needed then.
            let decided = if r.has(status::GAME) {
                self.filter.decided(&e)
            } else {
                None
            };
            let hit = if let Some(k) = snap.kept.get(&(i as u32)) {
                match decided {
                    Some(hit) => hit,
                    None => self.bytes_of(&r, &e, &k.payload, &k.fragment_frames),
                }
            } else if r.has(status::REASSEMBLED) {
                match decided {
                    Some(hit) => hit,
                    None => {
                        let frames = snap
                            .fragments
                            .of(i as u32)
                            .ok_or("a reassembled packet's fragments were not kept")?;
                        self.put_back(frames)?;
                        let packet = std::mem::take(&mut self.packet);
                        let hit = self.bytes_of(&r, &e, &packet, frames);
                        self.packet = packet;
                        hit
                    }
                }
            } else if r.has(status::GAME) && !needs_kept(&r) {
                // A fragment's bytes are carried for the packet it completes.
                let carry = r.frag_count > 0 && !snap.fragments.is_empty();
                match decided {
                    Some(hit) if !carry => hit,
                    _ => {
                        if reader.is_none() {
                            reader = Some(self.records(r.offset)?);
                        }
                        let Some(rd) = reader.as_mut() else { break };
                        rd.with(&r, |f| self.frame(&r, &e, f, decided))
                            .map_err(|e| e.to_string())?
                    }
                }
            } else {
                self.filter.matches(&e)
            };
            if hit {
                out.push(i as u32);
            }
        }
        Ok(out)
    }

    /// The filter on a frame's row, its datagram dissected as the engine does (only
    /// validated for the fragment it carries when `decided`).
    fn frame(
        &mut self,
        r: &Row,
        e: &PacketEvent<'_>,
        f: &gpcap_wire::capture::Frame<'_>,
        decided: Option<bool>,
    ) -> bool {
        if let Some(hit) = decided {
            if let Decoded::Udp { payload, .. } = decode(r.linktype as i32, f.data) {
                let v = self.quick.datagram(payload);
                self.carry(r, payload, &v);
            }
            return hit;
        }
        match decode(r.linktype as i32, f.data) {
            // A datagram cut short is not dissected (its status says so).
            Decoded::Udp {
                payload, truncated, ..
            } if !truncated => self.bytes_of(r, e, payload, &[]),
            _ => self.filter.matches(e),
        }
    }

    /// The filter on a row whose bytes are `payload`: a datagram (whose fragment is kept
    /// for the packet it completes) or a reassembled packet.
    fn bytes_of(&mut self, r: &Row, e: &PacketEvent<'_>, payload: &[u8], fragment_frames: &[u64]) -> bool {
        let v = if r.has(status::REASSEMBLED) {
            self.validator.reassembled(payload)
        } else {
            let v = self.validator.datagram(payload);
            self.carry(r, payload, &v);
            v
        };
        // A datagram cut short is not dissected (its status says so).
        let dissected = r.has(status::REASSEMBLED) || !r.has(status::TRUNCATED);
        self.filter.matches(&PacketEvent {
            payload,
            dissection: dissected.then_some(&self.validator.dissection),
            ack: v.ack,
            ack_bits: v.ack_bits,
            fragment_frames,
            ..*e
        })
    }

    /// Keeps the bytes of the fragment `payload` carries (by the verdict `v` on it).
    fn carry(&mut self, r: &Row, payload: &[u8], v: &gpcap_engine::Verdict) {
        if let Some(data) = v
            .fragment
            .and_then(|f| payload.get(f.data_offset..f.data_offset + f.data_len))
        {
            self.carried.insert(r.frame, (self.bytes.len(), data.len()));
            self.bytes.extend_from_slice(data);
        }
    }

    /// Puts a reassembled packet back together in `packet` from its fragments' frames,
    /// read in this piece or read back from the file.
    fn put_back(&mut self, frames: &[u64]) -> Result<(), String> {
        let mut packet = std::mem::take(&mut self.packet);
        packet.clear();
        for &frame in frames {
            if !self.carried.contains_key(&frame) {
                self.read_fragment(frame)?;
            }
            let &(at, len) = self.carried.get(&frame).ok_or("a fragment's bytes")?;
            packet.extend_from_slice(&self.bytes[at..at + len]);
        }
        self.packet = packet;
        Ok(())
    }

    /// Reads the fragment of `frame`, from before this piece, into `carried`.
    fn read_fragment(&mut self, frame: u64) -> Result<(), String> {
        let snap = self.snap;
        let missing = || format!("frame {frame}: a fragment's bytes cannot be read back");
        let lo = row_of_frame(&snap.rows, frame).ok_or_else(missing)?;
        let r = snap.rows.get(lo).ok_or_else(missing)?;
        let e = r.event(&snap.flows);
        if let Some(k) = snap.kept.get(&(lo as u32)) {
            self.bytes_of(&r, &e, &k.payload, &[]);
        } else {
            if self.file.is_none() {
                self.file = Some(FrameAt::open(&self.snap.path).map_err(|e| e.to_string())?);
            }
            let f = self
                .file
                .as_ref()
                .ok_or_else(missing)?
                .frame(r.offset)
                .map_err(|e| e.to_string())?;
            if let Decoded::Udp { payload, .. } = decode(r.linktype as i32, &f.data) {
                self.bytes_of(&r, &e, payload, &[]);
            }
        }
        self.carried
            .contains_key(&frame)
            .then_some(())
            .ok_or_else(missing)
    }

    fn records(&mut self, offset: u64) -> Result<Records, String> {
        if self.file.is_none() {
            self.file = Some(FrameAt::open(&self.snap.path).map_err(|e| e.to_string())?);
        }
        let file = self.file.as_ref().ok_or("no file")?;
        let (reader, shift) = file.records_from(offset).map_err(|e| e.to_string())?;
        Ok(Records { reader, shift })
    }
}

/// Records read on from an offset of the file.
struct Records {
    reader: gpcap_wire::capture::CaptureReader,
    /// Added to the reader's offsets: the file's.
    shift: i64,
}

impl Records {
    /// `test` on the frame of row `r`, reading on to its record (rows are in file order);
    /// an error when no record of that time starts there.
    fn with<T>(
        &mut self,
        r: &Row,
        test: impl FnOnce(&gpcap_wire::capture::Frame<'_>) -> T,
    ) -> Result<T, CaptureError> {
        let shift = self.shift;
        let wanted = r.offset as i64;
        loop {
            let at = match self.reader.next_frame()? {
                Some(f) if f.offset as i64 + shift < wanted => continue,
                Some(f) if f.offset as i64 + shift == wanted && f.ts_ns == r.ts_ns => return Ok(test(&f)),
                _ => r.offset,
            };
            return Err(CaptureError {
                file: self.reader.name().to_string(),
                offset: at,
                frame: r.frame,
                kind: gpcap_wire::capture::Missing::RecordGone.into(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::run_files;
    use crate::sinks::index::IndexSink;
    use proptest::prelude::*;
    use std::path::Path;
    use std::sync::OnceLock;

    const FILTERS: [&str; 9] = [
        "objects.at_rest == true",
        "all scene.objects.at_rest == true",
        "reassembled && objects.at_rest == true",
        "objects.position.x < -500 || objects[1].linear_velocity.y > 5",
        "items.item >= 90 && !reassembled",
        "!(objects.index > 10) && seq > 20",
        "misc.name contains \"a\" && misc.n != 3",
        "gap || !(scene.objects.index != 3) || frag.id == 1",
        "ack > 3 && !(items.item >= 90)",
    ];

    fn capture() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("captures/lossy-bursts.pcap")
    }

    fn config() -> Config {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let p = gpcap_dissect::load(&root.join("dissectors/article.kdl")).unwrap();
        Config::from_program(Arc::new(p))
    }

    /// The index of the capture, keeping at most `kept` bytes of rows.
    fn index(kept: usize) -> Index {
        let (tx, rx) = channel();
        let mut sink = IndexSink::new(tx);
        sink.kept_limit = kept;
        let path = capture();
        run_files(std::slice::from_ref(&path), config(), &mut sink, &mut |_, _| {}).unwrap();
        sink.done(None, None);
        drop(sink);
        let mut ix = Index::new(&path);
        for u in rx {
            ix.apply(u);
        }
        ix
    }

    fn rows_of(rx: std::sync::mpsc::Receiver<ScanUpdate>) -> Vec<u32> {
        let mut rows = Vec::new();
        for u in rx {
            match u {
                ScanUpdate::Rows { rows: r, .. } => rows.extend(r),
                ScanUpdate::Done { error } => assert_eq!(error, None),
            }
        }
        rows
    }

    /// What one pass of the engine selects, per filter.
    fn engine() -> &'static Vec<Vec<u32>> {
        static ROWS: OnceLock<Vec<Vec<u32>>> = OnceLock::new();
        ROWS.get_or_init(|| {
            let cfg = config();
            FILTERS
                .iter()
                .map(|f| {
                    let filter = Filter::parse(f, cfg.program.as_deref()).unwrap();
                    let (tx, rx) = channel();
                    crate::run::scans::scan(&capture(), cfg.clone(), filter, tx, Default::default());
                    rows_of(rx)
                })
                .collect()
        })
    }

    fn indexes() -> &'static [Index; 2] {
        static INDEXES: OnceLock<[Index; 2]> = OnceLock::new();
        INDEXES.get_or_init(|| [index(super::super::KEPT_BYTES), index(0)])
    }

    fn scan_with(ix: &Index, text: &str, piece: usize, workers: usize) -> Vec<u32> {
        let cfg = config();
        let filter = Filter::parse(text, cfg.program.as_deref()).unwrap();
        let snap = ix
            .snapshot(&cfg, &filter)
            .expect("the index can be scanned")
            .with_piece(piece);
        let (tx, rx) = channel();
        scan(snap, cfg, filter, workers, tx, Default::default());
        rows_of(rx)
    }

    #[test]
    fn reassembled_packets_not_kept_are_put_back_together() {
        let [all, none] = indexes();
        assert!(all.fragments.is_empty() && !all.kept.is_empty());
        assert!(none.kept.is_empty() && none.fragments.len() as u64 == none.reassembled);
        let reassembled = engine()[2].len();
        assert!(reassembled > 5, "only {reassembled} reassembled packets selected");
        for (text, want) in FILTERS.iter().zip(engine()) {
            assert_eq!(&scan_with(none, text, 300, 2), want, "`{text}`");
        }
    }

    #[test]
    fn a_reassembled_packet_not_kept_is_put_back_as_kept() {
        let [all, none] = indexes();
        let mut validator = Validator::new(&config(), false);
        let mut n = 0;
        for (row, kept) in all.kept.iter().filter(|(_, k)| !k.fragment_frames.is_empty()) {
            assert_eq!(
                put_back(none, &mut validator, *row).as_ref(),
                Ok(kept),
                "row {row}"
            );
            n += 1;
        }
        assert!(n > 5, "only {n} reassembled packets");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        /// The rows one engine pass selects, whatever the pieces and threads.
        #[test]
        fn any_pieces_on_any_threads_select_what_the_engine_does(
            piece in 1..3000usize,
            workers in 1..4usize,
            kept in any::<bool>(),
            f in 0..FILTERS.len(),
        ) {
            let ix = &indexes()[kept as usize];
            prop_assert_eq!(&scan_with(ix, FILTERS[f], piece, workers), &engine()[f]);
        }
    }
}
