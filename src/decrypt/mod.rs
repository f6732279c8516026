//! Decryption of protocols whose definition declares an encryption scheme
//! (`encryption "netcode-1.02"`): keys, the scheme, and the per-conversation state that
//! turns a captured datagram into its plaintext.

pub mod ahead;
pub mod keys;
pub mod netcode;
pub(crate) mod replay;

use crate::engine::FlowId;
use ahead::Opened;
use hashbrown::HashMap;
use hashbrown::hash_map::Entry;
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
    /// Each flow's counters and replay window, found with one lookup a packet.
    flows: FlowTable,
    /// Flows with counters, and with a replay window (each at most [`MAX_CONNECTIONS`]).
    counted: usize,
    windowed: usize,
    /// Connections learnt so far: a new one from the same client starts fresh windows.
    learnt: u32,
    /// Something reads the plaintext: without, only a sealed packet's verdict is kept
    /// (the same outcome; no plaintext is handed back).
    read: bool,
}

/// A client's connection: its keys, their ciphers, and which connection it is (a client
/// that connects again gets new keys and a receiver's replay protection starts over).
#[derive(Clone)]
struct Connection {
    keys: ConnectionKeys,
    ciphers: Arc<ConnectionCiphers>,
    id: u32,
    /// From the key log (its id is [`ahead::logged`]'s), not learnt from a request.
    logged: bool,
}

/// A direction's decryption: its counters, and its receiver's replay window with the
/// connection it belongs to (a new connection of the client starts a fresh one).
#[derive(Clone, Default)]
struct FlowState {
    counts: Option<Counts>,
    window: Option<(u32, ReplayWindow)>,
}

/// The flows' states: by the engine's number for the flow when it has one (an index,
/// not a hash of two addresses), in a map for flows past the engine's table.
#[derive(Clone, Default)]
struct FlowTable {
    numbered: Vec<Option<(FlowId, FlowState)>>,
    map: HashMap<FlowId, FlowState>,
}

impl FlowTable {
    /// The flow's state, made when `make` (`index`: the engine's number for it).
    fn get(&mut self, flow: FlowId, index: Option<u32>, make: bool) -> Option<&mut FlowState> {
        let Some(i) = index.map(|i| i as usize) else {
            return match self.map.entry(flow) {
                Entry::Occupied(e) => Some(e.into_mut()),
                Entry::Vacant(e) if make => Some(e.insert(FlowState::default())),
                Entry::Vacant(_) => None,
            };
        };
        if self.numbered.len() <= i {
            if !make {
                return None;
            }
            self.numbered.resize_with(i + 1, || None);
        }
        let slot = &mut self.numbered[i];
        if slot.is_none() && make {
            *slot = Some((flow, FlowState::default()));
        }
        slot.as_mut().map(|(_, s)| s)
    }
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
        let ciphers: HashMap<_, _> = ahead::logged(&secrets)
            .map(|(i, a, k)| {
                let c = Connection {
                    keys: *k,
                    ciphers: Arc::new(ConnectionCiphers::new(k)),
                    id: i,
                    logged: true,
                };
                (a, c)
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
            flows: FlowTable::default(),
            counted: 0,
            windowed: 0,
            learnt,
            read: true,
        }
    }

    /// Whether anything reads the plaintext of sealed packets (it does unless said).
    pub fn read_plaintext(&mut self, read: bool) {
        self.read = read;
    }

    /// Decrypts a netcode datagram of `flow` into `out` (header then plaintext).
    /// `index` is the engine's number for the flow, if it has one; `sequence` is the
    /// header's (role=sequence), `ptype` the packet type; `ahead`, what a worker made of
    /// it and the buffer its plaintext is in ([`ahead::Opener`]).
    #[allow(clippy::too_many_arguments)]
    pub fn datagram(
        &mut self,
        flow: FlowId,
        index: Option<u32>,
        sequence: u64,
        ptype: u32,
        payload: &[u8],
        out: &mut Vec<u8>,
        ahead: Option<(&Opened, &[u8])>,
    ) -> Outcome {
        out.clear();
        let (o, judged) = if ptype == 0 {
            (self.request(flow, payload, out), None)
        } else {
            self.packet(flow, sequence, ptype, payload, out, ahead)
        };
        if o == Outcome::Clear {
            return o;
        }
        let o = self.account((flow, index), o, judged.map(|c| (c, sequence)));
        self.report.total.count(o);
        o
    }

