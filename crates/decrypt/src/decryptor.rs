//! The state of decryption over a run (with the `crypto` feature): keys learnt from
//! connection requests or given by a key log, each connection's ciphers, replay windows
//! and the counters of what decrypted.

use super::*;
use hashbrown::HashMap;
use hashbrown::hash_map::Entry;
use keys::{ConnectionKeys, Secrets};
use netcode::{ConnectionCiphers, PacketCipher};
use replay::ReplayWindow;
use std::sync::Arc;

/// The state of decryption over a run: keys learnt per client, counters.
#[derive(Clone)]
pub struct Decryptor {
    secrets: Arc<Secrets>,
    protocol_id: u64,
    /// Connections learnt from requests (with the private key), by client: they take the
    /// place of a key log's for that client.
    ciphers: HashMap<SocketAddr, Connection>,
    /// A key log's connection in force for a client that has several, once a later one
    /// opened a packet (time order: an earlier one is not taken up again).
    current: HashMap<keys::Client, u32>,
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

/// A connection learnt from a client's request: its keys, their ciphers, and which
/// connection it is (a client that connects again gets new keys and a receiver's replay
/// protection starts over).
#[derive(Clone)]
struct Connection {
    keys: ConnectionKeys,
    ciphers: Arc<ConnectionCiphers>,
    id: u32,
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
        let learnt = secrets.connections.len() as u32;
        Decryptor {
            secrets,
            protocol_id,
            ciphers: HashMap::new(),
            current: HashMap::new(),
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

    /// Says in the report that the protocol id was taken from the connection requests.
    pub fn protocol_id_from_requests(&mut self, taken: Option<TakenProtocolId>) {
        self.report.protocol_id_from_requests = taken;
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
        if ptype == 0 {
            // A connection request is not sealed: its token is counted apart.
            return self.request(flow, payload, out);
        }
        let (o, judged) = self.packet(flow, sequence, ptype, payload, out, ahead);
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
            self.report.tokens_unread += 1;
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
        // What a worker made of it under the key log this stage holds. The worker split
        // the datagram: with nothing to read, its bytes are not touched again here (they
        // were in another core's cache).
        if let Some((a, buffer)) = ahead.filter(|(a, _)| (a.read || !read) && self.logged_in_force(flow, a)) {
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
        let at = out.len();
        let open = |cipher: &PacketCipher, out: &mut Vec<u8>| {
            out.truncate(at);
            match read {
                true => cipher.open(self.protocol_id, sequence, h, body, out),
                false => cipher.verify(self.protocol_id, sequence, h, body, out),
            }
        };
        // A connection learnt from a request.
        let learnt = match self.ciphers.get(&flow.src) {
            Some(c) => Some((c, true)),
            None => self.ciphers.get(&flow.dst).map(|c| (c, false)),
        };
        if let Some((c, to_server)) = learnt {
            let cipher = if to_server {
                &c.ciphers.client_to_server
            } else {
                &c.ciphers.server_to_client
            };
            if !open(cipher, out) {
                out.clear();
                return (Outcome::MacFailure, None);
            }
            return (Outcome::Decrypted, judged(c.id));
        }
        // The key log's connections of the client, from the one in force on.
        let Some((first, logged, to_server)) = self.logged(flow) else {
            out.clear();
            return (Outcome::NoKey, None);
        };
        let client = keys::client(if to_server { &flow.src } else { &flow.dst });
        let from = self.current.get(&client).map_or(0, |&c| (c - first) as usize);
        for (j, (_, k)) in logged.iter().enumerate().skip(from) {
            let cipher = PacketCipher::new(if to_server {
                &k.client_to_server
            } else {
                &k.server_to_client
            });
            if open(&cipher, out) {
                let id = first + j as u32;
                if j != from {
                    self.current.insert(client, id);
                }
                return (Outcome::Decrypted, judged(id));
            }
        }
        out.clear();
        (Outcome::MacFailure, None)
    }

    /// The key log's connections of the flow's client (the first one's number), and
    /// whether the flow's source is the client.
    fn logged(&self, flow: FlowId) -> Option<(u32, &[keys::Logged], bool)> {
        let log = &self.secrets.connections;
        match log.of(&flow.src) {
            (i, k) if !k.is_empty() => Some((i, k, true)),
            _ => Some(log.of(&flow.dst))
                .filter(|(_, k)| !k.is_empty())
                .map(|(i, k)| (i, k, false)),
        }
    }

    /// Whether what a worker made of a packet under the key log is what this stage makes
    /// of it: no request gave the client other keys, and the connection that opened it
    /// (if one did) is the one in force or a later one, which then is in force.
    fn logged_in_force(&mut self, flow: FlowId, a: &Opened) -> bool {
        let client = if a.to_server { &flow.src } else { &flow.dst };
        if self.ciphers.contains_key(&flow.src) || self.ciphers.contains_key(&flow.dst) {
            return false;
        }
        let c = keys::client(client);
        let first = self.secrets.connections.of(client).0;
        let from = self.current.get(&c).copied().unwrap_or(first);
        match a.plain {
            Some(_) if a.connection > from => {
                self.current.insert(c, a.connection);
                true
            }
            Some(_) => a.connection == from,
            // Every connection failed, the one in force and those after it too.
            None => true,
        }
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
