//! Analysis on several cores. Frames are routed by their IP address pair to shards, each
//! an engine with a statistics sink on its own thread: every flow, IP datagram and ICMP
//! quote then lives in exactly one shard, and merging the shards' statistics gives the
//! sequential report. The caps of the flow table and the message streams and the
//! reassembly budget are global limits that shards cannot share exactly, so when any
//! shard reaches one the capture is analyzed again on one core: the report is always
//! the sequential one, its peak reassembly memory included (`peak`: the shards' memory
//! added in frame order).

use super::Merge;
use super::files::{Progress, Reading, each_file, read_frames};
use super::peak::PeakMerger;
use super::{analyze_batch, thread_failed};
use crate::sinks::analysis::{Analyzer, Report, Statistics};
use gpcap_engine::event::ip_bits;
use gpcap_engine::{Batch, Config, FileEnd, Found, MemoryMark, Recycler, Sink};
use gpcap_wire::capture::{CaptureError, CaptureReader, Frame};
use gpcap_wire::decode::{Decoded, decode_fast, decode_general};
use std::path::PathBuf;
use std::sync::mpsc::{SyncSender, sync_channel};

enum Msg {
    Begin(String),
    Start(i64),
    Frames(Batch, Found),
    /// Every frame up to (file, frame) has been sent: report memory marks this far.
    Through(u32, u64),
    End(u32),
}

/// Batches waiting for a shard.
const QUEUE: usize = 4;

/// Frames between `Msg::Through` markers: what a shard's memory marks wait for at most.
const MARK_EVERY: u64 = 1 << 14;

/// The shard of a frame's decoding: by its IP address pair (either direction, either
/// spelling of an IPv4 address), the quoted pair for ICMP, shard 0 for anything without
/// one. The reader calls it through [`route`], for what the direct decoder leaves.
#[inline]
fn shard_of(decoded: &Decoded, shards: usize) -> usize {
    let pair = match decoded {
        Decoded::Udp { ip, .. } | Decoded::IpFragment { ip, .. } => Some((ip.src, ip.dst)),
        Decoded::Icmp(i) => i.quoted.as_ref().map(|q| (q.src.ip(), q.dst.ip())),
        _ => None,
    };
    let Some((a, b)) = pair else { return 0 };
    shard_of_pair(ip_bits(a), ip_bits(b), shards)
}

/// The shard of a frame, straight from its bytes: [`shard_of`] its decoding, with the
/// common datagram's addresses taken from the direct decoder alone, so nothing but the
/// pair is built (the whole decoding, built and read back, was most of routing's cost).
#[inline(always)]
fn route(linktype: i32, data: &[u8], shards: usize) -> usize {
    match decode_fast(linktype, data) {
        Some(Decoded::Udp { ip, .. }) => shard_of_pair(ip_bits(ip.src), ip_bits(ip.dst), shards),
        _ => shard_of(&decode_general(linktype, data), shards),
    }
}

