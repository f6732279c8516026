//! The compiled reader against the interpreter (shared by the `native` target and
//! `tests/fuzz_long.rs`): a definition built from the input's choices, run on the
//! input's tail and every cut of it by the compiled code and by the plan executor, both
//! validating; verdicts, faults, positions, roles and slots must be the same.

// The includer declares `gen_def` beside this module.
use super::gen_def::{Choices, definition};
use gpcap::dissect::{Dissection, Dissector};

/// What a validation decides, compared whole.
fn verdict(d: &Dissection) -> impl PartialEq + std::fmt::Debug + use<> {
    (
        d.fault.clone(),
        d.bits_read,
        (d.sequence, d.packet_type, d.fragment),
        (d.ack, d.ack_bits, d.crc),
    )
}

/// Runs one input; true when the definition had compiled blocks to compare.
pub fn run(data: &[u8]) -> bool {
    let mut c = Choices(data);
    // The constructs' deliberate mistakes that only the protocol block makes, mended:
    // a definition that does not compile compares nothing.
    let text = definition(&mut c)
        .replace("per=\"bogus\"", "per=\"flow\"")
        .replace("sequence-space=\"h\"", "sequence-space=\"g\"");
    let Ok(p) = gpcap::dissect::compile("fuzz.kdl", &text) else {
        return false;
    };
    let compiled = p.native.blocks() > 0;
    let p = std::sync::Arc::new(p);
    let mut native = Dissector::new(p.clone());
    native.record = false;
    let mut plan = Dissector::new(p.clone());
    plan.record = false;
    plan.native = false;
    let payload = c.0;
    for n in (0..=payload.len()).rev().step_by(1 + payload.len() / 16) {
        let bytes = &payload[..n];
        let (a, b) = (native.dissect(bytes), plan.dissect(bytes));
        assert_eq!(verdict(&a), verdict(&b), "{text}\n{bytes:02x?}");
        assert_eq!(native.slots(), plan.slots(), "{text}\n{bytes:02x?}");
    }
    compiled
}
