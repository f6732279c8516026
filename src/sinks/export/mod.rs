//! `gpcap export`: the engine's events as an Apache Parquet dataset that DuckDB,
//! DataFusion, Spark or ClickHouse query in place. One sink per capture, writing Hive
//! partitions (`TABLE/capture=NAME/part-0.parquet`), so captures exported anywhere, in
//! any order, form one dataset. Rows are streamed: a batch is built every
//! [`BATCH_ROWS`] rows and row groups are flushed as they fill, so memory stays bounded
//! whatever the capture's size. The layout is documented in docs/export.md
//! ([`SCHEMA_VERSION`]).

mod columns;
mod report;

use crate::analysis::Statistics;
use crate::dissect::{Dissection, Label, Program, program::Block};
use crate::engine::{FileEnd, FlowEnd, Kind, PacketEvent, Sink, Summary};
use arrow_array::builder::*;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use columns::TypeColumns;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The dataset layout's version, in every file's metadata (`gpcap.schema`).
pub const SCHEMA_VERSION: u32 = 2;
/// Rows buffered per table before they become a batch.
pub const BATCH_ROWS: usize = 8192;
/// Dissected fields buffered per type table before its rows become a batch: rows of
/// many fields (a scene of 60 objects) make batches of a bounded size, not 8192 rows of
/// them (40 MB each, four in flight per table, was most of the export's memory).
const BATCH_FIELDS: usize = 1 << 17;
/// Rows per row group, at most.
const GROUP_ROWS: usize = 128 * 1024;
/// A row group is flushed early once it holds this many bytes…
const GROUP_BYTES: usize = 16 << 20;
/// …or its share of this many, shared by the tables written at once, so that a
/// definition of many packet types stays within the same memory (at least 1 MiB each).
const GROUPS_BYTES: usize = 24 << 20;

