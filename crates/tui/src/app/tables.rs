//! The Flows, Reassembly and Loss tabs: sorting their tables, opening a flow or a
//! fragmented packet in the list, and the series their charts draw.

use super::*;

impl App {
    pub(super) fn sort(&mut self, reverse: bool) {
        let (t, columns) = match self.tab {
            Tab::Flows => (&mut self.flows, FLOW_COLUMNS.len()),
            _ => (&mut self.frags, FRAG_COLUMNS.len()),
        };
        if reverse {
            t.descending = !t.descending;
        } else {
            t.sort = (t.sort + 1) % columns;
            t.descending = t.sort != 0;
        }
        t.selected = 0;
        t.scroll = 0;
        let names: &[&str] = if self.tab == Tab::Flows {
            &FLOW_COLUMNS
        } else {
            &FRAG_COLUMNS
        };
        let (sort, desc) = (t.sort, t.descending);
        self.message = Some((
            format!(
                "sorted by {}{}",
                names[sort],
                if desc { ", descending" } else { "" }
            ),
            false,
        ));
    }

    /// The report's flows in the Flows tab's order.
    pub fn flow_order(&self, ix: &Index) -> Vec<usize> {
        let Some(r) = &ix.report else { return Vec::new() };
        let mut order: Vec<usize> = (0..r.flows.len()).collect();
        let key = |i: usize| -> f64 {
            let f = &r.flows[i];
            let total = (f.seq.received + f.seq.lost).max(1);
            let acks = f.acks.as_ref();
            match self.flows.sort {
                1 => f.datagrams as f64,
                2 => f.packets_per_s,
                3 => f.bits_per_s,
                4 => f.seq.lost as f64 / total as f64,
                5 => f.seq.duplicates as f64,
                6 => f.seq.late as f64,
                7 => f.crc_fail as f64,
                8 => f.largest_payload as f64,
                9 => f.fragments as f64,
                10 => acks.map_or(-1.0, |a| a.acked as f64),
                11 => acks.map_or(-1.0, |a| a.ack_implied_loss),
                12 => acks.and_then(|a| a.rtt_ms).map_or(-1.0, |x| x.p50),
                _ => i as f64,
            }
        };
        order.sort_by(|&a, &b| key(a).total_cmp(&key(b)).then(a.cmp(&b)));
        if self.flows.descending {
            order.reverse();
        }
        order
    }

    /// The fragmented packets in the Reassembly tab's order (its own: incomplete first).
    pub fn frag_order(&self, ix: &Index) -> Vec<usize> {
        let mut order: Vec<usize> = (0..ix.frags.len()).collect();
        let key = |i: usize| -> (u64, u64) {
            let p = &ix.frags[i];
            match self.frags.sort {
                1 => (p.flow as u64, p.first_frame),
                2 => (p.seq, p.first_frame),
                3 => (p.count as u64, p.first_frame),
                4 => (
                    (p.count as u32 - p.received_count().min(p.count as u32)) as u64,
                    p.first_frame,
                ),
                5 => (p.duplicates as u64, p.first_frame),
                _ => (p.complete() as u64, p.first_frame),
            }
        };
        order.sort_by_key(|&i| key(i));
        if self.frags.descending {
            order.reverse();
        }
        order
    }

    /// Enter on a flow (one direction): its packets in the list; `both`: the whole
    /// conversation.
    pub(super) fn open_flow(&mut self, both: bool) {
        let order = self.flow_order(&self.index);
        let Some(r) = &self.index.report else { return };
        let Some(f) = order.get(self.flows.selected).and_then(|&i| r.flows.get(i)) else {
            return;
        };
        let text = if both {
            format!("flow {} && flow {}", f.src, f.dst)
        } else {
            format!("src {} && dst {}", f.src, f.dst)
        };
        self.apply_filter(&text);
    }

