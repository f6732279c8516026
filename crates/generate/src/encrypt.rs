//! Encrypted traffic for protocols that declare `encryption "netcode-1.02"`: each client's
//! connection gets two packet keys drawn from the seed, and every packet's body is sealed
//! as netcode.c seals it — the packet's last 16 bytes (its `mac` field) become the MAC.
//! The keys go in the truth and in a key log beside the capture.

#[cfg(feature = "crypto")]
use super::rng::Rng;
#[cfg(feature = "crypto")]
use gpcap_decrypt::keys::{ConnectionKeys, to_hex};
#[cfg(feature = "crypto")]
use gpcap_decrypt::netcode::{ConnectionCiphers, MAC};
use serde::{Deserialize, Serialize};
#[cfg(feature = "crypto")]
use std::collections::HashMap;
use std::net::SocketAddr;

/// One connection's keys, as the truth and the key log give them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyTruth {
    pub client: SocketAddr,
    pub client_to_server_key: String,
    pub server_to_client_key: String,
}

/// The sealing state of a run.
pub struct Sealer {
    #[cfg(feature = "crypto")]
    protocol_id: u64,
    #[cfg(feature = "crypto")]
    by_client: HashMap<SocketAddr, ConnectionCiphers>,
    pub keys: Vec<KeyTruth>,
    /// Without the `crypto` feature no sealer exists (`--encrypt` is refused).
    #[cfg(not(feature = "crypto"))]
    never: std::convert::Infallible,
}

#[cfg(not(feature = "crypto"))]
impl Sealer {
    pub fn seal(&self, _src: SocketAddr, _dst: SocketAddr, _sequence: u64, _packet: &mut Vec<u8>) {
        match self.never {}
    }
}

#[cfg(feature = "crypto")]
impl Sealer {
    /// Keys for every client, drawn from `rng`.
    pub fn new(protocol_id: u64, clients: &[SocketAddr], rng: &mut Rng) -> Self {
        let mut draw = || {
            let mut k = [0u8; 32];
            for c in k.chunks_mut(4) {
                c.copy_from_slice(&rng.next_u32().to_le_bytes());
            }
            k
        };
        let mut by_client = HashMap::new();
        let mut keys = Vec::new();
        for &client in clients {
            let k = ConnectionKeys {
                client_to_server: draw(),
                server_to_client: draw(),
            };
            keys.push(KeyTruth {
                client,
                client_to_server_key: to_hex(&k.client_to_server),
                server_to_client_key: to_hex(&k.server_to_client),
            });
            by_client.insert(client, ConnectionCiphers::new(&k));
        }
        Sealer {
            protocol_id,
            by_client,
            keys,
        }
    }

    /// Seals `packet` (prefix, sequence bytes, body, 16 bytes for the MAC) in place, sent
    /// from `src` to `dst`; a request (type 0) is left as it is.
    pub fn seal(&self, src: SocketAddr, dst: SocketAddr, sequence: u64, packet: &mut Vec<u8>) {
        let Some(&prefix) = packet.first() else { return };
        let header = 1 + (prefix >> 4) as usize;
        if prefix & 0xf == 0 || packet.len() < header {
            return;
        }
        // A body too short for its MAC (gen draws a `rest` of any length) grows to hold
        // one: netcode sends no shorter packet, and a payload has at least one byte.
        let least = header + MAC + usize::from(prefix & 0xf == 5);
        if packet.len() < least {
            packet.resize(least, 0);
        }
        let cipher = match (self.by_client.get(&src), self.by_client.get(&dst)) {
            (Some(c), _) => &c.client_to_server,
            (None, Some(c)) => &c.server_to_client,
            (None, None) => return,
        };
        let mut body = packet[header..packet.len() - MAC].to_vec();
        cipher.seal(self.protocol_id, sequence, prefix, &mut body);
        packet.truncate(header);
        packet.extend_from_slice(&body);
    }
}
