//! What parquet-rs alone takes to write an export's record batches (#50's target: the
//! export's CPU against `analyze -d`'s plus this). The batches are an export's own,
//! read back from its dataset; each table is written again, on one thread, with the
//! writer settings its files record: per column the encoding (dictionary or not,
//! BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED), whether it has statistics (per column
//! chunk), the codec (zstd at export's level 1), row groups as the files have them.
//!
//! `GPCAP_EXPORT_DATASET=DIR/capture=FILE` benches that capture's tables (scripts/bench
//! gives its export of the 128-client capture); without it, an export of
//! captures/clean.pcap is made in a temporary directory.

use arrow_array::RecordBatch;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use std::path::{Path, PathBuf};

/// One table: its batches, row group by row group, and the settings to write them.
struct Table {
    name: String,
    groups: Vec<Vec<RecordBatch>>,
    props: WriterProperties,
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// The settings a file was written with, from its own metadata.
fn settings(meta: &parquet::file::metadata::ParquetMetaData) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level")))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_offset_index_disabled(true)
        .set_dictionary_page_size_limit(256 << 10)
        .set_max_row_group_size(usize::MAX);
    if let Some(g) = meta.row_groups().first() {
        for c in g.columns() {
            let path = c.column_path().clone();
            let dictionary = c
                .encodings()
                .any(|e| matches!(e, Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY));
            b = b.set_column_dictionary_enabled(path.clone(), dictionary);
            let stats = match c.statistics() {
                Some(_) => EnabledStatistics::Chunk,
                None => EnabledStatistics::None,
            };
            b = b.set_column_statistics_enabled(path.clone(), stats);
            let special = c
                .encodings()
                .find(|e| matches!(e, Encoding::BYTE_STREAM_SPLIT | Encoding::DELTA_BINARY_PACKED));
            if let (false, Some(e)) = (dictionary, special) {
                b = b.set_column_encoding(path, e);
            }
        }
    }
    b.build()
}

/// Every table of a capture's directory, read back whole into memory.
fn tables(capture: &Path) -> Vec<Table> {
    let mut out = Vec::new();
    for dir in files(capture).into_iter().filter(|d| d.is_dir()) {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let (mut groups, mut props) = (Vec::new(), None);
        for f in files(&dir) {
            let file = std::fs::File::open(&f).expect("parquet file");
            let b = ParquetRecordBatchReaderBuilder::try_new(file).expect("parquet");
            props.get_or_insert_with(|| settings(b.metadata()));
            for g in 0..b.metadata().num_row_groups() {
                let file = std::fs::File::open(&f).expect("parquet file");
                let r = ParquetRecordBatchReaderBuilder::try_new(file)
                    .expect("parquet")
                    .with_row_groups(vec![g])
                    .with_batch_size(8192)
                    .build()
                    .expect("reader");
                groups.push(r.map(|b| b.expect("batch")).collect());
            }
        }
        if let Some(props) = props {
            out.push(Table { name, groups, props });
        }
    }
    out
}

/// Writes every table as the export did, into memory.
fn write(tables: &[Table]) -> usize {
    let mut bytes = 0;
    for t in tables {
        let Some(schema) = t.groups.iter().flatten().next().map(|b| b.schema()) else {
            continue;
        };
        let mut w = ArrowWriter::try_new(Vec::new(), schema, Some(t.props.clone())).expect("writer");
        for g in &t.groups {
            for b in g {
                w.write(b).expect("write");
            }
            w.flush().expect("flush");
        }
        bytes += w.into_inner().expect("close").len();
    }
    bytes
}

fn bench(c: &mut Criterion) {
    let made;
    let capture = match std::env::var_os("GPCAP_EXPORT_DATASET") {
        Some(d) => PathBuf::from(d),
        None => {
            made = std::env::temp_dir().join(format!("gpcap-bench-export-{}", std::process::id()));
            let ok = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
                .args([
                    "export",
                    "-d",
                    "dissectors/article.kdl",
                    "captures/clean.pcap",
                    "-o",
                ])
                .arg(&made)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "gpcap export of captures/clean.pcap failed");
            made.join("capture=clean.pcap")
        }
    };
    let tables = tables(&capture);
    let rows: u64 = tables
        .iter()
        .filter(|t| t.name == "packets")
        .flat_map(|t| t.groups.iter().flatten())
        .map(|b| b.num_rows() as u64)
        .sum();
    let mut g = c.benchmark_group("export_write");
    g.sample_size(10);
    g.throughput(Throughput::Elements(rows));
    g.bench_function("parquet_alone", |b| {
        b.iter(|| write(std::hint::black_box(&tables)))
    });
    g.finish();
    if std::env::var_os("GPCAP_EXPORT_DATASET").is_none() {
        let _ = std::fs::remove_dir_all(capture.parent().unwrap_or(&capture));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
