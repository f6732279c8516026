//! netcode.io 1.02's encryption, implemented once: the private connect token of a
//! connection request (XChaCha20-Poly1305 under the server's private key) and every
//! later packet (ChaCha20-Poly1305 IETF under the connection's key for its direction).
//! Both read and write, so `gen` writes what `analyze` reads.
//!
//! Two AEAD crates: a sealed packet is opened by ring's ChaCha20-Poly1305 (BoringSSL's
//! assembly; 218 ns for a 150-byte packet where RustCrypto's open took 609 ns and its
//! MAC check alone 299 ns), and ring has no XChaCha20, so RustCrypto's
//! `chacha20poly1305` opens connect tokens (one per connection).

#[cfg(feature = "crypto")]
use super::keys::{ConnectionKeys, Key};
#[cfg(feature = "crypto")]
use chacha20poly1305::aead::AeadInOut;
#[cfg(feature = "crypto")]
use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};
#[cfg(feature = "crypto")]
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};

/// `"NETCODE 1.02"` and its NUL: the version info in every additional data.
pub const VERSION: &[u8; 13] = b"NETCODE 1.02\0";
/// A connection request's size, and where its parts start.
pub const REQUEST_BYTES: usize = 1078;
#[cfg(feature = "crypto")]
const NONCE_AT: usize = 30;
#[cfg(feature = "crypto")]
const TOKEN_AT: usize = 54;
/// The private connect token's plaintext (then its 16-byte MAC).
pub const TOKEN_PLAINTEXT: usize = 1008;
pub const MAC: usize = 16;
/// Where the packet keys lie in the token's plaintext: client id u64, timeout u32,
/// address count u32, then 7 bytes per IPv4 address (19 per IPv6).
#[cfg(feature = "crypto")]
const MAX_ADDRESSES: usize = 32;

/// The protocol id a connection request carries in the clear (`None`: `datagram` is not
/// a netcode 1.02 connection request).
pub fn request_protocol_id(datagram: &[u8]) -> Option<u64> {
    if datagram.len() != REQUEST_BYTES || datagram[0] != 0 || datagram[1..14] != VERSION[..] {
        return None;
    }
    Some(u64::from_le_bytes(datagram[14..22].try_into().ok()?))
}

/// The private connect token's packet keys, or `None` when the MAC fails (another key,
/// another protocol id, tampering). `request` is the whole datagram; `plain` receives
/// the token's plaintext.
#[cfg(feature = "crypto")]
pub fn open_token(private_key: &Key, request: &[u8], plain: &mut Vec<u8>) -> Option<ConnectionKeys> {
    if request.len() != REQUEST_BYTES {
        return None;
    }
    let aead = XChaCha20Poly1305::new(private_key.into());
    let nonce: &XNonce = request[NONCE_AT..TOKEN_AT].try_into().ok()?;
    let (body, mac) = request[TOKEN_AT..].split_at(TOKEN_PLAINTEXT);
    let tag: &Tag = mac.try_into().ok()?;
    plain.clear();
    plain.extend_from_slice(body);
    aead.decrypt_inout_detached(nonce, &request[1..NONCE_AT], plain.as_mut_slice().into(), tag)
        .ok()?;
    token_keys(plain)
}

/// The packet keys in a token's plaintext, after its server addresses.
#[cfg(feature = "crypto")]
fn token_keys(t: &[u8]) -> Option<ConnectionKeys> {
    let count = u32::from_le_bytes(t.get(12..16)?.try_into().ok()?) as usize;
    if count == 0 || count > MAX_ADDRESSES {
        return None;
    }
    let mut at = 16;
    for _ in 0..count {
        at += match t.get(at)? {
            1 => 7,
            2 => 19,
            _ => return None,
        };
    }
    Some(ConnectionKeys {
        client_to_server: t.get(at..at + 32)?.try_into().ok()?,
        server_to_client: t.get(at + 32..at + 64)?.try_into().ok()?,
    })
}

