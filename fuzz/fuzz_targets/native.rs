//! The compiled reader decides as the interpreter: random definitions (`gen_def`) on
//! random datagrams and their cuts, the same verdicts, faults and slots either way
//! (`native_diff.rs`; `tests/fuzz_long.rs` runs it on stable).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "gen_def.rs"]
#[allow(dead_code)]
mod gen_def;
#[path = "native_diff.rs"]
mod native_diff;

fuzz_target!(|data: &[u8]| {
    native_diff::run(data);
});
