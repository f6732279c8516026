//! The profile as the Parquet table `field_bits` of `export --bits`: one row per row of
//! `analyze --bits` (docs/export.md), the estimates flattened into columns.

use super::BandwidthReport;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

/// `field_bits`: (table name, schema, columns).
pub fn table(b: &BandwidthReport) -> (&'static str, SchemaRef, Vec<ArrayRef>) {
    let r = &b.rows;
    let e = |f: fn(&super::report::Estimate) -> Option<f64>| -> ArrayRef {
        Arc::new(Float64Array::from_iter(
            r.iter().map(|x| x.estimate.as_ref().and_then(f)),
        ))
    };
    let text = |f: fn(&super::Row) -> Option<String>| -> ArrayRef {
        Arc::new(StringArray::from_iter(r.iter().map(f)))
    };
    let count =
        |f: fn(&super::Row) -> u64| -> ArrayRef { Arc::new(UInt64Array::from_iter_values(r.iter().map(f))) };
    let columns: Vec<(&str, DataType, ArrayRef)> = vec![
        (
            "direction",
            DataType::Utf8,
            text(|x| Some(x.direction.to_string())),
        ),
        ("packet_type", DataType::Utf8, text(|x| x.packet_type.clone())),
        ("message_type", DataType::Utf8, text(|x| x.message_type.clone())),
        ("path", DataType::Utf8, text(|x| Some(x.path.clone()))),
        ("category", DataType::Utf8, text(|x| Some(x.category.to_string()))),
        ("occurrences", DataType::UInt64, count(|x| x.occurrences)),
        ("packets", DataType::UInt64, count(|x| x.packets)),
        ("bits", DataType::UInt64, count(|x| x.bits)),
        ("declared_bits", DataType::UInt64, count(|x| x.declared_bits)),
        (
            "mean_bits_per_packet",
            DataType::Float64,
            Arc::new(Float64Array::from_iter_values(
                r.iter().map(|x| x.mean_bits_per_packet),
            )),
        ),
        (
            "share_of_type",
            DataType::Float64,
            Arc::new(Float64Array::from_iter(r.iter().map(|x| x.share_of_type))),
        ),
        (
            "share_of_wire",
            DataType::Float64,
            Arc::new(Float64Array::from_iter_values(r.iter().map(|x| x.share_of_wire))),
        ),
        (
            "bits_per_s",
            DataType::Float64,
            Arc::new(Float64Array::from_iter(r.iter().map(|x| x.bits_per_s))),
        ),
        ("min", DataType::Float64, e(|x| x.min)),
        ("max", DataType::Float64, e(|x| x.max)),
        (
            "range_bits",
            DataType::UInt32,
            Arc::new(UInt32Array::from_iter(
                r.iter().map(|x| x.estimate.as_ref().and_then(|e| e.range_bits)),
            )),
        ),
        (
            "constant",
            DataType::Boolean,
            Arc::new(BooleanArray::from_iter(
                r.iter().map(|x| x.estimate.as_ref().map(|e| e.constant)),
            )),
        ),
        ("entropy_bits", DataType::Float64, e(|x| x.entropy_bits)),
        (
            "delta_bits",
            DataType::Float64,
            e(|x| x.delta.as_ref().map(|d| d.bits as f64)),
        ),
        (
            "delta_samples",
            DataType::Float64,
            e(|x| x.delta.as_ref().map(|d| d.samples as f64)),
        ),
        ("resolution", DataType::Float64, e(|x| x.resolution)),
    ];
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, t, _)| Field::new(*n, t.clone(), true))
        .collect();
    (
        "field_bits",
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|c| c.2).collect(),
    )
}
