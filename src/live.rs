//! Live capture with libpcap (cargo feature `live`): the capture runs on its own thread
//! so a slow consumer or screen never stalls the kernel buffer; frames reach the same
//! pipeline as files through a bounded queue, and drops — by the kernel, the interface
//! or the queue — are counted, never silent.

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
/// A batch waits at most this long for more frames (the screen's latency).
const BATCH_WAIT: Duration = Duration::from_millis(2);

/// A running capture.
pub struct LiveCapture {
    rx: Receiver<Vec<Captured>>,
    /// Frames of the last batch not taken yet.
    pending: std::cell::RefCell<std::collections::VecDeque<Captured>>,
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
        let (tx, rx) = sync_channel::<Vec<Captured>>((opts.queue / BATCH).max(16));
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
            .spawn(move || capture_thread(o, tx, ready_tx, stop2, stats2, qd2, fail2))
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
            pending: Default::default(),
            stop,
            thread: Some(thread),
            stats,
            queue_dropped,
            linktype,
            failure,
        })
    }

    /// The next frame, waiting at most `wait`.
    pub fn next(&self, wait: Duration) -> Option<Captured> {
        let mut pending = self.pending.borrow_mut();
        if let Some(c) = pending.pop_front() {
            return Some(c);
        }
        let batch = match self.rx.try_recv() {
            Ok(b) => b,
            Err(_) if wait.is_zero() => return None,
            Err(_) => match self.rx.recv_timeout(wait) {
                Ok(b) => b,
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return None,
            },
        };
        pending.extend(batch);
        pending.pop_front()
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
    tx: SyncSender<Vec<Captured>>,
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
    let _ = ready.send(Ok(cap.get_datalink().0));
    let mut captured = 0u64;
    let mut last_stats = std::time::Instant::now();
    let mut batch: Vec<Captured> = Vec::with_capacity(BATCH);
    let mut batch_since = std::time::Instant::now();
    // Hands the batch over; a full queue drops it whole, counted.
    let flush = |batch: &mut Vec<Captured>, captured: &mut u64| -> bool {
        if batch.is_empty() {
            return true;
        }
        let n = batch.len() as u64;
        match tx.try_send(std::mem::replace(batch, Vec::with_capacity(BATCH))) {
            Ok(()) => *captured += n,
            Err(TrySendError::Full(_)) => {
                queue_dropped.fetch_add(n, Ordering::Relaxed);
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
                batch.push(Captured {
                    ts_ns,
                    origlen: p.header.len,
                    data: p.data.to_vec(),
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
                std::thread::sleep(Duration::from_micros(200));
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

/// Where `--write` puts frames.
pub type WritePath = Option<PathBuf>;
