//! Writing captures: classic pcap (micro- or nanosecond) and pcapng with several
//! interfaces. Used by the generator and by tests that craft link-layer variety.

use std::io::{self, Write};

pub struct PcapWriter<W: Write> {
    out: W,
    nanos: bool,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut out: W, linktype: u32, snaplen: u32, nanos: bool) -> io::Result<Self> {
        let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        out.write_all(&magic.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&linktype.to_le_bytes())?;
        Ok(PcapWriter { out, nanos })
    }

    /// Writes one record; `origlen` over `data.len()` marks a snaplen cut.
    pub fn write(&mut self, ts_ns: i64, data: &[u8], origlen: u32) -> io::Result<()> {
        let secs = ts_ns.div_euclid(1_000_000_000) as u32;
        let frac = ts_ns.rem_euclid(1_000_000_000) as u32;
        let frac = if self.nanos { frac } else { frac / 1000 };
        self.out.write_all(&secs.to_le_bytes())?;
        self.out.write_all(&frac.to_le_bytes())?;
        self.out.write_all(&(data.len() as u32).to_le_bytes())?;
        self.out
            .write_all(&origlen.max(data.len() as u32).to_le_bytes())?;
        self.out.write_all(data)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

pub struct PcapNgWriter<W: Write> {
    out: W,
}

fn pad4(n: usize) -> usize {
    (4 - n % 4) % 4
}

impl<W: Write> PcapNgWriter<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        // Section header: type, length, byte-order magic, version 1.0, section length -1.
        let len = 28u32;
        out.write_all(&0x0A0D_0D0Au32.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&0x1A2B_3C4Du32.to_le_bytes())?;
        out.write_all(&1u16.to_le_bytes())?;
        out.write_all(&0u16.to_le_bytes())?;
        out.write_all(&(-1i64).to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        Ok(PcapNgWriter { out })
    }

    /// Describes an interface; `nanos` sets if_tsresol to 9 (else 6, the default).
    pub fn interface(&mut self, linktype: u16, snaplen: u32, nanos: bool) -> io::Result<()> {
        let opts: &[u8] = if nanos {
            &[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]
        } else {
            &[]
        };
        let len = 20 + opts.len() as u32;
        self.out.write_all(&1u32.to_le_bytes())?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&linktype.to_le_bytes())?;
        self.out.write_all(&0u16.to_le_bytes())?;
        self.out.write_all(&snaplen.to_le_bytes())?;
        self.out.write_all(opts)?;
        self.out.write_all(&len.to_le_bytes())
    }

    /// An enhanced packet block; `ts` in the interface's units.
    pub fn packet(&mut self, interface: u32, ts: u64, data: &[u8], origlen: u32) -> io::Result<()> {
        let pad = pad4(data.len());
        let len = 32 + data.len() as u32 + pad as u32;
        self.out.write_all(&6u32.to_le_bytes())?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&interface.to_le_bytes())?;
        self.out.write_all(&((ts >> 32) as u32).to_le_bytes())?;
        self.out.write_all(&(ts as u32).to_le_bytes())?;
        self.out.write_all(&(data.len() as u32).to_le_bytes())?;
        self.out
            .write_all(&origlen.max(data.len() as u32).to_le_bytes())?;
        self.out.write_all(data)?;
        self.out.write_all(&[0u8; 3][..pad])?;
        self.out.write_all(&len.to_le_bytes())
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}
