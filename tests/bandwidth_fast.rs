//! `analyze --bits` counted from the validation plan equals the profile counted from
//! field trees, exactly: every row, value estimate and delta, on generated captures of
//! article.kdl and example-shooter.kdl, the bundled captures and the distributions
//! fixture — and the plan does count most datagrams (else the test proves nothing).

mod common;

use gpcap::Flow;
use gpcap::SinkError;
use gpcap::analysis::Config;
use gpcap::dissect;
use gpcap::run::bandwidth as run;
use gpcap::run::run_files;
use gpcap::sinks::bandwidth::{Bandwidth, Options, fast};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn config(def: &str) -> Config {
    Config::from_program(Arc::new(
        dissect::load(&root().join("dissectors").join(def)).unwrap(),
    ))
}

/// The profile as JSON, from trees or from the plan.
fn profile(path: &Path, cfg: &Config, what_if: &[(String, f64)], trees: bool) -> serde_json::Value {
    let opts = Options {
        what_if: what_if.to_vec(),
        trees,
    };
    let r = run::analyze_files(&[path.to_path_buf()], cfg.clone(), opts, &mut |_, _| {}).unwrap();
    let mut v = serde_json::to_value(r.bandwidth.unwrap()).unwrap();
    // What the rows were counted from is the one thing that differs.
    let from = v["computed_from"].take();
    if trees {
        assert_eq!(from, "field tree");
    }
    v
}

fn same(path: &Path, def: &str, what_if: &[(String, f64)]) {
    let cfg = config(def);
    let tree = profile(path, &cfg, what_if, true);
    let plan = profile(path, &cfg, what_if, false);
    if tree != plan {
        let (t, p) = (tree["rows"].as_array().unwrap(), plan["rows"].as_array().unwrap());
        let diff: Vec<_> = t.iter().filter(|r| !p.contains(r)).take(3).collect();
        let more: Vec<_> = p.iter().filter(|r| !t.contains(r)).take(3).collect();
        panic!(
            "{} ({def}): the plan's profile differs from the trees'\ntree only: {diff:#?}\nplan only: {more:#?}",
            path.display()
        );
    }
}

#[test]
fn the_plan_counts_what_the_trees_count_on_bundled_captures() {
    for (capture, def) in common::BUNDLED {
        let path = root().join("captures").join(capture);
        if fast::eligible(&config(def)) {
            same(&path, def, &[]);
        }
    }
    same(
        &root().join("captures/article.pcap"),
        "article.kdl",
        &[("C.position.x".into(), 0.5), ("objects.position.y".into(), 0.25)],
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Generated captures (loss, big packets, corruption, several clients): the plan's
    /// profile is the trees', to the last estimate.
    #[test]
    fn the_plan_counts_what_the_trees_count_on_generated_captures(
        seed in 0u64..1000,
        clients in 1u32..5,
        shooter in any::<bool>(),
        loss in prop_oneof![Just("0"), Just("0.05")],
        big in prop_oneof![Just("0"), Just("0.2")],
        corrupt in prop_oneof![Just("0"), Just("0.02")],
    ) {
        let def = if shooter { "example-shooter.kdl" } else { "article.kdl" };
        let (seed, clients) = (seed.to_string(), clients.to_string());
        let (dir, path) = common::gen_checked(
            root().join("dissectors").join(def).to_str().unwrap(),
            &format!("bits-fast-prop-{seed}"),
            &["--seed", &seed, "--duration", "1", "--clients", &clients, "--loss", loss, "--big", big, "--corrupt", corrupt],
        );
        same(&PathBuf::from(&path), def, &[]);
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Per packet type: (walked from the plan, given up).
struct ByType(
    std::collections::BTreeMap<u32, (u64, u64)>,
    gpcap::dissect::LeafLog,
    Arc<gpcap::dissect::Program>,
);

impl gpcap::Sink for ByType {
    fn packet(&mut self, e: &gpcap::PacketEvent<'_>) -> Result<Flow, SinkError> {
        if e.status != gpcap::Status::Ok || e.fault.is_some() || e.fragment.is_some() {
            return Ok(Flow::Continue);
        }
        let ty = e.packet_type.unwrap_or(0);
        let ok = self.1.read(&self.2, e.payload, ty);
        let c = self.0.entry(ty).or_default();
        if ok {
            c.0 += 1
        } else {
            c.1 += 1
        }
        Ok(Flow::Continue)
    }
}

/// Every valid datagram of a type whose body the plan reads is walked (strings, bytes,
/// padding and checks too; types with lists go to the tree), and the profile's own
/// count of datagrams from the plan and from trees agrees.
#[test]
fn the_plan_walks_every_datagram_of_its_types() {
    let cases = [
        ("article.kdl", vec![1, 2, 3, 4, 5], vec![]),
        ("example-shooter.kdl", vec![1, 2, 3, 5, 6], vec![4]),
    ];
    for (def, walked, not) in cases {
        let (dir, path) = common::gen_checked(
            root().join("dissectors").join(def).to_str().unwrap(),
            &format!("bits-bytype-{}", def.trim_end_matches(".kdl")),
            &["--seed", "3", "--duration", "2", "--clients", "3"],
        );
        let cfg = config(def);
        let mut s = ByType(
            Default::default(),
            Default::default(),
            cfg.program.clone().unwrap(),
        );
        run_files(&[PathBuf::from(&path)], cfg.clone(), &mut s, &mut |_, _| {}).unwrap();
        for t in walked {
            let (yes, no) = s.0.get(&t).copied().unwrap_or_default();
            assert!(yes > 0 && no == 0, "{def} type {t}: {yes} walked, {no} not");
        }
        for t in not {
            let (yes, no) = s.0.get(&t).copied().unwrap_or_default();
            assert!(yes == 0 && no > 0, "{def} type {t}: {yes} walked, {no} not");
        }
        let mut b = Bandwidth::planned(cfg.program.clone().unwrap(), Options::default());
        run_files(&[PathBuf::from(&path)], cfg, &mut b, &mut |_, _| {}).unwrap();
        let f = b.fast.as_ref().unwrap();
        let walked: u64 = s.0.values().map(|c| c.0).sum();
        assert_eq!(f.planned, walked, "{def}");
        assert!(f.trees > 0, "{def}");
        // And says so: the report names both ways it counted.
        assert_eq!(b.computed_from(), "validation plan and field tree", "{def}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
