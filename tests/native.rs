//! The compiled reader (`dissect/native/`) against the interpreter of the validation
//! plan, its oracle: on every shipped and fixture definition, over generated packets —
//! valid, cut and corrupted — both validating decide the same verdict, fault, position,
//! roles and slots; valid packets need no second reading; and the compiled code covers
//! the blocks the plan reads.

mod common;

use gpcap::dissect::{self, Dissection, Dissector, Program};
use gpcap::generate::{PacketWriter, Rng};
use proptest::prelude::*;
use std::sync::Arc;

const DEFINITIONS: [&str; 13] = [
    "dissectors/article.kdl",
    "dissectors/example-shooter.kdl",
    "dissectors/reliable.kdl",
    "dissectors/netcode.kdl",
    "dissectors/enet.kdl",
    "dissectors/yojimbo-messages.kdl",
    "tests/fixtures/plan-shapes.kdl",
    "tests/fixtures/distributions.kdl",
    "tests/fixtures/no-checksum.kdl",
    "tests/fixtures/enum-branches.kdl",
    "tests/fixtures/enum-three-branches.kdl",
    "tests/fixtures/byte-order.kdl",
    "tests/fixtures/whole-bytes.kdl",
];

/// Each definition compiled once for the whole test binary.
fn load(path: &str) -> Arc<Program> {
    static LOADED: std::sync::Mutex<Vec<(String, Arc<Program>)>> = std::sync::Mutex::new(Vec::new());
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = loaded.iter().find(|(n, _)| n == path) {
        return p.clone();
    }
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let p = Arc::new(
        dissect::load(std::path::Path::new(&full))
            .unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))),
    );
    loaded.push((path.to_string(), p.clone()));
    p
}

/// Two validating dissectors of `p`: the compiled code's, the plan executor's.
fn pair(p: &Arc<Program>) -> (Dissector, Dissector) {
    let mut native = Dissector::new(p.clone());
    native.record = false;
    let mut plan = Dissector::new(p.clone());
    plan.record = false;
    plan.native = false;
    (native, plan)
}

fn verdict(d: &Dissection) -> impl PartialEq + std::fmt::Debug + use<> {
    (
        d.fault.clone(),
        d.bits_read,
        (d.sequence, d.packet_type, d.fragment),
        (d.ack, d.ack_bits, d.crc),
        d.messages.len(),
    )
}

/// No shipped definition is refused, and those the plan reads get compiled blocks.
#[test]
fn shipped_definitions_are_compiled() {
    for def in DEFINITIONS {
        let p = load(def);
        assert!(p.native.refused().is_none(), "{def}: {:?}", p.native.refused());
        if def.ends_with("article.kdl")
            || def.ends_with("plan-shapes.kdl")
            || def.ends_with("whole-bytes.kdl")
        {
            assert!(p.native.blocks() >= 4, "{def}: {} blocks", p.native.blocks());
            // And a function for the whole datagram.
            assert!(p.native.datagram(p.slot_count, &p.limits).is_some(), "{def}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Generated packets of every definition, valid, cut or with a bit flipped: the
    /// compiled code decides as the plan executor, and leaves the same slots.
    #[test]
    fn compiled_code_decides_as_the_plan(seed in any::<u64>(), cut in 0usize..40, flip in any::<u32>()) {
        for def in DEFINITIONS {
            let p = load(def);
            let mut w = PacketWriter::new(&p);
            let mut rng = Rng::new(seed);
            w.scale = seed % 200;
            let (mut native, mut plan) = pair(&p);
            for ty in w.types().to_vec() {
                let Ok(mut bytes) = w.packet(&mut rng, ty, 7) else { continue };
                match seed % 3 {
                    0 => {
                        let n = bytes.len();
                        bytes.truncate(n.saturating_sub(cut));
                    }
                    1 if !bytes.is_empty() => {
                        let bit = flip as usize % (bytes.len() * 8);
                        bytes[bit / 8] ^= 1 << (bit % 8);
                    }
                    _ => {}
                }
                let (a, b) = (native.dissect(&bytes), plan.dissect(&bytes));
                prop_assert_eq!(verdict(&a), verdict(&b), "{} type {}", def, ty);
                prop_assert_eq!(native.slots(), plan.slots(), "{} type {}", def, ty);
            }
        }
    }

    /// Valid packets are decided by the compiled code alone: none is read again.
    #[test]
    fn compiled_code_reads_every_valid_packet_itself(seed in any::<u64>()) {
        for def in ["dissectors/article.kdl", "dissectors/example-shooter.kdl", "tests/fixtures/plan-shapes.kdl", "tests/fixtures/distributions.kdl", "tests/fixtures/whole-bytes.kdl"] {
            let p = load(def);
            let mut w = PacketWriter::new(&p);
            let mut rng = Rng::new(seed);
            w.scale = seed % 200;
            let (mut native, _) = pair(&p);
            for ty in w.types().to_vec() {
                let bytes = w.packet(&mut rng, ty, 7).unwrap();
                let d = native.dissect(&bytes);
                prop_assert!(d.fault.is_none(), "{} type {}: {:?}", def, ty, d.fault);
            }
            prop_assert_eq!(native.plan_fallbacks, 0, "{}", def);
        }
    }
}

/// Every single-bit flip and every cut of each type's packets: the same verdicts.
#[test]
fn compiled_code_agrees_on_every_bit_flip_and_cut() {
    for def in [
        "dissectors/article.kdl",
        "tests/fixtures/plan-shapes.kdl",
        "tests/fixtures/distributions.kdl",
        "tests/fixtures/whole-bytes.kdl",
    ] {
        let p = load(def);
        let mut w = PacketWriter::new(&p);
        w.scale = 12;
        let (mut native, mut plan) = pair(&p);
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
                    let (x, y) = (native.dissect(b), plan.dissect(b));
                    assert_eq!(verdict(&x), verdict(&y), "{def} type {ty}: {b:02x?}");
                    assert_eq!(native.slots(), plan.slots(), "{def} type {ty}: {b:02x?}");
                }
            }
        }
    }
}

