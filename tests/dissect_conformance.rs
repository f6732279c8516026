//! With `dissectors/article.kdl`, every conformance vector dissects to exactly its
//! primitives (as leaf raw values, in wire order) and the right fault.

use gpcap::dissect::{self, Dissection, Dissector, Field, Program, Value};
use serde_json::Value as Json;

pub fn article() -> Program {
    dissect::compile(
        "dissectors/article.kdl",
        include_str!("../dissectors/article.kdl"),
    )
    .unwrap_or_else(|e| panic!("{}", dissect::render(&e, false)))
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn is_leaf(d: &Dissection, i: usize) -> bool {
    !d.fields[i].is_group()
}

/// (bit offset, width, value) triples a leaf stands for; uint64/double are two 32-bit prims.
fn leaf_prims(f: &Field, data: &[u8]) -> Vec<(u64, u64, String)> {
    match (f.kind, f.value) {
        ("uint64" | "double", _) => vec![
            (f.bit_offset, 32, (f.raw & 0xffff_ffff).to_string()),
            (f.bit_offset + 32, 32, (f.raw >> 32).to_string()),
        ],
        ("align", _) => vec![(f.bit_offset, f.bit_len, "align".into())],
        (_, Value::Bytes { offset, len }) => {
            let h: String = data[offset..offset + len]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            vec![(f.bit_offset, f.bit_len, h)]
        }
        (_, Value::Int(v)) => vec![(f.bit_offset, f.bit_len, v.to_string())],
        _ => vec![(f.bit_offset, f.bit_len, f.raw.to_string())],
    }
}

fn expected(v: &Json) -> Vec<(u64, u64, String)> {
    v["prims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let at = p["at"].as_u64().unwrap();
            match p["prim"].as_str().unwrap() {
                "bits" => (at, p["bits"].as_u64().unwrap(), p["value"].to_string()),
                "int" => {
                    let (min, max) = (p["min"].as_i64().unwrap(), p["max"].as_i64().unwrap());
                    let w = gpcap::bits::int_width(min, max).unwrap() as u64;
                    (at, w, p["value"].to_string())
                }
                "align" => (at, p["bits"].as_u64().unwrap(), "align".into()),
                "bytes" => (
                    at,
                    p["len"].as_u64().unwrap() * 8,
                    p["hex"].as_str().unwrap().to_string(),
                ),
                "check" => (at, 32, p["value"].to_string()),
                other => panic!("{other}"),
            }
        })
        .collect()
}

#[test]
fn every_vector_dissects_to_its_prims() {
    let program = article();
    let program = std::sync::Arc::new(program);
    let mut d = Dissector::new(program.clone());
    for line in include_str!("fixtures/vectors.jsonl").lines() {
        let v: Json = serde_json::from_str(line).unwrap();
        let name = v["name"].as_str().unwrap();
        let data = hex(v["hex"].as_str().unwrap());
        let out = d.dissect(&data);
        let leaves: Vec<_> = (0..out.fields.len())
            .filter(|&i| is_leaf(&out, i))
            .flat_map(|i| leaf_prims(&out.fields[i], &data))
            .collect();
        assert_eq!(leaves, expected(&v), "{name}");
        match v["malformed"].as_str() {
            None | Some("crc") => assert!(out.fault.is_none(), "{name}: {:?}", out.fault),
            Some(kind) => assert_eq!(out.fault.as_ref().map(|f| f.kind.code()), Some(kind), "{name}"),
        }
    }
}

#[test]
fn faults_name_field_bit_and_reason() {
    let program = article();
    let program = std::sync::Arc::new(program);
    let mut d = Dissector::new(program.clone());
    let cases = [
        (
            "B-count-out-of-range",
            "num_items",
            51,
            "value 32767 out of range [0, 16384]",
        ),
        (
            "A-bad-end-check",
            "end_check",
            72,
            "check failed: expected 0x9908ace2, got 0x8908ace2",
        ),
        (
            "A-truncated",
            "end_check",
            72,
            "past end: needed 32 bits, 8 available",
        ),
        (
            "misc-nonzero-padding",
            "align",
            293,
            "non-zero padding 0x1 in 3 pad bits",
        ),
    ];
    for line in include_str!("fixtures/vectors.jsonl").lines() {
        let v: Json = serde_json::from_str(line).unwrap();
        let Some(case) = cases.iter().find(|c| c.0 == v["name"]) else {
            continue;
        };
        let out = d.dissect(&hex(v["hex"].as_str().unwrap()));
        let f = out.fault.unwrap();
        assert_eq!(
            (f.field.as_str(), f.bit, f.reason.as_str()),
            (case.1, case.2, case.3),
            "{}",
            case.0
        );
    }
}

#[test]
fn scene_paths_and_values() {
    let program = article();
    let line = include_str!("fixtures/vectors.jsonl")
        .lines()
        .find(|l| l.contains("\"scene-0\""))
        .unwrap();
    let v: Json = serde_json::from_str(line).unwrap();
    let program = std::sync::Arc::new(program);
    let out = Dissector::new(program.clone()).dissect(&hex(v["hex"].as_str().unwrap()));
    let paths: Vec<String> = (0..out.fields.len())
        .map(|i| gpcap::dissect::path_of(&program, &out, i))
        .collect();
    assert!(paths.contains(&"objects[1].position.x".to_string()), "{paths:?}");
    let i = paths.iter().position(|p| p == "objects[0].index").unwrap();
    assert_eq!(out.fields[i].value, Value::Int(746));
    let i = paths.iter().position(|p| p == "objects[1].index").unwrap();
    assert_eq!(out.fields[i].value, Value::Int(798));
    let i = paths.iter().position(|p| p == "objects.end").unwrap();
    assert_eq!(out.fields[i].value, Value::Int(1024));
    assert_eq!(out.packet_type, Some(4));
    assert_eq!(out.sequence, Some(55728));
}