/// Encodings by what a column holds: floats by dictionary while they have few distinct
/// values (a 10-bit quaternion part has 1024), else split by byte (BYTE_STREAM_SPLIT:
/// their exponent and high bytes compress); frame numbers and timestamps as deltas
/// (they ascend).
fn encodings(
    schema: &arrow_schema::Schema,
    mut b: parquet::file::properties::WriterPropertiesBuilder,
) -> parquet::errors::Result<parquet::file::properties::WriterPropertiesBuilder> {
    use parquet::basic::{Encoding, Type};
    let descr = parquet::arrow::ArrowSchemaConverter::new().convert(schema)?;
    for c in descr.columns() {
        let path = c.path().clone();
        let ascending = matches!(
            path.parts().first().map(String::as_str),
            Some("ts" | "frame" | "fragment_frames")
        );
        let text =
            c.logical_type_ref().is_some() || c.converted_type() != parquet::basic::ConvertedType::NONE;
        match c.physical_type() {
            // Bytes (a fragment's data, a `rest`) rarely repeat: a dictionary of them
            // was the export's largest memory (21 MB of 180) and hashed every byte.
            Type::BYTE_ARRAY if !text => {
                b = b.set_column_dictionary_enabled(path, false);
            }
            // The fallback once the dictionary is full.
            Type::FLOAT | Type::DOUBLE => b = b.set_column_encoding(path, Encoding::BYTE_STREAM_SPLIT),
            Type::INT64 | Type::INT32 if ascending => {
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
            _ => {}
        }
    }
    Ok(b)
}

/// Why an export failed: the file and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {reason}")]
pub struct ExportError {
    pub path: String,
    pub reason: String,
}

/// A table's Parquet file in its partition, written to a temporary name; the export
/// renames every table's file once all are complete ([`Export::close`]), so a failed job
/// leaves nothing that looks finished, and a dropped table removes its temporary file.
/// Encoding and compression run on a thread of the table's own, so that they overlap
/// the dissection feeding it; at most two batches wait for it (memory stays bounded).
struct Table {
    batches: Option<std::sync::mpsc::SyncSender<RecordBatch>>,
    /// Set by `close`: without it the writer leaves only its temporary file.
    complete: Arc<std::sync::atomic::AtomicBool>,
    writer: Option<std::thread::JoinHandle<Result<(), ExportError>>>,
    /// Where the file is written, and its final name.
    tmp: PathBuf,
    path: PathBuf,
    schema: SchemaRef,
}

/// A complete table file under its temporary name, renamed when every table is.
struct Staged {
    tmp: PathBuf,
    path: PathBuf,
}

impl Drop for Table {
    /// An unfinished table (an error elsewhere): its writer stops and removes its file.
    fn drop(&mut self) {
        let _ = self.wait();
    }
}

impl Table {
    fn create(
        dir: &Path,
        table: &str,
        keys: &[(String, String)],
        capture: &str,
        schema: SchemaRef,
        group_bytes: usize,
    ) -> Result<Table, ExportError> {
        let mut part = dir.join(table);
        for (k, v) in keys {
            part.push(format!("{}={}", partition_value(k), partition_value(v)));
        }
        part.push(format!("capture={}", partition_value(capture)));
        let path = part.join("part-0.parquet");
        let fail = |e: &dyn std::fmt::Display| ExportError {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        std::fs::create_dir_all(&part).map_err(|e| fail(&e))?;
        let tmp = part.join(".part-0.parquet.tmp");
        let file = File::create(&tmp).map_err(|e| fail(&e))?;
        let props = encodings(&schema, WriterProperties::builder())
            .map_err(|e| fail(&e))?
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).map_err(|e| fail(&e))?))
            .set_max_row_group_size(GROUP_ROWS)
            // A dictionary past 256 KiB falls back to plain (1 MiB a column by default: the
            // dictionaries of a row group were 10 MB of the export's memory).
            .set_dictionary_page_size_limit(256 << 10)
            .set_key_value_metadata(Some(vec![
                parquet::file::metadata::KeyValue::new("gpcap.schema".into(), SCHEMA_VERSION.to_string()),
                parquet::file::metadata::KeyValue::new("gpcap.capture".into(), capture.to_string()),
            ]))
            .build();
        let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| fail(&e))?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<RecordBatch>(2);
        let final_path = path.clone();
        let complete = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = complete.clone();
        let thread = std::thread::Builder::new()
            .name(format!("gpcap-export-{table}"))
            .spawn(move || {
                let fail = |e: &dyn std::fmt::Display| ExportError {
                    path: final_path.display().to_string(),
                    reason: e.to_string(),
                };
                let closed = (|| {
                    for batch in rx {
                        writer.write(&batch).map_err(|e| fail(&e))?;
                        if writer.in_progress_size() > group_bytes {
                            writer.flush().map_err(|e| fail(&e))?;
                        }
                    }
                    writer.close().map(drop).map_err(|e| fail(&e))
                })();
                if closed.is_err() || !done.load(std::sync::atomic::Ordering::Acquire) {
                    // Failed or abandoned (an error elsewhere): no file left behind.
                    let _ = std::fs::remove_file(&tmp);
                }
                closed
            })
            .map_err(|e| fail(&e))?;
        Ok(Table {
            batches: Some(tx),
            complete,
            writer: Some(thread),
            tmp: part.join(".part-0.parquet.tmp"),
            path,
            schema,
        })
    }

    /// A table that writes nothing (what `close` leaves in place of the one it took).
    fn placeholder() -> Table {
        Table {
            batches: None,
            complete: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            writer: None,
            tmp: PathBuf::new(),
            path: PathBuf::new(),
            schema: Arc::new(Schema::empty()),
        }
    }

    fn write(&mut self, columns: Vec<ArrayRef>) -> Result<(), ExportError> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| self.fail(&e))?;
        let sent = self.batches.as_ref().is_some_and(|tx| tx.send(batch).is_ok());
        if !sent {
            // The writer stopped: its error says why.
            return Err(self
                .wait()
                .err()
                .unwrap_or_else(|| self.fail(&"the writer stopped")));
        }
        Ok(())
    }

    /// Ends the file: the writer drains what is queued and closes it, still under its
    /// temporary name.
    fn close(mut self) -> Result<Staged, ExportError> {
        self.complete.store(true, std::sync::atomic::Ordering::Release);
        self.wait()?;
        Ok(Staged {
            tmp: self.tmp.clone(),
            path: self.path.clone(),
        })
    }

    fn wait(&mut self) -> Result<(), ExportError> {
        self.batches = None;
        match self.writer.take() {
            Some(t) => t.join().map_err(|_| self.fail(&"the writer thread failed"))?,
            None => Ok(()),
        }
    }

    fn fail(&self, e: &dyn std::fmt::Display) -> ExportError {
        ExportError {
            path: self.path.display().to_string(),
            reason: e.to_string(),
        }
    }
}

