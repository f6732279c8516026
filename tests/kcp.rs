//! Real KCP traffic (tests/fixtures/kcp: the unmodified library over UDP sockets on
//! loopback, ~3% of datagrams dropped by the application, with its own verifier's
//! figures) analyzed with dissectors/kcp.kdl: segments of several kinds per datagram,
//! PUSH sequences per conv and direction, ACKs echoing the acked copy's `ts` beside the
//! cumulative `una`, and messages split into fragments counting down in `frg`.

mod common;

use common::gpcap_ok as gpcap;
use serde_json::Value;

const CAPTURE: &str = "tests/fixtures/kcp/capture.pcap";
const DEF: &str = "dissectors/kcp.kdl";

fn truth() -> Value {
    serde_json::from_str(&std::fs::read_to_string("tests/fixtures/kcp/truth_summary.json").unwrap()).unwrap()
}

fn report() -> Value {
    serde_json::from_str(&gpcap(&["analyze", "-d", DEF, CAPTURE, "--json"])).unwrap()
}

fn port(a: &Value) -> u64 {
    a.as_str().unwrap().rsplit(':').next().unwrap().parse().unwrap()
}

/// The flow of a truth key (`client1/c2s`), and its client's name.
fn flow<'a>(r: &'a Value, t: &Value, key: &str) -> &'a Value {
    let (client, dir) = key.split_once('/').unwrap();
    let p = t["clients"][client]["port"].as_u64().unwrap();
    let server = t["server_port"].as_u64().unwrap();
    let (src, dst) = if dir == "c2s" { (p, server) } else { (server, p) };
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| port(&f["src"]) == src && port(&f["dst"]) == dst)
        .unwrap_or_else(|| panic!("no flow {src}→{dst}"))
}

#[test]
fn every_segment_is_read_by_kind_and_datagram() {
    let (t, r) = (truth(), report());
    assert_eq!(r["fit"]["verdict"], "good");
    assert_eq!(r["capture"]["frames"], t["frames"]);
    assert_eq!(r["validation"]["crc_ok"], t["frames"]);
    assert_eq!(r["malformed"]["total"], 0);
    let m = &r["messages"];
    assert_eq!(m["total"], t["segments_total"]);
    for (kind, name) in [
        ("PUSH", "push"),
        ("ACK", "ack"),
        ("WASK", "wask"),
        ("WINS", "wins"),
    ] {
        let want = t["segments_by_cmd"][kind].as_u64().unwrap();
        assert_eq!(m["by_type"][name].as_u64().unwrap_or(0), want, "{kind}");
    }
    assert_eq!(m["per_datagram"], t["segments_per_datagram"]);
    for (client, dirs) in t["datagrams_by_client"].as_object().unwrap() {
        for dir in ["c2s", "s2c"] {
            assert_eq!(flow(&r, &t, &format!("{client}/{dir}"))["datagrams"], dirs[dir]);
        }
    }
}

/// Per conv and direction: the PUSH sequences distinct, their copies (resent or
/// duplicated) and none never seen — as a stream (its sequence analysis) and as what
/// the acks settle. A retransmission whose first copy was dropped before the capture is
/// one copy on the wire: the capture sees the copies, not the truth's every resend.
#[test]
fn push_sequences_per_conv_and_direction() {
    let (t, r) = (truth(), report());
    for (key, p) in t["push"].as_object().unwrap() {
        let f = flow(&r, &t, key);
        let s = &f["streams"][0];
        assert_eq!(s["name"], "push", "{key}");
        assert_eq!(s["key"], format!("conv={}", p["conv"]), "{key}");
        assert_eq!(s["seq"]["received"], p["distinct"], "{key}");
        assert_eq!(
            s["seq"]["duplicates"], p["retransmitted_copies_in_capture"],
            "{key}"
        );
        assert_eq!(s["seq"]["lost"], p["never_seen_in_capture"], "{key}");
        assert_eq!(s["seq"]["first"], p["sn_range"][0], "{key}");
        assert_eq!(s["seq"]["last"], p["sn_range"][1], "{key}");
        let a = &f["acks"];
        assert_eq!(a["sequences"], p["distinct"], "{key}");
        assert_eq!(
            a["retransmissions"], p["retransmitted_copies_in_capture"],
            "{key}"
        );
    }
}

