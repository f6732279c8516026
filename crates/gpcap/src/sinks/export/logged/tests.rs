//! Rows from the leaf log against rows from the field tree, the oracle: every table
//! of bundled and generated captures, array by array, and the log must have been used.

use super::super::rows::{Chunk, Rows};
use arrow_array::ArrayRef;
use gpcap_dissect::Program;
use gpcap_engine::{Config, Flow, Needs, PacketEvent, Sink, SinkError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Each game packet into two builders: one from its tree, one from its leaves where
/// the log can say them.
struct Both {
    tree: Rows,
    log: Rows,
    a: Vec<Chunk>,
    b: Vec<Chunk>,
    logged: u64,
}

impl Sink for Both {
    fn needs(&self) -> Needs {
        Needs {
            fields: true,
            ..Needs::default()
        }
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if e.is_game() {
            let (a, b) = (&mut self.a, &mut self.b);
            self.tree.add(e, &mut |c| a.push(c));
            if self.log.add_logged(e, &mut |c| b.push(c)) {
                self.logged += 1;
            } else {
                self.log.add(e, &mut |c| b.push(c));
            }
        }
        Ok(Flow::Continue)
    }
}

/// Each table's columns, as the chunks handed them on.
fn by_table(chunks: Vec<Chunk>) -> BTreeMap<usize, Vec<Vec<ArrayRef>>> {
    let mut out: BTreeMap<usize, Vec<Vec<ArrayRef>>> = BTreeMap::new();
    for c in chunks {
        let cols = out.entry(c.table).or_default();
        cols.resize_with(c.columns.len().max(cols.len()), Vec::new);
        for (k, a) in c.columns.into_iter().enumerate() {
            cols[k].push(a);
        }
    }
    out
}

/// Whether two columns cut into batches in different places hold the same values.
fn same_column(a: &[ArrayRef], b: &[ArrayRef]) -> bool {
    let (mut i, mut j, mut oi, mut oj) = (0, 0, 0, 0);
    loop {
        while i < a.len() && oi == a[i].len() {
            (i, oi) = (i + 1, 0);
        }
        while j < b.len() && oj == b[j].len() {
            (j, oj) = (j + 1, 0);
        }
        if i == a.len() || j == b.len() {
            return i == a.len() && j == b.len();
        }
        let n = (a[i].len() - oi).min(b[j].len() - oj);
        if a[i].slice(oi, n).to_data() != b[j].slice(oj, n).to_data() {
            return false;
        }
        (oi, oj) = (oi + n, oj + n);
    }
}

/// The datagrams of `capture` whose rows came from the log; panics where a table differs.
fn same_rows(capture: &Path, program: Arc<Program>) -> u64 {
    let cfg = Config::from_program(program.clone());
    let mut both = Both {
        tree: Rows::new(Some(program.clone()), &[]),
        log: Rows::new(Some(program), &[]),
        a: Vec::new(),
        b: Vec::new(),
        logged: 0,
    };
    // The engine driven here: a sink's test names no run.
    let mut engine = gpcap_engine::Engine::new(cfg, true);
    let mut r = gpcap_wire::capture::CaptureReader::open(capture).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        engine.frame(&f, &mut both).unwrap();
    }
    engine.finish(&mut both);
    let (a, b) = (&mut both.a, &mut both.b);
    both.tree.flush_all(&mut |c| a.push(c));
    both.log.flush_all(&mut |c| b.push(c));
    let (a, b) = (by_table(std::mem::take(a)), by_table(std::mem::take(b)));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{}",
        capture.display()
    );
    for (t, cols) in &a {
        assert_eq!(cols.len(), b[t].len(), "{}: table {t}", capture.display());
        for (k, col) in cols.iter().enumerate() {
            assert!(
                same_column(col, &b[t][k]),
                "{}: table {t} column {k} differs",
                capture.display()
            );
        }
    }
    both.logged
}

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn program(path: &Path) -> Arc<Program> {
    Arc::new(gpcap_dissect::load(path).unwrap())
}

