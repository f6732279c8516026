//! Analysis sharded over threads by IP address pair, and analysis pipelined through
//! validation workers, give the sequential report, number for number (the peak
//! reassembly memory included).

mod common;

use common::sharded as analyze_files;
use gpcap::analysis::{Analyzer, Config, Report};
use gpcap::capture::CaptureReader;
use gpcap::dissect;
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

fn pipelined(paths: &[PathBuf], cfg: Config, workers: usize) -> Result<Report, gpcap::run::RunError> {
    gpcap::run::analyze(paths, cfg, gpcap::Mode::Pipelined(workers), &mut |_, _| {})
}

/// The article's definition, and the session `sim` simulated with it and written to a
/// temporary capture named after `what`: its path and frame count.
fn simulated(what: &str, sim: &gpcap::generate::sim::SimConfig) -> (Arc<dissect::Program>, PathBuf, usize) {
    use gpcap::capture::PcapWriter;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let program = Arc::new(dissect::load(&root.join("dissectors/article.kdl")).unwrap());
    let g = gpcap::generate::sim::simulate(&program, sim).unwrap();
    let path = std::env::temp_dir().join(format!("gpcap-{what}-{}-{}.pcap", std::process::id(), sim.seed));
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap(), g.linktype, 65535, true).unwrap();
    for (t, f) in &g.frames {
        w.write(*t, f, f.len() as u32).unwrap();
    }
    (program, path, g.frames.len())
}

fn json(r: &Report) -> serde_json::Value {
    serde_json::to_value(r).unwrap()
}

#[test]
fn shards_agree_with_sequential() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (capture, def) in common::BUNDLED {
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
            let piped = json(&pipelined(&paths, cfg.clone(), shards).unwrap());
            for (k, v) in seq.as_object().unwrap() {
                assert!(
                    piped[k] == *v,
                    "{capture} with {shards} validation workers differs in `{k}`"
                );
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
        json(&sequential(&paths, cfg.clone()))
    );
    assert_eq!(
        json(&pipelined(&paths, cfg.clone(), 2).unwrap()),
        json(&sequential(&paths, cfg))
    );
}

/// The fit of a description that does not fit (reliable.kdl on the article's traffic, a
/// doubtful attacker flow) is the same sharded and pipelined as on one core.
#[test]
fn fit_is_the_same_on_every_core() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (capture, def, verdict) in [
        ("clean.pcap", "reliable.kdl", "does_not_fit"),
        ("attacks.pcap", "article.kdl", "doubtful"),
        ("malformed.pcap", "article.kdl", "good"),
    ] {
        let cfg = Config::from_program(Arc::new(
            dissect::load(&root.join("dissectors").join(def)).unwrap(),
        ));
        let paths = vec![root.join("captures").join(capture)];
        let seq = json(&sequential(&paths, cfg.clone()));
        assert_eq!(seq["fit"]["verdict"], verdict, "{capture}: {}", seq["fit"]);
        for shards in [2, 3] {
            let par = json(&analyze_files(&paths, cfg.clone(), shards, &mut |_, _| {}).unwrap());
            assert_eq!(par["fit"], seq["fit"], "{capture} with {shards} shards");
            let piped = json(&pipelined(&paths, cfg.clone(), shards).unwrap());
            assert_eq!(piped["fit"], seq["fit"], "{capture} with {shards} workers");
        }
    }
}

/// Statistics of one capture, finished but not yet a report (as a shard's are).
fn statistics(path: &Path, cfg: &Config) -> gpcap::analysis::Statistics {
    let mut s = gpcap::analysis::Statistics::new(cfg.clone());
    gpcap::run::run_files(&[path.to_path_buf()], cfg.clone(), &mut s, &mut |_, _| {}).unwrap();
    s
}

