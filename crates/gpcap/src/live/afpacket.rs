//! Live capture on Linux without libpcap: an AF_PACKET socket with a TPACKET_V3 ring
//! mapped into memory (the kernel packs frames by their length into blocks and hands a
//! block over when full or 10 ms old: one wakeup per block, no copy through a system
//! call), and the generated classic BPF program ([`super::bpf`]) attached in the kernel,
//! so that only what gpcap analyzes crosses into the ring.

use super::bpf::{self, Link, Selection};
use super::{Interface, LiveError, LiveOptions, Start};
use gpcap_wire::capture::Frame;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{Ordering, fence};
use std::time::{Duration, Instant};

/// Bytes of a ring block: holds any frame (65,535 bytes of snaplen) many times over.
const BLOCK: usize = 1 << 20;
/// The frame size the ring is declared with (TPACKET_V3 packs frames by their length;
/// the kernel only checks that blocks divide into it).
const FRAME: usize = 2048;
/// A block is handed over at most this many milliseconds after its first frame.
const BLOCK_TIMEOUT_MS: u32 = 10;

/// The interfaces of this host, with their addresses.
pub(super) fn interfaces() -> Result<Vec<Interface>, String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map_err(|e| format!("cannot list /sys/class/net: {e}"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    let mut list: Vec<Interface> = names
        .into_iter()
        .map(|name| Interface {
            name,
            description: None,
            addresses: Vec::new(),
        })
        .collect();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list freed below; each entry is read while
    // the list lives.
    unsafe {
        if libc::getifaddrs(&mut head) == 0 {
            let mut at = head;
            while let Some(a) = at.as_ref() {
                at = a.ifa_next;
                let (Some(addr), false) = (a.ifa_addr.as_ref(), a.ifa_name.is_null()) else {
                    continue;
                };
                let name = std::ffi::CStr::from_ptr(a.ifa_name).to_string_lossy();
                let ip = match addr.sa_family as i32 {
                    libc::AF_INET => {
                        let v4 = &*(a.ifa_addr as *const libc::sockaddr_in);
                        std::net::IpAddr::from(u32::from_be(v4.sin_addr.s_addr).to_be_bytes())
                    }
                    libc::AF_INET6 => {
                        let v6 = &*(a.ifa_addr as *const libc::sockaddr_in6);
                        std::net::IpAddr::from(v6.sin6_addr.s6_addr)
                    }
                    _ => continue,
                };
                if let Some(i) = list.iter_mut().find(|i| i.name == name) {
                    i.addresses.push(ip.to_string());
                }
            }
            libc::freeifaddrs(head);
        }
    }
    Ok(list)
}

/// The mapped ring and its socket.
struct Ring {
    sock: OwnedFd,
    base: *mut u8,
    blocks: usize,
    next: usize,
    linktype: i32,
    /// A VLAN tag the kernel took off, put back: the frame as it was on the wire.
    scratch: Vec<u8>,
}

// SAFETY: the mapping belongs to the ring alone, which one thread owns at a time.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base` was mapped with this length in `open` and is unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.blocks * BLOCK) };
    }
}

fn os_error(iface: &str, what: &str) -> LiveError {
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => LiveError::Permission {
            iface: iface.into(),
            message: format!("{what}: {e}"),
        },
        _ => LiveError::Other {
            iface: iface.into(),
            message: format!("{what}: {e}"),
        },
    }
}

fn setopt<T>(fd: i32, level: i32, name: i32, value: &T) -> bool {
    // SAFETY: `value` is a valid T of its own size for the length of the call.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        ) == 0
    }
}

