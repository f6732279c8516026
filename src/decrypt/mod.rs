//! Decryption of protocols whose definition declares an encryption scheme
//! (`encryption "netcode-1.02"`): keys, the scheme, and the per-conversation state that
//! turns a captured datagram into its plaintext.

pub mod keys;
pub mod netcode;
pub(crate) mod replay;

use crate::engine::FlowId;
use hashbrown::HashMap;
use keys::{ConnectionKeys, Secrets};
use netcode::ConnectionCiphers;
use replay::ReplayWindow;
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

/// Decryption counters, in total and per flow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
            "{} with {}: {} decrypted ({} replayed), {} MAC failures, {} with no key",
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
    ciphers: HashMap<SocketAddr, Connection>,
    report: Report,
    by_flow: HashMap<FlowId, Counts>,
    /// Each direction's replay window, and the connection it belongs to.
    windows: HashMap<FlowId, (u32, ReplayWindow)>,
    /// Connections learnt so far: a new one from the same client starts fresh windows.
    learnt: u32,
}

/// A client's connection: its keys, their ciphers, and which connection it is (a client
/// that connects again gets new keys and a receiver's replay protection starts over).
#[derive(Clone)]
struct Connection {
    keys: ConnectionKeys,
    ciphers: Arc<ConnectionCiphers>,
    id: u32,
}

/// Packet types netcode.c's replay protection judges: keep-alive, payload and disconnect
/// (`packet_type >= NETCODE_CONNECTION_KEEP_ALIVE_PACKET`).
const FIRST_JUDGED_TYPE: u32 = 4;

impl Decryptor {
    pub fn new(secrets: Arc<Secrets>, protocol_id: u64) -> Self {
        let keys = match (secrets.private_key.is_some(), !secrets.connections.is_empty()) {
            (true, true) => "private key and key log",
            (true, false) => "private key",
            (false, true) => "key log",
            (false, false) => "none",
        };
        let ciphers: HashMap<_, _> = (secrets.connections.iter().enumerate())
            .map(|(i, (a, k))| {
                let c = Connection {
                    keys: *k,
                    ciphers: Arc::new(ConnectionCiphers::new(k)),
                    id: i as u32,
                };
                (*a, c)
            })
            .collect();
        let learnt = ciphers.len() as u32;
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
            windows: HashMap::new(),
            learnt,
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
            self.packet(flow, sequence, ptype, payload, out)
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
        // A request sent again carries the same token: the same connection.
        if self.ciphers.get(&client).is_some_and(|c| c.keys == *k) {
            return;
        }
        if self.ciphers.len() < MAX_CONNECTIONS || self.ciphers.contains_key(&client) {
            let c = Connection {
                keys: *k,
                ciphers: Arc::new(ConnectionCiphers::new(k)),
                id: self.learnt,
            };
            self.learnt = self.learnt.wrapping_add(1);
            self.ciphers.insert(client, c);
        }
    }

    fn packet(
        &mut self,
        flow: FlowId,
        sequence: u64,
        ptype: u32,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Outcome {
        let Some(&prefix) = payload.first() else {
            return Outcome::Clear;
        };
        let header = 1 + (prefix >> 4) as usize;
        let (Some(h), Some(body)) = (payload.get(..header), payload.get(header..)) else {
            return Outcome::Clear;
        };
        let (cipher, connection) = match (self.ciphers.get(&flow.src), self.ciphers.get(&flow.dst)) {
            (Some(c), _) => (&c.ciphers.client_to_server, c.id),
            (None, Some(c)) => (&c.ciphers.server_to_client, c.id),
            (None, None) => return Outcome::NoKey,
        };
        out.extend_from_slice(h);
        if !cipher.open(self.protocol_id, sequence, h, body, out) {
            out.clear();
            return Outcome::MacFailure;
        }
        if ptype < FIRST_JUDGED_TYPE {
            return Outcome::Decrypted;
        }
        if self.judge(flow, connection, sequence) {
            Outcome::Replayed
        } else {
            Outcome::Decrypted
        }
    }

    /// The receiver's replay protection on a packet that opened: true for a replay.
    fn judge(&mut self, flow: FlowId, connection: u32, sequence: u64) -> bool {
        if self.windows.len() >= MAX_CONNECTIONS && !self.windows.contains_key(&flow) {
            self.report.replay_not_judged += 1;
            return false;
        }
        let w = (self.windows.entry(flow)).or_insert((connection, ReplayWindow::default()));
        if w.0 != connection {
            *w = (connection, ReplayWindow::default());
        }
        w.1.replayed(sequence)
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
