//! Where each field of a definition goes among a type's columns, decided once before
//! packets flow: inline structs and `if` branches spliced into their group, the
//! narrowest integer for a declared range, a dictionary for few distinct values, and two
//! struct types of one shape sharing a column merged.

use super::*;

/// Lays out block `b`'s fields as columns, splicing inline structs and `if` branches.
/// `too_deep`: set to the line of the first group nested past [`MAX_NEST`].
pub(super) fn lay_out(p: &Program, b: Block, out: &mut Vec<Column>, nest: u32, too_deep: &mut Option<u32>) {
    for &id in p.block(b) {
        let Some(node) = p.nodes.get(id as usize) else {
            continue;
        };
        if nest >= MAX_NEST && !node.kind.blocks().is_empty() {
            too_deep.get_or_insert(node.line);
            continue;
        }
        let col = match &node.kind {
            Kind::Inline { body } => {
                lay_out(p, *body, out, nest + 1, too_deep);
                continue;
            }
            Kind::If { then, otherwise, .. } => {
                lay_out(p, *then, out, nest + 1, too_deep);
                lay_out(p, *otherwise, out, nest + 1, too_deep);
                continue;
            }
            Kind::Struct { body } => {
                let mut fields = Vec::new();
                lay_out(p, *body, &mut fields, nest + 1, too_deep);
                Col::Group {
                    find: Lookup::new(&fields),
                    fields,
                    valid: Vec::new(),
                }
            }
            Kind::Array { body, .. } | Kind::List { body, .. } | Kind::RelativeList { body, .. } => {
                let mut fields = Vec::new();
                if let Kind::RelativeList { max, .. } = node.kind {
                    fields.push(Column {
                        name: LIST_INDEX.into(),
                        nodes: Vec::new(),
                        col: Col::Int(Int::for_range(0, max as i128)),
                        values: None,
                    });
                }
                lay_out(p, *body, &mut fields, nest + 1, too_deep);
                Col::List {
                    count: UInt32Builder::new(),
                    child: Box::new(Child::new(node.line, TypeColumns::of(fields, None))),
                }
            }
            kind => match Col::leaf(kind) {
                Some(c) => c,
                None => continue,
            },
        };
        let named = matches!(col, Col::Int(_)).then_some(node.enum_id).flatten();
        add(out, &node.name, id, col, distinct(&node.kind));
        if let Some(e) = named.and_then(|e| p.enums.get(e as usize)) {
            // Readable by name in the dataset itself: `state` and `state_name`.
            let mut names = e.values.clone();
            names.sort_by_key(|(v, _)| *v);
            names.dedup_by_key(|(v, _)| *v);
            names.truncate(u16::MAX as usize);
            let col = Col::EnumName {
                names: names.into(),
                keys: UInt16Builder::new(),
            };
            add(out, &format!("{}_name", node.name), id, col, None);
        }
    }
}

/// Adds a column; a name seen before (an `if` and its `else`) shares the column when the
/// types agree, widens integers to one that holds both, and is suffixed otherwise.
fn add(out: &mut Vec<Column>, name: &str, id: NodeId, col: Col, values: Option<u64>) {
    if let Some(c) = out.iter_mut().find(|c| c.name == name) {
        // Shared: the values of both.
        c.values = c.values.zip(values).map(|(a, b)| a.saturating_add(b));
        let same_names = match (&c.col, &col) {
            (Col::EnumName { names: a, .. }, Col::EnumName { names: b, .. }) => a == b,
            _ => true,
        };
        // A list is its length here and its elements elsewhere: it shares its column with
        // nothing (a `bits items 32` in the other branch, or a list of another body, made
        // one of them lose its values or its elements).
        let list = matches!(c.col, Col::List { .. }) || matches!(col, Col::List { .. });
        if c.col.data_type() == col.data_type() && same_names && !list {
            c.nodes.push(id);
            merge_group(&mut c.col, col);
            return;
        }
        if let (Col::Int(a), Col::Int(b), false) = (&c.col, &col, list) {
            let (a, b) = (a.range(), b.range());
            c.col = Col::Int(Int::for_range(a.0.min(b.0), a.1.max(b.1)));
            c.nodes.push(id);
            return;
        }
        let mut k = 2;
        while out.iter().any(|c| c.name == format!("{name}_{k}")) {
            k += 1;
        }
        out.push(Column {
            name: format!("{name}_{k}"),
            nodes: vec![id],
            col,
            values,
        });
        return;
    }
    out.push(Column {
        name: name.to_string(),
        nodes: vec![id],
        col,
        values,
    });
}

/// Two struct types of one shape sharing a column (`s1 q` in an `if`, `s2 q` in its
/// `else`): `b`'s fields are filled by their own nodes too, into `a`'s columns of the
/// same place (the shapes are equal, so the places are). Only `a`'s were found, and the
/// fields of `q` were null wherever the `else` was read.
fn merge_group(a: &mut Col, b: Col) {
    match (a, b) {
        (Col::Group { fields, find, .. }, Col::Group { fields: more, .. }) => {
            merge_fields(fields, more);
            *find = Lookup::new(fields);
        }
        (Col::List { child, .. }, Col::List { child: more, .. }) => {
            let c = &mut child.columns;
            merge_fields(&mut c.fields, more.columns.fields);
            c.find = Lookup::new(&c.fields);
        }
        _ => {}
    }
}

fn merge_fields(fields: &mut [Column], more: Vec<Column>) {
    for (c, m) in fields.iter_mut().zip(more) {
        // A list and a 32-bit field are alike as columns, not as fields.
        if matches!(c.col, Col::List { .. }) != matches!(m.col, Col::List { .. }) {
            continue;
        }
        for n in m.nodes.iter().copied() {
            if !c.nodes.contains(&n) {
                c.nodes.push(n);
            }
        }
        merge_group(&mut c.col, m.col);
    }
}

/// Distinct values a leaf of `kind` can take, from the definition alone (None: not a
/// number, or not bounded by it).
fn distinct(kind: &Kind) -> Option<u64> {
    let pow2 = |bits: u32| 1u64.checked_shl(bits).unwrap_or(u64::MAX);
    match kind {
        Kind::Bits(n) => Some(pow2(*n)),
        Kind::Int { min, max } => Some((*max as i128 - *min as i128 + 1).clamp(0, u64::MAX as i128) as u64),
        Kind::Uint64 | Kind::Float | Kind::Double => Some(u64::MAX),
        Kind::CompressedFloat(c) | Kind::CompressedVector(c) => Some(c.max_int as u64 + 1),
        Kind::SmallestThree(bits) => Some(pow2(*bits)),
        Kind::Msb(_) => distinct(&kind.plain()),
        _ => None,
    }
}
