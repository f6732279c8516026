//! Real reliable.io traffic (tests/fixtures/reliable: the unmodified library over UDP
//! sockets on loopback, with its own truth) analyzed and dissected with
//! dissectors/reliable.kdl: every number must be the library's.

mod common;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

const CAPTURE: &str = "tests/fixtures/reliable/capture.pcap";
const DEF: &str = "dissectors/reliable.kdl";

use common::gpcap_ok as gpcap;

fn truth_lines() -> Vec<Value> {
    std::fs::read_to_string("tests/fixtures/reliable/truth.jsonl")
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn report() -> Value {
    serde_json::from_str(&gpcap(&["analyze", "-d", DEF, CAPTURE, "--json"])).unwrap()
}

/// The flow of a direction of the truth ("c2s": client 40000 → server 40001).
fn flow<'a>(r: &'a Value, dir: &str) -> &'a Value {
    let src = if dir == "c2s" {
        "127.0.0.1:40000"
    } else {
        "127.0.0.1:40001"
    };
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["src"] == src)
        .unwrap()
}

#[test]
fn analyze_reproduces_the_truth_summary_per_direction() {
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/reliable/truth_summary.json").unwrap())
            .unwrap();
    let r = report();
    assert_eq!(r["validation"]["crc_mismatch"], 0);
    assert_eq!(r["flows"].as_array().unwrap().len(), 2);
    for dir in ["c2s", "s2c"] {
        let t = &truth[dir];
        let f = flow(&r, dir);
        assert_eq!(f["datagrams"], t["datagrams_captured"], "{dir}");
        assert_eq!(f["bytes"], t["payload_bytes_captured"], "{dir}");
        assert_eq!(f["largest_payload"], t["max_payload"], "{dir}");
        assert_eq!(f["malformed"], 0, "{dir}");
        assert_eq!(f["crc_mismatch"], 0, "{dir}");
        // Type 0 is a whole message, type 1 the fragments.
        assert_eq!(f["types"][0], t["regular_datagrams_captured"], "{dir}");
        assert_eq!(f["types"][1], t["fragment_datagrams_captured"], "{dir}");
        assert_eq!(f["fragments"], t["fragment_datagrams_captured"], "{dir}");
        assert_eq!(f["seq"]["received"], t["sequences_seen"], "{dir}");
        assert_eq!(f["seq"]["lost"], t["sequences_never_seen"], "{dir}");
        assert_eq!(f["seq"]["first"], t["sequence_range"][0], "{dir}");
        assert_eq!(f["seq"]["last"], t["sequence_range"][1], "{dir}");
        assert_eq!(f["seq"]["duplicates"], 0, "{dir}");
        // Fragmented messages seen and completed for every fragment count.
        let ours: BTreeMap<String, (u64, u64)> = f["reassembly"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(n, c)| {
                (
                    n.clone(),
                    (c["seen"].as_u64().unwrap(), c["completed"].as_u64().unwrap()),
                )
            })
            .collect();
        let theirs: BTreeMap<String, (u64, u64)> = t["per_fragment_count"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(n, c)| {
                (
                    n.clone(),
                    (
                        c["packets_with_a_fragment_captured"].as_u64().unwrap(),
                        c["packets_completed"].as_u64().unwrap_or(0),
                    ),
                )
            })
            .collect();
        assert_eq!(ours, theirs, "{dir}");
        // Fragment loss: fragments missing from the packets seen.
        let (mut expected, mut received) = (0u64, 0u64);
        for (n, c) in f["reassembly"].as_object().unwrap() {
            let n: u64 = n.parse().unwrap();
            let (seen, done) = (c["seen"].as_u64().unwrap(), c["completed"].as_u64().unwrap());
            expected += n * seen;
            received += n * done + c["fragments_of_lost"].as_u64().unwrap();
        }
        // The truth rounds to 5 decimals.
        let loss = (expected - received) as f64 / expected as f64;
        let rounded = (loss * 1e5).round() / 1e5;
        assert_eq!(rounded, t["fragment_loss_rate_all"].as_f64().unwrap(), "{dir}");
        // Single-datagram loss: gaps against gaps + singles.
        let (lost, single) = (
            f["seq"]["lost"].as_f64().unwrap(),
            f["seq"]["single"].as_f64().unwrap(),
        );
        let single_loss = (lost / (lost + single) * 1e5).round() / 1e5;
        assert_eq!(
            single_loss,
            t["single_datagram_loss_rate"].as_f64().unwrap(),
            "{dir}"
        );
    }
}

