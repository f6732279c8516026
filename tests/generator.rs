//! The generator's round trip: every packet it writes for a definition dissects, without
//! a fault, to exactly the primitives it wrote.

use gpcap::dissect::{self, Dissector, Program};
use gpcap::generate::PacketWriter;
use gpcap::generate::Rng;
use gpcap::validate::{CrcStatus, verify_crc};
use proptest::prelude::*;
use std::sync::Arc;

fn load(name: &str) -> Arc<Program> {
    // The shipped definitions, and the plan's shapes (a test fixture).
    let dir = if name == "plan-shapes.kdl" {
        "tests/fixtures"
    } else {
        "dissectors"
    };
    let path = format!("{}/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
    Arc::new(
        dissect::load(std::path::Path::new(&path))
            .unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))),
    )
}

fn round_trip(p: &Arc<Program>, seed: u64, scale: u64) {
    let mut w = PacketWriter::new(p);
    let mut d = Dissector::new(p.clone());
    let mut rng = Rng::new(seed);
    w.scale = scale;
    for t in w.types() {
        let seq = rng.next_u32() as u16 as u64;
        let bytes = w.packet(&mut rng, t, seq).unwrap();
        assert_eq!(verify_crc(p.params.protocol_id.unwrap(), &bytes), CrcStatus::Ok);
        let out = d.dissect(&bytes);
        assert!(out.fault.is_none(), "type {t} seed {seed}: {:?}", out.fault);
        assert_eq!((out.packet_type, out.sequence), (Some(t), Some(seq)));
        let leaves: Vec<(u64, u64, u64)> = out
            .fields
            .iter()
            .filter(|f| !f.is_group())
            .map(|f| (f.bit_offset, f.bit_len, f.raw))
            .collect();
        assert_eq!(leaves, w.leaves, "type {t} seed {seed}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn article_packets_dissect_to_what_was_written(seed in any::<u64>(), scale in 0u64..300) {
        round_trip(&load("article.kdl"), seed, scale);
    }

    #[test]
    fn shooter_packets_dissect_to_what_was_written(seed in any::<u64>(), scale in 0u64..100) {
        round_trip(&load("example-shooter.kdl"), seed, scale);
    }
}

#[test]
fn fragments_dissect_with_their_roles() {
    for def in ["article.kdl", "example-shooter.kdl"] {
        let p = load(def);
        let mut w = PacketWriter::new(&p);
        let mut rng = Rng::new(7);
        let data = vec![0xab; 1024];
        let bytes = w.fragment(&mut rng, 513, 2, 5, &data).unwrap();
        let out = Dissector::new(p.clone()).dissect(&bytes);
        assert!(out.fault.is_none(), "{def}: {:?}", out.fault);
        let f = out.fragment.unwrap();
        assert_eq!((f.id, f.count, f.data_len), (2, 5, 1024), "{def}");
        assert_eq!(&bytes[f.data_offset..], data.as_slice());
    }
}

/// Regression (found by the soak): foreign DNS-like datagrams were sent from ephemeral
/// ports that could equal a game port of the definition (40000–50001 for the article
/// profile), and were then analyzed as game traffic.
#[test]
fn foreign_traffic_never_uses_a_game_port() {
    use gpcap::analysis::{Analyzer, Config};
    use gpcap::generate::sim::{SimConfig, simulate};
    use gpcap::run::truth::compare;
    let p = load("article.kdl");
    let cfg = SimConfig {
        seed: 1390,
        foreign: 1.0,
        duration_s: 3.0,
        clients: 2,
        ..SimConfig::default()
    };
    let g = simulate(&p, &cfg).unwrap();
    assert!(g.truth.other_udp > 100);
    let mut a = Analyzer::new(Config::from_program(p.clone()));
    let mut w = gpcap::capture::PcapWriter::new(Vec::new(), g.linktype, 65535, true).unwrap();
    for (t, f) in &g.frames {
        w.write(*t, f, f.len() as u32).unwrap();
    }
    let mut r =
        gpcap::capture::CaptureReader::from_read("mem", std::io::Cursor::new(w.into_inner())).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    let diffs = compare(&g.truth, &a.finish());
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Validation (no fields recorded: the flattened plan, the interpreter where a plan
    /// fails) finds exactly what a full dissection finds, on valid, cut and corrupted
    /// packets of every shipped definition.
    #[test]
    fn validation_agrees_with_full_dissection(seed in any::<u64>(), cut in 0usize..40, flip in any::<u32>()) {
        for def in ["article.kdl", "example-shooter.kdl", "reliable.kdl", "netcode.kdl", "plan-shapes.kdl"] {
            let p = load(def);
            let mut w = PacketWriter::new(&p);
            let mut rng = Rng::new(seed);
            w.scale = seed % 200;
            let ty = w.types()[(seed % w.types().len() as u64) as usize];
            let mut bytes = w.packet(&mut rng, ty, 7).unwrap();
            if seed % 3 == 0 {
                let n = bytes.len();
                bytes.truncate(n.saturating_sub(cut));
            } else if seed % 3 == 1 && !bytes.is_empty() {
                let bit = flip as usize % (bytes.len() * 8);
                bytes[bit / 8] ^= 1 << (bit % 8);
            }
            let full = Dissector::new(p.clone()).dissect(&bytes);
            let mut fast = Dissector::new(p.clone());
            fast.record = false;
            let quick = fast.dissect(&bytes);
            prop_assert_eq!(&quick.fault, &full.fault);
            prop_assert_eq!((quick.sequence, quick.packet_type, quick.fragment), (full.sequence, full.packet_type, full.fragment));
            prop_assert_eq!(quick.bits_read, full.bits_read);
            prop_assert_eq!((quick.ack, quick.ack_bits, quick.crc), (full.ack, full.ack_bits, full.crc));
        }
    }

    /// The plan decides every valid packet itself: none is read again by the
    /// interpreter (a plan that fails on good bits is only slower, so no other test
    /// would see it; this one does, e.g. an index ladder read a bit off).
    #[test]
    fn validation_plan_reads_every_valid_packet_itself(seed in any::<u64>()) {
        for def in ["article.kdl", "example-shooter.kdl", "reliable.kdl", "netcode.kdl", "plan-shapes.kdl"] {
            let p = load(def);
            let mut w = PacketWriter::new(&p);
            let mut rng = Rng::new(seed);
            w.scale = seed % 200;
            let mut fast = Dissector::new(p.clone());
            fast.record = false;
            for ty in w.types().to_vec() {
                let bytes = w.packet(&mut rng, ty, 7).unwrap();
                let before = fast.plan_fallbacks;
                let d = fast.dissect(&bytes);
                prop_assert!(d.fault.is_none(), "{} type {}: {:?}", def, ty, d.fault);
                // Except the shapes' "nested": arrays deeper than a plan run keeps open
                // go back to the interpreter by design.
                if (def, ty) != ("plan-shapes.kdl", 1) {
                    prop_assert_eq!(fast.plan_fallbacks, before, "{} type {}", def, ty);
                }
            }
        }
    }
}

/// The validation plan counts fields as the interpreter does: with a field limit below a
/// packet's fields, validation stops at the same field and bit as a full dissection.
#[test]
fn validation_plan_keeps_the_field_limit() {
    // Scene (a relative list of flat bodies), misc (fixed and flat arrays), and the
    // shapes' nested arrays, flat rows and lists with arrays inside.
    for (def, ty, least) in [
        ("article.kdl", 4, 100),
        ("article.kdl", 5, 40),
        ("plan-shapes.kdl", 1, 40),
        ("plan-shapes.kdl", 2, 30),
        ("plan-shapes.kdl", 4, 30),
    ] {
        field_limit_agrees(def, ty, least);
    }
}

fn field_limit_agrees(def: &str, ty: u32, least: u32) {
    let p = load(def);
    let mut w = PacketWriter::new(&p);
    let mut rng = Rng::new(7);
    w.scale = 150;
    let bytes = w.packet(&mut rng, ty, 7).unwrap();
    let fields = Dissector::new(p.clone()).dissect(&bytes).fields.len() as u32;
    assert!(fields > least, "{def} type {ty}: {fields} fields");
    for limit in (1..fields).step_by(7).chain([fields - 1, fields]) {
        let mut q = (*p).clone();
        q.limits.max_fields = limit;
        let q = Arc::new(q);
        let full = Dissector::new(q.clone()).dissect(&bytes);
        let mut fast = Dissector::new(q);
        fast.record = false;
        let quick = fast.dissect(&bytes);
        assert_eq!(quick.fault, full.fault, "{def} type {ty}: limit {limit}");
        assert_eq!(
            full.fault.is_some(),
            limit < fields,
            "{def} type {ty}: limit {limit}"
        );
    }
}

/// Every single-bit flip and every cut of a packet of each type: validation (the plan,
/// the interpreter where it fails) says what a full dissection says. A plan that
/// accepted a value out of range or read past the end would differ somewhere here.
#[test]
fn validation_agrees_on_every_bit_flip_and_cut() {
    for def in ["article.kdl", "plan-shapes.kdl"] {
        let p = load(def);
        let mut w = PacketWriter::new(&p);
        w.scale = 12;
        let full = |b: &[u8]| Dissector::new(p.clone()).dissect(b);
        let mut fast = Dissector::new(p.clone());
        fast.record = false;
        for ty in w.types() {
            for seed in 1..4 {
                let bytes = w.packet(&mut Rng::new(seed), ty, 7).unwrap();
                let mut variants: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
                for bit in 0..bytes.len() * 8 {
                    let mut b = bytes.clone();
                    b[bit / 8] ^= 1 << (bit % 8);
                    variants.push(b);
                }
                for b in &variants {
                    let (f, q) = (full(b), fast.dissect(b));
                    assert_eq!(q.fault, f.fault, "{def} type {ty} seed {seed}: {b:02x?}");
                    assert_eq!(q.bits_read, f.bits_read, "{def} type {ty} seed {seed}: {b:02x?}");
                    assert_eq!(
                        (q.sequence, q.packet_type, q.fragment),
                        (f.sequence, f.packet_type, f.fragment),
                        "{def} type {ty} seed {seed}"
                    );
                }
            }
        }
    }
}

/// Regression (CI, proptest seed 5897013275080685563): a list element whose plan failed
/// was read again by the interpreter, which looked up the plan of its `if` without
/// `else` — an empty block starting at index 0, the header's — and ran the header's plan
/// in the middle of the packet: the value out of range after it went unseen.
#[test]
fn an_empty_else_never_runs_the_headers_plan() {
    let p = load("plan-shapes.kdl");
    let bytes = hex(
        "16 70 14 7c 07 00 34 47 5d a6 5f aa 1e 8a 08 fb 20 05 2b a1 0c c3 74 9d 44 fb a2 7c 0a 49 98 ec \
         a0 6c 03 0c c3 75 99 95 e7 2a f8 25 07 29 fa a6 73 21 5d 6b 53 21 4a 92 e8 1e 06 60 b6 2b 37",
    );
    let full = Dissector::new(p.clone()).dissect(&bytes);
    let fault = full.fault.clone().expect("a fault");
    assert_eq!((fault.field.as_str(), fault.bit), ("things[0].parts[0].p", 56));
    let mut fast = Dissector::new(p);
    fast.record = false;
    let quick = fast.dissect(&bytes);
    assert_eq!(quick.fault, full.fault);
    assert_eq!(quick.sequence, Some(7));
}

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}
