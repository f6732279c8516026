//! The packet index behind the TUI: a few dozen bytes per packet, built in the
//! background while the first screen is already up, plus what the analyzer reports.

use crate::analysis::{Analyzer, Config, FlowId, Report, Seen, SeenKind};
use crate::capture::{CaptureReader, Frame};
use crate::filter::PacketFacts;
use hashbrown::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::RwLock;

pub mod status {
    pub const CRC_OK: u16 = 1;
    pub const CRC_FAIL: u16 = 2;
    pub const MALFORMED: u16 = 4;
    pub const IP_FRAG: u16 = 8;
    pub const OVER_BUDGET: u16 = 16;
    pub const GAME: u16 = 32;
    pub const TRUNCATED: u16 = 64;
    pub const ICMP: u16 = 128;
    pub const OTHER_UDP: u16 = 256;
    pub const IP_PIECE: u16 = 512;
    pub const BAD_FRAME: u16 = 1024;
}

/// One packet of the list: 48 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Row {
    pub frame: u64,
    /// Where the record starts in the (decompressed) file.
    pub offset: u64,
    pub ts_ns: i64,
    pub flow: u32,
    pub size: u32,
    pub seq: u16,
    /// `u16::MAX` when there is no header.
    pub ptype: u16,
    pub frag_count: u16,
    pub linktype: u16,
    pub status: u16,
    pub frag_id: u8,
    /// `FaultKind` index + 1, 0 for none.
    pub fault: u8,
}

pub const NO_FLOW: u32 = u32::MAX;

impl Row {
    pub fn has(&self, flag: u16) -> bool {
        self.status & flag != 0
    }

    pub fn facts(&self, flows: &[FlowId]) -> PacketFacts {
        let flow = flows.get(self.flow as usize);
        PacketFacts {
            frame: self.frame,
            src: flow.map(|f| f.src),
            dst: flow.map(|f| f.dst),
            sequence: self
                .has(status::GAME)
                .then_some(self.seq)
                .filter(|_| self.ptype != u16::MAX),
            packet_type: (self.ptype != u16::MAX).then_some(self.ptype as u32),
            size: self.size,
            fragment: (self.frag_count > 0).then_some((self.frag_id as u32, self.frag_count as u32)),
            crc_ok: self.has(status::CRC_OK),
            crc_fail: self.has(status::CRC_FAIL),
            malformed: self.has(status::MALFORMED),
            ip_fragmented: self.has(status::IP_FRAG),
            over_budget: self.has(status::OVER_BUDGET),
            truncated: self.has(status::TRUNCATED),
            game: self.has(status::GAME),
        }
    }
}

/// A fragmented game packet: which of its fragments arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragPacket {
    pub flow: u32,
    pub seq: u16,
    pub count: u16,
    pub received: [u64; 4],
    pub duplicates: u16,
    pub first_frame: u64,
}

impl FragPacket {
    pub fn has(&self, id: u32) -> bool {
        id < 256 && self.received[(id / 64) as usize] >> (id % 64) & 1 == 1
    }

    pub fn received_count(&self) -> u32 {
        self.received.iter().map(|w| w.count_ones()).sum()
    }

    pub fn complete(&self) -> bool {
        self.received_count() >= self.count as u32
    }
}

/// Fragmented packets tracked for the reassembly view.
const MAX_FRAG_PACKETS: usize = 200_000;

/// Recent frames kept in memory when there is no file to read them back from (live
/// capture), bounded by bytes.
#[derive(Debug, Default)]
pub struct FrameStore {
    frames: std::collections::VecDeque<(u64, Vec<u8>)>,
    bytes: usize,
    pub limit: usize,
}

impl FrameStore {
    pub fn new(limit: usize) -> Self {
        FrameStore {
            limit,
            ..FrameStore::default()
        }
    }

    pub fn push(&mut self, frame: u64, data: &[u8]) {
        self.bytes += data.len();
        self.frames.push_back((frame, data.to_vec()));
        while self.bytes > self.limit {
            match self.frames.pop_front() {
                Some((_, d)) => self.bytes -= d.len(),
                None => break,
            }
        }
    }

    pub fn get(&self, frame: u64) -> Option<&[u8]> {
        let i = self.frames.partition_point(|(n, _)| *n < frame);
        self.frames
            .get(i)
            .filter(|(n, _)| *n == frame)
            .map(|(_, d)| d.as_slice())
    }
}

