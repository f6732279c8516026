//! `gpcap export`: the engine's events as an Apache Parquet dataset that DuckDB,
//! DataFusion, Spark or ClickHouse query in place. One sink per capture, writing Hive
//! partitions (`TABLE/capture=NAME/part-N.parquet`), so captures exported anywhere, in
//! any order, form one dataset. Rows are streamed: a batch is built every
//! [`BATCH_ROWS`] rows and row groups are flushed as they fill, so memory stays bounded
//! whatever the capture's size. The layout is documented in docs/export.md
//! ([`SCHEMA_VERSION`]).

mod children;
mod columns;
mod commit;
pub mod diff;
mod layers;
mod logged;
mod lookup;
mod names;
mod packets;
mod parallel;
mod parts;
mod report;
mod rows;
mod streams;

use crate::sinks::analysis::Statistics;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use commit::{Staged, Staging, discard};
use gpcap_dissect::Program;
use gpcap_engine::{FileEnd, Flow, FlowEnd, Needs, PacketEvent, Sink, SinkError, Summary};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use rows::{Chunk, Rows};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use layers::layers_readable;
pub use names::partition_value;
use names::{MAX_NAME, check_names};

/// The dataset layout's version, in every file's metadata (`gpcap.schema`).
pub const SCHEMA_VERSION: u32 = 5;
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
/// Parquet compresses each page with a zstd context of its own, and a row group's
/// column chunk is at least a page: with 24 MiB among the article's 11 tables, making
/// contexts was 9% of an export's CPU (145 row groups for 2.6 M objects). 64 MiB: 17%
/// less CPU (5.0 s against 6.1 on a 107 MB capture), files 4% smaller, 86 MiB peak
/// against 70.
const GROUPS_BYTES: usize = 64 << 20;

/// Encodings by what a column holds. A dictionary only where it pays: strings (the
/// status, addresses, names) and numbers of at most [`columns::DICTIONARY_VALUES`]
/// values by the definition (an enum, an `int -100 100`); every other number plain,
/// floats split by byte (BYTE_STREAM_SPLIT: their exponent and high bytes compress),
/// frame numbers and `ts` as deltas (they ascend). Hashing each value of a velocity or
/// a quaternion part into a dictionary was an eighth of the export's CPU (10.7 s
/// against 12.4 on a 214 MB capture, 94 MiB peak against 111) for 12% smaller files.
///
/// `dictionary`: per leaf column, in order, Some(true) where the definition allows few
/// values ([`columns::TypeColumns::dictionary_leaves`]).
///
/// Statistics (min and max per column chunk, what engines prune row groups by): on every
/// column of `packets` and the report tables, and of a type's or a list's table only on
/// its key columns ([`is_key`]) with `fields_too` false. Min and max of a velocity or a
/// quaternion part prune nothing (every row group spans the range) and were 18% of
/// parquet-rs' own time writing an export's batches (1.76 s against 1.44).
fn encodings(
    schema: &arrow_schema::Schema,
    dictionary: &[Option<bool>],
    fields_too: bool,
    mut b: parquet::file::properties::WriterPropertiesBuilder,
) -> parquet::errors::Result<parquet::file::properties::WriterPropertiesBuilder> {
    use parquet::basic::{Encoding, Type};
    use parquet::file::properties::EnabledStatistics;
    let descr = parquet::arrow::ArrowSchemaConverter::new().convert(schema)?;
    if !fields_too {
        b = b.set_statistics_enabled(EnabledStatistics::None);
    }
    for (i, c) in descr.columns().iter().enumerate() {
        let path = c.path().clone();
        if !fields_too && path.parts().len() == 1 && is_key(&path.parts()[0]) {
            b = b.set_column_statistics_enabled(path.clone(), EnabledStatistics::Chunk);
        }
        let few = dictionary.get(i).copied().flatten() == Some(true);
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
            Type::BYTE_ARRAY | Type::BOOLEAN => {}
            _ if few && !ascending => {}
            Type::FLOAT | Type::DOUBLE => {
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::BYTE_STREAM_SPLIT)
            }
            Type::INT64 | Type::INT32 if ascending => {
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
            _ => b = b.set_column_dictionary_enabled(path, false),
        }
    }
    Ok(b)
}

