//! The `dissect` printers: every game datagram and reassembled packet that passes the
//! display filter, as a text tree (in the spirit of `tshark -V`) or as JSON.

use crate::filter::Filter;
use crate::print::{self, ack_words, datagram_verdict, message_verdict, note, seq_note};
use gpcap_dissect::Program;
use gpcap_engine::ack_facts::AckFacts;
use gpcap_engine::{Flow, Kind, Needs, PacketEvent, Sink, SinkError};
use gpcap_wire::validate::CrcStatus;
pub use print::time::TimeFormat;
use std::io::Write;
use std::sync::Arc;

/// How each packet is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The field tree (`tshark -V`).
    Tree,
    /// One line per packet (`tshark`'s summary).
    Brief,
    /// Compact JSON objects in an array, one a line.
    Json,
    /// JSON Lines: one compact object a line, nothing around them (streamable).
    JsonLines,
}

pub struct Printer<W: Write> {
    out: W,
    program: Option<Arc<Program>>,
    filter: Filter,
    /// What the ack analysis' pass settled (the messages' retransmissions, NAKs, round
    /// trips), when it was run.
    acks: Option<Arc<AckFacts>>,
    /// Only this frame.
    pub only: Option<u64>,
    /// At most this many packets (`-c`, as tcpdump and tshark count).
    pub limit: Option<u64>,
    format: Format,
    first: bool,
    /// Packets printed.
    pub printed: u64,
    /// Writing failed (a closed pipe ends output quietly; anything else is an error).
    pub error: Option<std::io::Error>,
    json: print::json::JsonScratch,
    info: print::info::Info,
    /// What is formatted and not yet written: output goes out in blocks of [`FLUSH`].
    buf: Vec<u8>,
    /// A packet's text tree, reused.
    text: String,
    /// How times are written (tshark's `-t`).
    pub times: TimeFormat,
    /// The reference of the packet being formatted for `-t r`, `d` and `dd` (set when it
    /// is selected, in reading order; an ordered stage's workers are handed it).
    pub time_base: i64,
    /// The first frame's time, and the frames' times as they go by: (frame, time) of
    /// the latest and the one before it, and the last packet shown's.
    clock: Clock,
}

/// What `-t r`, `d` and `dd` count from, followed in reading order.
#[derive(Debug, Clone, Copy, Default)]
struct Clock {
    first: Option<i64>,
    latest: Option<(u64, i64)>,
    before: Option<i64>,
    shown: Option<i64>,
}

/// Bytes gathered before they are written: one large write instead of many small ones.
const FLUSH: usize = 1 << 16;

impl<W: Write> Printer<W> {
    pub fn new(out: W, program: Option<Arc<Program>>, filter: Filter, format: Format) -> Self {
        let acks = filter.ack_facts();
        let mut json = print::json::JsonScratch::default();
        json.acks = acks.clone();
        Printer {
            out,
            program,
            filter,
            acks,
            only: None,
            limit: None,
            format,
            first: true,
            printed: 0,
            error: None,
            json,
            info: print::info::Info::new(),
            buf: Vec::new(),
            text: String::new(),
            times: TimeFormat::default(),
            time_base: 0,
            clock: Clock::default(),
        }
    }

    /// Prints what the ack analysis' pass settled (a printer whose filter has no facts:
    /// an ordered stage's formatting workers).
    pub fn set_acks(&mut self, acks: Option<Arc<AckFacts>>) {
        self.json.acks = acks.clone();
        self.acks = acks;
    }

    /// The packet's time as `-t` asks.
    fn time(&self, ts_ns: i64) -> String {
        self.times.text(ts_ns, self.time_base)
    }

    /// Follows the frames' times in reading order (every event, shown or not).
    fn tick(&mut self, e: &PacketEvent) {
        let c = &mut self.clock;
        c.first.get_or_insert(e.ts_ns);
        // A reassembled packet comes right after the frame that completed it: one frame.
        if c.latest.is_some_and(|(f, _)| f == e.frame) {
            return;
        }
        c.before = c.latest.map(|(_, t)| t);
        c.latest = Some((e.frame, e.ts_ns));
    }