/// Every PUSH was acked — by its ACK or, where the ACK was lost, by a later `una`: never
/// acked 0 in every direction (it was 1–2.6% "ack-implied loss" before cumulative acks).
/// The PUSHes no captured ACK names are exactly those the acks lost.
#[test]
fn every_push_is_acked_by_its_ack_or_a_later_una() {
    let (t, r) = (truth(), report());
    let mut acks = 0;
    for (key, p) in t["push"].as_object().unwrap() {
        let a = &flow(&r, &t, key)["acks"];
        assert_eq!(a["never_acked"], 0, "{key}");
        assert_eq!(a["unacked_at_end"], 0, "{key}");
        assert_eq!(a["acked"], p["distinct"], "{key}");
        assert_eq!(a["acked_not_captured"], 0, "{key}");
        // The ACKs travelling the other way name these PUSHes.
        let (client, dir) = key.split_once('/').unwrap();
        let back = format!("{client}/{}", if dir == "c2s" { "s2c" } else { "c2s" });
        let named = t["ack"][&back]["distinct_sn_acked_in_capture"].as_u64().unwrap();
        assert_eq!(
            a["acks_lost"].as_u64().unwrap(),
            p["distinct"].as_u64().unwrap() - named,
            "{key}"
        );
        let by = &a["acked_by"];
        assert_eq!(
            by["single"].as_u64().unwrap() + by["cumulative"].as_u64().unwrap(),
            p["distinct"].as_u64().unwrap()
        );
        acks += t["ack"][&back]["acks_in_capture"].as_u64().unwrap();
    }
    assert_eq!(acks, t["ack_totals"]["in_capture"].as_u64().unwrap());
    assert_eq!(r["messages"]["by_type"]["ack"].as_u64().unwrap(), acks);
}

/// Round trips from the `ts` each ACK echoes: the median within 1 ms of the median rtt
/// KCP itself logged for the ACKs it took in (tests/fixtures/kcp/ack_rtt.json).
#[test]
fn round_trips_match_what_kcp_logged() {
    let (t, r) = (truth(), report());
    let logged: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/kcp/ack_rtt.json").unwrap()).unwrap();
    for key in t["push"].as_object().unwrap().keys() {
        let (client, dir) = key.split_once('/').unwrap();
        // PUSHes client→server are timed by the ACKs the server sent, taken in by the client.
        let acks = if dir == "c2s" {
            format!("server->{client}")
        } else {
            format!("{client}->server")
        };
        let mut ms: Vec<f64> = logged[&acks]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        ms.sort_by(f64::total_cmp);
        let median = (ms[(ms.len() - 1) / 2] + ms[ms.len() / 2]) / 2.0;
        let a = &flow(&r, &t, key)["acks"];
        assert_eq!(a["rtt_source"], "echoed send times", "{key}");
        let p50 = a["rtt_ms"]["p50"].as_f64().unwrap();
        assert!(
            (p50 - median).abs() <= 1.0,
            "{key}: p50 {p50} ms, KCP logged {median} ms"
        );
        assert_eq!(a["rtt_ms"]["samples"], a["acked_by"]["single"], "{key}");
    }
}

