//! Link-layer coverage: VLAN and QinQ, Linux SLL and SLL2, raw IPv4/IPv6, BSD null,
//! IPv6 with extension headers, pcapng with two interfaces of different link types,
//! nanosecond timestamps, a snaplen cut, gzip — each a small capture made here.

use etherparse::PacketBuilder;
use gpcap::analysis::{Analyzer, Config, Report};
use gpcap::capture::CaptureReader;
use gpcap::capture::{PcapNgWriter, PcapWriter};
use gpcap::decode::{Decoded, decode};
use gpcap::validate::article::{self, Body, PacketA};
use std::io::Write;

fn game_payload(seq: u16) -> Vec<u8> {
    article::write_packet(seq, &Body::A(PacketA { a: 1, b: -2, c: 3 })).unwrap()
}

fn udp_v4(payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(40000, 50000);
    let mut v = Vec::new();
    b.write(&mut v, payload).unwrap();
    v
}

fn udp_v6(payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ipv6([0xfd; 16], [0xfe; 16], 64).udp(40000, 50000);
    let mut v = Vec::new();
    b.write(&mut v, payload).unwrap();
    v
}

fn ether(ethertype: u16, rest: &[u8], vlans: &[u16]) -> Vec<u8> {
    let mut v = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    for (i, id) in vlans.iter().enumerate() {
        let tpid: u16 = if i == 0 && vlans.len() > 1 { 0x88a8 } else { 0x8100 };
        v.extend(tpid.to_be_bytes());
        v.extend(id.to_be_bytes());
    }
    v.extend(ethertype.to_be_bytes());
    v.extend_from_slice(rest);
    v
}

fn analyze(bytes: Vec<u8>) -> Report {
    let mut a = Analyzer::new(Config {
        protocol_id: Some(article::PROTOCOL_ID),
        ports: vec![40000],
        ..Config::default()
    });
    let mut r = CaptureReader::from_read("mem", std::io::Cursor::new(bytes)).unwrap();
    a.begin_file("mem");
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    a.finish()
}

fn pcap(linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), linktype, 65535, false).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write(1_000_000_000 + i as i64 * 16_666_667, f, f.len() as u32)
            .unwrap();
    }
    w.into_inner()
}

fn assert_game(r: &Report, n: u64) {
    assert_eq!(r.validation.crc_ok, n, "{:?}", r.capture);
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.flows[0].seq.lost, 0);
}

#[test]
fn ethernet_vlan_and_qinq() {
    let f1 = ether(0x0800, &udp_v4(&game_payload(1)), &[100]);
    let f2 = ether(0x0800, &udp_v4(&game_payload(2)), &[100, 200]);
    let r = analyze(pcap(1, &[f1, f2]));
    assert_game(&r, 2);
}

#[test]
fn linux_sll_and_sll2() {
    let ip = udp_v4(&game_payload(1));
    let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00];
    sll.extend_from_slice(&ip);
    assert_game(&analyze(pcap(113, &[sll])), 1);
    let mut sll2 = vec![0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
    sll2.extend_from_slice(&ip);
    assert_game(&analyze(pcap(276, &[sll2])), 1);
}

#[test]
fn raw_and_null() {
    let r = analyze(pcap(101, &[udp_v4(&game_payload(1)), udp_v6(&game_payload(2))]));
    assert_eq!((r.validation.crc_ok, r.flows.len()), (2, 2));
    let mut null4 = 2u32.to_le_bytes().to_vec();
    null4.extend(udp_v4(&game_payload(1)));
    let mut null6 = 30u32.to_be_bytes().to_vec();
    null6.extend(udp_v6(&game_payload(1)));
    let r = analyze(pcap(0, &[null4, null6]));
    assert_eq!(r.validation.crc_ok, 2);
    assert_eq!(r.flows.len(), 2);
    assert_game(&analyze(pcap(229, &[udp_v6(&game_payload(5))])), 1);
}

