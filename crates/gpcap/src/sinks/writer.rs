//! Writes the frames of events to pcapng (live `--write`): one interface per link type,
//! nanosecond timestamps, original lengths kept.

use gpcap_engine::{Flow, Kind, PacketEvent, Sink, SinkError};
use gpcap_wire::capture::PcapNgWriter;
use std::io::Write;

pub struct PcapNgSink<W: Write> {
    w: PcapNgWriter<W>,
    /// Interface ids by link type, in order of appearance.
    interfaces: Vec<i32>,
    pub written: u64,
    pub error: Option<std::io::Error>,
    /// A write failed: nothing more goes to the file.
    broken: bool,
}

impl<W: Write> PcapNgSink<W> {
    pub fn new(out: W) -> std::io::Result<Self> {
        Ok(PcapNgSink {
            w: PcapNgWriter::new(out)?,
            interfaces: Vec::new(),
            written: 0,
            error: None,
            broken: false,
        })
    }

    /// Whether a write failed (nothing more goes to the file).
    pub fn broken(&self) -> bool {
        self.broken || self.error.is_some()
    }

    /// Writes one captured frame.
    pub fn frame(&mut self, linktype: i32, ts_ns: i64, data: &[u8], wire_len: u32) -> std::io::Result<()> {
        let interface = match self.interfaces.iter().position(|&t| t == linktype) {
            Some(i) => i,
            None => {
                self.w.interface(linktype as u16, 65535, true)?;
                self.interfaces.push(linktype);
                self.interfaces.len() - 1
            }
        };
        self.written += 1;
        self.w
            .packet(interface as u32, ts_ns.max(0) as u64, data, wire_len)
    }

    /// Flushes and returns the output; a write error seen earlier is returned instead.
    pub fn finish(mut self) -> std::io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut out = self.w.into_inner();
        out.flush()?;
        Ok(out)
    }
}

impl<W: Write> Sink for PcapNgSink<W> {
    /// Writes the frame; a failed write ends the run with its error, and nothing is
    /// written after it (a file with a hole would look whole).
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        // Reassembled packets are not frames: their fragments were written already.
        if self.broken || e.kind == Kind::Reassembled {
            return Ok(Flow::Continue);
        }
        if let Err(err) = self.frame(e.linktype, e.ts_ns, e.frame_data, e.wire_len) {
            self.broken = true;
            return Err(SinkError::new(err));
        }
        Ok(Flow::Continue)
    }
}