/// Messages split into fragments counting down in `frg`: every one seen and complete,
/// by fragment count; with those sent in one fragment, every message.
#[test]
fn fragmented_messages_by_count_and_every_message() {
    let (t, r) = (truth(), report());
    let re = &r["reassembly"];
    let fm = &t["fragmented_messages"];
    let rows = re["rows"].as_array().unwrap();
    for (n, c) in fm["by_fragment_count"].as_object().unwrap() {
        let row = rows
            .iter()
            .find(|row| row["fragments"].as_u64() == n.parse().ok())
            .unwrap_or_else(|| panic!("no row of {n} fragments"));
        assert_eq!(row["seen"], c["seen"], "{n}");
        assert_eq!(row["completed"], c["complete"], "{n}");
    }
    assert_eq!(re["completed"], fm["complete"]);
    assert_eq!(re["dissected_ok"], fm["complete"]);
    assert_eq!(re["fragments_received"], fm["fragments"]);
    assert_eq!(re["attacks"]["incomplete_at_end"], fm["incomplete"]);
    assert_eq!(re["attacks"]["count_changed"], 0);
    // Fragments resent after their message was whole are copies.
    let copies: u64 = t["push_totals"]["retransmitted_copies_in_capture"]
        .as_u64()
        .unwrap();
    assert!(re["attacks"]["duplicate"].as_u64().unwrap() <= copies);
    let whole = re["single_fragment_messages"].as_u64().unwrap();
    assert_eq!(whole, t["messages"]["unfragmented"].as_u64().unwrap());
    assert_eq!(
        whole + re["completed"].as_u64().unwrap(),
        t["messages"]["sent"].as_u64().unwrap()
    );
}

