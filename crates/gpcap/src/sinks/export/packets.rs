//! The `packets` table's rows: one per game datagram and reassembled packet, with its
//! flow, verdict, sequence and acks, and the datagram's header and fragment header as
//! struct columns (from the field tree, or the leaf log where it holds the header).

use super::children::Key;
use super::columns::{Refill, TypeColumns};
use super::logged::LogRows;
use arrow_array::ArrayRef;
use arrow_array::builder::*;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use gpcap_dissect::{Dissection, LeafLog, Program, program::Block};
use gpcap_engine::{Kind, PacketEvent};
use std::sync::Arc;

/// A datagram's header or fragment header, every field of it, as one struct column.
pub(super) struct HeaderColumns {
    pub(super) columns: TypeColumns,
    valid: Vec<bool>,
    /// Its rows from the leaf log (None: from the tree only).
    log: Option<LogRows>,
}

impl HeaderColumns {
    /// The columns of block `b`, or None when it has no field to export.
    pub(super) fn new(p: &Program, b: Block) -> Option<HeaderColumns> {
        let mut columns = TypeColumns::new(p, b, None);
        columns.rename(&[]);
        (!columns.schema_fields().is_empty()).then(|| HeaderColumns {
            log: LogRows::header(p, &columns, b),
            columns,
            valid: Vec::new(),
        })
    }

    fn data_type(&self) -> DataType {
        DataType::Struct(self.columns.schema_fields().into())
    }

    /// The fields of `d` (null when the row has none of this block); `end` its subtree
    /// ends.
    pub(super) fn append(
        &mut self,
        d: Option<&Dissection>,
        end: &[u32],
        payload: &[u8],
        empty: &Dissection,
        key: &mut Key,
    ) {
        match d {
            Some(d) => self.columns.append_tree(d, end, payload, key),
            None => self.columns.append_tree(empty, &[], payload, key),
        }
        self.valid.push(d.is_some());
    }

    pub(super) fn finish(&mut self) -> ArrayRef {
        let fields: arrow_schema::Fields = self.columns.schema_fields().into();
        let (len, nulls) = super::columns::nulls_of(&mut self.valid);
        match arrow_array::StructArray::try_new(fields.clone(), self.columns.finish(), nulls) {
            Ok(a) => Arc::new(a),
            // Every column gets one value per row: unreachable.
            Err(_) => arrow_array::new_null_array(&DataType::Struct(fields), len),
        }
    }
}

/// The `packets` table: one row per game datagram and per reassembled packet.
pub(super) struct Packets {
    frame: UInt64Builder,
    row: StringBuilder,
    ts: TimestampMicrosecondBuilder,
    ts_ns: Int64Builder,
    src_ip: StringBuilder,
    src_port: UInt16Builder,
    dst_ip: StringBuilder,
    dst_port: UInt16Builder,
    size: UInt32Builder,
    wire_len: UInt32Builder,
    ip_fragments: UInt32Builder,
    over_budget: BooleanBuilder,
    status: StringBuilder,
    crc_ok: BooleanBuilder,
    fault_kind: StringBuilder,
    fault_field: StringBuilder,
    fault_bit: UInt64Builder,
    sequence: UInt64Builder,
    type_id: UInt32Builder,
    type_name: StringBuilder,
    fragment_id: UInt32Builder,
    fragment_count: UInt32Builder,
    opens: BooleanBuilder,
    completes: UInt32Builder,
    fragment_frames: ListBuilder<UInt64Builder>,
    ack: UInt32Builder,
    ack_bits: UInt32Builder,
    /// Every field of the datagram's header, and of a fragment's fragment header.
    pub(super) header: Option<HeaderColumns>,
    pub(super) fragment_header: Option<HeaderColumns>,
    /// A dissection with no fields: what a row without one appends.
    empty: Dissection,
    pub(super) rows: usize,
    pub(super) acks: bool,
}

