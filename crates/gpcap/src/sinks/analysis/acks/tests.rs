//! Exact figures of small ack scenarios.

use super::*;

#[test]
fn acks_settle_sequences_and_time_round_trips() {
    let mut t = AckTracker::default();
    for s in [10u64, 11, 13, 14] {
        t.sent(s, s as i64 * 1_000_000);
    }
    // The peer got 10, 11 and 14 (12 never sent, 13 lost after the capture).
    t.acked(14, 16, 0b1_1001, 20_000_000, Some(0));
    let a = t.finish().unwrap();
    assert_eq!(
        (a.sequences, a.acked, a.never_acked, a.unacked_at_end),
        (5, 3, 2, 0)
    );
    assert_eq!(a.never_acked_runs, vec![(12, 13)]);
    let rtt = a.rtt_ms.unwrap();
    assert_eq!((rtt.samples, rtt.min, rtt.max), (3, 6.0, 10.0));
}

#[test]
fn unacked_tail_is_not_loss_and_wrap_is_followed() {
    let mut t = AckTracker::default();
    for s in [65534u64, 65535, 0, 1] {
        t.sent(s, 0);
    }
    t.acked(65535, 16, 0b11, 1_000, None);
    let a = t.finish().unwrap();
    assert_eq!(
        (a.sequences, a.acked, a.never_acked, a.unacked_at_end),
        (4, 2, 0, 2)
    );
}

/// Regression (row 16): 8-bit sequences and acks, 600 a side, each acked: the ack
/// analysis stopped at the first wrap (256 sequences, 256 acked).
#[test]
fn acks_wrap_at_the_sequence_width() {
    let mut t = AckTracker::new(8);
    for s in 0..600u64 {
        t.sent(s & 0xff, s as i64 * 10_000_000);
        t.acked(s & 0xff, 8, u32::MAX, s as i64 * 10_000_000 + 5_000_000, None);
    }
    let a = t.finish().unwrap();
    assert_eq!((a.sequences, a.acked, a.never_acked), (600, 600, 0));
    assert_eq!(a.rtt_ms.unwrap().samples, 600);
}

/// Regression (row 03): a direction whose peer sent nothing was "never acked 976,
/// ack-implied loss 100%". Nothing acked it, so nothing is judged.
#[test]
fn no_figures_without_a_peer_that_acks() {
    let mut t = AckTracker::default();
    for s in 0..2000u64 {
        t.sent(s, s as i64);
    }
    assert_eq!(t.finish(), None);
}

/// Regression (row 18): an ack timestamped 500 s before its packet was a 0.0 ms round
/// trip; it is left out and counted.
#[test]
fn an_ack_before_its_packet_is_no_round_trip() {
    let mut t = AckTracker::default();
    t.sent(1, 1_000_000_000_000);
    t.acked(1, 16, 1, 500_000_000_000, None);
    let a = t.finish().unwrap();
    assert_eq!((a.acked, a.rtt_before_sent, a.rtt_ms), (1, 1, None));
}

/// Regression (row 11): every tracked flow held a 1024-slot ring (24 KB) from its
/// first datagram. The window grows with the sequences sent, to 8.3 KB at most.
#[test]
fn the_window_grows_with_the_flow_and_stays_bounded() {
    let mut t = AckTracker::default();
    t.sent(7, 0);
    assert!(
        t.heap_bytes() <= size_of::<AckTracker>() + 40,
        "{}",
        t.heap_bytes()
    );
    for s in 0..100_000u64 {
        t.sent(s & 0xffff, s as i64);
        if s % 3 == 0 {
            t.acked(s & 0xffff, 16, 0b111, s as i64 + 1, Some((s / 1000) as u32));
        }
    }
    assert!(
        t.heap_bytes() <= size_of::<AckTracker>() + 8 * 1024 + 4 * 128 + 100 * 48 + 256 * 16 + 24 * 101,
        "{}",
        t.heap_bytes()
    );
    let a = t.finish().unwrap();
    // 0..=6 came after 7, older: the counted span starts at 7.
    assert_eq!(a.sequences, 100_000 - 7);
    assert_eq!(a.acked + a.never_acked + a.unacked_at_end, a.sequences);
}

