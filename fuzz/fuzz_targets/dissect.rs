//! Any datagram through the article and shooter definitions, the reference header, the
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
        let _ = gpcap::present::tree::json_tree(p, &out, data);
    }
    let _ = gpcap::validate::read_header(data, &gpcap::validate::HeaderFormat::default());
    let _ = gpcap::validate::article::read_packet(data);
    let _ = gpcap::identify::solve32(data);
});
