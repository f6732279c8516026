//! `gpcap diff A B -o DIR`: the diff report's tables as Parquet, in a partition of their
//! own (`diff=A+B/TABLE/part-0.parquet`, docs/export.md): `diff_directions` (one row a
//! direction: its figures and the clocks'), `diff_fragments` (fragments sent and lost
//! between, by count and id) and `diff_events` (the lost, late, reordered and duplicated
//! datagrams listed). The partition is written under a staging name and swapped in
//! whole, so a diff written again replaces it at once.

use super::commit::{Staged, Staging};
use super::{ExportError, SCHEMA_VERSION, partition_value};
use crate::sinks::diff::pair::Event;
use crate::sinks::diff::report::{DiffReport, Direction};
use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt16Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::path::Path;
use std::sync::Arc;

/// A table's columns, one after the other.
#[derive(Default)]
struct Cols {
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl Cols {
    fn u64(mut self, name: &str, v: impl IntoIterator<Item = Option<u64>>) -> Self {
        self.fields.push(Field::new(name, DataType::UInt64, true));
        self.arrays.push(Arc::new(UInt64Array::from_iter(v)));
        self
    }
    fn i64(mut self, name: &str, v: impl IntoIterator<Item = Option<i64>>) -> Self {
        self.fields.push(Field::new(name, DataType::Int64, true));
        self.arrays.push(Arc::new(Int64Array::from_iter(v)));
        self
    }
    fn u16(mut self, name: &str, v: impl IntoIterator<Item = Option<u16>>) -> Self {
        self.fields.push(Field::new(name, DataType::UInt16, true));
        self.arrays.push(Arc::new(UInt16Array::from_iter(v)));
        self
    }
    fn f64(mut self, name: &str, v: impl IntoIterator<Item = Option<f64>>) -> Self {
        self.fields.push(Field::new(name, DataType::Float64, true));
        self.arrays.push(Arc::new(Float64Array::from_iter(v)));
        self
    }
    fn bool(mut self, name: &str, v: impl IntoIterator<Item = Option<bool>>) -> Self {
        self.fields.push(Field::new(name, DataType::Boolean, true));
        self.arrays.push(Arc::new(BooleanArray::from_iter(v)));
        self
    }
    fn str(mut self, name: &str, v: impl IntoIterator<Item = Option<String>>) -> Self {
        self.fields.push(Field::new(name, DataType::Utf8, true));
        self.arrays.push(Arc::new(StringArray::from_iter(v)));
        self
    }
    /// The direction's flow at both points first, on every row of `rows`.
    fn flows(self, rows: &[&Direction]) -> Self {
        let ip = |f: fn(&Direction) -> std::net::SocketAddr| -> Vec<Option<String>> {
            rows.iter().map(|d| Some(f(d).ip().to_string())).collect()
        };
        let port = |f: fn(&Direction) -> std::net::SocketAddr| -> Vec<Option<u16>> {
            rows.iter().map(|d| Some(f(d).port())).collect()
        };
        self.str("a_src_ip", ip(|d| d.a.src))
            .u16("a_src_port", port(|d| d.a.src))
            .str("a_dst_ip", ip(|d| d.a.dst))
            .u16("a_dst_port", port(|d| d.a.dst))
            .str("b_src_ip", ip(|d| d.b.src))
            .u16("b_src_port", port(|d| d.b.src))
            .str("b_dst_ip", ip(|d| d.b.dst))
            .u16("b_dst_port", port(|d| d.b.dst))
    }
}

fn directions(r: &DiffReport) -> Cols {
    let d: Vec<&Direction> = r.directions.iter().collect();
    let delay = |f: fn(&crate::sinks::diff::Delay) -> f64| -> Vec<Option<f64>> {
        d.iter().map(|x| x.delay.as_ref().map(f)).collect()
    };
    let c = &r.clock;
    Cols::default()
        .flows(&d)
        .str("paired_by", d.iter().map(|x| Some(x.pairing.to_string())))
        .str("upstream", d.iter().map(|x| Some(x.upstream.to_string())))
        .u64("sent", d.iter().map(|x| Some(x.sent)))
        .u64("arrived", d.iter().map(|x| Some(x.arrived)))
        .u64("lost", d.iter().map(|x| Some(x.lost)))
        .f64("loss", d.iter().map(|x| x.loss))
        .f64("loss_low", d.iter().map(|x| x.loss_low))
        .f64("loss_high", d.iter().map(|x| x.loss_high))
        .u64("lost_before", d.iter().map(|x| x.lost_before))
        .u64("gaps_downstream", d.iter().map(|x| x.gaps_downstream))
        .u64("duplicated", d.iter().map(|x| x.duplicated))
        .u64("duplicated_before", d.iter().map(|x| x.duplicated_before))
        .u64("reordered", d.iter().map(|x| Some(x.reordered)))
        .u64("downstream_only", d.iter().map(|x| Some(x.downstream_only)))
        .u64("not_compared", d.iter().map(|x| Some(x.not_compared)))
        .u64("damaged_downstream", d.iter().map(|x| Some(x.damaged_downstream)))
        .u64("loss_bursts", d.iter().map(|x| Some(x.bursts.runs)))
        .u64("longest_burst", d.iter().map(|x| Some(x.bursts.longest)))
        .bool(
            "delay_above_floor",
            d.iter().map(|x| x.delay.as_ref().map(|y| y.above_floor)),
        )
        .f64(
            "delay_floor_ms",
            d.iter().map(|x| x.delay.as_ref().and_then(|y| y.floor_ms)),
        )
        .f64("delay_p50_ms", delay(|y| y.p50_ms))
        .f64("delay_p90_ms", delay(|y| y.p90_ms))
        .f64("delay_p99_ms", delay(|y| y.p99_ms))
        .f64("delay_p999_ms", delay(|y| y.p999_ms))
        .f64("delay_max_ms", delay(|y| y.max_ms))
        .f64("jitter_ms", delay(|y| y.jitter_ms))
        .u64("late", d.iter().map(|x| x.delay.as_ref().map(|y| y.late)))
        .u64("spikes", d.iter().map(|x| x.delay.as_ref().map(|y| y.spikes)))
        .str(
            "delay_note",
            d.iter().map(|x| x.delay_note.as_ref().map(|n| n.to_string())),
        )
        .str("clock", d.iter().map(|_| Some(c.status.word().to_string())))
        .f64("clock_offset_ms", d.iter().map(|_| c.offset_ms))
        .f64("clock_skew_ppm", d.iter().map(|_| c.skew_ppm))
}

fn fragments(r: &DiffReport) -> Cols {
    let rows: Vec<(&Direction, &crate::sinks::diff::report::FragmentLoss)> = r
        .directions
        .iter()
        .flat_map(|d| d.fragments.iter().map(move |f| (d, f)))
        .collect();
    let dirs: Vec<&Direction> = rows.iter().map(|r| r.0).collect();
    Cols::default()
        .flows(&dirs)
        .u16("fragment_count", rows.iter().map(|r| Some(r.1.count)))
        .u16("fragment_id", rows.iter().map(|r| Some(r.1.id)))
        .u64("sent", rows.iter().map(|r| Some(r.1.sent)))
        .u64("lost", rows.iter().map(|r| Some(r.1.lost)))
}

fn events(r: &DiffReport) -> Cols {
    let mut rows: Vec<(&Direction, &'static str, &'static str, &Event)> = Vec::new();
    for d in &r.directions {
        let down = if d.upstream == "A" { "B" } else { "A" };
        let e = &d.events;
        rows.extend(e.lost.iter().map(|x| (d, "lost", d.upstream, x)));
        rows.extend(e.late.iter().map(|x| (d, "late", down, x)));
        rows.extend(e.reordered.iter().map(|x| (d, "reordered", down, x)));
        rows.extend(e.duplicated.iter().map(|x| (d, "duplicated", down, x)));
    }
    let dirs: Vec<&Direction> = rows.iter().map(|r| r.0).collect();
    Cols::default()
        .flows(&dirs)
        .str("kind", rows.iter().map(|r| Some(r.1.to_string())))
        .str("point", rows.iter().map(|r| Some(r.2.to_string())))
        .u64("frame", rows.iter().map(|r| Some(r.3.frame)))
        .i64("ts", rows.iter().map(|r| Some(r.3.ts_ns)))
        .u64("seq", rows.iter().map(|r| r.3.seq))
        .u16("fragment_id", rows.iter().map(|r| r.3.fragment.map(|f| f.0)))
        .u16("fragment_count", rows.iter().map(|r| r.3.fragment.map(|f| f.1)))
}

/// Writes the tables under `dir`; how many.
pub fn write(dir: &Path, r: &DiffReport) -> Result<usize, ExportError> {
    let file = |n: &str| {
        Path::new(n)
            .file_name()
            .map_or(n.to_string(), |f| f.to_string_lossy().into_owned())
    };
    let name = partition_value(&format!(
        "{}+{}",
        file(&r.points[0].name),
        file(&r.points[1].name)
    ));
    let tables = [
        ("diff_directions", directions(r)),
        ("diff_fragments", fragments(r)),
        ("diff_events", events(r)),
    ];
    let n = tables.len();
    // Written beside the pair's previous diff and swapped in at once, as an export is.
    let staging = Staging::new(dir, dir, &format!("diff={name}"))?;
    let mut staged = Vec::new();
    for (table, cols) in tables {
        let part = staging.dir.join(table);
        let path = part.join("part-0.parquet");
        let fail = |e: &dyn std::fmt::Display| ExportError {
            path: dir.join(format!("diff={name}")).join(table).display().to_string(),
            reason: e.to_string(),
        };
        std::fs::create_dir_all(&part).map_err(|e| fail(&e))?;
        let schema = Arc::new(Schema::new(cols.fields));
        let batch = RecordBatch::try_new(schema.clone(), cols.arrays).map_err(|e| fail(&e))?;
        let props = WriterProperties::builder()
            .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
                "gpcap.schema".into(),
                SCHEMA_VERSION.to_string(),
            )]))
            .build();
        let tmp = part.join(".part-0.parquet.tmp");
        let file = std::fs::File::create(&tmp).map_err(|e| fail(&e))?;
        let mut w = ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| fail(&e))?;
        w.write(&batch).map_err(|e| fail(&e))?;
        let file = w.into_inner().map_err(|e| fail(&e))?;
        file.sync_all().map_err(|e| fail(&e))?;
        staged.push(Staged { tmp, path });
    }
    staging.commit(&staged)?;
    Ok(n)
}