impl Packets {
    pub(super) fn new(acks: bool, program: Option<&Program>) -> Self {
        Packets {
            frame: Default::default(),
            row: Default::default(),
            ts: TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            ts_ns: Default::default(),
            src_ip: Default::default(),
            src_port: Default::default(),
            dst_ip: Default::default(),
            dst_port: Default::default(),
            size: Default::default(),
            wire_len: Default::default(),
            ip_fragments: Default::default(),
            over_budget: Default::default(),
            status: Default::default(),
            crc_ok: Default::default(),
            fault_kind: Default::default(),
            fault_field: Default::default(),
            fault_bit: Default::default(),
            sequence: Default::default(),
            type_id: Default::default(),
            type_name: Default::default(),
            fragment_id: Default::default(),
            fragment_count: Default::default(),
            opens: Default::default(),
            completes: Default::default(),
            fragment_frames: ListBuilder::new(UInt64Builder::new()),
            ack: Default::default(),
            ack_bits: Default::default(),
            header: program.and_then(|p| HeaderColumns::new(p, p.header)),
            fragment_header: program.and_then(|p| HeaderColumns::new(p, p.fragment?)),
            empty: Dissection::default(),
            rows: 0,
            acks,
        }
    }

    /// The table's schema: [`Packets::schema`] and the header columns.
    pub(super) fn full_schema(&self) -> Schema {
        let mut f: Vec<Field> = Packets::schema(self.acks)
            .fields()
            .iter()
            .map(|f| (**f).clone())
            .collect();
        if let Some(h) = &self.header {
            f.push(Field::new("header", h.data_type(), true));
        }
        if let Some(h) = &self.fragment_header {
            f.push(Field::new("fragment_header", h.data_type(), true));
        }
        Schema::new(f)
    }

    pub(super) fn schema(acks: bool) -> Schema {
        let mut f = vec![
            Field::new("frame", DataType::UInt64, false),
            Field::new("row", DataType::Utf8, false),
            // Microseconds, UTC: a timestamp DuckDB (TIMESTAMPTZ), Spark (TimestampType) and
            // ClickHouse (DateTime64(6)) truncate and bucket as it is; `ts_ns` keeps the
            // capture's nanoseconds exactly.
            Field::new(
                "ts",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                false,
            ),
            Field::new("ts_ns", DataType::Int64, false),
            Field::new("src_ip", DataType::Utf8, true),
            Field::new("src_port", DataType::UInt16, true),
            Field::new("dst_ip", DataType::Utf8, true),
            Field::new("dst_port", DataType::UInt16, true),
            Field::new("size", DataType::UInt32, false),
            Field::new("wire_len", DataType::UInt32, false),
            Field::new("ip_fragments", DataType::UInt32, false),
            Field::new("over_budget", DataType::Boolean, false),
            Field::new("status", DataType::Utf8, false),
            Field::new("crc_ok", DataType::Boolean, true),
            Field::new("fault_kind", DataType::Utf8, true),
            Field::new("fault_field", DataType::Utf8, true),
            Field::new("fault_bit", DataType::UInt64, true),
            Field::new("sequence", DataType::UInt64, true),
            Field::new("type_id", DataType::UInt32, true),
            Field::new("type_name", DataType::Utf8, true),
            Field::new("fragment_id", DataType::UInt32, true),
            Field::new("fragment_count", DataType::UInt32, true),
            Field::new("opens", DataType::Boolean, false),
            Field::new("completes", DataType::UInt32, true),
            Field::new(
                "fragment_frames",
                DataType::List(Arc::new(Field::new("item", DataType::UInt64, true))),
                true,
            ),
        ];
        if acks {
            f.push(Field::new("ack", DataType::UInt32, true));
            f.push(Field::new("ack_bits", DataType::UInt32, true));
        }
        Schema::new(f)
    }

