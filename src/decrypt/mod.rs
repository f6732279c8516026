//! Decryption of protocols whose definition declares an encryption scheme
//! (`encryption "netcode-1.02"`): keys, the scheme, and the per-conversation state that
//! turns a captured datagram into its plaintext.

pub mod keys;
pub mod netcode;

use crate::engine::FlowId;
use hashbrown::HashMap;
use keys::{ConnectionKeys, Secrets};
use netcode::ConnectionCiphers;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// Connections whose keys are learnt from requests at most (then counted as no key).
pub const MAX_CONNECTIONS: usize = 65_536;

/// What decryption made of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The plaintext is in the buffer: the header, then the body, MAC removed.
    Decrypted,
    /// The MAC failed under the connection's key.
    MacFailure,
    /// No key for this connection: its request is not in the capture and no key log
    /// names it.
    NoKey,
    /// Not encrypted (or not a packet this scheme knows).
    Clear,
}

/// Decryption counters, in total and per flow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub decrypted: u64,
    pub mac_failures: u64,
    pub no_key: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.decrypted += o.decrypted;
        self.mac_failures += o.mac_failures;
        self.no_key += o.no_key;
    }

    fn count(&mut self, o: Outcome) {
        match o {
            Outcome::Decrypted => self.decrypted += 1,
            Outcome::MacFailure => self.mac_failures += 1,
            Outcome::NoKey => self.no_key += 1,
            Outcome::Clear => {}
        }
    }
}

/// One flow's decryption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowCounts {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    #[serde(flatten)]
    pub counts: Counts,
}

/// `decryption` in the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
    pub flows: Vec<FlowCounts>,
}

impl Report {
    /// Folds in a shard's (disjoint flows).
    pub fn merge(&mut self, o: Report) {
        self.total.add(&o.total);
        self.tokens_opened += o.tokens_opened;
        self.token_failures += o.token_failures;
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
            "{} with {}: {} decrypted, {} MAC failures, {} with no key",
            self.scheme, self.keys, self.total.decrypted, self.total.mac_failures, self.total.no_key
        );
        if self.tokens_opened + self.token_failures > 0 {
            s.push_str(&format!(
                "; connect tokens opened {} of {}",
                self.tokens_opened,
                self.tokens_opened + self.token_failures
            ));
        }
        if self.total.decrypted == 0 && self.total.mac_failures + self.token_failures > 0 {
            s.push_str(" — nothing decrypted: the key is not this capture's");
        }
        s
    }
}

/// The state of decryption over a run: keys learnt per client, counters.
#[derive(Clone)]
pub struct Decryptor {
    secrets: Arc<Secrets>,
    protocol_id: u64,
    ciphers: HashMap<SocketAddr, Arc<ConnectionCiphers>>,
    report: Report,
    by_flow: HashMap<FlowId, Counts>,
}

impl Decryptor {
    pub fn new(secrets: Arc<Secrets>, protocol_id: u64) -> Self {
        let keys = match (secrets.private_key.is_some(), !secrets.connections.is_empty()) {
            (true, true) => "private key and key log",
            (true, false) => "private key",
            (false, true) => "key log",
            (false, false) => "none",
        };
        let ciphers = secrets
            .connections
            .iter()
            .map(|(a, k)| (*a, Arc::new(ConnectionCiphers::new(k))))
            .collect();
        Decryptor {
            secrets,
            protocol_id,
            ciphers,
            report: Report {
                scheme: "netcode-1.02".into(),
                keys: keys.into(),
                ..Report::default()
            },
            by_flow: HashMap::new(),
        }
    }

    /// Decrypts a netcode datagram of `flow` into `out` (header then plaintext).
    /// `sequence` is the header's (role=sequence), `ptype` the packet type.
    pub fn datagram(
        &mut self,
        flow: FlowId,
        sequence: u64,
        ptype: u32,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Outcome {
        out.clear();
        let o = if ptype == 0 {
            self.request(flow, payload, out)
        } else {
            self.packet(flow, sequence, payload, out)
        };
        if o != Outcome::Clear {
            self.report.total.count(o);
            if self.by_flow.len() < MAX_CONNECTIONS || self.by_flow.contains_key(&flow) {
                self.by_flow.entry(flow).or_default().count(o);
            }
        }
        o
    }

    fn request(&mut self, flow: FlowId, payload: &[u8], out: &mut Vec<u8>) -> Outcome {
        let Some(pk) = self.secrets.private_key else {
            return Outcome::NoKey;
        };
        let mut token = Vec::new();
        match netcode::open_token(&pk, payload, &mut token) {
            Some(k) => {
                self.report.tokens_opened += 1;
                self.learn(flow.src, &k);
                out.extend_from_slice(
                    &payload[..netcode::REQUEST_BYTES - netcode::TOKEN_PLAINTEXT - netcode::MAC],
                );
                out.extend_from_slice(&token);
                Outcome::Decrypted
            }
            None => {
                self.report.token_failures += 1;
                Outcome::MacFailure
            }
        }
    }

    fn learn(&mut self, client: SocketAddr, k: &ConnectionKeys) {
        if self.ciphers.len() < MAX_CONNECTIONS || self.ciphers.contains_key(&client) {
            self.ciphers.insert(client, Arc::new(ConnectionCiphers::new(k)));
        }
    }

    fn packet(&mut self, flow: FlowId, sequence: u64, payload: &[u8], out: &mut Vec<u8>) -> Outcome {
        let Some(&prefix) = payload.first() else {
            return Outcome::Clear;
        };
        let header = 1 + (prefix >> 4) as usize;
        let (Some(h), Some(body)) = (payload.get(..header), payload.get(header..)) else {
            return Outcome::Clear;
        };
        let cipher = match (self.ciphers.get(&flow.src), self.ciphers.get(&flow.dst)) {
            (Some(c), _) => &c.client_to_server,
            (None, Some(c)) => &c.server_to_client,
            (None, None) => return Outcome::NoKey,
        };
        out.extend_from_slice(h);
        if cipher.open(self.protocol_id, sequence, h, body, out) {
            Outcome::Decrypted
        } else {
            out.clear();
            Outcome::MacFailure
        }
    }

    /// The counters, flows in address order.
    pub fn finish(&self) -> Report {
        let mut r = self.report.clone();
        r.flows = self
            .by_flow
            .iter()
            .map(|(f, c)| FlowCounts {
                src: f.src,
                dst: f.dst,
                counts: c.clone(),
            })
            .collect();
        r.flows.sort_by_key(|f| (f.src, f.dst));
        r
    }
}
