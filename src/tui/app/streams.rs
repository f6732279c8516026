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

    /// Enter on a stream: the datagrams of its direction carrying a message of its key
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
