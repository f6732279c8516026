//! A message in several streams at once (a reliable number per connection and an
//! ordering index per channel, as RakNet's reliable-ordered messages carry), and the
//! refusal of two sequences of one stream on one path.

mod common;

use common::{gpcap_ok, udp_capture};
use serde_json::Value;

const DEF: &str = r#"protocol "two" { ports 9000; checksum "none"; }
header { bits count 8; }
messages {
    bits kind 8 role=type
    bits channel 8
    bits reliable_number 16 role=sequence stream="reliable"
}
message 1 "ordered" {
    bits ordering_index 16 role=sequence stream="ordered" key="channel"
    bits data 8
}
"#;

/// 402 messages, each in the connection's reliable stream and in its channel's
/// ordering stream (channels 0 and 1 alternate): nothing lost in either.
fn datagrams() -> Vec<(std::net::SocketAddr, std::net::SocketAddr, Vec<u8>)> {
    let (a, b) = ("10.0.0.1:5000".parse().unwrap(), "10.0.0.2:9000".parse().unwrap());
    let mut ordering = [0u16; 2];
    (0..402u16)
        .map(|n| {
            let channel = (n % 2) as u8;
            let o = ordering[channel as usize];
            ordering[channel as usize] += 1;
            let mut p = vec![1, 1, channel];
            p.extend_from_slice(&n.to_le_bytes());
            p.extend_from_slice(&o.to_le_bytes());
            p.push(0xaa);
            (a, b, p)
        })
        .collect()
}

/// Regression: `check` accepted two stream sequences in one message and `analyze` kept
/// only the last — the reliable stream was never counted (only the two ordering
/// streams, 201 each), where each message counts in both.
#[test]
fn a_message_counts_in_each_of_its_streams() {
    let dir = std::env::temp_dir().join(format!("gpcap-two-streams-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (def, cap) = (dir.join("two.kdl"), dir.join("two.pcap"));
    std::fs::write(&def, DEF).unwrap();
    udp_capture(&cap, datagrams());
    let r: Value = serde_json::from_str(&gpcap_ok(&[
        "analyze",
        "-d",
        def.to_str().unwrap(),
        cap.to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let streams = r["flows"][0]["streams"].as_array().unwrap();
    let got: Vec<(String, String, u64, u64)> = streams
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["key"].as_str().unwrap().to_string(),
                s["seq"]["received"].as_u64().unwrap(),
                s["seq"]["lost"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("reliable".into(), "".into(), 402, 0),
            ("ordered".into(), "channel=0".into(), 201, 0),
            ("ordered".into(), "channel=1".into(), 201, 0),
        ]
    );
}

fn refusal(text: &str) -> String {
    match gpcap::dissect::compile("bad.kdl", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => gpcap::dissect::render(&e, false),
    }
}

/// Two sequences of one stream on one path would count one message twice: refused, at
/// the second, whether both are in the message's body or one is in the messages block.
#[test]
fn two_sequences_of_one_stream_on_a_path_are_refused() {
    let head = "protocol \"p\" { checksum \"none\"; }\nheader { bits n 8; }\n";
    let e = refusal(&format!(
        "{head}messages {{ bits kind 8 role=type; bits a 16 role=sequence stream=\"s\"; }}\nmessage 1 \"m\" {{ bits b 16 role=sequence stream=\"s\"; }}\n"
    ));
    assert!(
        e.contains("two sequences of stream `s` on one path through message `m`"),
        "{e}"
    );
    let e = refusal(&format!(
        "{head}messages {{ bits kind 8 role=type; }}\nmessage 1 \"m\" {{ bits a 16 role=sequence stream=\"s\"; bits b 16 role=sequence stream=\"s\"; }}\n"
    ));
    assert!(e.contains("two sequences of stream `s`"), "{e}");
    // In the two branches of an `if`, one is read: accepted.
    let ok = format!(
        "{head}messages {{ bits kind 8 role=type; bool f; }}\nmessage 1 \"m\" {{ if \"f\" {{ bits a 16 role=sequence stream=\"s\"; }}\nelse {{ bits b 16 role=sequence stream=\"s\"; }}\n}}\n"
    );
    gpcap::dissect::compile("ok.kdl", &ok)
        .unwrap_or_else(|e| panic!("{}", gpcap::dissect::render(&e, false)));
}
