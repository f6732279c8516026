//! Any text as a dissector definition: a program or located diagnostics, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match gpcap::dissect::compile("fuzz.kdl", text) {
        Ok(p) => {
            let mut d = gpcap::dissect::Dissector::new(std::sync::Arc::new(p));
            let _ = d.dissect(data);
        }
        Err(e) => {
            let _ = gpcap::dissect::render(&e, false);
        }
    }
});
