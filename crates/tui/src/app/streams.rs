//! The Streams view of the Flows tab (`v`): every message stream of every direction,
//! and Enter on one opens its messages in the list.

use super::*;

/// A stream of the report: its flow's index and the stream's index in that flow.
pub type StreamRef = (usize, usize);

impl App {
    /// Every stream of the report, flow by flow in the report's order.
    pub fn stream_order(&self, ix: &Index) -> Vec<StreamRef> {
        let Some(r) = &ix.report else { return Vec::new() };
        (r.flows.iter().enumerate())
            .flat_map(|(i, f)| (0..f.streams.len()).map(move |s| (i, s)))
            .collect()
    }

    /// Enter on a stream: its messages and their verdicts, read on a thread (a live
    /// capture has no file to read again: its datagrams instead).
    pub(super) fn open_messages(&mut self) {
        let order = self.stream_order(&self.index);
        let Some(r) = &self.index.report else { return };
        let Some(&(fi, si)) = order.get(self.streams.selected) else {
            return;
        };
        if self.index.store.is_some() {
            return self.open_stream();
        }
        let (f, s) = (&r.flows[fi], &r.flows[fi].streams[si]);
        let flow = gpcap_engine::FlowId {
            src: f.src,
            dst: f.dst,
        };
        let path = self.index.path.clone();
        let m = crate::messages::Messages::start(path, self.cfg.clone(), flow, s.name.clone(), s.key.clone());
        self.messages = Some(m);
    }

    /// Enter on a message: its datagram in the list of its direction's, selected.
    pub(super) fn open_message(&mut self) {
        let Some(m) = &self.messages else { return };
        // The selection is kept in the list when drawn; a key may have moved it past.
        let Some(row) = m.rows.get(m.table.selected.min(m.rows.len().saturating_sub(1))) else {
            return;
        };
        let frame = row.frame;
        let order = self.stream_order(&self.index);
        let Some(r) = &self.index.report else { return };
        let Some(&(fi, _)) = order.get(self.streams.selected) else {
            return;
        };
        let text = format!("src {} && dst {}", r.flows[fi].src, r.flows[fi].dst);
        self.apply_filter(&text);
        let ix = &self.index;
        let pos = (self.view.iter()).position(|&i| ix.rows.get(i as usize).is_some_and(|r| r.frame >= frame));
        if let Some(pos) = pos {
            self.selected = usize::MAX;
            self.select(pos);
        }
    }

    /// `p` on a stream: the datagrams of its direction carrying a message of its key
    /// (`src A && dst B && conv == 7`); the verdict words narrow it (`&& retransmission`).
    pub(super) fn open_stream(&mut self) {
        let order = self.stream_order(&self.index);
        let Some(r) = &self.index.report else { return };
        let Some(&(fi, si)) = order.get(self.streams.selected) else {
            return;
        };
        let (f, s) = (&r.flows[fi], &r.flows[fi].streams[si]);
        let mut text = format!("src {} && dst {}", f.src, f.dst);
        // A key field by its own name, or as a field of the messages' header.
        for (field, value) in s.key.split(',').filter_map(|p| p.split_once('=')) {
            let test = [
                format!("{field} == {value}"),
                format!("messages.{field} == {value}"),
            ]
            .into_iter()
            .find(|t| self.parse_filter(t).is_ok());
            if let Some(t) = test {
                text.push_str(&format!(" && {t}"));
            }
        }
        self.apply_filter(&text);
    }
}