/// Integer leaves of a report that shards add up: every counter. Left out are settings,
/// times and what is derived after merging (floats), lists and per-flow rows (merged by
/// concatenation, checked by `shards_agree_with_sequential`).
fn counters(v: &serde_json::Value, path: &str, out: &mut std::collections::BTreeMap<String, u64>) {
    const NOT_COUNTERS: [&str; 9] = [
        "schema", "budget", "link_mtu", "first_ns", "last_ns", "start_ns", "protocol", "flows", "timeline",
    ];
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                // The single-datagram baseline is taken on the flows its scope selects.
                // `untracked` is a flow row, never merged (limits reached: one core again).
                // `fit` is judged on the merged counters (the same fit as one core: the
                // whole-report comparisons above), not added.
                let derived = [
                    "fit",
                    "identification",
                    "type_names",
                    "single_lost",
                    "single_total",
                    "untracked",
                    "wrong_direction",
                ];
                if !NOT_COUNTERS.contains(&k.as_str()) && !derived.contains(&k.as_str()) {
                    counters(x, &format!("{path}.{k}"), out);
                }
            }
        }
        serde_json::Value::Number(n) => {
            if let Some(u) = n.as_u64().filter(|_| !n.is_f64()) {
                out.insert(path.to_string(), u);
            }
        }
        _ => {}
    }
}

/// A capture with what the bundled ones lack: a datagram too short for a CRC, one cut by
/// the snaplen, IP fragments that overlap or never complete, game fragments with a count
/// of 0, packets that reassemble to a bad CRC or a malformed body, a flood of incomplete
/// packets over a small reassembly budget, and more flows than are tracked.
fn hostile(path: &Path) -> Config {
    use gpcap::capture::PcapWriter;
    use gpcap::generate::PacketWriter;
    use gpcap::generate::Rng;
    use gpcap::generate::{Link, ip_packets};
    use std::net::SocketAddr;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let program = Arc::new(dissect::load(&root.join("dissectors/article.kdl")).unwrap());
    let id = program.params.protocol_id.unwrap();
    let mut cfg = Config::from_program(program.clone());
    cfg.reassembly_budget = 24 << 10;
    let port = cfg.ports[0];
    let link = Link::Ethernet { vlan: None };
    let mut out =
        PcapWriter::new(std::fs::File::create(path).unwrap(), link.linktype(), 65535, true).unwrap();
    let mut t = 1_700_000_000_000_000_000i64;
    let mut put = |frame: &[u8], caplen: usize| {
        t += 1_000_000;
        out.write(t, &frame[..caplen.min(frame.len())], frame.len() as u32)
            .unwrap();
    };
    let client: SocketAddr = "10.9.0.1:50000".parse().unwrap();
    let server: SocketAddr = format!("10.9.0.2:{port}").parse().unwrap();
    let send = |put: &mut dyn FnMut(&[u8], usize),
                payload: &[u8],
                ipid: u32,
                mtu: usize,
                keep: &dyn Fn(usize) -> bool| {
        for (i, ip) in ip_packets(client, server, payload, ipid, false, mtu)
            .iter()
            .enumerate()
        {
            if keep(i) {
                let f = link.frame(ip, false);
                put(&f, f.len());
            }
        }
    };
    let mut w = PacketWriter::new(&program);
    let mut rng = Rng::new(7);
    let all = |_: usize| true;
    // Too short for a CRC; cut by the snaplen.
    send(&mut put, &[1, 2], 1, 1500, &all);
    let whole = w.packet(&mut rng, 1, 1).unwrap();
    let f = link.frame(&ip_packets(client, server, &whole, 2, false, 1500)[0], false);
    put(&f, f.len() - 3);
    // IP fragments: one datagram never completed, one whose pieces overlap.
    let big = w.packet_within(&mut rng, 4, 2, 300, 60_000).unwrap();
    send(&mut put, &big, 3, 600, &|i| i == 0);
    let pieces = ip_packets(client, server, &big, 4, false, 600);
    for ip in [&pieces[0], &pieces[0], &pieces[1]] {
        let f = link.frame(ip, false);
        put(&f, f.len());
    }
    // Game fragments: a count of 0; packets reassembling to a bad CRC and a bad body.
    let frag = w.fragment(&mut rng, 3, 0, 0, &[0; 16]).unwrap();
    send(&mut put, &frag, 5, 1500, &all);
    let mut bad_crc = w.packet_within(&mut rng, 4, 4, 300, 60_000).unwrap();
    assert!(bad_crc.len() > 1200);
    let n = bad_crc.len();
    bad_crc[n - 1] ^= 0x40;
    for (k, (d, _)) in w.fragments_of(&mut rng, 4, &bad_crc).unwrap().iter().enumerate() {
        send(&mut put, d, 10 + k as u32, 1500, &all);
    }
    let mut bad_body = w.packet_within(&mut rng, 4, 5, 300, 60_000).unwrap();
    bad_body.truncate(bad_body.len() - 2);
    gpcap::validate::write_crc(id, &mut bad_body);
    for (k, (d, _)) in w.fragments_of(&mut rng, 5, &bad_body).unwrap().iter().enumerate() {
        send(&mut put, d, 40 + k as u32, 1500, &all);
    }
    // A flood of first fragments, each of a packet that never completes.
    for seq in 10..80u16 {
        let d = w.fragment(&mut rng, seq as u64, 0, 2, &[7; 1024]).unwrap();
        send(&mut put, &d, 100 + seq as u32, 1500, &all);
    }
    // More flows than the engine tracks.
    for k in 0..gpcap::limits::MAX_FLOWS as u32 + 1 {
        let src: SocketAddr = SocketAddr::new(std::net::Ipv4Addr::from(0x0a0a_0000 + k).into(), 40_000);
        let f = link.frame(&ip_packets(src, server, &whole, k, false, 1500)[0], false);
        put(&f, f.len());
    }
    cfg
}

