//! Traffic for the message, checksum and decryption paths, built from a fuzzer's input
//! (shared by the `messages` target and `tests/fuzz_long.rs`): ENet commands with
//! lengths and fragments that may lie, checksums declared field by field (CRC32, CRC32C,
//! Adler-32) set right or wrong, reliable.io packets and fragments carrying yojimbo
//! messages, and netcode.io sealed with known keys — connection requests whose private
//! token says anything, packets whose ciphertext, MAC or sequence is tampered with. Each
//! run goes through the analysis and through an engine that records field trees, which
//! are rendered as text and JSON: counted faults, never a panic.

use gpcap::SinkError;
use gpcap::analysis::Analyzer;
use gpcap::capture::Frame;
use gpcap::decrypt::keys::{ConnectionKeys, Key, Secrets};
use gpcap::decrypt::netcode::{PacketCipher, REQUEST_BYTES, TOKEN_PLAINTEXT, VERSION, seal_token};
use gpcap::dissect::program::ChecksumAlgorithm;
use gpcap::generate::{Link, ip_packets};
use gpcap::layers::{Stack, shown_program};
use gpcap::{Config, Engine, Flow, PacketEvent, Sink};
use gpcap::{Dissection, Program};
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

/// Reads choices from the input; zeros once it runs out.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn below(&mut self, n: u32) -> u32 {
        self.byte() as u32 % n.max(1)
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    /// `n` bytes of the input (fewer when it runs out), padded with a pattern.
    fn take(&mut self, n: usize) -> Vec<u8> {
        let k = n.min(self.0.len());
        let (a, rest) = self.0.split_at(k);
        self.0 = rest;
        let mut v = a.to_vec();
        v.extend((k..n).map(|i| i as u8));
        v
    }
    /// A length near `honest`: mostly it, sometimes off by a little or anything.
    fn length(&mut self, honest: usize) -> u32 {
        match self.below(8) {
            0 => self.u32(),
            1 => self.u16() as u32,
            2 => honest as u32 + self.below(4),
            3 => (honest as u32).saturating_sub(1 + self.below(4)),
            _ => honest as u32,
        }
    }
}

const CLIENT: &str = "10.0.0.1:50000";
const OTHER_CLIENT: &str = "10.0.0.3:50001";

fn load(text: &str) -> Arc<Program> {
    Arc::new(gpcap::dissect::compile("fuzz.kdl", text).expect("the target's definition compiles"))
}

struct Programs {
    enet: Arc<Program>,
    reliable: Arc<Program>,
    game: Arc<Program>,
    netcode: Arc<Program>,
    checked: [Arc<Program>; 3],
}

/// A protocol with a checksum declared field by field, messages counted by the header
/// and fragments inside messages.
fn checked_text(algorithm: &str) -> String {
    format!(
        r#"
protocol "checked" {{
    ports 9000
    checksum "{algorithm}" field="check"
    max-message-size 4096
}}
header {{
    bits version 8
    bits count 8
    bits check 32 role=crc
    bits sequence 16 role=sequence
    bits ack 16 role=ack
}}
messages count="count" {{
    bits type 8 role=type
    bits length 16
}}
message 1 "data" {{
    bytes body "length"
}}
message 2 "piece" {{
    bits group 8
    bits pieces 8 role=fragment-count
    bits number 8 role=fragment-id key="group"
    bits total 16 role=fragment-total
    bits offset 16 role=fragment-offset
    bytes data "length" role=fragment-data reassembled-as="data"
}}
message 3 "list" {{
    bits n 8
    array items "n" {{
        bits x 12
        bits y 4
    }}
}}
"#
    )
}

fn programs() -> &'static Programs {
    static P: OnceLock<Programs> = OnceLock::new();
    P.get_or_init(|| Programs {
        enet: load(include_str!("../../dissectors/enet.kdl")),
        reliable: load(include_str!("../../dissectors/reliable.kdl")),
        game: load(include_str!("../../dissectors/yojimbo-messages.kdl")),
        netcode: load(include_str!("../../dissectors/netcode.kdl")),
        checked: ["crc32", "crc32c", "adler32"].map(|a| load(&checked_text(a))),
    })
}