impl Ring {
    fn open(o: &LiveOptions) -> Result<Ring, LiveError> {
        let iface = o.iface.as_str();
        let index = if_index(iface)?;
        let (link, linktype, arphrd) = link_of(iface)?;
        // Protocol 0: nothing arrives before the filter is attached and the socket bound.
        // SAFETY: plain socket(2); the descriptor is owned right below.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        if fd < 0 {
            return Err(os_error(iface, "cannot open a packet socket"));
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        let v3: libc::c_int = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
        if !setopt(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &v3) {
            return Err(os_error(iface, "TPACKET_V3 is not available"));
        }
        let (base, blocks) = map_ring(fd, iface, o.buffer)?;
        let ring = Ring {
            sock,
            base: base.cast(),
            blocks,
            next: 0,
            linktype,
            scratch: Vec::with_capacity(o.snaplen as usize + 4),
        };
        let sel = Selection {
            ports: o.ports.clone(),
            skip_outgoing: arphrd == 772,
        };
        let mut prog: Vec<bpf::Insn> = bpf::program(link, &sel, o.snaplen as u32);
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_mut_ptr().cast(),
        };
        if !setopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog) {
            return Err(os_error(iface, "the kernel refused the capture filter"));
        }
        bind(fd, iface, index)?;
        Ok(ring)
    }

    /// Hands the frames of every block the kernel filled to `each`; false when there
    /// was none. Stops early (the block kept) when `each` says so.
    fn drain(&mut self, each: &mut impl FnMut(Frame) -> bool) -> Option<bool> {
        // SAFETY: block `next` lies in the mapping; the kernel gives it to us when its
        // status has TP_STATUS_USER, and takes it back when we write TP_STATUS_KERNEL.
        // Offsets read from it are checked against the block's bounds before use.
        unsafe {
            let block = self.base.add(self.next * BLOCK);
            let desc = block as *mut libc::tpacket_block_desc;
            let status = &raw mut (*desc).hdr.bh1.block_status;
            if std::ptr::read_volatile(status) & libc::TP_STATUS_USER == 0 {
                return None;
            }
            fence(Ordering::Acquire);
            let h = &(*desc).hdr.bh1;
            let (n, mut at) = (h.num_pkts as usize, h.offset_to_first_pkt as usize);
            let mut alive = true;
            for _ in 0..n {
                if at + std::mem::size_of::<libc::tpacket3_hdr>() > BLOCK {
                    break;
                }
                let p = &*(block.add(at) as *const libc::tpacket3_hdr);
                let (start, len) = (at + p.tp_mac as usize, p.tp_snaplen as usize);
                if start + len > BLOCK {
                    break;
                }
                let data = std::slice::from_raw_parts(block.add(start), len);
                let mut origlen = p.tp_len;
                let data = if p.tp_status & libc::TP_STATUS_VLAN_VALID != 0 && len >= 12 {
                    let tpid = if p.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                        p.hv1.tp_vlan_tpid
                    } else {
                        0x8100
                    };
                    self.scratch.clear();
                    self.scratch.extend_from_slice(&data[..12]);
                    self.scratch.extend_from_slice(&tpid.to_be_bytes());
                    self.scratch
                        .extend_from_slice(&(p.hv1.tp_vlan_tci as u16).to_be_bytes());
                    self.scratch.extend_from_slice(&data[12..]);
                    origlen += 4;
                    &self.scratch[..]
                } else {
                    data
                };
                alive &= each(Frame {
                    number: 0,
                    ts_ns: p.tp_sec as i64 * 1_000_000_000 + p.tp_nsec as i64,
                    linktype: self.linktype,
                    interface: 0,
                    origlen,
                    offset: 0,
                    data,
                });
                if p.tp_next_offset == 0 {
                    break;
                }
                at += p.tp_next_offset as usize;
            }
            fence(Ordering::Release);
            std::ptr::write_volatile(status, libc::TP_STATUS_KERNEL);
            self.next = (self.next + 1) % self.blocks;
            Some(alive)
        }
    }

    /// The block the kernel fills next holds no frame yet (nothing is left to wait for).
    fn open_block_empty(&self) -> bool {
        // SAFETY: as in `drain`; only the frame count is read, which the kernel raises
        // as it fills the block (a stale zero only ends the wait early, as a drop-free
        // ring would).
        unsafe {
            let desc = self.base.add(self.next * BLOCK) as *const libc::tpacket_block_desc;
            std::ptr::read_volatile(&raw const (*desc).hdr.bh1.num_pkts) == 0
        }
    }

    /// Received and dropped since the last call (reading resets the kernel's counters).
    fn kernel_counts(&self) -> (u64, u64) {
        let mut st = libc::tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
        // SAFETY: `st` and `len` are valid for writing, `len` its size.
        let ok = unsafe {
            libc::getsockopt(
                self.sock.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&raw mut st).cast(),
                &mut len,
            )
        } == 0;
        // The kernel's tp_packets already counts the drops.
        if ok {
            (st.tp_packets as u64, st.tp_drops as u64)
        } else {
            (0, 0)
        }
    }
}

