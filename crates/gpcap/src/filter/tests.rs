use super::*;

/// The article's definition: types `A` (1) and `scene` (4).
fn article() -> Program {
    gpcap_dissect::load(
        &std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("dissectors/article.kdl"),
    )
    .unwrap()
}

fn parse(s: &str) -> Result<Filter, FilterError> {
    Filter::parse(s, Some(&article()))
}

fn facts() -> PacketEvent<'static> {
    PacketEvent {
        kind: Kind::Game,
        frame: 10,
        flow: Some(gpcap_engine::FlowId {
            src: "10.0.0.1:40000".parse().unwrap(),
            dst: "10.0.0.2:50000".parse().unwrap(),
        }),
        sequence: Some(150),
        packet_type: Some(4),
        size: 1300,
        status: gpcap_engine::Status::Ok,
        crc: Some(gpcap_wire::validate::CrcStatus::Ok),
        over_budget: true,
        ..PacketEvent::empty()
    }
}

fn m(s: &str) -> bool {
    parse(s).unwrap().matches(&facts())
}

#[test]
fn examples() {
    assert!(m("type == scene"));
    assert!(!m("type == A"));
    assert!(m("seq > 100"));
    assert!(!m("crc.fail"));
    assert!(!m("frag"));
    assert!(m("size > 1200"));
    assert!(m("flow 10.0.0.1:40000"));
    assert!(m("flow 10.0.0.2"));
    assert!(!m("flow 10.0.0.1:40001"));
    assert!(m("type == scene && seq > 100 && !frag"));
    assert!(m("crc.fail || size > 1200"));
    assert!(m("!(crc.fail || frag)"));
    assert!(m(""));
}

#[test]
fn errors_have_columns() {
    let e = parse("type == bogus").unwrap_err();
    assert_eq!(
        (e.column, e.message.as_str()),
        (9, "no packet type is named `bogus`")
    );
    let e = parse("seq >").unwrap_err();
    assert_eq!(e.column, 6);
    let e = parse("sze > 3").unwrap_err();
    assert_eq!(e.column, 1);
    assert!(parse("(frag").is_err());
    assert!(parse("flow nowhere").is_err());
    // Hostile nesting is refused, not a stack overflow.
    let deep = format!("{}frag", "!".repeat(100_000));
    assert!(parse(&deep).unwrap_err().message.contains("nests more than"));
    let deep = format!("{}frag{}", "(".repeat(100_000), ")".repeat(100_000));
    assert!(parse(&deep).is_err());
}

#[test]
fn field_paths_compile_or_say_what_is_near() {
    let f = parse("scene.objects.at_rest == true").unwrap();
    assert!(f.needs_engine());
    assert!(!parse("type == scene && seq > 3").unwrap().needs_engine());
    assert!(parse("objects[2].position.x >= -1.5 && all objects.at_rest == false").is_ok());
    assert!(parse("misc.name contains \"g\\\"g\"").is_ok());
    let e = parse("scene.objects.at_rst == true").unwrap_err();
    assert_eq!(
        (e.column, e.message.as_str()),
        (
            1,
            "packet type scene has no field `objects.at_rst`; did you mean `scene.objects.at_rest`?"
        )
    );
    let e = parse("type == A && objets.at_rest").unwrap_err();
    assert_eq!(e.column, 14);
    assert!(
        e.message.contains("did you mean `objects.at_rest`"),
        "{}",
        e.message
    );
    let e = parse("objects.at_rest == maybe").unwrap_err();
    assert_eq!(
        (e.column, e.message.as_str()),
        (
            20,
            "`maybe` is not a value of objects.at_rest: it takes true or false"
        )
    );
    for bad in [
        "objects[x].at_rest",
        "objects[1.at_rest",
        "objects[99999999999].at_rest",
    ] {
        let e = parse(bad).unwrap_err();
        assert!(
            e.message.contains("an element index is a number"),
            "{bad}: {}",
            e.message
        );
    }
    let e = parse("objects.position[1].x == 3").unwrap_err();
    assert!(
        e.message.contains("only an array or list takes an index"),
        "{}",
        e.message
    );
    let e = parse("misc.name == \"gg").unwrap_err();
    assert_eq!(
        (e.column, e.message.as_str()),
        (14, "the string has no closing quote")
    );
    let e = parse("a contains \"x\"").unwrap_err();
    assert!(e.message.contains("not text or bytes"), "{}", e.message);
    // Without a definition only the built-in words exist.
    let e = Filter::parse("objects.at_rest", None).unwrap_err();
    assert!(e.message.contains("need a definition"), "{}", e.message);
}

