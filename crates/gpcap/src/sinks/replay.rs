//! Replays a capture's game datagrams over a real UDP socket (a tcpreplay for game
//! traffic: load a test server, or drive `gpcap live`). An engine sink: the datagrams are
//! the ones `analyze` counts, IP-fragmented ones put back together, each payload sent as
//! captured. Paced by the capture's timestamps times a speed, or as fast as the socket
//! takes them; on Linux in batches of `BATCH` with one `sendmmsg` call each.
//!
//! On Linux the datagrams can also go out as Ethernet frames on an interface through a
//! packet socket ([`Replay::on_link`]): no local IP or UDP stack on the way, so a
//! receiver on the other end of a veth pair sees what a mirror port would, at several
//! times the rate a UDP socket reaches.

use gpcap_engine::{Flow, Kind, PacketEvent, Sink, SinkError};
use gpcap_generate::net::{Link, ip_packets};
use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// Datagrams handed to the kernel per call.
pub(crate) const BATCH: usize = 64;

/// What a replay sent.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replayed {
    pub datagrams: u64,
    /// UDP payload bytes.
    pub bytes: u64,
    /// Link-layer frames handed to the interface (`--iface`: a datagram over the MTU
    /// goes as several IP fragments); 0 through a UDP socket.
    pub frames: u64,
    /// Datagrams (or, with `--iface`, frames) not sent: refused by the kernel (e.g. the
    /// receiver's port closed: ECONNREFUSED), or a datagram whose addresses are not all
    /// IPv4 or all IPv6.
    pub errors: u64,
    /// The first refusal's words, to say why (`None` when everything was sent).
    pub first_error: Option<String>,
    /// UDP sockets sent from: one per captured direction (source and destination), so
    /// a receiver sees each direction as a flow of its own; 0 with `--iface`.
    pub sockets: u64,
    /// Directions past [`MAX_SOCKETS`] (or all but the first, with a `--from` port),
    /// sent from a socket another direction also uses.
    pub shared_directions: u64,
    pub seconds: f64,
    pub datagrams_per_s: f64,
}

impl Replayed {
    /// Counts a message the kernel refused, keeping the first reason.
    fn refused(&mut self, e: &std::io::Error) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }
}

/// Sockets a UDP replay opens at most, one per captured direction (file descriptors are
/// finite; past this, directions share sockets round robin and the summary says how many).
pub const MAX_SOCKETS: usize = 256;

/// Where the datagrams go.
enum Out {
    /// UDP sockets connected to the destination, one per captured direction.
    Udp(UdpOut),
    /// A packet socket bound to an interface.
    #[cfg(target_os = "linux")]
    Link(LinkOut),
}

#[cfg(target_os = "linux")]
struct LinkOut {
    sock: std::os::fd::OwnedFd,
    mtu: usize,
    /// Rewrite every datagram's source / destination to these (else as captured).
    from: Option<SocketAddr>,
    to: Option<SocketAddr>,
    ip_id: u32,
}

/// A UDP replay's sockets: each captured direction gets one of its own, bound to `from`
/// (an ephemeral port unless `from` names one) and connected to `to`, so the kernel
/// reports a refused destination on it.
struct UdpOut {
    from: SocketAddr,
    to: SocketAddr,
    sockets: Vec<UdpSocket>,
    /// Captured direction (source, destination) → its socket.
    by_direction: hashbrown::HashMap<(SocketAddr, SocketAddr), usize>,
}

impl UdpOut {
    /// The socket of a captured direction, opened on first use.
    fn socket_for(&mut self, dir: (SocketAddr, SocketAddr), sent: &mut Replayed) -> std::io::Result<usize> {
        if let Some(&k) = self.by_direction.get(&dir) {
            return Ok(k);
        }
        let met = self.by_direction.len();
        // A port given with --from can be bound once: every direction shares it.
        let k = if met < self.sockets.len() {
            met
        } else if self.sockets.len() >= MAX_SOCKETS || self.from.port() != 0 {
            sent.shared_directions += 1;
            met % self.sockets.len()
        } else {
            self.sockets.push(connected(self.from, self.to)?);
            sent.sockets += 1;
            self.sockets.len() - 1
        };
        self.by_direction.insert(dir, k);
        Ok(k)
    }
}

/// A UDP socket bound to `from` and connected to `to`.
fn connected(from: SocketAddr, to: SocketAddr) -> std::io::Result<UdpSocket> {
    let sock = UdpSocket::bind(from)?;
    sock.connect(to)?;
    Ok(sock)
}

