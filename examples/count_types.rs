//! A sink of your own: counts each packet type's packets and bytes and the datagrams
//! that failed validation, over captures read through gpcap's engine.
//!
//! `cargo run --example count_types [DEFINITION] [CAPTURE...]`

use gpcap::SinkError;
use gpcap::{Flow, PacketEvent, Program, Sink};
use std::collections::BTreeMap;
use std::sync::Arc;

struct TypeCounts {
    program: Arc<Program>,
    /// Packet type name → (packets, bytes).
    types: BTreeMap<String, (u64, u64)>,
    invalid: u64,
}

impl Sink for TypeCounts {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if !e.is_game() {
            return Ok(Flow::Continue);
        }
        if e.status != gpcap::Status::Ok {
            self.invalid += 1;
            return Ok(Flow::Continue);
        }
        // A fragment is counted once, as the packet it reassembles into.
        let (Some(t), None) = (e.packet_type, e.fragment) else {
            return Ok(Flow::Continue);
        };
        let name = self.program.type_name(t).unwrap_or("?").to_string();
        let entry = self.types.entry(name).or_default();
        entry.0 += 1;
        entry.1 += e.size as u64;
        Ok(Flow::Continue)
    }
}

fn main() -> Result<(), gpcap::Error> {
    let mut args = std::env::args().skip(1);
    let definition = args.next().unwrap_or_else(|| "dissectors/article.kdl".into());
    let mut captures: Vec<std::path::PathBuf> = args.map(Into::into).collect();
    if captures.is_empty() {
        captures.push("captures/article.pcap".into());
    }
    let program = gpcap::load_definition(&definition)?;
    let mut counts = TypeCounts {
        program: program.clone(),
        types: BTreeMap::new(),
        invalid: 0,
    };
    let files = gpcap::run(&captures, gpcap::Config::from_program(program), &mut counts)?;
    let frames: u64 = files.iter().map(|f| f.frames).sum();
    println!("{frames} frames, {} game datagrams not valid", counts.invalid);
    for (name, (packets, bytes)) in &counts.types {
        println!("{name:>12} {packets:>8} packets {bytes:>10} bytes");
    }
    Ok(())
}