/// The interface's own `rx_dropped` counter.
fn rx_dropped(iface: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/statistics/rx_dropped"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

pub(super) fn run(o: LiveOptions, s: Start) {
    let Start {
        mut feeder,
        ready,
        shared,
    } = s;
    let mut ring = match Ring::open(&o) {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(ring.linktype));
    let if_dropped0 = rx_dropped(&o.iface);
    let (mut received, mut dropped) = (0u64, 0u64);
    let mut publish = |ring: &Ring, captured: u64| {
        let (r, d) = ring.kernel_counts();
        received += r;
        dropped += d;
        if let Ok(mut st) = shared.stats.lock() {
            st.kernel_received = received;
            st.kernel_dropped = dropped;
            st.if_dropped = rx_dropped(&o.iface).saturating_sub(if_dropped0);
            st.captured = captured;
        }
    };
    let mut last_stats = Instant::now();
    let mut alive = true;
    while alive && !shared.stopping() {
        match ring.drain(&mut |f| feeder.push(f)) {
            Some(a) => alive = a,
            None => {
                alive = feeder.flush();
                super::poll_readable(ring.sock.as_raw_fd(), Duration::from_millis(20));
            }
        }
        if last_stats.elapsed() > Duration::from_millis(200) {
            last_stats = Instant::now();
            publish(&ring, feeder.captured);
        }
    }
    // What the kernel holds is captured, not left in the ring: the block it is filling
    // is handed over by its timer within two timeouts, so wait for that (bounded, as
    // traffic may go on).
    let until = Instant::now() + Duration::from_millis(200);
    while alive && Instant::now() < until {
        match ring.drain(&mut |f| feeder.push(f)) {
            Some(a) => alive = a,
            None if ring.open_block_empty() => break,
            None => super::poll_readable(
                ring.sock.as_raw_fd(),
                Duration::from_millis(BLOCK_TIMEOUT_MS as u64),
            ),
        }
    }
    feeder.flush();
    publish(&ring, feeder.captured);
}

/// The interface's index, or the interfaces there are when it does not exist.
fn if_index(iface: &str) -> Result<libc::c_uint, LiveError> {
    let name = std::ffi::CString::new(iface).map_err(|_| LiveError::Other {
        iface: iface.into(),
        message: "an interface name holds no NUL byte".into(),
    })?;
    // SAFETY: `name` is NUL-terminated and outlives the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(LiveError::NoSuchInterface {
            iface: iface.into(),
            available: interfaces()
                .map(|v| v.into_iter().map(|i| i.name).collect())
                .unwrap_or_default(),
        });
    }
    Ok(index)
}

/// The interface's link (ARPHRD_ETHER and ARPHRD_LOOPBACK carry Ethernet headers;
/// ARPHRD_NONE, a tun, raw IP), its pcap link type and its ARPHRD number.
fn link_of(iface: &str) -> Result<(Link, i32, u32), LiveError> {
    // ARPHRD_ETHER and ARPHRD_LOOPBACK carry Ethernet headers; ARPHRD_NONE (tun) raw IP.
    let arphrd = std::fs::read_to_string(format!("/sys/class/net/{iface}/type"))
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
        .unwrap_or(1);
    let (link, linktype) = match arphrd {
        1 | 772 => (Link::Ethernet, gpcap_wire::decode::linktype::ETHERNET),
        65534 => (Link::RawIp, gpcap_wire::decode::linktype::RAW),
        other => {
            return Err(LiveError::Other {
                iface: iface.into(),
                message: format!(
                    "its link type (ARPHRD {other}) is not Ethernet or raw IP; the libpcap build (--features libpcap) captures it"
                ),
            });
        }
    };
    Ok((link, linktype, arphrd))
}

/// Sets up the TPACKET_V3 receive ring of `buffer` bytes (two blocks at least) on the
/// socket and maps it, whole: its base and its number of blocks.
fn map_ring(fd: libc::c_int, iface: &str, buffer: i32) -> Result<(*mut libc::c_void, usize), LiveError> {
    let blocks = (buffer.max(BLOCK as i32 * 2) as usize).div_ceil(BLOCK);
    let req = libc::tpacket_req3 {
        tp_block_size: BLOCK as u32,
        tp_block_nr: blocks as u32,
        tp_frame_size: FRAME as u32,
        tp_frame_nr: (BLOCK / FRAME * blocks) as u32,
        tp_retire_blk_tov: BLOCK_TIMEOUT_MS,
        tp_sizeof_priv: 0,
        tp_feature_req_word: 0,
    };
    if !setopt(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req) {
        return Err(os_error(iface, "cannot set up the receive ring"));
    }
    // SAFETY: maps the ring the kernel just allocated for this socket, whole.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            blocks * BLOCK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(os_error(iface, "cannot map the receive ring"));
    }
    Ok((base, blocks))
}

/// Binds the socket to the interface, for every protocol.
fn bind(fd: libc::c_int, iface: &str, index: libc::c_uint) -> Result<(), LiveError> {
    // SAFETY: a zeroed sockaddr_ll is valid; the fields set are plain integers.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    addr.sll_ifindex = index as i32;
    let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `addr` is a valid sockaddr_ll of `len` bytes.
    if unsafe { libc::bind(fd, (&raw const addr).cast(), len) } < 0 {
        return Err(os_error(iface, "cannot bind to the interface"));
    }
    Ok(())
}
