//! The direct Ethernet/VLAN/IPv4/IPv6/UDP decoder gives exactly what the general
//! (etherparse) path gives, for every frame it accepts: on hand-made and mutated frames,
//! on every bundled capture, and on the tcpdump corpus when it is beside the repository.

mod common;

use gpcap::capture::CaptureReader;
use gpcap::decode::{decode_fast, decode_general, linktype};
use proptest::prelude::*;
use std::path::Path;

fn udp_v4(payload_len: usize, options: usize) -> Vec<u8> {
    let ihl = 5 + options;
    let total = ihl * 4 + 8 + payload_len;
    let mut ip = vec![
        0x40 | ihl as u8,
        0,
        (total >> 8) as u8,
        total as u8,
        0x12,
        0x34,
        0x40,
        0,
        64,
        17,
        0,
        0,
    ];
    ip.extend([10, 0, 0, 1, 10, 0, 0, 2]);
    ip.extend(std::iter::repeat_n(1u8, options * 4));
    let udp_len = 8 + payload_len;
    ip.extend([0x9c, 0x40, 0xc3, 0x50, (udp_len >> 8) as u8, udp_len as u8, 0, 0]);
    ip.extend((0..payload_len).map(|i| i as u8));
    ip
}

fn udp_v6(payload_len: usize) -> Vec<u8> {
    let mut ip = vec![
        0x60,
        0,
        0,
        0,
        ((8 + payload_len) >> 8) as u8,
        (8 + payload_len) as u8,
        17,
        64,
    ];
    ip.extend([0xfe; 16]);
    ip.extend([0x20; 16]);
    let udp_len = 8 + payload_len;
    ip.extend([0x9c, 0x40, 0xc3, 0x50, (udp_len >> 8) as u8, udp_len as u8, 0, 0]);
    ip.extend((0..payload_len).map(|i| i as u8));
    ip
}

fn ethernet(ip: &[u8], vlan: Option<u16>, v6: bool) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    if let Some(v) = vlan {
        f.extend([0x81, 0x00, (v >> 8) as u8, v as u8]);
    }
    f.extend(if v6 { [0x86, 0xdd] } else { [0x08, 0x00] });
    f.extend(ip);
    f
}

fn agree(linktype: i32, data: &[u8]) -> bool {
    match decode_fast(linktype, data) {
        Some(fast) => {
            assert_eq!(
                fast,
                decode_general(linktype, data),
                "linktype {linktype}, frame {data:02x?}"
            );
            true
        }
        None => false,
    }
}

#[test]
fn the_common_shapes_take_the_fast_path() {
    for (lt, frame) in [
        (linktype::ETHERNET, ethernet(&udp_v4(100, 0), None, false)),
        (linktype::ETHERNET, ethernet(&udp_v4(100, 2), Some(42), false)),
        (linktype::ETHERNET, ethernet(&udp_v6(100), None, true)),
        (linktype::RAW, udp_v4(0, 0)),
        (linktype::IPV6, udp_v6(1200)),
    ] {
        assert!(agree(lt, &frame));
    }
    // Ethernet padding after a short datagram is not payload.
    let mut padded = ethernet(&udp_v4(2, 0), None, false);
    padded.extend([0; 20]);
    assert!(agree(linktype::ETHERNET, &padded));
    // Fragments, truncation and other protocols go the general way.
    let mut frag = udp_v4(100, 0);
    frag[6] = 0x20; // more fragments
    assert!(!agree(linktype::RAW, &frag));
    let cut = udp_v4(100, 0);
    assert!(!agree(linktype::RAW, &cut[..60]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Mutated frames: where the fast path accepts one, it says what the general does.
    #[test]
    fn fast_equals_general(
        v6 in any::<bool>(),
        vlan in proptest::option::of(0u16..4096),
        len in 0usize..64,
        options in 0usize..3,
        flips in proptest::collection::vec((0usize..120, any::<u8>()), 0..4),
        cut in 0usize..140,
        raw in any::<bool>(),
    ) {
        let ip = if v6 { udp_v6(len) } else { udp_v4(len, options) };
        let (lt, mut frame) = if raw {
            (linktype::RAW, ip)
        } else {
            (linktype::ETHERNET, ethernet(&ip, vlan, v6))
        };
        for (at, x) in flips {
            if let Some(b) = frame.get_mut(at) {
                *b ^= x;
            }
        }
        frame.truncate(frame.len().saturating_sub(cut % 8));
        agree(lt, &frame);
    }
}

fn every_frame(path: &Path) -> (u64, u64) {
    let Ok(mut r) = CaptureReader::open(path) else {
        return (0, 0);
    };
    let (mut fast, mut all) = (0, 0);
    while let Ok(Some(f)) = r.next_frame() {
        all += 1;
        fast += agree(f.linktype, f.data) as u64;
    }
    (fast, all)
}

#[test]
fn bundled_captures_decode_the_same_both_ways() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let (mut fast, mut all) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let (f, a) = every_frame(&e.unwrap().path());
        fast += f;
        all += a;
    }
    assert!(fast * 10 > all * 8, "{fast} of {all} frames on the fast path");
}

#[test]
fn tcpdump_corpus_decodes_the_same_both_ways() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/tcpdump");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        common::skipped(
            "tcpdump_corpus_decodes_the_same_both_ways",
            "../shared/corpus/tcpdump is not beside the repository",
        );
        return;
    };
    let (mut fast, mut all) = (0, 0);
    for e in entries {
        let (f, a) = every_frame(&e.unwrap().path());
        fast += f;
        all += a;
    }
    eprintln!("tcpdump corpus: {fast} of {all} frames on the fast path, all equal");
    assert!(fast > 0 && all > fast, "{fast} of {all}");
}
