//! For traffic with each ack mechanism (one by one, cumulative, ranges, NAKs of the
//! gaps beside cumulative acks) and known loss of data and of acks, per stream: every
//! sequence in the span is acked, never acked or in flight at the end — and with no
//! ack lost, the never acked are exactly the data lost before the newest acked.

mod common;

use gpcap::generate::{Link, ip_packets};
use proptest::prelude::*;
use std::net::SocketAddr;

const DEF: &str = r#"protocol "acks" { ports 9000; checksum "none"; }
header { bits n 8; }
messages {
    bits kind 8 role=type
    bits channel 8
}
message 1 "push" { bits seq 16 role=sequence stream="s" key="channel"; }
message 2 "ack" { bits a 16 role=ack stream="s" key="channel"; }
message 3 "below" { bits u 16 role=ack-below stream="s" key="channel"; }
message 4 "range" { bits a 16 role=ack-range-start stream="s" key="channel"; bits b 16 role=ack-range-end; }
message 5 "nak" { bits a 16 role=nak-range-start stream="s" key="channel"; bits b 16 role=nak-range-end; }
"#;

#[derive(Debug, Clone, Copy)]
enum Mechanism {
    Single,
    Cumulative,
    Ranges,
    CumulativeAndNaks,
}

fn message(kind: u8, channel: u8, a: u16, b: Option<u16>) -> Vec<u8> {
    let mut m = vec![kind, channel];
    m.extend_from_slice(&a.to_le_bytes());
    if let Some(b) = b {
        m.extend_from_slice(&b.to_le_bytes());
    }
    m
}

/// The acks the receiver sends after `got` (received sequences of a channel, in order
/// of arrival) by `how`.
fn acks(how: Mechanism, channel: u8, got: &[u16], newest: u16) -> Vec<u8> {
    let mut have: Vec<u16> = got.to_vec();
    have.sort_unstable();
    have.dedup();
    let below = {
        let mut n = 0u16;
        while have.binary_search(&n).is_ok() {
            n += 1;
        }
        n
    };
    let mut p = vec![0];
    match how {
        Mechanism::Single => p.extend(message(2, channel, newest, None)),
        Mechanism::Cumulative => p.extend(message(3, channel, below, None)),
        Mechanism::Ranges => {
            for run in have.chunk_by(|a, b| b == &(a + 1)) {
                p.extend(message(4, channel, run[0], Some(run[run.len() - 1])));
            }
        }
        Mechanism::CumulativeAndNaks => {
            p.extend(message(3, channel, below, None));
            let top = have.last().copied().unwrap_or(0);
            let gaps: Vec<u16> = (below..top).filter(|s| have.binary_search(s).is_err()).collect();
            for run in gaps.chunk_by(|a, b| b == &(a + 1)) {
                p.extend(message(5, channel, run[0], Some(run[run.len() - 1])));
            }
        }
    }
    p
}

