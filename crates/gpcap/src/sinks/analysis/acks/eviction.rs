//! The eviction word by word against the sequence-at-a-time loop it replaced: the same
//! tracker after any mix of steps, jumps past the window, acks and wraps, with and
//! without the log, before and after the list of runs fills.

use super::*;
use proptest::prelude::*;

/// `AckTracker::sent` as it was: each skipped slot settled and cleared in turn.
fn sent_one_by_one(t: &mut AckTracker, s: u64, ts_ns: i64) {
    let s = s & t.mask();
    let Some(first) = t.first else {
        return t.sent(s, ts_ns);
    };
    let ext = t.extend(s, t.bits);
    if ext > t.highest {
        let most = if t.peer_acks { WINDOW } else { UNACKED_WINDOW };
        t.grow((ext - first + 1).min(most));
        let len = t.sent_ns.len() as i128;
        let from = (t.highest + 1).max(ext - len + 1);
        if from > t.highest + 1 {
            t.settle_run(t.highest + 1, from - 1);
        }
        for k in from..=ext {
            let old = k - len;
            let i = t.index(k);
            if old >= first && !t.is_acked(old) {
                t.settle_run(old, old);
                t.log(old, t.sent_ns[t.index(old)], Settled::NEVER);
                if AckTracker::bit(&t.naked, i) || AckTracker::bit(&t.resent, i) {
                    t.stats.never_acked_resent_or_naked += 1;
                }
            }
            if old >= first
                && t.individual
                && t.is_acked(old)
                && !AckTracker::bit(&t.named, i)
                && t.sent_ns[i] != NOT_CAPTURED
            {
                t.stats.acks_lost += 1;
            }
            t.sent_ns[i] = NOT_CAPTURED;
            t.set_acked(k, false);
            t.naked[i / 64] &= !(1 << (i % 64));
            t.resent[i / 64] &= !(1 << (i % 64));
            t.named[i / 64] &= !(1 << (i % 64));
        }
        t.stats.sequences = t.stats.sequences.saturating_add((ext - t.highest) as u64);
        t.highest = ext;
    }
    if ext > t.highest - t.sent_ns.len() as i128 && ext >= first {
        let i = t.index(ext);
        if t.sent_ns[i] == NOT_CAPTURED {
            t.sent_ns[i] = ts_ns;
        } else {
            t.copy_of(i, ext, ts_ns);
        }
    }
}

/// Steps: (kind, value): a sequence a little ahead or behind, one anywhere, an ack
/// near the newest with random bits.
fn run(bits: u32, log: bool, steps: &[(u8, u64, u32)]) {
    let (mut new, mut old) = (AckTracker::new(bits), AckTracker::new(bits));
    if log {
        new.keep_log();
        old.keep_log();
    }
    let mut seq = 0u64;
    for (n, &(kind, v, b)) in steps.iter().enumerate() {
        let ts = n as i64 * 1_000_000;
        match kind % 4 {
            0 => seq = seq.wrapping_add(v % 40),
            1 => seq = v,
            2 => seq = seq.wrapping_sub(v % 8),
            _ => {
                let ack = seq.wrapping_sub(v % 4);
                new.acked(ack, bits, b, ts, Some(n as u32));
                old.acked(ack, bits, b, ts, Some(n as u32));
                continue;
            }
        }
        new.sent(seq, ts);
        sent_one_by_one(&mut old, seq, ts);
        assert_eq!(format!("{new:?}"), format!("{old:?}"), "step {n}");
    }
    assert_eq!(new.finish_logged(), old.finish_logged());
}

proptest! {
    #[test]
    fn word_by_word_is_one_by_one(
        bits in prop::sample::select(vec![1u32, 3, 8, 12, 16, 32, 64]),
        log: bool,
        steps in prop::collection::vec((0u8..4, any::<u64>(), any::<u32>()), 0..300),
    ) {
        run(bits, log, &steps);
    }
}

/// Past the 256 runs listed: jumps whose never-acked runs meet the last one listed.
#[test]
fn full_runs_grow_as_one_by_one() {
    for bits in [8u32, 10, 16] {
        let mut steps = Vec::new();
        for n in 0..2_000u64 {
            steps.push((1, n * 1_500 + n % 7, 0));
            steps.push((3, n % 3, 0x5555_5555 ^ n as u32));
            steps.push((0, n % 40, 0));
        }
        run(bits, bits != 10, &steps);
    }
}