#[derive(Debug, Default)]
pub struct Index {
    pub name: String,
    pub path: PathBuf,
    pub rows: Vec<Row>,
    pub flows: Vec<FlowId>,
    flow_ids: HashMap<FlowId, u32>,
    pub frags: Vec<FragPacket>,
    frag_ids: HashMap<(u32, u16), u32>,
    pub bytes_read: u64,
    pub total_bytes: u64,
    pub done: bool,
    pub error: Option<String>,
    pub report: Option<Report>,
    /// Frames held in memory (live capture); files are read back instead.
    pub store: Option<FrameStore>,
    /// A line about the live capture (drops), shown in the status bar.
    pub live_status: Option<String>,
    /// UDP payloads rebuilt from IP fragments, by the frame that completed them (the
    /// file holds only pieces), up to `IP_PAYLOAD_BYTES` in all.
    pub ip_payloads: HashMap<u64, Vec<u8>>,
    ip_payload_bytes: usize,
}

const IP_PAYLOAD_BYTES: usize = 64 << 20;

impl Index {
    /// Keeps the payload a frame completed by IP reassembly, while there is room.
    pub fn keep_ip_payload(&mut self, frame: u64, payload: &[u8]) {
        if self.ip_payload_bytes + payload.len() <= IP_PAYLOAD_BYTES {
            self.ip_payload_bytes += payload.len();
            self.ip_payloads.insert(frame, payload.to_vec());
        }
    }
}

impl Index {
    pub fn new(path: &Path) -> Self {
        Index {
            name: path.display().to_string(),
            path: path.to_path_buf(),
            total_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            ..Index::default()
        }
    }

    pub fn flow_id(&mut self, f: FlowId) -> u32 {
        if let Some(&i) = self.flow_ids.get(&f) {
            return i;
        }
        let i = self.flows.len() as u32;
        self.flows.push(f);
        self.flow_ids.insert(f, i);
        i
    }

    /// Adds the row for one frame.
    pub fn push(&mut self, f: &Frame, seen: &Seen) {
        let mut st = 0u16;
        match seen.kind {
            SeenKind::Game => st |= status::GAME,
            SeenKind::OtherUdp => st |= status::OTHER_UDP,
            SeenKind::IpPiece => st |= status::IP_PIECE,
            SeenKind::Icmp => st |= status::ICMP,
            SeenKind::Malformed => st |= status::BAD_FRAME,
            SeenKind::NotUdp => {}
        }
        match seen.crc_ok {
            Some(true) => st |= status::CRC_OK,
            Some(false) => st |= status::CRC_FAIL,
            None => {}
        }
        if seen.fault.is_some() {
            st |= status::MALFORMED;
        }
        if seen.ip_fragmented {
            st |= status::IP_FRAG;
        }
        if seen.over_budget {
            st |= status::OVER_BUDGET;
        }
        if seen.truncated || f.snaplen_truncated() {
            st |= status::TRUNCATED;
        }
        let flow = seen.flow.map(|fl| self.flow_id(fl)).unwrap_or(NO_FLOW);
        let fault = seen
            .fault
            .and_then(|k| crate::dissect::FaultKind::ALL.iter().position(|x| *x == k))
            .map_or(0, |i| i as u8 + 1);
        let (frag_id, frag_count) = seen.fragment.unwrap_or((0, 0));
        self.rows.push(Row {
            frame: f.number,
            offset: f.offset,
            ts_ns: f.ts_ns,
            flow,
            size: seen.size,
            seq: seen.sequence.unwrap_or(0),
            ptype: seen
                .packet_type
                .map_or(u16::MAX, |t| t.min(u16::MAX as u32 - 1) as u16),
            frag_count: frag_count.min(u16::MAX as u32) as u16,
            linktype: f.linktype as u16,
            status: st,
            frag_id: frag_id.min(255) as u8,
            fault,
        });
        if let (Some(seq), Some((id, count))) = (seen.sequence, seen.fragment)
            && seen.crc_ok != Some(false)
        {
            let key = (flow, seq);
            let i = match self.frag_ids.get(&key) {
                Some(&i) => Some(i as usize),
                None if self.frags.len() < MAX_FRAG_PACKETS => {
                    self.frags.push(FragPacket {
                        flow,
                        seq,
                        count: count.min(256) as u16,
                        received: [0; 4],
                        duplicates: 0,
                        first_frame: f.number,
                    });
                    self.frag_ids.insert(key, self.frags.len() as u32 - 1);
                    Some(self.frags.len() - 1)
                }
                None => None,
            };
            if let Some(p) = i.and_then(|i| self.frags.get_mut(i))
                && id < 256
            {
                if p.has(id) {
                    p.duplicates += 1;
                } else {
                    p.received[(id / 64) as usize] |= 1 << (id % 64);
                }
            }
        }
    }
}

