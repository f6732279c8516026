//! `dissect` on several cores prints what one core prints, byte for byte, in every
//! format; a formatting thread that fails ends the run with an error naming the file
//! and frame, without hanging.

mod common;

use gpcap::Filter;
use gpcap::run::run_files;
use gpcap::sinks::ordered::{DissectPrinter, OrderedPrinter};
use gpcap::sinks::printer::Format;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// An output the test reads back after the printer's threads are done with it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn cases() -> Vec<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cases: Vec<_> = common::BUNDLED
        .iter()
        .map(|(c, d)| (root.join("captures").join(c), root.join("dissectors").join(d)))
        .collect();
    cases.push((
        root.join("tests/fixtures/enet/capture.pcap"),
        root.join("dissectors/enet.kdl"),
    ));
    cases
}

fn printed(capture: &Path, def: &Path, format: Format, filter: Option<&str>, threads: usize) -> Vec<u8> {
    printed_at_most(capture, def, format, filter, threads, None)
}

/// [`printed`], stopping after `limit` packets (`dissect -c`).
fn printed_at_most(
    capture: &Path,
    def: &Path,
    format: Format,
    filter: Option<&str>,
    threads: usize,
    limit: Option<u64>,
) -> Vec<u8> {
    let program = gpcap::load_definition(def).unwrap();
    let cfg = gpcap::Config::from_program(program.clone());
    let filter = filter.map_or_else(Filter::all, |f| Filter::parse(f, Some(&program)).unwrap());
    let out = Shared::default();
    let mut p = DissectPrinter::new(
        Box::new(out.clone()),
        Some(program),
        filter,
        format,
        None,
        threads,
    )
    .limit(limit);
    let paths = [capture.to_path_buf()];
    run_files(&paths, cfg, &mut p, &mut |_, _| {}).unwrap();
    p.end().unwrap();
    out.0.lock().unwrap().clone()
}

#[test]
fn every_format_prints_the_same_bytes_on_one_core_or_several() {
    for (capture, def) in cases() {
        for format in [Format::JsonLines, Format::Json, Format::Brief, Format::Tree] {
            let one = printed(&capture, &def, format, None, 1);
            assert!(!one.is_empty(), "{} printed nothing", capture.display());
            for threads in [2, 3] {
                let many = printed(&capture, &def, format, None, threads);
                assert!(
                    one == many,
                    "{} {format:?}: {threads} threads print {} bytes, one core {}",
                    capture.display(),
                    many.len(),
                    one.len()
                );
            }
        }
    }
}

/// FNV-1a of `bytes`: a golden of the JSON Lines without storing megabytes of it.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// `dissect --jsonl` writes the bytes it always wrote, on one core and on two: the
/// length and hash of each bundled capture's output, as printed before the printer
/// walked subtrees by parent and wrote vectors' values from their components. Update
/// only for an intended change of the JSON (docs/json.md says what it is).
#[test]
fn jsonl_is_the_bytes_it_always_was() {
    let golden: [(&str, usize, u64); 4] = [
        ("article.pcap", 40_515_243, 0x7647_d1b8_bc82_d7da),
        ("attacks.pcap", 10_363_181, 0x86b4_8aaf_d4f3_44ca),
        ("malformed.pcap", 2_724_299, 0xdcd3_a877_ee74_7bc9),
        ("ipv6-sll2.pcapng", 5_502_334, 0x5882_a85e_f7c4_3a7c),
    ];
    for (name, len, hash) in golden {
        let (capture, def) = cases().into_iter().find(|(c, _)| c.ends_with(name)).unwrap();
        for threads in [1, 2] {
            let out = printed(&capture, &def, Format::JsonLines, None, threads);
            assert_eq!(
                (out.len(), fnv(&out)),
                (len, hash),
                "{name} on {threads} thread(s)"
            );
        }
    }
}

/// Packets in JSON Lines output: its non-empty lines.
fn packets(jsonl: &[u8]) -> u64 {
    jsonl.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count() as u64
}