    /// Enter on a fragmented packet: its fragments and the packet they were put back
    /// together into, the packet selected (its field tree) when it was.
    pub(super) fn open_fragmented(&mut self) {
        let order = self.frag_order(&self.index);
        let Some(p) = order
            .get(self.frags.selected)
            .and_then(|&i| self.index.frags.get(i))
            .copied()
        else {
            return;
        };
        let Some(flow) = self.index.flows.get(p.flow as usize).copied() else {
            return;
        };
        let text = format!("flow {} && flow {} && seq == {}", flow.src, flow.dst, p.seq);
        self.apply_filter(&text);
        let ix = &self.index;
        let reassembled = self.view.iter().position(|&i| {
            ix.rows
                .get(i as usize)
                .is_some_and(|r| r.has(status::REASSEMBLED))
        });
        let first = self
            .view
            .iter()
            .position(|&i| ix.rows.get(i as usize).is_some_and(|r| r.frame >= p.first_frame));
        if let Some(pos) = reassembled.or(first) {
            self.selected = usize::MAX;
            self.select(pos);
        }
    }

    /// The selected flow's series, computed again when the selection or the index moved.
    pub(super) fn update_flow_series(&mut self) {
        let order = self.flow_order(&self.index);
        let ix = &self.index;
        let Some(r) = &ix.report else { return };
        let Some(fl) = order.get(self.flows.selected).and_then(|&i| r.flows.get(i)) else {
            return;
        };
        let Some(id) = ix.flows.iter().position(|f| f.src == fl.src && f.dst == fl.dst) else {
            return;
        };
        let key = (id as u32, ix.rows.len());
        if self.flow_series.as_ref().is_some_and(|s| s.key == key) {
            return;
        }
        let (first, last) = ix.span();
        let mut s = FlowSeries {
            key,
            datagrams: Series::over(first, last),
            gaps: Series::over(first, last),
            rtt_ms: None,
        };
        for row in ix
            .rows
            .iter()
            .filter(|r| r.flow == id as u32 && !r.has(status::REASSEMBLED))
        {
            s.datagrams.add(row.ts_ns, 1);
            // The engine's gaps, as analyze counts them (a sequence jump is none).
            s.gaps.add(row.ts_ns, row.gap as u64);
        }
        if let (Some(a), Some(start)) = (&fl.acks, r.timeline.start_ns) {
            // The report times round trips per second: no finer steps than that.
            let mut rtt = Series::over_at_least(first, last, 1_000_000_000);
            for &(sec, _, mean, _) in &a.rtt_timeline {
                let at = start.saturating_add(sec as i64 * 1_000_000_000);
                rtt.max_at(at, mean.round().max(0.0) as u64);
            }
            s.rtt_ms = (!a.rtt_timeline.is_empty()).then_some(rtt);
        }
        self.flow_series = Some(s);
    }

    /// Sequences lost over the capture, from every flow's gaps (the Loss tab).
    pub(super) fn update_loss_series(&mut self) {
        let ix = &self.index;
        if self
            .loss_series
            .as_ref()
            .is_some_and(|(n, _)| *n == ix.rows.len())
        {
            return;
        }
        let (first, last) = ix.span();
        let mut s = Series::over(first, last);
        for row in ix.rows.iter().filter(|r| r.has(status::GAP)) {
            s.add(row.ts_ns, row.gap as u64);
        }
        self.loss_series = Some((ix.rows.len(), s));
    }
}

/// The Flows tab's columns, for sorting (0: as the report lists them).
pub const FLOW_COLUMNS: [&str; 13] = [
    "flow",
    "datagrams",
    "pkt/s",
    "kbit/s",
    "loss",
    "dup",
    "late",
    "crc_mismatch",
    "largest",
    "frags",
    "acked",
    "ack loss",
    "rtt p50",
];
/// The Reassembly tab's columns, for sorting (0: incomplete first).
pub const FRAG_COLUMNS: [&str; 6] = ["incomplete first", "sender", "seq", "frags", "missing", "dup"];
