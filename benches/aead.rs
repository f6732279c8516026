//! What `--key` adds over `analyze -d` against the AEAD's own cost (#49's decryption
//! target): the netcode fixture capture analyzed with its private key and without, and
//! ChaCha20-Poly1305 opening bodies of the same lengths at the same sequences, alone.
//! Per packet: (with key − without) / packets decrypted, against one open.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gpcap::Config;
use gpcap::analysis::Analyzer;
use gpcap::decrypt::keys::{Secrets, key_from_hex};
use gpcap::decrypt::netcode::PacketCipher;
use gpcap::layers::Stack;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

const CAPTURE: &str = "tests/fixtures/netcode/capture.pcap";
const KEY: &str = "462eba0bc4c56a92a3e55450ee57b65c692688dd5e65aa0e90940b0313be2ed3";
const PROTOCOL_ID: u64 = 0x1122_3344_5566_7788;

/// The capture's frames, in memory.
fn frames() -> Vec<Vec<u8>> {
    let mut r = gpcap::capture::CaptureReader::open(Path::new(CAPTURE)).expect("capture");
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().expect("frame") {
        out.push(f.data.to_vec());
    }
    out
}

/// A frame's UDP payload (Ethernet, IPv4: the fixture's).
fn payload(f: &[u8]) -> Option<&[u8]> {
    let ip = f.get(14..)?;
    let ihl = usize::from(ip.first()? & 0xf) * 4;
    (ip.get(9) == Some(&17)).then_some(())?;
    ip.get(ihl + 8..)
}

/// (sequence, body and MAC) of every netcode packet but connection requests (type 0,
/// opened with the token's XChaCha, not the packet cipher): the prefix's high nibble is
/// the sequence's byte count.
fn bodies(frames: &[Vec<u8>], cipher: &PacketCipher) -> Vec<(u64, u8, Vec<u8>)> {
    let mut out = Vec::new();
    for f in frames {
        let Some(p) = payload(f) else { continue };
        let Some(&prefix) = p.first() else { continue };
        let seq_bytes = usize::from(prefix >> 4);
        if prefix & 0xf == 0 || p.len() < 1 + seq_bytes + 16 {
            continue;
        }
        let sequence = out.len() as u64;
        let mut body = p[1 + seq_bytes..p.len() - 16].to_vec();
        cipher.seal(PROTOCOL_ID, sequence, prefix, &mut body);
        out.push((sequence, prefix, body));
    }
    out
}

fn analyze(cfg: &Config, frames: &[Vec<u8>]) -> usize {
    let mut a = Analyzer::new(cfg.clone());
    a.begin_file(CAPTURE);
    let mut r = gpcap::capture::CaptureReader::open(Path::new(CAPTURE)).expect("capture");
    while let Some(f) = r.next_frame().expect("frame") {
        a.frame(&f);
    }
    a.end_file(None, None);
    black_box(a.finish());
    frames.len()
}

fn bench(c: &mut Criterion) {
    let frames = frames();
    let program = Arc::new(gpcap::dissect::load(Path::new("dissectors/netcode.kdl")).expect("definition"));
    let mut plain = Config::from_program(program);
    plain.protocol_id = Some(gpcap::validate::ProtocolId::new64(PROTOCOL_ID));
    let mut keyed = plain.clone();
    let secrets = Secrets {
        private_key: Some(key_from_hex(KEY).expect("key")),
        ..Secrets::default()
    };
    keyed.stack = Some(Arc::new(Stack {
        secrets: Some(Arc::new(secrets)),
        ..Stack::default()
    }));
    let mut g = c.benchmark_group("aead_analyze");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("analyze_d", |b| b.iter(|| analyze(&plain, &frames)));
    g.bench_function("analyze_d_key", |b| b.iter(|| analyze(&keyed, &frames)));
    g.finish();

    let cipher = PacketCipher::new(&key_from_hex(KEY).expect("key"));
    let bodies = bodies(&frames, &cipher);
    eprintln!("{} frames, {} packets opened alone", frames.len(), bodies.len());
    let mut g = c.benchmark_group("aead_open");
    g.throughput(Throughput::Elements(bodies.len() as u64));
    let mut out = Vec::with_capacity(2048);
    g.bench_function("open_alone", |b| {
        b.iter(|| {
            let mut ok = 0;
            for (sequence, prefix, body) in &bodies {
                out.clear();
                ok += usize::from(cipher.open(PROTOCOL_ID, *sequence, &[*prefix], black_box(body), &mut out));
            }
            assert_eq!(ok, bodies.len());
            ok
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