    /// `e` is shown: the reference its time counts from.
    fn base_of(&mut self, e: &PacketEvent) -> i64 {
        let c = &mut self.clock;
        let base = match self.times {
            TimeFormat::Relative => c.first.unwrap_or(e.ts_ns),
            TimeFormat::Delta => c.before.unwrap_or(e.ts_ns),
            TimeFormat::DeltaShown => c.shown.unwrap_or(e.ts_ns),
            _ => 0,
        };
        c.shown = Some(e.ts_ns);
        base
    }

    /// Output can no longer be written.
    pub fn is_done(&self) -> bool {
        self.error.is_some()
    }

    /// As many packets as `limit` allows have been selected: reading may stop.
    pub fn full(&self) -> bool {
        self.limit.is_some_and(|n| self.printed >= n)
    }

    /// Opens the JSON array.
    pub fn begin(&mut self) {
        if self.format == Format::Json {
            let r = writeln!(self.out, "[");
            self.record(r);
        }
    }

    /// Closes the JSON array and flushes.
    pub fn end(&mut self) -> std::io::Result<()> {
        if self.error.is_none() && self.format == Format::Json {
            writeln!(self.buf, "{}]", if self.first { "" } else { "\n" })?;
        }
        if self.error.is_none() {
            let r = self.out.write_all(&self.buf);
            self.buf.clear();
            self.record(r);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()
    }

    fn record(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    fn type_name(&self, t: u32) -> &str {
        match &self.program {
            Some(p) => p.type_name(t).unwrap_or("undefined"),
            None => "reference layout",
        }
    }

    /// `frame time flow type seq size status`, and the fragments of a reassembled packet.
    fn brief(&mut self, e: &PacketEvent) -> std::io::Result<()> {
        let flow = e.flow.map(|f| f.to_string()).unwrap_or_default();
        let ty = e
            .packet_type
            .map(|t| format!("{} ({t})", self.type_name(t)))
            .unwrap_or_else(|| "-".into());
        let seq = e.sequence.map(|s| s.to_string()).unwrap_or_else(|| "-".into());
        let frag = match (e.kind, e.fragment) {
            (Kind::Reassembled, _) => {
                let frames: Vec<String> = e.fragment_frames.iter().map(|f| f.to_string()).collect();
                format!(" reassembled from frames {}", frames.join(","))
            }
            // The id as the tree prints `fragment_id`: from 0.
            (_, Some(f)) => format!(" fragment {} of {}", f.id, f.count),
            _ => String::new(),
        };
        let fault = e.fault.map(|k| format!(" ({})", k.code())).unwrap_or_default();
        let mut analysis = seq_note(e.seq_event);
        if let Some(v) = datagram_verdict(self.acks.as_deref(), e) {
            analysis.push_str(&ack_words(v));
        }
        if let Some(p) = &self.program {
            analysis.push_str(&stream_notes(p, e, self.acks.as_deref()));
        }
        // What was read, inner layers included (the TUI's Info column).
        let info = match &self.program {
            Some(p) => self.info.of_event(p, e),
            None => String::new(),
        };
        let info = if info.is_empty() {
            info
        } else {
            format!(" — {info}")
        };
        writeln!(
            self.buf,
            "{} {} {flow} {ty} seq {seq} {} bytes {}{analysis}{fault}{frag}{info}",
            e.frame,
            self.time(e.ts_ns),
            e.size,
            e.status.code()
        )
    }

    fn write(&mut self, e: &PacketEvent) -> std::io::Result<()> {
        if self.format == Format::Brief {
            return self.brief(e);
        }
        let note = note(e);
        let empty = gpcap_dissect::Dissection::default();
        let d = e.dissection.unwrap_or(&empty);
        if matches!(self.format, Format::Json | Format::JsonLines) {
            return self.json_packet(e, d, note.as_deref());
        }
        let flow = e.flow.map(|f| f.to_string()).unwrap_or_default();
        let unit = if self.times.is_seconds() { " s" } else { "" };
        let time = self.time(e.ts_ns);
        let crc_text = self.crc_text(e);
        let t = self.type_text(e, d);
        // The frame's own lengths, as Wireshark's first line (the game packet's size is
        // on its protocol's line below).
        let (wire, cap) = (e.wire_len as u64, e.frame_data.len() as u64);
        writeln!(
            self.buf,
            "Frame {}: {wire} bytes on wire ({} bits), {cap} bytes captured ({} bits), {flow}, {time}{unit}",
            e.frame,
            wire * 8,
            cap * 8
        )?;
        if let Some(n) = note {
            writeln!(self.buf, "[{n}]")?;
        }
        if e.kind == Kind::Reassembled {
            let frames: Vec<String> = e.fragment_frames.iter().map(|f| f.to_string()).collect();
            writeln!(self.buf, "[fragments in frames {}]", frames.join(", "))?;
        }
        // Link, IP and UDP, as the first layers of the tree.
        let layers = gpcap_wire::decode::headers::layers(e.linktype, e.frame_data);
        self.text.clear();
        print::headers::write_layers(&mut self.text, &layers, e.frame_data);
        self.buf.extend_from_slice(self.text.as_bytes());
        let size = match e.kind {
            Kind::Reassembled => format!("{} bytes reassembled", e.size),
            _ if e.ip_fragments > 1 => format!("{} bytes of UDP payload (IP-reassembled)", e.size),
            _ => match layers.iter().find(|l| l.proto == "udp") {
                Some(u) => format!("{} bytes of UDP payload at frame byte {}", e.size, u.at + u.len),
                None => format!("{} bytes of UDP payload", e.size),
            },
        };
        let protocol = self
            .program
            .as_ref()
            .map(|p| p.params.name.as_str())
            .filter(|n| !n.is_empty())
            .unwrap_or("gpcap");
        let seq = d.sequence.or(e.sequence);
        writeln!(
            self.buf,
            "{protocol} {t}, sequence {}, {crc_text}, {size} (bits below count from its first byte)",
            seq.map(|s| s.to_string()).unwrap_or_else(|| "?".into())
        )?;
        self.body(e, d)?;
        writeln!(self.buf)
    }
    /// One packet as a JSON object: an element of `--json`'s array, or a line of
    /// `--jsonl`.
    fn json_packet(
        &mut self,
        e: &PacketEvent,
        d: &gpcap_dissect::Dissection,
        note: Option<&str>,
    ) -> std::io::Result<()> {
        if self.format == Format::Json && !self.first {
            self.buf.write_all(b",\n")?;
        }
        self.first = false;
        print::json::write_packet(&mut self.buf, self.program.as_deref(), e, d, note, &mut self.json);
        if self.format == Format::JsonLines {
            self.buf.push(b'\n');
        }
        Ok(())
    }

    /// What the checksum said, in words.
    fn crc_text(&self, e: &PacketEvent) -> String {
        match e.crc {
            Some(CrcStatus::Ok) => "crc_ok".to_string(),
            Some(CrcStatus::Mismatch { stored, computed }) => {
                format!("crc_mismatch (stored 0x{stored:08x}, expected 0x{computed:08x})")
            }
            Some(CrcStatus::TooShort { len }) => format!("too_short for a CRC ({len} bytes)"),
            None if e.status == gpcap_engine::Status::Truncated => "truncated, not validated".into(),
            None if self
                .program
                .as_ref()
                .is_some_and(|p| !p.params.checksum.is_crc32()) =>
            {
                "no checksum".into()
            }
            None => "crc not checked".into(),
        }
    }

    /// `type N (name)`, or what a packet without a header is.
    fn type_text(&self, e: &PacketEvent, d: &gpcap_dissect::Dissection) -> String {
        let name = |t: u32| {
            self.program
                .as_ref()
                .and_then(|p| p.type_name(t))
                .unwrap_or(if self.program.is_some() {
                    "undefined"
                } else {
                    "reference layout"
                })
                .to_string()
        };
        let ptype = d.packet_type.or(e.packet_type);
        ptype
            .map(|t| format!("type {t} ({})", name(t)))
            .unwrap_or_else(|| match e.kind {
                Kind::Reassembled => "message (bytes)".into(),
                _ => "no header".into(),
            })
    }

    /// The packet's body: its field tree, a reassembled message's bytes, or without a
    /// definition the fragment and fault the reference header found.
    fn body(&mut self, e: &PacketEvent, d: &gpcap_dissect::Dissection) -> std::io::Result<()> {
        match &self.program {
            // A message put back from fragments inside messages: the application's bytes.
            Some(_) if e.kind == Kind::Reassembled && d.fields.is_empty() && d.fault.is_none() => {
                let hex: String = e.payload.iter().take(32).map(|b| format!("{b:02x}")).collect();
                let more = if e.payload.len() > 32 { "…" } else { "" };
                writeln!(self.buf, "    message: {hex}{more} ({} bytes)", e.payload.len())?
            }
            Some(p) => {
                self.text.clear();
                print::tree::write_tree_carried(&mut self.text, p, d, e.payload, e.carried);
                self.buf.extend_from_slice(self.text.as_bytes());
            }
            None => {
                if let Some(f) = e.fragment {
                    writeln!(self.buf, "    fragment {} of {}", f.id, f.count)?;
                }
                if let Some(k) = e.fault {
                    writeln!(self.buf, "    [Malformed: {}]", k.code())?;
                }
            }
        }
        Ok(())
    }
}

/// The messages of a datagram that are late, duplicate or after a gap in their stream,
/// or of which the ack analysis said something, for `--brief`: ` [push 12 dup
/// retransmission rtt 20.125ms, push 14 gap 1]` (the first 8, then how many more).
fn stream_notes(p: &gpcap_dissect::Program, e: &PacketEvent, acks: Option<&AckFacts>) -> String {
    const SHOWN: usize = 8;
    let noted: Vec<String> = (e.stream_events().iter())
        .filter_map(|s| {
            let name = p
                .params
                .streams
                .get(s.stream as usize)
                .map_or("", |d| d.name.as_str());
            let said = message_verdict(acks, e, s).map(ack_words).unwrap_or_default();
            let seq = seq_note(Some(s.event));
            (!seq.is_empty() || !said.is_empty()).then(|| format!("{name} {}{seq}{said}", s.sequence))
        })
        .collect();
    match noted.len() {
        0 => String::new(),
        n if n <= SHOWN => format!(" [{}]", noted.join(", ")),
        n => format!(" [{}, {} more]", noted[..SHOWN].join(", "), n - SHOWN),
    }
}

impl<W: Write> Printer<W> {
    /// Whether `e` is printed (counting it): a game packet, the frame asked for, through
    /// the filter. Called on every event in order: the filter's `time` counts from the
    /// first frame.
    pub fn selects(&mut self, e: &PacketEvent<'_>) -> bool {
        self.filter.start(e.ts_ns);
        self.tick(e);
        if self.error.is_some() || !e.is_game() || self.full() {
            return false;
        }
        if self.only.is_some_and(|n| n != e.frame) || !self.filter.matches(e) {
            return false;
        }
        self.printed += 1;
        self.time_base = self.base_of(e);
        true
    }

    /// Prints `e`, selected or not (an ordered stage selected it), keeping a write error.
    pub fn print(&mut self, e: &PacketEvent<'_>) {
        self.format(e);
        if self.buf.len() >= FLUSH && self.error.is_none() {
            let r = self.out.write_all(&self.buf);
            self.buf.clear();
            self.record(r);
        }
    }

    /// Formats `e` after what is held, writing nothing (see [`Printer::take_formatted`]).
    pub fn format(&mut self, e: &PacketEvent<'_>) {
        let r = self.write(e);
        self.record(r);
    }

    /// What was formatted and not written, leaving `empty` (its memory reused) in its place.
    pub fn take_formatted(&mut self, empty: Vec<u8>) -> Vec<u8> {
        std::mem::replace(&mut self.buf, empty)
    }

    /// Whether a JSON array's next object is its first (no separator before it).
    pub fn set_first(&mut self, first: bool) {
        self.first = first;
    }

    /// The output, for bytes formatted elsewhere in the same format.
    pub fn out(&mut self) -> &mut W {
        &mut self.out
    }
}

impl<W: Write> Sink for Printer<W> {
    /// Field trees, but for one-line summaries without a definition (their Info line
    /// reads the tree and what inner layers read) whose filter reads no field.
    fn needs(&self) -> Needs {
        Needs {
            fields: self.format != Format::Brief || self.filter.needs_engine() || self.program.is_some(),
            layers: None,
        }
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if self.selects(e) {
            self.print(e);
        }
        // Output can no longer be written, or the packets asked for are out: reading stops.
        Ok(Flow::stop_if(self.is_done() || self.full()))
    }
}
