//! Diagnostics for broken definitions (golden, with line, column and caret), and the
//! shipped definitions compile.

use gpcap::dissect;

const HEADER: &str =
    "header {\n    bits crc 32 role=crc\n    bits sequence 16 role=sequence\n    int type 0 5 role=type\n}\n";

fn diag(name: &str, text: &str) -> String {
    match dissect::compile(name, text) {
        Ok(_) => panic!("{name} should not compile"),
        Err(e) => dissect::render(&e, false),
    }
}

macro_rules! broken {
    ($test:ident, $body:expr) => {
        #[test]
        fn $test() {
            let text = format!("{HEADER}{}", $body);
            insta::assert_snapshot!(diag(concat!(stringify!($test), ".kdl"), &text));
        }
    };
}

broken!(
    unknown_field_reference,
    "packet 1 \"A\" {\n    int count 0 10\n    if \"cuont > 0\" {\n        bool flag\n    }\n}\n"
);
broken!(
    bad_range_too_wide,
    "packet 1 \"A\" {\n    int big -5000000000 5000000000\n}\n"
);
broken!(
    info_names_an_unknown_field,
    "packet 1 \"A\" info=\"{#itms} items, first {items.item}\" {\n    int n 0 4\n    array items n {\n        int item 0 9\n    }\n}\n"
);
broken!(min_greater_than_max, "packet 1 \"A\" {\n    int a 10 -10\n}\n");
broken!(unknown_struct, "packet 1 \"A\" {\n    vec3 position\n}\n");
broken!(
    type_id_clash,
    "packet 1 \"A\" {\n    bool a\n}\npacket 1 \"B\" {\n    bool b\n}\n"
);
broken!(type_id_out_of_range, "packet 9 \"far\" {\n    bool a\n}\n");
broken!(bits_too_wide, "packet 1 \"A\" {\n    bits raw 40\n}\n");
broken!(missing_argument, "packet 1 \"A\" {\n    int a 0\n}\n");
broken!(
    expression_syntax,
    "packet 1 \"A\" {\n    int n 0 3\n    if \"n = 2\" {\n        bool b\n    }\n}\n"
);
broken!(
    recursive_struct,
    "struct node {\n    bool leaf\n    node child\n}\npacket 1 \"A\" {\n    node root\n}\n"
);
broken!(unknown_enum, "packet 1 \"A\" {\n    int kind 0 3 enum=kinds\n}\n");
broken!(typo_in_primitive, "packet 1 \"A\" {\n    flaot speed\n}\n");
broken!(
    smallest_three_bits,
    "packet 1 \"A\" {\n    smallest-three q 12\n}\n"
);
broken!(
    compressed_float_resolution,
    "packet 1 \"A\" {\n    compressed-float x 0 10 0\n}\n"
);
broken!(
    duplicate_field,
    "packet 1 \"A\" {\n    bool a\n    int a 0 3\n}\n"
);
broken!(
    unknown_property,
    "packet 1 \"A\" {\n    int a 0 3 dcc=\"typo\"\n}\n"
);
broken!(
    reference_to_float,
    "packet 1 \"A\" {\n    float speed\n    array xs speed {\n        bool x\n    }\n}\n"
);

#[test]
fn missing_roles() {
    let text =
        "header {\n    bits crc 32\n    bits sequence 16 role=sequence\n}\npacket 1 \"A\" {\n    bool a\n}\n";
    insta::assert_snapshot!(diag("missing_roles.kdl", text));
}

#[test]
fn kdl_syntax_error() {
    insta::assert_snapshot!(diag("syntax.kdl", "header {\n    bits crc 32 role=crc\n"));
}

#[test]
fn errors_carry_line_and_column() {
    let text = format!("{HEADER}packet 1 \"A\" {{\n    int a 10 -10\n}}\n");
    let e = dissect::compile("x.kdl", &text).unwrap_err();
    assert_eq!((e[0].line, e[0].column), (7, 11));
    assert_eq!(e[0].short(), "x.kdl:7:11: int range has min 10 > max -10");
}

#[test]
fn shipped_definitions_compile() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/dissectors")).unwrap() {
        let path = entry.unwrap().path();
        if let Err(e) = dissect::load(&path) {
            panic!("{}", dissect::render(&e, false));
        }
    }
}

