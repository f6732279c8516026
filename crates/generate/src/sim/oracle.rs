//! The oracle: what each flow's packets should make the analysis count (sent, lost,
//! reordered, fragments and their loss), kept as the simulation runs.

use super::*;

/// What an analyzer must count, computed independently from the delivered datagrams
/// in capture order (extended sequences, no 16-bit arithmetic).
pub(super) struct Oracle {
    pub(super) states: Vec<FlowOracle>,
}

pub(super) struct FlowOracle {
    pub(super) highest: Option<i64>,
    pub(super) seen: HashSet<i64>,
    pub(super) packets: HashMap<i64, (u32, HashSet<u32>)>,
}

impl Oracle {
    pub(super) fn new(flows: usize) -> Self {
        Oracle {
            states: (0..flows)
                .map(|_| FlowOracle {
                    highest: None,
                    seen: HashSet::new(),
                    packets: HashMap::new(),
                })
                .collect(),
        }
    }

    pub(super) fn frame(
        &mut self,
        o: &Out,
        flows: &[Flow],
        delivered: &mut HashMap<usize, Delivered>,
        truth: &mut Truth,
    ) {
        truth.frames += 1;
        let Some(di) = o.datagram else { return };
        let Some(d) = delivered.get_mut(&di) else { return };
        d.pieces_left -= 1;
        if d.pieces_left > 0 {
            return;
        }
        let Some(d) = delivered.remove(&di) else { return };
        let ft = truth.flows.entry(flows[d.flow].name.clone()).or_default();
        ft.datagrams += 1;
        if d.ip_fragments > 1 {
            ft.ip_fragmented += 1;
        }
        if d.corrupted {
            ft.crc_fail += 1;
            return;
        }
        ft.crc_ok += 1;
        ft.malformed += d.malformed as u64;
        if d.space != 0 {
            return;
        }
        let s = &mut self.states[d.flow];
        let fragment = d.fragment.is_some();
        match s.highest {
            None => {
                s.highest = Some(d.ext);
                s.seen.insert(d.ext);
                ft.received += 1;
            }
            Some(h) if d.ext > h => {
                ft.lost += (d.ext - h - 1) as u64;
                s.highest = Some(d.ext);
                s.seen.insert(d.ext);
                ft.received += 1;
            }
            Some(h) => {
                let near = h - d.ext < 1024;
                if near && s.seen.contains(&d.ext) {
                    if !fragment {
                        ft.duplicates += 1;
                    }
                } else {
                    if near {
                        s.seen.insert(d.ext);
                        ft.lost = ft.lost.saturating_sub(1);
                    }
                    ft.late += 1;
                    ft.received += 1;
                }
            }
        }
        // Keep memory bounded: sequences far behind can no longer matter.
        if s.seen.len() > 4096
            && let Some(h) = s.highest
        {
            s.seen.retain(|&x| h - x < 2048);
        }
        if let Some((id, count)) = d.fragment {
            ft.fragments += 1;
            if !s
                .packets
                .entry(d.ext)
                .or_insert((count, HashSet::new()))
                .1
                .insert(id)
            {
                truth.fragment_duplicates += 1;
            }
            if s.packets.len() > 4096
                && let Some(h) = s.highest
            {
                let old: Vec<i64> = s.packets.keys().copied().filter(|&x| h - x >= 2048).collect();
                for x in old {
                    if let Some((count, ids)) = s.packets.remove(&x) {
                        let e = ft.reassembly.entry(count).or_default();
                        e.0 += 1;
                        e.1 += (ids.len() as u32 == count) as u64;
                    }
                }
            }
        }
    }

    pub(super) fn finish(&mut self, flows: &[Flow], truth: &mut Truth) {
        for (i, s) in self.states.iter().enumerate() {
            if s.packets.is_empty() {
                continue;
            }
            let ft = truth.flows.entry(flows[i].name.clone()).or_default();
            for (count, ids) in s.packets.values() {
                let e = ft.reassembly.entry(*count).or_default();
                e.0 += 1;
                e.1 += (ids.len() as u32 == *count) as u64;
            }
        }
    }
}