#[test]
fn kept_verdicts_are_found_by_sequence_and_time() {
    let mut t = AckTracker::default();
    t.keep_log();
    for s in [10u64, 11, 12] {
        t.sent(s, s as i64 * 1_000_000);
    }
    t.acked(12, 16, 0b101, 20_000_000, None);
    let (stats, log) = t.finish_logged();
    assert_eq!(stats.unwrap().never_acked, 1);
    let flow = gpcap_engine::FlowId {
        src: "10.0.0.1:1".parse().unwrap(),
        dst: "10.0.0.2:2".parse().unwrap(),
    };
    let mut facts = AckFacts::default();
    facts.add(flow, log);
    assert_eq!(facts.of(flow, 10, 10_000_000), Some(10_000));
    assert_eq!(facts.of(flow, 11, 11_000_000), Some(Settled::NEVER));
    assert_eq!(facts.of(flow, 12, 12_000_000), Some(8_000));
    // Before its first datagram, or a number never used: nothing settled.
    assert_eq!(facts.of(flow, 12, 1), None);
    assert_eq!(facts.of(flow, 13, 13_000_000), None);
}

/// Each copy's verdict: a resend of what was acked is a spurious retransmission, one
/// of what was NAKed a plain one; a NAK holds for every copy of that use of the number,
/// and not for its next use after the sequence wrapped.
#[test]
fn copies_and_naks_are_found_by_their_copy() {
    let ms = 1_000_000;
    let mut t = AckTracker::new(8);
    t.keep_log();
    for s in 0..3u64 {
        t.sent(s, (s as i64 + 1) * ms);
    }
    t.naked_range(1, 1, 8);
    t.acked_one(0, 8, 4 * ms, None);
    t.sent(0, 5 * ms);
    t.sent(1, 6 * ms);
    t.acked_range(1, 2, 8, 9 * ms, None, None);
    // The numbers wrap: 1 is used again, not NAKed this time.
    for s in 3..=257u64 {
        t.sent(s & 0xff, (s as i64 + 10) * ms);
        t.acked_one(s & 0xff, 8, (s as i64 + 10) * ms + 500, None);
    }
    let (stats, log) = t.finish_logged();
    let a = stats.unwrap();
    assert_eq!(
        (a.retransmissions, a.spurious_retransmissions, a.naked),
        (2, 1, 1)
    );
    let flow = gpcap_engine::FlowId {
        src: "10.0.0.1:1".parse().unwrap(),
        dst: "10.0.0.2:2".parse().unwrap(),
    };
    let mut facts = AckFacts::default();
    facts.add(flow, log);
    let v = |seq, at| facts.verdict(flow, seq, at);
    assert_eq!(
        v(0, ms),
        CopyVerdict {
            fate: Some(3_000),
            naked: false,
            copy: None
        }
    );
    assert_eq!(v(0, 5 * ms).copy, Some(true));
    assert_eq!((v(1, 2 * ms).naked, v(1, 2 * ms).copy), (true, None));
    assert_eq!((v(1, 6 * ms).naked, v(1, 6 * ms).copy), (true, Some(false)));
    // The wrapped use of 1: acked 500 ns after (0 µs), neither NAKed nor a copy.
    let later = (257 + 10) * ms;
    assert_eq!(
        v(1, later),
        CopyVerdict {
            fate: Some(0),
            naked: false,
            copy: None
        }
    );
}

