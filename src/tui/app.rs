//! TUI state and keys. The app owns its copy of the packet index, fed by updates from
//! the loader over a channel, so drawing never waits on a lock; nothing here draws.

use super::prompt::{Ask, Edit, Prompt};
use super::scan::FieldScan;
use super::series::Series;
use crate::capture::reader::FrameAt;
use crate::decode::{Decoded, decode};
use crate::dissect::{Dissection, Program};
use crate::engine::{Config, Validator};
use crate::filter::Filter;
use crate::sinks::index::{Index, NO_FLOW, Row, Update, status};
use crate::sinks::select::{frames_of_rows, write_frames};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use std::sync::mpsc::Receiver;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Packets,
    Flows,
    Reassembly,
    Loss,
    Mtu,
    Bandwidth,
}

impl Tab {
    pub const ALL: [Tab; 6] = [
        Tab::Packets,
        Tab::Flows,
        Tab::Reassembly,
        Tab::Loss,
        Tab::Mtu,
        Tab::Bandwidth,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Packets => "Packets",
            Tab::Flows => "Flows",
            Tab::Reassembly => "Reassembly",
            Tab::Loss => "Loss",
            Tab::Mtu => "MTU",
            Tab::Bandwidth => "Bits",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Prompt(Prompt),
    /// The column chooser is open.
    Columns,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    Tree,
}

/// How the Time column reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeFormat {
    /// Seconds since the first packet, or since the time reference.
    #[default]
    Relative,
    /// Seconds since the previous packet shown.
    Delta,
    /// UTC time of day.
    Absolute,
}

impl TimeFormat {
    pub fn next(self) -> Self {
        match self {
            TimeFormat::Relative => TimeFormat::Delta,
            TimeFormat::Delta => TimeFormat::Absolute,
            TimeFormat::Absolute => TimeFormat::Relative,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TimeFormat::Relative => "relative",
            TimeFormat::Delta => "delta",
            TimeFormat::Absolute => "absolute (UTC)",
        }
    }
}

/// A column of the packet list, in the order they are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    No,
    Time,
    Source,
    Destination,
    Seq,
    Type,
    Frag,
    Size,
    Status,
    Info,
}

impl Column {
    pub const ALL: [Column; 10] = [
        Column::No,
        Column::Time,
        Column::Source,
        Column::Destination,
        Column::Seq,
        Column::Type,
        Column::Frag,
        Column::Size,
        Column::Status,
        Column::Info,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Column::No => "No.",
            Column::Time => "Time",
            Column::Source => "Source",
            Column::Destination => "Destination",
            Column::Seq => "Seq",
            Column::Type => "Type",
            Column::Frag => "Frag",
            Column::Size => "Size",
            Column::Status => "Status",
            Column::Info => "Info",
        }
    }

    /// When the list is too narrow, columns give way from the highest number down; a
    /// column is dropped whole, never cut.
    pub fn priority(self) -> u8 {
        match self {
            Column::No => 0,
            Column::Seq => 1,
            Column::Type => 2,
            Column::Status => 3,
            Column::Info => 4,
            Column::Time => 5,
            Column::Size => 6,
            Column::Source => 7,
            Column::Destination => 8,
            Column::Frag => 9,
        }
    }
}

/// The state of a scrollable, sortable table (Flows, Reassembly).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableState {
    pub selected: usize,
    pub scroll: usize,
    /// The column sorted by (0: the table's own order).
    pub sort: usize,
    pub descending: bool,
}

impl TableState {
    /// Keeps the selection in a list of `len` rows and in view of `height` of them.
    pub fn fit(&mut self, len: usize, height: usize) {
        self.selected = self.selected.min(len.saturating_sub(1));
        let h = height.max(1);
        if self.selected < self.scroll {
            self.scroll = self.selected;
        } else if self.selected >= self.scroll + h {
            self.scroll = self.selected + 1 - h;
        }
        self.scroll = self.scroll.min(len.saturating_sub(h));
    }

    fn step(&mut self, delta: isize) {
        self.selected = (self.selected as isize + delta).max(0) as usize;
    }
}

/// Where the last frame drew what a mouse can click.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Areas {
    pub tabs: Rect,
    /// The body rows of the packet list (inside its border and header).
    pub list: Rect,
    pub tree: Rect,
    pub flows: Rect,
    pub frags: Rect,
}

/// One flow over capture time (the whole capture's span, at the step it needs):
/// datagrams and sequences skipped (the engine's gaps, as `analyze` counts them) from the
/// index; round trips from the report's ack analysis (per second).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowSeries {
    /// The flow (index flow id) and the rows it was computed over.
    pub key: (u32, usize),
    pub datagrams: Series,
    pub gaps: Series,
    /// Mean round trip in milliseconds, per second that had acks.
    pub rtt_ms: Option<Series>,
}

