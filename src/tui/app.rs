//! TUI state and keys. The app owns its copy of the packet index, fed by updates from
//! the loader over a channel, so drawing never waits on a lock; nothing here draws.

use crate::capture::reader::FrameAt;
use crate::decode::{Decoded, decode};
use crate::dissect::{Dissection, Program};
use crate::engine::{Config, Validator};
use crate::filter::Filter;
use crate::sinks::index::{Index, NO_FLOW, Row, Update, status};
use crate::sinks::select::{ScanUpdate, scan};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Packets,
    Flows,
    Reassembly,
    Loss,
    Mtu,
}

impl Tab {
    pub const ALL: [Tab; 5] = [Tab::Packets, Tab::Flows, Tab::Reassembly, Tab::Loss, Tab::Mtu];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Packets => "Packets",
            Tab::Flows => "Flows",
            Tab::Reassembly => "Reassembly",
            Tab::Loss => "Loss",
            Tab::Mtu => "MTU",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Filter(String),
    Goto(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    Tree,
}

/// The selected packet, read back from the file and dissected with fields recorded.
pub struct Detail {
    pub row: Row,
    pub frame: Vec<u8>,
    /// Where the UDP payload sits in `frame`.
    pub payload: Option<(usize, usize)>,
    pub dissection: Option<Dissection>,
    pub note: Option<String>,
}

impl Detail {
    /// A detail that only says why the packet cannot be shown.
    fn unavailable(row: Row, note: String) -> Self {
        Detail {
            row,
            frame: Vec::new(),
            payload: None,
            dissection: None,
            note: Some(note),
        }
    }

    pub fn payload(&self) -> &[u8] {
        match self.payload {
            Some((a, b)) => self.frame.get(a..b).unwrap_or(&[]),
            None => &[],
        }
    }
}

/// A filter on dissected fields: the engine runs over the capture on a thread of its
/// own (the index holds no fields) and sends the rows it selects, in order.
pub struct FieldScan {
    updates: Receiver<ScanUpdate>,
    stop: Arc<AtomicBool>,
    /// Selected rows the index has not reached yet (the scan may run ahead of it).
    pending: std::collections::VecDeque<u32>,
    pub bytes_read: u64,
    pub done: bool,
    pub error: Option<String>,
    pub started: std::time::Instant,
    pub seconds: f64,
    /// The result was said on the status line.
    reported: bool,
}

impl Drop for FieldScan {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

pub struct App {
    pub index: Index,
    updates: Receiver<Update>,
    pub program: Option<Arc<Program>>,
    cfg: Config,
    /// The engine's stateless stage, recording fields, for the selected packet.
    validator: Validator,
    /// Reads the selected frame back from the file.
    reader: Option<FrameAt>,
    pub tab: Tab,
    pub mode: Mode,
    pub focus: Focus,
    pub filter: Filter,
    /// The scan behind a filter on dissected fields.
    pub field_scan: Option<FieldScan>,
    /// The frame to select again once a field scan reaches it.
    keep_frame: Option<u64>,
    /// Rows (by position in the index) that pass the filter.
    pub view: Vec<u32>,
    scanned: usize,
    /// Position in `view`.
    pub selected: usize,
    pub scroll: usize,
    /// Selected field (index into the dissection's fields) in the tree.
    pub field: usize,
    pub collapsed: HashSet<u32>,
    pub detail: Option<Detail>,
    pub message: Option<(String, bool)>,
    pub help: bool,
    pub quit: bool,
    pub color: bool,
    /// The flow shown on the MTU tab.
    pub mtu_flow: usize,
    pub list_height: usize,
    pub live: bool,
    /// Close by itself at this time (live capture with --duration).
    pub quit_at: Option<std::time::Instant>,
}

impl App {
    pub fn new(index: Index, updates: Receiver<Update>, cfg: Config) -> Self {
        App {
            reader: None,
            validator: Validator::new(&cfg, true),
            program: cfg.program.clone(),
            cfg,
            index,
            updates,
            tab: Tab::Packets,
            mode: Mode::Normal,
            focus: Focus::List,
            filter: Filter::all(),
            field_scan: None,
            keep_frame: None,
            view: Vec::new(),
            scanned: 0,
            selected: 0,
            scroll: 0,
            field: 0,
            collapsed: HashSet::new(),
            detail: None,
            message: None,
            help: false,
            quit: false,
            color: std::env::var_os("NO_COLOR").is_none(),
            mtu_flow: 0,
            list_height: 10,
            live: false,
            quit_at: None,
        }
    }

