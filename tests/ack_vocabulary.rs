//! Acknowledgements beyond one sequence: ranges and NAK ranges of datagram numbers (as
//! RakNet's ACK and NAK datagrams), cumulative acks (TCP-like), and what hostile ones
//! cost: bounded, counted, never a panic.

mod common;

use common::gpcap_ok;
use serde_json::Value;
use std::net::SocketAddr;

/// Data datagrams numbered 24 bits; ACK and NAK datagrams of records, each a single
/// number or a range.
const RANGES: &str = r#"protocol "ranges" { ports 9000; checksum "none"; types 3; }
header {
    bits flags 8
    if "flags & 0x40" {
        derived kind 1 role=type
    }
    else if "flags & 0x20" {
        derived kind 2 role=type
    }
    else {
        derived kind 0 role=type
    }
}
packet 0 "data" {
    le-uint number 3 role=sequence
    rest payload
}
packet 1 "ack" {
    be-uint count 2
    array records "count" {
        bits single 8
        le-uint start 3 role=ack-range-start
        if "!single" {
            le-uint end 3 role=ack-range-end
        }
    }
}
packet 2 "nak" {
    be-uint count 2
    array records "count" {
        bits single 8
        le-uint start 3 role=nak-range-start
        if "!single" {
            le-uint end 3 role=nak-range-end
        }
    }
}
"#;

fn data(n: u32) -> Vec<u8> {
    let mut p = vec![0x84];
    p.extend_from_slice(&n.to_le_bytes()[..3]);
    p.extend_from_slice(b"payload");
    p
}

fn records(flags: u8, ranges: &[(u32, Option<u32>)]) -> Vec<u8> {
    let mut p = vec![flags];
    p.extend_from_slice(&(ranges.len() as u16).to_be_bytes());
    for (start, end) in ranges {
        p.push(u8::from(end.is_none()));
        p.extend_from_slice(&start.to_le_bytes()[..3]);
        if let Some(e) = end {
            p.extend_from_slice(&e.to_le_bytes()[..3]);
        }
    }
    p
}

/// Datagrams as an Ethernet pcap, 1 ms apart, whole whatever their size (a jumbo link).
fn capture(path: &std::path::Path, datagrams: Vec<(SocketAddr, SocketAddr, Vec<u8>)>) {
    use gpcap::generate::{Link, ip_packets};
    let link = Link::Ethernet { vlan: None };
    let file = std::fs::File::create(path).unwrap();
    let mut w = gpcap::capture::PcapWriter::new(file, link.linktype(), 65535, true).unwrap();
    for (k, (src, dst, payload)) in datagrams.into_iter().enumerate() {
        let f = link.frame(&ip_packets(src, dst, &payload, k as u32, false, 65_000)[0], false);
        w.write(
            1_700_000_000_000_000_000 + k as i64 * 1_000_000,
            &f,
            f.len() as u32,
        )
        .unwrap();
    }
}