/// Seals a private connect token in place (`gen`): `token` is the 1008-byte plaintext;
/// returns the 1024 bytes that go in the request.
#[cfg(feature = "crypto")]
pub fn seal_token(private_key: &Key, ad: &[u8; 29], nonce: &[u8; 24], token: &[u8]) -> Vec<u8> {
    let aead = XChaCha20Poly1305::new(private_key.into());
    let mut out = token.to_vec();
    let tag = aead
        .encrypt_inout_detached(&XNonce::from(*nonce), ad, out.as_mut_slice().into())
        .unwrap_or_default();
    out.extend_from_slice(&tag);
    out
}

/// A sealed packet's header (the prefix byte and the sequence bytes) and its body (the
/// ciphertext and its MAC); `None` when the datagram is shorter than its header says.
pub fn split(payload: &[u8]) -> Option<(&[u8], &[u8])> {
    let header = 1 + (*payload.first()? >> 4) as usize;
    Some((payload.get(..header)?, payload.get(header..)?))
}

/// A connection's cipher for one direction, made once.
#[derive(Clone)]
#[cfg(feature = "crypto")]
pub struct PacketCipher(LessSafeKey);

#[cfg(feature = "crypto")]
impl PacketCipher {
    pub fn new(key: &Key) -> Self {
        // A 32-byte key is the only thing `UnboundKey::new` checks.
        let key = UnboundKey::new(&CHACHA20_POLY1305, key).unwrap_or_else(|_| unreachable!());
        PacketCipher(LessSafeKey::new(key))
    }

    /// Whether a packet's MAC holds, for runs where nothing reads the plaintext: the
    /// body is opened into `scratch` (cleared after), which costs less with ring's
    /// assembly than RustCrypto's MAC check without decrypting (218 against 299 ns on
    /// a 150-byte packet).
    pub fn verify(
        &self,
        protocol_id: u64,
        sequence: u64,
        header: &[u8],
        body: &[u8],
        scratch: &mut Vec<u8>,
    ) -> bool {
        let start = scratch.len();
        let ok = self.open(protocol_id, sequence, header, body, scratch);
        scratch.truncate(start);
        ok
    }

    /// Opens a packet's body: `header` is the prefix byte and the sequence bytes, `body`
    /// the ciphertext and its MAC; the plaintext is appended to `out`. False when the MAC
    /// fails.
    pub fn open(
        &self,
        protocol_id: u64,
        sequence: u64,
        header: &[u8],
        body: &[u8],
        out: &mut Vec<u8>,
    ) -> bool {
        let (Some(&prefix), Some(n)) = (header.first(), body.len().checked_sub(MAC)) else {
            return false;
        };
        let (ct, mac) = body.split_at(n);
        let Ok(tag) = ring::aead::Tag::try_from(mac) else {
            return false;
        };
        let start = out.len();
        out.extend_from_slice(ct);
        let ok = self
            .0
            .open_in_place_separate_tag(
                nonce(sequence),
                Aad::from(additional(protocol_id, prefix)),
                tag,
                &mut out[start..],
                0..,
            )
            .is_ok();
        if !ok {
            out.truncate(start);
        }
        ok
    }

    /// Seals `body` in place and appends its MAC (`gen`).
    pub fn seal(&self, protocol_id: u64, sequence: u64, prefix: u8, body: &mut Vec<u8>) {
        // Refused only past ChaCha20's 256 GiB a message.
        if let Ok(tag) = self.0.seal_in_place_separate_tag(
            nonce(sequence),
            Aad::from(additional(protocol_id, prefix)),
            body,
        ) {
            body.extend_from_slice(tag.as_ref());
        }
    }
}

/// Four zero bytes, then the sequence (netcode.c:1629-1634).
#[cfg(feature = "crypto")]
fn nonce(sequence: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&sequence.to_le_bytes());
    Nonce::assume_unique_for_key(n)
}