/// Reads a capture into `shared`, publishing rows in batches so the screen can show the
/// first packets at once.
pub fn load(path: &Path, cfg: Config, shared: &RwLock<Index>) {
    let mut reader = match CaptureReader::open(path) {
        Ok(r) => r,
        Err(e) => {
            if let Ok(mut s) = shared.write() {
                s.error = Some(e.to_string());
                s.done = true;
            }
            return;
        }
    };
    let mut a = Analyzer::new(cfg);
    a.begin_file(&path.display().to_string());
    let mut local = Index::new(path);
    let mut error = None;
    // Rows go out in batches; the fragment grid (rewritten as fragments arrive) at most
    // once a second, so publishing stays cheap on captures of millions of packets.
    let mut frags_at = std::time::Instant::now();
    loop {
        match reader.next_frame() {
            Ok(Some(f)) => {
                let seen = a.frame(&f);
                local.push(&f, &seen);
                if let Some(p) = a.reassembled_payload() {
                    local.keep_ip_payload(f.number, p);
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
        if local.rows.len() >= 65536 {
            let with_frags = frags_at.elapsed() > std::time::Duration::from_secs(1);
            if with_frags {
                frags_at = std::time::Instant::now();
            }
            publish(&mut local, reader.offset(), with_frags, shared);
        }
    }
    a.end_file(None, reader.truncated_tail.clone());
    publish(&mut local, reader.offset(), true, shared);
    let report = a.finish();
    if let Ok(mut s) = shared.write() {
        s.frags = std::mem::take(&mut local.frags);
        s.report = Some(report);
        s.error = error.or_else(|| reader.truncated_tail.as_ref().map(|t| t.to_string()));
        s.done = true;
    }
}

fn publish(local: &mut Index, bytes: u64, frags: bool, shared: &RwLock<Index>) {
    if let Ok(mut s) = shared.write() {
        s.rows.extend_from_slice(&local.rows);
        // Rows live once, in the shared index.
        local.rows.clear();
        if s.flows.len() != local.flows.len() {
            s.flows.clone_from(&local.flows);
        }
        for (frame, p) in local.ip_payloads.drain() {
            s.keep_ip_payload(frame, &p);
        }
        if frags {
            s.frags.clone_from(&local.frags);
        }
        s.bytes_read = bytes;
    }
}

/// The bytes of the frame whose record starts at `offset`.
pub fn read_frame(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let mut magic = [0u8; 2];
    f.read_exact(&mut magic)?;
    f.seek(SeekFrom::Start(0))?;
    let mut r: Box<dyn Read> = if magic == [0x1f, 0x8b] {
        // No seeking in a gzip stream: read up to the record.
        let mut gz = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(f));
        std::io::copy(&mut (&mut gz).take(offset), &mut std::io::sink())?;
        Box::new(gz)
    } else {
        f.seek(SeekFrom::Start(offset))?;
        Box::new(f)
    };
    let head = read_file_head(path)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not a packet record");
    let mut h = [0u8; 28];
    match head {
        Head::Legacy { big_endian } => {
            r.read_exact(&mut h[..16])?;
            let caplen = u32_at(&h, 8, big_endian) as usize;
            if caplen > 256 << 20 {
                return Err(bad());
            }
            let mut data = vec![0; caplen];
            r.read_exact(&mut data)?;
            Ok(data)
        }
        Head::Ng { big_endian } => {
            r.read_exact(&mut h[..8])?;
            let ty = u32_at(&h, 0, big_endian);
            let len = u32_at(&h, 4, big_endian) as usize;
            if !(12..=256 << 20).contains(&len) {
                return Err(bad());
            }
            let mut body = vec![0; len - 8];
            r.read_exact(&mut body)?;
            match ty {
                6 if body.len() >= 20 => {
                    let caplen = u32_at(&body, 12, big_endian) as usize;
                    Ok(body.get(20..20 + caplen).ok_or_else(bad)?.to_vec())
                }
                3 if body.len() >= 4 => Ok(body[4..body.len().saturating_sub(4)].to_vec()),
                _ => Err(bad()),
            }
        }
    }
}

enum Head {
    Legacy { big_endian: bool },
    Ng { big_endian: bool },
}

fn u32_at(b: &[u8], at: usize, big_endian: bool) -> u32 {
    let x = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if big_endian {
        u32::from_be_bytes(x)
    } else {
        u32::from_le_bytes(x)
    }
}

fn read_file_head(path: &Path) -> std::io::Result<Head> {
    let f = std::fs::File::open(path)?;
    let mut magic = [0u8; 2];
    let mut br = std::io::BufReader::new(f);
    br.read_exact(&mut magic)?;
    let f = std::fs::File::open(path)?;
    let mut r: Box<dyn Read> = if magic == [0x1f, 0x8b] {
        Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(f)))
    } else {
        Box::new(f)
    };
    let mut h = [0u8; 12];
    r.read_exact(&mut h)?;
    Ok(match h[..4] {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => Head::Legacy { big_endian: false },
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => Head::Legacy { big_endian: true },
        [0x0a, 0x0d, 0x0d, 0x0a] => Head::Ng {
            big_endian: h[8..12] == [0x1a, 0x2b, 0x3c, 0x4d],
        },
        _ => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "unknown capture format",
            ));
        }
    })
}
