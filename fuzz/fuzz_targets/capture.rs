//! Any file as a capture through the reader, the link/IP/UDP decode and the whole
//! analysis: frames or a located error, never a panic or unbounded memory. Seed the
//! corpus with real captures: cp ../captures/* ../../shared/corpus/tcpdump/* corpus/capture/
#![no_main]

use gpcap::analysis::{Analyzer, Config};
use gpcap::capture::CaptureReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = CaptureReader::from_read("fuzz", std::io::Cursor::new(data.to_vec())) else { return };
    let mut a = Analyzer::new(Config {
        protocol_id: Some(gpcap::validate::ProtocolId::new32(0x5566_7788)),
        any_port: true,
        ..Config::default()
    });
    while let Ok(Some(f)) = r.next_frame() {
        a.frame(&f);
    }
    let _ = a.finish();
});