    /// Folds in what the loader sent, then extends the filtered view with new rows.
    pub fn tick(&mut self) {
        while let Ok(u) = self.updates.try_recv() {
            self.index.apply(u);
        }
        self.scan();
    }

    fn scan(&mut self) {
        if self.field_scan.is_some() {
            self.take_field_scan();
        } else {
            self.scan_rows();
        }
        if self.detail.is_none() && !self.view.is_empty() {
            self.load_detail();
        }
    }

    /// Moves what the field scan selected into the view, as far as the index goes.
    fn take_field_scan(&mut self) {
        let Some(fs) = self.field_scan.as_mut() else {
            return;
        };
        while let Ok(u) = fs.updates.try_recv() {
            match u {
                ScanUpdate::Rows { rows, bytes_read } => {
                    fs.pending.extend(rows);
                    fs.bytes_read = bytes_read;
                }
                ScanUpdate::Done { error } => {
                    fs.done = true;
                    fs.error = error;
                    fs.seconds = fs.started.elapsed().as_secs_f64();
                }
            }
        }
        let loaded = self.index.rows.len() as u32;
        let before = self.view.len();
        while let Some(&r) = fs.pending.front() {
            if r >= loaded {
                break;
            }
            self.view.push(r);
            fs.pending.pop_front();
        }
        let finished = fs.done && fs.pending.is_empty() && fs.error.is_none();
        if finished && !fs.reported {
            fs.reported = true;
            self.message = Some((
                format!(
                    "{} match ({:.2} s)",
                    crate::present::count(self.view.len() as u64, "packet"),
                    fs.seconds
                ),
                false,
            ));
        }
        // The packet selected before the filter changed, once the scan reaches it.
        if let Some(frame) = self.keep_frame
            && self.view.len() > before
            && self.view[before..]
                .iter()
                .any(|&i| self.index.rows.get(i as usize).is_some_and(|r| r.frame >= frame))
        {
            self.keep_frame = None;
            self.goto_frame(frame, false);
            self.load_detail();
        }
    }

    /// No field scan is running, or it has ended and its rows are all in the view (as far
    /// as the index goes).
    pub fn scan_finished(&self) -> bool {
        self.field_scan
            .as_ref()
            .is_none_or(|fs| fs.done && fs.pending.is_empty())
    }

    /// How the field scan is going, for the status line.
    pub fn scan_status(&self) -> Option<String> {
        let fs = self.field_scan.as_ref()?;
        let n = crate::present::count(self.view.len() as u64, "packet");
        Some(match (&fs.error, fs.done) {
            (Some(e), _) => format!("filter stopped: {e} ({n} match so far)"),
            (None, true) => format!("{n} match `{}` ({:.2} s)", self.filter.text, fs.seconds),
            (None, false) => {
                let total = self.index.total_bytes.max(1);
                format!(
                    "filtering on fields {:.0}% · {n} match",
                    (fs.bytes_read as f64 / total as f64 * 100.0).min(100.0)
                )
            }
        })
    }

    fn scan_rows(&mut self) {
        let ix = &self.index;
        let end = ix.rows.len();
        for i in self.scanned..end {
            if self.filter.is_all() || self.filter.matches(&ix.rows[i].event(&ix.flows)) {
                self.view.push(i as u32);
            }
        }
        self.scanned = end;
    }

    fn refilter(&mut self) {
        let keep = self.selected_row().map(|r| r.frame);
        self.view.clear();
        self.scanned = 0;
        self.field_scan = None;
        if self.filter.needs_engine() {
            let (tx, rx) = std::sync::mpsc::channel();
            let stop = Arc::new(AtomicBool::new(false));
            let (path, cfg, filter, flag) = (
                self.index.path.clone(),
                self.cfg.clone(),
                self.filter.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || scan(&path, cfg, filter, tx, flag));
            self.field_scan = Some(FieldScan {
                updates: rx,
                stop,
                pending: Default::default(),
                bytes_read: 0,
                done: false,
                error: None,
                started: std::time::Instant::now(),
                seconds: 0.0,
                reported: false,
            });
            self.keep_frame = keep;
        }
        self.scan();
        self.selected = 0;
        if let Some(frame) = keep {
            self.goto_frame(frame, false);
        }
        self.load_detail();
    }

