//! Live capture: frames from an interface (AF_PACKET with a kernel filter on Linux, or
//! libpcap with the `libpcap` feature), from a growing pcap/pcapng stream (`-`, a FIFO),
//! or from a remote tcpdump over ssh. The capture runs on its own thread so that a slow
//! consumer or screen never stalls the kernel buffer; frames reach the same pipeline as
//! files through a bounded queue in batches, and drops — by the kernel, the interface,
//! the queue or the remote tcpdump — are counted, never silent.

#[cfg(target_os = "linux")]
mod afpacket;
pub mod bpf;
mod feeder;
#[cfg(feature = "libpcap")]
mod pcap;
pub mod ssh;
mod stream;

use feeder::Feeder;
use gpcap_engine::Batch;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
pub use stream::Ended;

#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub iface: String,
    /// A libpcap filter expression (`udp port 40000`): only with the `libpcap` feature.
    pub bpf: Option<String>,
    /// The protocol's UDP ports for the kernel filter (empty: all UDP).
    pub ports: Vec<u16>,
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
            ports: Vec::new(),
            snaplen: 65535,
            buffer: 64 << 20,
            queue: 1 << 16,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    #[error(
        "no permission to capture on {iface}: {message}\n  run as root (sudo gpcap live …), or give the binary the capabilities once: sudo setcap cap_net_raw,cap_net_admin=eip $(command -v gpcap)"
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
    pub linktype: i32,
    pub data: Vec<u8>,
}

/// Packet counts for the drop report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveStats {
    /// Frames handed to the analysis.
    pub captured: u64,
    /// Received by the kernel filter.
    pub kernel_received: u64,
    /// Dropped by the kernel: the buffer was full.
    pub kernel_dropped: u64,
    /// Dropped by the interface or its driver (its `rx_dropped` since the start).
    pub if_dropped: u64,
    /// Dropped because the analysis fell behind the queue.
    pub queue_dropped: u64,
    /// Of `captured`, frames not in the report: still queued (a periodic report), or
    /// given up because the run was stopped while the analysis was behind.
    pub not_analyzed: u64,
    /// A remote tcpdump's "received by filter" (ssh; known when it ends).
    pub remote_received: Option<u64>,
    /// A remote tcpdump's "dropped by kernel" (ssh; known when it ends).
    pub remote_dropped: Option<u64>,
}

/// An interface as `gpcap live --list` shows it.
#[derive(Debug, Clone)]
pub struct Interface {
    pub name: String,
    pub description: Option<String>,
    pub addresses: Vec<String>,
}

/// The interfaces of this host.
pub fn interfaces() -> Result<Vec<Interface>, String> {
    #[cfg(feature = "libpcap")]
    return pcap::interfaces();
    #[cfg(all(not(feature = "libpcap"), target_os = "linux"))]
    return afpacket::interfaces();
    #[cfg(all(not(feature = "libpcap"), not(target_os = "linux")))]
    Err("live capture on this system needs the libpcap build (cargo install --features libpcap)".into())
}

/// A batch of captured frames as [`LiveCapture::next_batch`] hands it over.
pub type FrameBatch = Batch;

/// Frames the capture thread hands over at once: one channel operation per batch, not
/// per frame, so that the thread goes back to the kernel's ring sooner.
const BATCH: usize = 256;
/// Room a batch starts with: 256 typical game frames (it grows for large ones).
const BATCH_BYTES: usize = BATCH * 256;
/// A batch waits at most this long for more frames (the screen's latency).
const BATCH_WAIT: Duration = Duration::from_millis(2);
/// Batches kept for the capture thread to fill again (more are allocated when it runs out).
const SPARE_BATCHES: usize = 64;

/// What a capture thread shares with its [`LiveCapture`].
#[derive(Clone)]
struct Shared {
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<LiveStats>>,
    queue_dropped: Arc<AtomicU64>,
    /// Frames handed to the analysis, kept by the feeder as it hands them over: a report
    /// reads it with the frames analyzed and never finds fewer captured than analyzed.
    handed: Arc<AtomicU64>,
    failure: Arc<Mutex<Option<String>>>,
}

impl Shared {
    fn fail(&self, why: String) {
        if let Ok(mut f) = self.failure.lock() {
            f.get_or_insert(why);
        }
    }
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A running capture.
pub struct LiveCapture {
    rx: Receiver<Batch>,
    /// Emptied batches on their way back to the capture thread.
    spare: SyncSender<Batch>,
    /// The batch [`LiveCapture::next`] is taking frames from, and how many it took.
    pending: std::cell::RefCell<Option<(Batch, usize)>>,
    shared: Shared,
    thread: Option<JoinHandle<()>>,
    /// Run when the capture is asked to stop (ssh: closes the remote side's input).
    on_stop: Option<Box<dyn FnOnce() + Send>>,
    pub linktype: i32,
    /// Why the capture stopped on its own, if it did (a lost connection, a stream that
    /// breaks off: what was captured before it is kept).
    pub failure: Arc<Mutex<Option<String>>>,
}

/// The capture thread's end of things, given to a source.
struct Start {
    feeder: Feeder,
    ready: SyncSender<Result<i32, LiveError>>,
    shared: Shared,
}

impl LiveCapture {
    /// Opens the interface (errors come back here, before anything runs) and starts
    /// capturing on a thread of its own.
    pub fn start(opts: &LiveOptions) -> Result<LiveCapture, LiveError> {
        let o = opts.clone();
        let name = opts.iface.clone();
        Self::spawn(&name, opts.queue, None, move |s| interface_thread(o, s))
    }

