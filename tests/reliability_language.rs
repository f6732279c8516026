//! The definition language around reliability layers: datagram kinds beside messages,
//! fields visible to the blocks that follow them, roles on some paths only, magics of
//! any length, and the ack roles `check` refuses because nothing could be matched.

mod common;

use common::{gpcap_ok, udp_capture};
use gpcap::dissect::{self, Dissector};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;

/// Datagram kinds by a header flag byte (as RakNet's): offline datagrams with a 16-byte
/// magic, ack datagrams of ranges, data datagrams with a 24-bit number and messages
/// whose length is in bits, each split where its flag says so.
const KINDS: &str = r#"protocol "kinds" { ports 9000; checksum "none"; types 3; max-message-size 4096; fragment-size 4; }
header {
    bits flags 8
    if "flags & 0x80" {
        if "flags & 0x40" {
            derived kind 1 role=type
        }
        else {
            derived kind 2 role=type
        }
    }
    else {
        derived kind 0 role=type
    }
}
struct range {
    bits single 8
    le-uint start 3
    if "!single" {
        le-uint end 3
    }
}
packet 0 "offline" {
    check magic="00ffff00 fefefefe fdfdfdfd 12345678"
}
packet 1 "ack" {
    be-uint count 2
    array ranges "count" {
        range
    }
}
packet 2 "data" info="data" {
    le-uint number 3 role=sequence
    messages
}
messages {
    bits reliability 8
    be-uint length_bits 2
    if "reliability & 1" {
        le-uint reliable_number 3 role=sequence stream="reliable"
    }
    if "reliability & 0x10" {
        be-uint split_count 4 role=fragment-count
        be-uint split_id 2
        be-uint split_index 4 role=fragment-id key="split_id"
        bytes part "(length_bits + 7) / 8" role=fragment-data
    }
    else {
        bytes data "(length_bits + 7) / 8"
    }
    if "flags & 0x08" {
        derived pair 1
    }
}
"#;

const MAGIC: &str = "00fffe00fefefefefdfdfdfd12345678";

fn program(text: &str) -> Arc<dissect::Program> {
    Arc::new(dissect::compile("t.kdl", text).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))))
}

/// A data datagram: its number, then (reliable number, split (count, id, index), bytes).
type Message<'a> = (Option<u32>, Option<(u32, u16, u32)>, &'a [u8]);

fn data(flags: u8, number: u32, messages: &[Message]) -> Vec<u8> {
    let mut p = vec![flags];
    p.extend_from_slice(&number.to_le_bytes()[..3]);
    for (reliable, split, bytes) in messages {
        let r = u8::from(reliable.is_some()) | if split.is_some() { 0x10 } else { 0 };
        p.push(r);
        p.extend_from_slice(&((bytes.len() * 8) as u16).to_be_bytes());
        if let Some(n) = reliable {
            p.extend_from_slice(&n.to_le_bytes()[..3]);
        }
        if let Some((count, id, index)) = split {
            p.extend_from_slice(&count.to_be_bytes());
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&index.to_be_bytes());
        }
        p.extend_from_slice(bytes);
    }
    p
}

fn offline(magic: &str) -> Vec<u8> {
    let mut p = vec![0x01];
    p.extend(
        (0..magic.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&magic[i..i + 2], 16).unwrap()),
    );
    p
}

fn ack(ranges: &[(u32, Option<u32>)]) -> Vec<u8> {
    let mut p = vec![0xc0];
    p.extend_from_slice(&(ranges.len() as u16).to_be_bytes());
    for (start, end) in ranges {
        p.push(u8::from(end.is_none()));
        p.extend_from_slice(&start.to_le_bytes()[..3]);
        if let Some(e) = end {
            p.extend_from_slice(&e.to_le_bytes()[..3]);
        }
    }
    p
}

fn value(p: &dissect::Program, d: &dissect::Dissection, path: &str) -> Option<dissect::Value> {
    (0..d.fields.len())
        .find(|&i| dissect::path_of(p, d, i) == path)
        .map(|i| d.fields[i].value)
}