/// Runs `n` sequences on each of two channels through a lossy path: `data_loss` and
/// `ack_loss` (per mille) drop datagrams before the capture. Returns the report's
/// `flows[0].stream_acks` and the data sequences lost per channel.
fn run(
    how: Mechanism,
    n: u16,
    data_loss: u32,
    ack_loss: u32,
    seed: u64,
) -> (serde_json::Value, [Vec<u16>; 2]) {
    let (c, s): (SocketAddr, SocketAddr) =
        ("10.0.0.1:5000".parse().unwrap(), "10.0.0.2:9000".parse().unwrap());
    let mut draw = common::per_mille(seed);
    let mut frames: Vec<(SocketAddr, SocketAddr, Vec<u8>)> = Vec::new();
    let mut got: [Vec<u16>; 2] = [Vec::new(), Vec::new()];
    let mut lost: [Vec<u16>; 2] = [Vec::new(), Vec::new()];
    for seq in 0..n {
        for ch in 0..2u8 {
            if draw(data_loss) {
                lost[ch as usize].push(seq);
            } else {
                let mut p = vec![0];
                p.extend(message(1, ch, seq, None));
                frames.push((c, s, p));
                got[ch as usize].push(seq);
            }
            if !draw(ack_loss)
                && let Some(&newest) = got[ch as usize].last()
                && newest == seq
            {
                frames.push((s, c, acks(how, ch, &got[ch as usize], newest)));
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("gpcap-ackprop-{}-{seed}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.pcap");
    let link = Link::Ethernet { vlan: None };
    let mut w = gpcap::capture::PcapWriter::new(
        std::fs::File::create(&path).unwrap(),
        link.linktype(),
        65535,
        true,
    )
    .unwrap();
    for (k, (src, dst, payload)) in frames.into_iter().enumerate() {
        let f = link.frame(&ip_packets(src, dst, &payload, k as u32, false, 1500)[0], false);
        w.write(
            1_700_000_000_000_000_000 + k as i64 * 1_000_000,
            &f,
            f.len() as u32,
        )
        .unwrap();
    }
    drop(w);
    let program = gpcap::compile_definition("acks.kdl", DEF).unwrap();
    let cfg = gpcap::Config::from_program(program);
    let report = gpcap::run::analyze(&[path], cfg, gpcap::Mode::Serial, &mut |_, _| {}).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let v = serde_json::to_value(report).unwrap();
    (v["flows"][0]["stream_acks"].clone(), lost)
}

fn mechanism() -> impl Strategy<Value = Mechanism> {
    prop_oneof![
        Just(Mechanism::Single),
        Just(Mechanism::Cumulative),
        Just(Mechanism::Ranges),
        Just(Mechanism::CumulativeAndNaks),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn acked_never_acked_and_in_flight_add_up_per_stream(
        how in mechanism(),
        n in 20u16..400,
        data_loss in 0u32..200,
        ack_loss in 0u32..300,
        seed in any::<u64>(),
    ) {
        let (streams, _) = run(how, n, data_loss, ack_loss, seed);
        for s in streams.as_array().unwrap() {
            let a = &s["acks"];
            let get = |k: &str| a[k].as_u64().unwrap();
            prop_assert_eq!(get("acked") + get("never_acked") + get("unacked_at_end"), get("sequences"), "{:?} {}", how, s);
            let by = &a["acked_by"];
            let sum: u64 = ["single", "bits", "cumulative", "ranges"].iter().map(|k| by[k].as_u64().unwrap()).sum();
            prop_assert_eq!(sum, get("acked"));
        }
    }

    /// With no ack lost, what was never acked (one by one, ranges) or NAKed (beside a
    /// cumulative ack) is exactly the data lost in the span the capture shows; a
    /// cumulative ack alone leaves what follows a gap in flight, never "never acked".
    #[test]
    fn without_lost_acks_the_data_lost_is_what_is_never_acked_or_naked(
        how in mechanism(),
        n in 20u16..300,
        data_loss in 0u32..200,
        seed in any::<u64>(),
    ) {
        let (streams, lost) = run(how, n, data_loss, 0, seed);
        for s in streams.as_array().unwrap() {
            let ch: usize = s["key"].as_str().unwrap().trim_start_matches("channel=").parse().unwrap();
            let received: Vec<u16> = (0..n).filter(|x| !lost[ch].contains(x)).collect();
            let (Some(&first), Some(&last)) = (received.first(), received.last()) else { continue };
            let in_span = lost[ch].iter().filter(|&&l| l > first && l < last).count() as u64;
            let a = &s["acks"];
            let get = |k: &str| a[k].as_u64().unwrap();
            match how {
                Mechanism::Single | Mechanism::Ranges => {
                    prop_assert_eq!((get("never_acked"), get("unacked_at_end")), (in_span, 0), "{:?} {}", how, s);
                }
                Mechanism::Cumulative => prop_assert_eq!(get("never_acked"), 0),
                Mechanism::CumulativeAndNaks => {
                    prop_assert_eq!((get("never_acked"), get("naked")), (0, in_span), "{:?} {}", how, s);
                }
            }
        }
    }
}