    /// The flow's part, with one lookup: the replay protection on a packet that opened
    /// (`judged`: its connection and sequence), then the flow's counters.
    fn account(
        &mut self,
        (flow, index): (FlowId, Option<u32>),
        o: Outcome,
        judged: Option<(u32, u64)>,
    ) -> Outcome {
        let room = (self.counted < MAX_CONNECTIONS, self.windowed < MAX_CONNECTIONS);
        let mut st = self
            .flows
            .get(flow, index, room.0 || (room.1 && judged.is_some()));
        let mut o = o;
        if let Some((connection, sequence)) = judged {
            let w = match st.as_deref_mut().map(|s| &mut s.window) {
                Some(w @ Some(_)) => w.as_mut(),
                Some(w) if room.1 => {
                    self.windowed += 1;
                    Some(w.insert((connection, ReplayWindow::default())))
                }
                _ => None,
            };
            match w {
                Some(w) => {
                    if w.0 != connection {
                        *w = (connection, ReplayWindow::default());
                    }
                    if w.1.replayed(sequence) {
                        o = Outcome::Replayed;
                    }
                }
                None => self.report.replay_not_judged += 1,
            }
        }
        match st.map(|s| &mut s.counts) {
            Some(Some(c)) => c.count(o),
            Some(c) if room.0 => {
                self.counted += 1;
                c.insert(Counts::default()).count(o);
            }
            _ => {}
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
                logged: false,
            };
            self.learnt = self.learnt.wrapping_add(1);
            self.ciphers.insert(client, c);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn packet(
        &mut self,
        flow: FlowId,
        sequence: u64,
        ptype: u32,
        payload: &[u8],
        out: &mut Vec<u8>,
        ahead: Option<(&Opened, &[u8])>,
    ) -> (Outcome, Option<u32>) {
        let read = self.read;
        // netcode.c judges keep-alives, payloads and disconnects for replay.
        let judged = |connection| (ptype >= FIRST_JUDGED_TYPE).then_some(connection);
        // What a worker made of it under the very key this stage holds. The worker split
        // the datagram: with nothing to read, its bytes are not touched again here (they
        // were in another core's cache).
        if let Some((a, buffer)) = ahead.filter(|(a, _)| self.holds(flow, a) && (a.read || !read)) {
            let Some(plain) = a.body(buffer) else {
                return (Outcome::MacFailure, None);
            };
            if read {
                out.extend_from_slice(netcode::split(payload).map_or(&[][..], |(h, _)| h));
                out.extend_from_slice(plain);
            }
            return (Outcome::Decrypted, judged(a.connection));
        }
        let Some((h, body)) = netcode::split(payload) else {
            return (Outcome::Clear, None);
        };
        if read {
            out.extend_from_slice(h);
        }
        let (cipher, connection) = match self.connection(flow) {
            Some((c, true)) => (&c.ciphers.client_to_server, c.id),
            Some((c, false)) => (&c.ciphers.server_to_client, c.id),
            None => {
                out.clear();
                return (Outcome::NoKey, None);
            }
        };
        let opened = match read {
            true => cipher.open(self.protocol_id, sequence, h, body, out),
            false => cipher.verify(self.protocol_id, sequence, h, body, out),
        };
        if !opened {
            out.clear();
            return (Outcome::MacFailure, None);
        }
        (Outcome::Decrypted, judged(connection))
    }

    /// The flow's connection, and whether the flow's source is its client.
    fn connection(&self, flow: FlowId) -> Option<(&Connection, bool)> {
        match self.ciphers.get(&flow.src) {
            Some(c) => Some((c, true)),
            None => self.ciphers.get(&flow.dst).map(|c| (c, false)),
        }
    }

    /// Whether `a` was opened under the key this stage holds for `flow`: always with a
    /// key log alone (its keys never change), and with the private key while no request
    /// has given the flow's client other keys.
    fn holds(&self, flow: FlowId, a: &Opened) -> bool {
        if self.secrets.private_key.is_none() {
            return true;
        }
        self.connection(flow)
            .is_some_and(|(c, to_server)| c.logged && c.id == a.connection && to_server == a.to_server)
    }

    /// The counters, flows in address order.
    pub fn finish(&self) -> Report {
        let mut r = self.report.clone();
        let numbered = self.flows.numbered.iter().flatten().map(|(f, s)| (f, s));
        r.flows = (self.flows.map.iter().chain(numbered))
            .filter_map(|(f, s)| {
                Some(FlowCounts {
                    src: f.src,
                    dst: f.dst,
                    counts: s.counts.clone()?,
                })
            })
            .collect();
        r.flows.sort_by_key(|f| (f.src, f.dst));
        r
    }
}