/// Regression: deeply nested blocks or expressions in a hostile definition overflowed the
/// stack (in the KDL parser and in the expression parser); both are refused now.
#[test]
fn hostile_nesting_is_refused() {
    let deep_blocks = format!(
        "{HEADER}packet 1 \"A\" {{\n{}{}}}\n",
        "struct x { ".repeat(20_000),
        "}".repeat(20_000)
    );
    let e = dissect::compile("deep.kdl", &deep_blocks).unwrap_err();
    assert_eq!(e[0].message, "blocks nest more than 64 levels deep");
    let deep_expr = format!(
        "{HEADER}packet 1 \"A\" {{\n    int n 0 3\n    if \"{}n{}\" {{\n        bool b\n    }}\n}}\n",
        "(".repeat(50_000),
        ")".repeat(50_000)
    );
    let e = dissect::compile("deep.kdl", &deep_expr).unwrap_err();
    assert_eq!(e[0].message, "expression nests more than 64 levels deep");
}

/// Regression: an expression dividing by zero evaluated to 0, so the packet was read on
/// as if valid; now the packet stops with a located fault.
#[test]
fn division_by_zero_is_a_located_fault() {
    let text = format!(
        "protocol \"t\" {{\n    end-check #null\n}}\n{HEADER}packet 1 \"A\" {{\n    int n 0 3\n    array items \"8 / n\" {{\n        bool b\n    }}\n}}\n"
    );
    let p = std::sync::Arc::new(
        dissect::compile("div.kdl", &text).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))),
    );
    let mut w = gpcap::bits::WriteStream::new();
    for (v, bits) in [(0u32, 32), (1, 16), (1, 3), (0, 2)] {
        gpcap::bits::Stream::bits(&mut w, &mut { v }, bits).unwrap();
    }
    let bytes = w.finish();
    let d = dissect::Dissector::new(p.clone()).dissect(&bytes);
    let fault = d.fault.expect("a fault");
    assert_eq!(fault.kind, dissect::FaultKind::Expression);
    assert_eq!(fault.kind.code(), "expression");
    assert_eq!(fault.field, "items");
    assert_eq!(fault.bit, 53);
    // Validation alone finds it too.
    let mut v = dissect::Dissector::new(p);
    v.record = false;
    assert_eq!(
        v.dissect(&bytes).fault.map(|f| f.kind),
        Some(dissect::FaultKind::Expression)
    );
}

/// Regression: `else if "cond"` was accepted and compiled as a plain `else`, reading
/// the second branch whatever the condition.
#[test]
fn else_if_chains_test_their_conditions() {
    let text = format!(
        "protocol \"t\" {{\n    end-check #null\n}}\n{HEADER}packet 1 \"A\" {{\n    int mask 0 3\n    if \"mask == 2\" {{\n        bool two\n    }}\n    else if \"mask == 3\" {{\n        bits three 4\n    }}\n    else if \"mask == 1\" {{\n        bits one 6\n    }}\n    else {{\n        bits zero 2\n    }}\n}}\n"
    );
    let p = std::sync::Arc::new(
        dissect::compile("elif.kdl", &text).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))),
    );
    let mut d = dissect::Dissector::new(p.clone());
    for (mask, field, bits) in [
        (0u32, "zero", 2u64),
        (1, "one", 6),
        (2, "two", 1),
        (3, "three", 4),
    ] {
        let mut w = gpcap::bits::WriteStream::new();
        for (v, n) in [(0u32, 32), (7, 16), (1, 3), (mask, 2), (0, bits as u32)] {
            gpcap::bits::Stream::bits(&mut w, &mut { v }, n).unwrap();
        }
        let bytes = w.finish();
        let out = d.dissect(&bytes);
        assert!(out.fault.is_none(), "mask {mask}: {:?}", out.fault);
        let names: Vec<String> = (0..out.fields.len())
            .map(|i| dissect::path_of(&p, &out, i))
            .collect();
        assert_eq!(
            names.last().map(String::as_str),
            Some(field),
            "mask {mask}: {names:?}"
        );
        assert_eq!(out.fields.last().unwrap().bit_len, bits);
    }
    // Anything else after `else` is refused where it stands.
    let bad = format!(
        "{HEADER}packet 1 \"A\" {{\n    int mask 0 3\n    if \"mask == 2\" {{\n        bool a\n    }}\n    else \"mask == 3\" {{\n        bool b\n    }}\n}}\n"
    );
    let e = dissect::render(&dissect::compile("bad.kdl", &bad).unwrap_err(), false);
    assert!(e.contains("`else` takes no condition of its own"), "{e}");
    assert!(e.contains("bad.kdl:11:10"), "{e}");
}

