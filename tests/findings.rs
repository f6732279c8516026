//! An attacker's findings, each held by a test that failed before its fix: inputs that
//! made gpcap swell, hang or print a confident wrong figure. Every input is made here.

mod common;

use common::{gpcap_run, udp_capture};
use gpcap::dissect::{self, Dissector};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A fresh directory of the test's own (removed by the caller).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpcap-findings-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

// ── 03: a message of zero bits ─────────────────────────────────────────────────────

const ZERO_BITS: &str = "protocol \"z\" { checksum \"none\"; ports 40000; }\nheader { bits h 8; }\nmessages { int t 0 0 role=type; }\nmessage 0 \"e\" { }\n";

/// `check` refuses a message header and a body that can both read nothing: the
/// messages loop could never advance (every datagram was read as 65,535 messages).
#[test]
fn a_message_that_can_read_no_bits_is_refused() {
    let e = dissect::compile("z.kdl", ZERO_BITS).err().expect("refused");
    let text = dissect::render(&e, false);
    assert!(text.contains("can read no bits"), "{text}");
    // A message that always reads a bit is fine.
    let ok = ZERO_BITS.replace("message 0 \"e\" { }", "message 0 \"e\" { bool b; }");
    dissect::compile("z.kdl", &ok).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false)));
}

/// What `check` cannot prove (a count computed from what is left) stops at run time, at
/// the first message that read nothing, which is not counted as a message.
#[test]
fn the_reader_stops_at_a_message_that_read_nothing() {
    let def = ZERO_BITS.replace(
        "message 0 \"e\" { }",
        "message 0 \"e\" { bytes x \"remaining_bits / 800\"; }",
    );
    let p = dissect::compile("z.kdl", &def).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false)));
    let mut d = Dissector::new(Arc::new(p));
    let x = d.dissect(&[1, 2]);
    let f = x.fault.expect("a fault");
    assert_eq!((f.kind.code(), f.field.as_str()), ("limit", "messages[0]"));
    assert!(f.reason.contains("read no bits"), "{}", f.reason);
    assert_eq!(x.messages.len(), 0);
    // Through analyze: one datagram, no message counted, nothing near 65,535.
    let dir = scratch("zero");
    let d = write(&dir, "z.kdl", &def);
    let cap = dir.join("z.pcap");
    udp_capture(
        &cap,
        (0..10).map(|_| (addr("10.0.0.1:5000"), addr("10.0.0.2:40000"), vec![1, 2])),
    );
    let (code, out, err) = gpcap_run(&["analyze", "-d", &d, cap.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["messages"]["total"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}
