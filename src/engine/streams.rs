//! Sequence analysis per message stream: one counter per flow, stream and value of the
//! stream's key fields (ENet's reliable commands per flow and channel), in bounded memory.

use super::seq::{SeqStats, SeqTracker};
use crate::dissect::MessageInfo;
use crate::dissect::program::StreamDef;
use hashbrown::HashMap;
use serde::Serialize;

/// Stream counters kept at most over all flows; messages of streams past it are counted
/// in `Summary::streams_not_tracked`, without sequence analysis.
pub const MAX_STREAMS: usize = 65_536;

/// One flow's streams.
#[derive(Debug, Clone, Default)]
pub struct FlowStreams {
    trackers: HashMap<(u8, [i64; 2]), SeqTracker>,
}

/// A stream's final state: its name, its key as `field=value` pairs, and its sequence
/// analysis as a flow's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamEnd {
    pub name: String,
    pub key: String,
    pub seq: SeqStats,
}

impl FlowStreams {
    /// Counts the messages' sequences; `total`: streams open over all flows, `untracked`:
    /// messages past the cap.
    pub fn observe(
        &mut self,
        defs: &[StreamDef],
        messages: &[MessageInfo],
        total: &mut usize,
        untracked: &mut u64,
    ) {
        for s in messages.iter().flat_map(|m| m.streams()) {
            let Some(def) = defs.get(s.stream as usize) else {
                continue;
            };
            let key = (s.stream, s.key);
            let tracker = match self.trackers.get_mut(&key) {
                Some(t) => t,
                None if *total < MAX_STREAMS => {
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
            tracker.observe(s.sequence, false);
        }
    }

    /// Every stream's final state, by name and key value.
    pub fn finish(self, defs: &[StreamDef]) -> Vec<StreamEnd> {
        let mut out: Vec<((u8, [i64; 2]), StreamEnd)> = self
            .trackers
            .into_iter()
            .filter_map(|((si, key), t)| {
                let def = defs.get(si as usize)?;
                let key_text = def
                    .key
                    .iter()
                    .zip(key)
                    .map(|((n, _), v)| format!("{n}={v}"))
                    .collect::<Vec<_>>()
                    .join(",");
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
