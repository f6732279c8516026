//! Replays every line of the independent implementation's `vectors.jsonl` (copied into
//! `tests/fixtures/`): primitive by primitive, through the article profile's unified
//! serialize, through the writer, and through the CRC check.

use gpcap::bits::*;
use gpcap::validate::article::{self, Body};
use gpcap::validate::{self, FragmentHeader, Header, ProtocolId};
use serde_json::Value;

fn vectors() -> Vec<Value> {
    include_str!("fixtures/vectors.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("vector line is JSON"))
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn i(v: &Value, k: &str) -> i64 {
    v[k].as_i64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// The prims of a vector as this crate's [`Prim`] values.
fn expected_prims(v: &Value) -> Vec<Prim> {
    v["prims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let at = u(p, "at");
            match p["prim"].as_str().unwrap() {
                "bits" => Prim::Bits {
                    at,
                    bits: u(p, "bits") as u32,
                    value: u(p, "value") as u32,
                },
                "int" => Prim::Int {
                    at,
                    min: i(p, "min"),
                    max: i(p, "max"),
                    value: i(p, "value"),
                },
                "align" => Prim::Align {
                    at,
                    bits: u(p, "bits") as u32,
                },
                "bytes" => Prim::Bytes {
                    at,
                    len: u(p, "len") as usize,
                },
                "check" => Prim::Check {
                    at,
                    expected: u(p, "expected") as u32,
                    value: u(p, "value") as u32,
                },
                other => panic!("unknown prim {other}"),
            }
        })
        .collect()
}

/// Reading each listed primitive directly off the bytes yields its value and offset.
#[test]
fn primitives_read_back_exactly() {
    for v in vectors() {
        let name = v["name"].as_str().unwrap();
        let data = hex(v["hex"].as_str().unwrap());
        let mut r = BitReader::new(&data);
        let prims = v["prims"].as_array().unwrap();
        for (k, p) in prims.iter().enumerate() {
            let last = k + 1 == prims.len();
            assert_eq!(r.bits_read(), u(p, "at"), "{name} prim {k} offset");
            match p["prim"].as_str().unwrap() {
                "bits" => assert_eq!(
                    r.read_bits(u(p, "bits") as u32).unwrap() as u64,
                    u(p, "value"),
                    "{name} {k}"
                ),
                "int" => {
                    let (min, max) = (i(p, "min"), i(p, "max"));
                    let raw = r.read_bits(int_width(min, max).unwrap()).unwrap() as i64;
                    assert_eq!(min + raw, i(p, "value"), "{name} {k}");
                    if last && v["malformed"] == "out_of_range" {
                        assert!(min + raw > max, "{name}: listed int must be out of range");
                    }
                }
                "align" => assert_eq!(r.read_align().unwrap() as u64, u(p, "bits"), "{name} {k}"),
                "bytes" => {
                    let b = r.read_bytes(u(p, "len") as usize).unwrap();
                    assert_eq!(b, hex(p["hex"].as_str().unwrap()).as_slice(), "{name} {k}");
                }
                "check" => {
                    let got = r.read_bits(32).unwrap() as u64;
                    assert_eq!(got, u(p, "value"), "{name} {k}");
                    assert_eq!(u(p, "expected"), hash_string(p["name"].as_str().unwrap()) as u64);
                }
                other => panic!("{other}"),
            }
        }
    }
}

/// What the article profile's reader consumes, traced, is the vector's prim list, and a
/// malformed vector fails with the listed kind.
#[test]
fn article_profile_reads_every_vector() {
    let fmt = article::format();
    for v in vectors() {
        let name = v["name"].as_str().unwrap();
        let data = hex(v["hex"].as_str().unwrap());
        let mut s = ReadStream::with_tracer(&data, Vec::new());
        let result = if name.starts_with("fragment") {
            let mut h = Header::default();
            let mut f = FragmentHeader::default();
            validate::serialize_header(&mut s, &mut h, &fmt)
                .and_then(|_| validate::serialize_fragment_header(&mut s, &mut f, &fmt))
                .and_then(|_| {
                    let n = (s.bits_available() / 8) as usize;
                    s.bytes(&mut vec![0; n])
                })
        } else {
            let mut h = Header::default();
            let mut b = Body::A(Default::default());
            article::serialize_packet(&mut s, &mut h, &mut b)
        };
        assert_eq!(s.tracer, expected_prims(&v), "{name}: traced primitives");
        match v["malformed"].as_str() {
            None | Some("crc") => assert!(result.is_ok(), "{name}: {result:?}"),
            Some(kind) => assert_eq!(result.unwrap_err().kind.code(), kind, "{name}"),
        }
    }
}

/// Writing the listed values reproduces the datagram byte for byte.
#[test]
fn writing_the_prims_reproduces_hex() {
    for v in vectors() {
        if !matches!(v["malformed"].as_str(), None | Some("crc")) {
            continue;
        }
        let name = v["name"].as_str().unwrap();
        let mut w = BitWriter::new();
        for p in v["prims"].as_array().unwrap() {
            match p["prim"].as_str().unwrap() {
                "bits" => w.write_bits(u(p, "value") as u32, u(p, "bits") as u32).unwrap(),
                "int" => {
                    let (min, max) = (i(p, "min"), i(p, "max"));
                    w.write_bits((i(p, "value") - min) as u32, int_width(min, max).unwrap())
                        .unwrap()
                }
                "align" => assert_eq!(w.write_align().unwrap() as u64, u(p, "bits")),
                "bytes" => w.write_bytes(&hex(p["hex"].as_str().unwrap())).unwrap(),
                "check" => w.write_bits(u(p, "value") as u32, 32).unwrap(),
                other => panic!("{other}"),
            }
        }
        assert_eq!(w.finish(), hex(v["hex"].as_str().unwrap()), "{name}");
    }
}

#[test]
fn crc_ok_agrees() {
    for v in vectors() {
        let id = ProtocolId::parse(v["protocol_id"].as_str().unwrap()).unwrap();
        let data = hex(v["hex"].as_str().unwrap());
        let ok = validate::verify_crc(id, &data) == validate::CrcStatus::Ok;
        assert_eq!(ok, v["crc_ok"].as_bool().unwrap(), "{}", v["name"]);
    }
}

/// The article writer reproduces the reference bytes from decoded values for every
/// well-formed packet.
#[test]
fn article_profile_rewrites_reference_packets() {
    for v in vectors() {
        let name = v["name"].as_str().unwrap();
        if v["malformed"] != Value::Null || name.starts_with("fragment") {
            continue;
        }
        let data = hex(v["hex"].as_str().unwrap());
        let (h, body) = article::read_packet(&data).unwrap();
        let again = article::write_packet(h.sequence, &body).unwrap();
        assert_eq!(again, data, "{name}");
        assert_eq!(
            article::measure_packet(&body).unwrap(),
            data.len() as u64,
            "{name}"
        );
    }
}

#[test]
fn hash_string_matches_spec() {
    assert_eq!(hash_string("end of packet"), 0x9908_ace2);
    assert_eq!(END_OF_PACKET, 0x9908_ace2);
    assert_eq!(hash_string("END OF PACKET"), 0x9908_ace2);
}
