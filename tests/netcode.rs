//! Real netcode.io traffic (tests/fixtures/netcode: the unmodified library, one server
//! and five clients over UDP on loopback, with its own truth) analyzed and dissected with
//! dissectors/netcode.kdl; and generated netcode traffic across the 3-byte sequence.

mod common;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

const CAPTURE: &str = "tests/fixtures/netcode/capture.pcap";
const DEF: &str = "dissectors/netcode.kdl";

use common::gpcap_ok as gpcap;

fn json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Total length of `[first, last]` runs.
fn run_len(runs: &Value) -> u64 {
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_u64().unwrap() - r[0].as_u64().unwrap() + 1)
        .sum()
}

#[test]
fn every_flow_its_types_and_its_sequence_spaces() {
    let truth = json("tests/fixtures/netcode/truth_summary.json");
    let r: Value = serde_json::from_str(&gpcap(&["analyze", "-d", DEF, CAPTURE, "--json"])).unwrap();
    assert_eq!(r["validation"]["examined"], 3136);
    assert_eq!(r["malformed"]["total"], 0);
    let names: Vec<String> = r["type_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap_or("").to_string())
        .collect();
    let flows: HashMap<String, &Value> = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                format!("{}->{}", f["src"].as_str().unwrap(), f["dst"].as_str().unwrap()),
                f,
            )
        })
        .collect();
    assert_eq!(flows.len(), 10);
    let mut lost_total = 0;
    for t in truth["flows"].as_array().unwrap() {
        let name = t["flow"].as_str().unwrap();
        let f = flows[name];
        assert_eq!(f["datagrams"], t["datagrams_in_capture"], "{name}");
        assert_eq!(f["bytes"], t["udp_payload_bytes_in_capture"], "{name}");
        assert_eq!(f["malformed"], 0, "{name}");
        let ours: BTreeMap<String, u64> = f["types"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.as_u64() > Some(0))
            .map(|(i, n)| (names[i].clone(), n.as_u64().unwrap()))
            .collect();
        let theirs: BTreeMap<String, u64> = t["per_type"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, v)| v["in_capture"].as_u64() > Some(0))
            .map(|(k, v)| (k.clone(), v["in_capture"].as_u64().unwrap()))
            .collect();
        assert_eq!(ours, theirs, "{name}");
        // The flow's own counter (client connection, or the server's slot for it):
        // every drop found, nothing else — the request's unsent sequence 0 included.
        for (space, s) in t["sequence_spaces"].as_object().unwrap() {
            if space == "server_global" {
                continue;
            }
            let seq = &f["seq"];
            assert_eq!(seq["first"], s["sequence_min"], "{name} {space}");
            assert_eq!(seq["last"], s["sequence_max"], "{name} {space}");
            assert_eq!(
                seq["lost"].as_u64().unwrap(),
                run_len(&s["never_seen_dropped"]),
                "{name} {space}"
            );
            assert_eq!(seq["duplicates"], 0, "{name} {space}");
            assert_eq!(seq["late"], 0, "{name} {space}");
            lost_total += seq["lost"].as_u64().unwrap();
        }
    }
    assert_eq!(lost_total, truth["datagrams_dropped"].as_u64().unwrap());
    // The server's global counter (challenges and denied, from 2^63) is one space for
    // all its flows: no false losses from the numbers other clients got.
    let global = &r["sender_spaces"];
    assert_eq!(global.as_array().unwrap().len(), 1);
    assert_eq!(global[0]["sender"], "127.0.0.1:40000");
    assert_eq!(global[0]["space"], "server-global");
    assert_eq!(global[0]["seq"]["received"], 5);
    assert_eq!(global[0]["seq"]["lost"], 0);
    assert_eq!(global[0]["seq"]["first"].as_u64(), Some(1 << 63));
    assert_eq!(global[0]["seq"]["last"].as_u64(), Some((1 << 63) + 4));
}

