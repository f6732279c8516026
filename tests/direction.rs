//! Packet direction (#17, item 6): a definition says which side sends a packet type
//! (`from=client`), the generator respects it, and `analyze` reports packets that travel
//! the wrong way.

mod common;

use gpcap::analysis::{Analyzer, Config, Report};
use gpcap::capture::CaptureReader;
use gpcap::dissect;
use gpcap::dissect::program::Side;
use gpcap::generate::PacketWriter;
use gpcap::generate::Rng;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

fn shooter() -> Arc<dissect::Program> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Arc::new(dissect::load(&root.join("dissectors/example-shooter.kdl")).unwrap())
}

fn analyze(path: &Path, p: Arc<dissect::Program>) -> Report {
    let mut a = Analyzer::new(Config::from_program(p));
    let mut r = CaptureReader::open(path).unwrap();
    a.begin_file("x");
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    a.finish()
}

#[test]
fn declared_directions_compile() {
    let p = shooter();
    let from: Vec<(u32, Option<Side>)> = p.packets.iter().map(|d| (d.type_id, d.from)).collect();
    assert_eq!(
        &from[..3],
        &[
            (1, Some(Side::Client)),
            (2, Some(Side::Client)),
            (3, Some(Side::Server))
        ]
    );
    assert!(from[3..].iter().all(|(_, f)| f.is_none()));
    let bad = "protocol { id 1 }\nheader {\n    bits crc 32 role=crc\n    bits sequence 16 role=sequence\n    int type 0 3 role=type\n}\npacket 1 \"a\" from=both {\n    bool x\n}\n";
    let e = dissect::render(&dissect::compile("bad.kdl", bad).unwrap_err(), false);
    assert!(e.contains("`from` is client or server"), "{e}");
}

/// Regression: the generator had the server send "input" packets.
#[test]
fn the_generator_sends_each_type_from_its_side() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for capture in ["ipv6-sll2.pcapng", "vlan-corrupt.pcap"] {
        let text =
            std::fs::read_to_string(root.join("captures").join(format!("{capture}.truth.jsonl"))).unwrap();
        let (mut from_server, mut from_client) = (0, 0);
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["event"] != "send" || v.get("fragment").is_some() {
                continue;
            }
            // The server is the protocol's first port (27015).
            let server = v["flow"]
                .as_str()
                .unwrap()
                .split('>')
                .next()
                .unwrap()
                .ends_with(":27015");
            let t = v["type"].as_u64().unwrap();
            if server {
                from_server += 1;
                assert!(t != 1 && t != 2, "{capture}: the server sent type {t}");
            } else {
                from_client += 1;
                assert!(t != 3, "{capture}: a client sent a snapshot");
            }
        }
        assert!(from_server > 100 && from_client > 100);
        let r = analyze(&root.join("captures").join(capture), shooter());
        assert_eq!(r.validation.wrong_direction, 0, "{capture}");
        let client = r.flows.iter().filter(|f| f.role == Some(Side::Client)).count();
        let server = r.flows.iter().filter(|f| f.role == Some(Side::Server)).count();
        assert!(
            client > 0 && client == server,
            "{capture}: {client} client flows, {server} server flows"
        );
    }
}

/// A server that sends client packets (and a client a snapshot) is reported, by flow.
#[test]
fn wrong_direction_packets_are_counted() {
    let p = shooter();
    let path = std::env::temp_dir().join(format!("gpcap-direction-{}.pcap", std::process::id()));
    let server: SocketAddr = "10.0.0.1:27015".parse().unwrap();
    let client: SocketAddr = "10.0.0.2:50000".parse().unwrap();
    let mut w = PacketWriter::new(&p);
    let mut rng = Rng::new(5);
    // The client: 20 inputs and 2 snapshots (wrong); the server: 20 snapshots and 3
    // inputs (wrong); 5 chats each way (either side).
    let mut plan: Vec<(SocketAddr, SocketAddr, u32, u16)> = Vec::new();
    for k in 0..20 {
        plan.push((client, server, 2, k));
        plan.push((server, client, 3, k));
    }
    plan.extend((20..22).map(|k| (client, server, 3, k)));
    plan.extend((20..23).map(|k| (server, client, 2, k)));
    for k in 30..35 {
        plan.push((client, server, 5, k));
        plan.push((server, client, 5, k));
    }
    let datagrams: Vec<_> = plan
        .into_iter()
        .map(|(src, dst, ty, seq)| {
            (
                src,
                dst,
                w.packet_within(&mut rng, ty, seq as u64, 2, 1000).unwrap(),
            )
        })
        .collect();
    common::udp_capture(&path, datagrams);
    let r = analyze(&path, p);
    let flow = |src: SocketAddr| r.flows.iter().find(|f| f.src == src).unwrap();
    let (c, s) = (flow(client), flow(server));
    assert_eq!(
        (c.role, c.from_client, c.from_server, c.wrong_direction),
        (Some(Side::Client), 20, 2, 2)
    );
    assert_eq!(
        (s.role, s.from_client, s.from_server, s.wrong_direction),
        (Some(Side::Server), 3, 20, 3)
    );
    assert_eq!(r.validation.wrong_direction, 5);
    let text = gpcap::present::tables::render(&r);
    assert!(
        text.contains("│ wrong_direction           ┆ 5 (2 from a client on 10.0.0.2:50000 → 10.0.0.1:27015; 3 from the server on 10.0.0.1:27015 → 10.0.0.2:50000)"),
        "{text}"
    );
    let _ = std::fs::remove_file(&path);
}
