//! TUI state and keys. The app owns its copy of the packet index, fed by updates from
//! the loader over a channel, so drawing never waits on a lock; nothing here draws.

use crate::capture::reader::FrameAt;
use crate::decode::{Decoded, decode};
use crate::dissect::{Dissection, Program};
use crate::engine::{Config, Validator};
use crate::filter::Filter;
use crate::sinks::index::{Index, NO_FLOW, Row, Update, status};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashSet;
use std::sync::Arc;
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
        let ix = &self.index;
        let end = ix.rows.len();
        for i in self.scanned..end {
            if self.filter.is_all() || self.filter.matches(&ix.rows[i].event(&ix.flows)) {
                self.view.push(i as u32);
            }
        }
        self.scanned = end;
        if self.detail.is_none() && !self.view.is_empty() {
            self.load_detail();
        }
    }

    fn refilter(&mut self) {
        let keep = self.selected_row().map(|r| r.frame);
        self.view.clear();
        self.scanned = 0;
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
        match Filter::parse(text, &|n| self.cfg.type_id(n)) {
            Ok(f) => {
                self.filter = f;
                self.focus = Focus::List;
                self.refilter();
                self.message = Some((
                    format!(
                        "{} match",
                        crate::present::count(self.view.len() as u64, "packet")
                    ),
                    false,
                ));
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
