//! What leaves the TUI: packets written to pcapng (`w`) and text copied (`y`, `Y`).

use super::*;

impl App {
    /// `w`'s answer: an existing file is replaced only once confirmed.
    pub(super) fn ask_write(&mut self, to: &str) {
        if !to.is_empty() && std::path::Path::new(to).exists() {
            self.pending_write = Some(to.to_string());
            self.open(Ask::Replace, "");
            return;
        }
        self.write(to)
    }

    /// Writes the marked packets, or else the shown ones, to a pcapng file (a reassembled
    /// packet brings its fragments), on a thread of its own.
    pub(super) fn write(&mut self, to: &str) {
        if to.is_empty() {
            return;
        }
        if self.index.store.is_some() {
            self.message = Some((
                "live capture writes with --write; w writes from a capture file".into(),
                true,
            ));
            return;
        }
        let rows: Vec<u32> = if self.marks.is_empty() {
            self.view.clone()
        } else {
            self.marks.iter().copied().collect()
        };
        let what = if self.marks.is_empty() { "shown" } else { "marked" };
        let (tx, rx) = std::sync::mpsc::channel();
        let (from, cfg, to) = (self.index.path.clone(), self.cfg.clone(), PathBuf::from(to));
        let n = rows.len() as u64;
        std::thread::spawn(move || {
            let done = frames_of_rows(&from, cfg, &rows)
                .map_err(|e| e.to_string())
                .and_then(|frames| write_frames(&from, &frames, &to).map_err(|e| e.to_string()))
                .map(|written| {
                    format!(
                        "wrote {} of {} {what} to {}",
                        gpcap::present::count(written, "frame"),
                        gpcap::present::count(n, "packet"),
                        to.display()
                    )
                });
            let _ = tx.send(done);
        });
        self.writing = Some(rx);
        self.message = Some((format!("writing {} {what} packets…", n), false));
    }

    /// Copies the selected field's value (or, with `json`, the field as JSON), or the
    /// selected packet's line, to the clipboard.
    pub(super) fn copy(&mut self, json: bool) {
        let text = match (self.tree_field(), self.focus) {
            (Some((path, value, f)), Focus::Tree) => {
                if json {
                    serde_json::json!({
                        "path": path,
                        "kind": f.kind,
                        "bit_offset": f.bit_offset,
                        "bit_len": f.bit_len,
                        "raw": f.raw,
                        "value": value,
                    })
                    .to_string()
                } else {
                    value
                }
            }
            _ => match self.selected_row() {
                Some(r) => self.summary_line(&r),
                None => return,
            },
        };
        self.message = Some((format!("copied: {}", gpcap::present::clip(&text, 60)), false));
        self.clipboard = Some(text);
    }

    /// The list's line for a row, as copied.
    pub(super) fn summary_line(&mut self, r: &Row) -> String {
        let flow = self
            .index
            .flows
            .get(r.flow as usize)
            .map(|f| format!("{} → {}", f.src, f.dst))
            .unwrap_or_default();
        let row = self.view.get(self.selected).copied().unwrap_or(0);
        let ix = std::mem::take(&mut self.index);
        let info = self.info_of(&ix, row);
        self.index = ix;
        // A message reassembled from fragments inside messages has no sequence.
        let seq = match r.sequence() {
            None if r.has(status::REASSEMBLED) => "-".to_string(),
            _ => r.seq.to_string(),
        };
        format!(
            "{} {} {} seq {seq} {} bytes {}",
            r.frame, r.ts_ns, flow, r.size, info
        )
    }
}