    /// Appends event `e`'s row; `end`: its dissection's subtree ends.
    pub(super) fn append(&mut self, e: &PacketEvent, program: Option<&Program>, end: &[u32], key: &mut Key) {
        self.append_event(e, program);
        // A datagram's own fields (a reassembled packet has only its body's); none for
        // one that failed its checksum (not validated: analyze counts no values of it).
        let datagram = e
            .dissection
            .filter(|_| e.kind == Kind::Game && !e.status.crc_failed());
        // Only a datagram's row has a header: (frame, row 0) keys its lists' elements.
        key.frame = e.frame;
        key.row = 0;
        if let Some(h) = &mut self.header {
            h.append(datagram, end, e.payload, &self.empty, key);
        }
        if let Some(h) = &mut self.fragment_header {
            let fragment = datagram.filter(|_| e.fragment.is_some());
            h.append(fragment, end, e.payload, &self.empty, key);
        }
    }

    /// Whether a datagram's header columns can be filled from its leaf log.
    pub(super) fn header_logs(&self) -> bool {
        self.header.as_ref().is_none_or(|h| h.log.is_some())
    }

    /// Appends game packet `e`'s row, a datagram's header from the leaf log `log` (a
    /// reassembled packet has none; what the log reads is no fragment: no fragment
    /// header). A datagram's header columns must be ones the log fills
    /// ([`Packets::header_logs`]).
    pub(super) fn append_logged(&mut self, e: &PacketEvent, program: &Program, log: &LeafLog, key: &mut Key) {
        let datagram = e.kind == Kind::Game;
        self.append_event(e, Some(program));
        key.frame = e.frame;
        key.row = 0;
        if let Some(h) = &mut self.header {
            match &mut h.log {
                Some(l) if datagram => {
                    l.append(&mut h.columns, program, log, e.payload, key, true);
                    h.valid.push(true);
                }
                _ => h.append(None, &[], e.payload, &self.empty, key),
            }
        }
        if let Some(h) = &mut self.fragment_header {
            h.append(None, &[], e.payload, &self.empty, key);
        }
    }

    /// Appends the columns of `e`'s row that are not its header's.
    fn append_event(&mut self, e: &PacketEvent, program: Option<&Program>) {
        self.frame.append_value(e.frame);
        self.row.append_value(if e.kind == Kind::Reassembled {
            "reassembled"
        } else {
            "datagram"
        });
        self.ts.append_value(e.ts_ns.div_euclid(1000));
        self.ts_ns.append_value(e.ts_ns);
        append_flow(
            [&mut self.src_ip, &mut self.dst_ip],
            [&mut self.src_port, &mut self.dst_port],
            e.flow,
        );
        self.size.append_value(e.size);
        self.wire_len.append_value(e.wire_len);
        self.ip_fragments.append_value(e.ip_fragments.max(1));
        self.over_budget.append_value(e.over_budget);
        self.status.append_value(e.status.code());
        self.crc_ok
            .append_option(e.crc.map(|c| c == gpcap_wire::validate::CrcStatus::Ok));
        let fault = e.dissection.and_then(|d| d.fault.as_ref());
        self.fault_kind.append_option(e.fault.map(|f| f.code()));
        self.fault_field.append_option(fault.map(|f| f.field.as_str()));
        self.fault_bit.append_option(fault.map(|f| f.bit));
        self.sequence.append_option(e.sequence);
        self.type_id.append_option(e.packet_type);
        self.type_name
            .append_option(e.packet_type.and_then(|t| program.and_then(|p| p.type_name(t))));
        self.fragment_id.append_option(e.fragment.map(|f| f.id));
        self.fragment_count.append_option(e.fragment.map(|f| f.count));
        self.opens.append_value(e.opens);
        self.completes.append_option(e.completes);
        if e.kind == Kind::Reassembled {
            self.fragment_frames.values().append_slice(e.fragment_frames);
            self.fragment_frames.append(true);
        } else {
            self.fragment_frames.append(false);
        }
        if self.acks {
            self.ack.append_option(e.ack);
            self.ack_bits.append_option(e.ack_bits);
        }
        self.rows += 1;
    }