#[test]
fn dissect_agrees_with_the_library_on_every_datagram() {
    // Datagrams by frame; a reassembled message (listed after the frame that completed
    // it, with its fragments' frames) is checked against the message's truth.
    let mut ours: HashMap<u64, Value> = HashMap::new();
    let mut whole: HashMap<(u64, u64), Value> = HashMap::new();
    for l in gpcap(&["dissect", "-d", DEF, CAPTURE, "--jsonl"]).lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        if v.get("fragment_frames").is_some() {
            let dir = if v["src"] == "127.0.0.1:40000" { 0 } else { 1 };
            whole.insert((dir, v["sequence"].as_u64().unwrap()), v);
        } else {
            ours.insert(v["frame"].as_u64().unwrap(), v);
        }
    }
    let mut checked = 0;
    for t in truth_lines()
        .iter()
        .filter(|t| t["kind"] == "datagram" && t["frame"] != -1)
    {
        let frame = t["frame"].as_u64().unwrap();
        let d = &ours[&frame];
        assert_eq!(d["status"], "ok", "frame {frame}");
        assert_eq!(d["fault"], Value::Null, "frame {frame}");
        assert_eq!(d["size"], t["size"], "frame {frame}");
        assert_eq!(d["sequence"], t["sequence"], "frame {frame}");
        // ack and ack_bits: derived (a 1-byte difference, absent bytes as 0xff); a
        // fragment has them only in fragment 0's copy of the header.
        assert_eq!(
            d["ack"],
            t.get("ack").cloned().unwrap_or(Value::Null),
            "frame {frame}"
        );
        assert_eq!(
            d["ack_bits"],
            t.get("ack_bits").cloned().unwrap_or(Value::Null),
            "frame {frame}"
        );
        if t.get("fragment_id").is_some() {
            assert_eq!(d["type_name"], "fragment", "frame {frame}");
            assert_eq!(d["fragment"]["id"], t["fragment_id"], "frame {frame}");
            assert_eq!(d["fragment"]["count"], t["num_fragments"], "frame {frame}");
            // The data a fragment carries, beside the header fragment 0 describes.
            let f = &d["fragment"];
            let carried = f["data_len"].as_u64().unwrap() - f["lead"].as_u64().unwrap();
            assert_eq!(carried, t["fragment_payload"].as_u64().unwrap(), "frame {frame}");
        } else {
            assert_eq!(d["type_name"], "message", "frame {frame}");
            assert_eq!(d["fragment"], Value::Null, "frame {frame}");
        }
        checked += 1;
    }
    assert_eq!(checked, 3601);
    // Each completed message: its header and ack fields, and its whole size (the
    // header fragment 0 carried, then every fragment's data).
    let truth = truth_lines();
    let headers: HashMap<(u64, u64), &Value> = truth
        .iter()
        .filter(|t| t["kind"] == "datagram" && t["fragment_id"] == 0)
        .map(|t| ((u64::from(t["dir"] == "s2c"), t["sequence"].as_u64().unwrap()), t))
        .collect();
    let mut messages = 0;
    for m in truth
        .iter()
        .filter(|t| t["kind"] == "message" && t["num_fragments"].as_u64() > Some(1))
    {
        let key = (u64::from(m["dir"] == "s2c"), m["sequence"].as_u64().unwrap());
        let Some(w) = whole.get(&key) else {
            assert_ne!(m["datagrams_dropped"], 0, "{key:?} complete in the truth");
            continue;
        };
        let h = headers[&key];
        assert_eq!(w["status"], "ok", "{key:?}");
        assert_eq!(w["type_name"], "message", "{key:?}");
        assert_eq!(
            (&w["ack"], &w["ack_bits"]),
            (&h["ack"], &h["ack_bits"]),
            "{key:?}"
        );
        let size = h["header_bytes"].as_u64().unwrap() + m["size"].as_u64().unwrap();
        assert_eq!(w["size"].as_u64().unwrap(), size, "{key:?}");
        messages += 1;
    }
    assert_eq!(messages, 294);
}

#[test]
fn ack_analysis_agrees_with_what_each_sender_learned() {
    let r = report();
    let truth = truth_lines();
    for dir in ["c2s", "s2c"] {
        let a = &flow(&r, dir)["acks"];
        let mut not_acked: HashSet<u64> = HashSet::new();
        for run in a["never_acked_runs"].as_array().unwrap() {
            not_acked.extend(run[0].as_u64().unwrap()..=run[1].as_u64().unwrap());
        }
        // What the capture cannot settle: newer than the peer's last ack.
        let last = flow(&r, dir)["seq"]["last"].as_u64().unwrap();
        let at_end = a["unacked_at_end"].as_u64().unwrap();
        not_acked.extend(last + 1 - at_end..=last);
        let messages: Vec<&Value> = truth
            .iter()
            .filter(|t| t["kind"] == "message" && t["dir"] == dir)
            .collect();
        assert_eq!(messages.len(), 1200);
        for m in &messages {
            let s = m["sequence"].as_u64().unwrap();
            assert_eq!(
                !not_acked.contains(&s),
                m["acked"].as_bool().unwrap(),
                "{dir} sequence {s}"
            );
        }
        let acked = messages.iter().filter(|m| m["acked"] == true).count() as u64;
        assert_eq!(a["acked"].as_u64().unwrap(), acked, "{dir}");
        assert_eq!(a["sequences"], 1200, "{dir}");
        assert_eq!(a["acked_not_captured"], 0, "{dir}");
        // Every ack times a round trip (the capture is on the sender's host).
        assert_eq!(a["rtt_ms"]["samples"].as_u64().unwrap(), acked, "{dir}");
    }
}