/// The server's private key and two connections' key pairs the requests carry.
const PRIVATE_KEY: Key = [7; 32];
fn keys(set: u8) -> ConnectionKeys {
    ConnectionKeys {
        client_to_server: [set.wrapping_mul(2).wrapping_add(1); 32],
        server_to_client: [set.wrapping_mul(2).wrapping_add(2); 32],
    }
}

/// yojimbo's messages, `type u8 | id u32 | length u16 | body`, lengths that may lie.
fn game_messages(b: &mut Bytes, out: &mut Vec<u8>) {
    for _ in 0..b.below(5) {
        out.push(match b.below(8) {
            7 => b.byte(),
            t => t as u8 % 6,
        });
        out.extend(b.u32().to_le_bytes());
        let body = if b.below(8) == 0 {
            1500 + b.below(3000) as usize
        } else {
            b.below(40) as usize
        };
        out.extend((b.length(body) as u16).to_le_bytes());
        out.extend(b.take(body.min(b.0.len() + 64)));
    }
}

/// reliable.io datagrams carrying game messages: a whole packet or its fragments (fragment
/// 0 with the header ahead of its data), in an order, with copies and holes, the input
/// chooses.
fn reliable(b: &mut Bytes) -> Vec<Vec<u8>> {
    let prefix = b.byte() & !1;
    let mut header = vec![prefix];
    header.extend(b.u16().to_le_bytes());
    header.extend(b.take(if prefix & 32 != 0 { 1 } else { 2 } + (prefix & 0x1e).count_ones() as usize));
    let mut payload = Vec::new();
    game_messages(b, &mut payload);
    if payload.len() <= 1024 && b.below(4) != 0 {
        header.extend(payload);
        return vec![header];
    }
    let sequence = b.u16();
    let count = payload.len().div_ceil(1024).clamp(1, 20);
    let count_sent = if b.below(8) == 0 {
        b.byte()
    } else {
        (count - 1) as u8
    };
    let mut pieces = Vec::new();
    for id in 0..count {
        let mut p = vec![1];
        p.extend(sequence.to_le_bytes());
        p.push(id as u8);
        p.push(count_sent);
        if id == 0 {
            p.extend(&header);
        }
        p.extend(payload.iter().skip(id * 1024).take(1024));
        pieces.push(p);
    }
    for _ in 0..b.below(3) {
        let i = b.below(count as u32) as usize;
        match b.below(3) {
            0 => drop(pieces.remove(i.min(pieces.len().saturating_sub(1)))),
            1 => pieces.push(pieces[i.min(pieces.len() - 1)].clone()),
            _ => {
                let last = pieces.len() - 1;
                pieces.swap(0, i.min(last))
            }
        }
        if pieces.is_empty() {
            break;
        }
    }
    pieces
}

