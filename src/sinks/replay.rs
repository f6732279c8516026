//! Replays a capture's game datagrams over a real UDP socket (a tcpreplay for game
//! traffic: load a test server, or drive `gpcap live`). An engine sink: the datagrams are
//! the ones `analyze` counts, IP-fragmented ones put back together, each payload sent as
//! captured. Paced by the capture's timestamps times a speed, or as fast as the socket
//! takes them; on Linux in batches of [`BATCH`] with one `sendmmsg` call each.

use crate::engine::{Kind, PacketEvent, Sink};
use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// Datagrams handed to the kernel per call.
pub const BATCH: usize = 64;

/// What a replay sent.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replayed {
    pub datagrams: u64,
    pub bytes: u64,
    /// Datagrams the socket refused (e.g. the receiver's port closed: ECONNREFUSED).
    pub errors: u64,
    pub seconds: f64,
    pub datagrams_per_s: f64,
}

pub struct Replay {
    sock: UdpSocket,
    /// Capture time × this = replay time; 0 sends as fast as possible.
    speed: f64,
    start: Option<(Instant, i64)>,
    /// The batch being filled: payloads back to back, and where each ends.
    buf: Vec<u8>,
    ends: Vec<usize>,
    pub sent: Replayed,
    began: Instant,
    /// Stop sending at this time (`--duration`).
    pub until: Option<Instant>,
}

impl Replay {
    /// A socket bound to `from` and connected to `to`.
    pub fn new(from: SocketAddr, to: SocketAddr, speed: f64) -> std::io::Result<Replay> {
        let sock = UdpSocket::bind(from)?;
        sock.connect(to)?;
        Ok(Replay {
            sock,
            speed,
            start: None,
            buf: Vec::with_capacity(BATCH * 1500),
            ends: Vec::with_capacity(BATCH),
            sent: Replayed::default(),
            began: Instant::now(),
            until: None,
        })
    }

    /// Sends what is batched.
    pub fn flush(&mut self) {
        let mut at = 0;
        let mut slices: [&[u8]; BATCH] = [&[]; BATCH];
        for (k, &end) in self.ends.iter().enumerate() {
            slices[k] = &self.buf[at..end];
            at = end;
        }
        let n = self.ends.len();
        let mut done = 0;
        while done < n {
            match send_batch(&self.sock, &slices[done..n]) {
                Ok(0) => break,
                Ok(k) => {
                    for s in &slices[done..done + k] {
                        self.sent.datagrams += 1;
                        self.sent.bytes += s.len() as u64;
                    }
                    done += k;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // The datagram at the head was refused: count it, go on with the rest.
                    self.sent.errors += 1;
                    done += 1;
                }
            }
        }
        self.buf.clear();
        self.ends.clear();
    }

    /// Flushes and says what was sent.
    pub fn finish(mut self) -> Replayed {
        self.flush();
        let s = self.began.elapsed().as_secs_f64();
        self.sent.seconds = s;
        self.sent.datagrams_per_s = if s > 0.0 {
            self.sent.datagrams as f64 / s
        } else {
            0.0
        };
        self.sent
    }

    /// The replay has run for as long as it was given.
    pub fn is_done(&self) -> bool {
        self.until.is_some_and(|t| Instant::now() >= t)
    }

    /// Waits until the capture time `ts_ns` is due at the replay's speed.
    fn pace(&mut self, ts_ns: i64) {
        if self.speed <= 0.0 {
            return;
        }
        let (t0, c0) = *self.start.get_or_insert((Instant::now(), ts_ns));
        let offset = (ts_ns.saturating_sub(c0)).max(0) as f64 / 1e9 / self.speed;
        let mut due = t0 + Duration::from_secs_f64(offset.min(1e9));
        if let Some(until) = self.until {
            due = due.min(until);
        }
        let now = Instant::now();
        if due > now {
            // Batched datagrams go out before the wait, not after it.
            self.flush();
            std::thread::sleep(due - now);
        }
    }
}

impl Sink for Replay {
    fn packet(&mut self, e: &PacketEvent<'_>) {
        // Whole UDP datagrams as they were on the wire (reassembled game packets were
        // never sent as one).
        if e.kind != Kind::Game || e.truncated || self.is_done() {
            return;
        }
        self.pace(e.ts_ns);
        self.buf.extend_from_slice(e.payload);
        self.ends.push(self.buf.len());
        if self.ends.len() == BATCH {
            self.flush();
        }
    }
}

/// Sends datagrams on a connected socket; how many the kernel took.
#[cfg(target_os = "linux")]
fn send_batch(sock: &UdpSocket, datagrams: &[&[u8]]) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let n = datagrams.len().min(BATCH);
    // SAFETY: zeroed iovec/mmsghdr are valid (null pointers, zero lengths).
    let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for k in 0..n {
        iov[k] = libc::iovec {
            iov_base: datagrams[k].as_ptr() as *mut libc::c_void,
            iov_len: datagrams[k].len(),
        };
        msgs[k].msg_hdr.msg_iov = &mut iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `msgs[..n]` point at `iov[..n]`, which point at the caller's slices; all
    // outlive the call, and the kernel only reads them.
    let sent = unsafe { libc::sendmmsg(sock.as_raw_fd(), msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(sent as usize)
}

#[cfg(not(target_os = "linux"))]
fn send_batch(sock: &UdpSocket, datagrams: &[&[u8]]) -> std::io::Result<usize> {
    match datagrams.first() {
        Some(d) => sock.send(d).map(|_| 1),
        None => Ok(0),
    }
}
