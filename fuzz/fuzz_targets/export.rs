//! Random definitions (built from the language's constructs) × random captures (the
//! input's tail cut into datagrams, some on the protocol's port) through `export`: every
//! table it writes reads back as Parquet, with column names distinct ignoring case at
//! every level; an export that fails leaves no file under a final name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::Arc;

#[path = "gen_def.rs"]
mod gen_def;
use gen_def::{Choices, definition};

fn check_names(fields: &arrow_schema::Fields, at: &str) {
    let mut seen = std::collections::HashSet::new();
    for f in fields {
        assert!(seen.insert(f.name().to_lowercase()), "duplicate column {at}{} in {fields:?}", f.name());
        match f.data_type() {
            arrow_schema::DataType::Struct(inner) => check_names(inner, &format!("{at}{}.", f.name())),
            arrow_schema::DataType::List(item) => {
                if let arrow_schema::DataType::Struct(inner) = item.data_type() {
                    check_names(inner, &format!("{at}{}[].", f.name()));
                }
            }
            _ => {}
        }
    }
}

fn parquet_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            parquet_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut c = Choices(data);
    let text = definition(&mut c);
    let Ok(p) = gpcap::dissect::compile("fuzz.kdl", &text) else { return };
    let dir = std::env::temp_dir().join(format!("gpcap-fuzz-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("c.pcap");
    {
        use gpcap::generate::{Link, ip_packets};
        let link = Link::Ethernet { vlan: None };
        let mut w = gpcap::capture::PcapWriter::new(std::fs::File::create(&pcap).unwrap(), link.linktype(), 65535, true).unwrap();
        let (a, b): (std::net::SocketAddr, std::net::SocketAddr) = ("10.0.0.1:50000".parse().unwrap(), "10.0.0.2:40000".parse().unwrap());
        let mut rest = c.0;
        let mut k = 0i64;
        while !rest.is_empty() && k < 64 {
            let n = (rest[0] as usize % 48 + 1).min(rest.len());
            let (d, r) = rest.split_at(n);
            rest = r;
            let (src, dst) = if k % 3 == 2 { (b, a) } else { (a, b) };
            let f = link.frame(&ip_packets(src, dst, d, k as u32, false, 1500)[0], false);
            w.write(1_700_000_000_000_000_000 + k * 1_000_000, &f, f.len() as u32).unwrap();
            k += 1;
        }
    }
    let cfg = gpcap::Config::from_program(Arc::new(p));
    let ds = dir.join("ds");
    let keys = vec![("day".to_string(), "1".to_string())];
    if let Ok(mut sink) = gpcap::sinks::export::Export::new(&ds, &keys, "c.pcap", cfg.clone()) {
        let ran = gpcap::run::run_files(&[pcap.clone()], cfg, &mut sink, &mut |_, _| {});
        let closed = ran.is_ok() && sink.close().is_ok();
        let mut files = Vec::new();
        parquet_files(&ds, &mut files);
        for f in &files {
            let name = f.file_name().unwrap().to_string_lossy();
            assert!(!name.ends_with(".tmp"), "temporary file left: {}", f.display());
            assert!(closed, "an export that failed left {}", f.display());
            let file = std::fs::File::open(f).unwrap();
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", f.display()));
            check_names(reader.schema().fields(), "");
            for batch in reader.build().unwrap() {
                batch.unwrap_or_else(|e| panic!("{}: {e}\n{text}", f.display()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
});
