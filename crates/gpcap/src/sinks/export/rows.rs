//! The rows of a capture's streamed tables, built straight from each packet's field tree
//! (or its leaf log, `logged.rs`) into Arrow builders: `packets` (one row per game datagram and reassembled packet), one
//! table per packet type (one row per packet, or per message, of that type), and the
//! child tables of their lists (`children.rs`). The same builder runs on the reading
//! thread (one core) and on each export worker (several), so the rows are the same
//! either way.

use super::children::{Child, Key, each_child, each_child_mut, name_children};
use super::columns::{Refill, TypeColumns};
use super::logged::LogRows;
use super::packets::Packets;
use super::{BATCH_FIELDS, BATCH_ROWS, partition_value};
use arrow_array::ArrayRef;
use arrow_array::builder::*;
use arrow_schema::{DataType, Field, Schema};
use gpcap_dissect::{Dissection, Label, LeafLog, Program};
use gpcap_engine::{Kind, PacketEvent};
use std::sync::Arc;

/// One packet type's rows: its columns and the key columns.
pub(super) struct TypeRows {
    pub columns: TypeColumns,
    /// Key columns: frame, the row's place in it (0: the packet itself, 1 + k: its k-th
    /// message), and whether the row is a reassembled packet.
    frame: UInt64Builder,
    row: UInt32Builder,
    reassembled: BooleanBuilder,
    /// Fields of the buffered rows (the elements its child tables hold included).
    fields: usize,
    /// Its index among the streamed tables ([`Chunk::table`]).
    table: usize,
    /// Its rows from the leaf log (None: from the tree only).
    log: Option<LogRows>,
}

impl TypeRows {
    /// The table's schema: the key columns, then the type's fields.
    pub fn schema(&self) -> Schema {
        let mut fields = vec![
            Field::new("frame", DataType::UInt64, false),
            Field::new("row", DataType::UInt32, false),
            Field::new("reassembled", DataType::Boolean, false),
        ];
        fields.extend(self.columns.schema_fields());
        Schema::new(fields)
    }

    fn full(&self) -> bool {
        self.columns.rows >= BATCH_ROWS || self.fields >= BATCH_FIELDS
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.fields = 0;
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(self.frame.refill()),
            Arc::new(self.row.refill()),
            Arc::new(self.reassembled.refill()),
        ];
        cols.extend(self.columns.finish());
        cols
    }
}

/// A streamed table's buffered rows as columns: `table` 0 is `packets`, then the child
/// tables of its header's lists, then each packet type's table followed by its child
/// tables ([`Rows::tables`]).
pub(super) struct Chunk {
    pub table: usize,
    pub rows: usize,
    pub columns: Vec<ArrayRef>,
}

/// The layout zero configuration reads headers with, as a definition: without one the
/// `packets` table still has `header` and `fragment_header`, the article definition's
/// columns (its type named by number), so a dataset has one schema.
fn reference() -> Option<Arc<Program>> {
    static REFERENCE: std::sync::OnceLock<Option<Arc<Program>>> = std::sync::OnceLock::new();
    REFERENCE
        .get_or_init(|| {
            gpcap_dissect::compile("reference", include_str!("reference.kdl"))
                .ok()
                .map(Arc::new)
        })
        .clone()
}

/// The streamed tables' builders.
pub(super) struct Rows {
    program: Option<Arc<Program>>,
    /// Without a definition: the reference layout, read into `header` and
    /// `fragment_header` for each datagram.
    reference: Option<gpcap_dissect::Dissector>,
    pub packets: Packets,
    /// By packet type id.
    pub types: Vec<Option<TypeRows>>,
    /// The current packet's subtree ends (reused: no allocation per packet).
    end: Vec<u32>,
    /// Where the row being appended sits (reused).
    key: Key,
    /// The leaves of the datagram being read, each element apart (reused).
    log: LeafLog,
    /// Which types are worth walking (this builder's own tally: a worker's).
    walks: gpcap_dissect::leaves::Walks,
}