/// Whether a type's or a list's table column is one of its keys.
fn is_key(name: &str) -> bool {
    matches!(name, "frame" | "row" | "reassembled" | "index")
        || name.ends_with("_index") && name != columns::LIST_INDEX
}

/// Tables of more leaf columns than this are written without dictionaries ([`wide`]).
const WIDE_COLUMNS: usize = 512;

/// Whether `schema` is a wide table: more than [`WIDE_COLUMNS`] leaf columns. The
/// Parquet writer keeps each column's dictionary state (about 90 KB) for the whole row
/// group, and compresses each page with a fresh zstd context whatever its size: on a
/// type of 5,000 three-bit fields, 3,600 rows took 7.9 s of CPU and 474 MB, a quarter
/// of it making zstd contexts. Without dictionaries such a table takes 4.0 s and 96 MB
/// for files as large (19 MB: zstd finds the repeats a dictionary would); with 20,000
/// fields, 232 MB where it was 1.2 GB.
fn wide(schema: &arrow_schema::Schema) -> parquet::errors::Result<bool> {
    Ok(parquet::arrow::ArrowSchemaConverter::new()
        .convert(schema)?
        .num_columns()
        > WIDE_COLUMNS)
}

/// Why an export failed (defined with the sinks, so that it exists in every build).
pub use super::ExportError;

/// A table's Parquet files in its partition ([`parts::Parts`]), written to temporary
/// names; the export renames every table's files once all are complete
/// ([`Export::close`]), so a failed job leaves nothing that looks finished, and a
/// dropped table removes its temporary files.
/// Encoding and compression run on a thread of the table's own, so that they overlap
/// the dissection feeding it; at most two batches wait for it (memory stays bounded).
struct Table {
    batches: Option<std::sync::mpsc::SyncSender<RecordBatch>>,
    /// Set by `close`: without it the writer leaves only its temporary file.
    complete: Arc<std::sync::atomic::AtomicBool>,
    /// The writer thread, which ends with the number of files written.
    writer: Option<std::thread::JoinHandle<Result<usize, ExportError>>>,
    /// The partition's directory, and its first file's final name (for errors).
    part: PathBuf,
    path: PathBuf,
    schema: SchemaRef,
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
        capture: &str,
        schema: SchemaRef,
        dictionary: &[Option<bool>],
        group_bytes: usize,
    ) -> Result<Table, ExportError> {
        let part = dir.join(table);
        let path = parts::final_name(&part, 0);
        let fail = |e: &dyn std::fmt::Display| ExportError {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        std::fs::create_dir_all(&part).map_err(|e| fail(&e))?;
        let plain = wide(&schema).map_err(|e| fail(&e))?;
        let builder = WriterProperties::builder()
            .set_dictionary_enabled(!plain)
            // Statistics per column chunk (what engines prune row groups by), not per
            // page: the page index was kept in memory for every page until the file
            // closed.
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk);
        let fields_too = !(table.starts_with("type_") || table.contains("__"));
        let props = encodings(&schema, dictionary, fields_too, builder)
            .map_err(|e| fail(&e))?
            // Level 1: level 3 cost 5% more of the export's CPU for files 1% smaller (a
            // 214 MB capture: 292 MB against 295; floats split by byte barely compress).
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(|e| fail(&e))?))
            .set_max_row_group_size(GROUP_ROWS)
            .set_offset_index_disabled(true)
            // A dictionary past 256 KiB falls back to plain (1 MiB a column by default: the
            // dictionaries of a row group were 10 MB of the export's memory).
            .set_dictionary_page_size_limit(256 << 10)
            .set_key_value_metadata(Some(vec![
                parquet::file::metadata::KeyValue::new("gpcap.schema".into(), SCHEMA_VERSION.to_string()),
                parquet::file::metadata::KeyValue::new("gpcap.capture".into(), capture.to_string()),
            ]))
            .build();
        let mut files = parts::Parts::new(&part, schema.clone(), props, group_bytes, parts::PART_GROUPS)?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<RecordBatch>(2);
        let complete = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = complete.clone();
        let thread = std::thread::Builder::new()
            .name(format!("gpcap-export-{table}"))
            .spawn(move || {
                let closed = (|| {
                    for batch in rx {
                        files.write(&batch)?;
                    }
                    files.close()
                })();
                if closed.is_err() || !done.load(std::sync::atomic::Ordering::Acquire) {
                    // Failed or abandoned (an error elsewhere): no file left behind.
                    files.remove();
                }
                closed.map(|()| files.files)
            })
            .map_err(|e| fail(&e))?;
        Ok(Table {
            batches: Some(tx),
            complete,
            writer: Some(thread),
            part,
            path,
            schema,
        })
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

    /// Ends the files: the writer drains what is queued and closes them, still under
    /// their temporary names.
    fn close(mut self) -> Result<Vec<Staged>, ExportError> {
        self.complete.store(true, std::sync::atomic::Ordering::Release);
        let files = self.wait()?;
        Ok((0..files)
            .map(|k| Staged {
                tmp: parts::temporary_name(&self.part, k),
                path: parts::final_name(&self.part, k),
            })
            .collect())
    }

    /// Waits for the writer; the number of files it wrote.
    fn wait(&mut self) -> Result<usize, ExportError> {
        self.batches = None;
        match self.writer.take() {
            Some(t) => t.join().map_err(|_| self.fail(&"the writer thread failed"))?,
            None => Ok(0),
        }
    }

    fn fail(&self, e: &dyn std::fmt::Display) -> ExportError {
        ExportError {
            path: self.path.display().to_string(),
            reason: e.to_string(),
        }
    }
}

