//! Values a conversation remembers (`remember="NAME"`): learnt from one datagram, used by
//! later ones of the same address pair in either direction — ENet's connectID, sent once
//! in CONNECT and then standing in every checksum.

use super::event::ip_bits;
use hashbrown::HashMap;
use std::net::IpAddr;

/// Conversations remembered at most: past it a new conversation learns nothing, and its
/// checksums that need a value are counted as unverifiable, never guessed.
pub const MAX_CONVERSATIONS: usize = 65_536;

/// Values by index: the bytes as they were on the wire (length, then up to 8).
type Values = [(u8, [u8; 8]); 8];

/// Both directions of an address pair, one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConversationKey([(u128, u16); 2]);

impl ConversationKey {
    pub fn new(a: IpAddr, a_port: u16, b: IpAddr, b_port: u16) -> Self {
        let (x, y) = ((ip_bits(a), a_port), (ip_bits(b), b_port));
        ConversationKey(if x <= y { [x, y] } else { [y, x] })
    }
}

#[derive(Debug, Clone, Default)]
pub struct Conversations {
    values: HashMap<ConversationKey, Values>,
}

impl Conversations {
    /// The bytes learnt as value `i` in conversation `key`.
    pub fn get(&self, key: &ConversationKey, i: u8) -> Option<&[u8]> {
        let (len, bytes) = self.values.get(key)?.get(i as usize)?;
        (*len > 0).then(|| &bytes[..*len as usize])
    }

    /// Remembers `bytes` (1 to 8) as value `i`; false when the table is full.
    pub fn learn(&mut self, key: ConversationKey, i: u8, bytes: &[u8]) -> bool {
        if !self.values.contains_key(&key) && self.values.len() >= MAX_CONVERSATIONS {
            return false;
        }
        let (Some(slot), 1..=8) = (
            self.values
                .entry(key)
                .or_insert([(0, [0; 8]); 8])
                .get_mut(i as usize),
            bytes.len(),
        ) else {
            return false;
        };
        slot.0 = bytes.len() as u8;
        slot.1[..bytes.len()].copy_from_slice(bytes);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_share_a_conversation() {
        let (a, b) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        let mut c = Conversations::default();
        assert!(c.learn(ConversationKey::new(a, 5000, b, 7777), 0, &[1, 2, 3, 4]));
        assert_eq!(
            c.get(&ConversationKey::new(b, 7777, a, 5000), 0),
            Some(&[1u8, 2, 3, 4][..])
        );
        assert_eq!(c.get(&ConversationKey::new(b, 7777, a, 5001), 0), None);
        assert_eq!(c.get(&ConversationKey::new(a, 5000, b, 7777), 1), None);
    }
}