/// Regression (reproducer F3): a definition was read whole with no limit (`check
/// /dev/zero` grew past 2 GB; a 10 MB one took 25 s and 1.5 GB) and "too many fields"
/// pointed at `header`, not at the field that crossed the limit.
#[test]
fn definitions_are_bounded_and_the_limit_is_located() {
    let dir = std::env::temp_dir().join(format!("gpcap-defs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.kdl");
    let fields: String = (0..100_000)
        .map(|i| format!("    bool field_number_{i}\n"))
        .collect();
    std::fs::write(&big, format!("{HEADER}packet 1 \"A\" {{\n{fields}}}\n")).unwrap();
    let e = dissect::render(&dissect::load(&big).unwrap_err(), false);
    assert!(e.contains("larger than 1024 KiB"), "{e}");
    if std::path::Path::new("/dev/zero").exists() {
        let start = std::time::Instant::now();
        let e = dissect::render(
            &dissect::load(std::path::Path::new("/dev/zero")).unwrap_err(),
            false,
        );
        assert!(e.contains("larger than"), "{e}");
        assert!(start.elapsed().as_secs() < 10);
    }
    // Under the size limit but over the field limit: located at the field past it.
    let many = dir.join("many.kdl");
    let fields: String = (0..70_000).map(|i| format!("bool b{i}\n")).collect();
    std::fs::write(&many, format!("{HEADER}packet 1 \"A\" {{\n{fields}}}\n")).unwrap();
    let e = dissect::render(&dissect::load(&many).unwrap_err(), false);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.contains("too many fields"), "{e}");
    let line: usize = e
        .split("many.kdl:")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    assert!(line > 65_000, "located at line {line}: {e}");
}

// Regressions (#17, item 13): what `check` let through or answered with a cascade.
broken!(
    extra_argument,
    "packet 1 \"A\" {\n    bool jump 1\n    bits b 3 4\n}\n"
);
broken!(
    duplicate_enum_value,
    "enum color {\n    red 1\n    green 2\n    blue 1\n}\npacket 1 \"A\" {\n    int c 0 3 enum=color\n}\n"
);
broken!(
    fragment_count_too_narrow,
    "protocol { max-fragments 256; fragment-count \"count\" }\nfragment {\n    bits id 8 role=fragment-id\n    bits count 8 role=fragment-count\n    rest data role=fragment-data\n}\n"
);
broken!(
    else_on_the_closing_line,
    "packet 1 \"A\" {\n    bool x\n    if \"x\" {\n        bool a\n    } else {\n        bool b\n    }\n}\n"
);
broken!(
    hash_comment,
    "# a comment\npacket 1 \"A\" {\n    bool x # why\n}\n"
);

/// `count-1` lets 256 fragments fit in 8 bits: no error there.
#[test]
fn count_minus_one_fits_256_in_8_bits() {
    let text = format!(
        "protocol {{ id 1; max-fragments 256; fragment-count \"count-1\" }}\n{HEADER}fragment {{\n    bits id 8 role=fragment-id\n    bits count 8 role=fragment-count\n    rest data role=fragment-data\n}}\n"
    );
    assert!(dissect::compile("ok.kdl", &text).is_ok());
}

/// A value too wide for its field names the field when a packet is generated.
#[test]
fn generator_write_errors_name_the_field() {
    let e = gpcap::generate::GenError::Field {
        field: "num_fragments".into(),
        error: gpcap::bits::BitError::new(
            gpcap::bits::ErrorKind::Invalid {
                what: "value wider than its bit width",
            },
            55,
        ),
    };
    assert_eq!(
        e.to_string(),
        "field `num_fragments`: invalid argument: value wider than its bit width at bit 55"
    );
}