/// ENet: a header and commands; the CRC right (zeros or the connectID standing in) or not.
fn enet(b: &mut Bytes, connect_id: &mut [u8; 4]) -> Vec<u8> {
    let time = b.below(2) == 1;
    let peer: u16 = if b.below(3) == 0 { 0xfff } else { b.u16() & 0xfff };
    let mut d = ((time as u16) << 15 | (b.below(4) as u16) << 12 | peer)
        .to_be_bytes()
        .to_vec();
    if time {
        d.extend(b.u16().to_be_bytes());
    }
    let crc_at = d.len();
    d.extend(b.take(4));
    for _ in 0..b.below(6) {
        let kind = b.below(14) as u8;
        d.push(b.byte() & 0xf0 | kind & 0x0f);
        d.push(b.byte());
        d.extend(b.u16().to_be_bytes());
        match kind {
            1 => d.extend(b.take(4)),
            2 | 3 => {
                d.extend(b.take(36));
                *connect_id = b.u32().to_le_bytes();
                d.extend(*connect_id);
                if kind == 2 {
                    d.extend(b.take(4));
                }
            }
            6 | 7 | 9 => {
                if kind != 6 {
                    d.extend(b.u16().to_be_bytes());
                }
                let n = b.below(64) as usize;
                d.extend((b.length(n) as u16).to_be_bytes());
                d.extend(b.take(n));
            }
            8 | 12 => {
                let n = b.below(48) as usize + 1;
                let count = if b.below(4) == 0 { b.u32() } else { b.below(6) + 1 };
                d.extend(b.u16().to_be_bytes());
                d.extend((b.length(n) as u16).to_be_bytes());
                d.extend(count.to_be_bytes());
                d.extend(b.below(count.clamp(1, 8) + 1).to_be_bytes());
                d.extend(b.length(n * count.min(8) as usize).to_be_bytes());
                let offset = n * b.below(8) as usize;
                d.extend(b.length(offset).to_be_bytes());
                d.extend(b.take(n));
            }
            _ => {
                let n = b.below(12) as usize;
                d.extend(b.take(n))
            }
        }
    }
    if b.below(4) != 0 {
        let mut zeroed = d.clone();
        let stand_in = if peer == 0xfff { [0; 4] } else { *connect_id };
        zeroed[crc_at..crc_at + 4].copy_from_slice(&stand_in);
        let crc = ChecksumAlgorithm::Crc32.compute(&[&zeroed]);
        d[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    }
    d
}

/// The checksummed protocol above: messages counted by the header (the count may lie),
/// pieces of messages, lists; the checksum right or not.
fn checked(b: &mut Bytes, algorithm: ChecksumAlgorithm) -> Vec<u8> {
    let mut body = Vec::new();
    let n = b.below(5);
    for _ in 0..n {
        let t = b.below(5) as u8;
        body.push(t);
        let len = b.below(40) as usize;
        body.extend((b.length(len) as u16).to_le_bytes());
        match t {
            2 => {
                body.push(b.below(3) as u8);
                body.push(b.below(5) as u8);
                body.push(b.below(5) as u8);
                body.extend((b.length(len * 4) as u16).to_le_bytes());
                let offset = len * b.below(4) as usize;
                body.extend((b.length(offset) as u16).to_le_bytes());
                body.extend(b.take(len));
            }
            3 => {
                body.push(b.byte());
                let n = b.below(40) as usize;
                body.extend(b.take(n));
            }
            _ => body.extend(b.take(len)),
        }
    }
    let mut d = vec![b.byte(), if b.below(4) == 0 { b.byte() } else { n as u8 }];
    d.extend([0; 4]);
    d.extend(b.take(4));
    d.extend(body);
    if b.below(4) != 0 {
        let c = algorithm.compute(&[&d]);
        d[2..6].copy_from_slice(&c.to_le_bytes());
    } else {
        d[2..6].copy_from_slice(&b.u32().to_le_bytes());
    }
    d
}

/// A connection request whose private token, sealed with the server's key, says
/// anything the input likes (address counts and kinds, keys); sometimes tampered with.
fn request(b: &mut Bytes, protocol_id: u64) -> Vec<u8> {
    let mut r = vec![0];
    r.extend(VERSION);
    r.extend(
        if b.below(8) == 0 {
            b.u32() as u64
        } else {
            protocol_id
        }
        .to_le_bytes(),
    );
    r.extend(b.take(8));
    let nonce: [u8; 24] = b.take(24).try_into().unwrap_or([0; 24]);
    r.extend(nonce);
    let mut token = b.take(12);
    let count = match b.below(8) {
        0 => b.u32(),
        1 => 0,
        _ => 1 + b.below(3),
    };
    token.extend(count.to_le_bytes());
    for _ in 0..count.min(40) {
        let kind = if b.below(8) == 0 {
            b.byte()
        } else {
            1 + b.below(2) as u8
        };
        token.push(kind);
        token.extend(b.take(if kind == 2 { 18 } else { 6 }));
    }
    let k = keys(b.below(2) as u8);
    token.extend(k.client_to_server);
    token.extend(k.server_to_client);
    token.resize(TOKEN_PLAINTEXT, 0);
    let ad: [u8; 29] = r[1..30].try_into().expect("29 bytes of additional data");
    r.extend(seal_token(&PRIVATE_KEY, &ad, &nonce, &token));
    debug_assert_eq!(r.len(), REQUEST_BYTES);
    tamper(b, &mut r);
    r
}

/// Sometimes flips a bit or cuts the datagram short.
fn tamper(b: &mut Bytes, d: &mut Vec<u8>) {
    match b.below(8) {
        0 if !d.is_empty() => {
            let i = b.u16() as usize % d.len();
            d[i] ^= 1 << b.below(8);
        }
        1 => d.truncate(b.u16() as usize % (d.len() + 1)),
        _ => {}
    }
}

/// A netcode packet of any type, its sequence in as many bytes as the input says, its
/// body (a reliable.io packet for payloads) sealed with a connection's key.
fn packet(b: &mut Bytes, protocol_id: u64, to_server: bool) -> Vec<Vec<u8>> {
    let ptype = if b.below(8) == 0 {
        b.below(16) as u8
    } else {
        1 + b.below(6) as u8
    };
    let bytes = if b.below(8) == 0 {
        b.below(16) as u8
    } else {
        1 + b.below(8) as u8
    };
    let sequence = b.u32() as u64 | (b.u32() as u64) << 32;
    let bodies = if ptype == 5 {
        reliable(b)
    } else {
        let n = b.below(64) as usize;
        vec![b.take(n)]
    };
    let k = keys(b.below(2) as u8);
    let key = if to_server {
        k.client_to_server
    } else {
        k.server_to_client
    };
    bodies
        .into_iter()
        .map(|mut body| {
            let prefix = ptype | bytes << 4;
            let mut d = vec![prefix];
            d.extend(sequence.to_le_bytes().iter().take(bytes.min(8) as usize));
            let seq = u64::from_le_bytes({
                let mut s = [0; 8];
                s[..d.len() - 1].copy_from_slice(&d[1..]);
                s
            });
            PacketCipher::new(&key).seal(protocol_id, seq, prefix, &mut body);
            d.extend(body);
            tamper(b, &mut d);
            d
        })
        .collect()
}

/// Renders every recorded tree as text and JSON, which must parse.
struct Trees {
    program: Arc<Program>,
    events: u64,
}

impl Sink for Trees {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        self.events += 1;
        let Some(d): Option<&Dissection> = e.dissection else {
            return Ok(Flow::Continue);
        };
        let _ = gpcap::present::tree::text_tree(&self.program, d, e.payload);
        let mut json = Vec::new();
        let mut scratch = gpcap::present::json::JsonScratch::default();
        gpcap::present::json::fields(&mut json, &self.program, d, e.payload, &mut scratch);
        let _: serde_json::Value = serde_json::from_slice(&json).expect("valid JSON");
        Ok(Flow::Continue)
    }
}

