//! Any datagram through every shipped definition (text and JSON, which must parse), the reference header, the
//! CRC and the protocol-id solver: a value or a fault, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

fn programs() -> &'static [Arc<gpcap::dissect::Program>] {
    static P: OnceLock<Vec<Arc<gpcap::dissect::Program>>> = OnceLock::new();
    P.get_or_init(|| {
        [
            include_str!("../../dissectors/article.kdl"),
            include_str!("../../dissectors/example-shooter.kdl"),
            include_str!("../../dissectors/reliable.kdl"),
            include_str!("../../dissectors/netcode.kdl"),
        ]
        .iter()
        .map(|t| Arc::new(gpcap::dissect::compile("fuzz.kdl", t).expect("shipped definition")))
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    for p in programs() {
        let mut d = gpcap::dissect::Dissector::new(p.clone());
        let out = d.dissect(data);
        let _ = gpcap::present::tree::text_tree(p, &out, data);
        let mut json = Vec::new();
        let mut scratch = gpcap::present::json::JsonScratch::default();
        gpcap::present::json::fields(&mut json, p, &out, data, &mut scratch);
        let _: serde_json::Value = serde_json::from_slice(&json).expect("valid JSON");
    }
    let _ = gpcap::validate::read_header(data, &gpcap::validate::HeaderFormat::default());
    let _ = gpcap::validate::article::read_packet(data);
    let _ = gpcap::identify::solve32(data);
});