/// What an export wrote: the capture's report and the rows of each streamed table.
pub struct Exported {
    pub report: crate::sinks::analysis::Report,
    pub rows: std::collections::BTreeMap<String, u64>,
}

/// The export sink of one capture. Statistics run beside it for the report's tables.
pub struct Export {
    dir: PathBuf,
    keys: Vec<(String, String)>,
    capture: String,
    program: Option<Arc<Program>>,
    /// The streamed tables' builders (on one core).
    rows: Rows,
    /// The streamed tables' files, indexed as [`rows::Chunk::table`], and their names.
    tables: Vec<Option<Table>>,
    names: Vec<String>,
    /// Rows written per streamed table.
    written: Vec<u64>,
    stats: Statistics,
    /// The first write that failed: the export stops there and says so.
    pub error: Option<ExportError>,
    /// `export --bits`: the bandwidth profile, written as the table `field_bits`.
    pub bandwidth: Option<crate::sinks::bandwidth::Bandwidth>,
    /// Threads building rows, when the protocol allows ([`parallel::eligible`]).
    threads: usize,
    eligible: bool,
    pool: Option<parallel::Pool>,
    /// The layers inside the protocol, each an export of its own under `layer=NAME/`.
    layers: layers::Layers,
    /// `stream_messages`, when the protocol has message streams: its rows and file.
    streams: Option<(streams::StreamRows, Table, u64)>,
    /// The capture's staging directory (the outermost export's), removed unless
    /// committed: the last field, dropped once every writer above has stopped.
    staging: Option<Staging>,
}

impl Export {
    /// An export of capture `capture` (its file name) into dataset `dir`, under the
    /// Hive partitions `keys` (`day=2026-11-22/map=dust/`) before `capture=`, on one core
    /// ([`Export::threads`] for more). Its tables are written in a staging directory
    /// and committed together by [`Export::close`].
    pub fn new(
        dir: &Path,
        keys: &[(String, String)],
        capture: &str,
        cfg: gpcap_engine::Config,
    ) -> Result<Export, ExportError> {
        let program = gpcap_engine::layers::shown_program(&cfg);
        check_names(dir, keys, capture, program.as_ref())?;
        let mut parent = dir.to_path_buf();
        for (k, v) in keys {
            parent.push(format!("{}={}", partition_value(k), partition_value(v)));
        }
        let name = format!("capture={}", partition_value(capture));
        let staging = Staging::new(dir, &parent, &name)?;
        let mut x = Export::at(&staging.dir, keys, capture, cfg)?;
        x.staging = Some(staging);
        Ok(x)
    }

