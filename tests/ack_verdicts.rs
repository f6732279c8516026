//! Each message's ack verdict (`retransmission`, `spurious`, `naked`, `never_acked`,
//! `rtt`) in `dissect --jsonl`, `--brief` and display filters, on generated traffic with
//! losses after the capture point, cumulative acks with NAKs of the gaps, resends of
//! what was NAKed and resends of what was already acked: per stream the counts are the
//! traffic's own, are what `analyze`'s ack table says, and are the same on 1 and 3
//! threads.

mod common;

use common::{gpcap_ok as gpcap, udp_capture};
use proptest::prelude::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

const DEF: &str = r#"protocol "acks" { ports 9000; checksum "none"; }
header { bits n 8; }
messages {
    bits kind 8 role=type
    bits channel 8
}
message 1 "push" { bits seq 16 role=sequence stream="s" key="channel"; }
message 3 "below" { bits u 16 role=ack-below stream="s" key="channel"; }
message 5 "nak" { bits a 16 role=nak-range-start stream="s" key="channel"; bits b 16 role=nak-range-end; }
"#;

fn message(kind: u8, channel: u8, a: u16, b: Option<u16>) -> Vec<u8> {
    let mut m = vec![kind, channel];
    m.extend_from_slice(&a.to_le_bytes());
    if let Some(b) = b {
        m.extend_from_slice(&b.to_le_bytes());
    }
    m
}

/// Datagrams as (source, destination, payload).
type Frames = Vec<(SocketAddr, SocketAddr, Vec<u8>)>;

/// What the generated traffic did per channel: copies sent beyond each sequence's first,
/// of those sent after a captured ack covered them, sequences NAKed in captured acks.
#[derive(Debug, Default, PartialEq, Eq)]
struct Truth {
    resent: u64,
    spurious: u64,
    naked: BTreeSet<u16>,
}

/// One channel's traffic, `n` sequences: each copy reaches the receiver unless lost after
/// the capture point (`loss` per mille); each copy that arrives is answered by an ack
/// (everything below the first missing, NAKs of the gaps) that the capture misses
/// `ack_loss` per mille of; the sender resends what a captured ack NAKs, and now and
/// then (`spurious` per mille) a sequence already acked.
fn traffic(n: u16, loss: u32, ack_loss: u32, spurious: u32, seed: u64) -> (Frames, [Truth; 2]) {
    let (c, s): (SocketAddr, SocketAddr) =
        ("10.0.0.1:5000".parse().unwrap(), "10.0.0.2:9000".parse().unwrap());
    let mut draw = common::per_mille(seed);
    let mut frames = Vec::new();
    let mut truth: [Truth; 2] = Default::default();
    let mut have: [BTreeSet<u16>; 2] = Default::default();
    let mut sent: [BTreeSet<u16>; 2] = Default::default();
    // Below this, a captured ack covered everything.
    let mut acked_below = [0u16; 2];
    let mut queue: [Vec<u16>; 2] = Default::default();
    for seq in 0..n {
        for ch in 0..2u8 {
            let k = ch as usize;
            let mut copies = vec![seq];
            copies.append(&mut queue[k]);
            if draw(spurious) && acked_below[k] > 0 {
                copies.push(acked_below[k] - 1);
            }
            for q in copies {
                let t = &mut truth[k];
                if !sent[k].insert(q) {
                    t.resent += 1;
                    t.spurious += u64::from(q < acked_below[k]);
                }
                let mut p = vec![0];
                p.extend(message(1, ch, q, None));
                frames.push((c, s, p));
                if draw(loss) {
                    continue;
                }
                have[k].insert(q);
                let below = (0..).find(|x| !have[k].contains(x)).unwrap();
                let top = *have[k].last().unwrap();
                let gaps: Vec<u16> = (below..top).filter(|x| !have[k].contains(x)).collect();
                let mut a = vec![0];
                a.extend(message(3, ch, below, None));
                for run in gaps.chunk_by(|a, b| b == &(a + 1)) {
                    a.extend(message(5, ch, run[0], Some(run[run.len() - 1])));
                }
                if draw(ack_loss) {
                    continue;
                }
                frames.push((s, c, a));
                acked_below[k] = acked_below[k].max(below);
                for g in gaps {
                    t.naked.insert(g);
                    if !queue[k].contains(&g) {
                        queue[k].push(g);
                    }
                }
            }
        }
    }
    (frames, truth)
}

