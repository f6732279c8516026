//! `gpcap send -d DEF --to HOST:PORT`: a generated game session over a real UDP socket.

use super::args::SendArgs;
use super::{Result, load_program};
use crate::cli::Error;
use crate::outln;
use gpcap::generate::PacketWriter;
use gpcap::generate::Rng;
use std::process::ExitCode;

/// What was sent, as JSON on stdout.
#[derive(serde::Serialize, Default)]
struct Sent {
    datagrams: u64,
    packets: u64,
    fragmented_packets: u64,
    fragments: u64,
    /// Fragment count → packets.
    by_count: std::collections::BTreeMap<u32, u64>,
    /// Sizes of datagrams over the MTU budget (sent whole with --no-fragment).
    over_budget: Vec<usize>,
    errors: u64,
}

pub fn run(a: &SendArgs) -> Result<ExitCode> {
    let program = load_program(&a.dissector)?;
    let from = a.from.unwrap_or_else(|| {
        if a.to.is_ipv6() {
            "[::]:0".parse().unwrap_or(a.to)
        } else {
            "0.0.0.0:0".parse().unwrap_or(a.to)
        }
    });
    let sock = std::net::UdpSocket::bind(from).map_err(|e| Error::io(format!("bind {from}"), e))?;
    let mut w = PacketWriter::new(&program);
    // A test peer speaks as a client.
    let types = w.types_from(gpcap::dissect::program::Side::Client);
    if types.is_empty() {
        return Err(Error::Usage(
            "the definition has no packet types a client sends".into(),
        ));
    }
    let gen_err = |e: gpcap::generate::GenError| Error::Usage(format!("{}: {e}", a.dissector.display()));
    let mut rng = Rng::new(a.seed);
    let budget = program.params.format.mtu_budget as usize;
    let mut sent = Sent::default();
    let interval = if a.rate > 0.0 {
        std::time::Duration::from_secs_f64(1.0 / a.rate)
    } else {
        std::time::Duration::ZERO
    };
    let start = std::time::Instant::now();
    let max = w.max_packet(a.no_fragment);
    for k in 0..a.packets {
        let ty = types[rng.below(types.len() as u64) as usize];
        let scale = if rng.chance(a.big) {
            rng.range(200, 600) as u64
        } else {
            rng.range(0, 12) as u64
        };
        // The counter at the sequence field's width.
        let seq = k & (u64::MAX >> (64 - program.sequence_bits.clamp(1, 64)));
        let packet = w.packet_within(&mut rng, ty, seq, scale, max).map_err(gen_err)?;
        let datagrams = if w.splits(&packet, a.no_fragment) {
            let d = w.fragments_of(&mut rng, seq, &packet).map_err(gen_err)?;
            let n = d.len() as u32;
            sent.fragmented_packets += 1;
            sent.fragments += n as u64;
            *sent.by_count.entry(n).or_default() += 1;
            d
        } else {
            if packet.len() > budget {
                sent.over_budget.push(packet.len());
            }
            vec![(packet, None)]
        };
        sent.packets += 1;
        for (d, _) in &datagrams {
            match sock.send_to(d, a.to) {
                Ok(_) => sent.datagrams += 1,
                Err(_) => sent.errors += 1,
            }
        }
        let due = interval * (k as u32 + 1);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    outln!(
        "{}",
        serde_json::to_string(&sent).map_err(|e| Error::io("stdout", std::io::Error::other(e)))?
    );
    Ok(ExitCode::SUCCESS)
}