    pub(super) fn finish(&mut self) -> Vec<ArrayRef> {
        self.rows = 0;
        let mut c: Vec<ArrayRef> = vec![
            Arc::new(self.frame.refill()),
            Arc::new(self.row.refill()),
            Arc::new(self.ts.refill()),
            Arc::new(self.ts_ns.refill()),
            Arc::new(self.src_ip.refill()),
            Arc::new(self.src_port.refill()),
            Arc::new(self.dst_ip.refill()),
            Arc::new(self.dst_port.refill()),
            Arc::new(self.size.refill()),
            Arc::new(self.wire_len.refill()),
            Arc::new(self.ip_fragments.refill()),
            Arc::new(self.over_budget.refill()),
            Arc::new(self.status.refill()),
            Arc::new(self.crc_ok.refill()),
            Arc::new(self.fault_kind.refill()),
            Arc::new(self.fault_field.refill()),
            Arc::new(self.fault_bit.refill()),
            Arc::new(self.sequence.refill()),
            Arc::new(self.type_id.refill()),
            Arc::new(self.type_name.refill()),
            Arc::new(self.fragment_id.refill()),
            Arc::new(self.fragment_count.refill()),
            Arc::new(self.opens.refill()),
            Arc::new(self.completes.refill()),
            Arc::new(self.fragment_frames.finish()),
        ];
        if self.acks {
            c.push(Arc::new(self.ack.refill()));
            c.push(Arc::new(self.ack_bits.refill()));
        }
        if let Some(h) = &mut self.header {
            c.push(h.finish());
        }
        if let Some(h) = &mut self.fragment_header {
            c.push(h.finish());
        }
        c
    }
}

/// Appends address `ip` as text, as `Display` writes it, without a string per packet:
/// an IPv4 address by hand (formatting it was 2% of an export's CPU), IPv6 through
/// `Display` into the column's buffer.
/// A flow's addresses and ports as the tables spell them (null without a flow).
pub(super) fn append_flow(
    [src_ip, dst_ip]: [&mut StringBuilder; 2],
    [src_port, dst_port]: [&mut UInt16Builder; 2],
    flow: Option<gpcap_engine::FlowId>,
) {
    match flow {
        Some(f) => {
            append_ip(src_ip, f.src.ip());
            append_ip(dst_ip, f.dst.ip());
        }
        None => {
            src_ip.append_null();
            dst_ip.append_null();
        }
    }
    src_port.append_option(flow.map(|f| f.src.port()));
    dst_port.append_option(flow.map(|f| f.dst.port()));
}

fn append_ip(b: &mut StringBuilder, ip: std::net::IpAddr) {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let mut buf = [0u8; 15];
            let mut n = 0;
            for (k, octet) in v4.octets().into_iter().enumerate() {
                if k > 0 {
                    buf[n] = b'.';
                    n += 1;
                }
                let digits = [octet / 100, octet / 10 % 10, octet % 10];
                let skip = if octet >= 100 {
                    0
                } else if octet >= 10 {
                    1
                } else {
                    2
                };
                for d in &digits[skip..] {
                    buf[n] = b'0' + d;
                    n += 1;
                }
            }
            // Digits and dots only: always UTF-8.
            b.append_value(std::str::from_utf8(&buf[..n]).unwrap_or_default());
        }
        std::net::IpAddr::V6(v6) => {
            use std::fmt::Write;
            let _ = write!(b, "{v6}");
            b.append_value("");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    /// Addresses read as `Display` writes them, IPv4 written by hand included.
    #[test]
    fn addresses_as_display_writes_them() {
        let ips: Vec<std::net::IpAddr> = [
            "0.0.0.0",
            "10.0.0.1",
            "192.168.100.255",
            "9.99.100.199",
            "255.255.255.255",
            "::1",
            "2001:db8::7",
            "::ffff:10.1.2.3",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
        let mut b = StringBuilder::new();
        for ip in &ips {
            append_ip(&mut b, *ip);
        }
        let a = b.finish();
        for (k, ip) in ips.iter().enumerate() {
            assert_eq!(a.value(k), ip.to_string());
        }
        assert_eq!(a.len(), ips.len());
    }
}
