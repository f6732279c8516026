//! The kernel filter of the default live capture: a classic BPF program, generated from
//! the ports, that keeps exactly what gpcap analyzes — UDP on the protocol's ports (all
//! UDP without ports), IPv4 fragments with a non-zero offset and IPv6 fragment headers
//! (their ports are in the first fragment only; a port filter would drop them, and the
//! reassembly and MTU findings with them), ICMP fragmentation-needed and ICMPv6
//! packet-too-big — over Ethernet, one 802.1Q tag, or raw IP. The same selection as a
//! tcpdump expression ([`expression`]) filters a remote capture.
//!
//! The program is data: [`program`] builds it, [`run`] interprets it (what the tests
//! check it with, on crafted frames, against the kernel's semantics).

/// One classic BPF instruction (`struct sock_filter`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

// Opcodes (linux/filter.h): class | size | mode, and jumps.
const LD_H_ABS: u16 = 0x28;
const LD_B_ABS: u16 = 0x30;
const LD_W_ABS: u16 = 0x20;
const LD_H_IND: u16 = 0x48;
const LD_B_IND: u16 = 0x50;
const LDX_B_MSH: u16 = 0xb1;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;
const JA: u16 = 0x05;

/// Where the kernel's ancillary data starts; `+ 4`: the packet type (outgoing, host…).
const SKF_AD_PKTTYPE: u32 = (-0x1000i32) as u32 + 4;
/// `sll_pkttype` of a frame this host sent.
pub const PACKET_OUTGOING: u32 = 4;

/// The frames' link layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Ethernet, untagged or with one 802.1Q / 802.1ad tag.
    Ethernet,
    /// IPv4 or IPv6 from the first byte (tun devices, LINKTYPE_RAW).
    RawIp,
}

/// What the filter keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// UDP source or destination ports; empty: all UDP.
    pub ports: Vec<u16>,
    /// Drop the frames this host sends (loopback shows each datagram twice otherwise).
    pub skip_outgoing: bool,
}

/// More ports than this make the program long for nothing: all UDP is kept instead.
pub const MAX_PORTS: usize = 48;

impl Selection {
    /// The ports the program tests (none when there are too many to test one by one).
    fn ports(&self) -> &[u16] {
        if self.ports.len() > MAX_PORTS {
            &[]
        } else {
            &self.ports
        }
    }

