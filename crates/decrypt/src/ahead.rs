//! Decryption ahead of the ordered stage: a pipeline's workers open each sealed packet
//! whose connection a key log names, in their batch, on every core. Keys from a key log
//! are known before the run, so what a worker makes of a packet is what the ordered
//! stage would: the ordered stage takes it when the connection it holds for the flow is
//! still the logged one (with the private key it may have learnt another from a request)
//! and opens the packet itself otherwise. Replay protection and the counters need order
//! and stay in the ordered stage ([`super::Decryptor`]).

#[cfg(feature = "crypto")]
use super::keys::Secrets;
#[cfg(feature = "crypto")]
use super::netcode::{self, PacketCipher};
#[cfg(feature = "crypto")]
use std::net::SocketAddr;

/// What a worker made of one sealed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The key log's connection that opened it (its place in the log: the decryptor's
    /// id for it), or its client's first when none did.
    pub connection: u32,
    /// Opened with the client-to-server key (the source is the logged client).
    pub to_server: bool,
    /// Where the plaintext body lies in the batch's plaintext buffer; `None` when the
    /// MAC failed.
    pub plain: Option<(u32, u32)>,
    /// The body was decrypted (`plain` holds it); otherwise only its MAC was checked,
    /// for a run that reads no plaintext ([`Opener::new`]).
    pub read: bool,
}

impl Opened {
    /// The plaintext body in `buffer`, the batch's (empty when out of range).
    pub fn body<'a>(&self, buffer: &'a [u8]) -> Option<&'a [u8]> {
        self.plain
            .map(|(at, len)| buffer.get(at as usize..(at + len) as usize).unwrap_or(&[]))
    }
}

/// The key log, shared by a pipeline's workers: a packet is opened under each of its
/// client's connections in the log's order (ciphers made as needed: a key log of a
/// million connections holds 83 bytes each, not their ciphers).
#[cfg(not(feature = "crypto"))]
pub use super::without::Opener;

#[cfg(feature = "crypto")]
pub struct Opener {
    protocol_id: u64,
    secrets: std::sync::Arc<Secrets>,
    read: bool,
}

#[cfg(feature = "crypto")]
impl Opener {
    /// `None` when there is no key log (keys learnt from requests need order). `read`:
    /// something reads the plaintext (an inner layer, a field tree); without, a packet's
    /// MAC is checked and the plaintext dropped (the same verdict; nothing kept).
    pub fn new(secrets: &std::sync::Arc<Secrets>, protocol_id: u64, read: bool) -> Option<Self> {
        if secrets.connections.is_empty() {
            return None;
        }
        Some(Opener {
            protocol_id,
            secrets: secrets.clone(),
            read,
        })
    }

    /// Opens a sealed packet (not a request: `ptype` 0) of the flow `src` → `dst`,
    /// appending its plaintext body to `buffer`; `None` when no logged connection is
    /// the flow's or the datagram is not a sealed packet.
    pub fn open(
        &self,
        (src, dst): (SocketAddr, SocketAddr),
        sequence: u64,
        ptype: u32,
        payload: &[u8],
        buffer: &mut Vec<u8>,
    ) -> Option<Opened> {
        if ptype == 0 {
            return None;
        }
        let (header, body) = netcode::split(payload)?;
        let log = &self.secrets.connections;
        let ((first, keys), to_server) = match log.of(&src) {
            (i, k) if !k.is_empty() => ((i, k), true),
            _ => (Some(log.of(&dst)).filter(|(_, k)| !k.is_empty())?, false),
        };
        let at = buffer.len();
        for (j, (_, k)) in keys.iter().enumerate() {
            let cipher = PacketCipher::new(if to_server {
                &k.client_to_server
            } else {
                &k.server_to_client
            });
            let opened = match self.read {
                true => cipher.open(self.protocol_id, sequence, header, body, buffer),
                false => cipher.verify(self.protocol_id, sequence, header, body, buffer),
            };
            if opened {
                return Some(Opened {
                    connection: first + j as u32,
                    to_server,
                    plain: Some((at as u32, (buffer.len() - at) as u32)),
                    read: self.read,
                });
            }
            buffer.truncate(at);
        }
        Some(Opened {
            connection: first,
            to_server,
            plain: None,
            read: self.read,
        })
    }
}

