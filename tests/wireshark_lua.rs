//! `gpcap wireshark`: the Lua dissector generated from a definition — its tables for a
//! small definition (golden), one field per path with the type its values need, and the
//! constructs refused by name. Whether the Lua reads packets as gpcap does is
//! `scripts/wireshark-compare`'s (tshark against `dissect --jsonl`, run by `.ci/run`).

use gpcap::compile_definition;
use gpcap::wireshark::generate;

/// Where the generated tables end and the interpreter every file carries begins.
const RUNTIME: &str = "-- The interpreter every generated dissector carries";

fn lua(name: &str, text: &str) -> String {
    let p = compile_definition(name, text).expect("the definition compiles");
    generate(&[p], &[format!("{name}.kdl")]).expect("generated").lua
}

fn tables(text: &str) -> String {
    let all = lua("small", text);
    let at = all.find(RUNTIME).expect("the runtime follows the tables");
    all[..at].to_string()
}

fn refusal(text: &str) -> String {
    let p = compile_definition("refused", text).expect("the definition compiles");
    generate(&[p], &["refused.kdl".into()])
        .expect_err("refused")
        .to_string()
}

const SMALL: &str = r#"
protocol "small" {
    id 0x1234
    ports 7000 7001
    end-check "end of packet"
}
enum kind {
    ping 1
    pong 2
}
header {
    bits crc 32 role=crc
    bits sequence 16 role=sequence
    int type 0 3 role=type enum=kind
}
packet 1 "ping" info="{#items} items, first {items.value}" {
    int count 0 8
    array items "count" {
        bits value 7
    }
    if "count > 2" {
        compressed-float speed -10 10 0.01 doc="m/s"
    }
    else {
        derived speed "count * 2"
    }
    string name 16
}
packet 2 "pong" {
    bool late
}
"#;

#[test]
fn a_small_definition_as_lua_tables() {
    insta::assert_snapshot!(tables(SMALL));
}

#[test]
fn one_field_per_path_named_as_gpcap_names_it() {
    let t = tables(SMALL);
    for (abbrev, ty) in [
        ("small.crc", "u32"),
        ("small.type", "i32"),
        ("small.ping.items", "none"),
        ("small.ping.items.value", "u32"),
        ("small.ping.name", "str"),
        ("small.ping.name.length", "i32"),
        ("small.ping.name.data", "bytes"),
        ("small.pong.late", "bool"),
        ("small.end_check", "u32"),
        // A compressed float in one branch, a derived integer in the other: one field
        // whose type holds both, shown as text.
        ("small.ping.speed", "str"),
    ] {
        let line = t
            .lines()
            .find(|l| l.starts_with(&format!("field(\"{abbrev}\",")))
            .unwrap_or_else(|| panic!("no field {abbrev} in\n{t}"));
        assert!(line.ends_with(&format!("\"{ty}\")")), "{abbrev}: {line}");
    }
    // The enum's names are the type field's value strings.
    assert!(t.contains("[1] = \"ping\", [2] = \"pong\""), "{t}");
}

#[test]
fn every_shipped_definition_is_generated() {
    for name in [
        "article",
        "example-shooter",
        "reliable",
        "netcode",
        "yojimbo-messages",
        "enet",
        "kcp",
    ] {
        let p = gpcap::load_definition(format!("dissectors/{name}.kdl")).expect("loads");
        let g = generate(&[p], &[format!("{name}.kdl")]).expect("generated");
        assert!(g.lua.contains(RUNTIME), "{name}");
        assert!(
            g.lua.contains(&format!("L.proto = Proto(\"{}\"", name_of(name))),
            "{name}"
        );
    }
}

fn name_of(file: &str) -> &str {
    match file {
        "yojimbo-messages" => "game",
        other => other,
    }
}

