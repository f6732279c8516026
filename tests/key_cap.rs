//! One report on any core count past the key tables' caps: sealed netcode.io traffic from
//! more connection directions than decryption keeps replay windows for
//! (`MAX_CONNECTIONS`), with replays and tampered packets on both sides of the cap, reads
//! the same on one core and on 2 and 3 pipelined workers.

use gpcap::Mode;
use gpcap::decrypt::MAX_CONNECTIONS;
use gpcap::decrypt::keys::{ConnectionKeys, Secrets, parse_keylog, to_hex};
use gpcap::decrypt::netcode::ConnectionCiphers;
use gpcap::generate::Rng;
use gpcap::layers::Stack;
use gpcap::resolve::{Choice, resolve};
use gpcap::validate::ProtocolId;
use proptest::prelude::*;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod common;

const PROTOCOL_ID: u64 = 0x1122_3344_5566_7788;
const KEEP_ALIVE: u8 = 4;

/// Client `k`'s address: one address per connection (a key log names a client at most
/// 64 times).
fn client(k: u32) -> SocketAddr {
    let [_, a, b, c] = k.to_be_bytes();
    SocketAddr::from(([10, a, b, c], 50_000))
}

/// A keep-alive sealed under `cipher` with a one-byte sequence.
fn keep_alive(cipher: &gpcap::decrypt::netcode::PacketCipher, sequence: u8) -> Vec<u8> {
    let prefix = KEEP_ALIVE | 1 << 4;
    let mut body = vec![0u8; 8];
    cipher.seal(PROTOCOL_ID, u64::from(sequence), prefix, &mut body);
    let mut packet = vec![prefix, sequence];
    packet.extend_from_slice(&body);
    packet
}

/// The capture (each client's keep-alive, the server's answer, and for some clients a
/// replayed or tampered copy, in an order drawn from `seed`) and its key log lines.
fn capture(path: &Path, clients: u32, seed: u64) -> Vec<String> {
    let server = SocketAddr::from(([10, 255, 0, 1], 40_000));
    let mut rng = Rng::new(seed);
    let mut log = Vec::new();
    let mut datagrams = Vec::new();
    for k in 0..clients {
        let mut key = || std::array::from_fn(|_| rng.next_u32() as u8);
        let keys = ConnectionKeys {
            client_to_server: key(),
            server_to_client: key(),
        };
        log.push(format!(
            "NETCODE {} {} {}",
            client(k),
            to_hex(&keys.client_to_server),
            to_hex(&keys.server_to_client)
        ));
        let c = ConnectionCiphers::new(&keys);
        let up = keep_alive(&c.client_to_server, 1);
        datagrams.push((client(k), server, up.clone()));
        datagrams.push((server, client(k), keep_alive(&c.server_to_client, 1)));
        match rng.next_u32() % 8 {
            0 => datagrams.push((client(k), server, up)),
            1 => {
                let mut bad = up;
                *bad.last_mut().unwrap() ^= 1;
                datagrams.push((client(k), server, bad));
            }
            _ => {}
        }
    }
    // Neighbours swap at random: first appearances (and so which directions get a
    // replay window) fall on both sides of the cap in another order each case.
    for i in 1..datagrams.len() {
        if rng.next_u32().is_multiple_of(3) {
            datagrams.swap(i - 1, i);
        }
    }
    common::udp_capture(path, datagrams);
    log
}

fn report(path: &Path, log: &[String], mode: Mode) -> Value {
    let mut secrets = Secrets::default();
    parse_keylog(&log.join("\n"), &mut secrets).unwrap();
    let choice = Choice {
        program: Some(gpcap::load_definition("dissectors/netcode.kdl").unwrap()),
        protocol_id: Some(ProtocolId::new64(PROTOCOL_ID)),
        stack: Some(Arc::new(Stack {
            secrets: Some(Arc::new(secrets)),
            show_keys: false,
            layers: Vec::new(),
        })),
        ..Choice::default()
    };
    let cfg = resolve(&choice, |_| Ok(())).unwrap().cfg;
    let r = gpcap::run::analyze(&[path.to_path_buf()], cfg, mode, &mut |_, _| {}).unwrap();
    serde_json::to_value(r).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2, ..ProptestConfig::default() })]

    #[test]
    fn sealed_traffic_past_the_key_cap_reads_alike_on_many_cores(seed in any::<u64>()) {
        let dir = std::env::temp_dir().join(format!("gpcap-key-cap-{}-{seed}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path: PathBuf = dir.join("sealed.pcap");
        // Two directions a client: past the cap by a few hundred directions.
        let clients = (MAX_CONNECTIONS / 2 + 200) as u32;
        let log = capture(&path, clients, seed);
        let serial = report(&path, &log, Mode::Serial);
        let d = &serial["decryption"];
        prop_assert!(d["replay_not_judged"].as_u64().unwrap_or(0) > 0, "the cap was not crossed: {d}");
        prop_assert!(d["replayed"].as_u64().unwrap() > 0, "{d}");
        prop_assert!(d["mac_failures"].as_u64().unwrap() > 0, "{d}");
        prop_assert!(d["decrypted"].as_u64().unwrap() >= 2 * u64::from(clients), "{d}");
        for workers in [2, 3] {
            let piped = report(&path, &log, Mode::Pipelined(workers));
            prop_assert!(piped == serial, "{workers} workers differ from one core (seed {seed})");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
