//! What the engine looks for: the protocol (id, ports, header layout, definition) and
//! the limits it works within.

use crate::dissect::Program;
pub use crate::dissect::program::Checksum;
use crate::validate::{HeaderFormat, ProtocolId};
use std::sync::Arc;

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
    /// Flows tracked (sequence analysis, reassembly); the datagrams of further flows are
    /// validated and counted together. `MAX_FLOWS` unless a test wants a small table.
    pub max_flows: usize,
    /// Where the protocol id came from, for the report.
    pub protocol_source: String,
    /// The validation the protocol declares.
    pub checksum: Checksum,
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
            max_flows: super::MAX_FLOWS,
            protocol_source: "none".into(),
            checksum: Checksum::Crc32,
        }
    }
}

impl Config {
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

    /// A datagram between these ports belongs to the protocol.
    #[inline]
    pub fn on_port(&self, src: u16, dst: u16) -> bool {
        self.any_port || self.ports.contains(&src) || self.ports.contains(&dst)
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