#[test]
fn a_stack_carries_rest_fields_to_the_next_layer() {
    let outer = gpcap::load_definition("dissectors/reliable.kdl").expect("loads");
    let inner = gpcap::load_definition("dissectors/yojimbo-messages.kdl").expect("loads");
    let g = generate(
        &[outer.clone(), inner],
        &["reliable.kdl".into(), "yojimbo-messages.kdl".into()],
    )
    .expect("generated");
    // reliable's payload (a `rest` without a role) is read by the game layer; its fragment
    // data (a role) is not.
    let payload = outer
        .nodes
        .iter()
        .position(|n| n.name == "payload")
        .expect("payload");
    assert!(
        g.lua.contains(&format!("L.carry = {{ [{payload}] = 2 }}")),
        "carry map"
    );
    assert!(g.lua.contains("LAYERS[2] = L"));
    assert!(g.notes.is_empty(), "{:?}", g.notes);
}

#[test]
fn an_encrypted_layer_says_what_the_lua_does_not_do() {
    let netcode = gpcap::load_definition("dissectors/netcode.kdl").expect("loads");
    let reliable = gpcap::load_definition("dissectors/reliable.kdl").expect("loads");
    let g = generate(
        &[netcode, reliable],
        &["netcode.kdl".into(), "reliable.kdl".into()],
    )
    .expect("generated");
    assert!(
        !g.lua.contains("LAYERS[2] = L"),
        "reliable is reached only through decryption"
    );
    assert_eq!(
        g.notes,
        [
            "reliable: left out — no field of a layer outside it reaches it without decryption",
            "netcode: bodies are encrypted (netcode-1.02); the Lua dissector shows them as captured — gpcap decrypts them with --key or --keylog",
        ]
    );
}

#[test]
fn a_name_wireshark_cannot_take_is_refused_by_name() {
    let e = refusal(
        r#"
protocol "odd" { id 1; ports 1; }
header { bits crc 32 role=crc; bits sequence 16 role=sequence; }
packet 0 "zero" { bits "two words" 8; }
"#,
    );
    assert_eq!(
        e,
        "odd: the field path `odd.zero.two words` cannot be written as a Wireshark Lua dissector: Wireshark field names are letters, digits, `_` and `-` between dots (and `_gpcap` is the generator's)"
    );
    let e = refusal(
        r#"
protocol "Odd" { id 1; ports 1; }
header { bits crc 32 role=crc; bits sequence 16 role=sequence; }
packet 0 "zero" { bits a 8; }
"#,
    );
    assert_eq!(
        e,
        "Odd: `protocol \"Odd\"` cannot be written as a Wireshark Lua dissector: Wireshark protocol names are lower-case letters, digits, `_` and `-`"
    );
}

#[test]
fn an_int_lua_numbers_cannot_hold_is_refused_by_name() {
    let e = refusal(
        r#"
protocol "wide" { id 1; ports 1; }
header { bits crc 32 role=crc; bits sequence 16 role=sequence; }
packet 0 "zero" {
    int far 9007199254740993 9007199254741000
}
"#,
    );
    assert_eq!(
        e,
        "wide: `int far 9007199254740993 9007199254741000` (definition line 5) cannot be written as a Wireshark Lua dissector: its bounds are beyond ±2^53, which Lua numbers do not hold exactly"
    );
}

/// KCP's count-down fragments: the fragment's remaining count and the stream whose
/// sequence places it are in the tables, for the runtime to put messages back together.
#[test]
fn count_down_fragments_are_placed_by_their_stream() {
    let p = gpcap::load_definition("dissectors/kcp.kdl").expect("loads");
    let g = generate(&[p], &["kcp.kdl".into()]).expect("generated");
    assert!(
        g.lua
            .contains("L.streams = {\n    [0] = { bits = 32, key = { 8 } },\n}"),
        "{}",
        &g.lua[..3000]
    );
    assert!(
        g.lua.contains(
            "[81] = { key = {  }, off = nil, tot = nil, rem = 17, first = nil, last = nil, as = nil },"
        ),
        "{}",
        &g.lua[..3000]
    );
    assert!(g.lua.contains("role = \"sequence\", stream = 0 }"));
    assert!(g.lua.contains("role = \"fragment-remaining\""));
}