#[cfg(all(test, feature = "crypto"))]
mod tests {
    use super::*;
    use crate::keys::ConnectionKeys;
    use crate::netcode::{REQUEST_BYTES, TOKEN_PLAINTEXT, VERSION, seal_token};
    use crate::{Decryptor, Outcome};
    use gpcap_wire::decode::FlowId;
    use std::sync::Arc;

    const ID: u64 = 0x1122_3344_5566_7788;

    fn client() -> SocketAddr {
        "10.0.0.1:5000".parse().unwrap()
    }

    fn server() -> SocketAddr {
        "10.0.0.2:40000".parse().unwrap()
    }

    fn keys(c: u8, s: u8) -> ConnectionKeys {
        ConnectionKeys {
            client_to_server: [c; 32],
            server_to_client: [s; 32],
        }
    }

    /// A payload packet (type 5, one sequence byte) sealed under `key`.
    fn sealed(key: u8, sequence: u8) -> Vec<u8> {
        let mut body = b"inside".to_vec();
        PacketCipher::new(&[key; 32]).seal(ID, sequence as u64, 0x15, &mut body);
        [vec![0x15, sequence], body].concat()
    }

    /// A connection request whose token (under `private`) gives `k`.
    fn request(private: u8, k: &ConnectionKeys) -> Vec<u8> {
        let mut token = vec![0u8; TOKEN_PLAINTEXT];
        token[12] = 1;
        token[16] = 1;
        token[23..55].copy_from_slice(&k.client_to_server);
        token[55..87].copy_from_slice(&k.server_to_client);
        let mut req = vec![0u8; REQUEST_BYTES];
        req[1..14].copy_from_slice(VERSION);
        req[14..22].copy_from_slice(&ID.to_le_bytes());
        let ad: [u8; 29] = req[1..30].try_into().unwrap();
        req[54..].copy_from_slice(&seal_token(&[private; 32], &ad, &[0; 24], &token));
        req
    }

    fn secrets(private: Option<u8>, logged: ConnectionKeys) -> Arc<Secrets> {
        let mut s = Secrets {
            private_key: private.map(|p| [p; 32]),
            ..Secrets::default()
        };
        s.connections.push(client(), logged);
        Arc::new(s)
    }

    /// The decryptor's outcome and plaintext for `packet` of `flow`, with and without
    /// what the opener made of it.
    fn both(d: &mut Decryptor, o: &Opener, flow: FlowId, seq: u8, packet: &[u8]) -> [(Outcome, Vec<u8>); 2] {
        let mut buffer = vec![9; 3];
        let ahead = o.open((flow.src, flow.dst), seq as u64, 5, packet, &mut buffer);
        assert!(ahead.is_some());
        let run = |d: &mut Decryptor, a: Option<(&Opened, &[u8])>| {
            let mut out = Vec::new();
            (d.datagram(flow, None, seq as u64, 5, packet, &mut out, a), out)
        };
        let mut fresh = d.clone();
        [
            run(d, ahead.as_ref().map(|a| (a, &buffer[..]))),
            run(&mut fresh, None),
        ]
    }

    /// Whether or not the opener and the decryptor read the plaintext: the same outcome,
    /// and the plaintext whenever the decryptor reads it (an opener that only checked
    /// MACs leaves a reading decryptor to open the packet itself).
    #[test]
    fn a_packet_opened_ahead_reads_as_the_ordered_stage_opens_it() {
        for (opener_reads, reads) in [(true, true), (false, false), (false, true), (true, false)] {
            opened_ahead_alike(opener_reads, reads);
        }
    }

