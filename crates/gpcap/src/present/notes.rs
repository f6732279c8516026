//! Sentences about a run's setup and its verdicts: the protocol identified from the
//! traffic, and why a report crosses a `--fail-on` gate. The engine and the sinks hand
//! over data; the words are made here.

use super::count;
use crate::sinks::analysis::Report;
use crate::sinks::analysis::gates::Gate;
use gpcap_engine::resolve::Resolved;

/// One sentence on an identified protocol, for people (`None` when none was identified).
pub fn identified(r: &Resolved) -> Option<String> {
    let id = r.identification.as_ref()?;
    let best = id.best()?;
    Some(format!(
        "Protocol id {} identified from the traffic: it validates {} of {} sampled datagrams in {} (ports {}); header read with the reference layout.",
        best.protocol_id,
        best.datagrams,
        id.sampled,
        count(best.flows.len() as u64, "flow"),
        best.ports
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// Why the report crosses `gate`, if it does.
pub fn crossed(gate: &Gate, r: &Report) -> Option<String> {
    match *gate {
        Gate::Crc if r.validation.crc_mismatch > 0 => Some(format!(
            "crc: {} failed the CRC",
            count(r.validation.crc_mismatch, "datagram")
        )),
        Gate::Mtu if r.mtu.over_budget + r.mtu.ip_fragmented > 0 => Some(format!(
            "mtu: {} payloads over the {}-byte budget, {} IP-fragmented",
            r.mtu.over_budget, r.mtu.budget, r.mtu.ip_fragmented
        )),
        Gate::Malformed if r.malformed.total > 0 => {
            Some(format!("malformed: {} malformed packets", r.malformed.total))
        }
        Gate::FragLoss(limit) if r.reassembly.fragment_loss > limit => Some(format!(
            "frag-loss: fragment loss {:.2}% over {:.2}%",
            r.reassembly.fragment_loss * 100.0,
            limit * 100.0
        )),
        Gate::Fit if !r.fit.is_good() => Some(format!("fit: {}", super::fit::summary(&r.fit))),
        _ => None,
    }
}
