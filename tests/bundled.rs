//! The bundled captures (made by scripts/make-captures): `analyze` agrees with each one's
//! ground truth exactly, and its tables are golden snapshots.

use gpcap::analysis::{Analyzer, Config, Report};
use gpcap::capture::CaptureReader;
use gpcap::dissect;
use gpcap::generate::sim::{SimConfig, Truth, simulate};
use gpcap::run::truth::compare;
use std::path::Path;
use std::sync::Arc;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn analyze(capture: &str, definition: &str) -> (Report, Truth) {
    let p = Arc::new(dissect::load(&root().join("dissectors").join(definition)).unwrap());
    let mut a = Analyzer::new(Config::from_program(p));
    let path = root().join("captures").join(capture);
    let mut r = CaptureReader::open(&path).unwrap();
    a.begin_file(capture);
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    let truth_text =
        std::fs::read_to_string(root().join("captures").join(format!("{capture}.truth.jsonl"))).unwrap();
    let truth: Truth = serde_json::from_str(truth_text.lines().last().unwrap()).unwrap();
    (a.finish(), truth)
}

macro_rules! bundled {
    ($test:ident, $capture:expr, $definition:expr) => {
        #[test]
        fn $test() {
            let (report, truth) = analyze($capture, $definition);
            let diffs = compare(&truth, &report);
            assert!(diffs.is_empty(), "{}", diffs.join("\n"));
            insta::assert_snapshot!(gpcap::present::tables::render(&report));
        }
    };
}

bundled!(clean, "clean.pcap", "article.kdl");
bundled!(lossy_bursts, "lossy-bursts.pcap", "article.kdl");
bundled!(mtu_ignored, "mtu-ignored.pcap", "article.kdl");
bundled!(mtu_df, "mtu-df.pcap", "article.kdl");
bundled!(attacks, "attacks.pcap", "article.kdl");
bundled!(ipv6_sll2, "ipv6-sll2.pcapng", "example-shooter.kdl");
bundled!(vlan_corrupt, "vlan-corrupt.pcap", "example-shooter.kdl");
bundled!(malformed, "malformed.pcap", "article.kdl");

#[test]
fn findings_are_visible() {
    let (r, _) = analyze("lossy-bursts.pcap", "article.kdl");
    assert!(
        r.reassembly
            .finding
            .as_ref()
            .map(|f| f.to_string())
            .unwrap_or_default()
            .contains("fragments were lost")
    );
    let (r, _) = analyze("mtu-ignored.pcap", "article.kdl");
    assert!(r.mtu.ip_fragmented > 0 && r.mtu.over_budget > 0);
    let (r, t) = analyze("mtu-df.pcap", "article.kdl");
    assert!(t.icmp > 0);
    assert_eq!(r.mtu.icmp_total, t.icmp);
    assert!(r.mtu.icmp.iter().all(|i| i.mtu == 1400 && i.flow.is_some()));
    let (r, _) = analyze("attacks.pcap", "article.kdl");
    let a = &r.reassembly.attacks;
    assert!(
        a.id_out_of_range > 0
            && a.count_changed > 0
            && a.oversize > 0
            && a.short_non_last > 0
            && a.duplicate > 0
            && a.stale > 0
    );
}

#[test]
fn generation_is_deterministic() {
    let p = dissect::load(&root().join("dissectors/article.kdl")).unwrap();
    let cfg = SimConfig {
        seed: 99,
        duration_s: 2.0,
        loss: 0.05,
        dup: 0.02,
        reorder: 0.05,
        jitter_ms: 3.0,
        ..SimConfig::default()
    };
    let a = simulate(&p, &cfg).unwrap();
    let b = simulate(&p, &cfg).unwrap();
    assert_eq!(a.frames, b.frames);
    let c = simulate(&p, &SimConfig { seed: 100, ..cfg }).unwrap();
    assert_ne!(a.frames, c.frames);
}

/// The amplification baseline counts single (unfragmented) datagrams only: the truth's
/// 83 of 1693, not the 83 of 1800 sequences that included fragmented packets.
#[test]
fn single_datagram_baseline_is_singles_only() {
    let (r, _) = analyze("lossy-bursts.pcap", "article.kdl");
    let text = std::fs::read_to_string(root().join("captures/lossy-bursts.pcap.truth.jsonl")).unwrap();
    let (mut sent, mut lost) = (0u64, 0u64);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["event"] == "send" && v.get("fragment").is_none() {
            sent += 1;
            lost += u64::from(v["lost"] == true);
        }
    }
    assert_eq!((sent, lost), (1693, 83));
    let a = &r.reassembly;
    assert_eq!((a.single_total, a.single_lost), (sent, lost));
    assert_eq!(a.single_loss, 83.0 / 1693.0);
    assert_eq!(a.single_loss_scope, gpcap::analysis::LossScope::SameFlows);
}

/// On an 80-column terminal every line of the report fits (the Flows table was ~150
/// columns and the reassembly table ~135, wrapped by the terminal into unreadable rows):
/// columns left out by priority and said, long cells wrapped, every flow's numbers whole.
#[test]
fn reports_fit_80_columns() {
    for (capture, def) in [
        ("clean.pcap", "article.kdl"),
        ("lossy-bursts.pcap", "article.kdl"),
        ("mtu-ignored.pcap", "article.kdl"),
        ("mtu-df.pcap", "article.kdl"),
        ("attacks.pcap", "article.kdl"),
        ("ipv6-sll2.pcapng", "example-shooter.kdl"),
        ("vlan-corrupt.pcap", "example-shooter.kdl"),
        ("malformed.pcap", "article.kdl"),
    ] {
        let (report, _) = analyze(capture, def);
        let text = gpcap::present::tables::render_at(&report, Some(80));
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "{capture}: {} columns: {line}",
                line.chars().count()
            );
        }
        assert!(
            text.contains("(left out for 80 columns: secs, kbit/s"),
            "{capture}:\n{text}"
        );
        // The numbers a reader needs stay, whole: each flow's datagrams and loss ("-"
        // where no datagram carried a sequence: not measured).
        for f in &report.flows {
            let lost = match f.seq.first {
                Some(_) => f.seq.lost.to_string(),
                None => "-".into(),
            };
            let row = text
                .lines()
                .find(|l| l.contains(&format!(" {} ", f.datagrams)) && l.contains(&format!(" {lost} ")));
            assert!(
                row.is_some(),
                "{capture}: flow {} → {} lost its numbers:\n{text}",
                f.src,
                f.dst
            );
        }
        // Without a width (--wide, or not a terminal) it is the report as before.
        assert_eq!(
            gpcap::present::tables::render_at(&report, None),
            gpcap::present::tables::render(&report)
        );
    }
    insta::assert_snapshot!(
        "vlan_corrupt_80_columns",
        gpcap::present::tables::render_at(&analyze("vlan-corrupt.pcap", "example-shooter.kdl").0, Some(80))
    );
}