    /// What is captured, in words (for the default build's answer to `--filter`).
    pub fn describe(&self) -> String {
        let udp = match self.ports() {
            [] => "all UDP".to_string(),
            p => format!(
                "UDP on port{} {}",
                if p.len() > 1 { "s" } else { "" },
                p.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        format!("{udp}, IPv4 and IPv6 fragments, ICMP fragmentation-needed and ICMPv6 packet-too-big")
    }
}

/// A jump target while the program is assembled.
#[derive(Clone, Copy)]
enum To {
    Next,
    Label(usize),
}

#[derive(Default)]
struct Asm {
    code: Vec<(u16, To, To, u32)>,
    labels: Vec<Option<usize>>,
}

impl Asm {
    fn label(&mut self) -> usize {
        self.labels.push(None);
        self.labels.len() - 1
    }
    fn here(&mut self, l: usize) {
        self.labels[l] = Some(self.code.len());
    }
    fn op(&mut self, code: u16, k: u32) {
        self.code.push((code, To::Next, To::Next, k));
    }
    fn jump(&mut self, code: u16, k: u32, jt: To, jf: To) {
        self.code.push((code, jt, jf, k));
    }
    /// Resolves labels to relative offsets (forward only, at most 255: the program is
    /// short by construction, and `program`'s tests hold it to that).
    fn finish(self) -> Vec<Insn> {
        let labels = self.labels;
        let off = |i: usize, t: To| -> u8 {
            match t {
                To::Next => 0,
                To::Label(l) => {
                    let at = labels[l].unwrap_or(i + 1);
                    u8::try_from(at.saturating_sub(i + 1)).unwrap_or(u8::MAX)
                }
            }
        };
        self.code
            .iter()
            .enumerate()
            .map(|(i, &(code, jt, jf, k))| match code {
                // An unconditional jump's offset is its `k`, 32 bits.
                JA => Insn {
                    code,
                    jt: 0,
                    jf: 0,
                    k: off(i, jt) as u32,
                },
                _ => Insn {
                    code,
                    jt: off(i, jt),
                    jf: off(i, jf),
                    k,
                },
            })
            .collect()
    }
}

/// The program for `link` keeping `sel`, each kept frame cut to `snaplen` bytes.
pub fn program(link: Link, sel: &Selection, snaplen: u32) -> Vec<Insn> {
    let mut a = Asm::default();
    let (keep, drop) = (a.label(), a.label());
    if sel.skip_outgoing {
        a.op(LD_W_ABS, SKF_AD_PKTTYPE);
        a.jump(JEQ_K, PACKET_OUTGOING, To::Label(drop), To::Next);
    }
    match link {
        Link::RawIp => {
            let (v4, v6) = (a.label(), a.label());
            a.op(LD_B_ABS, 0);
            a.op(0x54, 0xf0); // A &= 0xf0
            a.jump(JEQ_K, 0x40, To::Label(v4), To::Next);
            a.jump(JEQ_K, 0x60, To::Label(v6), To::Label(drop));
            a.here(v4);
            ipv4(&mut a, 0, sel, keep, drop);
            a.here(v6);
            ipv6(&mut a, 0, sel, keep, drop);
        }
        Link::Ethernet => {
            let (v4, v6, tagged, v4t, v6t) = (a.label(), a.label(), a.label(), a.label(), a.label());
            a.op(LD_H_ABS, 12);
            a.jump(JEQ_K, 0x0800, To::Label(v4), To::Next);
            a.jump(JEQ_K, 0x86dd, To::Label(v6), To::Next);
            a.jump(JEQ_K, 0x8100, To::Label(tagged), To::Next);
            a.jump(JEQ_K, 0x88a8, To::Label(tagged), To::Label(drop));
            a.here(tagged);
            a.op(LD_H_ABS, 16);
            a.jump(JEQ_K, 0x0800, To::Label(v4t), To::Next);
            a.jump(JEQ_K, 0x86dd, To::Label(v6t), To::Label(drop));
            a.here(v4);
            ipv4(&mut a, 14, sel, keep, drop);
            a.here(v6);
            ipv6(&mut a, 14, sel, keep, drop);
            a.here(v4t);
            ipv4(&mut a, 18, sel, keep, drop);
            a.here(v6t);
            ipv6(&mut a, 18, sel, keep, drop);
        }
    }
    a.here(keep);
    a.op(RET_K, snaplen);
    a.here(drop);
    a.op(RET_K, 0);
    a.finish()
}

/// IPv4 at `b`: UDP on the ports, UDP fragments past the first, ICMP 3/4.
fn ipv4(a: &mut Asm, b: u32, sel: &Selection, keep: usize, drop: usize) {
    let (udp, icmp) = (a.label(), a.label());
    a.op(LD_B_ABS, b + 9);
    a.jump(JEQ_K, 17, To::Label(udp), To::Next);
    a.jump(JEQ_K, 1, To::Label(icmp), To::Label(drop));
    a.here(udp);
    a.op(LD_H_ABS, b + 6);
    a.jump(JSET_K, 0x1fff, To::Label(keep), To::Next);
    a.op(LDX_B_MSH, b);
    ports(a, b, sel, keep, drop);
    a.here(icmp);
    a.op(LD_H_ABS, b + 6);
    a.jump(JSET_K, 0x1fff, To::Label(drop), To::Next);
    a.op(LDX_B_MSH, b);
    a.op(LD_H_IND, b);
    a.jump(JEQ_K, 0x0304, To::Label(keep), To::Label(drop));
}

/// IPv6 at `b`: UDP on the ports, a fragment header, ICMPv6 2 (packet too big).
fn ipv6(a: &mut Asm, b: u32, sel: &Selection, keep: usize, drop: usize) {
    let (udp, icmp) = (a.label(), a.label());
    a.op(LD_B_ABS, b + 6);
    a.jump(JEQ_K, 17, To::Label(udp), To::Next);
    a.jump(JEQ_K, 44, To::Label(keep), To::Next);
    a.jump(JEQ_K, 58, To::Label(icmp), To::Label(drop));
    a.here(udp);
    // The UDP header right after the fixed header: X = 40 places it as for IPv4.
    a.op(0x01, 40); // X = 40
    ports(a, b, sel, keep, drop);
    a.here(icmp);
    a.op(LD_B_ABS, b + 40);
    a.jump(JEQ_K, 2, To::Label(keep), To::Label(drop));
}

/// The UDP header at `b + X`: keep when either port is one of the selection's.
fn ports(a: &mut Asm, b: u32, sel: &Selection, keep: usize, drop: usize) {
    let ports = sel.ports();
    if ports.is_empty() {
        a.jump(JA, 0, To::Label(keep), To::Next);
        return;
    }
    for (off, last_half) in [(0u32, false), (2, true)] {
        a.op(LD_H_IND, b + off);
        for (i, &p) in ports.iter().enumerate() {
            let miss = if last_half && i + 1 == ports.len() {
                To::Label(drop)
            } else {
                To::Next
            };
            a.jump(JEQ_K, p as u32, To::Label(keep), miss);
        }
    }
}

/// The same selection as a tcpdump (libpcap) expression, for a remote tcpdump.
pub fn expression(sel: &Selection) -> String {
    let udp = match sel.ports() {
        [] => "udp".to_string(),
        p => format!(
            "(udp and ({}))",
            p.iter()
                .map(|p| format!("port {p}"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    };
    let l3 = format!(
        "{udp} or (ip[9] = 17 and ip[6:2] & 0x1fff != 0) or ip6[6] = 44 \
         or (ip[9] = 1 and ip[6:2] & 0x1fff = 0 and icmp[0] = 3 and icmp[1] = 4) \
         or (ip6[6] = 58 and ip6[40] = 2)"
    );
    format!("({l3}) or (vlan and ({l3}))")
}

/// Runs `prog` on `frame` as the kernel does (`pkttype`: the frame's `sll_pkttype`): the
/// bytes kept, 0 for a dropped frame, and 0 for a load past the frame's end.
pub fn run(prog: &[Insn], frame: &[u8], pkttype: u32) -> u32 {
    let (mut acc, mut x, mut pc) = (0u32, 0u32, 0usize);
    let load = |at: u32, n: usize| -> Option<u32> {
        let at = at as usize;
        let bytes = frame.get(at..at.checked_add(n)?)?;
        Some(bytes.iter().fold(0u32, |v, &b| v << 8 | b as u32))
    };
    while let Some(i) = prog.get(pc) {
        pc += 1;
        let got = match i.code {
            LD_W_ABS if i.k == SKF_AD_PKTTYPE => Some(pkttype),
            LD_W_ABS => load(i.k, 4),
            LD_H_ABS => load(i.k, 2),
            LD_B_ABS => load(i.k, 1),
            LD_H_IND => load(x.wrapping_add(i.k), 2),
            LD_B_IND => load(x.wrapping_add(i.k), 1),
            LDX_B_MSH => {
                x = (load(i.k, 1).unwrap_or(0) & 0xf) * 4;
                if load(i.k, 1).is_none() {
                    return 0;
                }
                continue;
            }
            0x01 => {
                x = i.k;
                continue;
            }
            0x54 => Some(acc & i.k),
            JA => {
                pc += i.k as usize;
                continue;
            }
            JEQ_K | JSET_K => {
                let hit = if i.code == JEQ_K {
                    acc == i.k
                } else {
                    acc & i.k != 0
                };
                pc += if hit { i.jt } else { i.jf } as usize;
                continue;
            }
            RET_K => return i.k,
            _ => return 0,
        };
        match got {
            Some(v) => acc = v,
            None => return 0,
        }
    }
    0
}
