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
const LDX_IMM: u16 = 0x01;
const AND_K: u16 = 0x54;

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

/// More ports than this put the program's last checks beyond a jump's 8-bit reach: all
/// UDP is kept instead.
pub const MAX_PORTS: usize = 15;

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
    /// Resolves labels to relative offsets (forward only); None when a conditional jump
    /// is farther than its 8 bits reach.
    fn finish(self) -> Option<Vec<Insn>> {
        let labels = self.labels;
        let far = std::cell::Cell::new(false);
        let off = |i: usize, t: To| -> u8 {
            match t {
                To::Next => 0,
                To::Label(l) => {
                    let at = labels[l].unwrap_or(i + 1);
                    u8::try_from(at.saturating_sub(i + 1)).unwrap_or_else(|_| {
                        far.set(true);
                        u8::MAX
                    })
                }
            }
        };
        let code = self
            .code
            .iter()
            .enumerate()
            .map(|(i, &(code, jt, jf, k))| match code {
                // An unconditional jump's offset is its `k`, 32 bits.
                JA => Insn {
                    code,
                    jt: 0,
                    jf: 0,
                    k: labels[match jt {
                        To::Label(l) => l,
                        To::Next => 0,
                    }]
                    .map_or(0, |at| at.saturating_sub(i + 1) as u32),
                },
                _ => Insn {
                    code,
                    jt: off(i, jt),
                    jf: off(i, jf),
                    k,
                },
            })
            .collect::<Vec<_>>();
        (!far.get()).then_some(code)
    }
}

/// The program for `link` keeping `sel`, each kept frame cut to `snaplen` bytes. Ports
/// too many for the jumps' reach keep all UDP instead (never a wrong program).
pub fn program(link: Link, sel: &Selection, snaplen: u32) -> Vec<Insn> {
    assemble(link, sel, snaplen)
        .or_else(|| {
            let all = Selection {
                ports: Vec::new(),
                ..sel.clone()
            };
            assemble(link, &all, snaplen)
        })
        .unwrap_or_default()
}

