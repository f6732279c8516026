//! Live capture with libpcap (cargo feature `live`): the capture runs on its own thread
//! so a slow consumer or screen never stalls the kernel buffer; frames reach the same
//! pipeline as files through a bounded queue, and drops — by the kernel, the interface
//! or the queue — are counted, never silent.

use crate::capture::Frame;
pub use crate::engine::Batch;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub iface: String,
    /// A BPF capture filter (`udp port 40000`).
    pub bpf: Option<String>,
    pub snaplen: i32,
    /// Kernel buffer in bytes.
    pub buffer: i32,
    /// Frames queued between the capture thread and the analysis.
    pub queue: usize,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            iface: "lo".into(),
            bpf: None,
            snaplen: 65535,
            buffer: 64 << 20,
            queue: 1 << 16,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    #[error(
        "no permission to capture on {iface}: {message}\n  run as root, or give the binary the capabilities: sudo setcap cap_net_raw,cap_net_admin=eip $(command -v gpcap)"
    )]
    Permission { iface: String, message: String },
    #[error("no such interface `{iface}`; interfaces: {}", .available.join(", "))]
    NoSuchInterface { iface: String, available: Vec<String> },
    #[error("bad capture filter `{filter}`: {message}")]
    Filter { filter: String, message: String },
    #[error("live capture on {iface} failed: {message}")]
    Other { iface: String, message: String },
}

/// One captured frame.
#[derive(Debug, Clone)]
pub struct Captured {
    pub ts_ns: i64,
    pub origlen: u32,
    pub data: Vec<u8>,
}

/// Packet counts for the drop report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveStats {
    /// Frames handed to the analysis.
    pub captured: u64,
    /// Received by the kernel filter (libpcap's count).
    pub kernel_received: u64,
    /// Dropped by the kernel: the buffer was full.
    pub kernel_dropped: u64,
    /// Dropped by the interface or its driver.
    pub if_dropped: u64,
    /// Dropped because the analysis fell behind the queue.
    pub queue_dropped: u64,
}

/// An interface as `gpcap live --list` shows it.
#[derive(Debug, Clone)]
pub struct Interface {
    pub name: String,
    pub description: Option<String>,
    pub addresses: Vec<String>,
}

pub fn interfaces() -> Result<Vec<Interface>, String> {
    let list = pcap::Device::list().map_err(|e| e.to_string())?;
    Ok(list
        .into_iter()
        .map(|d| Interface {
            addresses: d.addresses.iter().map(|a| a.addr.to_string()).collect(),
            name: d.name,
            description: d.desc,
        })
        .collect())
}

fn classify(iface: &str, e: pcap::Error) -> LiveError {
    let message = e.to_string();
    let lower = message.to_lowercase();
    if lower.contains("permission") || lower.contains("not permitted") {
        LiveError::Permission {
            iface: iface.into(),
            message,
        }
    } else if lower.contains("no such device")
        || lower.contains("doesn't exist")
        || lower.contains("does not exist")
    {
        LiveError::NoSuchInterface {
            iface: iface.into(),
            available: interfaces()
                .map(|v| v.into_iter().map(|i| i.name).collect())
                .unwrap_or_default(),
        }
    } else {
        LiveError::Other {
            iface: iface.into(),
            message,
        }
    }
}

/// Frames the capture thread hands over at once: one channel operation per batch, not
/// per frame, so that the thread goes back to the kernel's ring sooner.
const BATCH: usize = 256;
/// Room a batch starts with: 256 typical game frames (it grows for large ones).
const BATCH_BYTES: usize = BATCH * 256;
/// A batch waits at most this long for more frames (the screen's latency).
const BATCH_WAIT: Duration = Duration::from_millis(2);

/// Batches kept for the capture thread to fill again (more are allocated when it runs out).
const SPARE_BATCHES: usize = 64;

/// A running capture.
pub struct LiveCapture {
    rx: Receiver<Batch>,
    /// Emptied batches on their way back to the capture thread.
    spare: SyncSender<Batch>,
    /// The batch [`LiveCapture::next`] is taking frames from, and how many it took.
    pending: std::cell::RefCell<Option<(Batch, usize)>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<Mutex<LiveStats>>,
    queue_dropped: Arc<AtomicU64>,
    pub linktype: i32,
    /// Why the capture thread stopped on its own, if it did.
    pub failure: Arc<Mutex<Option<String>>>,
}

