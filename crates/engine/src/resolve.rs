//! Protocol resolution: from a definition, flags and a sample of the traffic, what the
//! engine should look for and why. Every command resolves through here.

use super::Config;
use crate::identify::{Identification, Identifier};
use gpcap_dissect::Program;
use gpcap_wire::capture::CaptureError;
use gpcap_wire::validate::ProtocolId;
use std::sync::Arc;

/// What the user said about the protocol (all optional).
#[derive(Debug, Clone, Default)]
pub struct Choice {
    pub program: Option<Arc<Program>>,
    pub protocol_id: Option<ProtocolId>,
    pub ports: Vec<u16>,
    pub any_port: bool,
    pub reassembly_budget: Option<usize>,
    pub mtu_budget: Option<u32>,
    pub link_mtu: Option<u32>,
    /// Keys and inner layers.
    pub stack: Option<Arc<super::layers::Stack>>,
}

/// The configuration, and how the protocol id was found when nothing gave it.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub cfg: Config,
    pub identification: Option<Identification>,
}

impl Resolved {}

/// `p` with protocol id `id`, its plaintext view too.
fn with_protocol_id(p: &Arc<Program>, id: ProtocolId) -> Arc<Program> {
    if p.params.protocol_id == Some(id) {
        return p.clone();
    }
    let mut q = (**p).clone();
    q.params.protocol_id = Some(id);
    q.params.plaintext = q.params.plaintext.as_ref().map(|v| with_protocol_id(v, id));
    Arc::new(q)
}

/// The connection requests carry `found`, not the definition's `given`: every packet's
/// additional data holds the requests' id, so nothing would open under the definition's.
fn take_requests_id(cfg: &mut Config, given: ProtocolId, found: u64) {
    let id = ProtocolId {
        value: found,
        width: given.width,
    };
    cfg.protocol_id = Some(id);
    cfg.protocol_source = "connection requests".into();
    cfg.protocol_id_taken = Some(gpcap_decrypt::TakenProtocolId::new(given, id));
    if let Some(p) = cfg.program.as_mut() {
        *p = with_protocol_id(p, id);
    }
}

/// Resolves the protocol. `sample` feeds the identifier the first datagrams of the
/// traffic; it is called only when neither the definition nor a flag gives an id (nor
/// declares no checksum), or, for an encrypted definition without the flag, to read
/// the id the connection requests carry (taken when it is not the definition's). When
/// the traffic gives none either, the configuration has no id and `identification` says
/// what was tried. No ports at all means any port. Only reading the sample can fail.
pub fn resolve(
    choice: &Choice,
    sample: impl FnOnce(&mut Identifier) -> Result<(), CaptureError>,
) -> Result<Resolved, CaptureError> {
    let mut cfg = match &choice.program {
        Some(p) => Config::from_program(p.clone()),
        None => Config::default(),
    };
    if let Some(id) = choice.protocol_id {
        cfg.protocol_id = Some(id);
        cfg.protocol_source = "flag".into();
        // The definition reads the id too (a `role=protocol-id` field, the additional
        // data of an encrypted body): the flag is the id everywhere.
        if let Some(p) = cfg.program.as_mut() {
            *p = with_protocol_id(p, id);
        }
    }
    if !choice.ports.is_empty() {
        cfg.ports = choice.ports.clone();
    }
    cfg.any_port |= choice.any_port;
    cfg.stack = choice.stack.clone();
    if let Some(b) = choice.reassembly_budget {
        cfg.reassembly_budget = b;
    }
    if let Some(m) = choice.mtu_budget {
        cfg.format.mtu_budget = m;
    }
    if let Some(m) = choice.link_mtu {
        cfg.link_mtu = m;
    }
    let mut identification = None;
    let encrypted = cfg
        .program
        .as_ref()
        .is_some_and(|p| p.params.encryption.is_some());
    if choice.protocol_id.is_none()
        && encrypted
        && let Some(given) = cfg.protocol_id
    {
        let mut ident = Identifier::requests();
        sample(&mut ident)?;
        if let Some(found) = ident.request_protocol_id().filter(|&f| f != given.value) {
            take_requests_id(&mut cfg, given, found);
        }
    } else if cfg.protocol_id.is_none() && cfg.checksum == super::config::Checksum::Crc32 {
        let mut ident = Identifier::default();
        sample(&mut ident)?;
        let id = ident.finish();
        if let Some(best) = id.best() {
            cfg.use_identified(best);
        }
        identification = Some(id);
    }
    if cfg.ports.is_empty() {
        cfg.any_port = true;
    }
    Ok(Resolved { cfg, identification })
}