/// One message of the batch: where it ends in `buf`, the UDP payload length when it is the
/// last (or only) piece of its datagram, and the socket it leaves from (UDP).
#[derive(Clone, Copy)]
struct Piece {
    end: usize,
    datagram: Option<usize>,
    socket: usize,
}

pub struct Replay {
    out: Out,
    /// Capture time × this = replay time; 0 sends as fast as possible.
    speed: f64,
    start: Option<(Instant, i64)>,
    /// The batch being filled: messages back to back, and where each ends.
    buf: Vec<u8>,
    pieces: Vec<Piece>,
    pub sent: Replayed,
    began: Instant,
    /// Stop sending at this time (`--duration`).
    pub until: Option<Instant>,
    /// `until` has passed (looked at once a batch: reading the clock per datagram cost
    /// more than building it).
    over: bool,
}

impl Replay {
    /// Sockets bound to `from` and connected to `to`, one per captured direction (the
    /// first is opened here, so that an address that cannot be bound fails at once).
    pub fn new(from: SocketAddr, to: SocketAddr, speed: f64) -> std::io::Result<Replay> {
        let first = connected(from, to)?;
        let out = UdpOut {
            from,
            to,
            sockets: vec![first],
            by_direction: Default::default(),
        };
        let mut r = Replay::with(Out::Udp(out), speed);
        r.sent.sockets = 1;
        Ok(r)
    }

    /// A packet socket on `iface` that sends each datagram as Ethernet + IP + UDP, from
    /// and to the captured addresses unless `from` / `to` replace them, IP-fragmented at
    /// the interface's MTU. Needs root or CAP_NET_RAW.
    #[cfg(target_os = "linux")]
    pub fn on_link(
        iface: &str,
        from: Option<SocketAddr>,
        to: Option<SocketAddr>,
        speed: f64,
    ) -> std::io::Result<Replay> {
        let (sock, mtu) = packet_socket(iface)?;
        let out = Out::Link(LinkOut {
            sock,
            mtu,
            from,
            to,
            ip_id: 0,
        });
        Ok(Replay::with(out, speed))
    }

    fn with(out: Out, speed: f64) -> Replay {
        Replay {
            out,
            speed,
            start: None,
            buf: Vec::with_capacity(BATCH * 1500),
            pieces: Vec::with_capacity(BATCH),
            sent: Replayed::default(),
            began: Instant::now(),
            until: None,
            over: false,
        }
    }