    /// The export of one capture's tables in directory `dir` (the capture's, or an inner
    /// layer's inside it, its names checked by the caller), committed by the export that
    /// holds it.
    fn at(
        dir: &Path,
        keys: &[(String, String)],
        capture: &str,
        cfg: gpcap_engine::Config,
    ) -> Result<Export, ExportError> {
        // With keys, the decrypted view: its types' plaintext fields are columns.
        let program = gpcap_engine::layers::shown_program(&cfg);
        let layers = layers::Layers::new(dir, keys, capture, &cfg)?;
        let rows = Rows::new(program.clone(), keys);
        let streamed = rows.tables();
        // Every streamed table (packets and one per type) shares the row groups' budget.
        let group_bytes = (GROUPS_BYTES / streamed.len()).clamp(1 << 20, GROUP_BYTES);
        let mut tables = Vec::new();
        let mut names = Vec::new();
        for (i, name, schema, dictionary) in streamed {
            if tables.len() <= i {
                tables.resize_with(i + 1, || None);
                names.resize(i + 1, String::new());
            }
            let schema = Arc::new(schema);
            tables[i] = Some(Table::create(
                dir,
                &name,
                capture,
                schema,
                &dictionary,
                group_bytes,
            )?);
            names[i] = name;
        }
        let streams = match streams::StreamRows::new(program.as_ref()) {
            Some(r) => {
                let schema = Arc::new(streams::StreamRows::schema());
                let t = Table::create(dir, streams::TABLE, capture, schema, &[], group_bytes)?;
                Some((r, t, 0))
            }
            None => None,
        };
        Ok(Export {
            dir: dir.to_path_buf(),
            keys: keys.to_vec(),
            capture: capture.to_string(),
            rows,
            written: vec![0; tables.len()],
            tables,
            names,
            eligible: parallel::eligible(&cfg),
            stats: Statistics::new(cfg),
            program,
            error: None,
            bandwidth: None,
            threads: 1,
            pool: None,
            layers,
            streams,
            staging: None,
        })
    }

    /// The name of the layer this export holds (an inner layer's definition's name).
    fn layer_name(&self) -> &str {
        self.program.as_deref().map_or("", |p| &p.params.name)
    }

    /// Builds rows on `threads` threads (the same rows as on one core): the engine then
    /// need not record field trees ([`Export::records`]). One core for a protocol whose
    /// dissection depends on the conversation, and with `--bits`.
    pub fn threads(mut self, threads: usize) -> Export {
        self.threads = threads.max(1);
        self
    }

    /// The ack analysis' facts of this capture (`run::scans::ack_facts`, a pass of its
    /// own run first), for `stream_messages`' ack columns; without them those are null.
    pub fn acks(mut self, facts: Arc<gpcap_engine::ack_facts::AckFacts>) -> Export {
        if let Some((rows, _, _)) = &mut self.streams {
            rows.set_acks(facts);
        }
        self
    }

    /// Whether the ack analysis' facts are worth a pass before this export: its
    /// protocol acks message streams.
    pub fn wants_acks(&self) -> bool {
        streams::StreamRows::acked(self.program.as_deref())
    }

    /// Whether rows are built on worker threads.
    fn parallel(&self) -> bool {
        self.threads > 1 && self.eligible && self.bandwidth.is_none()
    }

    /// Whether the engine feeding this export must attach field trees to its events
    /// (what [`Sink::needs`] says): not when workers dissect again.
    pub fn records(&self) -> bool {
        !self.parallel()
    }