/// The shard of an address pair, either direction: the pair hashed as integers in four
/// multiplications.
#[inline(always)]
fn shard_of_pair(a: u128, b: u128, shards: usize) -> usize {
    let (x, y) = if a <= b { (a, b) } else { (b, a) };
    let mut h = 0u64;
    for w in [(x >> 64) as u64, x as u64, (y >> 64) as u64, y as u64] {
        h = (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 29;
    }
    // The high half of h × shards: a multiplication where `%` was a 64-bit division,
    // a fifth of routing's cost.
    ((h as u128 * shards as u128) >> 64) as usize
}

/// The share of the first frames of `path` that its busiest shard would get: near
/// `1 / shards` when traffic spreads over many address pairs, 1 for one session. Sharding
/// only pays when the traffic spreads; otherwise validating on every core with one
/// ordered stage does (`pipeline`).
pub fn busiest_shard_share(path: &std::path::Path, shards: usize) -> f64 {
    const SAMPLE: usize = 1 << 16;
    let Ok(mut r) = CaptureReader::open(path) else {
        return 1.0;
    };
    let shards = shards.max(1);
    let mut counts = vec![0usize; shards];
    let mut n = 0;
    let _ = read_frames(&mut r, 0, &mut |_, _| {}, |f| {
        counts[route(f.linktype, f.data, shards)] += 1;
        n += 1;
        n < SAMPLE
    });
    counts.iter().max().map_or(1.0, |&m| m as f64 / n.max(1) as f64)
}

/// Whether shards by address pair see every sequence space whole: not a counter shared
/// by every flow of a sender (a per-sender space, netcode's), which crosses address pairs
/// (analysis then runs as one shard).
pub fn shardable(cfg: &Config) -> bool {
    !cfg.program
        .as_ref()
        .is_some_and(|p| p.spaces.iter().any(|s| s.per_sender))
}

type Frames = (Batch, Found);

fn send(tx: &SyncSender<Msg>, batch: &mut Frames, pool: &Recycler<Frames>) {
    if !batch.0.is_empty() {
        let (b, p) = std::mem::replace(batch, pool.take(|| (Batch::new(), Found::default())));
        let _ = tx.send(Msg::Frames(b, p));
    }
}

/// Analyzes captures with `shards` analyzers in parallel. A file that cannot be opened is
/// an error; one that breaks midway keeps what was read and says where (as sequential).
/// `progress(file, bytes)` is called now and then.
pub fn analyze_files(
    paths: &[PathBuf],
    cfg: Config,
    shards: usize,
    progress: Progress,
) -> Result<Report, super::RunError> {
    match shard_files(paths, &cfg, shards, progress, |c| Analyzer::new(c.clone()))? {
        Some((report, _)) => Ok(report),
        None => super::serial(paths, cfg, progress),
    }
}

/// What the shards gave: the report and each shard's other sink, or nothing when a
/// shard reached a global limit (the caller then reads the capture again on one core).
pub type Sharded<X> = Option<(Report, Vec<X>)>;

/// [`analyze_files`]' shards, each made by `make` from the shard's config (its share of
/// the global limits): the statistics merged into the report, the other sinks as they
/// are, in shard order.
pub fn shard_files<X: Sink + Send + 'static>(
    paths: &[PathBuf],
    cfg: &Config,
    shards: usize,
    progress: Progress,
    make: impl Fn(&Config) -> Analyzer<X>,
) -> Result<Sharded<X>, CaptureError> {
    let shards = if shardable(cfg) { shards.max(1) } else { 1 };
    let mut shard_cfg = cfg.clone();
    shard_cfg.reassembly_budget = (shard_cfg.reassembly_budget / shards).max(1 << 20);
    shard_cfg.flow_state_budget = (shard_cfg.flow_state_budget / shards).max(1 << 20);
    // The flow table is shared out too: shards that together track more than it would
    // be analyzed again anyway, and each holding a whole table doubled the memory of a
    // flood (300,000 one-datagram flows: 1.4 GB on two cores).
    shard_cfg.max_flows = cfg.max_flows.div_ceil(shards);
    // And the message streams: a shard past its share is read again on one core.
    shard_cfg.max_streams = cfg.max_streams.div_ceil(shards);
    let mut txs = Vec::new();
    let mut workers = Vec::new();
    // A shard's queue holds 4 batches (1 MB each), the pool what all queues and the
    // batches being filled and analyzed hold: 16 a shard held 36 MB of frames waiting on
    // two cores, with no time gained that a busy 2-core host could measure (67 MB, 32
    // clients: 0.49-0.60 s against 0.28-0.63 s).
    let pool = Recycler::<Frames>::new(shards * (QUEUE + 2));
    let (marks_tx, marks_rx) = sync_channel::<(usize, Vec<MemoryMark>, (u32, u64))>(shards * 4);
    let merger = std::thread::spawn(move || {
        let mut m = PeakMerger::new(shards);
        for (s, marks, through) in marks_rx {
            m.add(s, marks, through);
        }
        m.finish()
    });
    for s in 0..shards {
        let (tx, rx) = sync_channel::<Msg>(QUEUE);
        let mut a = make(&shard_cfg);
        a.log_memory();
        let back = pool.returner();
        let marks = marks_tx.clone();
        workers.push(std::thread::spawn(move || {
            for msg in rx {
                match msg {
                    Msg::Begin(name) => a.begin_file(&name),
                    Msg::Start(ts) => a.set_timeline_start(ts),
                    // Decoded again here: the router's decoding, handed over, was
                    // ~180 bytes a frame written on one core and read on another
                    // (1 GB, 128 clients, -d: 1.09 s against 1.02 s decoding again).
                    Msg::Frames(b, pre) => analyze_batch(&mut a, (b, pre), &back),
                    Msg::Through(file, frame) => {
                        let _ = marks.send((s, a.take_memory_log(), (file, frame)));
                    }
                    Msg::End(file) => {
                        a.end_file(None, None);
                        let _ = marks.send((s, a.take_memory_log(), (file, u64::MAX)));
                    }
                }
            }
            a.finish_parts()
        }));
        txs.push(tx);
    }
    drop(marks_tx);
    let mut reading = Router {
        txs: &txs,
        pool: &pool,
        batches: (0..shards).map(|_| (Batch::new(), Found::default())).collect(),
        file: 0,
        started: false,
        ends: Vec::new(),
    };
    let read = each_file(paths, progress, &mut reading);
    let ends = std::mem::take(&mut reading.ends);
    drop(txs);
    let mut merged: Option<Statistics> = None;
    // Every shard's statistics of one run: merging them is the sequential statistics.
    let mut extras = Vec::new();
    for w in workers {
        let (a, x) = w.join().map_err(|_| thread_failed())?;
        extras.push(x);
        match merged.as_mut() {
            None => merged = Some(a),
            Some(m) => Merge::merge(m, a),
        }
    }
    let peak = merger.join().map_err(|_| thread_failed())?;
    read?;
    let Some(mut a) = merged else {
        return Ok(Some((Analyzer::new(shard_cfg).finish(), extras)));
    };
    for (i, end) in ends.iter().enumerate() {
        a.file_result(i, end);
    }
    let mut report = a.report();
    report.reassembly.peak_bytes = peak as u64;
    if !limited(&report, cfg.max_flows) {
        return Ok(Some((report, extras)));
    }
    // The shards' report goes before the capture is read again, and what their threads
    // freed goes back to the system: glibc keeps a freed arena's pages otherwise, and
    // the run on one core added its own (a flood of 16,384 busy flows: 230 MB against
    // 150 on one core).
    drop((report, pool, extras));
    release_freed_memory();
    Ok(None)
}

