//! Decryption of protocols whose definition declares an encryption scheme
//! (`encryption "netcode-1.02"`): keys, the scheme, and the per-conversation state that
//! turns a captured datagram into its plaintext.

pub mod ahead;
#[cfg(feature = "crypto")]
mod decryptor;
pub mod keys;
pub mod netcode;
#[cfg(feature = "crypto")]
pub(crate) mod replay;
#[cfg(not(feature = "crypto"))]
mod without;

#[cfg(feature = "crypto")]
use ahead::Opened;
use gpcap_wire::decode::FlowId;
use gpcap_wire::validate::ProtocolId;
use serde::Serialize;
use std::net::SocketAddr;

#[cfg(feature = "crypto")]
pub use decryptor::Decryptor;
#[cfg(not(feature = "crypto"))]
pub use without::Decryptor;

/// The run's decryption state for `secrets`, protocol id `protocol_id` (`None` in a
/// build without the `crypto` feature, which cannot use keys: encrypted bodies are then
/// read as when no key is given).
pub fn decryptor(secrets: std::sync::Arc<keys::Secrets>, protocol_id: u64) -> Option<Decryptor> {
    #[cfg(feature = "crypto")]
    return Some(Decryptor::new(secrets, protocol_id));
    #[cfg(not(feature = "crypto"))]
    {
        let _ = (secrets, protocol_id);
        None
    }
}

/// Connections whose keys are learnt from requests at most (then counted as no key).
pub const MAX_CONNECTIONS: usize = 65_536;

/// What decryption made of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The plaintext is in the buffer: the header, then the body, MAC removed.
    Decrypted,
    /// The MAC failed under the connection's key.
    MacFailure,
    /// The plaintext is in the buffer, but the receiver had seen this sequence of the
    /// connection's direction already, or it is older than its replay window: netcode.c
    /// drops it unread.
    Replayed,
    /// No key for this connection: its request is not in the capture and no key log
    /// names it.
    NoKey,
    /// Not encrypted (or not a packet this scheme knows).
    Clear,
}

/// Decryption counters of sealed packets (every packet but a connection request, whose
/// token is counted apart), in total and per flow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Counts {
    /// Packets whose MAC held (replays included).
    pub decrypted: u64,
    pub mac_failures: u64,
    pub no_key: u64,
    /// Of the decrypted, replays (netcode 1.02's replay protection).
    pub replayed: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.decrypted += o.decrypted;
        self.mac_failures += o.mac_failures;
        self.no_key += o.no_key;
        self.replayed += o.replayed;
    }

    #[cfg(feature = "crypto")]
    fn count(&mut self, o: Outcome) {
        match o {
            Outcome::Decrypted => self.decrypted += 1,
            Outcome::Replayed => {
                self.decrypted += 1;
                self.replayed += 1;
            }
            Outcome::MacFailure => self.mac_failures += 1,
            Outcome::NoKey => self.no_key += 1,
            Outcome::Clear => {}
        }
    }
}

/// One flow's decryption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FlowCounts {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    #[serde(flatten)]
    pub counts: Counts,
}

/// The protocol id the connection requests carried in the clear, taken in place of the
/// definition's (which no packet's additional data held).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TakenProtocolId {
    pub definition: ProtocolId,
    pub requests: ProtocolId,
}

impl TakenProtocolId {
    /// The definition gave `definition`; the requests carried `requests`.
    pub fn new(definition: ProtocolId, requests: ProtocolId) -> Self {
        TakenProtocolId { definition, requests }
    }
}

/// `decryption` in the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Report {
    pub scheme: String,
    /// Where keys came from: `private key`, `key log`, both, or `none`.
    pub keys: String,
    #[serde(flatten)]
    pub total: Counts,
    /// Connection requests whose private connect token opened (their keys learnt).
    pub tokens_opened: u64,
    /// Requests whose token did not open under the private key.
    pub token_failures: u64,
    /// Requests read without the private key: their token not tried (a key log may
    /// give their connection's keys).
    pub tokens_unread: u64,
    /// Only when the requests carried another protocol id than the definition's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_id_from_requests: Option<TakenProtocolId>,
    /// Decrypted keep-alives, payloads and disconnects of flows past the table of
    /// replay windows ([`MAX_CONNECTIONS`] directions): not judged for replay.
    #[serde(skip_serializing_if = "is_zero")]
    pub replay_not_judged: u64,
    pub flows: Vec<FlowCounts>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Report {
    /// Folds in a shard's (disjoint flows).
    pub fn merge(&mut self, o: Report) {
        self.total.add(&o.total);
        self.tokens_opened += o.tokens_opened;
        self.token_failures += o.token_failures;
        self.tokens_unread += o.tokens_unread;
        self.protocol_id_from_requests = self.protocol_id_from_requests.or(o.protocol_id_from_requests);
        self.replay_not_judged += o.replay_not_judged;
        for f in o.flows {
            match self.flows.iter_mut().find(|x| x.src == f.src && x.dst == f.dst) {
                Some(x) => x.counts.add(&f.counts),
                None => self.flows.push(f),
            }
        }
        self.flows.sort_by_key(|f| (f.src, f.dst));
    }

    /// One line for the text report.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} with {}: {} sealed packets decrypted ({} replayed), {} MAC failures, {} with no key",
            self.scheme,
            self.keys,
            self.total.decrypted,
            self.total.replayed,
            self.total.mac_failures,
            self.total.no_key
        );
        if self.replay_not_judged > 0 {
            s.push_str(&format!(
                "; {} not judged for replay (past {MAX_CONNECTIONS} flows)",
                self.replay_not_judged
            ));
        }
        if self.tokens_opened + self.token_failures > 0 {
            s.push_str(&format!(
                "; connect tokens opened {} of {}",
                self.tokens_opened,
                self.tokens_opened + self.token_failures
            ));
        }
        if self.tokens_unread > 0 {
            s.push_str(&format!(
                "; {} connect tokens not read (no private key)",
                self.tokens_unread
            ));
        }
        if let Some(t) = self.protocol_id_from_requests {
            s.push_str(&format!(
                "; protocol id {} taken from the connection requests (the definition's is {})",
                t.requests, t.definition
            ));
        }
        if self.total.decrypted == 0 && self.total.mac_failures + self.token_failures > 0 {
            s.push_str(" — nothing decrypted: the key is not this capture's");
        }
        s
    }
}