    pub fn selected_row(&self) -> Option<Row> {
        let i = *self.view.get(self.selected)? as usize;
        self.index.rows.get(i).copied()
    }

    /// Selects the first shown packet at or after `frame`.
    fn goto_frame(&mut self, frame: u64, say: bool) {
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

    fn load_detail(&mut self) {
        self.field = 0;
        self.collapsed.clear();
        let Some(&row_index) = self.view.get(self.selected) else {
            self.detail = None;
            return;
        };
        let Some(row) = self.index.rows.get(row_index as usize).copied() else {
            self.detail = None;
            return;
        };
        if let Some(kept) = self.index.kept.get(&row_index) {
            // Bytes no single frame holds: a datagram rebuilt from IP fragments, or a
            // packet reassembled from game fragments.
            let p = kept.payload.clone();
            let reassembled = row.has(status::REASSEMBLED);
            let dissection = self.program.is_some().then(|| {
                if reassembled {
                    self.validator.reassembled(&p);
                } else {
                    self.validator.datagram(&p);
                }
                self.validator.dissection.clone()
            });
            let note = if reassembled {
                let frames: Vec<String> = kept.fragment_frames.iter().map(|f| f.to_string()).collect();
                format!(
                    "reassembled from {} fragments (frames {}); the bytes are the whole packet",
                    frames.len(),
                    frames.join(", ")
                )
            } else {
                "rebuilt from IP fragments; the bytes are the UDP payload".into()
            };
            let len = p.len();
            self.detail = Some(Detail {
                row,
                frame: p,
                payload: Some((0, len)),
                dissection,
                note: Some(note),
            });
            return;
        }
        if row.has(status::REASSEMBLED) {
            let note = "a reassembled packet whose bytes were not kept (64 MiB of them are)".into();
            self.detail = Some(Detail::unavailable(row, note));
            return;
        }
        let read = match &self.index.store {
            Some(store) => store
                .get(row.frame)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "no longer held in memory".to_string()),
            None => {
                if self.reader.is_none() {
                    match FrameAt::open(&self.index.path) {
                        Ok(r) => self.reader = Some(r),
                        Err(e) => {
                            let note = format!("cannot read frame {}: {e}", row.frame);
                            self.detail = Some(Detail::unavailable(row, note));
                            return;
                        }
                    }
                }
                match &self.reader {
                    Some(r) => r.frame(row.offset).map(|f| f.data).map_err(|e| e.to_string()),
                    None => Err("no reader".into()),
                }
            }
        };
        let frame = match read {
            Ok(f) => f,
            Err(e) => {
                let note = format!("cannot read frame {}: {e}", row.frame);
                self.detail = Some(Detail::unavailable(row, note));
                return;
            }
        };
        let mut payload = None;
        let mut note = None;
        match decode(row.linktype as i32, &frame) {
            Decoded::Udp { payload: p, .. } => {
                let start = p.as_ptr() as usize - frame.as_ptr() as usize;
                payload = Some((start, start + p.len()));
            }
            Decoded::IpFragment { .. } => {
                note = Some("an IP fragment: the datagram is analyzed when its last fragment arrives".into())
            }
            Decoded::Icmp(i) => note = Some(format!("ICMP: the path MTU is {} (from {})", i.mtu, i.from)),
            Decoded::Other(what) => note = Some(format!("not UDP: {what}")),
            Decoded::Malformed { layer, reason } => {
                note = Some(format!("malformed {layer} header: {reason}"))
            }
            Decoded::UnsupportedLink(t) => note = Some(format!("link type {t} is not decoded")),
        }
        if row.has(status::IP_FRAG) {
            note = Some("rebuilt from IP fragments: this frame holds only the last piece".into());
            payload = None;
        }
        let dissection = match payload {
            Some((a, b)) if self.program.is_some() && row.has(status::GAME) => {
                self.validator.datagram(&frame[a..b]);
                Some(self.validator.dissection.clone())
            }
            _ => None,
        };
        self.detail = Some(Detail {
            row,
            frame,
            payload,
            dissection,
            note,
        });
    }

