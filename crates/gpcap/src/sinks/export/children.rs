//! Child tables: an array or list of a packet type is a table of its own, one row per
//! element, keyed by the parent row (`frame`, `row`), the places of the elements of the
//! lists above it (`NAME_index`, outermost first) and its own place (`index`); the
//! parent keeps the list's length. Every array and list, fixed in size or not, so that a
//! query never depends on a count in the definition. Flat as Zeek's and ENTRADA's logs:
//! no repetition levels to encode or to read.

use super::columns::{Refill, TypeColumns, distinct_names};
use arrow_array::ArrayRef;
use arrow_array::builder::{UInt32Builder, UInt64Builder};
use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;

/// Child tables an export writes at most (each is a file and a writer thread): a
/// definition with more is refused, naming the list past the limit.
pub const MAX_CHILD_TABLES: usize = 64;

/// Where the row being appended sits, for the rows its lists add to child tables: its
/// frame, its place in the frame ([`super::rows`]), and the element places of the lists
/// it is inside.
#[derive(Default)]
pub struct Key {
    pub frame: u64,
    pub row: u32,
    pub path: Vec<u32>,
}

/// One list's child table: the key columns and the element's own columns.
pub struct Child {
    /// The list's definition line (for errors).
    pub line: u32,
    /// The table's directory name (`type_scene__objects`) and its index among the
    /// streamed tables ([`super::rows::Chunk::table`]), set by [`name_children`].
    pub name: String,
    pub table: usize,
    /// The key columns' names after `frame` and `row`: the lists above, then `index`.
    keys: Vec<String>,
    frame: UInt64Builder,
    row: UInt32Builder,
    places: Vec<UInt32Builder>,
    pub columns: TypeColumns,
}

impl Child {
    pub fn new(line: u32, columns: TypeColumns) -> Child {
        Child {
            line,
            name: String::new(),
            table: 0,
            keys: Vec::new(),
            frame: UInt64Builder::new(),
            row: UInt32Builder::new(),
            places: Vec::new(),
            columns,
        }
    }

    /// Appends the key of the element at `key` (its place last in `key.path`).
    pub fn keys(&mut self, key: &Key) {
        self.frame.append_value(key.frame);
        self.row.append_value(key.row);
        for (b, k) in self.places.iter_mut().zip(&key.path) {
            b.append_value(*k);
        }
    }

    pub fn schema(&self) -> Schema {
        let mut fields = vec![
            Field::new("frame", DataType::UInt64, false),
            Field::new("row", DataType::UInt32, false),
        ];
        fields.extend(self.keys.iter().map(|k| Field::new(k, DataType::UInt32, false)));
        fields.extend(self.columns.schema_fields());
        Schema::new(fields)
    }

    /// Per leaf column, whether a dictionary is worth building (keys: no).
    pub fn dictionary_leaves(&self) -> Vec<Option<bool>> {
        let mut out = vec![None; 2 + self.keys.len()];
        self.columns.dictionary_leaves(&mut out);
        out
    }

    /// The buffered rows as arrays (the builders start again empty).
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        let mut cols: Vec<ArrayRef> = vec![Arc::new(self.frame.refill()), Arc::new(self.row.refill())];
        cols.extend(self.places.iter_mut().map(|b| Arc::new(b.refill()) as ArrayRef));
        cols.extend(self.columns.finish());
        cols
    }
}

/// Names the child tables of `columns` (those of table `parent`, in its struct column
/// `group` when not empty: `header.`; the lists above are `above`) and of their elements in turn, gives each the next index from `next`, and
/// renames each element's columns apart from its keys and `reserved` (the partition
/// keys). `taken`: the table names used so far (a name met again gets `_2`…).
pub fn name_children(
    columns: &mut TypeColumns,
    parent: &str,
    group: &str,
    above: &[String],
    reserved: &[&str],
    next: &mut usize,
    taken: &mut std::collections::HashSet<String>,
) {
    columns.lists_mut(&mut group.to_string(), &mut |path, child| {
        let mut name = format!("{parent}__{}", super::partition_value(path));
        let base = name.clone();
        let mut n = 2;
        while !taken.insert(name.to_lowercase()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        child.name = name.clone();
        child.table = *next;
        *next += 1;
        // The key columns: one per list above (named after it), then `index`.
        let mut keys: Vec<String> = Vec::new();
        let mut lists = above.to_vec();
        lists.push(path.replace('.', "_"));
        for (i, l) in lists.iter().enumerate() {
            let mut key = if i + 1 == lists.len() {
                "index".to_string()
            } else {
                format!("{l}_index")
            };
            let mut n = 2;
            while keys.iter().any(|k| k.eq_ignore_ascii_case(&key)) || key == "frame" || key == "row" {
                key = format!("{l}_index_{n}");
                n += 1;
            }
            keys.push(key);
        }
        // `reassembled` too: it tells a type's table from a list's.
        let mut held: Vec<&str> = vec!["frame", "row", "reassembled", "capture"];
        held.extend(keys.iter().map(String::as_str));
        held.extend(reserved);
        distinct_names(&mut child.columns.fields, &held);
        child.places = keys.iter().map(|_| UInt32Builder::new()).collect();
        child.keys = keys;
        name_children(&mut child.columns, &name, "", &lists, reserved, next, taken);
    });
}

/// Every child table below `columns`, depth first (a table before its own children).
pub fn each_child(columns: &TypeColumns, f: &mut dyn FnMut(&Child)) {
    columns.children(&mut |c| {
        f(c);
        each_child(&c.columns, f);
    });
}

/// The same, to flush them.
pub fn each_child_mut(columns: &mut TypeColumns, f: &mut dyn FnMut(&mut Child)) {
    columns.children_mut(&mut |c| {
        f(c);
        each_child_mut(&mut c.columns, f);
    });
}
