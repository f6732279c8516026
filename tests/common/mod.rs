//! Helpers shared by the integration tests.

#[allow(dead_code)]
/// Says that a test skipped, and why, where a person reading the test run sees it: the
/// harness captures `eprintln!` of passing tests, not direct writes to stderr.
pub fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}

/// The bundled captures and the definition each was written with.
#[allow(dead_code)]
pub const BUNDLED: [(&str, &str); 9] = [
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

/// Writes UDP datagrams (source, destination, payload) as an Ethernet pcap, 1 ms apart.
#[allow(dead_code)]
pub fn udp_capture(
    path: &std::path::Path,
    datagrams: impl IntoIterator<Item = (std::net::SocketAddr, std::net::SocketAddr, Vec<u8>)>,
) {
    use gpcap::generate::{Link, ip_packets};
    let link = Link::Ethernet { vlan: None };
    let file = std::fs::File::create(path).unwrap();
    let mut w = gpcap::capture::PcapWriter::new(file, link.linktype(), 65535, true).unwrap();
    for (k, (src, dst, payload)) in datagrams.into_iter().enumerate() {
        let f = link.frame(&ip_packets(src, dst, &payload, k as u32, false, 1500)[0], false);
        w.write(
            1_700_000_000_000_000_000 + k as i64 * 1_000_000,
            &f,
            f.len() as u32,
        )
        .unwrap();
    }
}

/// Runs gpcap, which must succeed, and returns its standard output.
#[allow(dead_code)]
pub fn gpcap_ok(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `gpcap gen -d DEF -o DIR/NAME ARGS… --check` into a fresh directory of its own
/// (removed by the caller); returns the directory and the capture's path.
#[allow(dead_code)]
pub fn gen_checked(def: &str, name: &str, args: &[&str]) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("gpcap-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.pcap")).to_str().unwrap().to_string();
    let mut all = vec!["gen", "-d", def, "-o", &path];
    all.extend_from_slice(args);
    all.push("--check");
    gpcap_ok(&all);
    (dir, path)
}

/// Runs gpcap from the project root: exit code, standard output, standard error.
#[allow(dead_code)]
pub fn gpcap_run(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The report of `paths` from `shards` shards by address pair (the library's sharded run).
#[allow(dead_code)]
pub fn sharded(
    paths: &[std::path::PathBuf],
    cfg: gpcap::Config,
    shards: usize,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<gpcap::Report, gpcap::run::RunError> {
    gpcap::run::analyze(paths, cfg, gpcap::Mode::Sharded(shards), progress)
}

/// A definition too large to compile to machine code (`dissect/native/`): many arrays of a struct of checked fields: the plan is small to write, but each
/// array's body is compiled where it is used, past the budget.
#[allow(dead_code)]
pub fn huge_definition() -> String {
    let mut text = String::from(
        "protocol \"big\" {\n    id 0x55667788\n    ports 40000 40001 50000 50001\n    types 6\n}\nheader {\n    bits crc 32 role=crc\n    bits sequence 16 role=sequence\n    int type 0 5 role=type\n}\nstruct s {\n",
    );
    for i in 0..250 {
        text.push_str(&format!("    int f{i} 0 2\n"));
    }
    text.push_str("}\npacket 1 \"p\" {\n");
    for i in 0..100 {
        text.push_str(&format!("    array a{i} 1 {{\n        s x\n    }}\n"));
    }
    text.push_str("}\n");
    text
}

/// A draw that comes true `per_mille` times in 1,000, from `seed` (xorshift: the same
/// sequence for a seed on every machine, so a kept failing case replays).
#[allow(dead_code)]
pub fn per_mille(seed: u64) -> impl FnMut(u32) -> bool {
    let mut rng = seed | 1;
    move |per_mille: u32| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % 1000) < u64::from(per_mille)
    }
}
