//! Acks per message (ENet's ACKNOWLEDGE of one channel's reliable sequence): each
//! stream a message's `role=ack` refers to is settled as the flow's own counter is by
//! `ack`/`ack-bits` ([`super::acks`]), and the round trip is timed from the datagram
//! whose send time the ack echoes (`role=ack-time`), not from the first copy: a resent
//! command is timed from the copy that was acked.

use super::acks::{AckStats, AckTracker};
use gpcap_dissect::program::StreamDef;
use gpcap_dissect::{AckItem, AckKind, MessageInfo};
use hashbrown::HashMap;
use std::collections::VecDeque;

/// Streams acked per flow that get a tracker (ENet: one per channel).
pub const MAX_STREAMS: usize = 256;

/// Recent copies (a sequence and its send time) whose capture times a flow remembers,
/// for the echoes of acks: the last 4,096 sequences' with two copies each.
const RECENT: usize = 8192;

/// A stream sequence: stream, key values, sequence.
type SeqKey = (u8, [i64; 2], u64);

/// One acked stream's figures: its name, its key as `field=value` pairs, its acks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct StreamAcks {
    pub name: String,
    pub key: String,
    pub acks: AckStats,
}

/// One direction's acked streams, and the send times of its recent sequences' copies.
#[derive(Debug, Clone, Default)]
pub struct FlowMessageAcks {
    trackers: HashMap<(u8, [i64; 2]), AckTracker>,
    /// The capture time of each recent copy, by sequence and send time (what an ack
    /// echoes names one): no allocation per copy, a fixed size each.
    copies: HashMap<(SeqKey, u32), i64>,
    /// The copies in `copies`, oldest first.
    order: VecDeque<(SeqKey, u32)>,
    /// Each tracker keeps what every sequence settled as (the filter's `never_acked`
    /// and `rtt` on messages).
    keep_log: bool,
}

impl FlowMessageAcks {
    /// Trackers made from now on keep what each sequence settled as.
    pub fn keep_log(&mut self) {
        self.keep_log = true;
    }

    /// What each stream's sequences settled as, by stream and key.
    pub fn finish_logged(self) -> Vec<(super::acks::StreamId, Vec<super::acks::Settled>)> {
        (self.trackers.into_iter())
            .map(|(k, t)| (k, t.finish_logged().1))
            .collect()
    }

    /// This direction's datagram at `ts_ns` carried `messages`.
    pub fn sent(&mut self, defs: &[StreamDef], messages: &[MessageInfo], ts_ns: i64) {
        for m in messages {
            for s in m.streams() {
                self.sent_one(defs, s, m.send_time, ts_ns);
            }
        }
    }

    /// One stream sequence of a message sent at `ts_ns` (`time`: its send time).
    fn sent_one(&mut self, defs: &[StreamDef], s: gpcap_dissect::StreamSeq, time: Option<u32>, ts_ns: i64) {
        let Some(def) = defs.get(s.stream as usize).filter(|d| d.acked) else {
            return;
        };
        if let Some(time) = time {
            self.copy(&(s.stream, s.key, s.sequence), time, ts_ns);
        }
        let n = self.trackers.len();
        let t = match self.trackers.get_mut(&(s.stream, s.key)) {
            Some(t) => t,
            None if n < MAX_STREAMS => self.trackers.entry((s.stream, s.key)).or_insert_with(|| {
                let mut t = AckTracker::new(def.bits);
                if self.keep_log {
                    t.keep_log();
                }
                t
            }),
            None => return,
        };
        t.sent(s.sequence, ts_ns);
    }

    /// A copy of `seq` sent at `time` (the sender's clock), captured at `ts_ns`.
    fn copy(&mut self, seq: &SeqKey, time: u32, ts_ns: i64) {
        // A copy sent at the same time again (duplicated on the way): the latest.
        if let Some(at) = self.copies.get_mut(&(*seq, time)) {
            *at = ts_ns;
            return;
        }
        if self.order.len() >= RECENT
            && let Some(old) = self.order.pop_front()
        {
            self.copies.remove(&old);
        }
        self.order.push_back((*seq, time));
        self.copies.insert((*seq, time), ts_ns);
    }