#[test]
fn bundled_captures_have_the_same_rows_from_leaves_as_from_trees() {
    for (capture, def) in [
        ("clean.pcap", "article.kdl"),
        ("lossy-bursts.pcap", "article.kdl"),
        ("attacks.pcap", "article.kdl"),
        ("malformed.pcap", "article.kdl"),
        ("mtu-df.pcap", "article.kdl"),
        ("ipv6-sll2.pcapng", "example-shooter.kdl"),
        ("vlan-corrupt.pcap", "example-shooter.kdl"),
    ] {
        let p = program(&root().join("dissectors").join(def));
        let logged = same_rows(&root().join("captures").join(capture), p);
        if def == "article.kdl" {
            assert!(logged > 0, "{capture}: no datagram's rows came from the log");
        }
    }
}

/// Generated traffic of definitions with every shape the log fills (structs, enums
/// named in both branches, nested lists, strings, bytes) and every kind of damage.
#[test]
fn generated_captures_have_the_same_rows_from_leaves_as_from_trees() {
    use gpcap_generate::sim::{SimConfig, simulate};
    let dir = std::env::temp_dir().join(format!("gpcap-logged-rows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // (definition, whether its datagrams' rows come from the log; not: a definition
    // whose bit order the walk does not read, which keeps to the tree).
    let defs = [
        ("dissectors/article.kdl", true),
        ("dissectors/example-shooter.kdl", true),
        ("tests/fixtures/plan-shapes.kdl", true),
        ("tests/fixtures/enum-branches.kdl", true),
        ("tests/fixtures/enum-three-branches.kdl", true),
        ("tests/fixtures/export-merge.kdl", true),
        ("tests/fixtures/export-type-like-list.kdl", true),
        ("tests/fixtures/whole-bytes.kdl", true),
        ("tests/fixtures/export-struct-twice.kdl", true),
        ("tests/fixtures/byte-order.kdl", false),
    ];
    for (def, logs) in defs {
        let p = program(&root().join(def));
        let cfg = SimConfig {
            duration_s: 2.0,
            clients: 3,
            loss: 0.05,
            dup: 0.02,
            reorder: 0.05,
            corrupt: 0.02,
            malformed: if p.params.end_check.is_some() { 0.05 } else { 0.0 },
            big: 0.2,
            ..SimConfig::default()
        };
        let g = simulate(&p, &cfg).unwrap();
        let path = dir.join(format!("{}.pcap", def.replace('/', "_")));
        let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut w = crate::capture::PcapWriter::new(file, g.linktype, 65535, true).unwrap();
        for (t, data) in &g.frames {
            w.write(*t, data, data.len() as u32).unwrap();
        }
        drop(w);
        let logged = same_rows(&path, p);
        assert_eq!(logged > 0, logs, "{def}: {logged} datagrams' rows from the log");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plan too big to cache resolves each compact leaf at each record and keeps
/// nothing of it: the groups of a struct's leaf were kept per record, growing with the
/// capture.
#[test]
fn a_plan_too_big_to_cache_keeps_nothing_per_record() {
    use super::super::children::Key;
    use super::super::columns::TypeColumns;
    let mut src = String::from(
        "protocol \"big\" {\n ports 41602\n types 2\n checksum \"none\"\n}\nheader {\n bits sequence 8 role=sequence\n int type 0 1 role=type\n}\n\
         struct q {\n bits x 8\n}\npacket 1 \"p\" {\n",
    );
    for i in 0..super::CACHED_ENTRIES + 4 {
        src.push_str(&format!(" bool b{i}\n"));
    }
    src.push_str(" q s\n}\n");
    let p = gpcap_dissect::compile("big", &src).unwrap();
    assert!(p.plan.leaves.entries.len() > super::CACHED_ENTRIES);
    let body = p.packets[0].body;
    let mut columns = TypeColumns::new(&p, body, None);
    let mut rows = super::LogRows::new(&p, &columns, &[body]).unwrap();
    // Sequence 0, type 1 (the ninth bit), every bool false, `s.x` 0.
    let bits = 8 + 1 + (super::CACHED_ENTRIES + 4) + 8;
    let mut payload = vec![0u8; bits.div_ceil(8)];
    payload[1] = 1;
    let mut log = gpcap_dissect::LeafLog::by_element();
    assert!(log.read(&p, &payload, 1));
    for _ in 0..1000 {
        rows.append(&mut columns, &p, &log, &payload, &Key::default(), false);
    }
    assert_eq!(columns.rows, 1000);
    assert!(
        rows.scopes[0].groups.is_empty(),
        "{} groups kept",
        rows.scopes[0].groups.len()
    );
    assert!(rows.scopes[0].cache.is_empty());
}