impl Rows {
    /// The builders of `program`'s tables; `keys`: the partition keys (a field named
    /// like one is renamed).
    pub fn new(program: Option<Arc<Program>>, keys: &[(String, String)]) -> Rows {
        let acks = program.as_ref().is_some_and(|p| {
            p.has_role(gpcap_dissect::Role::Ack) || p.has_role(gpcap_dissect::Role::AckBits)
        });
        let reference = program.is_none().then(reference).flatten();
        let mut packets = Packets::new(acks, program.as_deref().or(reference.as_deref()));
        let partitions: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        let mut next = 1;
        let mut taken = std::collections::HashSet::new();
        for (h, group) in [
            (&mut packets.header, "header."),
            (&mut packets.fragment_header, "fragment_header."),
        ] {
            if let Some(h) = h {
                name_children(
                    &mut h.columns,
                    "packets",
                    group,
                    &[],
                    &partitions,
                    &mut next,
                    &mut taken,
                );
            }
        }
        // Every type's table name first: a list's table named like a type (`B` with a
        // list `items`, and a type `B__items`) is the one suffixed, whatever their order.
        for def in program.iter().flat_map(|p| &p.packets) {
            taken.insert(format!("type_{}", partition_value(&def.name)).to_lowercase());
        }
        let mut types = Vec::new();
        for def in program.iter().flat_map(|p| &p.packets) {
            let Some(p) = program.as_deref() else { break };
            // A decrypted view lists a type twice (`packet N`, and the `plaintext N` that
            // stands in for it): one table, the one the type reads with.
            if !p.packet(def.type_id).is_some_and(|x| std::ptr::eq(x, def)) {
                continue;
            }
            // A message type's rows also hold the `messages` block's own fields (ENet's
            // command header), after the body's.
            let mut columns = TypeColumns::new(p, def.body, p.message_header());
            let mut blocks = vec![def.body];
            blocks.extend(p.message_header());
            let log = LogRows::new(p, &columns, &blocks);
            let mut reserved = vec!["frame", "row", "reassembled", "capture"];
            reserved.extend(&partitions);
            columns.rename(&reserved);
            let name = format!("type_{}", partition_value(&def.name));
            let table = next;
            next += 1;
            name_children(&mut columns, &name, "", &[], &partitions, &mut next, &mut taken);
            let at = def.type_id as usize;
            if types.len() <= at {
                types.resize_with(at + 1, || None);
            }
            types[at] = Some(TypeRows {
                columns,
                frame: UInt64Builder::new(),
                row: UInt32Builder::new(),
                reassembled: BooleanBuilder::new(),
                fields: 0,
                table,
                log,
            });
        }
        Rows {
            program,
            reference: reference.map(gpcap_dissect::Dissector::new),
            packets,
            types,
            end: Vec::new(),
            key: Key::default(),
            log: LeafLog::by_element(),
            walks: Default::default(),
        }
    }

    /// Every child table, depth first, with the columns they hang from.
    fn each_child(&self, f: &mut dyn FnMut(&Child)) {
        for h in [&self.packets.header, &self.packets.fragment_header]
            .into_iter()
            .flatten()
        {
            each_child(&h.columns, f);
        }
        for tt in self.types.iter().flatten() {
            each_child(&tt.columns, f);
        }
    }

    /// Why the tables cannot be written, if they cannot: (definition line, reason).
    pub fn refusal(&self) -> Option<(u32, String)> {
        let deep = [&self.packets.header, &self.packets.fragment_header]
            .into_iter()
            .flatten()
            .map(|h| &h.columns)
            .chain(self.types.iter().flatten().map(|t| &t.columns))
            .find_map(|c| c.too_deep);
        if let Some(line) = deep {
            return Some((
                line,
                format!(
                    "fields nested more than {} deep are not exported; flatten the definition",
                    super::columns::MAX_NEST
                ),
            ));
        }
        let mut out = None;
        let mut n = 0;
        self.each_child(&mut |c| {
            n += 1;
            if out.is_some() {
                return;
            }
            if n > super::children::MAX_CHILD_TABLES {
                out = Some((
                    c.line,
                    format!(
                        "this list would be child table {n}, over the {} an export writes (each is a table of its own)",
                        super::children::MAX_CHILD_TABLES
                    ),
                ));
            } else if c.name.len() > super::MAX_NAME {
                out = Some((
                    c.line,
                    format!(
                        "this list's table `{}…` is named in {} bytes, over {}: shorten its names",
                        c.name.chars().take(40).collect::<String>(),
                        c.name.len(),
                        super::MAX_NAME
                    ),
                ));
            }
        });
        out
    }