#[test]
fn datagram_kinds_and_messages_in_one_definition() {
    let p = program(KINDS);
    assert!(p.kinds);
    let mut d = Dissector::new(p.clone());
    // A data datagram: its kind, its own sequence, messages reading the header's flags.
    let x = d.dissect(&data(0x8c, 7, &[(Some(0), None, b"hi"), (None, None, b"abc")]));
    assert_eq!(
        (x.fault.as_ref(), x.packet_type, x.sequence),
        (None, Some(2), Some(7))
    );
    assert_eq!(x.messages.len(), 2);
    assert_eq!(x.messages[0].streams().next().map(|s| s.sequence), Some(0));
    assert_eq!(x.messages[1].streams().count(), 0);
    assert_eq!(value(&p, &x, "messages[1].pair"), Some(dissect::Value::Int(1)));
    assert_eq!(
        value(&p, &x, "messages[1].data").map(|v| matches!(v, dissect::Value::Bytes { len: 3, .. })),
        Some(true)
    );
    // An ack datagram: no sequence, no messages, not a bad header.
    let x = d.dissect(&ack(&[(0, None), (2, Some(5))]));
    assert_eq!(
        (x.fault.as_ref(), x.packet_type, x.sequence),
        (None, Some(1), None)
    );
    assert!(x.messages.is_empty());
    // The 16-byte magic, compared whole: one byte off is a failed check at it.
    let x = d.dissect(&offline("00ffff00fefefefefdfdfdfd12345678"));
    assert_eq!((x.fault.as_ref(), x.packet_type), (None, Some(0)));
    let x = d.dissect(&offline(MAGIC));
    let f = x.fault.unwrap();
    assert_eq!((f.kind.code(), f.field.as_str(), f.bit), ("check", "check", 8));
    assert!(f.reason.contains("00fffe00"), "{}", f.reason);
}