/// The datagrams through the analysis and through a recording engine.
fn analyze(cfg: Config, datagrams: &[(SocketAddr, SocketAddr, Vec<u8>)]) {
    let link = Link::Raw;
    let frames: Vec<Vec<u8>> = datagrams
        .iter()
        .enumerate()
        .flat_map(|(k, (s, d, p))| ip_packets(*s, *d, p, k as u32, false, 1500))
        .map(|ip| link.frame(&ip, false))
        .collect();
    fn frame(i: usize, data: &[u8]) -> Frame<'_> {
        Frame {
            number: i as u64 + 1,
            ts_ns: 1_700_000_000_000_000_000 + i as i64 * 1_000_000,
            linktype: Link::Raw.linktype() as i32,
            interface: 0,
            origlen: data.len() as u32,
            offset: 0,
            data,
        }
    }
    let mut a = Analyzer::new(cfg.clone());
    a.begin_file("fuzz.pcap");
    for (i, f) in frames.iter().enumerate() {
        a.frame(&frame(i, f));
    }
    let report = a.finish();
    assert_eq!(report.capture.frames, frames.len() as u64);
    serde_json::to_string(&report).expect("the report serializes");
    let mut trees = Trees {
        program: shown_program(&cfg).expect("a definition"),
        events: 0,
    };
    let mut e = Engine::new(cfg, true);
    for (i, f) in frames.iter().enumerate() {
        e.frame(&frame(i, f), &mut trees).expect("counting never fails");
    }
    e.finish(&mut trees);
    assert!(trees.events >= frames.len() as u64);
}