/// Version info, protocol id, prefix byte (netcode.c:1621-1627).
#[cfg(feature = "crypto")]
fn additional(protocol_id: u64, prefix: u8) -> [u8; 22] {
    let mut ad = [0u8; 22];
    ad[..13].copy_from_slice(VERSION);
    ad[13..21].copy_from_slice(&protocol_id.to_le_bytes());
    ad[21] = prefix;
    ad
}

/// The connection's two ciphers.
#[derive(Clone)]
#[cfg(feature = "crypto")]
pub struct ConnectionCiphers {
    pub client_to_server: PacketCipher,
    pub server_to_client: PacketCipher,
}

#[cfg(feature = "crypto")]
impl ConnectionCiphers {
    pub fn new(k: &ConnectionKeys) -> Self {
        ConnectionCiphers {
            client_to_server: PacketCipher::new(&k.client_to_server),
            server_to_client: PacketCipher::new(&k.server_to_client),
        }
    }
}

#[cfg(all(test, feature = "crypto"))]
mod tests {
    use super::*;

    #[test]
    fn a_packet_opens_under_its_key_only() {
        let c = PacketCipher::new(&[7; 32]);
        let mut body = b"hello".to_vec();
        c.seal(42, 300, 0x25, &mut body);
        let mut out = Vec::new();
        assert!(c.open(42, 300, &[0x25, 0x2c, 0x01], &body, &mut out));
        assert_eq!(out, b"hello");
        out.clear();
        assert!(!c.open(42, 301, &[0x25], &body, &mut out));
        assert!(!c.open(43, 300, &[0x25], &body, &mut out));
        assert!(!PacketCipher::new(&[8; 32]).open(42, 300, &[0x25], &body, &mut out));
        assert!(!c.open(42, 300, &[0x25], &body[..10], &mut out));
        assert!(out.is_empty());
    }

    /// Checking the MAC alone gives `open`'s verdict: every length around the 16- and
    /// 64-byte boundaries, each byte of the body and header flipped, the wrong sequence.
    #[test]
    fn verify_agrees_with_open() {
        let c = PacketCipher::new(&[7; 32]);
        for len in (0..140).chain([1000, 1199]) {
            let mut body: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            c.seal(42, 300 + len as u64, 0x25, &mut body);
            let seq = 300 + len as u64;
            let mut cases = vec![(seq, 0x25u8, body.clone()), (seq + 1, 0x25, body.clone())];
            cases.push((seq, 0x26, body.clone()));
            for at in [0, body.len() / 2, body.len() - 1] {
                let mut b = body.clone();
                b[at] ^= 0x40;
                cases.push((seq, 0x25, b));
            }
            cases.push((seq, 0x25, body[..body.len() - 1].to_vec()));
            for (i, (s, prefix, b)) in cases.iter().enumerate() {
                let mut out = Vec::new();
                let opened = c.open(42, *s, &[*prefix], b, &mut out);
                let mut scratch = vec![1, 2];
                let verified = c.verify(42, *s, &[*prefix], b, &mut scratch);
                assert_eq!(verified, opened, "length {len}, case {i}");
                assert_eq!(scratch, [1, 2]);
                assert_eq!(opened, i == 0, "length {len}, case {i}");
            }
        }
        assert!(!c.verify(42, 1, &[], &[0; 20], &mut Vec::new()));
        assert!(!PacketCipher::new(&[8; 32]).verify(43, 1, &[0x25], &[0; 16], &mut Vec::new()));
    }

    /// RustCrypto's ChaCha20-Poly1305 (IETF) over netcode's nonce and additional data.
    fn rustcrypto(key: &Key) -> chacha20poly1305::ChaCha20Poly1305 {
        chacha20poly1305::ChaCha20Poly1305::new(key.into())
    }

    fn rc_nonce(sequence: u64) -> chacha20poly1305::Nonce {
        let mut n = [0u8; 12];
        n[4..].copy_from_slice(&sequence.to_le_bytes());
        n.into()
    }

