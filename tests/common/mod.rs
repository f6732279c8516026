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
