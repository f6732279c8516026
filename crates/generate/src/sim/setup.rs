//! A session set up before it runs: its flows and addresses, the keys that seal them,
//! the protocol id that signs them, and the attacks mixed in.

use super::*;

pub(super) const EPOCH_NS: i64 = 1_700_000_000_000_000_000;

pub(super) fn addr(v6: bool, host: u16, port: u16) -> SocketAddr {
    if v6 {
        SocketAddr::new(IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, host)), port)
    } else {
        SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(10, 0, (host >> 8) as u8, host as u8)),
            port,
        )
    }
}

/// The protocol id that signs every packet (none when the protocol declares no
/// checksum), after refusing what gen cannot write for this definition.
pub(super) fn signing_id(p: &Program, cfg: &SimConfig) -> Result<Option<ProtocolId>, GenError> {
    use gpcap_dissect::program::Checksum;
    unwritable(p)?;
    let id = match p.params.checksum {
        Checksum::Crc32 => Some(p.params.protocol_id.ok_or(GenError::NoProtocolId)?),
        Checksum::None => None,
        Checksum::Field => {
            return Err(GenError::Unsupported {
                field: "checksum".into(),
                why: "gen writes the articles' checksum only; a checksum declared with field= (and a stand-in learnt in the conversation) is not written yet",
            });
        }
    };
    if id.is_none() && cfg.corrupt > 0.0 {
        return Err(GenError::CorruptWithoutChecksum);
    }
    if cfg.attacks && p.fragment.is_none() {
        return Err(GenError::AttacksWithoutFragments);
    }
    preflight(p)?;
    Ok(id)
}

/// Both directions of every client's conversation with the server, each starting at a
/// random sequence (some just before the wrap, so that wrap-around is exercised).
pub(super) fn flows(
    cfg: &SimConfig,
    writer: &PacketWriter,
    rng: &mut Rng,
    server: SocketAddr,
    spaces: usize,
) -> Vec<Flow> {
    use gpcap_dissect::program::Side;
    let (server_types, client_types) = (writer.types_from(Side::Server), writer.types_from(Side::Client));
    let mut flows: Vec<Flow> = Vec::new();
    for c in 0..cfg.clients.max(1) {
        let client = addr(cfg.ipv6, 0x100 + c as u16 + 1, 50000 + c as u16);
        for (src, dst, hz, types) in [
            (server, client, cfg.rate_hz, &server_types),
            (client, server, cfg.rate_hz / 2.0, &client_types),
        ] {
            let interval = ((1e9 / hz.max(0.1)) as i64).max(1);
            let start = if rng.chance(0.3) {
                65536 - rng.range(1, 200)
            } else {
                rng.range(0, 30000)
            };
            flows.push(Flow {
                src,
                dst,
                interval_ns: interval,
                // A side with no packet type to send stays silent.
                next_ns: if types.is_empty() {
                    i64::MAX
                } else {
                    EPOCH_NS + rng.range(0, interval)
                },
                ext: start,
                space_ext: vec![start; spaces],
                bad: false,
                ip_id: rng.next_u32() & 0xffff,
                name: format!("{src}>{dst}"),
                types: types.clone(),
            });
        }
    }
    flows
}

/// The sealer of `--encrypt`: a key per client, from a stream of its own so that the
/// traffic is the same as without sealing.
pub(super) fn sealer(
    p: &Program,
    cfg: &SimConfig,
    flows: &[Flow],
    server: SocketAddr,
) -> Result<Option<crate::encrypt::Sealer>, GenError> {
    match (&p.params.encryption, cfg.encrypt) {
        #[cfg(not(feature = "crypto"))]
        (Some(_), true) => {
            let _ = (flows, server);
            Err(GenError::NoCrypto)
        }
        #[cfg(feature = "crypto")]
        (Some(_), true) => {
            let clients: Vec<SocketAddr> = flows.iter().filter(|f| f.src == server).map(|f| f.dst).collect();
            let id = p.params.protocol_id.map_or(0, |i| i.value);
            let mut keys_rng = Rng::new(cfg.seed ^ 0x6b65_7973);
            Ok(Some(crate::encrypt::Sealer::new(id, &clients, &mut keys_rng)))
        }
        (None, true) => Err(GenError::NotEncrypted),
        _ => Ok(None),
    }
}

/// The fragment attacks from one attacker, each rule broken a known number
/// of times.
#[allow(clippy::too_many_arguments)]
pub(super) fn attacks(
    p: &Program,
    w: &mut PacketWriter,
    rng: &mut Rng,
    cfg: &SimConfig,
    server: SocketAddr,
    end_ns: i64,
    out: &mut std::collections::BinaryHeap<Out>,
    order: &mut u64,
) -> Result<AttackCounters, GenError> {
    let attacker = addr(cfg.ipv6, 0x606, 50066);
    let size = p.params.format.fragment_size as usize;
    let max = p.params.format.max_fragments;
    // Fragment 0 carries the packet header first when the definition says so.
    let lead = w.fragment_header(rng)?;
    let first = |data: &[u8]| [&lead[..], data].concat();
    let full = vec![0x5a; size];
    let mut t = AttackCounters::default();
    let mut send: Vec<Vec<u8>> = Vec::new();
    let mut seq = 1000u16;
    for _ in 0..3 {
        seq += 1;
        send.push(w.fragment(rng, seq as u64, 3, 3, &full)?); // id out of range
        t.id_out_of_range += 1;
        seq += 1;
        send.push(w.fragment(rng, seq as u64, 0, 3, &first(&full))?);
        send.push(w.fragment(rng, seq as u64, 1, 4, &full)?); // count changed
        t.count_changed += 1;
        seq += 1;
        send.push(w.fragment(rng, seq as u64, 0, 2, &first(&vec![0; size + 1]))?); // oversize
        t.oversize += 1;
        seq += 1;
        send.push(w.fragment(rng, seq as u64, 0, 2, &first(&[1, 2, 3]))?); // short non-last
        t.short_non_last += 1;
        seq += 1;
        send.push(w.fragment(rng, seq as u64, 0, 2, &first(&full))?);
        send.push(w.fragment(rng, seq as u64, 0, 2, &first(&full))?); // duplicate
        t.duplicate += 1;
        if max < 255 {
            seq += 1;
            send.push(w.fragment(rng, seq as u64, 0, max + 1, &first(&full))?); // count out of range
            t.count_out_of_range += 1;
        }
    }
    // Stale: far behind the newest.
    seq += 400;
    send.push(w.fragment(rng, seq as u64, 0, 2, &first(&full))?);
    send.push(w.fragment(rng, seq.wrapping_sub(300) as u64, 0, 2, &first(&full))?);
    t.stale += 1;
    for (i, payload) in send.iter().enumerate() {
        let ip = &net::ip_packets(attacker, server, payload, 0, false, 65535)[0];
        out.push(Out {
            t_ns: end_ns + 100_000_000 + i as i64 * 1_000_000,
            order: *order,
            frame: cfg.link.frame(ip, cfg.ipv6),
            datagram: None,
        });
        *order += 1;
    }
    Ok(t)
}
