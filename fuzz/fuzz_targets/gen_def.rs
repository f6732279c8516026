//! Definitions built from the language's constructs, chosen by a fuzzer's input (shared
//! by the `constructs` and `export` targets).

/// Reads choices from the input; zeros once it runs out.
pub struct Choices<'a>(pub &'a [u8]);

impl Choices<'_> {
    pub fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    pub fn below(&mut self, n: u8) -> u8 {
        self.byte() % n.max(1)
    }
}

const NAMES: [&str; 8] = ["a", "b", "A", "frame", "seq", "n", "x_1", "capture"];
const EXPRS: [&str; 10] = [
    "a + 1",
    "n & 7",
    "1/0",
    "a % (n - n)",
    "(a << 3) | b",
    "!a",
    "n > 2 && a",
    "seq - 1",
    "bogus",
    "\\t1 + a",
];
const TEMPLATES: [&str; 8] = [
    "{a}",
    "{#l}",
    "{{a}}",
    "{l[3].a}",
    "{a[99999999999999999999]}",
    "{s.a} {#l}",
    "x}",
    "{",
];

fn field(c: &mut Choices, structs: usize, depth: u32, out: &mut String, indent: &str) {
    let name = NAMES[c.below(NAMES.len() as u8) as usize];
    match c.below(16) {
        0 => *out += &format!("{indent}bits {name} {}\n", c.below(34)),
        1 => *out += &format!("{indent}le-uint {name} {}\n", c.below(10)),
        2 => *out += &format!("{indent}le-uint {name} \"n & 7\"\n"),
        3 => {
            *out += &format!(
                "{indent}derived {name} \"{}\"\n",
                EXPRS[c.below(EXPRS.len() as u8) as usize]
            )
        }
        4 if structs > 0 => *out += &format!("{indent}S{} {name}\n", c.below(structs as u8)),
        5 if structs > 0 => *out += &format!("{indent}S{}\n", c.below(structs as u8)),
        6 if depth < 3 => {
            *out += &format!("{indent}array {name} {} {{\n", c.below(5));
            field(c, structs, depth + 1, out, &format!("{indent}    "));
            *out += &format!("{indent}}}\n");
        }
        7 if depth < 3 => {
            *out += &format!(
                "{indent}if \"{}\" {{\n",
                EXPRS[c.below(EXPRS.len() as u8) as usize]
            );
            field(c, structs, depth + 1, out, &format!("{indent}    "));
            *out += &format!("{indent}}}\n{indent}else {{\n");
            field(c, structs, depth + 1, out, &format!("{indent}    "));
            *out += &format!("{indent}}}\n");
        }
        8 => {
            *out += &format!(
                "{indent}bits {name} 8 role={}\n",
                ["sequence", "ack", "ack-bits", "type"][c.below(4) as usize]
            )
        }
        9 if depth < 3 => {
            *out += &format!(
                "{indent}list {name} end=\"{}\" {{\n",
                EXPRS[c.below(EXPRS.len() as u8) as usize]
            );
            field(c, structs, depth + 1, out, &format!("{indent}    "));
            *out += &format!("{indent}}}\n");
        }
        11 => {
            let min = i64::from(c.below(40)) - 20;
            *out += &format!("{indent}int {name} {min} {}\n", min + i64::from(c.byte()) * 3);
        }
        12 if depth < 3 => {
            *out += &format!(
                "{indent}relative-list {name} {} {{\n",
                1 + u32::from(c.byte()) * 5
            );
            field(c, structs, depth + 1, out, &format!("{indent}    "));
            *out += &format!("{indent}}}\n");
        }
        13 => {
            *out += &[
                format!("{indent}compressed-float {name} -10 10 0.5\n"),
                format!("{indent}compressed-vector {name} -100 100 0.25\n"),
                format!("{indent}smallest-three {name} {}\n", 2 + c.below(9)),
                format!("{indent}vector {name}\n"),
            ][c.below(4) as usize]
        }
        14 if depth < 3 => {
            let count = ["\"n & 7\"", "\"a + 1\"", "3", "n"][c.below(4) as usize];
            *out += &format!("{indent}array {name} {count} {{\n");
            field(c, structs, depth + 1, out, &format!("{indent}    "));
            *out += &format!("{indent}}}\n");
        }
        15 if depth < 3 => {
            // A flag and the fields it guards: the plan's conditional runs.
            *out += &format!(
                "{indent}bool {name}\n{indent}if \"{}{name}\" {{\n",
                ["", "!"][c.below(2) as usize]
            );
            field(c, structs, depth + 1, out, &format!("{indent}    "));
            *out += &format!("{indent}}}\n");
        }
        10 => {
            // Whole-byte nodes after an alignment.
            *out += &[
                format!("{indent}align\n"),
                format!("{indent}bytes {name} {}\n", c.below(4)),
                format!("{indent}bytes {name} \"n & 7\"\n"),
                format!("{indent}string {name} {}\n", c.below(40)),
                format!("{indent}check \"{name}\"\n"),
            ][c.below(5) as usize]
        }
        _ => *out += &format!("{indent}bool {name}\n"),
    }
}

pub fn definition(c: &mut Choices) -> String {
    let mut d = String::new();
    let structs = c.below(8) as usize;
    for s in 0..structs {
        d += &format!("struct S{s} {{\n");
        for _ in 0..1 + c.below(12) {
            // A struct uses only earlier ones: deep nests of many uses.
            field(c, s, 0, &mut d, "    ");
        }
        d += "}\n";
    }
    let per = ["flow", "sender", "bogus"][c.below(3) as usize];
    let end = ["", "    end-check \"end\"\n"][c.below(2) as usize];
    d += &format!(
        "protocol \"f\" {{\n    checksum \"none\"\n    ports 40000\n{end}    sequence-space \"g\" per=\"{per}\"\n}}\n"
    );
    d += "header {\n    bits type 4 role=type\n";
    d += [
        "    bits sequence 16 role=sequence\n",
        "    le-uint sequence 8 role=sequence\n",
        "    le-uint sequence \"type\" role=sequence\n",
    ][c.below(3) as usize];
    d += "}\n";
    for t in 1..=1 + c.below(3) {
        let space = ["", " sequence-space=\"g\"", " sequence-space=\"h\""][c.below(3) as usize];
        let info = if c.below(2) == 0 {
            format!(" info=\"{}\"", TEMPLATES[c.below(TEMPLATES.len() as u8) as usize])
        } else {
            String::new()
        };
        d += &format!("packet {t} \"p{t}\"{space}{info} {{\n");
        for _ in 0..1 + c.below(6) {
            field(c, structs, 0, &mut d, "    ");
        }
        d += "}\n";
    }
    d
}
