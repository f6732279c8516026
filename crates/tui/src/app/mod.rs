//! TUI state. The app owns its copy of the packet index, fed by updates from the loader
//! over a channel, so drawing never waits on a lock; nothing here draws. Its methods live
//! in rooms: `bindings` (the keys as data) and `input` (keys, prompts, mouse),
//! `navigation` (the list), `detail` (the selected packet, each row's Info), `tables`
//! (Flows, Reassembly, Loss) and `output` (write, copy).

use super::prompt::{Ask, Edit, Prompt};
use super::scan::FieldScan;
use super::series::Series;
use gpcap::Filter;
use gpcap::run::scans::frames_of_rows;
use gpcap::sinks::index::{Index, NO_FLOW, Row, Update, status};
use gpcap::sinks::select::write_frames;
use gpcap_dissect::{Dissection, Program};
use gpcap_engine::{Config, Validator};
use gpcap_wire::capture::FrameAt;
use gpcap_wire::decode::{Decoded, decode};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Receiver;

mod bindings;
mod detail;
mod drawn;
mod input;
mod navigation;
mod output;
mod streams;
mod tables;

pub(crate) use detail::filter_value;
pub use detail::{Detail, header_row};
pub use drawn::Drawn;
use navigation::Jump;
pub use tables::{FLOW_COLUMNS, FRAG_COLUMNS};

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

    /// This state as [`fit`](Self::fit) would leave it (what a frame draws with).
    pub fn fitted(mut self, len: usize, height: usize) -> TableState {
        self.fit(len, height);
        self
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
    /// The frame's headers opened in the tree (by layer; all closed at first).
    pub headers_open: HashSet<u32>,
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
    /// The Packets tab's split: the list's share of the height and the field tree's of
    /// the width below it, in percent (`+` `-` `<` `>`).
    pub list_share: u16,
    pub tree_share: u16,
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
    /// The Flows tab shows the message streams (`v`), and where in them.
    pub streams_view: bool,
    pub streams: TableState,
    /// The stream drilled into in the Streams view: its messages and their verdicts.
    pub messages: Option<crate::messages::Messages>,
    pub frags: TableState,
    pub flow_series: Option<FlowSeries>,
    /// Text to put on the terminal's clipboard (OSC 52), taken by the event loop.
    pub clipboard: Option<String>,
    pub areas: Areas,
    /// Info and message types of rows already described.
    info: HashMap<u32, (String, Option<String>)>,
    /// The Info line's templates, for the definition and the inner layers' ones.
    describe: gpcap::present::info::Info,
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
    replay: Option<gpcap::run::seek::Replay>,
}

/// The list's share of the Packets tab's height by default, in percent: more than the
/// panes below, whose trees are mostly short, and room for more than six rows at 80×24.
pub const LIST_SHARE: u16 = 60;
/// What `+` `-` `<` `>` move a split by, in percent.
pub const LIST_STEP: u16 = 5;

impl App {
    /// `+` `-`: the list's share of the height, kept between 20% and 85%.
    pub fn resize_list(&mut self, by: i16) {
        self.list_share = (self.list_share as i16 + by).clamp(20, 85) as u16;
        self.message = Some((format!("list {}% of the height", self.list_share), false));
    }

    /// `<` `>`: the field tree's share of the width, kept between 20% and 80%.
    pub fn resize_tree(&mut self, by: i16) {
        self.tree_share = (self.tree_share as i16 + by).clamp(20, 80) as u16;
        self.message = Some((format!("fields {}% of the width", self.tree_share), false));
    }

    /// What the screen says under the list: an open prompt's note (its refusal or hint),
    /// else the last message; `true` for an error.
    pub fn note(&self) -> Option<(String, bool)> {
        match &self.mode {
            Mode::Prompt(p) if p.note.is_some() => p.note.clone(),
            _ => self.message.clone(),
        }
    }

    pub fn new(index: Index, updates: Receiver<Update>, cfg: Config) -> Self {
        App {
            describe: gpcap::present::info::Info::new(),
            reader: None,
            validator: Validator::new(&cfg, true),
            // With keys, the decrypted view: it names every field of both.
            program: gpcap_engine::layers::shown_program(&cfg),
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
            headers_open: HashSet::new(),
            detail: None,
            message: None,
            help: false,
            help_scroll: 0,
            quit: false,
            color: std::env::var_os("NO_COLOR").is_none(),
            mtu_flow: 0,
            list_height: 10,
            list_share: LIST_SHARE,
            tree_share: 50,
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
            streams_view: false,
            streams: TableState::default(),
            messages: None,
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
        if let Some(m) = self.messages.as_mut() {
            m.poll();
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
    /// No stream's messages are being read.
    pub fn messages_finished(&self) -> bool {
        !self.messages.as_ref().is_some_and(|m| m.reading())
    }

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

    /// Loads the definition again and re-reads the capture, keeping the selection and
    /// the filter.
    fn reload(&mut self) {
        let Some(path) = self.definition.clone() else {
            self.message = Some((
                "nothing to reload: the TUI was opened without a -d file (a pipe is read once)".into(),
                true,
            ));
            return;
        };
        if self.live {
            self.message = Some(("a live capture cannot be read again".into(), true));
            return;
        }
        let program = match gpcap_dissect::load(&path) {
            Ok(p) => Arc::new(p),
            Err(errors) => {
                self.message = Some((refused(&errors), true));
                return;
            }
        };
        let cfg = self.reloaded_cfg(program);
        self.restart(cfg);
        self.message = Some((format!("reloaded {}", path.display()), false));
    }

    /// The configuration for a definition loaded again: the flags given at the start
    /// (limits, layers, a protocol id or ports not from the definition) kept.
    fn reloaded_cfg(&self, program: Arc<Program>) -> Config {
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
        cfg
    }

    /// Reads the capture again with `cfg`, keeping the selection and the filter.
    fn restart(&mut self, cfg: Config) {
        let keep = self.selected_row().map(|r| r.frame);
        let (tx, rx) = std::sync::mpsc::channel();
        let (file, loader_cfg) = (self.index.path.clone(), cfg.clone());
        std::thread::spawn(move || gpcap::run::scans::load(&file, loader_cfg, tx));
        let name = self.index.name.clone();
        self.index = Index::new(&self.index.path.clone());
        self.index.name = name;
        self.updates = rx;
        self.validator = Validator::new(&cfg, true);
        self.describe = gpcap::present::info::Info::new();
        self.program = gpcap_engine::layers::shown_program(&cfg);
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
    }
}

/// Why a reloaded definition was refused: its first error, located, and how many more.
fn refused(errors: &[gpcap_dissect::DefinitionError]) -> String {
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
    format!("reload: {first}{more}")
}