    fn opened_ahead_alike(opener_reads: bool, reads: bool) {
        let s = secrets(None, keys(1, 2));
        let o = Opener::new(&s, ID, opener_reads).unwrap();
        let mut d = Decryptor::new(s, ID);
        d.read_plaintext(reads);
        let up = FlowId {
            src: client(),
            dst: server(),
        };
        let down = FlowId {
            src: server(),
            dst: client(),
        };
        for (flow, key, seq, want) in [
            (up, 1, 7, Outcome::Decrypted),
            (down, 2, 7, Outcome::Decrypted),
            (up, 2, 8, Outcome::MacFailure),
            (up, 1, 7, Outcome::Replayed),
        ] {
            let [ahead, alone] = both(&mut d, &o, flow, seq, &sealed(key, seq));
            assert_eq!(ahead, alone, "{opener_reads} {reads}");
            assert_eq!(ahead.0, want);
            let plain = [&[0x15, seq][..], b"inside"].concat();
            let decrypted = matches!(want, Outcome::Decrypted | Outcome::Replayed);
            assert_eq!(ahead.1, if reads && decrypted { plain } else { vec![] });
        }
        let no_key = FlowId {
            src: server(),
            dst: "10.0.0.3:1".parse().unwrap(),
        };
        assert!(
            o.open((no_key.src, no_key.dst), 1, 5, &sealed(1, 1), &mut Vec::new())
                .is_none()
        );
        assert!(
            o.open((up.src, up.dst), 1, 0, &sealed(1, 1), &mut Vec::new())
                .is_none()
        );
    }

    /// Clients of either IP version are found, and only at their own address and port
    /// (an IPv4 address and its IPv6-mapped form are two clients).
    #[test]
    fn clients_are_found_by_address_and_port() {
        let v6: SocketAddr = "[2001:db8::1]:5000".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:5000".parse().unwrap();
        let mut s = Secrets::default();
        s.connections.push(client(), keys(1, 2));
        s.connections.push(v6, keys(3, 4));
        let o = Opener::new(&Arc::new(s), ID, true).unwrap();
        let opens = |flow: (SocketAddr, SocketAddr), key| {
            let mut buffer = Vec::new();
            let a = o.open(flow, 7, 5, &sealed(key, 7), &mut buffer)?;
            Some((a.to_server, a.body(&buffer).map(<[u8]>::to_vec)))
        };
        let inside = Some(b"inside".to_vec());
        assert_eq!(opens((client(), server()), 1), Some((true, inside.clone())));
        assert_eq!(opens((server(), client()), 2), Some((false, inside.clone())));
        assert_eq!(opens((v6, server()), 3), Some((true, inside.clone())));
        assert_eq!(opens((server(), v6), 4), Some((false, inside)));
        assert_eq!(opens((mapped, server()), 1), None);
        let other_port: SocketAddr = "10.0.0.1:5001".parse().unwrap();
        assert_eq!(opens((other_port, server()), 1), None);
    }

    /// With the private key a request may give a logged client other keys: what a worker
    /// opened under the logged ones is not taken.
    #[test]
    fn keys_a_request_replaced_are_not_taken_from_ahead() {
        let s = secrets(Some(9), keys(1, 2));
        let o = Opener::new(&s, ID, true).unwrap();
        let mut d = Decryptor::new(s, ID);
        let up = FlowId {
            src: client(),
            dst: server(),
        };
        let [ahead, alone] = both(&mut d, &o, up, 3, &sealed(3, 3));
        assert_eq!((ahead.0, alone.0), (Outcome::MacFailure, Outcome::MacFailure));
        let mut out = Vec::new();
        let req = request(9, &keys(3, 4));
        assert_eq!(
            d.datagram(up, None, 0, 0, &req, &mut out, None),
            Outcome::Decrypted
        );
        let [ahead, alone] = both(&mut d, &o, up, 4, &sealed(3, 4));
        assert_eq!(ahead, alone);
        assert_eq!(ahead.0, Outcome::Decrypted);
    }
}
