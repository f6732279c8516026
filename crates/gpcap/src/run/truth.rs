//! Compares an analysis report with the generator's ground truth, number by number.

use crate::sinks::analysis::Report;
use gpcap_generate::sim::Truth;

/// Every disagreement, as `flow: what: expected X, reported Y`; empty when they agree.
pub fn compare(truth: &Truth, r: &Report) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut eq = |what: String, expected: u64, got: u64| {
        if expected != got {
            diffs.push(format!("{what}: expected {expected}, reported {got}"));
        }
    };
    eq("frames".into(), truth.frames, r.capture.frames);
    eq("icmp".into(), truth.icmp, r.mtu.icmp_total);
    eq("other udp".into(), truth.other_udp, r.capture.other_udp);
    for (name, t) in &truth.flows {
        let Some(f) = r.flows.iter().find(|f| format!("{}>{}", f.src, f.dst) == *name) else {
            eq(format!("{name}: flow present"), 1, 0);
            continue;
        };
        eq(format!("{name}: datagrams"), t.datagrams, f.datagrams);
        eq(format!("{name}: crc ok"), t.crc_ok, f.crc_ok);
        eq(format!("{name}: crc fail"), t.crc_fail, f.crc_fail);
        eq(format!("{name}: ip-fragmented"), t.ip_fragmented, f.ip_fragmented);
        eq(format!("{name}: malformed"), t.malformed, f.malformed);
        if t.crc_ok > 0 {
            eq(format!("{name}: received"), t.received, f.seq.received);
            eq(format!("{name}: lost"), t.lost, f.seq.lost);
            eq(format!("{name}: duplicates"), t.duplicates, f.seq.duplicates);
            eq(format!("{name}: late"), t.late, f.seq.late);
            eq(format!("{name}: fragments"), t.fragments, f.fragments);
        }
        for (n, (seen, completed)) in &t.reassembly {
            let got = f
                .reassembly
                .get(n)
                .map(|c| (c.seen, c.completed))
                .unwrap_or((0, 0));
            eq(format!("{name}: {n}-fragment packets seen"), *seen, got.0);
            eq(
                format!("{name}: {n}-fragment packets completed"),
                *completed,
                got.1,
            );
        }
        for (n, c) in &f.reassembly {
            if !t.reassembly.contains_key(n) {
                eq(format!("{name}: {n}-fragment packets seen"), 0, c.seen);
            }
        }
    }
    if let Some(a) = &truth.attacks {
        let got = &r.reassembly.attacks;
        eq(
            "attack: id out of range".into(),
            a.id_out_of_range,
            got.id_out_of_range,
        );
        eq(
            "attack: count out of range".into(),
            a.count_out_of_range,
            got.count_out_of_range,
        );
        eq("attack: count changed".into(), a.count_changed, got.count_changed);
        eq("attack: oversize".into(), a.oversize, got.oversize);
        eq(
            "attack: short non-last".into(),
            a.short_non_last,
            got.short_non_last,
        );
        eq("attack: stale".into(), a.stale, got.stale);
    }
    // Network duplicates of fragments land in the duplicate-fragment counter too.
    let attack_dups = truth.attacks.as_ref().map_or(0, |a| a.duplicate);
    eq(
        "duplicate fragments".into(),
        attack_dups + truth.fragment_duplicates,
        r.reassembly.attacks.duplicate,
    );
    diffs
}