/// Longest directory name written (file systems take 255 bytes).
const MAX_NAME: usize = 255;

/// Refuses, before anything is written, partitions and names the dataset could not
/// hold or the engines would misread: a key given twice (`day=1/day=2`) or named like a
/// column, a value `.`, `..` or the Hive engines' null (`__HIVE_DEFAULT_PARTITION__`),
/// and directory names past [`MAX_NAME`] bytes once encoded (a long value, capture or
/// packet type name).
fn check_names(
    dir: &Path,
    keys: &[(String, String)],
    capture: &str,
    program: Option<&Program>,
) -> Result<(), ExportError> {
    let refuse = |reason: String| ExportError {
        path: dir.display().to_string(),
        reason,
    };
    let mut columns: std::collections::HashSet<String> =
        ["frame", "reassembled", "capture", "header", "fragment_header"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    columns.extend(
        Packets::schema(true)
            .fields()
            .iter()
            .map(|f| f.name().to_lowercase()),
    );
    for (_, schema, _) in report::tables(&crate::analysis::Report::default()) {
        columns.extend(schema.fields().iter().map(|f| f.name().to_lowercase()));
    }
    let mut seen = std::collections::HashSet::new();
    for (k, v) in keys {
        if !seen.insert(k.to_lowercase()) {
            return Err(refuse(format!(
                "--partition {k}={v}: the key `{k}` is given twice"
            )));
        }
        if columns.contains(&k.to_lowercase()) {
            return Err(refuse(format!(
                "--partition {k}={v}: `{k}` is a column of the dataset's tables; choose another key"
            )));
        }
        if matches!(v.as_str(), "." | "..") || v.eq_ignore_ascii_case("__HIVE_DEFAULT_PARTITION__") {
            return Err(refuse(format!(
                "--partition {k}={v}: `{v}` is not a value the engines read back as written"
            )));
        }
        let name = format!("{}={}", partition_value(k), partition_value(v));
        if name.len() > MAX_NAME {
            return Err(refuse(format!(
                "--partition {k}=…: the value is {} bytes as a directory name, over {MAX_NAME}",
                name.len()
            )));
        }
    }
    let name = format!("capture={}", partition_value(capture));
    if name.len() > MAX_NAME {
        return Err(refuse(format!(
            "the capture's name is {} bytes as a directory name, over {MAX_NAME}: rename it",
            name.len()
        )));
    }
    for d in program.iter().flat_map(|p| &p.packets) {
        let name = format!("type_{}", partition_value(&d.name));
        if name.len() > MAX_NAME {
            return Err(refuse(format!(
                "packet type {} is named in {} bytes as a table directory, over {MAX_NAME}: shorten its name",
                d.type_id,
                name.len()
            )));
        }
    }
    Ok(())
}

/// A Hive partition value: the capture's file name, with what a path or the engines
/// would misread percent-encoded.
pub fn partition_value(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || "-_.+@".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    if out.is_empty() || out.starts_with('.') {
        out.insert(0, '_');
    }
    out
}

/// A datagram's header or fragment header, every field of it, as one struct column.
struct HeaderColumns {
    columns: TypeColumns,
    valid: Vec<bool>,
}

impl HeaderColumns {
    /// The columns of block `b`, or None when it has no field to export.
    fn new(p: &Program, b: Block) -> Option<HeaderColumns> {
        let mut columns = TypeColumns::new(p, b);
        columns.rename(&[]);
        (!columns.schema_fields().is_empty()).then(|| HeaderColumns {
            columns,
            valid: Vec::new(),
        })
    }

    fn data_type(&self) -> DataType {
        DataType::Struct(self.columns.schema_fields().into())
    }

    /// The fields of `d` (null when the row has none of this block); `end` its subtree
    /// ends.
    fn append(&mut self, d: Option<&Dissection>, end: &[u32], payload: &[u8], empty: &Dissection) {
        match d {
            Some(d) => self.columns.append_tree(d, end, payload),
            None => self.columns.append_tree(empty, &[], payload),
        }
        self.valid.push(d.is_some());
    }

    fn finish(&mut self) -> ArrayRef {
        let fields: arrow_schema::Fields = self.columns.schema_fields().into();
        let nulls = arrow_buffer::NullBuffer::from(std::mem::take(&mut self.valid));
        let len = nulls.len();
        match arrow_array::StructArray::try_new(fields.clone(), self.columns.finish(), Some(nulls)) {
            Ok(a) => Arc::new(a),
            // Every column gets one value per row: unreachable.
            Err(_) => arrow_array::new_null_array(&DataType::Struct(fields), len),
        }
    }
}

/// The `packets` table: one row per game datagram and per reassembled packet.
struct Packets {
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
    ack: UInt16Builder,
    ack_bits: UInt32Builder,
    /// Every field of the datagram's header, and of a fragment's fragment header.
    header: Option<HeaderColumns>,
    fragment_header: Option<HeaderColumns>,
    /// A dissection with no fields: what a row without one appends.
    empty: Dissection,
    rows: usize,
    acks: bool,
}

impl Packets {
    fn new(acks: bool, program: Option<&Program>) -> Self {
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
    fn full_schema(&self) -> Schema {
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

    fn schema(acks: bool) -> Schema {
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
            f.push(Field::new("ack", DataType::UInt16, true));
            f.push(Field::new("ack_bits", DataType::UInt32, true));
        }
        Schema::new(f)
    }

    /// Appends event `e`'s row; `end`: its dissection's subtree ends.
    fn append(&mut self, e: &PacketEvent, program: Option<&Program>, end: &[u32]) {
        self.frame.append_value(e.frame);
        self.row.append_value(if e.kind == Kind::Reassembled {
            "reassembled"
        } else {
            "datagram"
        });
        self.ts.append_value(e.ts_ns.div_euclid(1000));
        self.ts_ns.append_value(e.ts_ns);
        match e.flow {
            Some(f) => {
                // Written into the column's buffer: no string per packet.
                use std::fmt::Write;
                let _ = write!(self.src_ip, "{}", f.src.ip());
                self.src_ip.append_value("");
                let _ = write!(self.dst_ip, "{}", f.dst.ip());
                self.dst_ip.append_value("");
            }
            None => {
                self.src_ip.append_null();
                self.dst_ip.append_null();
            }
        }
        self.src_port.append_option(e.flow.map(|f| f.src.port()));
        self.dst_port.append_option(e.flow.map(|f| f.dst.port()));
        self.size.append_value(e.size);
        self.wire_len.append_value(e.wire_len);
        self.ip_fragments.append_value(e.ip_fragments.max(1));
        self.over_budget.append_value(e.over_budget);
        self.status.append_value(e.status.code());
        self.crc_ok
            .append_option(e.crc.map(|c| c == crate::validate::CrcStatus::Ok));
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
        // A datagram's own fields (a reassembled packet has only its body's); none for
        // one that failed its checksum (not validated: analyze counts no values of it).
        let datagram = e
            .dissection
            .filter(|_| e.kind == Kind::Game && !e.status.crc_failed());
        if let Some(h) = &mut self.header {
            h.append(datagram, end, e.payload, &self.empty);
        }
        if let Some(h) = &mut self.fragment_header {
            let fragment = datagram.filter(|_| e.fragment.is_some());
            h.append(fragment, end, e.payload, &self.empty);
        }
        self.rows += 1;
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.rows = 0;
        let mut c: Vec<ArrayRef> = vec![
            Arc::new(self.frame.finish()),
            Arc::new(self.row.finish()),
            Arc::new(self.ts.finish()),
            Arc::new(self.ts_ns.finish()),
            Arc::new(self.src_ip.finish()),
            Arc::new(self.src_port.finish()),
            Arc::new(self.dst_ip.finish()),
            Arc::new(self.dst_port.finish()),
            Arc::new(self.size.finish()),
            Arc::new(self.wire_len.finish()),
            Arc::new(self.ip_fragments.finish()),
            Arc::new(self.over_budget.finish()),
            Arc::new(self.status.finish()),
            Arc::new(self.crc_ok.finish()),
            Arc::new(self.fault_kind.finish()),
            Arc::new(self.fault_field.finish()),
            Arc::new(self.fault_bit.finish()),
            Arc::new(self.sequence.finish()),
            Arc::new(self.type_id.finish()),
            Arc::new(self.type_name.finish()),
            Arc::new(self.fragment_id.finish()),
            Arc::new(self.fragment_count.finish()),
            Arc::new(self.opens.finish()),
            Arc::new(self.completes.finish()),
            Arc::new(self.fragment_frames.finish()),
        ];
        if self.acks {
            c.push(Arc::new(self.ack.finish()));
            c.push(Arc::new(self.ack_bits.finish()));
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

/// One packet type's table: its columns and file.
struct TypeTable {
    columns: TypeColumns,
    /// Key columns: frame and whether the row is a reassembled packet.
    frame: UInt64Builder,
    reassembled: BooleanBuilder,
    /// Fields of the buffered rows.
    fields: usize,
    table: Table,
}

/// What an export wrote: the capture's report and the rows of each streamed table.
pub struct Exported {
    pub report: crate::analysis::Report,
    pub rows: std::collections::BTreeMap<String, u64>,
}

/// The export sink of one capture. Statistics run beside it for the report's tables.
pub struct Export {
    dir: PathBuf,
    keys: Vec<(String, String)>,
    capture: String,
    program: Option<Arc<Program>>,
    packets: Packets,
    packets_table: Table,
    types: Vec<Option<TypeTable>>,
    stats: Statistics,
    /// The first write that failed: the export stops there and says so.
    pub error: Option<ExportError>,
    rows: std::collections::BTreeMap<String, u64>,
    /// The current packet's subtree ends (reused).
    end: Vec<u32>,
    /// `export --bits`: the bandwidth profile, written as the table `field_bits`.
    pub bandwidth: Option<crate::sinks::bandwidth::Bandwidth>,
}

impl Export {
    /// An export of capture `capture` (its file name) into dataset `dir`, under the
    /// Hive partitions `keys` (`day=2026-11-22/map=dust/`) before `capture=`.
    pub fn new(
        dir: &Path,
        keys: &[(String, String)],
        capture: &str,
        cfg: crate::engine::Config,
    ) -> Result<Export, ExportError> {
        let program = cfg.program.clone();
        check_names(dir, keys, capture, program.as_deref())?;
        let acks = program.as_ref().is_some_and(|p| {
            p.has_role(crate::dissect::Role::Ack) || p.has_role(crate::dissect::Role::AckBits)
        });
        let packets = Packets::new(acks, program.as_deref());
        // Every streamed table (packets and one per type) shares the row groups' budget.
        let streamed = 1 + program.as_ref().map_or(0, |p| p.packets.len());
        let group_bytes = (GROUPS_BYTES / streamed).clamp(1 << 20, GROUP_BYTES);
        let packets_table = Table::create(
            dir,
            "packets",
            keys,
            capture,
            Arc::new(packets.full_schema()),
            group_bytes,
        )?;
        let mut types = Vec::new();
        if let Some(p) = &program {
            for def in &p.packets {
                let mut columns = TypeColumns::new(p, def.body);
                let mut reserved = vec!["frame", "reassembled", "capture"];
                reserved.extend(keys.iter().map(|(k, _)| k.as_str()));
                columns.rename(&reserved);
                let mut fields = vec![
                    Field::new("frame", DataType::UInt64, false),
                    Field::new("reassembled", DataType::Boolean, false),
                ];
                fields.extend(columns.schema_fields());
                let name = format!("type_{}", partition_value(&def.name));
                let table = Table::create(
                    dir,
                    &name,
                    keys,
                    capture,
                    Arc::new(Schema::new(fields)),
                    group_bytes,
                )?;
                let at = def.type_id as usize;
                if types.len() <= at {
                    types.resize_with(at + 1, || None);
                }
                types[at] = Some(TypeTable {
                    columns,
                    frame: UInt64Builder::new(),
                    reassembled: BooleanBuilder::new(),
                    fields: 0,
                    table,
                });
            }
        }
        Ok(Export {
            dir: dir.to_path_buf(),
            keys: keys.to_vec(),
            capture: capture.to_string(),
            packets,
            packets_table,
            types,
            stats: Statistics::new(cfg),
            program,
            error: None,
            rows: Default::default(),
            end: Vec::new(),
            bandwidth: None,
        })
    }

    fn count(&mut self, table: &str, n: usize) {
        *self.rows.entry(table.to_string()).or_default() += n as u64;
    }

    fn flush_packets(&mut self) {
        let n = self.packets.rows;
        if n == 0 || self.error.is_some() {
            return;
        }
        let cols = self.packets.finish();
        if let Err(e) = self.packets_table.write(cols) {
            self.error = Some(e);
        }
        self.count("packets", n);
    }

    fn flush_type(&mut self, t: usize) {
        let Some(Some(tt)) = self.types.get_mut(t) else {
            return;
        };
        let n = tt.columns.rows;
        if n == 0 {
            return;
        }
        tt.fields = 0;
        let mut cols: Vec<ArrayRef> = vec![Arc::new(tt.frame.finish()), Arc::new(tt.reassembled.finish())];
        cols.extend(tt.columns.finish());
        if let Err(e) = tt.table.write(cols) {
            self.error.get_or_insert(e);
        }
        let table = self
            .program
            .as_ref()
            .and_then(|p| p.type_name(t as u32))
            .map(|n| format!("type_{}", partition_value(n)))
            .unwrap_or_default();
        self.count(&table, n);
    }

    /// Writes what is buffered, the report's tables, and closes every file. The
    /// capture's report is returned for the caller's summary.
    pub fn close(mut self) -> Result<Exported, ExportError> {
        self.flush_packets();
        for t in 0..self.types.len() {
            self.flush_type(t);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut report = self.stats.report();
        report.bandwidth = self.bandwidth.take().map(|b| b.report());
        let mut staged = Vec::new();
        let outcome = (|| {
            let packets = std::mem::replace(&mut self.packets_table, Table::placeholder());
            staged.push(packets.close()?);
            for tt in std::mem::take(&mut self.types).into_iter().flatten() {
                staged.push(tt.table.close()?);
            }
            let field_bits = report
                .bandwidth
                .as_ref()
                .map(crate::sinks::bandwidth::parquet::table);
            for (name, schema, columns) in report::tables(&report).into_iter().chain(field_bits) {
                let mut t = Table::create(&self.dir, name, &self.keys, &self.capture, schema, GROUP_BYTES)?;
                t.write(columns)?;
                staged.push(t.close()?);
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            for s in &staged {
                let _ = std::fs::remove_file(&s.tmp);
            }
            return Err(e);
        }
        replace_partitions(&self.dir, &self.keys, &self.capture, &staged)?;
        Ok(Exported {
            report,
            rows: std::mem::take(&mut self.rows),
        })
    }
}

/// Commits an export: this capture's partition of every table not written now (a packet
/// type since renamed or removed) is removed, then every file is renamed to its final
/// name, so "a capture exported again replaces its partition" holds for every table.
fn replace_partitions(
    dir: &Path,
    keys: &[(String, String)],
    capture: &str,
    staged: &[Staged],
) -> Result<(), ExportError> {
    let written: std::collections::HashSet<&Path> = staged.iter().filter_map(|s| s.path.parent()).collect();
    let mut partition = PathBuf::new();
    for (k, v) in keys {
        partition.push(format!("{}={}", partition_value(k), partition_value(v)));
    }
    partition.push(format!("capture={}", partition_value(capture)));
    for table in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let part = table.path().join(&partition);
        if written.contains(part.as_path()) {
            continue;
        }
        if std::fs::remove_file(part.join("part-0.parquet")).is_ok() {
            let _ = std::fs::remove_dir(&part);
        }
    }
    for (i, s) in staged.iter().enumerate() {
        if let Err(e) = std::fs::rename(&s.tmp, &s.path) {
            for later in &staged[i..] {
                let _ = std::fs::remove_file(&later.tmp);
            }
            return Err(ExportError {
                path: s.path.display().to_string(),
                reason: e.to_string(),
            });
        }
    }
    Ok(())
}

impl Export {
    /// One row per message of a datagram, in its message type's table (in datagram
    /// order: `frame` and the row's place tell the messages of a frame apart).
    fn message_rows(&mut self, e: &PacketEvent<'_>, d: &Dissection) {
        let Some(node) = self.program.as_deref().and_then(|p| p.messages) else {
            return;
        };
        let n = d.fields.len() as u32;
        let Some(list) = (0..n).find(|&i| matches!(d.fields[i as usize].label, Label::Node(x) if x == node))
        else {
            return;
        };
        let stop = self.end.get(list as usize).copied().unwrap_or(n);
        let mut at = list + 1;
        let mut k = 0;
        while at < stop {
            let next = self.end.get(at as usize).copied().unwrap_or(stop).max(at + 1);
            let ty = e.messages.get(k).and_then(|m| m.type_id);
            k += 1;
            if let Some(t) = ty
                && let Some(Some(tt)) = self.types.get_mut(t as usize)
            {
                tt.frame.append_value(e.frame);
                tt.reassembled.append_value(false);
                tt.columns.append_range(d, &self.end, e.payload, at + 1, next);
                tt.fields += (next - at) as usize;
                if tt.columns.rows >= BATCH_ROWS || tt.fields >= BATCH_FIELDS {
                    self.flush_type(t as usize);
                }
            }
            at = next;
        }
    }
}

impl Sink for Export {
    fn begin_file(&mut self, file: u32, name: &str) {
        self.stats.begin_file(file, name);
    }

    fn packet(&mut self, e: &PacketEvent<'_>) {
        self.stats.packet(e);
        if let Some(b) = &mut self.bandwidth {
            b.packet(e);
        }
        if !e.is_game() || self.error.is_some() {
            return;
        }
        // The tree's shape, once for every table the packet fills.
        match e.dissection {
            Some(d) => d.subtree_ends(&mut self.end),
            None => self.end.clear(),
        }
        self.packets.append(e, self.program.as_deref(), &self.end);
        if self.packets.rows >= BATCH_ROWS {
            self.flush_packets();
        }
        let (Some(t), Some(d)) = (e.packet_type, e.dissection) else {
            return;
        };
        if e.fragment.is_some() {
            return;
        }
        if !e.messages.is_empty() {
            self.message_rows(e, d);
        }
        let Some(Some(tt)) = self.types.get_mut(t as usize) else {
            return;
        };
        tt.frame.append_value(e.frame);
        tt.reassembled.append_value(e.kind == Kind::Reassembled);
        tt.columns.append_tree(d, &self.end, e.payload);
        tt.fields += d.fields.len();
        if tt.columns.rows >= BATCH_ROWS || tt.fields >= BATCH_FIELDS {
            self.flush_type(t as usize);
        }
    }

    fn end_file(&mut self, file: u32, end: &FileEnd) {
        self.stats.end_file(file, end);
    }

    fn flow_end(&mut self, end: &FlowEnd) {
        self.stats.flow_end(end);
    }

    fn finish(&mut self, summary: &Summary) {
        self.stats.finish(summary);
    }
}
