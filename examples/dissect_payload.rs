//! Dissects a game payload your program already holds (here a datagram of the article
//! protocol, as it travels in UDP) and walks its fields.
//!
//! `cargo run --example dissect_payload [DEFINITION] [HEX]`

use gpcap::{Label, Value};

/// A datagram of `captures/article.pcap`: CRC32, protocol id, sequence, type and body.
const DATAGRAM: &str = "a9acb2100100595e03e2ac0899";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let definition = args.next().unwrap_or_else(|| "dissectors/article.kdl".into());
    let hex = args.next().unwrap_or_else(|| DATAGRAM.into());
    let payload = decode_hex(&hex).ok_or("the payload is not hex")?;
    let program = gpcap::load_definition(&definition)?;
    // Keep one Dissector for many payloads: it reuses its buffers.
    let mut dissector = gpcap::Dissector::new(program.clone());
    let d = dissector.dissect(&payload);
    for f in &d.fields {
        let name = match f.label {
            Label::Index(i) => format!("[{i}]"),
            other => gpcap::label_name(&program, other).to_string(),
        };
        // Numbers as numbers; text, bytes, vectors and enum names as gpcap shows them.
        let value = match f.value {
            Value::UInt(v) => v.to_string(),
            Value::Int(v) => v.to_string(),
            _ => gpcap::present::tree::value_text(&program, f, &payload),
        };
        let indent = "  ".repeat(f.depth as usize);
        println!(
            "{indent}{name} = {value}  (bit {}, {} bits)",
            f.bit_offset, f.bit_len
        );
    }
    match &d.fault {
        Some(fault) => println!(
            "fault: {} at {} bit {}",
            fault.kind.code(),
            fault.field,
            fault.bit
        ),
        None => println!("{} bits read, no fault", d.bits_read),
    }
    Ok(())
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}