fn assemble(link: Link, sel: &Selection, snaplen: u32) -> Option<Vec<Insn>> {
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
            a.op(AND_K, 0xf0);
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
    let (udp, fragment, icmp) = (a.label(), a.label(), a.label());
    a.op(LD_B_ABS, b + 6);
    a.jump(JEQ_K, 17, To::Label(udp), To::Next);
    a.jump(JEQ_K, 44, To::Label(fragment), To::Next);
    a.jump(JEQ_K, 58, To::Label(icmp), To::Label(drop));
    a.here(udp);
    // The UDP header right after the fixed header: X = 40 places it as for IPv4.
    a.op(LDX_IMM, 40);
    ports(a, b, sel, keep, drop);
    // A fragment header: past the first fragment kept, the first by its UDP ports.
    a.here(fragment);
    a.op(LD_B_ABS, b + 40);
    a.jump(JEQ_K, 17, To::Next, To::Label(drop));
    a.op(LD_H_ABS, b + 42);
    a.jump(JSET_K, 0xfff8, To::Label(keep), To::Next);
    a.op(LDX_IMM, 48);
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
    let ports = sel.ports();
    let any = |f: &dyn Fn(u16) -> String| ports.iter().map(|&p| f(p)).collect::<Vec<_>>().join(" or ");
    let (udp, first6) = match ports {
        [] => ("udp".to_string(), "1 = 1".to_string()),
        _ => (
            format!("(udp and ({}))", any(&|p| format!("port {p}"))),
            any(&|p| format!("ip6[48:2] = {p} or ip6[50:2] = {p}")),
        ),
    };
    let l3 = format!(
        "{udp} or (ip[9] = 17 and ip[6:2] & 0x1fff != 0) \
         or (ip6[6] = 44 and ip6[40] = 17 and (ip6[42:2] & 0xfff8 != 0 or {first6})) \
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
            LDX_IMM => {
                x = i.k;
                continue;
            }
            AND_K => Some(acc & i.k),
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

#[cfg(test)]
mod tests {
    use super::*;
    use gpcap_generate::net::{self, icmp_too_big, ip_packets};
    use std::net::SocketAddr;

    const SNAP: u32 = 65535;

    /// A frame of each kind, what it is, and whether a filter on port 40000 keeps it.
    fn frames(link: Option<net::Link>) -> Vec<(String, Vec<u8>, bool)> {
        let wrap = |p: &[u8], v6: bool| match &link {
            Some(l) => l.frame(p, v6),
            None => p.to_vec(),
        };
        let mut out = Vec::new();
        for v6 in [false, true] {
            let (a, b, r) = if v6 {
                ("[2001:db8::1]", "[2001:db8::2]", "2001:db8::fe")
            } else {
                ("10.0.0.1", "10.0.0.2", "10.0.0.254")
            };
            let addr = |h: &str, p: u16| format!("{h}:{p}").parse::<SocketAddr>().unwrap();
            for (port, on) in [(40000u16, true), (5353, false)] {
                for (client, server) in [(addr(a, 50000), addr(b, port)), (addr(b, port), addr(a, 50000))] {
                    let small = ip_packets(client, server, &[7; 100], 1, false, 1500);
                    out.push((format!("udp v6={v6} port {port}"), wrap(&small[0], v6), on));
                }
                let big = ip_packets(addr(a, 50000), addr(b, port), &[9; 4000], 2, false, 1280);
                assert!(big.len() > 2);
                for (i, p) in big.iter().enumerate() {
                    // Fragments past the first carry no ports: kept whatever the port.
                    out.push((
                        format!("fragment {i} v6={v6} port {port}"),
                        wrap(p, v6),
                        on || i > 0,
                    ));
                }
                let router: std::net::IpAddr = r.parse().unwrap();
                let too_big = icmp_too_big(router, &big[0], addr(a, 0).ip(), 1280);
                out.push((format!("icmp too big v6={v6}"), wrap(&too_big, v6), true));
            }
            let mut other = ip_packets(addr(a, 1), addr(b, 40000), &[1; 40], 3, false, 1500)[0].clone();
            // The same bytes as TCP (protocol 6): dropped.
            if v6 {
                other[6] = 6;
            } else {
                other[9] = 6;
            }
            out.push((format!("tcp v6={v6}"), wrap(&other, v6), false));
            let echo = {
                let mut e = icmp_too_big(addr(a, 0).ip(), &other, addr(b, 0).ip(), 1280);
                // Echo request (8 / 128): not a too-big message.
                let at = if v6 { 40 } else { 20 };
                e[at] = if v6 { 128 } else { 8 };
                e
            };
            out.push((format!("icmp echo v6={v6}"), wrap(&echo, v6), false));
        }
        if link.is_some() {
            let mut arp = vec![0xff; 12];
            arp.extend([0x08, 0x06]);
            arp.extend([0; 28]);
            out.push(("arp".into(), arp, false));
        }
        out
    }

    fn links() -> Vec<(Link, Option<net::Link>)> {
        vec![
            (Link::Ethernet, Some(net::Link::Ethernet { vlan: None })),
            (Link::Ethernet, Some(net::Link::Ethernet { vlan: Some(42) })),
            (Link::RawIp, None),
        ]
    }

    #[test]
    fn keeps_what_gpcap_analyzes_and_nothing_else() {
        for (link, wire) in links() {
            let sel = Selection {
                ports: vec![40000],
                skip_outgoing: false,
            };
            let prog = program(link, &sel, SNAP);
            let all = program(link, &Selection::default(), SNAP);
            for (what, frame, keep) in frames(wire) {
                let got = run(&prog, &frame, 0);
                assert_eq!(got, if keep { SNAP } else { 0 }, "{what} over {wire:?}");
                let udp =
                    what.starts_with("udp") || what.starts_with("fragment") || what.starts_with("icmp too");
                assert_eq!(run(&all, &frame, 0) != 0, udp, "{what} over {wire:?}, all UDP");
            }
        }
    }

    #[test]
    fn loopback_copies_sent_by_this_host_are_dropped() {
        let sel = Selection {
            ports: vec![],
            skip_outgoing: true,
        };
        let prog = program(Link::Ethernet, &sel, SNAP);
        let (_, frame, _) = frames(Some(net::Link::Ethernet { vlan: None })).remove(0);
        assert_eq!(run(&prog, &frame, 0), SNAP);
        assert_eq!(run(&prog, &frame, PACKET_OUTGOING), 0);
    }

    #[test]
    fn jumps_land_inside_and_cut_frames_are_refused_without_panic() {
        let many: Vec<u16> = (1000..1000 + MAX_PORTS as u16).collect();
        for (link, wire) in links() {
            for ports in [vec![], vec![40000], many.clone()] {
                let prog = program(
                    link,
                    &Selection {
                        ports,
                        skip_outgoing: true,
                    },
                    SNAP,
                );
                for (i, ins) in prog.iter().enumerate().filter(|(_, i)| i.code & 7 == 5) {
                    let far = if ins.code == JA {
                        ins.k as usize
                    } else {
                        ins.jt.max(ins.jf) as usize
                    };
                    assert!(i + 1 + far < prog.len(), "{i}: {ins:?}");
                }
                for (_, frame, _) in frames(wire) {
                    for cut in 0..frame.len().min(80) {
                        run(&prog, &frame[..cut], 0);
                    }
                }
            }
        }
        // As many ports as allowed fit, each one kept.
        for (link, _) in links() {
            let sel = Selection {
                ports: many.clone(),
                skip_outgoing: true,
            };
            assert!(assemble(link, &sel, SNAP).is_some(), "{link:?}");
        }
        // Too many ports to test one by one: all UDP.
        let more: Vec<u16> = (1000..1000 + MAX_PORTS as u16 + 1).collect();
        let prog = program(
            Link::RawIp,
            &Selection {
                ports: more,
                skip_outgoing: false,
            },
            SNAP,
        );
        assert_eq!(prog, program(Link::RawIp, &Selection::default(), SNAP));
    }

    /// The tcpdump expression that filters a remote capture keeps what the kernel program
    /// keeps: libpcap's own compilation of it (`tcpdump -dd`), run on the same frames.
    #[test]
    fn the_remote_expression_agrees_with_the_kernel_program() {
        let Ok(out) = std::process::Command::new("tcpdump").arg("--version").output() else {
            eprintln!("skipped: tcpdump is not installed");
            return;
        };
        assert!(out.status.success());
        let dir = std::env::temp_dir().join(format!("gpcap-bpf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("empty.pcap");
        let mut header = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        header.extend([0; 8]);
        header.extend(65535u32.to_le_bytes());
        header.extend(1u32.to_le_bytes());
        std::fs::write(&file, header).unwrap();
        for ports in [vec![40000], vec![]] {
            let sel = Selection {
                ports,
                skip_outgoing: false,
            };
            let out = std::process::Command::new("tcpdump")
                .arg("-dd")
                .arg("-r")
                .arg(&file)
                .arg(expression(&sel))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let theirs: Vec<Insn> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| {
                    let v: Vec<u32> = l
                        .trim_matches(|c| "{}, ".contains(c))
                        .split(',')
                        .map(|x| {
                            let x = x.trim();
                            u32::from_str_radix(
                                x.trim_start_matches("0x"),
                                if x.starts_with("0x") { 16 } else { 10 },
                            )
                            .unwrap()
                        })
                        .collect();
                    (v.len() == 4).then(|| Insn {
                        code: v[0] as u16,
                        jt: v[1] as u8,
                        jf: v[2] as u8,
                        k: v[3],
                    })
                })
                .collect();
            assert!(!theirs.is_empty());
            let ours = program(Link::Ethernet, &sel, SNAP);
            for vlan in [None, Some(7)] {
                for (what, frame, _) in frames(Some(net::Link::Ethernet { vlan })) {
                    assert_eq!(
                        run_full(&theirs, &frame) != 0,
                        run(&ours, &frame, 0) != 0,
                        "{what}, vlan {vlan:?}, ports {:?}",
                        sel.ports
                    );
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A fuller interpreter for libpcap's programs (arithmetic, X, scratch memory).
    fn run_full(prog: &[Insn], frame: &[u8]) -> u32 {
        let (mut a, mut x, mut pc, mut mem) = (0u32, 0u32, 0usize, [0u32; 16]);
        let load = |at: u32, n: usize| -> Option<u32> {
            let at = at as usize;
            let b = frame.get(at..at.checked_add(n)?)?;
            Some(b.iter().fold(0u32, |v, &b| v << 8 | b as u32))
        };
        while let Some(i) = prog.get(pc) {
            pc += 1;
            let (class, size, mode) = (i.code & 7, i.code & 0x18, i.code & 0xe0);
            let n = match size {
                0x00 => 4,
                0x08 => 2,
                _ => 1,
            };
            let src = if i.code & 0x08 != 0 { x } else { i.k };
            match class {
                0 | 1 => {
                    let v = match mode {
                        0x00 => Some(i.k),
                        0x20 => load(i.k, n),
                        0x40 => load(x.wrapping_add(i.k), n),
                        0x60 => Some(mem[i.k as usize & 15]),
                        0x80 => Some(frame.len() as u32),
                        0xa0 => load(i.k, 1).map(|b| (b & 0xf) * 4),
                        _ => None,
                    };
                    let Some(v) = v else { return 0 };
                    if class == 0 { a = v } else { x = v }
                }
                2 => mem[i.k as usize & 15] = a,
                3 => mem[i.k as usize & 15] = x,
                4 => {
                    a = match i.code & 0xf0 {
                        0x00 => a.wrapping_add(src),
                        0x10 => a.wrapping_sub(src),
                        0x20 => a.wrapping_mul(src),
                        0x30 => a.checked_div(src).unwrap_or(0),
                        0x40 => a | src,
                        0x50 => a & src,
                        0x60 => a.wrapping_shl(src),
                        0x70 => a.wrapping_shr(src),
                        0x80 => a.wrapping_neg(),
                        0x90 => a.checked_rem(src).unwrap_or(0),
                        0xa0 => a ^ src,
                        _ => return 0,
                    }
                }
                5 => {
                    let hit = match i.code & 0xf0 {
                        0x00 => {
                            pc += i.k as usize;
                            continue;
                        }
                        0x10 => a == src,
                        0x20 => a > src,
                        0x30 => a >= src,
                        0x40 => a & src != 0,
                        _ => return 0,
                    };
                    pc += if hit { i.jt } else { i.jf } as usize;
                }
                6 => return if i.code & 0x18 == 0x10 { a } else { i.k },
                7 => {
                    if i.code & 0xf8 == 0 {
                        x = a
                    } else {
                        a = x
                    }
                }
                _ => return 0,
            }
        }
        0
    }
}