    /// Why the export cannot go on (a write or a worker failed, here or in an inner
    /// layer's export), for the run to end with; a failed pool is joined for its error.
    /// The failure stays: nothing more is written, and `close` returns it too.
    fn failure(&mut self) -> Option<ExportError> {
        if self.error.is_none()
            && self
                .pool
                .as_ref()
                .is_some_and(|p| p.failed.load(std::sync::atomic::Ordering::Relaxed))
        {
            let o = self.pool.take().map(parallel::Pool::finish);
            self.error = Some(o.and_then(|o| o.error).unwrap_or_else(|| ExportError {
                path: String::new(),
                reason: "an export worker failed".into(),
            }));
        }
        if self.error.is_none() {
            self.error = self.layers.failure();
        }
        self.error.clone()
    }

    /// Writes what is buffered, the report's tables, and closes every file, the inner
    /// layers' too, committing them together: the capture's directory is swapped in at
    /// once (`commit.rs`). The capture's report is returned for the caller's summary; a
    /// layer's tables are named `layer=NAME/TABLE` in its rows.
    pub fn close(mut self) -> Result<Exported, ExportError> {
        // Dropped last (after every writer below), it removes what is not committed.
        let Some(staging) = self.staging.take() else {
            return Err(ExportError {
                path: self.dir.display().to_string(),
                reason: "an inner layer's export is committed with its capture".into(),
            });
        };
        let mut layers = Vec::new();
        let mut staged = Vec::new();
        for x in self.layers.take() {
            let name = x.layer_name().to_string();
            match x.stage() {
                Ok((done, s)) => {
                    layers.push((name, done));
                    staged.extend(s);
                }
                Err(e) => {
                    // Its writers stop before the staging directory goes.
                    drop(self);
                    return Err(e);
                }
            }
        }
        let (mut done, s) = self.stage()?;
        staged.extend(s);
        // A commit that fails leaves the staging directory to its drop, which removes it.
        staging.commit(&staged)?;
        for (name, x) in &layers {
            for (t, n) in &x.rows {
                done.rows.insert(format!("{}/{t}", layers::dir_name(name)), *n);
            }
        }
        Ok(done)
    }

