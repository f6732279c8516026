//! Soak: random definitions, traffic and impairments; reassembly and every reported
//! number must equal the generator's ground truth, nothing may panic, and reassembly
//! memory stays within its budget. CI runs a short loop; a long one:
//!
//!     GPCAP_SOAK_SEEDS=5000 cargo test --release --test soak -- --nocapture

use gpcap::analysis::{Analyzer, Config};
use gpcap::capture::CaptureReader;
use gpcap::capture::PcapWriter;
use gpcap::dissect::{self, Program};
use gpcap::generate::Link;
use gpcap::generate::Rng;
use gpcap::generate::sim::{Burst, SimConfig, simulate};
use gpcap::run::truth::compare;
use std::sync::Arc;

/// A random but valid definition: header, fragments and a few packet types built from
/// every kind of node.
fn random_definition(rng: &mut Rng) -> String {
    let types = rng.range(3, 12);
    let mut s = format!(
        "protocol \"random\" {{\n    id {:#x}\n    ports 40000\n    types {types}\n    end-check {}\n    fragment-size {}\n    max-fragments {}\n    fragment-count \"{}\"\n    mtu-budget {}\n}}\n",
        rng.next_u32(),
        if rng.chance(0.8) {
            "\"end\"".to_string()
        } else {
            "#null".to_string()
        },
        rng.range(200, 1024),
        rng.range(8, 255),
        if rng.chance(0.5) { "count" } else { "count-1" },
        rng.range(300, 1400),
    );
    s.push_str(&format!(
        "header {{\n    bits crc 32 role=crc\n    bits sequence 16 role=sequence\n    int type 0 {} role=type\n}}\n",
        types - 1
    ));
    s.push_str("fragment {\n    bits fragment_id 8 role=fragment-id\n    bits fragment_count 8 role=fragment-count\n    align\n    rest data role=fragment-data\n}\n");
    s.push_str("struct thing {\n    compressed-vector at -100 100 0.01\n    smallest-three rot 7\n    bool moving\n    if \"moving\" {\n        vector v\n    }\n}\n");
    for t in 1..types {
        s.push_str(&format!("packet {t} \"t{t}\" {{\n"));
        let n = rng.range(1, 7);
        for k in 0..n {
            let f = match rng.below(14) {
                0 => format!("bits b{k} {}", rng.range(1, 32)),
                1 => format!("bool flag{k}"),
                2 => {
                    let lo = rng.range(-1000, 1000);
                    format!("int i{k} {lo} {}", lo + rng.range(0, 100_000))
                }
                3 => format!("uint64 u{k}"),
                4 => format!("float f{k}"),
                5 => format!("double d{k}"),
                6 => format!("compressed-float c{k} -10 10 0.0{}", rng.range(1, 9)),
                7 => format!("quaternion q{k}"),
                8 => format!("string s{k} {}", rng.range(2, 64)),
                9 => format!("int n{k} 0 {}\n    bytes blob{k} n{k}", rng.range(1, 40)),
                10 => format!(
                    "int n{k} 0 {}\n    array a{k} n{k} {{\n        thing\n    }}",
                    rng.range(1, 300)
                ),
                11 => format!(
                    "relative-list r{k} {} {{\n        thing\n    }}",
                    rng.range(2, 2000)
                ),
                12 => format!(
                    "list l{k} end=\"kind{k} == 0\" {{\n        int kind{k} 0 3\n        int x{k} -5 5\n    }}"
                ),
                _ => {
                    format!("bool on{k}\n    if \"!on{k}\" {{\n        check \"c{k}\"\n        align\n    }}")
                }
            };
            s.push_str("    ");
            s.push_str(&f);
            s.push('\n');
        }
        s.push_str("}\n");
    }
    s
}