/// The selected packet, read back from the file and dissected with fields recorded.
pub struct Detail {
    pub row: Row,
    pub frame: Vec<u8>,
    /// Where the UDP payload sits in `frame`.
    pub payload: Option<(usize, usize)>,
    pub dissection: Option<Dissection>,
    pub note: Option<String>,
    /// What inner layers read in it, as rows of the tree after the fields that carried
    /// it (field indices past the fault: see [`Detail::layer_row`]).
    pub layer_rows: Vec<super::layered::LayerRow>,
}

impl Detail {
    /// The inner layers' row at tree index `i` (indices past the outer fields' fault).
    pub fn layer_row(&self, i: usize) -> Option<&super::layered::LayerRow> {
        let n = self.dissection.as_ref()?.fields.len();
        self.layer_rows.get(i.checked_sub(n + 1)?)
    }

    /// A detail that only says why the packet cannot be shown.
    fn unavailable(row: Row, note: String) -> Self {
        Detail {
            row,
            frame: Vec::new(),
            payload: None,
            dissection: None,
            note: Some(note),
            layer_rows: Vec::new(),
        }
    }

    pub fn payload(&self) -> &[u8] {
        match self.payload {
            Some((a, b)) => self.frame.get(a..b).unwrap_or(&[]),
            None => &[],
        }
    }
}

/// Info column texts kept for rows already summarised (a screenful is dissected per
/// frame at most once).
const INFO_CACHE: usize = 4096;

pub struct App {
    pub index: Index,
    updates: Receiver<Update>,
    pub program: Option<Arc<Program>>,
    pub(super) cfg: Config,
    /// The definition file, for `r` (reload).
    pub definition: Option<PathBuf>,
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
    pub(super) keep_frame: Option<u64>,
    /// Rows (by position in the index) that pass the filter.
    pub view: Vec<u32>,
    pub(super) scanned: usize,
    /// Position in `view`.
    pub selected: usize,
    pub scroll: usize,
    /// Selected field (index into the dissection's fields; one past the last: the
    /// fault) in the tree.
    pub field: usize,
    pub tree_scroll: usize,
    pub collapsed: HashSet<u32>,
    pub detail: Option<Detail>,
    pub message: Option<(String, bool)>,
    pub help: bool,
    /// Lines of the help scrolled past (↑↓ PgUp PgDn while it is open).
    pub help_scroll: usize,
    pub quit: bool,
    pub color: bool,
    /// The flow shown on the MTU tab.
    pub mtu_flow: usize,
    pub list_height: usize,
    pub live: bool,
    /// Close by itself at this time (live capture with --duration).
    pub quit_at: Option<std::time::Instant>,
    /// Earlier entries of each prompt, oldest first.
    pub history: HashMap<Ask, Vec<String>>,
    /// The search of `n`/`N`.
    pub find: Option<Filter>,
    /// Marked rows.
    pub marks: BTreeSet<u32>,
    /// Times are relative to this packet's.
    pub time_ref: Option<i64>,
    pub time_format: TimeFormat,
    pub hidden: HashSet<Column>,
    /// The chooser's row.
    pub column_cursor: usize,
    pub flows: TableState,
    pub frags: TableState,
    pub flow_series: Option<FlowSeries>,
    /// Text to put on the terminal's clipboard (OSC 52), taken by the event loop.
    pub clipboard: Option<String>,
    pub areas: Areas,
    /// Info and message types of rows already described.
    info: HashMap<u32, (String, Option<String>)>,
    /// The Info line's templates, for the definition and the inner layers' ones.
    describe: crate::present::info::Info,
    /// A `w` in progress: what it says when done.
    writing: Option<Receiver<Result<String, String>>>,
    /// The file `w` will replace once confirmed.
    pending_write: Option<String>,
    /// First fragment count shown on the Loss tab.
    pub loss_scroll: usize,
    /// Sequences lost over time, and the rows it was computed over.
    pub loss_series: Option<(usize, Series)>,
    /// The Bandwidth tab: the profile, counted when the tab first opens.
    pub bits: super::bits::BitsTab,
    /// A field path to select in the tree once a packet having it is shown.
    pending_path: Option<String>,
    /// With keys or inner layers: the selected packet read as the run read it.
    replay: Option<super::layered::Replay>,
}

impl App {
    pub fn new(index: Index, updates: Receiver<Update>, cfg: Config) -> Self {
        App {
            describe: crate::present::info::Info::new(),
            reader: None,
            validator: Validator::new(&cfg, true),
            // With keys, the decrypted view: it names every field of both.
            program: crate::engine::layers::shown_program(&cfg),
            cfg,
            definition: None,
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
            tree_scroll: 0,
            collapsed: HashSet::new(),
            detail: None,
            message: None,
            help: false,
            help_scroll: 0,
            quit: false,
            color: std::env::var_os("NO_COLOR").is_none(),
            mtu_flow: 0,
            list_height: 10,
            live: false,
            quit_at: None,
            history: HashMap::new(),
            find: None,
            marks: BTreeSet::new(),
            time_ref: None,
            time_format: TimeFormat::default(),
            hidden: HashSet::new(),
            column_cursor: 0,
            flows: TableState::default(),
            frags: TableState::default(),
            flow_series: None,
            clipboard: None,
            areas: Areas::default(),
            info: HashMap::new(),
            writing: None,
            pending_write: None,
            loss_scroll: 0,
            loss_series: None,
            bits: Default::default(),
            pending_path: None,
            replay: None,
        }
    }