/// The reader's side: each frame routed to its shard's batch, marks of how far reading
/// has come, the files' beginnings and ends to every shard.
struct Router<'a> {
    txs: &'a [SyncSender<Msg>],
    pool: &'a Recycler<Frames>,
    batches: Vec<Frames>,
    file: u32,
    started: bool,
    /// How each file ended, for the merged statistics.
    ends: Vec<FileEnd>,
}

impl Reading for Router<'_> {
    fn begin(&mut self, file: usize, name: &str) {
        self.file = file as u32;
        for tx in self.txs {
            let _ = tx.send(Msg::Begin(name.to_string()));
        }
    }

    #[inline(always)]
    fn frame(&mut self, f: Frame) -> bool {
        if !self.started {
            self.started = true;
            for tx in self.txs {
                let _ = tx.send(Msg::Start(f.ts_ns));
            }
        }
        let number = f.number;
        let shards = self.txs.len();
        let s = route(f.linktype, f.data, shards);
        if self.batches[s].0.push(f) {
            send(&self.txs[s], &mut self.batches[s], self.pool);
        }
        if number.is_multiple_of(MARK_EVERY) {
            for (s, b) in self.batches.iter_mut().enumerate() {
                send(&self.txs[s], b, self.pool);
                let _ = self.txs[s].send(Msg::Through(self.file, number));
            }
        }
        true
    }

    fn end(&mut self, file: usize, end: &FileEnd) {
        for (s, b) in self.batches.iter_mut().enumerate() {
            send(&self.txs[s], b, self.pool);
        }
        for tx in self.txs {
            let _ = tx.send(Msg::End(file as u32));
        }
        self.ends.push(end.clone());
    }
}

/// Whether the shards met a limit the sequential run would meet elsewhere (the flow
/// table, a budget), in this report or an inner layer's.
fn limited(report: &Report, max_flows: usize) -> bool {
    report.capture.flows_not_tracked > 0
        || report.flows.len() > max_flows
        || report.reassembly.attacks.evicted_for_memory > 0
        || report.capture.acks_not_tracked > 0
        || report.capture.burst_window_capped > 0
        || report
            .messages
            .as_ref()
            .is_some_and(|m| m.streams_not_tracked > 0)
        || report.layers.iter().any(|l| limited(&l.report, max_flows))
}

/// Returns the pages of freed memory to the system.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; nothing of ours
    // is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::{route, shard_of};
    use gpcap_wire::capture::CaptureReader;
    use gpcap_wire::decode::decode;

    /// Routing straight from the bytes sends every frame where its whole decoding would:
    /// every bundled capture (Ethernet, VLAN, IPv6 over SLL2, IP fragments, ICMP quotes,
    /// malformed frames), every frame cut short at every length of its first 64 bytes.
    #[test]
    fn routing_from_bytes_agrees_with_the_decoding() {
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("captures");
        let mut frames = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.extension().is_some_and(|e| e == "pcap" || e == "pcapng") {
                continue;
            }
            let mut r = CaptureReader::open(&path).unwrap();
            while let Ok(Some(f)) = r.next_frame() {
                frames += 1;
                for cut in (0..f.data.len().min(64)).chain([f.data.len()]) {
                    let data = &f.data[..cut];
                    for shards in [2, 3, 7] {
                        assert_eq!(
                            route(f.linktype, data, shards),
                            shard_of(&decode(f.linktype, data), shards),
                            "{} frame {} cut to {cut} bytes, {shards} shards",
                            path.display(),
                            f.number
                        );
                    }
                }
            }
        }
        assert!(frames > 1000, "{frames} frames");
    }
}
