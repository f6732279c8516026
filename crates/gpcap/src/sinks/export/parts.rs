//! A table's Parquet files in its partition: `part-0.parquet`, then `part-1.parquet`…, a
//! new file every [`PART_GROUPS`] row groups. A Parquet writer keeps every row group's
//! metadata (each column chunk's, for the footer) until the file closes: in one file per
//! table it grew with the capture (384 row groups, 5 MB of a 214 MB capture's export;
//! 141 MiB peak on a 955 MiB one), in files of bounded row groups it does not. Files are
//! written under hidden temporary names, renamed by the export's commit.

use super::ExportError;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Row groups a file holds at most.
pub(super) const PART_GROUPS: usize = 64;

/// Part `k`'s final name in partition directory `dir`.
pub(super) fn final_name(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!("part-{k}.parquet"))
}

/// Part `k`'s temporary name: hidden, not ending in `.parquet` (engines skip it).
pub(super) fn temporary_name(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!(".part-{k}.parquet.tmp"))
}

/// The files of one table in one partition, written in turn.
pub(super) struct Parts {
    dir: PathBuf,
    schema: SchemaRef,
    props: WriterProperties,
    /// A row group is flushed once its memory passes this.
    group_bytes: usize,
    /// Row groups per file.
    part_groups: usize,
    writer: Option<ArrowWriter<File>>,
    /// Files opened (the last one open when `writer` is).
    pub files: usize,
}

impl Parts {
    /// The first file, opened now: a table without rows still has one (its schema).
    pub fn new(
        dir: &Path,
        schema: SchemaRef,
        props: WriterProperties,
        group_bytes: usize,
        part_groups: usize,
    ) -> Result<Parts, ExportError> {
        let mut p = Parts {
            dir: dir.to_path_buf(),
            schema,
            props,
            group_bytes,
            part_groups: part_groups.max(1),
            writer: None,
            files: 0,
        };
        p.open()?;
        Ok(p)
    }

    fn fail(&self, e: &dyn std::fmt::Display) -> ExportError {
        ExportError {
            path: final_name(&self.dir, self.files.saturating_sub(1))
                .display()
                .to_string(),
            reason: e.to_string(),
        }
    }

    fn open(&mut self) -> Result<&mut ArrowWriter<File>, ExportError> {
        let file = File::create(temporary_name(&self.dir, self.files)).map_err(|e| {
            self.files += 1;
            self.fail(&e)
        })?;
        self.files += 1;
        let w = ArrowWriter::try_new(file, self.schema.clone(), Some(self.props.clone()))
            .map_err(|e| self.fail(&e))?;
        Ok(self.writer.insert(w))
    }

    /// Writes `batch`, flushing the row group once its memory passes its budget, and
    /// closing the file once it holds [`PART_GROUPS`] row groups.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), ExportError> {
        let (group_bytes, part_groups) = (self.group_bytes, self.part_groups);
        let w = match self.writer.take() {
            Some(w) => self.writer.insert(w),
            None => self.open()?,
        };
        let mut step = || -> parquet::errors::Result<bool> {
            w.write(batch)?;
            // Its memory, not only its encoded size: buffered pages and dictionaries
            // held twice the estimate (158 MiB peak, 2 cores).
            if w.memory_size().max(w.in_progress_size()) > group_bytes {
                w.flush()?;
            }
            Ok(w.flushed_row_groups().len() >= part_groups)
        };
        let full = step().map_err(|e| self.fail(&e))?;
        if full {
            self.close()?;
        }
        Ok(())
    }

    /// Closes the file being written (its footer written) and puts it on the disk, so
    /// that the rename that commits it never names a file a power cut left empty.
    pub fn close(&mut self) -> Result<(), ExportError> {
        match self.writer.take() {
            Some(w) => {
                let file = w.into_inner().map_err(|e| self.fail(&e))?;
                file.sync_all().map_err(|e| self.fail(&e))
            }
            None => Ok(()),
        }
    }

    /// Removes every temporary file (a failed or abandoned table).
    pub fn remove(&mut self) {
        drop(self.writer.take());
        for k in 0..self.files {
            let _ = std::fs::remove_file(temporary_name(&self.dir, k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    /// A capture of any size is written in files of at most `part_groups` row groups,
    /// rows in order across them: the writer's metadata stays bounded.
    #[test]
    fn row_groups_roll_over_to_a_new_file() {
        let dir = std::env::temp_dir().join(format!("gpcap-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("frame", DataType::UInt64, false)]));
        let props = WriterProperties::builder().set_max_row_group_size(100).build();
        let mut parts = Parts::new(&dir, schema.clone(), props, usize::MAX, 3).unwrap();
        for k in 0..10u64 {
            let column = UInt64Array::from_iter_values(k * 100..(k + 1) * 100);
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).unwrap();
            parts.write(&batch).unwrap();
        }
        parts.close().unwrap();
        assert_eq!(parts.files, 4, "10 row groups, 3 a file");
        let mut frames = Vec::new();
        for k in 0..parts.files {
            let file = File::open(temporary_name(&dir, k)).unwrap();
            let reader =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
            assert!(reader.metadata().num_row_groups() <= 3);
            for b in reader.build().unwrap() {
                let b = b.unwrap();
                let c = b.column(0).as_any().downcast_ref::<UInt64Array>().unwrap();
                frames.extend(c.values().iter().copied());
            }
        }
        assert_eq!(frames, (0..1000).collect::<Vec<_>>());
        parts.remove();
        assert!(!temporary_name(&dir, 0).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
