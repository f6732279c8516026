//! Reassembly rules and attacks of SPEC §1, one test each with its counter and a memory
//! bound; known-loss captures against ground truth; the predicted-loss formula.

use gpcap::analysis::{Analyzer, Config, Report, predicted_loss};
use gpcap::capture::CaptureReader;
use gpcap::capture::PcapWriter;
use gpcap::reassembly::{Budget, FlowReassembly, FragmentIn, Outcome};
use gpcap::validate::HeaderFormat;
use gpcap::validate::article::{self, Body, PacketB};
use gpcap::validate::write_fragments;

fn fmt() -> HeaderFormat {
    HeaderFormat::default()
}

fn frag(sequence: u16, id: u32, count: u32, data: &[u8]) -> FragmentIn<'_> {
    FragmentIn {
        sequence,
        frame: 0,
        id,
        count,
        data,
        lead: 0,
    }
}

const FULL: [u8; 1024] = [7; 1024];

fn setup() -> (FlowReassembly, Budget, Vec<u8>) {
    (FlowReassembly::default(), Budget::new(64 << 20), Vec::new())
}

#[test]
fn completes_out_of_order() {
    let (mut r, mut b, mut out) = setup();
    assert_eq!(
        r.push(frag(5, 2, 3, &[1, 2]), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Stored
    );
    assert_eq!(
        r.push(frag(5, 0, 3, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Stored
    );
    assert_eq!(
        r.push(frag(5, 1, 3, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Complete { count: 3 }
    );
    assert_eq!(out.len(), 2050);
    assert_eq!(&out[2048..], &[1, 2]);
    // Only the completed marker is left (so late copies count as duplicates).
    assert!(b.used > 0 && b.used < 256, "{}", b.used);
    assert_eq!(r.by_count[&3].completed, 1);
    r.finish(&mut b);
    assert_eq!(b.used, 0);
}

#[test]
fn fragment_id_out_of_range() {
    let (mut r, mut b, mut out) = setup();
    assert_eq!(
        r.push(frag(1, 3, 3, &[1]), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Refused
    );
    assert_eq!(r.attacks.id_out_of_range, 1);
    assert_eq!(b.used, 0);
}

#[test]
fn many_flows_each_with_a_fragment_stay_within_the_budget() {
    let mut b = Budget::new(1 << 20);
    let mut out = Vec::new();
    let mut flows: Vec<FlowReassembly> = (0..2000).map(|_| FlowReassembly::default()).collect();
    for (i, r) in flows.iter_mut().enumerate() {
        for seq in 0..4u16 {
            r.push(
                frag(seq, 0, 2, &FULL[..512 + i % 100]),
                &fmt(),
                &mut b,
                &mut out,
                &mut Vec::new(),
            );
        }
    }
    // Each flow frees its own oldest when over; the caller evicts elsewhere for the rest.
    assert!(b.peak < (1 << 20) + 64 * 1024 * 4, "peak {}", b.peak);
    for r in &mut flows {
        r.finish(&mut b);
    }
    assert_eq!(b.used, 0);
}

#[test]
fn fragment_count_out_of_range() {
    let (mut r, mut b, mut out) = setup();
    assert_eq!(
        r.push(frag(1, 0, 0, &[1]), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Refused
    );
    let small = HeaderFormat {
        max_fragments: 16,
        ..fmt()
    };
    assert_eq!(
        r.push(frag(1, 0, 17, &FULL), &small, &mut b, &mut out, &mut Vec::new()),
        Outcome::Refused
    );
    assert_eq!(r.attacks.count_out_of_range, 2);
    assert_eq!(b.used, 0);
}

#[test]
fn fragment_count_changed_mid_packet() {
    let (mut r, mut b, mut out) = setup();
    r.push(frag(9, 0, 3, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new());
    assert_eq!(
        r.push(frag(9, 1, 4, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Refused
    );
    assert_eq!(r.attacks.count_changed, 1);
    assert!(b.used <= 2048);
}

#[test]
fn oversize_and_short_non_last() {
    let (mut r, mut b, mut out) = setup();
    assert_eq!(
        r.push(
            frag(1, 0, 2, &[0; 1025]),
            &fmt(),
            &mut b,
            &mut out,
            &mut Vec::new()
        ),
        Outcome::Refused
    );
    assert_eq!(r.attacks.oversize, 1);
    assert_eq!(
        r.push(
            frag(1, 0, 2, &[0; 1000]),
            &fmt(),
            &mut b,
            &mut out,
            &mut Vec::new()
        ),
        Outcome::Refused
    );
    assert_eq!(r.attacks.short_non_last, 1);
    // The last fragment may be short.
    assert_eq!(
        r.push(frag(1, 1, 2, &[0; 10]), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Stored
    );
    assert_eq!(b.used, r.bytes_held);
}

#[test]
fn duplicate_fragment() {
    let (mut r, mut b, mut out) = setup();
    r.push(frag(2, 0, 2, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new());
    assert_eq!(
        r.push(frag(2, 0, 2, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Refused
    );
    assert_eq!(r.attacks.duplicate, 1);
    assert!(b.used <= 2048, "the duplicate is not stored");
}

#[test]
fn stale_fragment_and_eviction() {
    let (mut r, mut b, mut out) = setup();
    r.push(frag(10, 0, 2, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new());
    // 256 newer: entry 10 is now too old and is evicted incomplete.
    r.push(frag(266, 0, 2, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new());
    assert_eq!(r.attacks.evicted_incomplete, 1);
    assert_eq!(
        r.push(frag(10, 1, 2, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Refused
    );
    assert_eq!(r.attacks.stale, 1);
    assert_eq!(r.by_count[&2].seen, 2);
    assert_eq!(r.by_count[&2].bytes_wasted, 1024);
    r.finish(&mut b);
    assert_eq!(r.attacks.incomplete_at_end, 1);
    assert_eq!(b.used, 0);
}

#[test]
fn flood_of_256_by_256_fragments_stays_bounded() {
    let limit = 16 << 20;
    let mut b = Budget::new(limit);
    let mut r = FlowReassembly::default();
    let mut out = Vec::new();
    // Every sequence 255 of 256 fragments: nothing ever completes.
    for seq in 0..256u16 {
        for id in 0..255u32 {
            r.push(
                frag(seq, id, 256, &FULL),
                &fmt(),
                &mut b,
                &mut out,
                &mut Vec::new(),
            );
        }
    }
    assert!(b.peak <= limit + 2 * 1024 * 256, "peak {}", b.peak);
    assert!(r.attacks.evicted_for_memory > 0);
    assert_eq!(r.by_count[&256].completed, 0);
    r.finish(&mut b);
    assert_eq!(b.used, 0);
}

#[test]
fn predicted_loss_formula() {
    let round = |x: f64| (x * 1000.0).round() / 10.0;
    assert_eq!(round(predicted_loss(0.01, 2)), 2.0);
    assert_eq!(round(predicted_loss(0.01, 10)), 9.6);
    assert_eq!(round(predicted_loss(0.01, 100)), 63.4);
    assert_eq!(round(predicted_loss(0.01, 256)), 92.4);
}

/// A capture with known loss, made with the shared writer: 200 packets of 5 fragments
/// where fragment 2 of every 10th packet is dropped, and 400 single datagrams where
/// every 100th is dropped.
fn lossy_capture() -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), 101, 65535, false).unwrap();
    let mut t = 0i64;
    let mut write = |w: &mut PcapWriter<Vec<u8>>, sport: u16, payload: &[u8]| {
        let b = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(sport, 50000);
        let mut v = Vec::new();
        b.write(&mut v, payload).unwrap();
        t += 1_000_000;
        w.write(t, &v, v.len() as u32).unwrap();
    };
    for seq in 0..200u16 {
        let body = Body::B(PacketB {
            items: (0..4500).map(|i| (i % 200) - 100).collect(),
        });
        let packet = article::write_packet(seq, &body).unwrap();
        let frags = write_fragments(article::PROTOCOL_ID, &article::format(), seq, &packet).unwrap();
        assert_eq!(frags.len(), 5, "{} bytes", packet.len());
        for (i, f) in frags.iter().enumerate() {
            if seq % 10 == 3 && i == 2 {
                continue;
            }
            write(&mut w, 40000, f);
        }
    }
    for seq in 0..400u16 {
        if seq % 100 == 50 {
            continue;
        }
        let p = article::write_packet(seq, &Body::A(Default::default())).unwrap();
        write(&mut w, 40001, &p);
    }
    w.into_inner()
}

fn analyze(bytes: Vec<u8>) -> Report {
    let mut a = Analyzer::new(Config {
        protocol_id: Some(article::PROTOCOL_ID),
        ports: vec![50000],
        ..Config::default()
    });
    let mut r = CaptureReader::from_read("lossy", std::io::Cursor::new(bytes)).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    a.finish()
}

#[test]
fn known_loss_equals_ground_truth() {
    let r = analyze(lossy_capture());
    let x = &r.reassembly;
    assert_eq!(x.packets_seen, 200);
    assert_eq!(x.completed, 180);
    assert_eq!(x.dissected_ok, 180);
    assert_eq!(x.fragments_expected, 1000);
    assert_eq!(x.fragments_received, 980);
    assert_eq!(x.fragment_loss, 0.02);
    assert_eq!(x.rows.len(), 1);
    let row = &x.rows[0];
    assert_eq!(
        (row.fragments, row.seen, row.completed, row.lost),
        (5, 200, 180, 20)
    );
    assert_eq!(row.observed_loss, 0.1);
    assert!((row.predicted_loss - predicted_loss(0.02, 5)).abs() < 1e-12);
    let body = Body::B(PacketB {
        items: (0..4500).map(|i| (i % 200) - 100).collect(),
    });
    let len = article::write_packet(0, &body).unwrap().len() as u64;
    assert_eq!(row.bytes_wasted, 20 * (len - 1024));
    assert_eq!(x.attacks.incomplete_at_end + x.attacks.evicted_incomplete, 20);
    // The single-datagram flow lost 4 of 400: 1%.
    let single = r.flows.iter().find(|f| f.src.port() == 40001).unwrap();
    assert_eq!((single.seq.received, single.seq.lost), (396, 4));
    insta::assert_snapshot!("lossy_reassembly", gpcap::present::tables::render_reassembly(&r));
}

/// Oversize packets sent just before each loss burst are reported as clustering there.
#[test]
fn oversize_packets_cluster_before_bursts() {
    let mut w = PcapWriter::new(Vec::new(), 101, 65535, false).unwrap();
    let mut seq = 0u16;
    let mut t = 0i64;
    for burst in 0..5 {
        for k in 0..120 {
            // The last 10 datagrams before each burst are over the 1200-byte budget.
            let items = if k >= 110 { 1300 } else { 10 };
            let p = article::write_packet(
                seq,
                &Body::B(PacketB {
                    items: vec![1; items],
                }),
            )
            .unwrap();
            let b = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(40000, 50000);
            let mut v = Vec::new();
            b.write(&mut v, &p).unwrap();
            t += 16_666_667;
            w.write(t, &v, v.len() as u32).unwrap();
            seq += 1;
        }
        let _ = burst;
        seq += 4; // four sequences lost
    }
    let r = analyze(w.into_inner());
    let b = &r.mtu.bursts;
    assert_eq!(b.bursts, 4, "the fifth run has no burst after it");
    // 60 datagrams in the second before each burst, 10 of them oversize.
    assert_eq!(b.before_count, 4 * 59);
    assert!(
        (b.before_over_budget - 40.0 / 236.0).abs() < 1e-9,
        "{}",
        b.before_over_budget
    );
    assert!(
        b.finding
            .as_ref()
            .map(|f| f.to_string())
            .unwrap_or_default()
            .starts_with("oversize packets cluster before loss bursts")
    );
}

#[test]
fn late_copy_of_a_completed_packet_is_a_duplicate() {
    let (mut r, mut b, mut out) = setup();
    r.push(frag(4, 0, 2, &FULL), &fmt(), &mut b, &mut out, &mut Vec::new());
    assert_eq!(
        r.push(frag(4, 1, 2, &[1]), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Complete { count: 2 }
    );
    assert_eq!(
        r.push(frag(4, 1, 2, &[1]), &fmt(), &mut b, &mut out, &mut Vec::new()),
        Outcome::Refused
    );
    assert_eq!(r.attacks.duplicate, 1);
    r.finish(&mut b);
    assert_eq!(
        (
            r.by_count[&2].seen,
            r.by_count[&2].completed,
            r.attacks.incomplete_at_end
        ),
        (1, 1, 0)
    );
}
