//! Definitions built from the language's constructs — nested structs used many times,
//! `le-uint` with counts read from fields, `derived` expressions, sequence spaces,
//! `info` templates, arrays, lists and `if`/`else` — chosen by the input, compiled, and
//! when they compile, run on the input's tail as a datagram with the info placeholders
//! resolved: located diagnostics or a bounded dissection, never a panic or a blow-up.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "gen_def.rs"]
mod gen_def;
use gen_def::{Choices, definition};

fuzz_target!(|data: &[u8]| {
    let mut c = Choices(data);
    let text = definition(&mut c);
    let started = std::time::Instant::now();
    match gpcap::dissect::compile("fuzz.kdl", &text) {
        Ok(p) => {
            let p = std::sync::Arc::new(p);
            let _ = gpcap::dissect::catalog(&p);
            let mut d = gpcap::dissect::Dissector::new(p.clone());
            let datagram = c.0;
            let out = d.dissect(datagram);
            let _ = gpcap::present::tree::text_tree(&p, &out, datagram);
        }
        Err(e) => {
            let _ = gpcap::dissect::render(&e, false);
        }
    }
    assert!(started.elapsed().as_secs() < 2, "slow definition:\n{text}");
});