/// Field and element limits are the compiled code's too: with a limit below a packet's
/// fields (the program compiled again for it), it fails where the plan does.
#[test]
fn compiled_code_keeps_the_limits() {
    for (def, types) in [
        ("dissectors/article.kdl", &[2, 4, 5][..]),
        ("tests/fixtures/whole-bytes.kdl", &[1, 2, 3][..]),
    ] {
        keeps_the_limits(def, types);
    }
}

fn keeps_the_limits(def: &str, types: &[u32]) {
    let p = load(def);
    let mut w = PacketWriter::new(&p);
    w.scale = 150;
    for &ty in types {
        let bytes = w.packet(&mut Rng::new(7), ty, 7).unwrap();
        let fields = Dissector::new(p.clone()).dissect(&bytes).fields.len() as u32;
        for limit in (1..fields + 2)
            .step_by(1 + fields as usize / 24)
            .chain([fields - 1, fields])
        {
            let mut q = (*p).clone();
            q.limits.max_fields = limit;
            q.limits.max_elements = u64::from(limit) / 3;
            q.compile_native();
            let q = Arc::new(q);
            assert!(q.native.blocks() > 0);
            let (mut native, mut plan) = pair(&q);
            let (a, b) = (native.dissect(&bytes), plan.dissect(&bytes));
            assert_eq!(verdict(&a), verdict(&b), "{def} type {ty}: limit {limit}");
        }
        // Fields counted as the interpreter counts them: at exactly the packet's
        // fields, the compiled code reads it alone.
        let mut q = (*p).clone();
        q.limits.max_fields = fields;
        q.compile_native();
        let (mut native, _) = pair(&Arc::new(q));
        assert_eq!(native.dissect(&bytes).fault, None, "{def} type {ty}");
        assert_eq!(native.plan_fallbacks, 0, "{def} type {ty}: {fields} fields");
    }
}

/// A definition past the budget is refused for compilation and read interpreted, with
/// the same verdicts.
#[test]
fn a_huge_definition_is_refused_and_interpreted() {
    let p = gpcap::compile_definition("big.kdl", &common::huge_definition()).unwrap();
    let refused = p.native.refused().map(|r| r.to_string()).unwrap_or_default();
    assert!(refused.contains("too large to compile"), "{refused}");
    assert_eq!(p.native.blocks(), 0);
}

/// Compiled code against the plan executor and the recording interpreter on one
/// definition and datagram: the same fault (or none) and the same end.
fn agree(text: &str, bytes: &[u8]) {
    let p = Arc::new(
        dissect::compile("t.kdl", text).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))),
    );
    let (mut native, mut plan) = pair(&p);
    let (a, b) = (native.dissect(bytes), plan.dissect(bytes));
    let c = Dissector::new(p.clone()).dissect(bytes);
    assert_eq!(verdict(&a), verdict(&b), "{text}");
    assert_eq!(
        (a.fault.is_some(), a.bits_read),
        (c.fault.is_some(), c.bits_read),
        "{text}"
    );
}

/// Regression: a block read again after its compiled code failed started from a slot the
/// failed run wrote (`n`, read by the array before it), took a shorter path and passed a
/// datagram cut short.
#[test]
fn a_block_read_again_starts_from_its_slots() {
    let text = "protocol \"t\" {\n    ports 40000\n    checksum \"none\"\n}\nheader {\n    int n 0 7\n    bits hp 5\n}\npacket 0 \"p\" {\n    bits sequence 8 role=sequence\n    array a \"n\" {\n        bits x 8\n    }\n    int n 0 7\n    bits p 5\n    bytes b 2\n}\n";
    agree(text, &[0x02, 0x00, 0xaa, 0xbb, 0x00]);
}

/// Regression: a body that reads the header block again sets its roles again, after
/// the header's: the type and crc are the header's first reading.
#[test]
fn a_body_reading_the_header_again_keeps_the_first_roles() {
    let text = "protocol \"t\" {\n    ports 40000\n    types 4\n}\nheader {\n    bits crc 32 role=crc\n    int type 0 3 role=type\n    bits pad 6\n}\npacket 1 \"p\" {\n    header\n    bits seq 8 role=sequence\n}\n";
    let bytes = [0x11, 0x11, 0x11, 0x11, 0x01, 0x22, 0x22, 0x22, 0x22, 0x02, 0x07];
    agree(text, &bytes);
    let p = Arc::new(dissect::compile("t.kdl", text).unwrap());
    let (mut native, _) = pair(&p);
    let d = native.dissect(&bytes);
    assert_eq!((d.packet_type, d.crc), (Some(1), Some(0x1111_1111)));
}