#[test]
fn dissect_agrees_with_the_library_on_every_datagram() {
    let ours: HashMap<u64, Value> = gpcap(&["dissect", "-d", DEF, CAPTURE, "--jsonl"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["frame"].as_u64().unwrap(), v)
        })
        .collect();
    let truth = std::fs::read_to_string("tests/fixtures/netcode/truth.jsonl").unwrap();
    let mut checked = 0;
    for t in truth.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()) {
        if t["kind"] != "datagram" || t["dropped"] == true {
            continue;
        }
        let frame = t["frame"].as_u64().unwrap();
        let d = &ours[&frame];
        assert_eq!(d["status"], "ok", "frame {frame}");
        assert_eq!(d["size"], t["size"], "frame {frame}");
        assert_eq!(d["packet_type"], t["type"], "frame {frame}");
        assert_eq!(d["type_name"], t["type_name"], "frame {frame}");
        // A request carries no sequence: it is the client's sequence 0, derived.
        let sequence = if t["sequence"].is_null() {
            &t["lib_sequence_consumed"]
        } else {
            &t["sequence"]
        };
        assert_eq!(&d["sequence"], sequence, "frame {frame}");
        let field = |name: &str| {
            d["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["path"] == name)
                .cloned()
        };
        let bytes = field("sequence_bytes").unwrap()["value"].clone();
        assert_eq!(bytes, t["sequence_bytes"].as_u64().unwrap_or(0), "frame {frame}");
        let seq = field("sequence").unwrap();
        if t["sequence"].is_null() {
            assert_eq!(
                (&seq["kind"], &seq["bit_len"]),
                (&Value::from("derived"), &Value::from(0))
            );
        } else {
            assert_eq!(seq["kind"], "le-uint", "frame {frame}");
            assert_eq!(seq["bit_len"], bytes.as_u64().unwrap() * 8, "frame {frame}");
        }
        checked += 1;
    }
    assert_eq!(checked, 3136);
}

/// The protocol id a request sends in the clear must be the definition's: another
/// game's request is refused at the id, located by field and bit.
#[test]
fn a_request_with_another_protocol_id_is_not_the_game() {
    let bytes = std::fs::read(CAPTURE).unwrap();
    // Frame 1 is a request: pcap header 24, record header 16, Ethernet+IPv4+UDP 42.
    let request = bytes[82..82 + 1078].to_vec();
    let mut other = request.clone();
    other[14] ^= 0xff;
    let path = std::env::temp_dir().join(format!("gpcap-netcode-id-{}.pcap", std::process::id()));
    let client: std::net::SocketAddr = "127.0.0.1:41000".parse().unwrap();
    let server: std::net::SocketAddr = "127.0.0.1:40000".parse().unwrap();
    common::udp_capture(&path, [(client, server, request), (client, server, other)]);
    let p = path.to_str().unwrap();
    let lines: Vec<Value> = gpcap(&["dissect", "-d", DEF, p, "--jsonl"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["status"], "ok");
    assert_eq!(lines[1]["status"], "malformed");
    assert_eq!(lines[1]["fault"]["kind"], "check");
    assert_eq!(lines[1]["fault"]["field"], "protocol_id");
    assert_eq!(lines[1]["fault"]["bit"], 14 * 8);
    // The id is little-endian: byte 14 is its lowest.
    let expected = format!(
        "protocol id 0x{:X} is not the definition's 0x1122334455667788",
        0x1122334455667788u64 ^ 0xff
    );
    assert_eq!(lines[1]["fault"]["reason"], expected.as_str());
    let _ = std::fs::remove_file(&path);
}

/// Generated netcode traffic: sequences in 1, 2 and 3 bytes (flows start near 65536),
/// the global counter per sender, and the analysis agrees with the generator's truth.
#[test]
fn generated_netcode_crosses_the_three_byte_sequence() {
    let (dir, out) = common::gen_checked(
        DEF,
        "nc",
        &[
            "--seed",
            "2",
            "--clients",
            "3",
            "--duration",
            "5",
            "--loss",
            "0.02",
        ],
    );
    let out = out.as_str();
    let mut widths = BTreeMap::new();
    for l in gpcap(&["dissect", "-d", DEF, out, "--jsonl"]).lines() {
        let d: Value = serde_json::from_str(l).unwrap();
        assert_eq!(d["status"], "ok");
        let seq = d["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == "sequence")
            .cloned()
            .unwrap();
        let value = seq["value"].as_u64().unwrap();
        let bytes = seq["bit_len"].as_u64().unwrap() / 8;
        // The fewest bytes that hold the value, as netcode writes it.
        assert_eq!(
            bytes,
            (64 - value.leading_zeros() as u64).div_ceil(8).max(1),
            "{value}"
        );
        *widths.entry(bytes).or_insert(0) += 1;
    }
    assert!(
        widths.get(&2).is_some_and(|&n| n > 0) && widths.get(&3).is_some_and(|&n| n > 0),
        "{widths:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