    /// Fields visible in the tree (collapsed groups hide their children).
    pub fn visible_fields(&self) -> Vec<usize> {
        let Some(d) = self.detail.as_ref().and_then(|d| d.dissection.as_ref()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut hidden_below: Option<u16> = None;
        for (i, f) in d.fields.iter().enumerate() {
            if let Some(depth) = hidden_below {
                if f.depth > depth {
                    continue;
                }
                hidden_below = None;
            }
            out.push(i);
            if self.collapsed.contains(&(i as u32)) {
                hidden_below = Some(f.depth);
            }
        }
        out
    }

    fn move_selection(&mut self, delta: isize) {
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
        if next != self.selected {
            self.selected = next;
            self.load_detail();
        }
    }

    /// Handles one key press.
    pub fn key(&mut self, k: KeyEvent) {
        self.message = None;
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        match &mut self.mode {
            Mode::Filter(text) | Mode::Goto(text) => {
                match k.code {
                    KeyCode::Esc => self.mode = Mode::Normal,
                    KeyCode::Backspace => {
                        text.pop();
                    }
                    KeyCode::Char(c) => text.push(c),
                    KeyCode::Enter => {
                        let mode = std::mem::replace(&mut self.mode, Mode::Normal);
                        match mode {
                            Mode::Filter(t) => self.apply_filter(&t),
                            Mode::Goto(t) => match t.trim().parse::<u64>() {
                                Ok(n) => {
                                    self.tab = Tab::Packets;
                                    self.goto_frame(n, true);
                                    self.load_detail();
                                }
                                Err(_) => self.message = Some((format!("`{t}` is not a frame number"), true)),
                            },
                            Mode::Normal => {}
                        }
                    }
                    _ => {}
                }
                return;
            }
            Mode::Normal => {}
        }
        if self.help {
            self.help = false;
            return;
        }
        let page = self.list_height.max(1) as isize;
        match k.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Esc => self.focus = Focus::List,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('/') => self.mode = Mode::Filter(self.filter.text.clone()),
            KeyCode::Char('g') => self.mode = Mode::Goto(String::new()),
            KeyCode::Tab => {
                self.tab = Tab::ALL[(Tab::ALL.iter().position(|t| *t == self.tab).unwrap_or(0) + 1) % 5]
            }
            KeyCode::BackTab => {
                self.tab = Tab::ALL[(Tab::ALL.iter().position(|t| *t == self.tab).unwrap_or(0) + 4) % 5]
            }
            KeyCode::Char(c @ '1'..='5') => self.tab = Tab::ALL[c as usize - '1' as usize],
            KeyCode::Char('f') => self.follow(),
            KeyCode::Char('t') | KeyCode::Enter
                if self.tab == Tab::Packets
                    && self.focus == Focus::List
                    && self.detail.as_ref().is_some_and(|d| d.dissection.is_some()) =>
            {
                self.focus = Focus::Tree;
            }
            KeyCode::Char('t') => self.focus = Focus::List,
            KeyCode::Enter | KeyCode::Char(' ') if self.focus == Focus::Tree => {
                let f = self.field as u32;
                if !self.collapsed.remove(&f) {
                    self.collapsed.insert(f);
                }
            }
            KeyCode::Left if self.tab == Tab::Mtu => self.mtu_flow = self.mtu_flow.saturating_sub(1),
            KeyCode::Right if self.tab == Tab::Mtu => self.mtu_flow += 1,
            KeyCode::Left => self.focus = Focus::List,
            KeyCode::Right if self.tab == Tab::Packets => self.focus = Focus::Tree,
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
            KeyCode::PageUp => self.move_selection(-page),
            KeyCode::PageDown => self.move_selection(page),
            KeyCode::Home => self.move_selection(isize::MIN / 2),
            KeyCode::End => self.move_selection(isize::MAX / 2),
            _ => {}
        }
    }

    pub fn apply_filter(&mut self, text: &str) {
        match Filter::parse(text, self.program.as_deref()) {
            Ok(f) if f.needs_engine() && self.index.store.is_some() => {
                self.message = Some((
                    "filters on dissected fields and acks need a capture file: write the live capture with --write and open it with gpcap tui".into(),
                    true,
                ));
            }
            Ok(f) => {
                self.filter = f;
                self.focus = Focus::List;
                self.refilter();
                // A field filter says how it goes on the status line as it runs.
                self.message = (!self.filter.needs_engine()).then(|| {
                    (
                        format!(
                            "{} match",
                            crate::present::count(self.view.len() as u64, "packet")
                        ),
                        false,
                    )
                });
            }
            Err(e) => self.message = Some((format!("filter: {e}"), true)),
        }
    }

    /// Shows only the conversation of the selected packet.
    fn follow(&mut self) {
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
}
