//! Any sequence of game fragments (sequence, id, count, length) into the reassembler with a
//! small shared budget: no panic, memory accounted to the byte, a completed packet exactly
//! its fragments, and nothing held after the end of the capture.
#![no_main]

use gpcap::reassembly::{Budget, FlowReassembly, FragmentIn, Outcome};
use gpcap::validate::HeaderFormat;
use libfuzzer_sys::fuzz_target;

const FLOWS: usize = 3;

fuzz_target!(|data: &[u8]| {
    let fmt = HeaderFormat {
        fragment_size: 16,
        max_fragments: 64,
        ..HeaderFormat::default()
    };
    let mut budget = Budget::new(4096);
    let mut flows: Vec<FlowReassembly> = (0..FLOWS).map(|_| FlowReassembly::default()).collect();
    let (mut out, mut frames) = (Vec::new(), Vec::new());
    let payload = [0xA5u8; 32];
    for (n, op) in data.chunks_exact(6).enumerate() {
        let flow = op[0] as usize % FLOWS;
        let sequence = u16::from_le_bytes([op[1], op[2]]);
        let len = (op[5] % 18) as usize;
        let f = FragmentIn {
            sequence,
            id: op[3] as u32,
            count: op[4] as u32,
            frame: n as u64 + 1,
            data: &payload[..len],
            lead: 0,
        };
        if let Outcome::Complete { count } = flows[flow].push(f, &fmt, &mut budget, &mut out, &mut frames) {
            assert_eq!(frames.len(), count as usize);
            assert!(out.len() <= count as usize * 16);
            assert!(out.len() >= (count as usize - 1) * 16);
        }
        let held: usize = flows.iter().map(|f| f.bytes_held).sum();
        assert_eq!(held, budget.used);
        assert!(budget.peak >= budget.used);
    }
    for f in &mut flows {
        f.finish(&mut budget);
        for (_, s) in &f.by_count {
            assert!(s.completed <= s.seen);
        }
    }
    assert_eq!(budget.used, 0);
});