    /// Folds in what the loader sent, then extends the filtered view with new rows.
    pub fn tick(&mut self) {
        while let Ok(u) = self.updates.try_recv() {
            self.index.apply(u);
        }
        self.scan();
        if let Some(rx) = &self.writing
            && let Ok(done) = rx.try_recv()
        {
            self.writing = None;
            self.message = Some(match done {
                Ok(m) => (m, false),
                Err(e) => (e, true),
            });
        }
        match self.tab {
            Tab::Flows => self.update_flow_series(),
            Tab::Loss => self.update_loss_series(),
            Tab::Bandwidth => self.update_bits(),
            _ => {}
        }
    }

    /// Starts the profile once the capture is indexed (a live capture has no file to
    /// read again), and takes it when counted.
    fn update_bits(&mut self) {
        if self.index.done && self.index.store.is_none() {
            self.bits.start(self.index.path.clone(), self.cfg.clone());
        }
        self.bits.poll();
    }

    /// Whether the Bandwidth tab's profile is counted (or not being counted).
    pub fn bits_finished(&self) -> bool {
        !matches!(self.bits.profile, super::bits::Profile::Counting { .. })
    }

    /// `Enter` on the Bandwidth tab: drill into a type; on a field, filter the packet
    /// list to the packets that have it and select it in the tree.
    fn enter_bits(&mut self) {
        if let Some(filter) = self.bits.enter() {
            self.apply_filter(&filter);
            self.pending_path = filter.split_once('.').map(|(_, p)| p.to_string());
        }
    }

    pub fn selected_row(&self) -> Option<Row> {
        let i = *self.view.get(self.selected)? as usize;
        self.index.rows.get(i)
    }

