//! The message, checksum and decryption paths: ENet commands, a checksum declared field
//! by field, reliable.io fragments carrying yojimbo messages, netcode.io sealed with
//! known keys and tampered with (see gen_msgs.rs), through the analysis and recorded
//! field trees: counted faults, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "gen_msgs.rs"]
mod gen_msgs;

fuzz_target!(|data: &[u8]| {
    gen_msgs::run(data);
});
