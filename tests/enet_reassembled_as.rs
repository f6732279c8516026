//! A message reassembled from fragments inside messages, read as the message type its
//! fragment data names (`reassembled-as="TYPE"`): on ENet's capture, whose messages start
//! with the driver's id (u32 big-endian), sender, kind, receiver and 0xE7, every complete
//! message is dissected, counted, shown and filtered as that type; without the
//! declaration it stays bytes.

mod common;

use common::{gpcap_ok as gpcap, gpcap_run};
use gpcap::SinkError;
use gpcap::dissect::{self, Program};
use gpcap::{Config, Engine, Flow, Kind, PacketEvent, Sink, Status};
use serde_json::Value;
use std::sync::Arc;

const CAPTURE: &str = "tests/fixtures/enet/capture.pcap";
const DEF: &str = "dissectors/enet.kdl";

/// The application's message type, as the capture's driver writes it.
const APP_MESSAGE: &str = r#"
message 13 "app_message" {
    bits id 32
    bits sender 8
    bits kind 8
    bits receiver 8
    bits magic 8
    rest filler
}
"#;

/// enet.kdl with both fragment commands' data read as `app_message` (or a type named
/// `name`), and `app_message` as given; written to a file of the test's own.
fn definition(test: &str, name: &str, app_message: &str) -> String {
    let enet = std::fs::read_to_string(DEF).unwrap();
    let data = r#"bytes data "data_length" role=fragment-data"#;
    assert_eq!(enet.matches(data).count(), 2);
    let text = enet.replace(data, &format!(r#"{data} reassembled-as="{name}""#)) + app_message;
    let path = std::env::temp_dir().join(format!("gpcap-reassembled-as-{test}-{}.kdl", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn analyze(def: &str) -> Value {
    serde_json::from_str(&gpcap(&["analyze", "-d", def, CAPTURE, "--json"])).unwrap()
}

/// The reassembled packets of every flow, by type id.
fn reassembled_types(r: &Value) -> Vec<u64> {
    let mut out = Vec::new();
    for f in r["flows"].as_array().unwrap() {
        for (t, n) in f["reassembled_types"].as_array().unwrap().iter().enumerate() {
            if out.len() <= t {
                out.resize(t + 1, 0);
            }
            out[t] += n.as_u64().unwrap();
        }
    }
    out
}

fn lines(def: &str, filter: &str) -> Vec<String> {
    gpcap(&["dissect", "-d", def, CAPTURE, "--filter", filter, "--brief"])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn analyze_counts_reassembled_messages_under_the_named_type() {
    let def = definition("analyze", "app_message", APP_MESSAGE);
    let r = analyze(&def);
    let ra = &r["reassembly"];
    assert_eq!(
        (&ra["completed"], &ra["dissected_ok"], &ra["malformed"]),
        (&119.into(), &119.into(), &0.into())
    );
    assert_eq!(r["type_names"][13], "app_message");
    let types = reassembled_types(&r);
    assert_eq!(types.iter().sum::<u64>(), 119);
    assert_eq!(types[13], 119);
    // On one core or four, the same.
    let four: Value = serde_json::from_str(&gpcap(&[
        "analyze",
        "-d",
        &def,
        CAPTURE,
        "--json",
        "--threads",
        "4",
    ]))
    .unwrap();
    assert_eq!(four["reassembly"], r["reassembly"]);
    assert_eq!(reassembled_types(&four), types);
    // The datagrams' own figures do not move.
    let plain = analyze(DEF);
    assert_eq!(r["messages"], plain["messages"]);
    assert_eq!(r["validation"], plain["validation"]);
    // Without the declaration, a message is bytes: counted complete and ok, under no type.
    assert_eq!(reassembled_types(&plain).iter().sum::<u64>(), 0);
    assert_eq!(plain["reassembly"]["dissected_ok"], 119);
}

#[test]
fn a_message_the_type_does_not_describe_is_malformed_where_it_stops() {
    let def = definition(
        "short",
        "app_message",
        &APP_MESSAGE.replace("    rest filler\n", ""),
    );
    let r = analyze(&def);
    let ra = &r["reassembly"];
    assert_eq!((&ra["dissected_ok"], &ra["malformed"]), (&0.into(), &119.into()));
    assert_eq!(r["malformed"]["by_cause"]["trailing_bytes"], 119);
    assert_eq!(r["malformed"]["examples"][0]["frame"], 20);
    let text = gpcap(&["dissect", "-d", &def, CAPTURE, "--frame", "20"]);
    assert!(
        text.contains(
            "[Malformed: trailing_bytes at bit 64 in app_message: 2423 trailing bytes after the message]"
        ),
        "{text}"
    );
    assert_eq!(lines(&def, "reassembled && malformed").len(), 119);
    // Stopped at its first field: the fault, not the bytes.
    let def = definition(
        "first",
        "app_message",
        "message 13 \"app_message\" { bytes huge 60000; }\n",
    );
    let text = gpcap(&["dissect", "-d", &def, CAPTURE, "--frame", "20"]);
    let whole = text
        .split("[fragments in frames 19, 20]")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(whole.contains("enet type 13 (app_message)"), "{whole}");
    assert!(
        whole.contains("[Malformed: past_end at bit 0 in huge:"),
        "{whole}"
    );
    assert!(!whole.contains("    message: "), "{whole}");
}

#[test]
fn dissect_shows_the_reassembled_message_as_its_type() {
    let def = definition("dissect", "app_message", APP_MESSAGE);
    let text = gpcap(&["dissect", "-d", &def, CAPTURE, "--frame", "20"]);
    let whole = text
        .split("[fragments in frames 19, 20]")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(whole.contains("enet type 13 (app_message)"), "{whole}");
    assert!(
        whole.contains("= id: 5 (0x00000005)  [bit 0, 32 bits]"),
        "{whole}"
    );
    assert!(whole.contains("= kind: 4  [bit 40, 8 bits]"), "{whole}");
    assert!(whole.contains("= magic: 231  [bit 56, 8 bits]"), "{whole}");
    assert!(whole.contains("(2423 bytes)  [bit 64, 19384 bits]"), "{whole}");
    assert!(!whole.contains("message (bytes)"), "{whole}");
    let json: Value = serde_json::from_str(&gpcap(&[
        "dissect", "-d", &def, CAPTURE, "--frame", "20", "--json",
    ]))
    .unwrap();
    let m = &json[1];
    assert_eq!(
        (&m["packet_type"], &m["type_name"], &m["status"]),
        (&13.into(), &"app_message".into(), &"ok".into())
    );
    let f = &m["fields"];
    assert_eq!(
        (&f[0]["path"], &f[0]["value"], &f[0]["bit_len"]),
        (&"id".into(), &5.into(), &32.into())
    );
    assert_eq!((&f[2]["path"], &f[2]["value"]), (&"kind".into(), &4.into()));
    assert_eq!((&f[5]["path"], &f[5]["kind"]), (&"filler".into(), &"rest".into()));
    // Without the declaration: bytes, as before.
    let plain = gpcap(&["dissect", "-d", DEF, CAPTURE, "--frame", "20"]);
    assert!(plain.contains("enet message (bytes)"), "{plain}");
}

/// Every reassembled message: its type, verdict and the kind byte of its payload.
#[derive(Default)]
struct Messages(Vec<(Option<u32>, Status, u8)>);

impl Sink for Messages {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if e.kind == Kind::Reassembled {
            self.0
                .push((e.packet_type, e.status, e.payload.get(5).copied().unwrap_or(0)));
        }
        Ok(Flow::Continue)
    }
}

#[test]
fn filters_select_reassembled_messages_by_their_fields() {
    let def = definition("filter", "app_message", APP_MESSAGE);
    let program: Arc<Program> = Arc::new(dissect::load(std::path::Path::new(&def)).unwrap());
    let mut engine = Engine::new(Config::from_program(program), false);
    let mut sink = Messages::default();
    let mut r = gpcap::capture::CaptureReader::open(std::path::Path::new(CAPTURE)).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        engine.frame(&f, &mut sink).unwrap();
    }
    engine.finish(&mut sink);
    assert_eq!(sink.0.len(), 119);
    assert!(sink.0.iter().all(|m| (m.0, m.1) == (Some(13), Status::Ok)));
    // The kind byte of the payload, read by hand, against the dissected field.
    let large_unreliable = sink.0.iter().filter(|m| m.2 == 4).count();
    assert!(large_unreliable > 0 && large_unreliable < 119);
    assert_eq!(lines(&def, "type == app_message").len(), 119);
    assert_eq!(lines(&def, "app_message.kind == 4").len(), large_unreliable);
    assert_eq!(
        lines(&def, "kind != 4 && reassembled").len(),
        119 - large_unreliable
    );
    assert_eq!(lines(&def, "magic == 231").len(), 119);
    let five = lines(&def, "app_message.id == 5");
    assert_eq!(five.len(), 1, "{five:?}");
    assert!(
        five[0].starts_with("20 ") && five[0].contains("app_message (13)"),
        "{five:?}"
    );
}

#[test]
fn check_refuses_a_type_that_is_not_declared() {
    let def = definition("check", "app_mesage", APP_MESSAGE);
    let (code, _, err) = gpcap_run(&["check", &def]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no message type is named `app_mesage`"), "{err}");
    assert!(err.contains("did you mean `app_message`?"), "{err}");
    assert!(err.contains(":125:49"), "{err}");
    // Only a message's fragment data can say it.
    let text = "protocol \"p\" { checksum \"none\"; }\nheader { bits sequence 16 role=sequence; bits type 2 role=type; }\nfragment { bits id 8 role=fragment-id; bits n 8 role=fragment-count; rest data role=fragment-data reassembled-as=\"A\"; }\npacket 1 \"A\" { bits a 8; }";
    let e = match dissect::compile("bad.kdl", text) {
        Ok(_) => panic!("accepted"),
        Err(e) => dissect::render(&e, false),
    };
    assert!(e.contains("reassembled-as"), "{e}");
}