/// #13: validation is declared. `checksum "none"` needs no role=crc field; a role=crc
/// field under it, or another checksum name, is refused with a located diagnostic.
#[test]
fn a_protocol_may_declare_no_checksum() {
    let plain = "protocol { checksum \"none\"; ports 41000 }\nheader {\n    bits sequence 16 role=sequence\n    int type 0 3 role=type\n}\npacket 1 \"a\" {\n    bool x\n}\n";
    let p = dissect::compile("plain.kdl", plain).unwrap();
    assert_eq!(p.params.checksum, gpcap::dissect::program::Checksum::None);
    assert!(!p.has_role(gpcap::dissect::program::Role::Crc));
    let with_crc = format!("protocol {{ checksum \"none\" }}\n{HEADER}");
    let e = diag("crc.kdl", &with_crc);
    assert!(
        e.contains("has role=crc, but the protocol declares `checksum \"none\"`"),
        "{e}"
    );
    let e = diag("bad.kdl", &format!("protocol {{ checksum \"md5\" }}\n{HEADER}"));
    assert!(
        e.contains("bad.kdl:1:21: checksum is \"crc32\", \"crc32c\", \"adler32\" or \"none\""),
        "{e}"
    );
}

/// #13: leaving `end-check` out means no end check (it used to apply "end of packet" to
/// every body unless `end-check #null` said otherwise).
#[test]
fn end_check_only_when_declared() {
    let body = "packet 1 \"a\" {\n    bool x\n}\n";
    let none = dissect::compile("none.kdl", &format!("{HEADER}{body}")).unwrap();
    assert_eq!(none.params.end_check, None);
    let declared = format!("protocol {{ end-check \"end of packet\" }}\n{HEADER}{body}");
    let declared = dissect::compile("declared.kdl", &declared).unwrap();
    assert_eq!(declared.params.end_check, Some(gpcap::bits::END_OF_PACKET));
    let off = format!("protocol {{ end-check #null }}\n{HEADER}{body}");
    assert_eq!(dissect::compile("off.kdl", &off).unwrap().params.end_check, None);
}

const NO_CRC: &str = "protocol { checksum \"none\"; ports 41000; max-fragments 16 }\n";

fn compile_ok(text: &str) -> gpcap::dissect::program::Program {
    dissect::compile("ok.kdl", text).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false)))
}

/// #13: role fields may sit inside branches, a different field on each path; a path
/// without one, or two on one path, is refused where it happens.
#[test]
fn role_fields_are_placed_one_per_path() {
    let two_paths = format!(
        "{NO_CRC}header {{\n    bits long 1\n    if \"long\" {{\n        bits seq_long 16 role=sequence\n    }}\n    else {{\n        bits seq_short 8 role=sequence\n    }}\n}}\npacket 0 \"a\" {{\n    bool x\n}}\n"
    );
    let p = compile_ok(&two_paths);
    let mut d = dissect::Dissector::new(std::sync::Arc::new(p));
    // long = 1, then 16 bits of sequence (0x0105 >> 1); long = 0, then 8 (0x04 >> 1).
    assert_eq!(d.dissect(&[0x05, 0x01, 0x00]).sequence, Some(0x82));
    assert_eq!(d.dissect(&[0x04, 0x00]).sequence, Some(2));
    // A sequence on some paths only (a datagram kind without one): accepted, and a
    // datagram on the other path carries none.
    let some = format!(
        "{NO_CRC}header {{\n    bits long 1\n    if \"long\" {{\n        bits seq 16 role=sequence\n    }}\n}}\npacket 0 \"a\" {{\n    bool x\n}}\n"
    );
    let mut d = dissect::Dissector::new(std::sync::Arc::new(compile_ok(&some)));
    let x = d.dissect(&[0x00]);
    assert_eq!((x.sequence, x.fault), (None, None));
    let none = format!("{NO_CRC}header {{\n    bits long 1\n}}\npacket 0 \"a\" {{\n    bool x\n}}\n");
    insta::assert_snapshot!(diag("no_sequence.kdl", &none));
    let twice = format!(
        "{NO_CRC}header {{\n    bits seq 16 role=sequence\n    bits again 16 role=sequence\n}}\npacket 0 \"a\" {{\n    bool x\n}}\n"
    );
    insta::assert_snapshot!(diag("sequence_twice.kdl", &twice));
    let repeated = format!(
        "{NO_CRC}header {{\n    bits seq 16 role=sequence\n    array acks 2 {{\n        bits ack 16 role=ack\n    }}\n}}\npacket 0 \"a\" {{\n    bool x\n}}\n"
    );
    assert!(diag("repeated.kdl", &repeated).contains("more than one field with role=ack on one path"));
}