#[test]
fn analyze_counts_kinds_and_the_messages_of_the_kinds_that_carry_them() {
    let dir = std::env::temp_dir().join(format!("gpcap-kinds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (def, cap) = (dir.join("kinds.kdl"), dir.join("kinds.pcap"));
    std::fs::write(&def, KINDS).unwrap();
    let (c, s): (SocketAddr, SocketAddr) =
        ("10.0.0.1:5000".parse().unwrap(), "10.0.0.2:9000".parse().unwrap());
    // A message split in three (4-byte parts), the middle part in its own datagram.
    let datagrams = vec![
        (c, s, offline("00ffff00fefefefefdfdfdfd12345678")),
        (
            c,
            s,
            data(
                0x84,
                0,
                &[(Some(0), None, b"hi"), (Some(1), Some((3, 9, 0)), b"abcd")],
            ),
        ),
        (c, s, data(0x84, 1, &[(Some(2), Some((3, 9, 2)), b"ij")])),
        (s, c, ack(&[(0, Some(1))])),
        (c, s, data(0x84, 2, &[(Some(3), Some((3, 9, 1)), b"efgh")])),
    ];
    udp_capture(&cap, datagrams);
    let (d, c) = (def.to_str().unwrap(), cap.to_str().unwrap());
    let r: Value = serde_json::from_str(&gpcap_ok(&["analyze", "-d", d, c, "--json"])).unwrap();
    let brief = gpcap_ok(&["dissect", "-d", d, c, "--brief"]);
    std::fs::remove_dir_all(&dir).ok();
    let up = &r["flows"][0];
    // By datagram kind (the message type's slot after them counts reassembled ones).
    assert_eq!(up["types"], serde_json::json!([1, 0, 3, 0]));
    assert_eq!(up["seq"]["received"], 3);
    assert_eq!(r["flows"][1]["types"], serde_json::json!([0, 1, 0, 0]));
    // Messages of the data kind only: no datagram is counted as carrying none.
    assert_eq!(r["messages"]["total"], 4);
    assert_eq!(r["messages"]["per_datagram"], serde_json::json!({"1": 2, "2": 1}));
    assert_eq!(up["streams"][0]["seq"]["received"], 4);
    // Fragment roles where the split flag says so: the message put back together.
    assert_eq!(r["reassembly"]["completed"], 1);
    assert_eq!(r["reassembly"]["attacks"]["count_changed"], 0);
    assert!(brief.contains("reassembled from frames 2,5,3"), "{brief}");
}

/// Each block reads the fields before it: the header's in the messages block and in
/// every body, the messages block's in a message, the fields around a struct's use in
/// the struct — read where it is used, two uses with two different fields.
#[test]
fn fields_are_visible_to_the_blocks_that_follow_them() {
    let text = r#"protocol "v" { checksum "none"; }
header { bits scale 8; bits sequence 8 role=sequence; bits type 8 role=type; }
struct scaled {
    bits raw 8
    derived value "raw * scale"
}
packet 0 "a" {
    scaled first
    bits scale 8
    scaled second
}
packet 1 "b" {
    derived doubled "scale * 2"
}
"#;
    let p = program(text);
    let mut d = Dissector::new(p.clone());
    // scale 3, sequence 1, type 0 (a): raw 5 at scale 3, then scale 10, raw 2.
    let x = d.dissect(&[3, 1, 0, 5, 10, 2]);
    assert_eq!(x.fault, None);
    assert_eq!(value(&p, &x, "first.value"), Some(dissect::Value::Int(15)));
    assert_eq!(value(&p, &x, "second.value"), Some(dissect::Value::Int(20)));
    let x = d.dissect(&[4, 1, 1]);
    assert_eq!(value(&p, &x, "doubled"), Some(dissect::Value::Int(8)));
    // One struct used where `len` is two different fields: each use reads its own.
    let text = r#"protocol "s" { checksum "none"; }
header { bits n 8; }
messages { bits kind 8 role=type; }
struct item { bytes data "len"; }
message 1 "one" { bits len 8; item first; }
message 2 "two" { bits pad 8; bits len 8; item second; }
"#;
    let p = program(text);
    let mut d = Dissector::new(p.clone());
    let x = d.dissect(&[0, 1, 2, b'a', b'b', 2, 0, 1, b'c']);
    assert_eq!((x.fault.as_ref(), x.messages.len()), (None, 2));
    let len = |path: &str| match value(&p, &x, path) {
        Some(dissect::Value::Bytes { len, .. }) => len,
        v => panic!("{path}: {v:?}"),
    };
    assert_eq!(
        (len("messages[0].first.data"), len("messages[1].second.data")),
        (2, 1)
    );
    // A message's body reads the header and the messages block.
    let text = r#"protocol "m" { checksum "none"; }
header { bits unit 8; }
messages { bits kind 8 role=type; bits count 8; }
message 1 "m" { bytes data "count * unit"; }
"#;
    let p = program(text);
    let mut d = Dissector::new(p);
    let x = d.dissect(&[2, 1, 3, 1, 2, 3, 4, 5, 6]);
    assert_eq!((x.fault, x.messages.len()), (None, 1));
}

fn refusal(text: &str) -> String {
    match dissect::compile("bad.kdl", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => dissect::render(&e, false),
    }
}

#[test]
fn roles_on_some_paths_only() {
    // Fragment roles apart on one path: refused at the message, naming what is missing.
    let head = "protocol \"p\" { checksum \"none\"; }\nheader { bits n 8; }\nmessages { bits kind 8 role=type; bool split; }\n";
    let e = refusal(&format!(
        "{head}message 1 \"m\" {{ if \"split\" {{ bits id 8 role=fragment-id; bits count 8 role=fragment-count; }}\nbytes data 2 role=fragment-data; }}\n"
    ));
    assert!(
        e.contains("on some path through `message \"m\"` a message has role=fragment-data without role=fragment-id, role=fragment-count"),
        "{e}"
    );
    // Together under the flag: accepted.
    let ok = format!(
        "{head}message 1 \"m\" {{ if \"split\" {{ bits id 8 role=fragment-id; bits count 8 role=fragment-count; bytes part 2 role=fragment-data; }}\nelse {{ bytes data 2; }}\n}}\n"
    );
    program(&ok);
    // A datagram kind's sequence: in the body of the kinds that have one.
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits t 2 role=type; if \"t == 1\" { bits s 8 role=sequence; }\n}\npacket 1 \"a\" { bits s2 8 role=sequence; }\n",
    );
    assert!(
        e.contains("more than one field with role=sequence on one path"),
        "{e}"
    );
}

#[test]
fn acks_nothing_could_match_are_refused() {
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits h 8; }\nmessages { bits kind 8 role=type; bits a 16 role=ack; }\n",
    );
    assert!(e.contains("a message's role=ack needs `stream=\"NAME\"`"), "{e}");
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits t 1 role=type; }\nmessages { bits kind 8 role=type; }\npacket 0 \"data\" { messages; }\npacket 1 \"ack\" { bits a 16 role=ack; }\n",
    );
    assert!(
        e.contains("`a` acks the other direction's datagram sequence, but no datagram has one"),
        "{e}"
    );
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits s 16 role=sequence; bits b 32 role=ack-bits; }\npacket 0 \"a\" { }\n",
    );
    assert!(
        e.contains("role=ack-bits counts back from a role=ack field, and there is none"),
        "{e}"
    );
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits h 8; }\nmessages { bits kind 8 role=type; bits seq 16 role=sequence stream=\"s\"; }\nmessage 1 \"ack\" { bits a 16 role=ack stream=\"s\"; bits t 16 role=ack-time; }\n",
    );
    assert!(
        e.contains("role=ack-time echoes a send time, but no field has role=send-time"),
        "{e}"
    );
    // A 32-bit ack of a 32-bit stream: accepted, and the stream wraps at 32 bits.
    let p = program(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits h 8; }\nmessages { bits kind 8 role=type; bits sn 32; }\nmessage 1 \"push\" { derived seq \"sn\" role=sequence stream=\"s\"; }\nmessage 2 \"ack\" { bits a 32 role=ack stream=\"s\"; }\n",
    );
    assert_eq!(p.params.streams[0].bits, 32);
    // A derived field wraps at the field it copies, or at the mask it ends with.
    let p = program(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits s 16; derived seq \"s & 0xff\" role=sequence; derived a \"s\" role=ack; }\npacket 0 \"a\" { }\n",
    );
    assert_eq!((p.sequence_bits, p.params.ack_width), (8, 16));
}

