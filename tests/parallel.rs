//! Analysis sharded over threads by IP address pair gives the sequential report, number
//! for number (except the peak reassembly memory, which the shards share out).

use gpcap::analysis::{Analyzer, Config, Report};
use gpcap::capture::CaptureReader;
use gpcap::dissect;
use gpcap::engine::parallel::analyze_files;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn sequential(paths: &[PathBuf], cfg: Config) -> Report {
    let mut a = Analyzer::new(cfg);
    for p in paths {
        let mut r = CaptureReader::open(p).unwrap();
        a.begin_file(&p.display().to_string());
        while let Some(f) = r.next_frame().unwrap() {
            a.frame(&f);
        }
        a.end_file(None, r.truncated_tail.clone());
    }
    a.finish()
}

fn json(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v["reassembly"]["peak_bytes"] = serde_json::json!(0);
    v
}

#[test]
fn shards_agree_with_sequential() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cases = [
        ("article.pcap", "article.kdl"),
        ("clean.pcap", "article.kdl"),
        ("lossy-bursts.pcap", "article.kdl"),
        ("mtu-ignored.pcap", "article.kdl"),
        ("mtu-df.pcap", "article.kdl"),
        ("attacks.pcap", "article.kdl"),
        ("malformed.pcap", "article.kdl"),
        ("ipv6-sll2.pcapng", "example-shooter.kdl"),
        ("vlan-corrupt.pcap", "example-shooter.kdl"),
    ];
    for (capture, def) in cases {
        let p = Arc::new(dissect::load(&root.join("dissectors").join(def)).unwrap());
        let cfg = Config::from_program(p);
        let paths = vec![root.join("captures").join(capture)];
        let seq = json(&sequential(&paths, cfg.clone()));
        for shards in [2, 3] {
            let par = json(&analyze_files(&paths, cfg.clone(), shards, &mut |_, _| {}).unwrap());
            // Compare section by section so a failure names the part that differs.
            for (k, v) in seq.as_object().unwrap() {
                assert!(par[k] == *v, "{capture} with {shards} shards differs in `{k}`");
            }
        }
    }
    // Several files at once.
    let p = Arc::new(dissect::load(&root.join("dissectors/article.kdl")).unwrap());
    let cfg = Config::from_program(p);
    let paths: Vec<PathBuf> = ["clean.pcap", "lossy-bursts.pcap"]
        .iter()
        .map(|c| root.join("captures").join(c))
        .collect();
    assert_eq!(
        json(&analyze_files(&paths, cfg.clone(), 2, &mut |_, _| {}).unwrap()),
        json(&sequential(&paths, cfg))
    );
}