/// #13: without a type field, fragments are told apart by a declared condition.
#[test]
fn fragments_without_a_type_need_a_condition() {
    let text = format!(
        "{NO_CRC}header {{\n    bits flags 8\n    bits seq 16 role=sequence\n}}\nfragment {{\n    bits id 8 role=fragment-id\n    bits count 8 role=fragment-count\n    rest data role=fragment-data\n}}\npacket 0 \"a\" {{\n    rest payload\n}}\n"
    );
    insta::assert_snapshot!(diag("fragment_without_condition.kdl", &text));
    let p = compile_ok(&text.replace("fragment {", "fragment when=\"flags & 1\" {"));
    assert_eq!((p.fragment_type, p.type_name(1)), (1, Some("fragment")));
    let mut d = dissect::Dissector::new(std::sync::Arc::new(p));
    let frag = d.dissect(&[0x01, 7, 0, 2, 3, 0xaa, 0xbb]);
    assert_eq!(frag.packet_type, Some(1));
    let f = frag.fragment.unwrap();
    assert_eq!((f.id, f.count, f.data_offset, f.data_len), (2, 3, 5, 2));
    let whole = d.dissect(&[0x00, 7, 0, 0xaa]);
    assert_eq!(
        (whole.packet_type, whole.fragment, whole.sequence),
        (Some(0), None, Some(7))
    );
}

/// #13: derived fields compute a value from earlier ones (16-bit wrap by masking) and
/// read no bits; a default is a derived value in the `else` of an optional field.
#[test]
fn derived_fields_and_defaults() {
    let text = format!(
        "{NO_CRC}header {{\n    bits has_bits 1\n    bits seq 16 role=sequence\n    bits delta 8\n    derived ack \"(seq - delta) & 0xffff\" role=ack\n    if \"has_bits\" {{\n        bits b 8\n    }}\n    else {{\n        derived b 0xff\n    }}\n    derived ack_bits \"b\" role=ack-bits\n}}\npacket 0 \"a\" {{\n}}\n"
    );
    let p = compile_ok(&text);
    let mut d = dissect::Dissector::new(std::sync::Arc::new(p));
    // has_bits 0, seq 1, delta 2: ack wraps to 65535, the absent byte is 0xff.
    let bits = |v: &[u64]| -> Vec<u8> {
        // pack LSB first: 1 + 16 + 8 bits
        let x = v[0] | v[1] << 1 | v[2] << 17;
        x.to_le_bytes()[..4].to_vec()
    };
    let x = d.dissect(&bits(&[0, 1, 2]));
    assert_eq!((x.ack, x.ack_bits), (Some(65535), Some(0xff)));
    let derived = x.fields.iter().filter(|f| f.kind == "derived").count();
    assert_eq!(derived, 3);
    assert!(
        x.fields
            .iter()
            .filter(|f| f.kind == "derived")
            .all(|f| f.bit_len == 0)
    );
}

/// The README's example definition compiles as printed.
#[test]
fn readme_example_compiles() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme.find("```kdl\n").unwrap() + 7;
    let end = start + readme[start..].find("```").unwrap();
    compile_ok(&readme[start..end]);
}

/// Every example of README's *Describing a reliability layer* compiles as printed.
#[test]
fn readme_reliability_examples_compile() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme.find("### Describing a reliability layer").unwrap();
    let end = start + readme[start..].find("\n### Checks").unwrap();
    let mut rest = &readme[start..end];
    let mut n = 0;
    while let Some(at) = rest.find("```kdl\n") {
        let body = &rest[at + 7..];
        let stop = body.find("```").unwrap();
        compile_ok(&body[..stop]);
        rest = &body[stop + 3..];
        n += 1;
    }
    assert_eq!(n, 8);
}