    /// The other direction acked `ack` at `ts_ns`, echoing `echo`; false when no
    /// sequence of that stream was sent (nothing to settle).
    pub fn acked(&mut self, defs: &[StreamDef], m: &MessageInfo, ts_ns: i64, second: Option<u32>) -> bool {
        let Some(ack) = m.ack else { return true };
        let width = defs.get(ack.stream as usize).map_or(16, |d| d.bits);
        // The copy the ack answers: the one sent at the echoed time.
        let echoed = m
            .echo
            .map(|e| self.echoed(&(ack.stream, ack.key, ack.sequence), e, ts_ns));
        let Some(t) = self.trackers.get_mut(&(ack.stream, ack.key)) else {
            return false;
        };
        match echoed {
            Some(at) => t.acked_echo(ack.sequence, width, ts_ns, second, at),
            None => t.acked_one(ack.sequence, width, ts_ns, second),
        }
        true
    }

    /// The capture time of the copy of `seq` sent at the echoed time `e`, before `ts_ns`.
    fn echoed(&self, seq: &SeqKey, e: u32, ts_ns: i64) -> Option<i64> {
        self.copies.get(&(*seq, e)).copied().filter(|&at| at <= ts_ns)
    }

    /// The other direction's cumulative ack, range or NAK of a stream, at `ts_ns`.
    pub fn acked_item(
        &mut self,
        defs: &[StreamDef],
        item: &AckItem,
        ts_ns: i64,
        second: Option<u32>,
    ) -> bool {
        let Some((stream, key)) = item.stream else {
            return true;
        };
        // Everything below 0 before the stream sent anything (KCP's una before anything
        // arrived): nothing to settle, and not unmatched. Once it has sent, the same ack
        // says the peer holds none of it yet: the tracker hears it (acks, none settled).
        if item.kind == AckKind::Below && item.first == 0 && !self.trackers.contains_key(&(stream, key)) {
            return true;
        }
        let width = defs.get(stream as usize).map_or(16, |d| d.bits);
        // The echo answers the newest sequence the item names.
        let newest = match item.kind {
            AckKind::Below => item.first.wrapping_sub(1),
            AckKind::UpTo => item.first,
            AckKind::Range | AckKind::Nak => item.last,
        } & (u64::MAX >> (64 - width.clamp(1, 64)));
        let echoed = item.echo.map(|e| self.echoed(&(stream, key, newest), e, ts_ns));
        let Some(t) = self.trackers.get_mut(&(stream, key)) else {
            return false;
        };
        match item.kind {
            AckKind::Below => t.acked_cumulative(item.first, width, false, ts_ns, second, echoed),
            AckKind::UpTo => t.acked_cumulative(item.first, width, true, ts_ns, second, echoed),
            AckKind::Range => t.acked_range(item.first, item.last, width, ts_ns, second, echoed),
            AckKind::Nak => t.naked_range(item.first, item.last, width),
        }
        true
    }

    /// Bytes it holds.
    pub fn heap_bytes(&self) -> usize {
        self.trackers
            .values()
            .map(|t| std::mem::size_of::<AckTracker>() + 16 + t.heap_bytes())
            .sum::<usize>()
            + self.copies.capacity() * (std::mem::size_of::<((SeqKey, u32), i64)>() + 1)
            + self.order.capacity() * std::mem::size_of::<(SeqKey, u32)>()
    }

    /// Every acked stream's figures as the direction's, and each stream's apart (by
    /// name and key, as the stream table names them).
    pub fn finish(self, defs: &[StreamDef]) -> (Option<AckStats>, Vec<StreamAcks>) {
        let mut each: Vec<((u8, [i64; 2]), AckTracker)> = self.trackers.into_iter().collect();
        each.sort_by_key(|(k, _)| *k);
        let streams = (each.iter())
            .filter_map(|((si, key), t)| {
                let def = defs.get(*si as usize)?;
                let acks = t.clone().finish()?;
                Some(StreamAcks {
                    name: def.name.clone(),
                    key: gpcap_engine::streams::key_text(def, *key),
                    acks,
                })
            })
            .collect();
        (AckTracker::finish_many(each.into_iter().map(|(_, t)| t)), streams)
    }
}
