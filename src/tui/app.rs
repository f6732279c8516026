//! TUI state and keys. Drawing reads a snapshot of this state; nothing here draws.

use super::index::{Index, NO_FLOW, Row, read_frame};
use crate::capture::{Decoded, decode};
use crate::dissect::{Dissection, Dissector, Program};
use crate::filter::Filter;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashSet;
use std::sync::{Arc, RwLock};

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
    pub fn payload(&self) -> &[u8] {
        match self.payload {
            Some((a, b)) => self.frame.get(a..b).unwrap_or(&[]),
            None => &[],
        }
    }
}

pub struct App {
    pub index: Arc<RwLock<Index>>,
    pub program: Option<Arc<Program>>,
    dissector: Option<Dissector>,
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
    pub fn new(index: Arc<RwLock<Index>>, program: Option<Arc<Program>>) -> Self {
        App {
            dissector: program.clone().map(Dissector::new),
            index,
            program,
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

    fn type_id(&self, name: &str) -> Option<u32> {
        let p = self.program.as_ref()?;
        p.packets
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.type_id)
            .or_else(|| (p.fragment.is_some() && name == "fragment").then_some(crate::wire::FRAGMENT_TYPE))
    }

    /// Extends the filtered view with rows indexed since the last call.
    pub fn tick(&mut self) {
        let Ok(ix) = self.index.read() else { return };
        let end = ix.rows.len();
        for i in self.scanned..end {
            if self.filter.is_all() || self.filter.matches(&ix.rows[i].facts(&ix.flows)) {
                self.view.push(i as u32);
            }
        }
        self.scanned = end;
        drop(ix);
        if self.detail.is_none() && !self.view.is_empty() {
            self.load_detail();
        }
    }

    fn refilter(&mut self) {
        let keep = self.selected_row().map(|r| r.frame);
        self.view.clear();
        self.scanned = 0;
        self.tick();
        self.selected = 0;
        if let Some(frame) = keep {
            self.goto_frame(frame, false);
        }
        self.load_detail();
    }

    pub fn selected_row(&self) -> Option<Row> {
        let i = *self.view.get(self.selected)? as usize;
        self.index.read().ok()?.rows.get(i).copied()
    }

    /// Selects the first shown packet at or after `frame`.
    fn goto_frame(&mut self, frame: u64, say: bool) {
        let Ok(ix) = self.index.read() else { return };
        let pos = self
            .view
            .partition_point(|&i| ix.rows.get(i as usize).is_some_and(|r| r.frame < frame));
        drop(ix);
        if pos < self.view.len() {
            self.selected = pos;
        } else if say {
            self.message = Some((format!("no frame {frame} in the list"), true));
        }
    }

    fn load_detail(&mut self) {
        self.field = 0;
        self.collapsed.clear();
        let Some(row) = self.selected_row() else {
            self.detail = None;
            return;
        };
        let (path, stored, rebuilt) = match self.index.read() {
            Ok(ix) => (
                ix.path.clone(),
                ix.store.as_ref().map(|s| s.get(row.frame).map(<[u8]>::to_vec)),
                ix.ip_payloads.get(&row.frame).cloned(),
            ),
            Err(_) => return,
        };
        if let Some(p) = rebuilt {
            // The datagram rebuilt from IP fragments: show it whole.
            let dissection = self.dissector.as_mut().map(|d| d.dissect(&p));
            let len = p.len();
            self.detail = Some(Detail {
                row,
                frame: p,
                payload: Some((0, len)),
                dissection,
                note: Some("rebuilt from IP fragments; the bytes are the UDP payload".into()),
            });
            return;
        }
        let read = match stored {
            Some(Some(bytes)) => Ok(bytes),
            Some(None) => Err(std::io::Error::other("no longer held in memory")),
            None => read_frame(&path, row.offset),
        };
        let frame = match read {
            Ok(f) => f,
            Err(e) => {
                self.detail = Some(Detail {
                    row,
                    frame: Vec::new(),
                    payload: None,
                    dissection: None,
                    note: Some(format!("cannot read frame {}: {e}", row.frame)),
                });
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
        if row.has(super::index::status::IP_FRAG) {
            note = Some("rebuilt from IP fragments: this frame holds only the last piece".into());
            payload = None;
        }
        let dissection = match (&mut self.dissector, payload) {
            (Some(d), Some((a, b))) if row.has(super::index::status::GAME) => Some(d.dissect(&frame[a..b])),
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
        match Filter::parse(text, &|n| self.type_id(n)) {
            Ok(f) => {
                self.filter = f;
                self.focus = Focus::List;
                self.refilter();
                self.message = Some((format!("{} packets match", self.view.len()), false));
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
        let flow = self
            .index
            .read()
            .ok()
            .and_then(|ix| ix.flows.get(row.flow as usize).copied());
        if let Some(f) = flow {
            let text = format!("flow {} && flow {}", f.src, f.dst);
            self.apply_filter(&text);
        }
    }
}
