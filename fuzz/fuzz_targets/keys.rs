//! Key logs and key files: any text or bytes read without a panic, and clients that
//! connect several times from one address decrypted connection by connection (see
//! gen_keys.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "gen_keys.rs"]
mod gen_keys;

fuzz_target!(|data: &[u8]| {
    gen_keys::run(data);
});