    /// The streamed tables: (index, directory name, schema, per leaf column whether a
    /// dictionary is worth building), `packets` first.
    pub fn tables(&self) -> Vec<(usize, String, Schema, Vec<Option<bool>>)> {
        let schema = self.packets.full_schema();
        let mut dictionary = vec![None; Packets::schema(self.packets.acks).fields().len()];
        for h in [&self.packets.header, &self.packets.fragment_header]
            .into_iter()
            .flatten()
        {
            h.columns.dictionary_leaves(&mut dictionary);
        }
        let mut out = vec![(0, "packets".to_string(), schema, dictionary)];
        for (t, tt) in self.types.iter().enumerate() {
            let Some(tt) = tt else { continue };
            let name = self
                .program
                .as_ref()
                .and_then(|p| p.type_name(t as u32))
                .unwrap_or_default();
            let mut dictionary = vec![None, None, None];
            tt.columns.dictionary_leaves(&mut dictionary);
            out.push((
                tt.table,
                format!("type_{}", partition_value(name)),
                tt.schema(),
                dictionary,
            ));
        }
        self.each_child(&mut |c| out.push((c.table, c.name.clone(), c.schema(), c.dictionary_leaves())));
        out.sort_by_key(|t| t.0);
        out
    }

    /// Appends game packet `e`'s rows (its tree in `e.dissection`); a table's rows are
    /// handed to `out` as soon as they reach a batch.
    pub fn add(&mut self, e: &PacketEvent<'_>, out: &mut dyn FnMut(Chunk)) {
        // Without a definition: the header as the reference layout reads it.
        let read;
        let e = match &mut self.reference {
            Some(r) if e.kind == Kind::Game && !e.status.crc_failed() && !e.truncated => {
                read = r.dissect(e.payload);
                &PacketEvent {
                    dissection: Some(&read),
                    ..*e
                }
            }
            _ => e,
        };
        // The tree's shape, once for every table the packet fills.
        match e.dissection {
            Some(d) => d.subtree_ends(&mut self.end),
            None => self.end.clear(),
        }
        self.packets
            .append(e, self.program.as_deref(), &self.end, &mut self.key);
        if self.packets.rows >= BATCH_ROWS {
            self.flush_packets(out);
        }
        let (Some(t), Some(d)) = (e.packet_type, e.dissection) else {
            return;
        };
        if e.fragment.is_some() {
            return;
        }
        if !e.messages.is_empty() {
            self.message_rows(e, d, out);
        }
        let Some(Some(tt)) = self.types.get_mut(t as usize) else {
            return;
        };
        tt.frame.append_value(e.frame);
        tt.row.append_value(0);
        tt.reassembled.append_value(e.kind == Kind::Reassembled);
        self.key.frame = e.frame;
        self.key.row = 0;
        tt.columns.append_tree(d, &self.end, e.payload, &mut self.key);
        tt.fields += d.fields.len();
        if tt.full() {
            self.flush_type(t as usize, out);
        }
    }