/// `dissect -c N`: the first N packets shown, the same bytes on one core or several,
/// with or without a filter (a reassembled packet's counts once).
#[test]
fn a_count_prints_the_first_packets_on_one_core_or_several() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (capture, def) = (
        root.join("captures/article.pcap"),
        root.join("dissectors/article.kdl"),
    );
    for filter in [None, Some("reassembled"), Some("size > 100")] {
        let all = printed(&capture, &def, Format::JsonLines, filter, 1);
        let total = packets(&all);
        for limit in [1, 7, 500, total + 1] {
            let one = printed_at_most(&capture, &def, Format::JsonLines, filter, 1, Some(limit));
            assert_eq!(packets(&one), limit.min(total), "{filter:?} -c {limit}");
            assert!(all.starts_with(&one), "{filter:?} -c {limit}");
            for threads in [2, 3] {
                let many = printed_at_most(&capture, &def, Format::JsonLines, filter, threads, Some(limit));
                assert!(one == many, "{filter:?} -c {limit} on {threads} threads");
            }
        }
    }
}

#[test]
fn a_filter_selects_the_same_packets_on_several_cores() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (capture, def) = (
        root.join("captures/lossy-bursts.pcap"),
        root.join("dissectors/article.kdl"),
    );
    for filter in ["size > 100", "time > 0.5", "frame > 100000"] {
        let one = printed(&capture, &def, Format::Json, Some(filter), 1);
        assert_eq!(
            one,
            printed(&capture, &def, Format::Json, Some(filter), 2),
            "{filter}"
        );
    }
}

#[test]
fn a_failing_formatter_ends_the_run_naming_file_and_frame() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (capture, def) = (
        root.join("captures/clean.pcap"),
        root.join("dissectors/article.kdl"),
    );
    let program = gpcap::load_definition(&def).unwrap();
    let cfg = gpcap::Config::from_program(program.clone());
    let out = Shared::default();
    let mut p = OrderedPrinter::new(
        Box::new(out.clone()),
        Some(program),
        Filter::all(),
        Format::JsonLines,
        None,
        2,
    );
    let fail = 1500;
    *p.fail_on.lock().unwrap() = Some(fail);
    run_files(&[capture], cfg, &mut p, &mut |_, _| {}).unwrap();
    let e = p.end().unwrap_err().to_string();
    assert!(
        e.contains("clean.pcap") && e.contains(&format!("frame {fail}")),
        "{e}"
    );
    // Output stops before the packet that failed: nothing past it is written.
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    assert!(
        !text.contains(&format!("\"frame\":{fail},")),
        "the failed frame was printed"
    );
}

/// `sim` simulated with the article's definition into a temporary capture.
fn simulated(sim: &gpcap::generate::sim::SimConfig) -> PathBuf {
    use gpcap::capture::PcapWriter;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let program = gpcap::load_definition(root.join("dissectors/article.kdl")).unwrap();
    let g = gpcap::generate::sim::simulate(&program, sim).unwrap();
    let path = std::env::temp_dir().join(format!("gpcap-dissect-{}-{}.pcap", std::process::id(), sim.seed));
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap(), g.linktype, 65535, true).unwrap();
    for (t, f) in &g.frames {
        w.write(*t, f, f.len() as u32).unwrap();
    }
    path
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(8))]

    /// Generated sessions (big packets, fragments, loss, corruption, reordering, IPv6):
    /// several formatting threads print what one does, byte for byte, in every format.
    #[test]
    fn generated_captures_print_the_same_bytes_on_one_core_or_several(
        seed in proptest::prelude::any::<u64>(),
        clients in 1u32..12,
        big in 0.0f64..0.5,
        loss in 0.0f64..0.05,
        corrupt in 0.0f64..0.05,
        reorder in 0.0f64..0.1,
        ipv6 in proptest::prelude::any::<bool>(),
        threads in 2usize..5,
    ) {
        use gpcap::generate::sim::SimConfig;
        let sim = SimConfig {
            seed,
            clients,
            packets: Some(clients as u64 * 40),
            big,
            loss,
            corrupt,
            reorder,
            ipv6,
            ..SimConfig::default()
        };
        let capture = simulated(&sim);
        let def = Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl");
        for format in [Format::JsonLines, Format::Json, Format::Brief, Format::Tree] {
            let one = printed(&capture, &def, format, None, 1);
            let many = printed(&capture, &def, format, None, threads);
            proptest::prop_assert!(one == many, "{:?}: {} threads differ", format, threads);
        }
        let _ = std::fs::remove_file(&capture);
    }
}