    /// Follows a pcap/pcapng stream (`-`, a FIFO, a process's output) as live traffic
    /// until it ends; `ended` says how it ended (for ssh: the process's status).
    pub fn from_stream(
        name: &str,
        input: impl std::io::Read + Send + 'static,
        ended: Option<Ended>,
        on_stop: Option<Box<dyn FnOnce() + Send>>,
    ) -> Result<LiveCapture, LiveError> {
        let n = name.to_string();
        Self::spawn(name, 1 << 16, on_stop, move |s| stream::run(&n, input, ended, s))
    }

    fn spawn(
        name: &str,
        queue: usize,
        on_stop: Option<Box<dyn FnOnce() + Send>>,
        body: impl FnOnce(Start) + Send + 'static,
    ) -> Result<LiveCapture, LiveError> {
        let (tx, rx) = sync_channel::<Batch>((queue / BATCH).max(16));
        let (spare, spares) = sync_channel::<Batch>(SPARE_BATCHES);
        let (ready, ready_rx) = sync_channel::<Result<i32, LiveError>>(1);
        let shared = Shared {
            stop: Arc::new(AtomicBool::new(false)),
            stats: Arc::new(Mutex::new(LiveStats::default())),
            queue_dropped: Arc::new(AtomicU64::new(0)),
            handed: Arc::new(AtomicU64::new(0)),
            failure: Arc::new(Mutex::new(None)),
        };
        let start = Start {
            feeder: Feeder::new(tx, spares, shared.queue_dropped.clone(), shared.handed.clone()),
            ready,
            shared: shared.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("gpcap-capture".into())
            .spawn(move || body(start))
            .map_err(|e| LiveError::Other {
                iface: name.into(),
                message: e.to_string(),
            })?;
        let linktype = match ready_rx.recv() {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                if let Some(f) = on_stop {
                    f();
                }
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                return Err(LiveError::Other {
                    iface: name.into(),
                    message: "capture thread ended before opening the interface".into(),
                });
            }
        };
        Ok(LiveCapture {
            rx,
            spare,
            pending: Default::default(),
            failure: shared.failure.clone(),
            shared,
            thread: Some(thread),
            on_stop,
            linktype,
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
                    linktype: f.linktype,
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
        let mut s = self.shared.stats.lock().map(|s| *s).unwrap_or_default();
        s.queue_dropped = self.shared.queue_dropped.load(Ordering::Relaxed);
        s.captured = self.shared.handed.load(Ordering::Relaxed);
        s
    }

    /// The capture goes on, or frames it captured still wait in the queue.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Asks the capture thread to stop, without waiting: frames queued (and the few it
    /// hands over as it stops) can still be read.
    pub fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(f) = self.on_stop.take() {
            f();
        }
    }

    /// Stops capturing; frames still queued can be read with `next`. A stream blocked
    /// in a read that does not end within a few seconds is left to the process's exit.
    pub fn stop(&mut self) -> LiveStats {
        self.stop_and(|_| {})
    }

    /// Stops capturing and hands each batch still queued (and those the thread hands
    /// over as it stops) to `each` instead of the analysis: they stay counted in
    /// `captured`, and the caller says they were not analyzed. A stream's thread waiting
    /// for room in a full queue is so let go at once.
    pub fn abandon(&mut self, mut each: impl FnMut(&Batch)) -> LiveStats {
        self.stop_and(|c| {
            while let Ok(b) = c.rx.try_recv() {
                each(&b);
                c.recycle(b);
            }
        })
    }

    fn stop_and(&mut self, mut each_wait: impl FnMut(&Self)) -> LiveStats {
        self.halt();
        if let Some(t) = self.thread.take() {
            let until = Instant::now() + Duration::from_secs(5);
            while !t.is_finished() && Instant::now() < until {
                each_wait(self);
                std::thread::sleep(Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
        each_wait(self);
        self.stats()
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(f) = self.on_stop.take() {
            f();
        }
    }
}

/// An interface's capture: libpcap when a filter expression was given and the `libpcap`
/// feature is in, else AF_PACKET with the generated kernel filter.
fn interface_thread(o: LiveOptions, s: Start) {
    #[cfg(feature = "libpcap")]
    if o.bpf.is_some() || !cfg!(target_os = "linux") {
        return pcap::run(o, s);
    }
    if let Some(f) = &o.bpf {
        let _ = s.ready.send(Err(LiveError::Filter {
            filter: f.clone(),
            message: "filter expressions need the libpcap build (cargo install --path . --features libpcap)"
                .into(),
        }));
        return;
    }
    #[cfg(target_os = "linux")]
    afpacket::run(o, s);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = s.ready.send(Err(LiveError::Other {
            iface: o.iface,
            message: "live capture on this system needs the libpcap build (cargo install --path . --features libpcap)".into(),
        }));
    }
}

/// Where `--write` puts frames.
pub type WritePath = Option<PathBuf>;

/// Sleeps until `fd` is readable or `at_most` passes (to see the stop flag).
#[cfg(unix)]
fn poll_readable(fd: std::os::fd::RawFd, at_most: Duration) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the length of the call.
    if unsafe { libc::poll(&mut p, 1, at_most.as_millis() as libc::c_int) } < 0 {
        std::thread::sleep(Duration::from_micros(200));
    }
}
