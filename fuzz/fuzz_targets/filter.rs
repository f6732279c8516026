//! Any text as a display filter: parsed or refused with a position inside the text, and a
//! parsed filter evaluated on every packet of a bundled capture without a panic.
#![no_main]

use gpcap::{Config, PacketEvent};
use gpcap::Filter;
use gpcap::run::scans::load;
use gpcap::sinks::index::Index;
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::{Arc, OnceLock};

struct Fixture {
    cfg: Config,
    events: Vec<PacketEvent<'static>>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let program = gpcap::dissect::load(&root.join("dissectors/article.kdl")).expect("shipped definition");
        let cfg = Config::from_program(Arc::new(program));
        let path = root.join("captures/attacks.pcap");
        let (tx, rx) = std::sync::mpsc::channel();
        load(&path, cfg.clone(), tx);
        let mut index = Index::new(&path);
        for u in rx {
            index.apply(u);
        }
        let events = index.rows.iter().map(|r| r.event(&index.flows)).collect();
        Fixture { cfg, events }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let f = fixture();
    match Filter::parse(text, f.cfg.program.as_deref()) {
        Ok(filter) => {
            for e in &f.events {
                let _ = filter.matches(e);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