/// One run: the input's first byte chooses the protocol, the rest its datagrams.
pub fn run(data: &[u8]) {
    let p = programs();
    let mut b = Bytes(data);
    let scenario = b.below(4);
    let client: SocketAddr = CLIENT.parse().unwrap();
    let mut datagrams = Vec::new();
    let push = |datagrams: &mut Vec<_>, from_client: bool, server: SocketAddr, d: Vec<u8>| {
        datagrams.push(if from_client {
            (client, server, d)
        } else {
            (server, client, d)
        });
    };
    let cfg = match scenario {
        0 => {
            let server = "10.0.0.2:7777".parse().unwrap();
            let mut connect_id = [0; 4];
            while !b.0.is_empty() && datagrams.len() < 48 {
                let up = b.below(2) == 0;
                let d = enet(&mut b, &mut connect_id);
                push(&mut datagrams, up, server, d);
            }
            Config::from_program(p.enet.clone())
        }
        1 => {
            let server = "10.0.0.2:9000".parse().unwrap();
            let algorithm = [
                ChecksumAlgorithm::Crc32,
                ChecksumAlgorithm::Crc32c,
                ChecksumAlgorithm::Adler32,
            ][b.below(3) as usize];
            let program = p.checked[algorithm as usize].clone();
            while !b.0.is_empty() && datagrams.len() < 48 {
                let up = b.below(2) == 0;
                let d = checked(&mut b, algorithm);
                push(&mut datagrams, up, server, d);
            }
            Config::from_program(program)
        }
        2 => {
            let server = "10.0.0.2:40000".parse().unwrap();
            while !b.0.is_empty() && datagrams.len() < 48 {
                let up = b.below(2) == 0;
                for d in reliable(&mut b) {
                    push(&mut datagrams, up, server, d);
                }
            }
            let mut cfg = Config::from_program(p.reliable.clone());
            cfg.stack = Some(Arc::new(Stack {
                layers: vec![p.game.clone()],
                ..Stack::default()
            }));
            cfg
        }
        _ => {
            let server: SocketAddr = "10.0.0.2:40000".parse().unwrap();
            let protocol_id = p.netcode.params.protocol_id.map_or(0, |i| i.value);
            // The client's keys from a key log, or learnt from its requests' tokens.
            let mut secrets = Secrets {
                private_key: Some(PRIVATE_KEY),
                ..Secrets::default()
            };
            match b.below(4) {
                0 => secrets.connections.push(client, keys(0)),
                1 => secrets.connections.push(OTHER_CLIENT.parse().unwrap(), keys(1)),
                // The client connected twice from one address: both lines, in order.
                2 => {
                    secrets.connections.push(client, keys(0));
                    secrets.connections.push(client, keys(1));
                }
                _ => {}
            }
            while !b.0.is_empty() && datagrams.len() < 48 {
                let up = b.below(2) == 0;
                if up && b.below(4) == 0 {
                    let r = request(&mut b, protocol_id);
                    push(&mut datagrams, true, server, r);
                    continue;
                }
                for d in packet(&mut b, protocol_id, up) {
                    push(&mut datagrams, up, server, d);
                }
            }
            let mut cfg = Config::from_program(p.netcode.clone());
            cfg.stack = Some(Arc::new(Stack {
                secrets: Some(Arc::new(secrets)),
                show_keys: true,
                layers: vec![p.reliable.clone(), p.game.clone()],
            }));
            cfg
        }
    };
    analyze(cfg, &datagrams);
}
