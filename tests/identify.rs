//! Zero configuration: the protocol id is solved from the datagrams themselves.

use gpcap::analysis::FlowId;
use gpcap::capture::CaptureReader;
use gpcap::identify::{Identifier, equivalent32, solve32};
use gpcap::validate::article::{self, Body, PacketA, PacketB};
use gpcap::validate::{CrcStatus, ProtocolId, verify_crc, write_crc};
use proptest::prelude::*;
use std::net::SocketAddr;

fn flow(sport: u16) -> FlowId {
    FlowId {
        src: SocketAddr::from(([10, 0, 0, 1], sport)),
        dst: SocketAddr::from(([10, 0, 0, 2], 50000)),
    }
}

/// A packet written with the shared writer, re-signed with `id`.
fn packet(id: ProtocolId, seq: u16, items: Vec<i32>) -> Vec<u8> {
    let mut p = article::write_packet(seq, &Body::B(PacketB { items })).unwrap();
    write_crc(id, &mut p);
    p
}

proptest! {
    #[test]
    fn recovers_random_32_bit_ids(id in any::<u32>(), seq in any::<u16>(), items in proptest::collection::vec(-100i32..=100, 0..200)) {
        let p = packet(ProtocolId::new32(id), seq, items);
        prop_assert_eq!(solve32(&p), Some(id));
    }

    #[test]
    fn recovers_random_64_bit_ids_as_their_32_bit_equivalent(id in any::<u64>(), seqs in proptest::collection::vec(any::<u16>(), 3..8)) {
        let id64 = ProtocolId::new64(id);
        let eq = equivalent32(id64);
        for (k, seq) in seqs.into_iter().enumerate() {
            let p = packet(id64, seq, (0..k as i32 * 13).collect());
            prop_assert_eq!(solve32(&p), Some(eq));
            prop_assert_eq!(verify_crc(ProtocolId::new32(eq), &p), CrcStatus::Ok);
        }
    }
}

#[test]
fn noise_gives_no_confident_candidate() {
    let mut ident = Identifier::default();
    // DNS-like queries and random bytes, each its own "protocol".
    let mut x = 0x1234_5678u32;
    for i in 0..50u16 {
        let len = 20 + (i as usize * 7) % 90;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        ident.datagram(flow(53), &bytes);
        ident.datagram(flow(9000 + i), &bytes);
    }
    let r = ident.finish();
    assert!(r.candidates.is_empty(), "{:?}", r.candidates);
    assert_eq!(r.unexplained, r.sampled);
}

#[test]
fn a_single_datagram_is_not_a_protocol() {
    let mut ident = Identifier::default();
    ident.datagram(flow(1), &packet(ProtocolId::new32(7), 1, vec![1, 2]));
    let r = ident.finish();
    assert!(r.candidates.is_empty());
    assert_eq!(r.singletons, 1);
}

#[test]
fn article_capture() {
    let mut ident = Identifier::default();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/captures/article.pcap");
    let mut r = CaptureReader::open(std::path::Path::new(path)).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        ident.frame(f.linktype, f.data);
    }
    let id = ident.finish();
    let ids: Vec<String> = id.candidates.iter().map(|c| c.protocol_id.to_string()).collect();
    assert_eq!(ids, ["0x55667788", "0x0BADF00D"]);
    let game = &id.candidates[0];
    // Every sampled datagram of every game flow is valid.
    assert_eq!(game.flows.len(), 4);
    assert!(
        game.flows.iter().all(|f| f.valid == f.sampled),
        "{:?}",
        game.flows
    );
    assert_eq!(game.sequence_increments, Some(1.0));
    assert_eq!(game.ports, [40000, 40001, 50000, 50001, 50002]);
    let foreign = &id.candidates[1];
    assert_eq!(foreign.flows.len(), 1);
    assert_eq!(foreign.flows[0].flow.src.port(), 50009);
    assert_eq!(foreign.datagrams, 7);
    // DNS never forms a candidate.
    assert!(id.candidates.iter().all(|c| {
        c.flows
            .iter()
            .all(|f| f.flow.src.port() != 53 && f.flow.dst.port() != 53)
    }));
    let _ = PacketA::default();
}
