//! Moving in the packet list: selecting, going to a frame, filtering, finding, jumping
//! to the next malformed packet or gap, marks and the time reference.

use super::*;

impl App {
    pub fn selected_row(&self) -> Option<Row> {
        let i = *self.view.get(self.selected)? as usize;
        self.index.rows.get(i)
    }

    /// Selects the first shown packet at or after `frame`.
    pub(crate) fn goto_frame(&mut self, frame: u64, say: bool) {
        let ix = &self.index;
        let pos = self
            .view
            .partition_point(|&i| ix.rows.get(i as usize).is_some_and(|r| r.frame < frame));
        if pos < self.view.len() {
            self.selected = pos;
        } else if say {
            self.message = Some((format!("no frame {frame} in the list"), true));
        }
    }

    /// Selects position `pos` of the view.
    pub(super) fn select(&mut self, pos: usize) {
        if pos < self.view.len() && pos != self.selected {
            self.selected = pos;
            self.load_detail();
        }
    }

    pub(super) fn move_selection(&mut self, delta: isize) {
        match self.tab {
            Tab::Flows if self.streams_view => {
                return match self.messages.as_mut() {
                    Some(m) => m.table.step(delta),
                    None => self.streams.step(delta),
                };
            }
            Tab::Flows => return self.flows.step(delta),
            Tab::Reassembly => return self.frags.step(delta),
            Tab::Bandwidth => return self.bits.step(delta),
            Tab::Packets => {}
            _ => return,
        }
        if self.focus == Focus::Tree {
            let vis = self.visible_fields();
            let pos = vis.iter().position(|&i| i == self.field).unwrap_or(0);
            let next = (pos as isize + delta).clamp(0, vis.len().saturating_sub(1) as isize) as usize;
            self.field = vis.get(next).copied().unwrap_or(0);
            return;
        }
        if self.view.is_empty() {
            return;
        }
        let next = (self.selected as isize + delta).clamp(0, self.view.len() as isize - 1) as usize;
        self.select(next);
    }

    /// A display filter over this capture's definition and the layers inside it
    /// (`reliable.sequence > 10`), as `dissect --filter` reads it.
    pub(super) fn parse_filter(&self, text: &str) -> Result<Filter, gpcap::FilterError> {
        let layers = self.cfg.stack.as_ref().map_or(&[][..], |s| &s.layers[..]);
        Filter::parse_stacked(text, self.program.as_ref(), layers)
    }

    pub fn apply_filter(&mut self, text: &str) {
        match self.parse_filter(text) {
            Ok(f) if f.needs_engine() && self.index.store.is_some() => {
                self.message = Some((
                    "filters on dissected fields and acks need a capture file: write the live capture with --write and open it with gpcap tui".into(),
                    true,
                ));
            }
            Ok(f) => {
                self.filter = f;
                self.focus = Focus::List;
                self.tab = Tab::Packets;
                self.refilter();
                // A field filter says how it goes on the status line as it runs.
                self.message = (!self.filter.needs_engine()).then(|| {
                    (
                        format!(
                            "{} match",
                            gpcap::present::count(self.view.len() as u64, "packet")
                        ),
                        false,
                    )
                });
            }
            Err(e) => self.message = Some((format!("filter: {e}"), true)),
        }
    }

    /// Shows only the conversation of the selected packet.
    pub(super) fn follow(&mut self) {
        let Some(row) = self.selected_row() else { return };
        if row.flow == NO_FLOW {
            self.message = Some(("this packet has no UDP flow".into(), true));
            return;
        }
        let flow = self.index.flows.get(row.flow as usize).copied();
        if let Some(f) = flow {
            let text = format!("flow {} && flow {}", f.src, f.dst);
            self.apply_filter(&text);
        }
    }

    pub(super) fn find_next(&mut self, dir: isize) {
        let Some(f) = &self.find else {
            self.message = Some(("nothing to find: F (or Ctrl-F) asks what".into(), true));
            return;
        };
        let ix = &self.index;
        let hit = |pos: usize| {
            ix.rows
                .get(self.view[pos] as usize)
                .is_some_and(|r| f.matches(&r.event(&ix.flows)))
        };
        match self.search(dir, hit) {
            Some(pos) => self.select(pos),
            None => self.message = Some((format!("no more packets match `{}`", f.text), true)),
        }
    }

    /// The next position of the view in direction `dir` from the selection that `hit`
    /// accepts.
    pub(super) fn search(&self, dir: isize, hit: impl Fn(usize) -> bool) -> Option<usize> {
        if dir > 0 {
            (self.selected + 1..self.view.len()).find(|&p| hit(p))
        } else {
            (0..self.selected.min(self.view.len())).rev().find(|&p| hit(p))
        }
    }

    pub(super) fn jump(&mut self, dir: isize, to: Jump) {
        self.tab = Tab::Packets;
        let found = match to {
            Jump::Malformed => {
                let ix = &self.index;
                self.search(dir, |p| {
                    ix.rows.get(self.view[p] as usize).is_some_and(|r| {
                        r.has(status::CRC_FAIL) || r.has(status::MALFORMED) || r.has(status::BAD_FRAME)
                    })
                })
            }
            Jump::Gap => self.find_gap(dir),
        };
        match (found, to) {
            (Some(p), _) => self.select(p),
            (None, Jump::Malformed) => self.message = Some(("no more malformed packets".into(), true)),
            (None, Jump::Gap) => self.message = Some(("no more sequence gaps".into(), true)),
        }
    }

    /// The next shown datagram the sequence analysis found a gap before (as `analyze`
    /// counts gaps).
    pub(super) fn find_gap(&self, dir: isize) -> Option<usize> {
        let ix = &self.index;
        self.search(dir, |p| {
            ix.rows
                .get(self.view[p] as usize)
                .is_some_and(|r| r.has(status::GAP))
        })
    }

    pub(super) fn toggle_mark(&mut self) {
        let Some(&row) = self.view.get(self.selected) else {
            return;
        };
        if !self.marks.remove(&row) {
            self.marks.insert(row);
        }
        self.message = Some((
            format!(
                "{} marked (w writes them)",
                gpcap::present::count(self.marks.len() as u64, "packet")
            ),
            false,
        ));
    }

    pub(super) fn toggle_time_ref(&mut self) {
        let Some(r) = self.selected_row() else { return };
        self.time_ref = if self.time_ref == Some(r.ts_ns) {
            None
        } else {
            Some(r.ts_ns)
        };
        self.time_format = TimeFormat::Relative;
        self.message = Some(match self.time_ref {
            Some(_) => (format!("times are relative to frame {}", r.frame), false),
            None => ("time reference cleared".into(), false),
        });
    }
}

/// What `]`/`[` and `}`/`{` jump to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Jump {
    Malformed,
    Gap,
}
