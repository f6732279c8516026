//! ENet's acks per message (tests/fixtures/enet): each ACKNOWLEDGE acks one reliable
//! command of the other direction on its channel and echoes the sent_time of the
//! datagram that carried it. Counts against the verifier's truth; round trips against
//! `tests/fixtures/enet/ack_rtt.py`, which matches every ack to its datagram apart from
//! gpcap (min and max exact, percentiles within the histogram's 3 %).

mod common;

use common::gpcap_ok as gpcap;
use serde_json::Value;

const CAPTURE: &str = "tests/fixtures/enet/capture.pcap";
const DEF: &str = "dissectors/enet.kdl";

fn port(a: &Value) -> u64 {
    a.as_str().unwrap().rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn every_reliable_command_is_acked_but_the_connects() {
    let t: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/enet/truth_summary.json").unwrap())
            .unwrap();
    let r: Value = serde_json::from_str(&gpcap(&["analyze", "-d", DEF, CAPTURE, "--json"])).unwrap();
    let (mut sequences, mut acked, mut never) = (0, 0, 0);
    for f in r["flows"].as_array().unwrap() {
        let a = &f["acks"];
        let (src, dst) = (port(&f["src"]), port(&f["dst"]));
        // The truth's reliable streams of this direction: distinct commands, and those
        // never acked in the capture (a CONNECT is answered by VERIFY_CONNECT).
        let (distinct, unacked) = t["reliable_streams"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["src_port"] == src && s["dst_port"] == dst)
            .fold((0, 0), |(d, u), s| {
                (
                    d + s["distinct"].as_u64().unwrap(),
                    u + s["never_acked_in_capture"].as_array().unwrap().len() as u64,
                )
            });
        assert_eq!(a["sequences"], distinct, "{src}→{dst}");
        assert_eq!(a["never_acked"], unacked, "{src}→{dst}");
        assert_eq!(a["unacked_at_end"], 0);
        assert_eq!(a["acked_not_captured"], 0);
        sequences += distinct;
        acked += a["acked"].as_u64().unwrap();
        never += unacked;
    }
    assert_eq!(
        sequences,
        t["reliable_sequences"]["commands_distinct"].as_u64().unwrap()
    );
    assert_eq!(
        never,
        t["reliable_sequences"]["never_acked_in_capture"]
            .as_u64()
            .unwrap()
    );
    assert_eq!(acked, sequences - never);
}

#[test]
fn round_trips_are_timed_from_the_echoed_datagram() {
    // (src port, dst port): samples, min, p50, p90, p99, max in ms, from ack_rtt.py.
    let want = [
        ((7777, 46570), 226, [0.011, 0.0420, 0.1220, 1.5040, 3.311]),
        ((7777, 51421), 228, [0.010, 0.0430, 0.1020, 3.4840, 3.989]),
        ((7777, 55090), 225, [0.010, 0.0510, 0.1120, 2.9920, 3.519]),
        ((46570, 7777), 201, [1.087, 1.1170, 1.1780, 1.2470, 2.772]),
        ((51421, 7777), 198, [1.091, 1.1260, 1.2080, 3.1090, 30.169]),
        ((55090, 7777), 203, [1.094, 1.1490, 1.2090, 2.7220, 30.356]),
    ];
    let r: Value = serde_json::from_str(&gpcap(&["analyze", "-d", DEF, CAPTURE, "--json"])).unwrap();
    for f in r["flows"].as_array().unwrap() {
        let key = (port(&f["src"]), port(&f["dst"]));
        let (_, samples, ms) = want.iter().find(|w| w.0 == key).unwrap();
        let rtt = &f["acks"]["rtt_ms"];
        assert_eq!(rtt["samples"], *samples, "{key:?}");
        assert_eq!(rtt["min"].as_f64().unwrap(), ms[0], "{key:?}");
        assert_eq!(rtt["max"].as_f64().unwrap(), ms[4], "{key:?}");
        for (name, want) in ["p50", "p90", "p99"].iter().zip(&ms[1..4]) {
            let got = rtt[name].as_f64().unwrap();
            assert!(
                (got - want).abs() <= want * 0.03 + 0.001,
                "{key:?} {name}: {got} vs {want}"
            );
        }
    }
}

fn refusal(text: &str) -> String {
    match gpcap::dissect::compile("bad.kdl", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => gpcap::dissect::render(&e, false),
    }
}

#[test]
fn check_refuses_message_acks_that_cannot_work() {
    let base = "protocol \"p\" { checksum \"none\"; }\nheader { bits t 16 role=send-time; }\nmessages { bits kind 8 role=type; bits channel 8; bits seq 16 role=sequence stream=\"reliable\" key=\"channel\"; }\n";
    let e = refusal(&format!(
        "{base}message 1 \"ack\" {{ bits a 16 role=ack stream=\"reliabel\" key=\"channel\"; }}"
    ));
    assert!(
        e.contains("no stream `reliabel`") && e.contains("did you mean `reliable`?"),
        "{e}"
    );
    let e = refusal(&format!(
        "{base}message 1 \"ack\" {{ bits a 16 role=ack stream=\"reliable\"; }}"
    ));
    assert!(e.contains("names its key, the fields `channel`"), "{e}");
    let e = refusal(&format!("{base}message 1 \"ack\" {{ bits a 16 role=ack-time; }}"));
    assert!(e.contains("this message has none"), "{e}");
    // A message's own send time (KCP's PUSH `ts`) stands for the header's; two on one
    // path through the messages block and a body are refused.
    let two = base.replace("bits seq 16", "bits st 16 role=send-time; bits seq 16");
    let e = refusal(&format!(
        "{two}message 1 \"push\" {{ bits a 16 role=send-time; }}"
    ));
    assert!(e.contains("more than one field with role=send-time"), "{e}");
    // Accepted: an ack of the stream on its key, with the echoed time.
    let ok = format!(
        "{base}message 1 \"ack\" {{ bits a 16 role=ack stream=\"reliable\" key=\"channel\"; bits e 16 role=ack-time; }}"
    );
    assert!(gpcap::dissect::compile("ok.kdl", &ok).is_ok());
}