#[test]
fn reassembled_messages_are_the_header_and_the_data() {
    // Every completed message dissects as a whole message: its header read again from
    // fragment 0's data, then the concatenated payload.
    let r = report();
    assert_eq!(r["reassembly"]["completed"], 294);
    assert_eq!(r["reassembly"]["dissected_ok"], 294);
    assert_eq!(r["reassembly"]["malformed"], 0);
    assert_eq!(r["reassembly"]["attacks"]["oversize"], 0);
    assert_eq!(r["reassembly"]["attacks"]["short_non_last"], 0);
}

/// The generator follows the definition: no CRC, fragments chosen by `when`, fragment 0
/// carrying the header, derived fields; the analysis of what it wrote agrees with its
/// own truth, and every fragmented packet reassembles into a clean message.
#[test]
fn generated_reliable_traffic_round_trips() {
    let (dir, out) = common::gen_checked(
        DEF,
        "rel",
        &[
            "--clients",
            "2",
            "--duration",
            "5",
            "--loss",
            "0.02",
            "--big",
            "0.2",
        ],
    );
    let out = out.as_str();
    let r: Value = serde_json::from_str(&gpcap(&["analyze", "-d", DEF, out, "--json"])).unwrap();
    assert_eq!(r["malformed"]["total"], 0);
    let fragments: u64 = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fragments"].as_u64().unwrap())
        .sum();
    assert!(fragments > 100, "{fragments} fragments");
    assert!(r["reassembly"]["completed"].as_u64().unwrap() > 50);
    assert_eq!(r["reassembly"]["completed"], r["reassembly"]["dissected_ok"]);
    assert_eq!(r["reassembly"]["attacks"]["oversize"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The whole report as a reader sees it (golden): the ack table beside the flows.
#[test]
fn analyze_report_golden() {
    let text = gpcap(&["analyze", "-d", DEF, CAPTURE]);
    insta::assert_snapshot!(text);
}

/// `dissect --jsonl` gives each datagram its own sequence's ack verdict
/// (`sequence_acks`), and `--brief` says it in the filter's words: per direction the
/// sequences said acked, and never acked, are analyze's, and each message's is what the
/// library's sender learned.
#[test]
fn each_datagram_says_its_sequences_ack_verdict() {
    let r = report();
    let truth = truth_lines();
    let mut said: HashMap<(String, u64), bool> = HashMap::new();
    let mut timed = 0u64;
    for l in gpcap(&["dissect", "-d", DEF, CAPTURE, "--jsonl"]).lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let Some(a) = v.get("sequence_acks") else { continue };
        let key = (
            v["src"].as_str().unwrap().to_string(),
            v["sequence"].as_u64().unwrap(),
        );
        if let Some(acked) = a.get("acked") {
            let acked = acked.as_bool().unwrap();
            assert_eq!(*said.entry(key).or_insert(acked), acked, "{v}");
            timed += u64::from(a.get("rtt_ms").is_some());
            assert_eq!(a.get("rtt_ms").is_some(), acked, "{a}");
        }
    }
    let mut all_timed = 0;
    for dir in ["c2s", "s2c"] {
        let f = flow(&r, dir);
        let src = f["src"].as_str().unwrap();
        let mine = || said.iter().filter(|((s, _), _)| s == src);
        assert_eq!(
            mine().filter(|(_, a)| **a).count() as u64,
            f["acks"]["acked"].as_u64().unwrap()
        );
        // Never acked: the captured ones among analyze's runs (the others were dropped
        // before the capture point, and have no datagram to say it).
        let mut runs: HashSet<u64> = HashSet::new();
        for run in f["acks"]["never_acked_runs"].as_array().unwrap() {
            runs.extend(run[0].as_u64().unwrap()..=run[1].as_u64().unwrap());
        }
        let never: HashSet<u64> = mine().filter(|(_, a)| !**a).map(|((_, s), _)| *s).collect();
        assert!(!never.is_empty() && never.is_subset(&runs), "{dir}: {never:?}");
        all_timed += f["acks"]["rtt_ms"]["samples"].as_u64().unwrap();
        for m in truth.iter().filter(|t| t["kind"] == "message" && t["dir"] == dir) {
            let s = m["sequence"].as_u64().unwrap();
            if let Some(a) = said.get(&(src.to_string(), s)) {
                assert_eq!(*a, m["acked"].as_bool().unwrap(), "{dir} sequence {s}");
            }
        }
    }
    // Every datagram of a timed sequence says its round trip (fragments share theirs).
    assert!(timed >= all_timed, "{timed} of {all_timed}");
    let brief = gpcap(&[
        "dissect",
        "-d",
        DEF,
        CAPTURE,
        "--brief",
        "--filter",
        "never_acked",
    ]);
    assert!(
        !brief.is_empty() && brief.lines().all(|l| l.contains(" never_acked")),
        "{brief}"
    );
    let brief = gpcap(&["dissect", "-d", DEF, CAPTURE, "--brief", "--count", "50"]);
    assert!(brief.lines().any(|l| l.contains(" rtt ")), "{brief}");
}