#[test]
fn ipv6_with_extension_headers() {
    let inner = udp_v6(&game_payload(9));
    // Insert a hop-by-hop and a destination-options header before UDP.
    let mut v = inner[..40].to_vec();
    v[6] = 0; // next header: hop-by-hop
    let udp = &inner[40..];
    v.extend([60, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop → destination options, PadN
    v.extend([17, 0, 1, 4, 0, 0, 0, 0]); // destination options → UDP
    v.extend_from_slice(udp);
    let plen = (v.len() - 40) as u16;
    v[4..6].copy_from_slice(&plen.to_be_bytes());
    match decode(101, &v) {
        Decoded::Udp { payload, .. } => assert_eq!(payload, game_payload(9).as_slice()),
        other => panic!("{other:?}"),
    }
    assert_game(&analyze(pcap(101, &[v])), 1);
}

#[test]
fn pcapng_two_interfaces_and_nanoseconds() {
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.interface(1, 65535, false).unwrap();
    w.interface(101, 65535, true).unwrap();
    w.packet(0, 1_000_000, &ether(0x0800, &udp_v4(&game_payload(1)), &[]), 0)
        .unwrap();
    w.packet(1, 1_000_000_500, &udp_v4(&game_payload(2)), 0).unwrap();
    let bytes = w.into_inner();
    let mut r = CaptureReader::from_read("mem", std::io::Cursor::new(bytes.clone())).unwrap();
    let f = r.next_frame().unwrap().unwrap();
    assert_eq!((f.linktype, f.interface, f.ts_ns), (1, 0, 1_000_000_000));
    let f = r.next_frame().unwrap().unwrap();
    assert_eq!((f.linktype, f.interface, f.ts_ns), (101, 1, 1_000_000_500));
    assert!(r.next_frame().unwrap().is_none());
    assert_game(&analyze(bytes), 2);
}

#[test]
fn snaplen_cut_is_not_malformed() {
    let full = ether(0x0800, &udp_v4(&game_payload(1)), &[]);
    let mut w = PcapWriter::new(Vec::new(), 1, 40, true).unwrap();
    w.write(0, &full[..40], full.len() as u32).unwrap();
    w.write(1, &full, full.len() as u32).unwrap();
    let r = analyze(w.into_inner());
    assert_eq!(r.capture.snaplen_truncated, 1);
    assert_eq!(r.malformed.total, 0);
    assert!(
        r.capture.decode_errors.is_empty(),
        "{:?}",
        r.capture.decode_errors
    );
    assert_eq!(r.validation.crc_ok, 1);
}

#[test]
fn gzip_is_transparent_and_truncated_tail_is_reported() {
    let bytes = pcap(1, &vec![ether(0x0800, &udp_v4(&game_payload(1)), &[]); 3]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).unwrap();
    assert_game(&analyze(gz.finish().unwrap()), 3);

    let cut = bytes[..bytes.len() - 5].to_vec();
    let mut r = CaptureReader::from_read("cut.pcap", std::io::Cursor::new(cut)).unwrap();
    let mut n = 0;
    while r.next_frame().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 2);
    let t = r.truncated_tail.unwrap();
    assert_eq!(t.frame, 2);
    assert!(
        t.to_string().starts_with("cut.pcap: last record truncated"),
        "{t}"
    );
}

#[test]
fn unreadable_input_names_file_and_offset() {
    let e = CaptureReader::from_read("junk.bin", std::io::Cursor::new(b"not a capture at all".to_vec()))
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "junk.bin: not a pcap or pcapng file (unknown magic) at byte offset 0 (after frame 0)"
    );
}

/// Regression: a classic pcap header whose link type carries FCS bits above the low 26
/// (0x30000001, as in tcpdump's aarp-heapoverflow-1.pcap) was "unsupported linktype
/// 805306369"; libpcap masks them off (`LT_LINKTYPE`), and so does the reader, on the
/// general path (a stream) and the fast one (a file).
#[test]
fn link_type_bits_above_the_low_26_are_masked_off() {
    let bytes = pcap(0x3000_0001, &[ether(0x0800, &udp_v4(&game_payload(1)), &[])]);
    let mut r = CaptureReader::from_read("mem", std::io::Cursor::new(bytes.clone())).unwrap();
    assert_eq!(r.next_frame().unwrap().unwrap().linktype, 1);
    assert_game(&analyze(bytes.clone()), 1);
    let path = std::env::temp_dir().join(format!("gpcap-fcs-bits-{}.pcap", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let mut r = CaptureReader::open(&path).unwrap();
    let linktype = r.next_frame().unwrap().unwrap().linktype;
    let _ = std::fs::remove_file(&path);
    assert_eq!(linktype, 1);
}