#[test]
fn directions_aliases_and_words() {
    for yes in [
        "src 10.0.0.1",
        "src 10.0.0.1:40000 and dst 10.0.0.2:50000",
        "ip.src == 10.0.0.1 && ip.dst == 10.0.0.2",
        "ip.addr == 10.0.0.2",
        "ip.src != 10.0.0.2",
        "udp.srcport == 40000 && udp.dstport == 50000",
        "udp.port == 50000 && udp.port > 45000",
        "frame.number == 10 or not frame == 10",
        "not (dst 10.0.0.1) and host 10.0.0.2",
        "over_budget",
        // Networks, as Wireshark writes them (a new user's trial typed one).
        "ip.src == 10.0.0.0/24 && ip.dst == 10.0.0.0/30",
        "ip.addr == 10.0.0.0/8 && src 10.0.0.1/32 && host 0.0.0.0/0",
        "ip.src != 10.0.1.0/24 && not ip.src == ::/0",
        "udp && ip && not ipv6",
    ] {
        assert!(m(yes), "{yes}");
    }
    for no in [
        "dst 10.0.0.1",
        "src 10.0.0.1:50000",
        "ip.src == 10.0.0.2",
        "udp.port != 50000",
        "udp.srcport > 40000",
        "late or dup or gap",
        "ip.src == 10.0.0.2/32",
        "ip.dst == 10.0.0.4/31",
        "ipv6",
        "not udp",
    ] {
        assert!(!m(no), "{no}");
    }
    assert!(
        parse("ip.src == 10.0.0.1:40000")
            .unwrap_err()
            .message
            .contains("without a port")
    );
    assert!(parse("ip.src > 10.0.0.1").is_err());
    for bad in [
        "ip.src == 10.0.0.0/33",
        "host ::/129",
        "src 10.0.0.0/x",
        "ip.src == 10.0.0.0/24:5",
    ] {
        let e = parse(bad).unwrap_err();
        assert!(e.message.contains("is not a network"), "{bad}: {}", e.message);
    }
}

#[test]
fn sequence_verdicts_and_time() {
    let mut e = facts();
    e.ts_ns = 7_500_000_000;
    e.seq_event = Some(SeqEvent::New { gap: 3 });
    let mut f = parse("gap && gap == 3 && gap > 2 && time > 2 && time < 2.6s").unwrap();
    f.start(5_000_000_000);
    assert!(f.matches(&e));
    let mut f = parse("frame.time_relative >= 2500ms && !late && !dup").unwrap();
    f.start(5_000_000_000);
    assert!(f.matches(&e));
    e.seq_event = Some(SeqEvent::Late);
    assert!(parse("late").unwrap().matches(&e) && !parse("gap || gap >= 0").unwrap().matches(&e));
    e.seq_event = Some(SeqEvent::Duplicate);
    assert!(parse("dup").unwrap().matches(&e));
    e.seq_event = Some(SeqEvent::New { gap: 0 });
    assert!(!parse("gap").unwrap().matches(&e) && parse("gap == 0").unwrap().matches(&e));
    // Absolute times compare with the epoch (UTC).
    e.ts_ns = 1_795_312_554_777_485_000; // 2026-11-22T01:55:54.777485Z
    assert!(
        parse("time >= 2026-11-22T01:55:54.5 && time < \"2026-11-22 01:55:55\"")
            .unwrap()
            .matches(&e)
    );
    assert!(parse("frame.time_epoch > 1795312554.7").unwrap().matches(&e));
    assert!(!parse("time > 2026-11-23T00:00:00Z").unwrap().matches(&e));
    assert!(
        parse("time > yesterday")
            .unwrap_err()
            .message
            .contains("is not a time")
    );
}

#[test]
fn did_you_mean_prefers_names_of_the_same_kind() {
    let hint = |s: &str| parse(s).unwrap_err().message;
    assert!(hint("lat").contains("did you mean `late`?"), "{}", hint("lat"));
    assert!(
        hint("tme > 5").contains("did you mean `time`?"),
        "{}",
        hint("tme > 5")
    );
    assert!(hint("gpa").contains("did you mean `gap`?"), "{}", hint("gpa"));
    assert!(hint("dupe").contains("did you mean `dup`?"), "{}", hint("dupe"));
    assert!(
        hint("udp.srcprt == 4").contains("`udp.srcport`"),
        "{}",
        hint("udp.srcprt == 4")
    );
    let e = Filter::parse("lat", None).unwrap_err();
    assert!(e.message.contains("did you mean `late`?"), "{}", e.message);
}

proptest::proptest! {
    /// Any arrangement of the filter's words, values and junk compiles or is refused
    /// with a column inside the text; none panics.
    #[test]
    fn any_filter_text_is_parsed_or_refused(words in proptest::collection::vec(
        proptest::sample::select(vec![
            "src", "dst", "flow", "host", "ip.src", "udp.port", "udp.srcport", "time",
            "frame.time_epoch", "gap", "late", "dup", "rtt", "never_acked", "and", "or", "udp", "ip",
            "not", "(", ")", "==", "!=", ">", "<=", "10.0.0.1", "10.0.0.1:40000",
            "[::1]:5", "5", "-1", "2.5s", "250ms", "2026-11-22T10:00:05", "\"2026-02-30 1:2\"",
            "9999-12-31T23:59:60.999999999Z", "-", ".", "objects.at_rest", "lat", "x",
        ]),
        0..12,
    )) {
        let text = words.join(" ");
        match parse(&text) {
            Ok(f) => {
                let _ = f.matches(&facts());
            }
            Err(e) => proptest::prop_assert!(e.column >= 1 && e.column <= text.chars().count() + 1),
        }
    }
}

#[test]
fn enum_names_are_values() {
    // The article's header `type` is an enum: a packet type's name alone is its test.
    assert_eq!(parse("scene").unwrap().root, parse("type == scene").unwrap().root);
    assert!(parse("type == 4").unwrap().matches(&facts()));
}
