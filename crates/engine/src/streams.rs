//! Sequence analysis per message stream: one counter per flow, stream and value of the
//! stream's key fields (ENet's reliable commands per flow and channel), in bounded memory.

use super::seq::{SeqEvent, SeqStats, SeqTracker};
use gpcap_dissect::MessageInfo;
use gpcap_dissect::program::StreamDef;
use hashbrown::HashMap;
use serde::Serialize;

/// Stream counters kept at most over all flows; messages of streams past it are counted
/// in `Summary::streams_not_tracked`, without sequence analysis.
pub const MAX_STREAMS: usize = 65_536;

/// What the stream analysis said of one stream sequence of a datagram's message: its
/// verdict in its stream (new after a gap of N, late, a duplicate copy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamEvent {
    /// The message's index in the datagram.
    pub message: u16,
    pub stream: u8,
    pub key: [i64; 2],
    pub sequence: u64,
    pub event: SeqEvent,
}

/// A stream's key values as `field=value` pairs joined by commas.
pub fn key_text(def: &StreamDef, key: [i64; 2]) -> String {
    let mut out = String::new();
    let _ = write_key(&mut out, def, key);
    out
}

/// [`key_text`] written into `out` (an export's string column: no text made per message).
pub fn write_key(out: &mut impl std::fmt::Write, def: &StreamDef, key: [i64; 2]) -> std::fmt::Result {
    for (i, ((n, _), v)) in def.key.iter().zip(key).enumerate() {
        let comma = if i > 0 { "," } else { "" };
        write!(out, "{comma}{n}={v}")?;
    }
    Ok(())
}

/// One flow's streams.
#[derive(Debug, Clone, Default)]
pub struct FlowStreams {
    trackers: HashMap<(u8, [i64; 2]), SeqTracker>,
}

/// A stream's final state: its name, its key as `field=value` pairs, and its sequence
/// analysis as a flow's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StreamEnd {
    pub name: String,
    pub key: String,
    pub seq: SeqStats,
}

impl FlowStreams {
    /// Counts the messages' sequences; `total`: streams open over all flows and the most
    /// kept, `untracked`: messages past it.
    pub fn observe(
        &mut self,
        defs: &[StreamDef],
        messages: &[MessageInfo],
        (total, most): (&mut usize, usize),
        untracked: &mut u64,
        events: &mut Vec<StreamEvent>,
    ) {
        let all = messages
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.streams().map(move |s| (i, s)));
        for (i, s) in all {
            let Some(def) = defs.get(s.stream as usize) else {
                continue;
            };
            let key = (s.stream, s.key);
            let tracker = match self.trackers.get_mut(&key) {
                Some(t) => t,
                None if *total < most => {
                    *total += 1;
                    self.trackers
                        .entry(key)
                        .or_insert_with(|| SeqTracker::new(def.bits))
                }
                None => {
                    *untracked += 1;
                    continue;
                }
            };
            let event = tracker.observe(s.sequence, false);
            events.push(StreamEvent {
                message: i.min(u16::MAX as usize) as u16,
                stream: s.stream,
                key: s.key,
                sequence: s.sequence,
                event,
            });
        }
    }

    /// Every stream's final state, by name and key value.
    pub fn finish(self, defs: &[StreamDef]) -> Vec<StreamEnd> {
        let mut out: Vec<((u8, [i64; 2]), StreamEnd)> = self
            .trackers
            .into_iter()
            .filter_map(|((si, key), t)| {
                let def = defs.get(si as usize)?;
                let key_text = key_text(def, key);
                Some((
                    (si, key),
                    StreamEnd {
                        name: def.name.clone(),
                        key: key_text,
                        seq: t.stats,
                    },
                ))
            })
            .collect();
        out.sort_by_key(|(k, _)| *k);
        out.into_iter().map(|(_, e)| e).collect()
    }
}