fn run(program: Arc<Program>, cfg: &SimConfig) -> Vec<String> {
    let g = simulate(&program, cfg).expect("simulate");
    let mut w = PcapWriter::new(Vec::new(), g.linktype, 65535, true).unwrap();
    for (t, f) in &g.frames {
        w.write(*t, f, f.len() as u32).unwrap();
    }
    let mut a = Analyzer::new(Config {
        reassembly_budget: 8 << 20,
        ..Config::from_program(program)
    });
    let mut r = CaptureReader::from_read("soak", std::io::Cursor::new(w.into_inner())).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    let report = a.finish();
    let mut diffs = compare(&g.truth, &report);
    if report.reassembly.peak_bytes > (8 << 20) + (1 << 20) {
        diffs.push(format!(
            "reassembly memory {} over its budget",
            report.reassembly.peak_bytes
        ));
    }
    diffs
}

fn config(rng: &mut Rng, seed: u64) -> SimConfig {
    SimConfig {
        seed,
        duration_s: 2.0 + rng.unit() * 2.0,
        rate_hz: 30.0 + rng.unit() * 60.0,
        clients: rng.range(1, 3) as u32,
        loss: if rng.chance(0.6) { rng.unit() * 0.1 } else { 0.0 },
        burst: rng.chance(0.3).then_some(Burst {
            enter: 0.02,
            exit: 0.3,
            loss: 0.8,
        }),
        dup: if rng.chance(0.4) { rng.unit() * 0.05 } else { 0.0 },
        reorder: if rng.chance(0.4) { rng.unit() * 0.05 } else { 0.0 },
        jitter_ms: rng.unit() * 10.0,
        corrupt: if rng.chance(0.3) { rng.unit() * 0.03 } else { 0.0 },
        link_mtu: if rng.chance(0.3) {
            rng.range(576, 1500) as u32
        } else {
            1500
        },
        df: rng.chance(0.3),
        no_fragment: rng.chance(0.2),
        foreign: rng.unit() * 0.05,
        ipv6: rng.chance(0.3),
        link: match rng.below(4) {
            0 => Link::Sll2,
            1 => Link::Raw,
            2 => Link::Ethernet {
                vlan: Some(rng.range(1, 4094) as u16),
            },
            _ => Link::Ethernet { vlan: None },
        },
        big: rng.unit() * 0.3,
        attacks: rng.chance(0.3),
        malformed: if rng.chance(0.3) { rng.unit() * 0.05 } else { 0.0 },
        packets: None,
        encrypt: false,
    }
}

#[test]
fn soak() {
    let seeds: u64 = std::env::var("GPCAP_SOAK_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let root = env!("CARGO_MANIFEST_DIR");
    let shipped: Vec<Arc<Program>> = [
        "article.kdl",
        "example-shooter.kdl",
        "reliable.kdl",
        "netcode.kdl",
    ]
    .iter()
    .map(|d| Arc::new(dissect::load(std::path::Path::new(&format!("{root}/dissectors/{d}"))).unwrap()))
    .collect();
    let mut failures = Vec::new();
    for seed in 0..seeds {
        let mut rng = Rng::new(seed ^ 0x50a6);
        let (program, what) = match seed % 5 {
            0..=3 => (
                shipped[seed as usize % 5].clone(),
                format!("dissectors #{}", seed % 5),
            ),
            _ => {
                let text = random_definition(&mut rng);
                match dissect::compile("random.kdl", &text) {
                    Ok(p) => (Arc::new(p), "random definition".to_string()),
                    Err(e) => panic!(
                        "seed {seed}: random definition does not compile:\n{}\n{text}",
                        dissect::render(&e, false)
                    ),
                }
            }
        };
        let mut cfg = config(&mut rng, seed);
        if !program.params.checksum.is_crc32() {
            // Nothing detects a flipped bit without a checksum (gen refuses it).
            cfg.corrupt = 0.0;
        }
        if program.fragment.is_none() {
            // Nothing to attack (gen refuses it).
            cfg.attacks = false;
        }
        let diffs = run(program, &cfg);
        if !diffs.is_empty() {
            failures.push(format!(
                "seed {seed} ({what}, {cfg:?}):\n  {}",
                diffs.join("\n  ")
            ));
        }
    }
    eprintln!("soak: {seeds} seeds, {} failures", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
