//! Helpers shared by the integration tests.

/// Says that a test skipped, and why, where a person reading the test run sees it: the
/// harness captures `eprintln!` of passing tests, not direct writes to stderr.
pub fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}