/// A definition written the natural way without count-down fragments (the count derived
/// from `frg`, grouped by the message's last sn) reads every fragment as a message whose
/// count changes: its fragment fit is not good, its loss figures and finding held back.
#[test]
fn a_count_derived_from_frg_does_not_fit() {
    let text = std::fs::read_to_string(DEF)
        .unwrap()
        .replace(
            "    derived remaining \"frg\" role=fragment-remaining\n    bytes data \"len\" role=fragment-data",
            "    derived last_sn \"sn + frg\"\n    derived frag_count \"frg + 1\" role=fragment-count\n    derived frag_index \"frg\" role=fragment-id key=\"conv last_sn\"\n    bytes data \"len\" role=fragment-data",
        )
        .replace("    mtu-budget 1400\n", "    mtu-budget 1400\n    fragment-size 1376\n");
    assert!(text.contains("frag_count"));
    let dir = std::env::temp_dir().join(format!("gpcap-kcp-attempt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let def = dir.join("attempt.kdl");
    std::fs::write(&def, text).unwrap();
    let r: Value = serde_json::from_str(&gpcap(&[
        "analyze",
        "-d",
        def.to_str().unwrap(),
        CAPTURE,
        "--json",
    ]))
    .unwrap();
    let re = &r["reassembly"];
    assert!(
        re["attacks"]["count_changed"].as_u64().unwrap() > 100,
        "{}",
        re["attacks"]
    );
    assert_ne!(r["fit"]["verdict"], "good", "{}", r["fit"]);
    assert_eq!(r["fit"]["analyses"]["fragments"], "does_not_fit");
    assert!(re["finding"].is_null(), "{}", re["finding"]);
    // The finding it would have made is held back, said so.
    assert!(
        r["fit"]["suppressed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s.as_str().unwrap().contains("fragments"))
    );
    let text = gpcap(&["analyze", "-d", def.to_str().unwrap(), CAPTURE]);
    assert!(text.contains("fragment loss p         ┆ held back"), "{text}");
    assert!(!text.contains("Fragment-loss amplification"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Each PUSH's verdict in its stream, per message in `dissect --jsonl` (`streams`) and
/// in display filters: per conv and direction the duplicate copies are exactly the
/// retransmitted copies KCP's truth counts in the capture, every distinct sequence is
/// new once (after a gap or not) or late, and since none was lost, the sequences the
/// gaps skipped are exactly those that came late. `dup`, `late` and `gap` select the
/// datagrams carrying such a message; `--brief` names them.
#[test]
fn every_push_has_its_verdict_in_its_stream() {
    use std::collections::BTreeMap;
    let t = truth();
    let lines = gpcap(&["dissect", "-d", DEF, CAPTURE, "--jsonl"]);
    // By flow: [new, gap, late, dup, sequences skipped], and datagrams with each.
    let mut by: BTreeMap<(u64, u64), [u64; 5]> = BTreeMap::new();
    let mut with = [0u64; 3];
    for l in lines.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let Some(s) = v.get("streams") else { continue };
        let c = by.entry((port(&v["src"]), port(&v["dst"]))).or_default();
        let mut seen = [false; 3];
        for m in s.as_array().unwrap() {
            assert_eq!(m["stream"], "push");
            let i = ["new", "gap", "late", "dup"]
                .iter()
                .position(|w| m["verdict"] == *w)
                .unwrap();
            c[i] += 1;
            c[4] += m["gap"].as_u64().unwrap_or(0);
            assert_eq!(m.get("gap").is_some(), i == 1, "{m}");
            if i > 0 {
                seen[i - 1] = true;
            }
        }
        for (w, s) in with.iter_mut().zip(seen) {
            *w += u64::from(s);
        }
    }
    let mut dups = 0;
    for (key, p) in t["push"].as_object().unwrap() {
        let (client, dir) = key.split_once('/').unwrap();
        let (c, s) = (
            t["clients"][client]["port"].as_u64().unwrap(),
            t["server_port"].as_u64().unwrap(),
        );
        let [new, gap, late, dup, skipped] = by[&if dir == "c2s" { (c, s) } else { (s, c) }];
        assert_eq!(
            dup,
            p["retransmitted_copies_in_capture"].as_u64().unwrap(),
            "{key}"
        );
        assert_eq!(new + gap + late, p["distinct"].as_u64().unwrap(), "{key}");
        assert_eq!(p["never_seen_in_capture"], 0);
        assert_eq!(skipped, late, "{key}");
        dups += dup;
    }
    assert_eq!(dups, 52);
    assert_eq!(dups, t["push_totals"]["retransmitted_copies_in_capture"]);
    // The filters select the datagrams carrying such a message, and no others.
    for (word, n) in ["gap", "late", "dup"].iter().zip(with) {
        let out = gpcap(&["dissect", "-d", DEF, CAPTURE, "--filter", word, "--brief"]);
        assert_eq!(out.lines().count() as u64, n, "{word}");
        let note = if *word == "gap" {
            " gap "
        } else {
            &format!(" {word}")
        };
        assert!(
            out.lines().all(|l| l.contains(" [push ") && l.contains(note)),
            "{out}"
        );
    }
    assert_eq!(with, [85, 85, 47]);
    let bigger = gpcap(&["dissect", "-d", DEF, CAPTURE, "--filter", "gap > 1", "--brief"]);
    assert!(
        bigger
            .lines()
            .all(|l| !l.contains(" gap 1]") && !l.contains(" gap 1,")),
        "{bigger}"
    );
}

/// KCP datagrams carry no sequence of their own: the flows table says "-" for lost,
/// dup and late (not measured), not 0; the streams and acks tables have the figures.
#[test]
fn flows_without_a_datagram_sequence_say_not_measured() {
    let text = gpcap(&["analyze", "-d", DEF, CAPTURE]);
    let flows: Vec<&str> = (text.lines())
        .skip_while(|l| *l != "Flows")
        .filter(|l| l.contains(" → "))
        .take(6)
        .collect();
    assert_eq!(flows.len(), 6, "{text}");
    for l in flows {
        let cells: Vec<&str> = l.split('┆').map(str::trim).collect();
        assert_eq!(cells[9..12], ["-", "-", "-"], "{l}");
    }
}

/// `never_acked` and `rtt` read each PUSH's settlement in its acked stream (KCP's acks
/// are per message, with `una`): none is never acked (every PUSH was, by its ACK or a
/// later `una`), and `rtt > 18` selects the one datagram whose PUSH took the longest round
/// trip the Acks table reports (18.3 ms; KCP's own log's longest is 18 ms).
#[test]
fn never_acked_and_rtt_read_each_push_in_its_stream() {
    let t = truth();
    let r = report();
    let dissect = |f: &str| gpcap(&["dissect", "-d", DEF, CAPTURE, "--filter", f, "--brief"]);
    assert_eq!(dissect("never_acked"), "");
    let longest: Vec<f64> = (t["push"].as_object().unwrap().keys())
        .map(|k| {
            flow(&r, &t, k)["stream_acks"][0]["acks"]["rtt_ms"]["max"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(longest.iter().filter(|&&ms| ms > 18.0).count(), 1, "{longest:?}");
    let over = dissect("rtt > 18");
    assert_eq!(over.lines().count(), 1, "{over}");
    let logged: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/kcp/ack_rtt.json").unwrap()).unwrap();
    let most = (logged.as_object().unwrap().values())
        .flat_map(|v| v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()))
        .max();
    assert_eq!(most, Some(18));
    // Every datagram carrying a PUSH is either timed, or its PUSHes were acked only by
    // a later una (not timed: Karn), never unsettled.
    let timed = dissect("rtt >= 0").lines().count();
    let pushes = t["datagram_composition"]["PUSH"].as_u64().unwrap()
        + t["datagram_composition"]["ACK+PUSH"].as_u64().unwrap();
    assert!(timed as u64 <= pushes && timed > 4000, "{timed} of {pushes}");
}

/// Each PUSH copy's ack verdict in `--jsonl` is what the stream acks table counts: per
/// conv and direction the copies that are `retransmission`s are its retransmissions
/// (52 in all: KCP's truth's retransmitted copies), those `spurious` its spurious ones
/// (sent after the capture saw their ack), none NAKed (KCP has no NAK) nor never acked;
/// the filters select the datagrams carrying them and `--brief` names them.
#[test]
fn each_push_copy_has_its_ack_verdict() {
    use std::collections::BTreeMap;
    let t = truth();
    let r = report();
    let lines = gpcap(&["dissect", "-d", DEF, CAPTURE, "--jsonl"]);
    let mut by: BTreeMap<(u64, u64), [u64; 4]> = BTreeMap::new();
    let mut with = [0u64; 2];
    for l in lines.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let Some(s) = v.get("streams") else { continue };
        let c = by.entry((port(&v["src"]), port(&v["dst"]))).or_default();
        let mut seen = [false; 2];
        for m in s.as_array().unwrap() {
            assert!(m.get("naked").is_none() && m["acked"] != false, "{m}");
            let (re, sp) = (m.get("retransmission").is_some(), m.get("spurious").is_some());
            assert!(!sp || re, "{m}");
            c[0] += u64::from(re);
            c[1] += u64::from(sp);
            c[2] += u64::from(m.get("rtt_ms").is_some());
            seen[0] |= re;
            seen[1] |= sp;
        }
        for (w, s) in with.iter_mut().zip(seen) {
            *w += u64::from(s);
        }
    }
    let mut all = [0u64; 2];
    for key in t["push"].as_object().unwrap().keys() {
        let (client, dir) = key.split_once('/').unwrap();
        let (c, s) = (
            t["clients"][client]["port"].as_u64().unwrap(),
            t["server_port"].as_u64().unwrap(),
        );
        let got = by[&if dir == "c2s" { (c, s) } else { (s, c) }];
        let a = &flow(&r, &t, key)["stream_acks"][0]["acks"];
        assert_eq!(got[0], a["retransmissions"].as_u64().unwrap(), "{key}");
        assert_eq!(got[1], a["spurious_retransmissions"].as_u64().unwrap(), "{key}");
        assert!(
            got[2] > 0 && got[2] >= a["rtt_ms"]["samples"].as_u64().unwrap(),
            "{key}"
        );
        all[0] += got[0];
        all[1] += got[1];
    }
    assert_eq!(all, [52, 12]);
    assert_eq!(all[0], t["push_totals"]["retransmitted_copies_in_capture"]);
    for (word, n) in ["retransmission", "spurious"].iter().zip(with) {
        let out = gpcap(&["dissect", "-d", DEF, CAPTURE, "--filter", word, "--brief"]);
        assert_eq!(out.lines().count() as u64, n, "{word}");
        assert!(out.lines().all(|l| l.contains(&format!(" {word}"))), "{out}");
    }
    assert_eq!(with, [47, 11]);
    for word in ["naked", "never_acked"] {
        let out = gpcap(&["dissect", "-d", DEF, CAPTURE, "--filter", word, "--brief"]);
        assert_eq!(out, "", "{word}");
    }
}