    /// Writes what is buffered and the report's tables, and closes every file under its
    /// temporary name, to be committed by [`Staging::commit`].
    fn stage(mut self) -> Result<(Exported, Vec<Staged>), ExportError> {
        if let Some(pool) = self.pool.take() {
            let o = pool.finish();
            self.tables = o.tables;
            for (w, n) in self.written.iter_mut().zip(o.rows) {
                *w += n;
            }
            if let Some(e) = o.error {
                self.error.get_or_insert(e);
            }
        }
        let (tables, written, error) = (&mut self.tables, &mut self.written, &mut self.error);
        self.rows
            .flush_all(&mut |c| write_chunk(tables, written, error, c));
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut report = self.stats.report();
        report.bandwidth = self.bandwidth.take().map(|b| b.report());
        let mut staged = Vec::new();
        let mut streamed_messages = 0;
        let outcome = (|| {
            for t in std::mem::take(&mut self.tables).into_iter().flatten() {
                staged.extend(t.close()?);
            }
            if let Some((mut rows, mut table, n)) = self.streams.take() {
                if !rows.is_empty() {
                    streamed_messages = n + rows.frame_count();
                    table.write(rows.finish())?;
                } else {
                    streamed_messages = n;
                }
                staged.extend(table.close()?);
            }
            let field_bits = report
                .bandwidth
                .as_ref()
                .map(crate::sinks::bandwidth::parquet::table);
            for (name, schema, columns) in report::tables(&report).into_iter().chain(field_bits) {
                let mut t = Table::create(&self.dir, name, &self.capture, schema, &[], GROUP_BYTES)?;
                t.write(columns)?;
                staged.extend(t.close()?);
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            discard(&staged);
            return Err(e);
        }
        let mut rows: std::collections::BTreeMap<String, u64> = self
            .names
            .iter()
            .zip(&self.written)
            .filter(|(name, n)| !name.is_empty() && **n > 0)
            .map(|(name, n)| (name.clone(), *n))
            .collect();
        if streamed_messages > 0 {
            rows.insert(streams::TABLE.to_string(), streamed_messages);
        }
        Ok((Exported { report, rows }, staged))
    }

    /// Appends game packet `e`'s rows (on one core, or handed to the workers).
    fn rows_of(&mut self, e: &PacketEvent<'_>) {
        if !e.is_game() || self.error.is_some() {
            return;
        }
        if let Some((rows, table, n)) = &mut self.streams {
            rows.add(e);
            if rows.full() {
                *n += rows.frame_count();
                if let Err(err) = table.write(rows.finish()) {
                    self.error.get_or_insert(err);
                    return;
                }
            }
        }
        if self.parallel() {
            if self.pool.is_none()
                && let Some(p) = self.program.clone()
            {
                let tables = std::mem::take(&mut self.tables);
                self.pool = Some(parallel::Pool::new(
                    p,
                    &self.keys,
                    tables,
                    &self.capture,
                    self.threads,
                ));
            }
            if let Some(pool) = &mut self.pool {
                return pool.push(e);
            }
        }
        let (tables, written, error) = (&mut self.tables, &mut self.written, &mut self.error);
        self.rows.add(e, &mut |c| write_chunk(tables, written, error, c));
    }
}

/// Writes a table's rows into its file; the first failure is kept in `error`.
fn write_chunk(tables: &mut [Option<Table>], written: &mut [u64], error: &mut Option<ExportError>, c: Chunk) {
    if error.is_some() {
        return;
    }
    let Some(Some(t)) = tables.get_mut(c.table) else {
        return;
    };
    match t.write(c.columns) {
        Ok(()) => written[c.table] += c.rows as u64,
        Err(e) => *error = Some(e),
    }
}

impl Export {
    /// One event ([`Sink::packet`]).
    fn take(&mut self, e: &PacketEvent<'_>) -> Result<(), SinkError> {
        self.stats.packet(e)?;
        if let Some(b) = &mut self.bandwidth {
            b.packet(e)?;
        }
        self.layers.packet(e);
        self.rows_of(e);
        Ok(())
    }
}

impl Sink for Export {
    fn begin_file(&mut self, file: u32, name: &str) {
        self.stats.begin_file(file, name);
    }

    /// Field trees unless workers dissect again.
    fn needs(&self) -> Needs {
        Needs {
            fields: self.records(),
            ..self.stats.needs()
        }
    }

    /// A write or a worker that failed ends the run with its error (and the export,
    /// dropped, leaves nothing behind).
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        self.take(e)?;
        match self.failure() {
            Some(e) => Err(SinkError::new(e)),
            None => Ok(Flow::Continue),
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
        self.layers.finish(summary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field, Fields, Schema};

    fn schema(leaves: usize) -> Schema {
        // Half the leaves inside a struct: nested columns count as the writer counts them.
        let inner: Fields = (0..leaves / 2)
            .map(|i| Field::new(format!("s{i}"), DataType::UInt8, true))
            .collect();
        let mut fields: Vec<Field> = (0..leaves - leaves / 2)
            .map(|i| Field::new(format!("f{i}"), DataType::UInt8, true))
            .collect();
        fields.push(Field::new("header", DataType::Struct(inner), true));
        Schema::new(fields)
    }

    /// Regression (found in review): the failure the run ended with was taken out of the
    /// export, so a `close` after it committed the capture without the failed table and
    /// said nothing. It stays: `close` fails too and commits nothing.
    #[test]
    fn a_failure_stays_and_close_commits_nothing() {
        let dir = std::env::temp_dir().join(format!("gpcap-failure-{}", std::process::id()));
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let program = gpcap_dissect::load(&root.join("dissectors/article.kdl")).unwrap();
        let cfg = gpcap_engine::Config::from_program(std::sync::Arc::new(program));
        let mut x = Export::new(&dir, &[], "c.pcap", cfg).unwrap();
        x.error = Some(ExportError {
            path: "t".into(),
            reason: "disk full".into(),
        });
        assert!(x.failure().is_some());
        assert!(x.failure().is_some(), "said once, kept");
        assert!(x.close().is_err());
        let left: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{left:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_wide_tables_go_without_dictionaries() {
        assert!(!wide(&schema(WIDE_COLUMNS)).unwrap());
        assert!(wide(&schema(WIDE_COLUMNS + 1)).unwrap());
    }
}