    /// RustCrypto's verdict on `body` (ciphertext and MAC), and its plaintext.
    fn rc_open(key: &Key, id: u64, seq: u64, prefix: u8, body: &[u8]) -> Option<Vec<u8>> {
        let n = body.len().checked_sub(MAC)?;
        let mut plain = body[..n].to_vec();
        let tag: &Tag = body[n..].try_into().ok()?;
        rustcrypto(key)
            .decrypt_inout_detached(
                &rc_nonce(seq),
                &additional(id, prefix),
                plain.as_mut_slice().into(),
                tag,
            )
            .ok()?;
        Some(plain)
    }

    /// ring (packets) and RustCrypto (the construction netcode.c uses through libsodium)
    /// are one AEAD: what either seals the other opens, at every length a game packet
    /// has, and both refuse a flipped byte, another sequence, prefix, protocol id or key.
    #[test]
    fn ring_and_rustcrypto_agree() {
        let key = [0x5a; 32];
        let c = PacketCipher::new(&key);
        for len in 0..=1200usize {
            let plain: Vec<u8> = (0..len).map(|i| (i * 31 + len) as u8).collect();
            let seq = 0x0123_4567_89ab_0000 + len as u64;
            let mut by_ring = plain.clone();
            c.seal(7, seq, 0x15, &mut by_ring);
            let mut by_rc = plain.clone();
            let tag = rustcrypto(&key)
                .encrypt_inout_detached(&rc_nonce(seq), &additional(7, 0x15), by_rc.as_mut_slice().into())
                .unwrap();
            by_rc.extend_from_slice(&tag);
            assert_eq!(by_ring, by_rc, "length {len}");
            assert_eq!(rc_open(&key, 7, seq, 0x15, &by_ring).as_ref(), Some(&plain));
            let mut out = Vec::new();
            assert!(c.open(7, seq, &[0x15], &by_rc, &mut out));
            assert_eq!(out, plain);
            let mut bad = vec![(seq + 1, 0x15, 7, by_rc.clone()), (seq, 0x16, 7, by_rc.clone())];
            bad.push((seq, 0x15, 8, by_rc.clone()));
            for at in [0, by_rc.len() / 2, by_rc.len() - 1] {
                let mut b = by_rc.clone();
                b[at] ^= 1 << (len % 8);
                bad.push((seq, 0x15, 7, b));
            }
            for (i, (s, prefix, id, b)) in bad.iter().enumerate() {
                let mut out = Vec::new();
                assert!(
                    !c.open(*id, *s, &[*prefix], b, &mut out),
                    "length {len}, case {i}"
                );
                assert!(out.is_empty());
                assert!(
                    rc_open(&key, *id, *s, *prefix, b).is_none(),
                    "length {len}, case {i}"
                );
            }
            let other = [0x5b; 32];
            assert!(!PacketCipher::new(&other).open(7, seq, &[0x15], &by_rc, &mut out));
            assert!(rc_open(&other, 7, seq, 0x15, &by_ring).is_none());
        }
    }

    #[test]
    fn a_token_gives_its_keys() {
        let mut token = vec![0u8; TOKEN_PLAINTEXT];
        token[12] = 1; // one address
        token[16] = 1; // IPv4
        token[23..55].copy_from_slice(&[3; 32]);
        token[55..87].copy_from_slice(&[4; 32]);
        let mut req = vec![0u8; REQUEST_BYTES];
        req[1..14].copy_from_slice(VERSION);
        let ad: [u8; 29] = req[1..30].try_into().unwrap();
        let sealed = seal_token(&[9; 32], &ad, &[5; 24], &token);
        req[30..54].copy_from_slice(&[5; 24]);
        req[54..].copy_from_slice(&sealed);
        let mut plain = Vec::new();
        let k = open_token(&[9; 32], &req, &mut plain).unwrap();
        assert_eq!(k.client_to_server, [3; 32]);
        assert_eq!(k.server_to_client, [4; 32]);
        assert!(open_token(&[1; 32], &req, &mut plain).is_none());
    }
}