    /// Sends what is batched.
    pub fn flush(&mut self) {
        let mut slices: [&[u8]; BATCH] = [&[]; BATCH];
        let mut at = 0;
        for (k, p) in self.pieces.iter().enumerate() {
            slices[k] = &self.buf[at..p.end];
            at = p.end;
        }
        let n = self.pieces.len();
        let link = !matches!(self.out, Out::Udp(_));
        let mut done = 0;
        while done < n {
            // One call per run of messages from the same socket, in capture order.
            let socket = self.pieces[done].socket;
            let run = self.pieces[done..n]
                .iter()
                .take_while(|p| p.socket == socket)
                .count();
            let took = match self.out.send(socket, &slices[done..done + run]) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // The message at the head was refused: count it, go on with the rest.
                    self.sent.refused(&e);
                    done += 1;
                    continue;
                }
            };
            for p in &self.pieces[done..done + took] {
                self.sent.frames += link as u64;
                if let Some(len) = p.datagram {
                    self.sent.datagrams += 1;
                    self.sent.bytes += len as u64;
                }
            }
            done += took;
        }
        self.buf.clear();
        self.pieces.clear();
        self.over = self.until.is_some_and(|t| Instant::now() >= t);
    }

    /// Adds one message to the batch, sending the batch when full.
    fn push(&mut self, message: &[u8], datagram: Option<usize>, socket: usize) {
        self.buf.extend_from_slice(message);
        self.ended(datagram, socket);
    }

    /// The message written at the end of `buf` is complete: sends the batch when full.
    fn ended(&mut self, datagram: Option<usize>, socket: usize) {
        self.pieces.push(Piece {
            end: self.buf.len(),
            datagram,
            socket,
        });
        if self.pieces.len() >= BATCH {
            self.flush();
        }
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
        self.over || (self.pieces.is_empty() && self.until.is_some_and(|t| Instant::now() >= t))
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

impl Replay {
    /// One event ([`Sink::packet`]).
    fn take(&mut self, e: &PacketEvent<'_>) {
        // Whole UDP datagrams as they were on the wire (reassembled game packets were
        // never sent as one).
        if e.kind != Kind::Game || e.truncated || self.is_done() {
            return;
        }
        self.pace(e.ts_ns);
        match &mut self.out {
            Out::Udp(u) => {
                let Some(flow) = e.flow else { return };
                match u.socket_for((flow.src, flow.dst), &mut self.sent) {
                    Ok(socket) => self.push(e.payload, Some(e.payload.len()), socket),
                    Err(err) => self.sent.refused(&err),
                }
            }
            #[cfg(target_os = "linux")]
            Out::Link(l) => {
                let Some(flow) = e.flow else { return };
                let src = l.from.unwrap_or(flow.src);
                let dst = l.to.unwrap_or(flow.dst);
                // A UDP length field holds at most 65,535 bytes, header included.
                if src.is_ipv4() != dst.is_ipv4() || e.payload.len() > 65_535 - 8 {
                    let why = if src.is_ipv4() != dst.is_ipv4() {
                        "source and destination are not both IPv4 or both IPv6"
                    } else {
                        "over the 65,527 bytes a UDP datagram holds"
                    };
                    self.sent.refused(&std::io::Error::other(why));
                    return;
                }
                l.ip_id = l.ip_id.wrapping_add(1);
                let packets = ip_packets(src, dst, e.payload, l.ip_id, false, l.mtu);
                let last = packets.len() - 1;
                for (i, p) in packets.iter().enumerate() {
                    Link::Ethernet { vlan: None }.frame_into(&mut self.buf, p, src.is_ipv6());
                    self.ended((i == last).then_some(e.payload.len()), 0);
                }
            }
        }
    }
}

impl Sink for Replay {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        self.take(e);
        Ok(Flow::stop_if(self.is_done()))
    }
}

impl Out {
    /// Hands messages to the kernel from `socket` (UDP); how many it took.
    fn send(&self, socket: usize, messages: &[&[u8]]) -> std::io::Result<usize> {
        match self {
            #[cfg(target_os = "linux")]
            Out::Udp(u) => send_batch(std::os::fd::AsRawFd::as_raw_fd(&u.sockets[socket]), messages),
            #[cfg(target_os = "linux")]
            Out::Link(l) => send_batch(std::os::fd::AsRawFd::as_raw_fd(&l.sock), messages),
            #[cfg(not(target_os = "linux"))]
            Out::Udp(u) => match messages.first() {
                Some(d) => u.sockets[socket].send(d).map(|_| 1),
                None => Ok(0),
            },
        }
    }
}

/// A raw packet socket bound to `iface` that skips the queueing discipline (frames go
/// straight to the driver, as a mirror port's would arrive), and the interface's MTU.
#[cfg(target_os = "linux")]
fn packet_socket(iface: &str) -> std::io::Result<(std::os::fd::OwnedFd, usize)> {
    use std::os::fd::FromRawFd;
    let name = std::ffi::CString::new(iface).map_err(std::io::Error::other)?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(std::io::Error::other(format!("no interface `{iface}`")));
    }
    let mtu = std::fs::read_to_string(format!("/sys/class/net/{iface}/mtu"))
        .ok()
        .and_then(|m| m.trim().parse::<usize>().ok())
        .filter(|&m| m >= 68)
        .unwrap_or(1500);
    // SAFETY: plain socket(2); the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let sock = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: a zeroed sockaddr_ll is valid; the fields set are plain integers.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    // Protocol 0: the socket receives nothing; the kernel reads each frame's EtherType.
    addr.sll_protocol = 0;
    addr.sll_ifindex = index as i32;
    let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `addr` is a valid sockaddr_ll of `len` bytes.
    if unsafe { libc::bind(fd, (&raw const addr).cast(), len) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let one: libc::c_int = 1;
    // SAFETY: an int option of its own size. Failing only costs the qdisc's overhead.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            (&raw const one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    Ok((sock, mtu))
}

/// Sends messages on a connected (or bound) socket, one `sendmmsg` call; how many the
/// kernel took.
#[cfg(target_os = "linux")]
fn send_batch(fd: std::os::fd::RawFd, datagrams: &[&[u8]]) -> std::io::Result<usize> {
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
    let sent = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(sent as usize)
}