fn analyze(def: &str, datagrams: Vec<(SocketAddr, SocketAddr, Vec<u8>)>) -> Value {
    let dir = std::env::temp_dir().join(format!(
        "gpcap-ackvocab-{}-{}",
        std::process::id(),
        datagrams.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (d, c) = (dir.join("d.kdl"), dir.join("c.pcap"));
    std::fs::write(&d, def).unwrap();
    capture(&c, datagrams);
    let r = gpcap_ok(&[
        "analyze",
        "-d",
        d.to_str().unwrap(),
        c.to_str().unwrap(),
        "--json",
    ]);
    std::fs::remove_dir_all(&dir).ok();
    serde_json::from_str(&r).unwrap()
}

fn ends() -> (SocketAddr, SocketAddr) {
    ("10.0.0.1:5000".parse().unwrap(), "10.0.0.2:9000".parse().unwrap())
}

/// Ten data datagrams (3 and 7 lost before the capture); the peer acks ranges, NAKs 3
/// and 7, and 7 comes again: acked by ranges, NAKed, resent, never acked (3).
#[test]
fn ack_and_nak_ranges_settle_datagram_numbers() {
    let (c, s) = ends();
    let mut d: Vec<(SocketAddr, SocketAddr, Vec<u8>)> = Vec::new();
    for n in (0..10).filter(|n| ![3, 7].contains(n)) {
        d.push((c, s, data(n)));
    }
    d.push((s, c, records(0xc0, &[(0, Some(2)), (4, Some(6))])));
    d.push((s, c, records(0xa0, &[(3, None), (7, None)])));
    d.push((c, s, data(7)));
    d.push((s, c, records(0xc0, &[(7, Some(9))])));
    let r = analyze(RANGES, d);
    let a = &r["flows"][0]["acks"];
    assert_eq!(a["sequences"], 10);
    assert_eq!(a["acked"], 9);
    assert_eq!(a["acked_by"]["ranges"], 9);
    assert_eq!(a["never_acked"], 1);
    assert_eq!(a["naked"], 2);
    assert_eq!(a["never_acked_resent_or_naked"], 1, "3, NAKed: the data was lost");
    assert_eq!(
        (&a["retransmissions"], &a["spurious_retransmissions"]),
        (&0.into(), &0.into())
    );
    assert_eq!(a["never_acked_runs"], serde_json::json!([[3, 3]]));
    // The ack datagrams carry no sequence: no bad header, no loss of their own.
    assert_eq!(r["validation"]["header_errors"], serde_json::json!({}));
}

/// More than 1,024 ranges in one datagram: a `limit` fault there, the first 1,024 used.
#[test]
fn a_datagram_of_too_many_ranges_is_a_counted_fault() {
    let (c, s) = ends();
    let mut d = vec![(c, s, data(0))];
    let many: Vec<(u32, Option<u32>)> = (0..5000).map(|i| (i, Some(i + 1_000_000))).collect();
    for _ in 0..20 {
        d.push((s, c, records(0xc0, &many)));
    }
    let r = analyze(RANGES, d);
    assert_eq!(r["malformed"]["by_cause"]["limit"], 20);
    let a = &r["flows"][0]["acks"];
    assert_eq!((&a["sequences"], &a["acked"]), (&1.into(), &1.into()));
    assert_eq!(a["acks_of_unsent"], 20 * 1024);
}

/// A TCP-like peer: `ack-upto` in every datagram, one jumping by 2^31 (counted as an
/// ack of sequences never sent, covering only what was), and NAKs of sequences never
/// sent counted.
#[test]
fn cumulative_acks_and_a_jump_past_everything_sent() {
    let def = r#"protocol "tcpish" { ports 9000; checksum "none"; }
header {
    bits seq 32 role=sequence
    bits ack 32 role=ack-upto
    bits nak 32 role=nak-range-start
}
packet 0 "p" { rest data; }
"#;
    let (c, s) = ends();
    let dg = |seq: u32, ack: u32, nak: u32| {
        let mut p = seq.to_le_bytes().to_vec();
        p.extend_from_slice(&ack.to_le_bytes());
        p.extend_from_slice(&nak.to_le_bytes());
        p
    };
    let mut d = Vec::new();
    for n in 0..20u32 {
        d.push((c, s, dg(n, 0, 0)));
        d.push((s, c, dg(n, n.saturating_sub(1), 1_000_000 + n)));
    }
    d.push((s, c, dg(20, 19 + (1 << 31), 0)));
    let r = analyze(def, d);
    let a = &r["flows"][0]["acks"];
    assert_eq!(
        (&a["sequences"], &a["acked"], &a["never_acked"]),
        (&20.into(), &20.into(), &0.into())
    );
    assert_eq!(a["acked_by"]["cumulative"], 20);
    assert_eq!(a["acks_of_unsent"], 1);
    assert_eq!(a["naks_of_unsent"], 20);
    assert_eq!(a["rtt_source"], "first copies");
}

/// Acks of a direction that sent nothing they could name are said, not dropped.
#[test]
fn acks_with_nothing_to_settle_are_counted() {
    let (c, s) = ends();
    let d = (0..5).map(|n| (s, c, records(0xc0, &[(n, None)]))).collect();
    let r = analyze(RANGES, d);
    assert_eq!(r["capture"]["acks_unmatched"], 5);
}

/// An ack field that never names a sequence sent (ranges far past everything): the ack
/// analysis does not fit, said in Fit, its ack-implied loss held back in the table.
#[test]
fn acks_of_sequences_never_sent_make_the_ack_fit_doubtful() {
    let (c, s) = ends();
    let mut d: Vec<(SocketAddr, SocketAddr, Vec<u8>)> = (0..10).map(|n| (c, s, data(n))).collect();
    for n in 0..20 {
        d.push((s, c, records(0xc0, &[(100_000 + n, Some(200_000 + n))])));
    }
    let r = analyze(RANGES, d);
    assert_eq!(r["fit"]["analyses"]["acks"], "does_not_fit", "{}", r["fit"]);
    assert_ne!(r["fit"]["verdict"], "good");
    let why = r["fit"]["rests_on"].as_array().unwrap();
    assert!(
        why.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("acks and NAKs name sequences never sent")),
        "{why:?}"
    );
}