    /// Selects the first shown packet at or after `frame`.
    pub(super) fn goto_frame(&mut self, frame: u64, say: bool) {
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
    fn select(&mut self, pos: usize) {
        if pos < self.view.len() && pos != self.selected {
            self.selected = pos;
            self.load_detail();
        }
    }

    pub(super) fn load_detail(&mut self) {
        self.field = 0;
        self.tree_scroll = 0;
        self.collapsed.clear();
        let ix = std::mem::take(&mut self.index);
        self.detail = match self.view.get(self.selected) {
            Some(&row) => self.detail_of(&ix, row).map(|d| self.layered(&ix, row, d)),
            None => None,
        };
        self.index = ix;
        self.select_pending_path();
    }

    /// With keys or inner layers, the detail as the run read it: the plaintext in place
    /// of the ciphertext, its tree, and what inner layers read in it.
    fn layered(&mut self, ix: &Index, row: u32, mut d: Detail) -> Detail {
        if self.cfg.stack.is_none() || ix.store.is_some() || !d.row.has(status::GAME) {
            return d;
        }
        let replay = self
            .replay
            .get_or_insert_with(|| super::layered::Replay::new(ix.path.clone(), self.cfg.clone()));
        let got = match replay.row(row) {
            Ok(Some(got)) => got,
            Ok(None) => return d,
            Err(e) => {
                d.note = Some(format!("cannot read it as the run did: {e}"));
                return d;
            }
        };
        let (a, b) = d.payload.unwrap_or((0, 0));
        if let Some(at) = d.frame.get_mut(a..b).and_then(|s| s.get_mut(..got.payload.len()))
            && at != &got.payload[..]
        {
            at.copy_from_slice(&got.payload);
            d.note = Some("decrypted: the bytes are the plaintext (the MAC as captured)".into());
        }
        if let Some(tree) = got.tree {
            d.layer_rows = super::layered::rows(&tree, &got.carried);
            d.dissection = Some(tree);
        }
        d
    }

    /// Selects in the tree the field the Bandwidth tab chose (`objects.position.x`: its
    /// first occurrence), so that the dump highlights its bits; once found.
    fn select_pending_path(&mut self) {
        let (Some(want), Some(d), Some(p)) = (&self.pending_path, &self.detail, &self.program) else {
            return;
        };
        let Some(dis) = d.dissection.as_ref() else { return };
        let found = (0..dis.fields.len()).find(|&i| {
            let path = crate::dissect::paths::path_of(p, dis, i);
            let bare: String = path
                .split('.')
                .map(|s| s.split('[').next().unwrap_or(s))
                .collect::<Vec<_>>()
                .join(".");
            bare == *want
        });
        if let Some(i) = found {
            self.field = i;
            self.focus = Focus::Tree;
            self.pending_path = None;
        }
    }

    /// Rows of the field tree: visible fields (collapsed groups hide their children),
    /// then the fault, as the index one past the last field.
    pub fn visible_fields(&self) -> Vec<usize> {
        let Some(d) = self.detail.as_ref().and_then(|d| d.dissection.as_ref()) else {
            return Vec::new();
        };
        let rows = self.detail.as_ref().map_or(&[][..], |d| &d.layer_rows[..]);
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
                continue;
            }
            // What inner layers read in this field, right under it.
            let first = rows.partition_point(|r| r.after < i);
            let n = rows[first..].iter().take_while(|r| r.after == i).count();
            out.extend((first..first + n).map(|k| d.fields.len() + 1 + k));
        }
        if d.fault.is_some() {
            out.push(d.fields.len());
        }
        out
    }

    fn move_selection(&mut self, delta: isize) {
        match self.tab {
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

    fn open(&mut self, ask: Ask, text: &str) {
        self.mode = Mode::Prompt(Prompt::new(ask, text));
    }

    /// Handles one key press.
    pub fn key(&mut self, k: KeyEvent) {
        self.message = None;
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if let Mode::Prompt(p) = &mut self.mode {
            let history = self.history.get(&p.ask).map(Vec::as_slice).unwrap_or(&[]);
            match p.key(k, history) {
                Edit::Editing => {}
                Edit::Cancel => self.mode = Mode::Normal,
                Edit::Submit(text) => {
                    let ask = p.ask;
                    self.mode = Mode::Normal;
                    let h = self.history.entry(ask).or_default();
                    if !text.trim().is_empty() && h.last() != Some(&text) {
                        h.push(text.clone());
                        if h.len() > 100 {
                            h.remove(0);
                        }
                    }
                    self.submit(ask, &text);
                }
            }
            return;
        }
        if ctrl && k.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        if self.mode == Mode::Columns {
            return self.column_key(k);
        }
        if self.help {
            match k.code {
                KeyCode::Down | KeyCode::Char('j') => self.help_scroll += 1,
                KeyCode::Up | KeyCode::Char('k') => self.help_scroll = self.help_scroll.saturating_sub(1),
                KeyCode::PageDown | KeyCode::Char(' ') => self.help_scroll += 10,
                KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(10),
                KeyCode::Home => self.help_scroll = 0,
                KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') | KeyCode::Enter => self.help = false,
                // Any other key is not a reason to lose the help.
                _ => {}
            }
            return;
        }
        let page = self.list_height.max(1) as isize;
        let tree = self.tab == Tab::Packets && self.focus == Focus::Tree;
        match k.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Esc if self.tab == Tab::Bandwidth => self.bits.back(),
            KeyCode::Esc => self.focus = Focus::List,
            KeyCode::Char('?') => {
                self.help = true;
                self.help_scroll = 0;
            }
            KeyCode::Char('/') => self.open(Ask::Filter, &self.filter.text.clone()),
            KeyCode::Char('f') if ctrl => self.open(Ask::Find, ""),
            KeyCode::Char('F') => self.open(Ask::Find, ""),
            KeyCode::Char('g') => self.open(Ask::Goto, ""),
            KeyCode::Char('n') => self.find_next(1),
            KeyCode::Char('N') => self.find_next(-1),
            KeyCode::Char(']') => self.jump(1, Jump::Malformed),
            KeyCode::Char('[') => self.jump(-1, Jump::Malformed),
            KeyCode::Char('}') => self.jump(1, Jump::Gap),
            KeyCode::Char('{') => self.jump(-1, Jump::Gap),
            KeyCode::Char('w') => {
                let name = if self.marks.is_empty() {
                    "gpcap-shown.pcapng"
                } else {
                    "gpcap-marked.pcapng"
                };
                self.open(Ask::Write, name);
                let dir = std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                self.message = Some((format!("a name without a directory is written in {dir}"), false));
            }
            KeyCode::Char('m') => self.toggle_mark(),
            KeyCode::Char('M') => {
                self.marks.clear();
                self.message = Some(("marks cleared".into(), false));
            }
            KeyCode::Char('T') => self.toggle_time_ref(),
            KeyCode::Char('d') => {
                self.time_format = self.time_format.next();
                self.message = Some((format!("time: {}", self.time_format.label()), false));
            }
            KeyCode::Char('c') if self.tab == Tab::Packets => {
                self.mode = Mode::Columns;
                self.column_cursor = 0;
            }
            KeyCode::Char('y') => self.copy(false),
            KeyCode::Char('Y') => self.copy(true),
            KeyCode::Char('a') if tree => self.apply_field(false),
            KeyCode::Char('A') if tree => self.apply_field(true),
            KeyCode::Char('r') => self.reload(),
            KeyCode::Char('s') if matches!(self.tab, Tab::Flows | Tab::Reassembly) => self.sort(false),
            KeyCode::Char('S') if matches!(self.tab, Tab::Flows | Tab::Reassembly) => self.sort(true),
            KeyCode::Char('s') if self.tab == Tab::Bandwidth => self.bits.sort(false),
            KeyCode::Char('S') if self.tab == Tab::Bandwidth => self.bits.sort(true),
            KeyCode::Enter if self.tab == Tab::Bandwidth => self.enter_bits(),
            KeyCode::Left if self.tab == Tab::Bandwidth => self.bits.back(),
            KeyCode::Tab => self.tab = Tab::ALL[(self.tab_index() + 1) % Tab::ALL.len()],
            KeyCode::BackTab => self.tab = Tab::ALL[(self.tab_index() + Tab::ALL.len() - 1) % Tab::ALL.len()],
            KeyCode::Char(c @ '1'..='6') => self.tab = Tab::ALL[c as usize - '1' as usize],
            KeyCode::Char('f') => self.follow(),
            KeyCode::Enter if self.tab == Tab::Flows => {
                self.open_flow(k.modifiers.contains(KeyModifiers::SHIFT))
            }
            KeyCode::Char('b') if self.tab == Tab::Flows => self.open_flow(true),
            KeyCode::Up | KeyCode::Char('k') if self.tab == Tab::Loss => {
                self.loss_scroll = self.loss_scroll.saturating_sub(1)
            }
            KeyCode::Down | KeyCode::Char('j') if self.tab == Tab::Loss => self.loss_scroll += 1,
            KeyCode::Enter if self.tab == Tab::Reassembly => self.open_fragmented(),
            KeyCode::Char('t') | KeyCode::Enter
                if self.tab == Tab::Packets
                    && self.focus == Focus::List
                    && self.detail.as_ref().is_some_and(|d| d.dissection.is_some()) =>
            {
                self.focus = Focus::Tree;
            }
            KeyCode::Char('t') => self.focus = Focus::List,
            KeyCode::Enter | KeyCode::Char(' ') if tree => {
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

    fn tab_index(&self) -> usize {
        Tab::ALL.iter().position(|t| *t == self.tab).unwrap_or(0)
    }

    fn submit(&mut self, ask: Ask, text: &str) {
        match ask {
            Ask::Filter => self.apply_filter(text),
            Ask::Goto => match text.trim().parse::<u64>() {
                Ok(n) => {
                    self.tab = Tab::Packets;
                    self.goto_frame(n, true);
                    self.load_detail();
                }
                Err(_) => self.message = Some((format!("`{text}` is not a frame number"), true)),
            },
            Ask::Find => match Filter::parse(text, self.program.as_deref()) {
                Ok(f) if f.needs_engine() => {
                    self.message = Some((
                        "find reads the list's columns (type, seq, size, flags, flow); filter with / on dissected fields".into(),
                        true,
                    ))
                }
                Ok(f) if f.is_all() => self.find = None,
                Ok(mut f) => {
                    if let Some(first) = self.index.rows.first() {
                        f.start(first.ts_ns);
                    }
                    self.find = Some(f);
                    self.find_next(1);
                }
                Err(e) => self.message = Some((format!("find: {e}"), true)),
            },
            Ask::Write => self.ask_write(text.trim()),
            Ask::Replace => match (text.trim(), self.pending_write.take()) {
                ("y" | "Y" | "yes", Some(to)) => self.write(&to),
                _ => self.message = Some(("not written: the file was kept".into(), false)),
            },
        }
    }

    fn column_key(&mut self, k: KeyEvent) {
        match k.code {
            KeyCode::Up | KeyCode::Char('k') => self.column_cursor = self.column_cursor.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.column_cursor = (self.column_cursor + 1).min(Column::ALL.len() - 1)
            }
            KeyCode::Char(' ') | KeyCode::Enter => {
                let c = Column::ALL[self.column_cursor];
                if !self.hidden.remove(&c) {
                    self.hidden.insert(c);
                }
            }
            KeyCode::Esc | KeyCode::Char('c') | KeyCode::Char('q') => self.mode = Mode::Normal,
            _ => {}
        }
    }

    /// A display filter over this capture's definition and the layers inside it
    /// (`reliable.sequence > 10`), as `dissect --filter` reads it.
    fn parse_filter(&self, text: &str) -> Result<Filter, crate::filter::FilterError> {
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

    fn find_next(&mut self, dir: isize) {
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
    fn search(&self, dir: isize, hit: impl Fn(usize) -> bool) -> Option<usize> {
        if dir > 0 {
            (self.selected + 1..self.view.len()).find(|&p| hit(p))
        } else {
            (0..self.selected.min(self.view.len())).rev().find(|&p| hit(p))
        }
    }

    fn jump(&mut self, dir: isize, to: Jump) {
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
    fn find_gap(&self, dir: isize) -> Option<usize> {
        let ix = &self.index;
        self.search(dir, |p| {
            ix.rows
                .get(self.view[p] as usize)
                .is_some_and(|r| r.has(status::GAP))
        })
    }

    fn toggle_mark(&mut self) {
        let Some(&row) = self.view.get(self.selected) else {
            return;
        };
        if !self.marks.remove(&row) {
            self.marks.insert(row);
        }
        self.message = Some((
            format!(
                "{} marked (w writes them)",
                crate::present::count(self.marks.len() as u64, "packet")
            ),
            false,
        ));
    }

    fn toggle_time_ref(&mut self) {
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

    /// `w`'s answer: an existing file is replaced only once confirmed.
    fn ask_write(&mut self, to: &str) {
        if !to.is_empty() && std::path::Path::new(to).exists() {
            self.pending_write = Some(to.to_string());
            self.open(Ask::Replace, "");
            return;
        }
        self.write(to)
    }

    /// Pasted text, into the prompt being edited (whole, or refused when it would not fit).
    pub fn paste(&mut self, text: &str) {
        if let Mode::Prompt(p) = &mut self.mode {
            p.paste(text);
        }
    }

    /// Writes the marked packets, or else the shown ones, to a pcapng file (a reassembled
    /// packet brings its fragments), on a thread of its own.
    fn write(&mut self, to: &str) {
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
                        crate::present::count(written, "frame"),
                        crate::present::count(n, "packet"),
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
    fn copy(&mut self, json: bool) {
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
        self.message = Some((format!("copied: {}", crate::present::clip(&text, 60)), false));
        self.clipboard = Some(text);
    }

    /// The selected tree field: its path, its value as people read it, and the field.
    fn tree_field(&self) -> Option<(String, String, crate::dissect::Field)> {
        let d = self.detail.as_ref()?;
        let dis = d.dissection.as_ref()?;
        let p = self.program.as_ref()?;
        let f = *dis.fields.get(self.field)?;
        let value = crate::present::tree::value_text(p, &f, d.payload());
        Some((crate::dissect::paths::path_of(p, dis, self.field), value, f))
    }

    /// Filters on the selected field's value (`and`: added to the filter).
    fn apply_field(&mut self, and: bool) {
        let layer = (self.detail.as_ref())
            .and_then(|d| d.layer_row(self.field))
            .and_then(|r| r.term.clone());
        let term = match layer {
            Some(term) => term,
            None => {
                let Some((path, _, f)) = self.tree_field() else {
                    return;
                };
                let Some(p) = self.program.clone() else { return };
                let Some(d) = self.detail.as_ref() else { return };
                let path = crate::dissect::paths::strip_indices(&path);
                match filter_value(&p, &f, d.payload()) {
                    Some(v) => format!("{path} == {v}"),
                    None => path,
                }
            }
        };
        let text = if and && !self.filter.is_all() {
            format!("({}) && {term}", self.filter.text)
        } else {
            term
        };
        self.apply_filter(&text);
    }

    /// The list's line for a row, as copied.
    fn summary_line(&mut self, r: &Row) -> String {
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

    /// Loads the definition again and re-reads the capture, keeping the selection and
    /// the filter.
    fn reload(&mut self) {
        let Some(path) = self.definition.clone() else {
            self.message = Some(("nothing to reload: the TUI was opened without -d".into(), true));
            return;
        };
        if self.live {
            self.message = Some(("a live capture cannot be read again".into(), true));
            return;
        }
        let program = match crate::dissect::load(&path) {
            Ok(p) => Arc::new(p),
            Err(errors) => {
                let first = errors
                    .first()
                    .map(|e| format!("{}:{}:{}: {}", e.file, e.line, e.column, e.message))
                    .unwrap_or_else(|| "the definition does not compile".into());
                let more = errors.len().saturating_sub(1);
                let more = if more > 0 {
                    format!(" (and {more} more: gpcap check)")
                } else {
                    String::new()
                };
                self.message = Some((format!("reload: {first}{more}"), true));
                return;
            }
        };
        let old = &self.cfg;
        let mut cfg = Config::from_program(program.clone());
        cfg.link_mtu = old.link_mtu;
        cfg.reassembly_budget = old.reassembly_budget;
        cfg.any_port = old.any_port;
        cfg.max_flows = old.max_flows;
        cfg.stack = old.stack.clone();
        if old.protocol_source != "definition" {
            cfg.protocol_id = old.protocol_id;
            cfg.protocol_source = old.protocol_source.clone();
        }
        let old_ports = self
            .program
            .as_ref()
            .map(|p| p.params.ports.clone())
            .unwrap_or_default();
        if old.ports != old_ports {
            cfg.ports = old.ports.clone();
        }
        let keep = self.selected_row().map(|r| r.frame);
        let (tx, rx) = std::sync::mpsc::channel();
        let (file, loader_cfg) = (self.index.path.clone(), cfg.clone());
        std::thread::spawn(move || crate::sinks::index::load(&file, loader_cfg, tx));
        let name = self.index.name.clone();
        self.index = Index::new(&self.index.path.clone());
        self.index.name = name;
        self.updates = rx;
        self.validator = Validator::new(&cfg, true);
        self.describe = crate::present::info::Info::new();
        self.program = crate::engine::layers::shown_program(&cfg);
        self.replay = None;
        self.cfg = cfg;
        self.info.clear();
        self.marks.clear();
        self.flow_series = None;
        self.loss_series = None;
        self.bits.reset();
        let text = self.filter.text.clone();
        self.filter = self.parse_filter(&text).unwrap_or_else(|_| Filter::all());
        self.view.clear();
        self.scanned = 0;
        self.detail = None;
        self.selected = 0;
        self.refilter();
        self.keep_frame = keep;
        self.message = Some((format!("reloaded {}", path.display()), false));
    }

    /// A row read back from the file (or the live store, or the kept bytes) and dissected
    /// with fields recorded.
    fn detail_of(&mut self, ix: &Index, row_index: u32) -> Option<Detail> {
        let row = ix.rows.get(row_index as usize)?;
        let rebuilt;
        let kept = match ix.kept.get(&row_index) {
            Some(k) => Some(k),
            // Not kept: put back together from its fragments' frames.
            None if row.has(status::REASSEMBLED)
                && ix.fragments.of(row_index).is_some()
                && self.fragments_whole() =>
            {
                match crate::sinks::index::put_back(ix, &mut self.validator, row_index) {
                    Ok(k) => {
                        rebuilt = k;
                        Some(&rebuilt)
                    }
                    Err(e) => {
                        let note = format!("a reassembled packet whose bytes cannot be read back: {e}");
                        return Some(Detail::unavailable(row, note));
                    }
                }
            }
            None => None,
        };
        if let Some(kept) = kept {
            // Bytes no single frame holds: a datagram rebuilt from IP fragments, or a
            // packet reassembled from game fragments.
            let p = kept.payload.clone();
            let reassembled = row.has(status::REASSEMBLED);
            let dissection = match self.program.as_deref() {
                // A message from fragments inside messages: its type's fields, or bytes.
                Some(prog) if reassembled && prog.messages.is_some() => {
                    reassembled_as(prog, row.ptype).map(|t| {
                        let mut d = Dissection::default();
                        self.validator.message(t, &p, &mut d);
                        d
                    })
                }
                Some(_) => {
                    if reassembled {
                        self.validator.reassembled(&p);
                    } else {
                        self.validator.datagram(&p);
                    }
                    Some(self.validator.dissection.clone())
                }
                None => None,
            };
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
            return Some(Detail {
                row,
                frame: p,
                payload: Some((0, len)),
                dissection,
                note: Some(note),
                layer_rows: Vec::new(),
            });
        }
        if row.has(status::REASSEMBLED) {
            let note = "a reassembled packet whose bytes were not kept (16 MiB of them are)".into();
            return Some(Detail::unavailable(row, note));
        }
        let read = match &ix.store {
            Some(store) => store
                .get(row.frame)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "no longer held in memory".to_string()),
            None => {
                if self.reader.is_none() {
                    match FrameAt::open(&ix.path) {
                        Ok(r) => self.reader = Some(r),
                        Err(e) => {
                            let note = format!("cannot read frame {}: {e}", row.frame);
                            return Some(Detail::unavailable(row, note));
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
                return Some(Detail::unavailable(row, note));
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
        Some(Detail {
            row,
            frame,
            payload,
            dissection,
            note,
            layer_rows: Vec::new(),
        })
    }

    /// A reassembled packet is its fragments' datagram bodies end to end (no messages).
    fn fragments_whole(&self) -> bool {
        self.program
            .as_deref()
            .is_some_and(|p| p.messages.is_none() && p.params.message_fragments.is_empty())
    }

    fn sort(&mut self, reverse: bool) {
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
    fn open_flow(&mut self, both: bool) {
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
    fn open_fragmented(&mut self) {
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
    fn update_flow_series(&mut self) {
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
    fn update_loss_series(&mut self) {
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

    /// The Info column of a row: what [`crate::present::info`] says of it as read (with
    /// keys and inner layers, as the run read it), or a summary of what it is;
    /// dissected once and kept.
    pub fn info_of(&mut self, ix: &Index, row_index: u32) -> String {
        self.described(ix, row_index).0
    }

    /// The Type column of a datagram of messages (no packet type): its message types.
    pub fn message_types_of(&mut self, ix: &Index, row_index: u32) -> Option<String> {
        self.described(ix, row_index).1
    }

    fn described(&mut self, ix: &Index, row_index: u32) -> (String, Option<String>) {
        if let Some(s) = self.info.get(&row_index) {
            return s.clone();
        }
        let text = self.make_info(ix, row_index);
        if self.info.len() >= INFO_CACHE {
            self.info.clear();
        }
        self.info.insert(row_index, text.clone());
        text
    }

    fn make_info(&mut self, ix: &Index, row_index: u32) -> (String, Option<String>) {
        let Some(r) = ix.rows.get(row_index as usize) else {
            return Default::default();
        };
        let said = |s: String| (s, None);
        if r.has(status::REASSEMBLED) {
            return said(format!("reassembled from {} fragments", r.frag_count));
        }
        if r.has(status::CRC_FAIL) {
            return said("CRC mismatch: not the protocol's, or damaged".into());
        }
        if r.frag_count > 0 {
            return said(format!(
                "fragment {} of {} (seq {})",
                r.frag_id, r.frag_count, r.seq
            ));
        }
        if let Some(i) = ix.icmp.get(&row_index) {
            return said(i.info.clone());
        }
        if !r.has(status::GAME) {
            return said(super::ui::status_of(&r).0.to_string());
        }
        let Some(p) = self.program.clone() else {
            return said(match r.fault() {
                Some(k) => format!("malformed: {}", k.code()),
                None => String::new(),
            });
        };
        if let Some(got) = self.replayed(ix, row_index) {
            let Some(tree) = &got.tree else {
                return Default::default();
            };
            let types = crate::present::info::message_types(&p, tree);
            return (
                self.describe.describe(&p, tree, &got.payload, &got.carried),
                types,
            );
        }
        let Some(d) = self.detail_of(ix, row_index) else {
            return Default::default();
        };
        let Some(dis) = d.dissection.as_ref() else {
            return said(d.note.unwrap_or_default());
        };
        let types = crate::present::info::message_types(&p, dis);
        (self.describe.describe(&p, dis, d.payload(), &[]), types)
    }

    /// With keys or inner layers, a game row as the run read it (`None` without them, for
    /// a live capture, or when the capture cannot be read again).
    fn replayed(&mut self, ix: &Index, row: u32) -> Option<super::layered::Replayed> {
        if self.cfg.stack.is_none() || ix.store.is_some() {
            return None;
        }
        let replay = self
            .replay
            .get_or_insert_with(|| super::layered::Replay::new(ix.path.clone(), self.cfg.clone()));
        replay.row(row).ok().flatten()
    }

    /// Handles a mouse event: clicks select tabs, rows and fields; the wheel scrolls.
    pub fn mouse(&mut self, m: MouseEvent) {
        let at = Position::new(m.column, m.row);
        match m.kind {
            MouseEventKind::ScrollDown => self.move_selection(3),
            MouseEventKind::ScrollUp => self.move_selection(-3),
            MouseEventKind::Down(MouseButton::Left) => {
                self.message = None;
                if self.areas.tabs.contains(at) {
                    // "1 Packets│2 Flows│…": each title and its divider.
                    let mut x = self.areas.tabs.x;
                    for (i, t) in Tab::ALL.iter().enumerate() {
                        let pad = super::ui::tabs::pad(self.areas.tabs.width);
                        let w = format!("{pad}{} {}{pad}", i + 1, t.title()).chars().count() as u16 + 1;
                        if m.column < x + w {
                            self.tab = *t;
                            return;
                        }
                        x += w;
                    }
                } else if self.tab == Tab::Packets && self.areas.list.contains(at) {
                    self.focus = Focus::List;
                    let pos = self.scroll + (m.row - self.areas.list.y) as usize;
                    self.select(pos.min(self.view.len().saturating_sub(1)));
                } else if self.tab == Tab::Packets && self.areas.tree.contains(at) {
                    let vis = self.visible_fields();
                    let k = self.tree_scroll + (m.row - self.areas.tree.y) as usize;
                    if let Some(&i) = vis.get(k) {
                        self.focus = Focus::Tree;
                        self.field = i;
                    }
                } else if self.tab == Tab::Flows && self.areas.flows.contains(at) {
                    self.flows.selected = self.flows.scroll + (m.row - self.areas.flows.y) as usize;
                } else if self.tab == Tab::Reassembly && self.areas.frags.contains(at) {
                    self.frags.selected = self.frags.scroll + (m.row - self.areas.frags.y) as usize;
                }
            }
            _ => {}
        }
    }
}

/// What `]`/`[` and `}`/`{` jump to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Jump {
    Malformed,
    Gap,
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
    "crc fail",
    "largest",
    "frags",
    "acked",
    "ack loss",
    "rtt p50",
];
/// The Reassembly tab's columns, for sorting (0: incomplete first).
pub const FRAG_COLUMNS: [&str; 6] = ["incomplete first", "sender", "seq", "frags", "missing", "dup"];

/// A field's value as a filter writes it: enum names, quoted text, floats at their
/// resolution; `None` for groups (the filter tests that the field is there).
/// The message type a reassembled message of row type `ptype` was read as, when the
/// definition names one (`reassembled-as`).
fn reassembled_as(p: &Program, ptype: u16) -> Option<u32> {
    let t = ptype as u32;
    p.params
        .message_fragments
        .iter()
        .any(|f| f.reassembled_as == Some(t))
        .then_some(t)
}

pub(crate) fn filter_value(p: &Program, f: &crate::dissect::Field, payload: &[u8]) -> Option<String> {
    use crate::dissect::Value;
    let enum_name = match (f.label, p.nodes.get(f.node as usize).and_then(|n| n.enum_id)) {
        (crate::dissect::Label::Node(_), Some(e)) => match f.value {
            Value::Int(v) => p.enum_name(e, v),
            Value::UInt(v) => p.enum_name(e, v as i64),
            _ => None,
        },
        _ => None,
    };
    if let Some(n) = enum_name {
        return Some(n.to_string());
    }
    match f.value {
        Value::Int(v) => Some(v.to_string()),
        Value::UInt(v) => Some(v.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Float(_) | Value::Double(_) => Some(crate::present::tree::value_text(p, f, payload)),
        Value::Bytes { offset, len } => {
            let b = payload.get(offset..offset + len)?;
            let s = String::from_utf8_lossy(b);
            Some(format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
        }
        _ => None,
    }
}