/// KCP's `una` beside its ACKs: the ACK of 2 was lost, a later cumulative ack
/// covers it; a resent copy after its ack is spurious.
#[test]
fn cumulative_acks_cover_what_single_acks_missed() {
    let mut t = AckTracker::new(32);
    for s in 0..5u64 {
        t.sent(s, s as i64 * 1_000_000);
    }
    for s in [0u64, 1, 3] {
        t.acked_one(s, 32, 10_000_000 + s as i64, None);
    }
    t.acked_cumulative(4, 32, false, 12_000_000, None, None);
    t.sent(1, 13_000_000);
    let a = t.finish().unwrap();
    assert_eq!((a.acked, a.never_acked, a.unacked_at_end), (4, 0, 1));
    assert_eq!(
        a.acked_by,
        AckedBy {
            single: 3,
            bits: 0,
            cumulative: 1,
            ranges: 0
        }
    );
    assert_eq!(
        (a.acks_lost, a.retransmissions, a.spurious_retransmissions),
        (1, 1, 1)
    );
    // Only one-by-one acks are timed beside a cumulative one.
    assert_eq!(a.rtt_ms.unwrap().samples, 3);
    assert_eq!(a.rtt_source.as_deref(), Some("first copies"));
}

/// A TCP-like peer acking only cumulatively: the newest covered is timed, unless
/// it was resent (Karn).
#[test]
fn cumulative_only_times_the_newest_covered_once_sent() {
    let mut t = AckTracker::new(16);
    for s in 0..4u64 {
        t.sent(s, 0);
    }
    t.sent(3, 1_000_000);
    t.acked_cumulative(2, 16, true, 5_000_000, None, None);
    t.acked_cumulative(3, 16, true, 6_000_000, None, None);
    let a = t.finish().unwrap();
    assert_eq!((a.acked, a.acked_by.cumulative, a.acks_lost), (4, 4, 0));
    assert_eq!(a.rtt_ms.unwrap().samples, 1);
}

/// Ranges acked and NAKed (RakNet's ACK and NAK records): a NAKed sequence never
/// acked is data lost, and said so; a NAK of what was never sent is counted.
#[test]
fn ranges_and_naks_settle_sequences() {
    let mut t = AckTracker::new(24);
    for s in 10..20u64 {
        t.sent(s, 0);
    }
    t.acked_range(10, 13, 24, 1_000, None, None);
    t.naked_range(14, 15, 24);
    t.sent(14, 2_000);
    t.acked_range(14, 14, 24, 3_000, None, None);
    t.acked_range(16, 19, 24, 4_000, None, None);
    t.naked_range(25, 30, 24);
    t.acked_range(18, 40, 24, 5_000, None, None);
    let a = t.finish().unwrap();
    assert_eq!((a.acked, a.never_acked, a.naked), (9, 1, 2));
    assert_eq!(a.acked_by.ranges, 9);
    assert_eq!(
        (a.never_acked_resent_or_naked, a.naks_of_unsent, a.acks_of_unsent),
        (1, 1, 1)
    );
    assert_eq!(a.never_acked_runs, vec![(15, 15)]);
}

/// Hostile acks: a cumulative ack 2^31 ahead, a range over the whole space, a
/// range backwards, a million ranges — bounded work, counted, never a panic.
#[test]
fn hostile_acks_cost_the_window_and_are_counted() {
    let mut t = AckTracker::new(32);
    for s in 0..100u64 {
        t.sent(s, s as i64);
    }
    t.acked_cumulative(1 << 31, 32, false, 1_000, None, None);
    t.acked_range(5, 3, 32, 1_000, None, None);
    t.acked_range(0, u32::MAX as u64, 32, 1_000, None, None);
    for i in 0..1_000_000u64 {
        t.acked_range(i, i + 5, 32, 2_000, None, None);
        t.naked_range(i, i + 1_000_000, 32);
    }
    assert!(t.heap_bytes() < 64 << 10, "{}", t.heap_bytes());
    let a = t.finish().unwrap();
    assert_eq!(a.acked + a.never_acked + a.unacked_at_end, a.sequences);
    assert!(a.acks_of_unsent >= 1 && a.naks_of_unsent >= 1_000_000 - 100);
}

#[test]
fn buckets_hold_their_values() {
    for us in [0u64, 31, 32, 33, 1000, 123_456, 10_000_000] {
        let v = bucket_value(bucket_of(us));
        assert!((v - us as f64).abs() <= us as f64 * 0.02 + 0.5, "{us} -> {v}");
    }
}
