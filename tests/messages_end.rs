//! Message lists that end at a count or a length field rather than the datagram's end,
//! and `remaining` / `remaining_bits` in expressions.

use gpcap::dissect::{self, Dissector};
use std::sync::Arc;

fn dissector(text: &str) -> Dissector {
    let p = dissect::compile("t.kdl", text).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false)));
    Dissector::new(Arc::new(p))
}

const BODY: &str = "message 1 \"a\" { bytes data \"len\"; }\n";

/// (fault code, field) or ("ok", number of messages).
fn outcome(d: &mut Dissector, data: &[u8]) -> (String, String) {
    let x = d.dissect(data);
    match x.fault {
        Some(f) => (f.kind.code().to_string(), f.field),
        None => ("ok".into(), x.messages.len().to_string()),
    }
}

#[test]
fn messages_end_at_a_count() {
    let mut d = dissector(&format!(
        "protocol \"m\" {{ checksum \"none\"; }}\nheader {{ bits count 8; }}\nmessages count=\"count\" {{ bits kind 8 role=type; bits len 8; }}\n{BODY}"
    ));
    let o = |d: &mut Dissector, b: &[u8]| outcome(d, b);
    assert_eq!(o(&mut d, &[2, 1, 2, b'a', b'b', 1, 0]), ("ok".into(), "2".into()));
    assert_eq!(o(&mut d, &[0]), ("ok".into(), "0".into()));
    assert_eq!(o(&mut d, &[3, 1, 0]), ("past_end".into(), "messages[1]".into()));
    assert_eq!(
        o(&mut d, &[1, 1, 0, 0xff]),
        ("trailing_bytes".into(), "messages[1]".into())
    );
    let x = d.dissect(&[3, 1, 0]);
    assert!(x.fault.unwrap().reason.contains("ended after 1 of 3 messages"));
}

#[test]
fn messages_end_at_a_length() {
    let mut d = dissector(&format!(
        "protocol \"m\" {{ checksum \"none\"; }}\nheader {{ bits length 8; }}\nmessages length=\"length\" {{ bits kind 8 role=type; bits len 8; }}\n{BODY}"
    ));
    let o = |d: &mut Dissector, b: &[u8]| outcome(d, b);
    assert_eq!(o(&mut d, &[5, 1, 1, b'a', 1, 0]), ("ok".into(), "2".into()));
    // The length runs past the datagram; a message runs past the length; bytes follow it.
    assert_eq!(
        o(&mut d, &[9, 1, 0]),
        ("past_end".into(), "messages.length".into())
    );
    assert_eq!(
        o(&mut d, &[3, 1, 2, b'a', b'b']),
        ("out_of_range".into(), "messages[0]".into())
    );
    assert_eq!(
        o(&mut d, &[2, 1, 0, 7]),
        ("trailing_bytes".into(), "messages[1]".into())
    );
}

#[test]
fn remaining_reads_the_bytes_and_bits_left() {
    let mut d = dissector(
        "protocol \"r\" { checksum \"none\"; }\nheader { bits sequence 8 role=sequence; }\npacket 0 \"p\" {\n  bytes data \"remaining - 2\"\n  derived bits_left \"remaining_bits\"\n  if \"remaining >= 2\" {\n    bits tail 16\n  }\n}\n",
    );
    let x = d.dissect(&[1, 10, 20, 30, 0x34, 0x12]);
    assert!(x.fault.is_none(), "{:?}", x.fault);
    let value = |name: &str| {
        x.fields
            .iter()
            .find(|f| {
                dissect::path_of(
                    d.program(),
                    &x,
                    x.fields.iter().position(|g| std::ptr::eq(g, *f)).unwrap(),
                ) == name
            })
            .map(|f| f.value)
    };
    assert_eq!(value("bits_left"), Some(dissect::Value::Int(16)));
    assert_eq!(value("tail"), Some(dissect::Value::UInt(0x1234)));
    // A field of that name is the field, not the builtin.
    let mut d = dissector(
        "protocol \"r\" { checksum \"none\"; }\nheader { bits sequence 8 role=sequence; bits remaining 8; }\npacket 0 \"p\" { bytes data \"remaining\"; }\n",
    );
    assert!(d.dissect(&[1, 2, 9, 9]).fault.is_none());
    // gen cannot write what it would have to measure: refused, named.
    let p = dissect::compile("r.kdl", "protocol \"r\" { checksum \"none\"; }\nheader { bits sequence 8 role=sequence; }\npacket 0 \"p\" { bytes data \"remaining\"; }\n").unwrap();
    let e = gpcap::generate::sim::preflight(&p).unwrap_err();
    assert!(e.to_string().contains("remaining"), "{e}");
}