    /// Appends game packet `e`'s rows from its leaves, read here, when the log can
    /// say them as the tree would (false, nothing appended: [`Rows::add`] its tree).
    pub fn add_logged(&mut self, e: &PacketEvent<'_>, out: &mut dyn FnMut(Chunk)) -> bool {
        let Some(p) = self.program.clone() else {
            return false;
        };
        let Some(t) = e.packet_type else {
            return false;
        };
        let plain = matches!(e.kind, Kind::Game | Kind::Reassembled)
            && e.status == gpcap_engine::Status::Ok
            && e.fault.is_none()
            && e.fragment.is_none()
            && e.messages.is_empty();
        let logs = matches!(self.types.get(t as usize), Some(Some(tt)) if tt.log.is_some())
            && (e.kind != Kind::Game || self.packets.header_logs());
        if !plain || !logs || !self.walks.worth(t) {
            return false;
        }
        let read = self.log.read(&p, e.payload, t);
        self.walks.tally(t, read);
        if !read {
            return false;
        }
        self.packets.append_logged(e, &p, &self.log, &mut self.key);
        if self.packets.rows >= BATCH_ROWS {
            self.flush_packets(out);
        }
        let Some(Some(tt)) = self.types.get_mut(t as usize) else {
            return true;
        };
        tt.frame.append_value(e.frame);
        tt.row.append_value(0);
        tt.reassembled.append_value(e.kind == Kind::Reassembled);
        self.key.frame = e.frame;
        self.key.row = 0;
        if let Some(l) = &mut tt.log {
            l.append(&mut tt.columns, &p, &self.log, e.payload, &self.key, false);
        }
        tt.fields += self.log.recs.len() + self.log.ctxs.len();
        if tt.full() {
            self.flush_type(t as usize, out);
        }
        true
    }

    /// Hands `packets`' buffered rows to `out`, and its child tables'.
    fn flush_packets(&mut self, out: &mut dyn FnMut(Chunk)) {
        emit(0, self.packets.rows, || self.packets.finish(), out);
        for h in [&mut self.packets.header, &mut self.packets.fragment_header]
            .into_iter()
            .flatten()
        {
            each_child_mut(&mut h.columns, &mut |c| flush_child(c, out));
        }
    }

    /// Hands type `t`'s buffered rows to `out`, and its child tables' (whose rows its
    /// field count bounds).
    fn flush_type(&mut self, t: usize, out: &mut dyn FnMut(Chunk)) {
        let Some(Some(tt)) = self.types.get_mut(t) else {
            return;
        };
        emit(tt.table, tt.columns.rows, || tt.finish(), out);
        each_child_mut(&mut tt.columns, &mut |c| flush_child(c, out));
    }

    /// Hands every table's buffered rows to `out`.
    pub fn flush_all(&mut self, out: &mut dyn FnMut(Chunk)) {
        self.flush_packets(out);
        for t in 0..self.types.len() {
            self.flush_type(t, out);
        }
    }

    /// One row per message of a datagram, in its message type's table (in datagram
    /// order: `frame` and the row's place tell the messages of a frame apart).
    fn message_rows(&mut self, e: &PacketEvent<'_>, d: &Dissection, out: &mut dyn FnMut(Chunk)) {
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
                let row = u32::try_from(k).unwrap_or(u32::MAX);
                tt.frame.append_value(e.frame);
                tt.row.append_value(row);
                tt.reassembled.append_value(e.kind == Kind::Reassembled);
                self.key.frame = e.frame;
                self.key.row = row;
                tt.columns
                    .append_range(d, &self.end, e.payload, at + 1, next, &mut self.key);
                tt.fields += (next - at) as usize;
                if tt.full() {
                    self.flush_type(t as usize, out);
                }
            }
            at = next;
        }
    }
}

/// Hands child table `c`'s buffered rows to `out`.
fn flush_child(c: &mut Child, out: &mut dyn FnMut(Chunk)) {
    emit(c.table, c.columns.rows, || c.finish(), out);
}

/// Hands table `table`'s `rows` buffered rows to `out` as the columns `finish` makes
/// (nothing when there are none).
fn emit(table: usize, rows: usize, finish: impl FnOnce() -> Vec<ArrayRef>, out: &mut dyn FnMut(Chunk)) {
    if rows > 0 {
        out(Chunk {
            table,
            rows,
            columns: finish(),
        });
    }
}
