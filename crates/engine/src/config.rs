//! What the engine looks for: the protocol (id, ports, header layout, definition) and
//! the limits it works within.

use gpcap_dissect::Program;
pub use gpcap_dissect::program::Checksum;
use gpcap_wire::validate::{HeaderFormat, ProtocolId};
use std::sync::Arc;

/// The default [`Config::flow_state_budget`]: with the flow table (16,384 flows of a few
/// KB each) and the reassembly budget, `analyze` stays under 200 MB whatever the input.
pub const FLOW_STATE_BUDGET: usize = 32 << 20;

#[derive(Debug, Clone)]
pub struct Config {
    pub protocol_id: Option<ProtocolId>,
    /// UDP ports of the protocol (either end).
    pub ports: Vec<u16>,
    /// Validate every UDP datagram, whatever its ports.
    pub any_port: bool,
    pub format: HeaderFormat,
    pub program: Option<Arc<Program>>,
    /// The link MTU for "IP datagram over the link MTU" findings.
    pub link_mtu: u32,
    /// Total reassembly memory across flows.
    pub reassembly_budget: usize,
    /// Total memory of the per-flow analysis state that grows with the traffic (ack
    /// windows and timelines, the burst window): a flow past it is counted, its figures
    /// marked partial.
    pub flow_state_budget: usize,
    /// Flows tracked (sequence analysis, reassembly); the datagrams of further flows are
    /// validated and counted together. `MAX_FLOWS` unless a test wants a small table.
    pub max_flows: usize,
    /// Message streams counted over all flows (`streams::MAX_STREAMS`; shards share it
    /// out, as the flows).
    pub max_streams: usize,
    /// Where the protocol id came from, for the report.
    pub protocol_source: String,
    /// The connection requests carried another id than the definition's, and it was
    /// taken (an encrypted definition without `--protocol-id`).
    pub protocol_id_taken: Option<gpcap_decrypt::TakenProtocolId>,
    /// The validation the protocol declares.
    pub checksum: Checksum,
    /// Keys and inner layers (`--key`, `-d A -d B`, `dissect-as`): see `engine::layers`.
    pub stack: Option<Arc<super::layers::Stack>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            protocol_id: None,
            ports: Vec::new(),
            any_port: false,
            format: HeaderFormat::default(),
            program: None,
            link_mtu: 1500,
            reassembly_budget: 32 << 20,
            flow_state_budget: FLOW_STATE_BUDGET,
            max_flows: super::MAX_FLOWS,
            max_streams: super::streams::MAX_STREAMS,
            protocol_source: "none".into(),
            protocol_id_taken: None,
            checksum: Checksum::Crc32,
            stack: None,
        }
    }
}

impl Config {
    /// Whether validation can run apart from the ordered stage: not a datagram's
    /// messages, nor a checksum that needs what the conversation learnt (workers see no
    /// conversation). Decryption and inner layers run in the ordered stage, which holds
    /// the keys learnt and the inner layers' engines, so a stack is no obstacle here;
    /// other pipelines (export's) build what they show on workers and ask
    /// [`Config::pipelinable`].
    pub fn analyzable(&self) -> bool {
        !self
            .program
            .as_ref()
            .is_some_and(|p| p.messages.is_some() || p.params.tracks())
    }

    /// [`Config::analyzable`] without a stack: workers read every datagram as it is on
    /// the wire.
    pub fn pipelinable(&self) -> bool {
        let stacked = self.stack.as_ref().is_some_and(|s| s.active());
        !stacked && self.analyzable()
    }

    /// Takes the protocol id (and, when none are set, the ports) that identification found.
    pub fn use_identified(&mut self, c: &crate::identify::Candidate) {
        self.protocol_id = Some(c.protocol_id);
        self.protocol_source = "identified".into();
        if self.ports.is_empty() {
            self.ports = c.ports.clone();
        }
    }

    /// Parameters from a compiled definition.
    pub fn from_program(p: Arc<Program>) -> Self {
        Config {
            protocol_id: p.params.protocol_id,
            ports: p.params.ports.clone(),
            format: p.params.format,
            checksum: p.params.checksum,
            protocol_source: "definition".into(),
            program: Some(p),
            ..Config::default()
        }
    }

    /// Width of the sequence field: where sequence analysis wraps.
    pub fn sequence_bits(&self) -> u32 {
        self.program.as_ref().map_or(16, |p| p.sequence_bits)
    }

    /// A datagram between these ports belongs to the protocol (a scan: see `PortSet`
    /// for the per-datagram test).
    pub fn on_port(&self, src: u16, dst: u16) -> bool {
        self.any_port || self.ports.contains(&src) || self.ports.contains(&dst)
    }

    /// The ports as a set to test every datagram against.
    pub fn port_set(&self) -> PortSet {
        PortSet::new(self.any_port, &self.ports)
    }

    /// Name of packet type `t`, from the definition or the reference layout.
    pub fn type_id(&self, name: &str) -> Option<u32> {
        let p = self.program.as_ref()?;
        p.packets
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.type_id)
            .or_else(|| (p.fragment.is_some() && name == "fragment").then_some(p.fragment_type))
    }
}

/// The protocol's ports as a bitmap: one load per datagram end, however many ports
/// identification found (a server's 128 client ports were a scan of 129 per end).
#[derive(Clone)]
pub struct PortSet {
    any: bool,
    bits: Box<[u64; 1024]>,
}

impl PortSet {
    pub fn new(any: bool, ports: &[u16]) -> Self {
        let mut bits = Box::new([0u64; 1024]);
        for &p in ports {
            bits[p as usize >> 6] |= 1 << (p & 63);
        }
        PortSet { any, bits }
    }

    #[inline]
    fn has(&self, p: u16) -> bool {
        self.bits[p as usize >> 6] >> (p & 63) & 1 == 1
    }

    #[inline]
    pub fn on_port(&self, src: u16, dst: u16) -> bool {
        self.any || self.has(src) || self.has(dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_set_agrees_with_the_port_list() {
        let ports: Vec<u16> = (50_000..50_128).chain([40_000, 0, 63, 64, 65_535]).collect();
        let cfg = Config {
            ports,
            ..Config::default()
        };
        let set = cfg.port_set();
        for p in (0..=u16::MAX)
            .step_by(7)
            .chain([0, 63, 64, 65_535, 40_000, 50_127, 50_128])
        {
            assert_eq!(set.on_port(p, 1), cfg.on_port(p, 1), "port {p}");
            assert_eq!(set.on_port(1, p), cfg.on_port(1, p), "port {p}");
        }
        assert!(PortSet::new(true, &[]).on_port(1, 2));
    }
}
