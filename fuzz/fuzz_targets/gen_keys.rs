//! Key logs and key files built from a fuzzer's input (shared by the `keys` target and
//! `tests/fuzz_long.rs`): any text read as a key log and any bytes as a key file, never a
//! panic; then a key log whose clients connect several times from one address, and
//! keep-alives sealed under each connection in turn (some tampered with), analyzed: every
//! packet of a connection the log names decrypts, every tampered one is a MAC failure.

use gpcap::analysis::Analyzer;
use gpcap::capture::Frame;
use gpcap::decrypt::keys::{ConnectionKeys, Secrets, key_file, parse_keylog};
use gpcap::decrypt::netcode::PacketCipher;
use gpcap::generate::{Link, ip_packets};
use gpcap::layers::Stack;
use gpcap::{Config, Program};
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

fn netcode() -> &'static Arc<Program> {
    static P: OnceLock<Arc<Program>> = OnceLock::new();
    P.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../dissectors/netcode.kdl");
        let path = if std::path::Path::new(path).exists() {
            path.to_string()
        } else {
            "dissectors/netcode.kdl".to_string()
        };
        Arc::new(gpcap::dissect::load(std::path::Path::new(&path)).expect("netcode.kdl compiles"))
    })
}

/// A keep-alive of `seq` sealed under `key`.
fn keep_alive(protocol_id: u64, key: &[u8; 32], seq: u8) -> Vec<u8> {
    let mut body = vec![0, 0, 0, 0, 4, 0, 0, 0];
    PacketCipher::new(key).seal(protocol_id, seq as u64, 0x14, &mut body);
    [vec![0x14, seq], body].concat()
}

pub fn run(data: &[u8]) {
    // Any text as a key log, any bytes as a key file: an error or keys, never a panic.
    let mut s = Secrets::default();
    let _ = parse_keylog(&String::from_utf8_lossy(data), &mut s);
    let dir = std::env::temp_dir().join(format!("gpcap-fuzz-keys-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!("{:?}.key", std::thread::current().id()).replace(['(', ')'], ""));
    if std::fs::write(&file, data).is_ok() {
        let _ = key_file(&file);
        let mut log = Secrets::default();
        let _ = gpcap::decrypt::keys::keylog(&file, &mut log);
        let _ = std::fs::remove_file(&file);
    }
    // Connections of up to three clients, up to four each from one address.
    let mut b = data.iter().copied().chain(std::iter::repeat(0));
    let mut next = || b.next().unwrap_or(0);
    let p = netcode();
    let protocol_id = p.params.protocol_id.map_or(0, |i| i.value);
    let server: SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let clients: Vec<SocketAddr> = (0..1 + next() % 3)
        .map(|c| format!("10.0.0.{}:4100{c}", 5 + c).parse().unwrap())
        .collect();
    let mut secrets = Secrets::default();
    let mut conns: Vec<(SocketAddr, ConnectionKeys)> = Vec::new();
    for &c in &clients {
        for _ in 0..1 + next() % 4 {
            let (u, d) = (next(), next());
            let k = ConnectionKeys {
                client_to_server: [u; 32],
                server_to_client: [d.wrapping_add(1) ^ 0x80; 32],
            };
            secrets.connections.push(c, k);
            conns.push((c, k));
        }
    }
    // Each client's connections in the log's order, some skipped, each a few packets
    // either way, some tampered with.
    let (mut datagrams, mut good, mut bad) = (Vec::new(), 0u64, 0u64);
    for &c in &clients {
        let mine: Vec<&ConnectionKeys> = conns.iter().filter(|(a, _)| *a == c).map(|(_, k)| k).collect();
        for k in mine {
            if next() % 4 == 0 {
                continue;
            }
            for seq in 1..=1 + next() % 3 {
                let up = next() % 2 == 0;
                let key = if up {
                    &k.client_to_server
                } else {
                    &k.server_to_client
                };
                let mut d = keep_alive(protocol_id, key, seq);
                let tampered = next() % 5 == 0;
                if tampered {
                    let at = 2 + next() as usize % (d.len() - 2);
                    d[at] ^= 1 << (next() % 8);
                    bad += 1;
                } else {
                    good += 1;
                }
                datagrams.push(if up { (c, server, d) } else { (server, c, d) });
            }
        }
    }
    let mut cfg = Config::from_program(p.clone());
    cfg.stack = Some(Arc::new(Stack {
        secrets: Some(Arc::new(secrets)),
        show_keys: false,
        layers: Vec::new(),
    }));
    let link = Link::Raw;
    let frames: Vec<Vec<u8>> = datagrams
        .iter()
        .enumerate()
        .flat_map(|(k, (s, d, p))| ip_packets(*s, *d, p, k as u32, false, 1500))
        .map(|ip| link.frame(&ip, false))
        .collect();
    let mut a = Analyzer::new(cfg);
    a.begin_file("fuzz.pcap");
    for (i, f) in frames.iter().enumerate() {
        a.frame(&Frame {
            number: i as u64 + 1,
            ts_ns: 1_700_000_000_000_000_000 + i as i64 * 1_000_000,
            linktype: link.linktype() as i32,
            interface: 0,
            origlen: f.len() as u32,
            offset: 0,
            data: f,
        });
    }
    let report = a.finish();
    let d = serde_json::to_value(&report).unwrap()["decryption"].clone();
    // Two connections may share a key (the input chose it): a tampered packet then
    // still fails, and a good one opens under whichever comes first.
    assert_eq!(d["decrypted"].as_u64().unwrap_or(0), good, "{d}");
    assert_eq!(d["mac_failures"].as_u64().unwrap_or(0), bad, "{d}");
}