/// A magic of bytes in quotes is a bytes field compared whole, its bytes a Lua string
/// of any byte; datagram kinds name their bodies by kind and their messages under
/// `messages`, message types numbered after the kinds.
#[test]
fn a_magic_in_quotes_and_datagram_kinds_are_written_out() {
    let text = std::fs::read_to_string("tests/fixtures/kinds-magic.kdl").expect("fixture");
    let all = lua("kinds", &text);
    let t = &all[..all.find(RUNTIME).expect("runtime")];
    assert!(
        t.contains(r#"kind = "magic", bytes = "\000\255\255\000\254\254\254\254\253\253\253\253\0184Vx" }"#),
        "{t}"
    );
    assert!(t.contains("L.kinds = true\nL.mbase = 3\n"), "{t}");
    assert!(t.contains("[2] = { name = \"data\", body = "), "{t}");
    assert!(t.contains("message = false, info = "), "{t}");
    for (abbrev, ty) in [
        ("kinds.offline.check", "bytes"),
        ("kinds.data.number", "u32"),
        ("kinds.messages", "none"),
        ("kinds.messages.reliability", "u32"),
        ("kinds.messages.part", "bytes"),
    ] {
        let line = t
            .lines()
            .find(|l| l.starts_with(&format!("field(\"{abbrev}\",")))
            .unwrap_or_else(|| panic!("no field {abbrev} in\n{t}"));
        assert!(line.ends_with(&format!("\"{ty}\")")), "{abbrev}: {line}");
    }
    assert!(!t.contains("field(\"kinds.data.messages"), "{t}");
}

#[test]
fn a_stream_lua_numbers_cannot_place_is_refused_by_name() {
    let e = refusal(
        r#"
protocol "wide" { ports 1; checksum "none"; }
header { }
messages { bits type 8 role=type; }
message 1 "data" {
    uint64 sn role=sequence stream="s"
    bits remaining 8 role=fragment-remaining
    bytes data 4 role=fragment-data
}
"#,
    );
    assert_eq!(
        e,
        "wide: the stream `s` (64 bits) placing count-down or flagged fragments cannot be written as a Wireshark Lua dissector: Lua numbers hold a placed sequence exactly up to 52 bits"
    );
}

/// Counts the packets a filter selects.
struct Selected<'f> {
    filter: &'f gpcap::Filter,
    n: u64,
}

impl gpcap::Sink for Selected<'_> {
    fn needs(&self) -> gpcap::Needs {
        gpcap::Needs {
            fields: true,
            layers: None,
        }
    }

    fn packet(&mut self, e: &gpcap::PacketEvent<'_>) -> Result<gpcap::Flow, gpcap::SinkError> {
        self.n += u64::from(self.filter.matches(e));
        Ok(gpcap::Flow::Continue)
    }
}

fn selected(text: &str) -> u64 {
    let p = gpcap::load_definition("dissectors/article.kdl").expect("loads");
    let filter = gpcap::Filter::parse(text, Some(&p)).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut sink = Selected {
        filter: &filter,
        n: 0,
    };
    gpcap::run(
        &["captures/article.pcap".into()],
        gpcap::Config::from_program(p),
        &mut sink,
    )
    .expect("read");
    sink.n
}

#[test]
fn a_filter_names_a_field_as_wireshark_does() {
    // `article.scene.objects.position.x`: the protocol's name in front, as the generated
    // dissector names the field, selects what the path alone selects.
    for (with, without, n) in [
        (
            "article.scene.objects.position.x > 10",
            "scene.objects.position.x > 10",
            432,
        ),
        ("article.sequence > 65530", "sequence > 65530", 5),
        ("article.fragment_id == 1", "fragment_id == 1", 16),
    ] {
        assert_eq!((selected(with), selected(without)), (n, n), "{with}");
    }
}