#[test]
fn a_derived_type_field_is_told_how_many_types() {
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits s 8 role=sequence; bits f 8; derived kind \"f >> 4\" role=type; }\npacket 0 \"a\" { }\n",
    );
    assert!(
        e.contains("the type field `kind` is derived: how many types there are is not known")
            && e.contains("`types N` in the protocol block"),
        "{e}"
    );
}

/// `info=` on a message type: each message's own fields, in `dissect --brief` (and the
/// TUI, which writes Info with the same function).
#[test]
fn message_info_templates_are_filled_per_message() {
    let text = r#"protocol "i" { ports 9000; checksum "none"; }
header { bits n 8; }
messages { bits kind 8 role=type; bits sn 8; }
message 1 "push" info="push {sn}+{len}" { bits len 8; bytes data "len"; }
message 2 "ack" info="ack {sn}" { }
"#;
    let dir = std::env::temp_dir().join(format!("gpcap-minfo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (def, cap) = (dir.join("i.kdl"), dir.join("i.pcap"));
    std::fs::write(&def, text).unwrap();
    let (c, s): (SocketAddr, SocketAddr) =
        ("10.0.0.1:5000".parse().unwrap(), "10.0.0.2:9000".parse().unwrap());
    udp_capture(&cap, [(c, s, vec![0, 2, 4, 1, 5, 1, b'x', 2, 6, 2, 6])]);
    let brief = gpcap_ok(&[
        "dissect",
        "-d",
        def.to_str().unwrap(),
        cap.to_str().unwrap(),
        "--brief",
    ]);
    std::fs::remove_dir_all(&dir).ok();
    assert!(brief.contains("ack 4, push 5+1, ack 6 ×2"), "{brief}");
}

/// Fragments flagged first and last (SCTP's B and E bits) over a stream's sequence:
/// put back together in any order, a message of one fragment whole as sent.
#[test]
fn flagged_fragments_are_reassembled() {
    let text = r#"protocol "flagged" { ports 9000; checksum "none"; }
header { }
messages {
    bits kind 8 role=type
    bits stream_id 16
    bits tsn 32 role=sequence stream="data" key="stream_id"
}
message 0 "data" {
    bool begins role=fragment-first
    bool ends role=fragment-last
    bits unused 6
    bits length 16
    bytes data "length" role=fragment-data
}
"#;
    let chunk = |tsn: u32, first: bool, last: bool, data: &[u8]| {
        let mut p = vec![0, 7, 0];
        p.extend_from_slice(&tsn.to_le_bytes());
        p.push(u8::from(first) | u8::from(last) << 1);
        p.extend_from_slice(&(data.len() as u16).to_le_bytes());
        p.extend_from_slice(data);
        p
    };
    let dir = std::env::temp_dir().join(format!("gpcap-flagged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (def, cap) = (dir.join("f.kdl"), dir.join("f.pcap"));
    std::fs::write(&def, text).unwrap();
    let (c, s): (SocketAddr, SocketAddr) =
        ("10.0.0.1:5000".parse().unwrap(), "10.0.0.2:9000".parse().unwrap());
    udp_capture(
        &cap,
        [
            chunk(1, true, true, b"whole"),
            chunk(3, false, false, b"mid"),
            chunk(2, true, false, b"beg"),
            chunk(4, false, true, b"end"),
        ]
        .map(|p| (c, s, p)),
    );
    let (d, c) = (def.to_str().unwrap(), cap.to_str().unwrap());
    let r: Value = serde_json::from_str(&gpcap_ok(&["analyze", "-d", d, c, "--json"])).unwrap();
    let brief = gpcap_ok(&["dissect", "-d", d, c, "--brief"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(r["reassembly"]["completed"], 1);
    assert_eq!(r["reassembly"]["single_fragment_messages"], 1);
    assert!(brief.contains("reassembled from frames 3,2,4"), "{brief}");
}
