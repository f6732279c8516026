//! What the messages inside datagrams carried, per message type.

use super::*;

/// The messages of valid datagrams (a malformed datagram's messages count up to the
/// fault: those read and the one that failed).
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct MessageReport {
    pub total: u64,
    /// By type name (message types, `type N` for one the definition lacks).
    pub by_type: std::collections::BTreeMap<String, u64>,
    /// Datagrams by how many messages they carry.
    pub per_datagram: std::collections::BTreeMap<u32, u64>,
    /// Messages whose own header could not be read.
    pub unreadable: u64,
    /// Messages of streams past the cap on stream counters (no sequence analysis).
    #[serde(skip_serializing_if = "is_zero")]
    pub streams_not_tracked: u64,
    /// By type id while counting; `by_type` is made from it.
    #[serde(skip)]
    pub counts: Vec<u64>,
}

impl MessageReport {
    /// Counts one datagram's messages.
    pub fn add(&mut self, messages: &[gpcap_dissect::MessageInfo]) {
        self.total += messages.len() as u64;
        *self.per_datagram.entry(messages.len() as u32).or_default() += 1;
        for m in messages {
            match m.type_id {
                Some(t) => {
                    let t = t as usize;
                    if t >= self.counts.len() {
                        // Types are at most 2^16 (a type field of 16 bits).
                        self.counts.resize((t + 1).min(1 << 16), 0);
                    }
                    if let Some(n) = self.counts.get_mut(t) {
                        *n += 1;
                    }
                }
                None => self.unreadable += 1,
            }
        }
    }

    pub(super) fn merge(&mut self, o: MessageReport) {
        self.total += o.total;
        self.unreadable += o.unreadable;
        self.streams_not_tracked += o.streams_not_tracked;
        add_map(&mut self.per_datagram, o.per_datagram);
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(o.counts) {
            *a += b;
        }
    }

    pub(in crate::sinks::analysis) fn finalize(&mut self, p: &gpcap_dissect::Program) {
        self.by_type = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(t, n)| {
                let name = p.packet(t as u32).filter(|d| d.message).map_or_else(
                    || format!("type {}", (t as u32).saturating_sub(p.message_base)),
                    |d| d.name.clone(),
                );
                (name, *n)
            })
            .collect();
    }
}
