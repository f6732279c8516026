//! The report's aggregates as small tables beside the packets: `flows` (one row per
//! flow and direction, as `analyze --json`'s `flows`), `flow_types` (per flow and packet
//! type), `reassembly` (one row per fragment count) and `mtu` (each finding).

use crate::sinks::analysis::Report;
use arrow_array::{ArrayRef, Float64Array, StringArray, UInt16Array, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

/// A table under construction: its columns, one after the other.
#[derive(Default)]
struct Cols {
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl Cols {
    fn u64(mut self, name: &str, v: impl IntoIterator<Item = u64>) -> Self {
        self.fields.push(Field::new(name, DataType::UInt64, false));
        self.arrays.push(Arc::new(UInt64Array::from_iter_values(v)));
        self
    }

    fn opt_u64(mut self, name: &str, v: impl IntoIterator<Item = Option<u64>>) -> Self {
        self.fields.push(Field::new(name, DataType::UInt64, true));
        self.arrays.push(Arc::new(UInt64Array::from_iter(v)));
        self
    }

    fn u32(mut self, name: &str, v: impl IntoIterator<Item = u32>) -> Self {
        self.fields.push(Field::new(name, DataType::UInt32, false));
        self.arrays.push(Arc::new(UInt32Array::from_iter_values(v)));
        self
    }

    fn u16(mut self, name: &str, v: impl IntoIterator<Item = u16>) -> Self {
        self.fields.push(Field::new(name, DataType::UInt16, false));
        self.arrays.push(Arc::new(UInt16Array::from_iter_values(v)));
        self
    }

    fn opt_u16(mut self, name: &str, v: impl IntoIterator<Item = Option<u16>>) -> Self {
        self.fields.push(Field::new(name, DataType::UInt16, true));
        self.arrays.push(Arc::new(UInt16Array::from_iter(v)));
        self
    }

    fn f64(mut self, name: &str, v: impl IntoIterator<Item = Option<f64>>) -> Self {
        self.fields.push(Field::new(name, DataType::Float64, true));
        self.arrays.push(Arc::new(Float64Array::from_iter(v)));
        self
    }

    fn str(mut self, name: &str, v: impl IntoIterator<Item = Option<String>>) -> Self {
        self.fields.push(Field::new(name, DataType::Utf8, true));
        self.arrays.push(Arc::new(StringArray::from_iter(v)));
        self
    }

    fn done(self, name: &'static str) -> (&'static str, SchemaRef, Vec<ArrayRef>) {
        (name, Arc::new(Schema::new(self.fields)), self.arrays)
    }
}

/// Every aggregate table of a capture's report: (table name, schema, columns).
pub fn tables(r: &Report) -> Vec<(&'static str, SchemaRef, Vec<ArrayRef>)> {
    let f = &r.flows;
    let flows = Cols::default()
        .str("src_ip", f.iter().map(|s| Some(s.src.ip().to_string())))
        .u16("src_port", f.iter().map(|s| s.src.port()))
        .str("dst_ip", f.iter().map(|s| Some(s.dst.ip().to_string())))
        .u16("dst_port", f.iter().map(|s| s.dst.port()))
        .u64("datagrams", f.iter().map(|s| s.datagrams))
        .u64("bytes", f.iter().map(|s| s.bytes))
        .f64("duration_s", f.iter().map(|s| Some(s.duration_s)))
        .u32("largest_payload", f.iter().map(|s| s.largest_payload))
        .u64("crc_ok", f.iter().map(|s| s.crc_ok))
        .u64("crc_mismatch", f.iter().map(|s| s.crc_fail))
        .u64("too_short", f.iter().map(|s| s.too_short))
        .u64("truncated", f.iter().map(|s| s.truncated))
        .u64("malformed", f.iter().map(|s| s.malformed))
        .u64("fragments", f.iter().map(|s| s.fragments))
        .u64("ip_fragmented", f.iter().map(|s| s.ip_fragmented))
        .u64("over_budget", f.iter().map(|s| s.over_budget))
        .u64("seq_received", f.iter().map(|s| s.seq.received))
        .u64("seq_lost", f.iter().map(|s| s.seq.lost))
        .u64("seq_duplicates", f.iter().map(|s| s.seq.duplicates))
        .u64("seq_late", f.iter().map(|s| s.seq.late))
        .opt_u64("seq_first", f.iter().map(|s| s.seq.first))
        .opt_u64("seq_last", f.iter().map(|s| s.seq.last))
        .done("flows");

    // Per flow and type: datagrams and reassembled packets of that type.
    let mut rows = Vec::new();
    for s in f {
        let n = s.types.len().max(s.reassembled_types.len());
        for t in 0..n {
            let d = s.types.get(t).copied().unwrap_or(0);
            let re = s.reassembled_types.get(t).copied().unwrap_or(0);
            if d + re > 0 {
                rows.push((s, t as u32, d, re));
            }
        }
    }
    let name = |t: u32| r.type_names.get(t as usize).cloned().flatten();
    let flow_types = Cols::default()
        .str("src_ip", rows.iter().map(|r| Some(r.0.src.ip().to_string())))
        .u16("src_port", rows.iter().map(|r| r.0.src.port()))
        .str("dst_ip", rows.iter().map(|r| Some(r.0.dst.ip().to_string())))
        .u16("dst_port", rows.iter().map(|r| r.0.dst.port()))
        .u32("type_id", rows.iter().map(|r| r.1))
        .str("type_name", rows.iter().map(|r| name(r.1)))
        .u64("datagrams", rows.iter().map(|r| r.2))
        .u64("reassembled", rows.iter().map(|r| r.3))
        .done("flow_types");

    let rr = &r.reassembly.rows;
    let reassembly = Cols::default()
        .u32("fragments", rr.iter().map(|c| c.fragments))
        .u64("seen", rr.iter().map(|c| c.seen))
        .u64("completed", rr.iter().map(|c| c.completed))
        .u64("lost", rr.iter().map(|c| c.lost))
        .f64("observed_loss", rr.iter().map(|c| Some(c.observed_loss)))
        .f64("predicted_loss", rr.iter().map(|c| Some(c.predicted_loss)))
        .f64("amplification", rr.iter().map(|c| c.amplification))
        .u64("bytes_wasted", rr.iter().map(|c| c.bytes_wasted))
        .done("reassembly");

    // MTU findings: IP-fragmented game datagrams and ICMP "too big" messages.
    // The flow in the four columns every other table has: null when an ICMP message's
    // quoted datagram names none.
    let m = &r.mtu;
    let mut kind = Vec::new();
    let mut frame = Vec::new();
    let mut flow = Vec::new();
    let mut len = Vec::new();
    let mut mtu = Vec::new();
    for x in &m.ip_fragmented_list {
        kind.push(Some("ip_fragmented".to_string()));
        frame.push(x.frame);
        flow.push(Some(x.flow));
        len.push(Some(x.ip_len as u64));
        mtu.push(Some(x.fragments as u64));
    }
    for x in &m.icmp {
        kind.push(Some("icmp_too_big".to_string()));
        frame.push(x.frame);
        flow.push(x.flow);
        len.push(x.quoted_ip_len.map(u64::from));
        mtu.push(Some(x.mtu as u64));
    }
    let mtu = Cols::default()
        .str("finding", kind)
        .u64("frame", frame)
        .str("src_ip", flow.iter().map(|f| f.map(|f| f.src.ip().to_string())))
        .opt_u16("src_port", flow.iter().map(|f| f.map(|f| f.src.port())))
        .str("dst_ip", flow.iter().map(|f| f.map(|f| f.dst.ip().to_string())))
        .opt_u16("dst_port", flow.iter().map(|f| f.map(|f| f.dst.port())))
        .opt_u64("ip_len", len)
        .opt_u64("value", mtu)
        .done("mtu");
    vec![flows, flow_types, reassembly, mtu]
}
