//! Big-endian and MSB-first fields, whole-byte integers in both orders, varints and
//! text: exact values from hand-made bytes, and the generator's round trip.

use gpcap::dissect::{self, Dissector, Program, Value};
use gpcap::generate::PacketWriter;
use gpcap::generate::Rng;
use proptest::prelude::*;
use std::sync::Arc;

fn compile(text: &str) -> Arc<Program> {
    Arc::new(dissect::compile("test.kdl", text).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))))
}

fn fixture() -> Arc<Program> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/byte-order.kdl");
    Arc::new(
        dissect::load(std::path::Path::new(path))
            .unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))),
    )
}

/// (path, value) of every leaf.
fn values(p: &Arc<Program>, data: &[u8]) -> Vec<(String, Value)> {
    let d = Dissector::new(p.clone()).dissect(data);
    assert!(d.fault.is_none(), "{:?}", d.fault);
    d.fields
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.is_group())
        .map(|(i, f)| (dissect::path_of(p, &d, i), f.value))
        .collect()
}

const ENET_HEADER: &str = r#"
protocol "enet-header" {
    checksum "none"
    bit-order "msb"
}
header {
    bool sent_time_flag
    bool compressed
    bits session 2
    bits peer_id 12
    bits sequence 16 role=sequence
}
packet 0 "rest" {
    rest data
}
"#;

#[test]
fn a_big_endian_word_with_bit_fields_inside_reads_as_enet_writes_it() {
    let p = compile(ENET_HEADER);
    // peer word 0x8fff: sent-time set, not compressed, session 0, peer 0xfff; sequence 1.
    let v = values(&p, &[0x8f, 0xff, 0x00, 0x01]);
    assert_eq!(v[0], ("sent_time_flag".into(), Value::Bool(true)));
    assert_eq!(v[1], ("compressed".into(), Value::Bool(false)));
    assert_eq!(v[2], ("session".into(), Value::UInt(0)));
    assert_eq!(v[3], ("peer_id".into(), Value::UInt(0xfff)));
    assert_eq!(v[4], ("sequence".into(), Value::UInt(1)));
    let d = Dissector::new(p.clone()).dissect(&[0x40, 0x80, 0x01, 0x00]);
    assert_eq!(d.sequence, Some(256));
    assert_eq!(
        (d.fields[3].bit_offset, d.fields[3].bit_len, d.fields[3].raw),
        (4, 12, 0x080)
    );
}

#[test]
fn whole_byte_integers_varints_and_text_read_exact_values() {
    let p = compile(
        r#"
protocol "w" { checksum "none"; }
header { bits sequence 8 role=sequence; }
packet 0 "p" {
    be-uint a 2
    be-int b 2
    le-int c 2
    varint d
    zigzag e
    float f order="msb"
    text name 6
    cstring motto 8
    bits tail 4
}
"#,
    );
    let mut data = vec![7, 0x01, 0x02, 0xff, 0xfe, 0xfe, 0xff, 0xac, 0x02, 0x03];
    data.extend(1.5f32.to_be_bytes());
    data.extend(b"gpcap\0");
    data.extend(b"hi\0");
    data.push(0x0a);
    let v = values(&p, &data);
    let get = |name: &str| v.iter().find(|(n, _)| n == name).map(|x| x.1).unwrap();
    assert_eq!(get("a"), Value::UInt(0x0102));
    assert_eq!(get("b"), Value::Int(-2));
    assert_eq!(get("c"), Value::Int(-2));
    assert_eq!(get("d"), Value::UInt(300));
    assert_eq!(get("e"), Value::Int(-2));
    assert_eq!(get("f"), Value::Float(1.5));
    assert_eq!(get("tail"), Value::UInt(0x0a));
    let d = Dissector::new(p.clone()).dissect(&data);
    let tree = gpcap::present::tree::text_tree(&p, &d, &data);
    assert!(tree.contains("\"gpcap\""), "{tree}");
    assert!(tree.contains("\"hi\""), "{tree}");
}

#[test]
fn a_varint_past_the_end_or_over_64_bits_is_a_located_fault() {
    let p = compile(
        r#"
protocol "w" { checksum "none"; }
header { bits sequence 8 role=sequence; }
packet 0 "p" { varint v; }
"#,
    );
    let mut d = Dissector::new(p.clone());
    let cut = d.dissect(&[1, 0x80, 0x80]);
    let f = cut.fault.expect("fault");
    assert_eq!((f.kind.code(), f.field.as_str(), f.bit), ("past_end", "v", 8));
    let long = d.dissect(&[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    let f = long.fault.expect("fault");
    assert_eq!((f.kind.code(), f.field.as_str()), ("out_of_range", "v"));
}

#[test]
fn order_on_a_primitive_with_one_layout_is_refused() {
    let e = dissect::compile(
        "t.kdl",
        r#"
protocol "w" { checksum "none"; }
header { bits sequence 8 role=sequence; }
packet 0 "p" { vector v order="msb"; }
"#,
    )
    .unwrap_err();
    let text = dissect::render(&e, false);
    assert!(text.contains("`order` applies to bits"), "{text}");
    let e = dissect::compile(
        "t.kdl",
        "protocol \"w\" { bit-order \"middle\"; }\nheader { bits sequence 8 role=sequence; }",
    )
    .unwrap_err();
    assert!(dissect::render(&e, false).contains("bit-order is \"msb\""));
}

fn round_trip(p: &Arc<Program>, seed: u64) {
    let mut w = PacketWriter::new(p);
    let mut full = Dissector::new(p.clone());
    let mut fast = Dissector::new(p.clone());
    fast.record = false;
    let mut rng = Rng::new(seed);
    w.scale = seed % 20;
    for t in w.types() {
        let seq = rng.next_u32() as u16 as u64;
        let bytes = w.packet(&mut rng, t, seq).unwrap();
        let out = full.dissect(&bytes);
        assert!(out.fault.is_none(), "type {t} seed {seed}: {:?}", out.fault);
        assert_eq!((out.packet_type, out.sequence), (Some(t), Some(seq)));
        let leaves: Vec<(u64, u64, u64)> = out
            .fields
            .iter()
            .filter(|f| !f.is_group())
            .map(|f| (f.bit_offset, f.bit_len, f.raw))
            .collect();
        assert_eq!(leaves, w.leaves, "type {t} seed {seed}");
        let v = fast.dissect(&bytes);
        assert_eq!((v.fault, v.packet_type, v.sequence), (None, Some(t), Some(seq)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_byte_order_primitive_dissects_to_what_was_written(seed in any::<u64>()) {
        round_trip(&fixture(), seed);
    }
}

#[test]
fn gen_refuses_to_mix_bit_orders_inside_one_byte() {
    let p = compile(
        r#"
protocol "w" { id 1; bit-order "msb"; }
header { bits crc 32 role=crc order="lsb"; bits sequence 16 role=sequence; }
packet 0 "p" { bits a 3; bits b 5 order="lsb"; }
"#,
    );
    let mut w = PacketWriter::new(&p);
    let e = w.packet(&mut Rng::new(1), 0, 1).unwrap_err();
    assert!(e.to_string().contains("field `b`"), "{e}");
}
