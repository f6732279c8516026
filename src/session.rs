//! Incremental analysis of frames as they arrive (live capture): the same analyzer and
//! packet index as files, fed one batch at a time, optionally written to pcapng.

use crate::analysis::{Analyzer, Config, Report};
use crate::capture::Frame;
use crate::capture::writer::PcapNgWriter;
use crate::tui::index::{FrameStore, Index};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, RwLock};

pub struct Session {
    analyzer: Analyzer,
    pub index: Arc<RwLock<Index>>,
    /// Keep a row per packet and recent frames (for the TUI); reports alone keep nothing
    /// per packet.
    pub keep_packets: bool,
    frames: u64,
    linktype: i32,
    writer: Option<PcapNgWriter<BufWriter<File>>>,
}

impl Session {
    /// `write`: also save every frame to this pcapng file.
    pub fn new(
        cfg: Config,
        index: Arc<RwLock<Index>>,
        linktype: i32,
        write: Option<&Path>,
    ) -> std::io::Result<Self> {
        let writer = match write {
            Some(p) => {
                let mut w = PcapNgWriter::new(BufWriter::with_capacity(1 << 20, File::create(p)?))?;
                w.interface(linktype as u16, 65535, true)?;
                Some(w)
            }
            None => None,
        };
        if let Ok(mut ix) = index.write() {
            ix.store.get_or_insert_with(|| FrameStore::new(256 << 20));
        }
        let mut analyzer = Analyzer::new(cfg);
        analyzer.begin_file("live");
        Ok(Session {
            analyzer,
            index,
            keep_packets: true,
            frames: 0,
            linktype,
            writer,
        })
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Analyzes a batch of (timestamp, original length, bytes).
    pub fn feed<'a>(&mut self, batch: impl IntoIterator<Item = (i64, u32, &'a [u8])>) -> std::io::Result<()> {
        let Ok(mut ix) = self.index.write() else {
            return Ok(());
        };
        for (ts_ns, origlen, data) in batch {
            self.frames += 1;
            let f = Frame {
                number: self.frames,
                ts_ns,
                linktype: self.linktype,
                interface: 0,
                origlen,
                offset: 0,
                data,
            };
            let seen = self.analyzer.frame(&f);
            if self.keep_packets {
                ix.push(&f, &seen);
                if let Some(p) = self.analyzer.reassembled_payload() {
                    ix.keep_ip_payload(f.number, p);
                }
                if let Some(s) = ix.store.as_mut() {
                    s.push(f.number, data);
                }
            }
            if let Some(w) = self.writer.as_mut() {
                w.packet(0, ts_ns.max(0) as u64, data, origlen)?;
            }
        }
        Ok(())
    }

    /// The report so far.
    pub fn report(&self) -> Report {
        self.analyzer.snapshot()
    }

    pub fn finish(self) -> std::io::Result<Report> {
        if let Some(w) = self.writer {
            w.into_inner().flush()?;
        }
        Ok(self.analyzer.finish())
    }
}