/// Merging shard statistics adds every counter: checked on pairs of different captures
/// whose counters, between them, are all non-zero — so a counter added later without a
/// merge fails here.
#[test]
fn merging_adds_every_counter() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let article = Config::from_program(Arc::new(
        dissect::load(&root.join("dissectors/article.kdl")).unwrap(),
    ));
    let shooter = Config::from_program(Arc::new(
        dissect::load(&root.join("dissectors/example-shooter.kdl")).unwrap(),
    ));
    let dir = std::env::temp_dir().join(format!("gpcap-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hostile_path = dir.join("hostile.pcap");
    let hostile_cfg = hostile(&hostile_path);
    let mut cases: Vec<(PathBuf, &Config)> = common::BUNDLED
        .into_iter()
        .map(|(c, def)| {
            let cfg = if def == "article.kdl" { &article } else { &shooter };
            (root.join("captures").join(c), cfg)
        })
        .collect();
    cases.push((hostile_path, &hostile_cfg));
    let mut filled = std::collections::BTreeMap::new();
    for w in cases.windows(2) {
        let ((pa, ca_cfg), (pb, cb_cfg)) = (&w[0], &w[1]);
        let mut ca = std::collections::BTreeMap::new();
        let mut cb = std::collections::BTreeMap::new();
        let mut cm = std::collections::BTreeMap::new();
        counters(
            &serde_json::to_value(statistics(pa, ca_cfg).report()).unwrap(),
            "",
            &mut ca,
        );
        counters(
            &serde_json::to_value(statistics(pb, cb_cfg).report()).unwrap(),
            "",
            &mut cb,
        );
        let mut merged = statistics(pa, ca_cfg);
        merged.merge(statistics(pb, cb_cfg));
        counters(&serde_json::to_value(merged.report()).unwrap(), "", &mut cm);
        for (k, m) in &cm {
            let sum = ca.get(k).copied().unwrap_or(0) + cb.get(k).copied().unwrap_or(0);
            assert_eq!(
                *m,
                sum,
                "merging {} and {}: `{k}` is {m}, not {sum}",
                pa.display(),
                pb.display()
            );
            *filled.entry(k.clone()).or_insert(0) += m;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let empty: Vec<&String> = filled.iter().filter(|(_, n)| **n == 0).map(|(k, _)| k).collect();
    assert!(
        empty.is_empty(),
        "counters no capture fills (so their merge is untested): {empty:?}"
    );
}

/// Regression (reproducer F2): a capture over the flow cap, or flooding a small
/// reassembly budget, got a different report sharded than on one core (the limits
/// applied per shard). Sharded analysis now equals sequential whatever the limits.
#[test]
fn limits_reached_give_the_sequential_report() {
    let dir = std::env::temp_dir().join(format!("gpcap-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hostile.pcap");
    let cfg = hostile(&path);
    let paths = vec![path];
    for budget in [8 << 10, 24 << 10, 1 << 20] {
        let cfg = Config {
            reassembly_budget: budget,
            ..cfg.clone()
        };
        let seq = json(&sequential(&paths, cfg.clone()));
        assert!(seq["capture"]["flows_not_tracked"].as_u64().unwrap() > 0);
        for shards in [2, 3] {
            let par = json(&analyze_files(&paths, cfg.clone(), shards, &mut |_, _| {}).unwrap());
            for (k, v) in seq.as_object().unwrap() {
                assert!(par[k] == *v, "budget {budget}, {shards} shards: `{k}` differs");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regression (#17, item 3): datagrams of flows past the flow table were counted but never
/// validated. They are now checked like any other and counted together.
#[test]
fn untracked_flows_are_validated() {
    use gpcap::generate::PacketWriter;
    use gpcap::generate::Rng;
    use std::net::SocketAddr;
    let dir = std::env::temp_dir().join(format!("gpcap-untracked-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("flows.pcap");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let program = Arc::new(dissect::load(&root.join("dissectors/article.kdl")).unwrap());
    let cfg = Config::from_program(program.clone());
    let server: SocketAddr = format!("10.9.0.2:{}", cfg.ports[0]).parse().unwrap();
    let whole = PacketWriter::new(&program)
        .packet(&mut Rng::new(3), 1, 1)
        .unwrap();
    let mut bad = whole.clone();
    bad[0] ^= 1;
    let cap = gpcap::limits::MAX_FLOWS as u32;
    common::udp_capture(
        &path,
        (0..cap + 3).map(|k| {
            let src = SocketAddr::new(std::net::Ipv4Addr::from(0x0a0a_0000 + k).into(), 40_000);
            (
                src,
                server,
                if k == cap + 1 { bad.clone() } else { whole.clone() },
            )
        }),
    );
    let r = sequential(&[path], cfg);
    assert_eq!(r.capture.flows_not_tracked, 3);
    let u = r.untracked.as_ref().expect("untracked datagrams are reported");
    assert_eq!((u.datagrams, u.crc_ok, u.crc_fail), (3, 2, 1));
    assert_eq!(u.types[1], 2);
    assert_eq!(r.validation.examined, cap as u64 + 3);
    assert_eq!(r.validation.crc_mismatch, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Random sessions with more flows than the engine tracks (a table of 8 to 40 flows
    /// here) and a small reassembly budget: sharded analysis gives the sequential report,
    /// whatever the shard count.
    #[test]
    fn sharded_equals_sequential_past_every_limit(
        seed in proptest::prelude::any::<u64>(),
        max_flows in 8usize..40,
        budget_kib in 2usize..64,
        big in 0.0f64..0.6,
        loss in 0.0f64..0.05,
        shards in 2usize..5,
    ) {
        use gpcap::generate::sim::SimConfig;
        let clients = max_flows as u32 / 2 + 6;
        let sim = SimConfig {
            seed,
            clients,
            packets: Some(clients as u64 * 12),
            duration_s: 600.0,
            big,
            loss,
            ..SimConfig::default()
        };
        let (program, path, _) = simulated("prop", &sim);
        let cfg = Config {
            reassembly_budget: budget_kib << 10,
            max_flows,
            ..Config::from_program(program)
        };
        let paths = vec![path.clone()];
        let seq = json(&sequential(&paths, cfg.clone()));
        let par = json(&analyze_files(&paths, cfg.clone(), shards, &mut |_, _| {}).unwrap());
        let piped = serde_json::to_value(pipelined(&paths, cfg.clone(), shards).unwrap()).unwrap();
        let exact = serde_json::to_value(sequential(&paths, cfg)).unwrap();
        let _ = std::fs::remove_file(&path);
        proptest::prop_assert!(seq["capture"]["flows_not_tracked"].as_u64().unwrap() > 0);
        for (k, v) in seq.as_object().unwrap() {
            proptest::prop_assert!(par[k] == *v, "`{}` differs", k);
        }
        proptest::prop_assert!(piped == exact, "the pipeline differs");
    }
}

/// What decides between sharding and the pipeline: one session all goes to one shard;
/// 64 clients spread over three shards (each gets about a third); an unreadable path
/// counts as one session (the pipeline, which needs no spread).
#[test]
fn busiest_shard_share_tells_one_session_from_many() {
    use gpcap::run::busiest_shard_share;
    let one = Path::new("captures/lossy-bursts.pcap");
    for shards in [2, 3, 4] {
        assert_eq!(busiest_shard_share(one, shards), 1.0, "{shards} shards");
    }
    let (dir, many) = common::gen_checked(
        "dissectors/article.kdl",
        "spread",
        &["--clients", "64", "--duration", "2", "--summary-only"],
    );
    let share = busiest_shard_share(Path::new(&many), 3);
    std::fs::remove_dir_all(dir).unwrap();
    assert!(share > 0.25 && share < 0.5, "busiest of 3 shards got {share}");
    assert_eq!(busiest_shard_share(Path::new("captures/no-such.pcap"), 3), 1.0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(6))]

    /// Captures of several batches (2,048 frames each) with large packets, duplicates,
    /// reordering, corruption and the reassembly attacks: validation workers join the
    /// fragments they find within a batch, and whatever the ordered stage completes
    /// otherwise (across batches, from other copies) it validates itself. The report is
    /// the sequential one.
    #[test]
    fn pipeline_joining_fragments_equals_sequential(
        seed in proptest::prelude::any::<u64>(),
        dup in 0.0f64..0.2,
        reorder in 0.0f64..0.2,
        corrupt in 0.0f64..0.05,
        workers in 1usize..4,
    ) {
        use gpcap::generate::sim::SimConfig;
        let sim = SimConfig {
            seed,
            clients: 3,
            packets: Some(8_000),
            duration_s: 600.0,
            big: 0.4,
            loss: 0.02,
            dup,
            reorder,
            corrupt,
            attacks: true,
            ..SimConfig::default()
        };
        let (program, path, frames) = simulated("join", &sim);
        proptest::prop_assert!(frames > 3 * 2048, "{} frames: fewer than 3 batches", frames);
        let cfg = Config::from_program(program);
        let paths = vec![path.clone()];
        let piped = serde_json::to_value(pipelined(&paths, cfg.clone(), workers).unwrap()).unwrap();
        let exact = serde_json::to_value(sequential(&paths, cfg)).unwrap();
        let _ = std::fs::remove_file(&path);
        proptest::prop_assert!(exact["reassembly"]["attacks"]["duplicate"].as_u64().unwrap() > 0);
        for (k, v) in exact.as_object().unwrap() {
            proptest::prop_assert!(piped[k] == *v, "`{}` differs", k);
        }
    }
}

/// A worker joins the fragments it finds in its batch, but the ordered stage may have
/// kept another copy of a fragment from an earlier batch: here fragment 0 of one packet
/// ends a batch, and the next batch brings fragment 0 of another packet under the same
/// sequence (a duplicate, refused) and then fragment 1. The ordered stage completes the
/// first packet; the worker joined the second packet's head with the first's tail, whose
/// CRC fails. The worker's verdict must not be taken for the packet completed.
#[test]
fn a_worker_joining_other_copies_does_not_decide() {
    use gpcap::generate::PacketWriter;
    use gpcap::generate::Rng;
    use gpcap::limits::BATCH_FRAMES;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let program = Arc::new(dissect::load(&root.join("dissectors/article.kdl")).unwrap());
    let mut w = PacketWriter::new(&program);
    let mut rng = Rng::new(7);
    let scene = 4;
    let mut fragmented = |rng: &mut Rng| {
        let p = (0..4000)
            .map(|scale| w.packet_within(rng, scene, 100, scale, 8 << 10).unwrap())
            .find(|p| p.len() > program.params.format.mtu_budget as usize)
            .expect("a scene packet large enough to fragment");
        w.fragments_of(rng, 100, &p).unwrap()
    };
    let first = fragmented(&mut rng);
    let second = (0..100)
        .map(|_| fragmented(&mut rng))
        .find(|f| f.len() == first.len())
        .expect("another packet of as many fragments");
    assert_ne!(first[0].0, second[0].0);
    let server: std::net::SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let client: std::net::SocketAddr = "10.0.1.2:50001".parse().unwrap();
    let other: std::net::SocketAddr = "10.0.9.9:9999".parse().unwrap();
    let mut datagrams: Vec<_> = (0..BATCH_FRAMES - 1)
        .map(|k| (other, other, vec![k as u8; 16]))
        .collect();
    datagrams.push((client, server, first[0].0.clone()));
    datagrams.push((client, server, second[0].0.clone()));
    datagrams.extend(first[1..].iter().map(|f| (client, server, f.0.clone())));
    let path = std::env::temp_dir().join(format!("gpcap-join-copies-{}.pcap", std::process::id()));
    common::udp_capture(&path, datagrams);
    let cfg = Config::from_program(program);
    let paths = vec![path.clone()];
    let exact = serde_json::to_value(sequential(&paths, cfg.clone())).unwrap();
    let piped = serde_json::to_value(pipelined(&paths, cfg, 2).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(exact["reassembly"]["completed"], 1);
    assert_eq!(exact["reassembly"]["attacks"]["duplicate"], 1);
    let flows = exact["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0]["reassembled_types"][scene as usize], 1);
    for (k, v) in exact.as_object().unwrap() {
        assert!(piped[k] == *v, "`{k}` differs");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4))]

    /// Many flows with large packets and no limit reached, over several of the reader's
    /// memory markers: the shards' reassembly memory, added in frame order, peaks where
    /// the sequential run's does (not at the sum of the shards' own peaks).
    #[test]
    fn sharded_peak_memory_is_the_sequential_peak(
        seed in proptest::prelude::any::<u64>(),
        clients in 8u32..24,
        big in 0.2f64..0.6,
        shards in 2usize..5,
    ) {
        use gpcap::generate::sim::SimConfig;
        let sim = SimConfig {
            seed,
            clients,
            packets: Some(40_000),
            duration_s: 600.0,
            big,
            loss: 0.03,
            reorder: 0.05,
            ..SimConfig::default()
        };
        let (program, path, frames) = simulated("peak", &sim);
        proptest::prop_assert!(frames > 2 * 16_384, "{} frames: fewer than two markers", frames);
        let cfg = Config::from_program(program);
        let paths = vec![path.clone()];
        let exact = json(&sequential(&paths, cfg.clone()));
        let par = json(&analyze_files(&paths, cfg, shards, &mut |_, _| {}).unwrap());
        let _ = std::fs::remove_file(&path);
        proptest::prop_assert!(exact["reassembly"]["peak_bytes"].as_u64().unwrap() > 0);
        proptest::prop_assert!(exact["capture"]["flows_not_tracked"] == 0);
        for (k, v) in exact.as_object().unwrap() {
            proptest::prop_assert!(par[k] == *v, "`{}` differs: {} against {}", k, par[k]["peak_bytes"], v["peak_bytes"]);
        }
    }
}