impl LiveCapture {
    /// Opens the interface (errors come back here, before anything runs) and starts
    /// capturing on a thread of its own.
    pub fn start(opts: &LiveOptions) -> Result<LiveCapture, LiveError> {
        let (tx, rx) = sync_channel::<Batch>((opts.queue / BATCH).max(16));
        let (spare, spares) = sync_channel::<Batch>(SPARE_BATCHES);
        let (ready_tx, ready_rx) = sync_channel::<Result<i32, LiveError>>(1);
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(LiveStats::default()));
        let queue_dropped = Arc::new(AtomicU64::new(0));
        let failure = Arc::new(Mutex::new(None));
        let o = opts.clone();
        let (stop2, stats2, qd2, fail2) = (
            stop.clone(),
            stats.clone(),
            queue_dropped.clone(),
            failure.clone(),
        );
        let thread = std::thread::Builder::new()
            .name("gpcap-capture".into())
            .spawn(move || capture_thread(o, tx, spares, ready_tx, stop2, stats2, qd2, fail2))
            .map_err(|e| LiveError::Other {
                iface: opts.iface.clone(),
                message: e.to_string(),
            })?;
        let linktype = match ready_rx.recv() {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                return Err(LiveError::Other {
                    iface: opts.iface.clone(),
                    message: "capture thread ended before opening the interface".into(),
                });
            }
        };
        Ok(LiveCapture {
            rx,
            spare,
            pending: Default::default(),
            stop,
            thread: Some(thread),
            stats,
            queue_dropped,
            linktype,
            failure,
        })
    }

    /// The next frame, waiting at most `wait` (a copy: [`LiveCapture::next_batch`] is the
    /// fast way).
    pub fn next(&self, wait: Duration) -> Option<Captured> {
        let mut pending = self.pending.borrow_mut();
        loop {
            if let Some((batch, taken)) = pending.as_mut()
                && let Some(f) = batch.frame(*taken)
            {
                *taken += 1;
                return Some(Captured {
                    ts_ns: f.ts_ns,
                    origlen: f.origlen,
                    data: f.data.to_vec(),
                });
            }
            if let Some((done, _)) = pending.take() {
                self.recycle(done);
            }
            *pending = Some((self.receive(wait)?, 0));
        }
    }

    /// The next batch of frames, waiting at most `wait`; hand it back with
    /// [`LiveCapture::recycle`] once read.
    pub fn next_batch(&self, wait: Duration) -> Option<Batch> {
        if let Some((batch, taken)) = self.pending.borrow_mut().take() {
            if taken == 0 {
                return Some(batch);
            }
            // What `next` left of its batch (rare: only after `next` was used).
            let mut rest = Batch::with_capacity(BATCH, BATCH_BYTES);
            for f in batch.frames_from(taken) {
                rest.push(f);
            }
            self.recycle(batch);
            if !rest.is_empty() {
                return Some(rest);
            }
        }
        self.receive(wait)
    }

    /// Gives a read batch back to the capture thread, so that capturing allocates nothing.
    pub fn recycle(&self, mut batch: Batch) {
        batch.clear();
        let _ = self.spare.try_send(batch);
    }

    fn receive(&self, wait: Duration) -> Option<Batch> {
        match self.rx.try_recv() {
            Ok(b) => Some(b),
            Err(_) if wait.is_zero() => None,
            Err(_) => match self.rx.recv_timeout(wait) {
                Ok(b) => Some(b),
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => None,
            },
        }
    }

    pub fn stats(&self) -> LiveStats {
        let mut s = self.stats.lock().map(|s| *s).unwrap_or_default();
        s.queue_dropped = self.queue_dropped.load(Ordering::Relaxed);
        s
    }

    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops capturing; frames still queued can be read with `next`.
    pub fn stop(&mut self) -> LiveStats {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.stats()
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[allow(clippy::too_many_arguments)]
fn capture_thread(
    o: LiveOptions,
    tx: SyncSender<Batch>,
    spares: Receiver<Batch>,
    ready: SyncSender<Result<i32, LiveError>>,
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<LiveStats>>,
    queue_dropped: Arc<AtomicU64>,
    failure: Arc<Mutex<Option<String>>>,
) {
    let opened = pcap::Capture::from_device(o.iface.as_str())
        .map(|c| {
            // Not immediate mode: libpcap then uses TPACKET_V3, whose blocks pack frames
            // by their length, so the 64 MiB buffer holds about 64 MiB of packets;
            // immediate mode's TPACKET_V2 gives each frame a snaplen-sized slot (about
            // 1,000 slots at 65,535 bytes), which bursts of small datagrams overflow.
            // A block is handed over when full or after the timeout: 10 ms of latency.
            c.promisc(false)
                .snaplen(o.snaplen)
                .timeout(10)
                .immediate_mode(false)
                .buffer_size(o.buffer)
                .precision(pcap::Precision::Nano)
        })
        .and_then(|c| c.open());
    let mut cap = match opened {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(classify(&o.iface, e)));
            return;
        }
    };
    if let Some(f) = &o.bpf
        && let Err(e) = cap.filter(f, true)
    {
        let _ = ready.send(Err(LiveError::Filter {
            filter: f.clone(),
            message: e.to_string(),
        }));
        return;
    }
    // Non-blocking: with immediate mode some kernels ignore the read timeout, and a
    // blocked read would never see the stop flag on a quiet interface.
    let mut cap = match cap.setnonblock() {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(classify(&o.iface, e)));
            return;
        }
    };
    let linktype = cap.get_datalink().0;
    let _ = ready.send(Ok(linktype));
    let mut captured = 0u64;
    let mut last_stats = std::time::Instant::now();
    let mut batch = Batch::with_capacity(BATCH, BATCH_BYTES);
    let mut batch_since = std::time::Instant::now();
    // Hands the batch over; a full queue drops it whole, counted.
    let flush = |batch: &mut Batch, captured: &mut u64| -> bool {
        if batch.is_empty() {
            return true;
        }
        let n = batch.len() as u64;
        let next = spares
            .try_recv()
            .unwrap_or_else(|_| Batch::with_capacity(BATCH, BATCH_BYTES));
        match tx.try_send(std::mem::replace(batch, next)) {
            Ok(()) => *captured += n,
            Err(TrySendError::Full(mut dropped)) => {
                queue_dropped.fetch_add(n, Ordering::Relaxed);
                dropped.clear();
                *batch = dropped;
            }
            Err(TrySendError::Disconnected(_)) => return false,
        }
        true
    };
    let mut polls = 0u32;
    while !stop.load(Ordering::Relaxed) {
        match cap.next_packet() {
            Ok(p) => {
                let ts = p.header.ts;
                // Nanosecond precision was asked for: tv_usec holds nanoseconds. (The casts
                // matter where time_t and suseconds_t are 32 bits.)
                #[allow(clippy::unnecessary_cast)]
                let ts_ns = ts.tv_sec as i64 * 1_000_000_000 + ts.tv_usec as i64;
                if batch.is_empty() {
                    batch_since = std::time::Instant::now();
                }
                batch.push(Frame {
                    number: 0,
                    ts_ns,
                    linktype,
                    interface: 0,
                    origlen: p.header.len,
                    offset: 0,
                    data: p.data,
                });
                polls = polls.wrapping_add(1);
                // The clock is read every 32 frames, not every one.
                let late = polls.is_multiple_of(32) && batch_since.elapsed() > BATCH_WAIT;
                if (batch.len() >= BATCH || late) && !flush(&mut batch, &mut captured) {
                    break;
                }
                if !polls.is_multiple_of(1024) {
                    continue;
                }
            }
            Err(pcap::Error::TimeoutExpired) => {
                if !flush(&mut batch, &mut captured) {
                    break;
                }
                wait_readable(&cap, Duration::from_millis(20));
            }
            Err(e) => {
                if let Ok(mut f) = failure.lock() {
                    *f = Some(e.to_string());
                }
                break;
            }
        }
        if last_stats.elapsed() > Duration::from_millis(200) {
            last_stats = std::time::Instant::now();
            if let (Ok(s), Ok(mut shared)) = (cap.stats(), stats.lock()) {
                shared.kernel_received = s.received as u64;
                shared.kernel_dropped = s.dropped as u64;
                shared.if_dropped = s.if_dropped as u64;
                shared.captured = captured;
            }
        }
    }
    flush(&mut batch, &mut captured);
    if let (Ok(s), Ok(mut shared)) = (cap.stats(), stats.lock()) {
        shared.kernel_received = s.received as u64;
        shared.kernel_dropped = s.dropped as u64;
        shared.if_dropped = s.if_dropped as u64;
        shared.captured = captured;
    }
}

/// Sleeps until the kernel hands over a block of frames (or `at_most` passes, to see the
/// stop flag): one wakeup per block instead of polling.
fn wait_readable(cap: &pcap::Capture<pcap::Active>, at_most: Duration) {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd {
        fd: cap.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the length of the call.
    if unsafe { libc::poll(&mut fd, 1, at_most.as_millis() as libc::c_int) } < 0 {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Where `--write` puts frames.
pub type WritePath = Option<PathBuf>;