/// Per channel, from `dissect --jsonl`: messages that are retransmissions, spurious,
/// the distinct sequences NAKed, those never acked, messages timed.
fn verdicts(jsonl: &str) -> BTreeMap<String, [u64; 5]> {
    type Seqs = BTreeSet<u64>;
    let mut by: BTreeMap<String, ([u64; 5], Seqs, Seqs)> = BTreeMap::new();
    for l in jsonl.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        for m in v.get("streams").and_then(Value::as_array).into_iter().flatten() {
            let (c, naked, never) = by.entry(m["key"].as_str().unwrap().to_string()).or_default();
            c[0] += u64::from(m.get("retransmission").is_some());
            c[1] += u64::from(m.get("spurious").is_some());
            if m.get("naked").is_some() {
                naked.insert(m["sequence"].as_u64().unwrap());
            }
            if m["acked"] == false {
                never.insert(m["sequence"].as_u64().unwrap());
            }
            c[4] += u64::from(m.get("rtt_ms").is_some());
        }
    }
    by.into_iter()
        .map(|(k, (mut c, naked, never))| {
            c[2] = naked.len() as u64;
            c[3] = never.len() as u64;
            (k, c)
        })
        .collect()
}

fn check(n: u16, loss: u32, ack_loss: u32, spurious: u32, seed: u64) {
    let dir = std::env::temp_dir().join(format!("gpcap-ackverdicts-{}-{seed}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (capture, def) = (dir.join("c.pcap"), dir.join("acks.kdl"));
    let (frames, truth) = traffic(n, loss, ack_loss, spurious, seed);
    udp_capture(&capture, frames);
    std::fs::write(&def, DEF).unwrap();
    let (capture, def) = (capture.to_str().unwrap(), def.to_str().unwrap());
    let one = gpcap(&["dissect", "-d", def, capture, "--jsonl", "--threads", "1"]);
    let three = gpcap(&["dissect", "-d", def, capture, "--jsonl", "--threads", "3"]);
    assert_eq!(one, three, "1 and 3 threads");
    let report: Value = serde_json::from_str(&gpcap(&["analyze", "-d", def, capture, "--json"])).unwrap();
    let got = verdicts(&one);
    let mut flagged = [0u64; 3];
    for s in report["flows"][0]["stream_acks"].as_array().unwrap() {
        let key = s["key"].as_str().unwrap();
        let ch: usize = key.trim_start_matches("channel=").parse().unwrap();
        let a = &s["acks"];
        let c = got[key];
        let t = &truth[ch];
        assert_eq!(
            (c[0], c[1]),
            (t.resent, t.spurious),
            "{key}: retransmissions, spurious"
        );
        assert_eq!(c[2], t.naked.len() as u64, "{key}: NAKed");
        assert_eq!(
            [c[0], c[1], c[2], c[3]],
            [
                "retransmissions",
                "spurious_retransmissions",
                "naked",
                "never_acked"
            ]
            .map(|k| a[k].as_u64().unwrap()),
            "{key}: as analyze counts"
        );
        for (f, x) in flagged.iter_mut().zip(c) {
            *f += x;
        }
    }
    // Each push datagram carries one message: the filters select as many datagrams.
    for (word, n) in ["retransmission", "spurious"].iter().zip(flagged) {
        let out = gpcap(&["dissect", "-d", def, capture, "--filter", word, "--brief"]);
        assert_eq!(out.lines().count() as u64, n, "{word}");
        assert!(out.lines().all(|l| l.contains(&format!(" {word}"))), "{out}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_lossy_exchange_with_naks_and_resends() {
    check(300, 80, 100, 30, 7);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    #[test]
    fn verdicts_are_the_traffics_and_analyzes(
        n in 20u16..300,
        loss in 0u32..200,
        ack_loss in 0u32..300,
        spurious in 0u32..100,
        seed in any::<u64>(),
    ) {
        check(n, loss, ack_loss, spurious, seed);
    }
}
