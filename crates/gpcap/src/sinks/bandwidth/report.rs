//! The profile as rows: what `analyze --bits` prints and `bandwidth` in `--json` holds.

use super::values::IntStats;
use super::{Acc, Bandwidth, NONE};
use serde::Serialize;

/// What every estimate rests on, said once.
pub const RESTS_ON: &str = "estimates rest on the values seen in this capture: a range seen is not a range allowed, and a constant here may change in other traffic";

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[non_exhaustive]
pub struct BandwidthReport {
    /// How the rows were counted: `"field tree"` (every datagram dissected).
    pub computed_from: &'static str,
    /// Captured bytes × 8; the rows add up to it.
    pub captured_bits: u64,
    pub rows_bits: u64,
    pub duration_s: f64,
    pub rests_on: &'static str,
    /// Bits and packets per direction and packet type.
    pub types: Vec<TypeBits>,
    /// Largest first.
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[non_exhaustive]
pub struct TypeBits {
    pub direction: &'static str,
    pub packet_type: Option<String>,
    pub packets: u64,
    pub bits: u64,
    pub share_of_wire: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[non_exhaustive]
pub struct Row {
    pub direction: &'static str,
    pub packet_type: Option<String>,
    pub message_type: Option<String>,
    pub path: String,
    pub category: &'static str,
    pub occurrences: u64,
    /// Packets (frames, for rows of no packet type) it appears in.
    pub packets: u64,
    pub bits: u64,
    /// The widest occurrence.
    pub declared_bits: u64,
    /// Over every packet of its type (every frame, for rows of no packet type).
    pub mean_bits_per_packet: f64,
    pub share_of_type: Option<f64>,
    pub share_of_wire: f64,
    pub bits_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Estimate>,
}

/// What the values seen say the field could be sent in.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[non_exhaustive]
pub struct Estimate {
    /// `int` (integers, booleans, compressed floats' steps) or `float`.
    pub kind: &'static str,
    pub values: u64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Bits the observed range needs (as an offset from the minimum).
    pub range_bits: Option<u32>,
    /// (declared − range bits) × occurrences: what sending the observed range would save.
    pub range_saves_bits: Option<u64>,
    pub constant: bool,
    /// A boolean that was always this value.
    pub always: Option<bool>,
    pub distinct: Option<u64>,
    pub distinct_capped: bool,
    /// Plug-in entropy of the values, bits per value, and × occurrences.
    pub entropy_bits: Option<f64>,
    pub ideal_bits: Option<f64>,
    pub delta: Option<DeltaEstimate>,
    /// Floats: the resolution the integer figures are at, and where it comes from
    /// (`what-if`, or `declared` for a compressed float's steps).
    pub resolution: Option<f64>,
    pub resolution_source: Option<&'static str>,
    pub not_finite: u64,
    /// Values whose steps at the resolution pass ±2^62 (a `--what-if` too fine for
    /// them): the integer figures are withheld.
    #[serde(skip_serializing_if = "is_zero")]
    pub past_range: u64,
    /// The values the estimate rests on (`"N values seen"` in the JSON, said in
    /// `present`).
    pub rests_on: ValuesSeen,
}

/// How many values an estimate rests on: a number here, a sentence where it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValuesSeen(pub u64);

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[non_exhaustive]
pub struct DeltaEstimate {
    /// Values that had one in the previous packet of the same type and flow.
    pub samples: u64,
    /// Σ bits of each zigzag-coded difference (an unchanged value: 0; the width's own
    /// signalling not counted).
    pub bits: u64,
    pub mean_bits: f64,
    /// A fixed width that holds every difference seen, and samples × it.
    pub width: u32,
    pub fixed_bits: u64,
    /// Values whose previous one could not be remembered (table full).
    pub not_tracked: u64,
}

fn direction(d: u8) -> &'static str {
    match d {
        1 => "client_to_server",
        2 => "server_to_client",
        _ => "any",
    }
}

/// The rows of `b`, closed.
pub fn build(b: &Bandwidth) -> BandwidthReport {
    let duration_s = match (b.first_ns, b.last_ns) {
        (Some(f), Some(l)) if l > f => (l - f) as f64 / 1e9,
        _ => 0.0,
    };
    let wire = b.captured_bits.max(1) as f64;
    let mut type_bits: hashbrown::HashMap<(u8, u32), u64> = hashbrown::HashMap::new();
    for r in &b.rows {
        if r.key.type_id != NONE {
            *type_bits.entry((r.key.dir, r.key.type_id)).or_default() += r.bits;
        }
    }
    let name =
        |t: u32| (t != NONE).then(|| b.type_name(t).map_or_else(|| format!("type {t}"), str::to_string));
    let mut rows: Vec<Row> = b
        .rows
        .iter()
        .filter(|r| r.bits > 0)
        .map(|r| {
            let k = r.key;
            let divisor = if k.type_id == NONE {
                b.frames
            } else {
                b.type_packets.get(&(k.dir, k.type_id)).copied().unwrap_or(0)
            };
            Row {
                direction: direction(k.dir),
                packet_type: name(k.type_id),
                message_type: (k.msg_type != NONE).then(|| {
                    b.message_name(k.msg_type)
                        .map_or_else(|| "unreadable".to_string(), str::to_string)
                }),
                path: b.paths.get(k.path as usize).cloned().unwrap_or_default(),
                category: k.cat.code(),
                occurrences: r.occurrences,
                packets: r.packets,
                bits: r.bits,
                declared_bits: r.declared,
                mean_bits_per_packet: r.bits as f64 / divisor.max(1) as f64,
                share_of_type: type_bits
                    .get(&(k.dir, k.type_id))
                    .filter(|&&t| t > 0)
                    .map(|&t| r.bits as f64 / t as f64),
                share_of_wire: r.bits as f64 / wire,
                bits_per_s: (duration_s > 0.0).then(|| r.bits as f64 / duration_s),
                estimate: k.cat.has_values().then(|| estimate(r)).flatten(),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.bits
            .cmp(&a.bits)
            .then_with(|| a.packet_type.cmp(&b.packet_type))
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| a.category.cmp(b.category))
            .then_with(|| a.direction.cmp(b.direction))
            .then_with(|| a.message_type.cmp(&b.message_type))
    });
    let mut types: Vec<TypeBits> = type_bits
        .iter()
        .map(|(&(d, t), &bits)| TypeBits {
            direction: direction(d),
            packet_type: name(t),
            packets: b.type_packets.get(&(d, t)).copied().unwrap_or(0),
            bits,
            share_of_wire: bits as f64 / wire,
        })
        .collect();
    types.sort_by(|a, b| {
        b.bits
            .cmp(&a.bits)
            .then_with(|| a.packet_type.cmp(&b.packet_type))
    });
    BandwidthReport {
        computed_from: b.computed_from(),
        captured_bits: b.captured_bits,
        rows_bits: rows.iter().map(|r| r.bits).sum(),
        duration_s,
        rests_on: RESTS_ON,
        types,
        rows,
    }
}

fn estimate(r: &Acc) -> Option<Estimate> {
    let (ints, resolution) = match (&r.quantized, &r.ints) {
        _ if r.past_range > 0 => (None, r.resolution),
        (Some(q), _) => (Some(q), r.resolution),
        (None, Some(i)) if r.kind == "compressed-float" => (Some(i), Some((r.step, "declared"))),
        (None, i) => (i.as_ref(), None),
    };
    let floats = r.floats.as_ref();
    let values = ints.map(|s| s.n).or(floats.map(|f| f.n))?;
    let boolean = r.kind == "bool";
    let mut e = Estimate {
        kind: if floats.is_some() { "float" } else { "int" },
        values,
        min: None,
        max: None,
        range_bits: None,
        range_saves_bits: None,
        constant: false,
        always: None,
        distinct: None,
        distinct_capped: false,
        entropy_bits: None,
        ideal_bits: None,
        delta: None,
        resolution: resolution.map(|r| r.0),
        resolution_source: resolution.map(|r| r.1),
        not_finite: floats.map_or(0, |f| f.not_finite),
        past_range: r.past_range,
        rests_on: ValuesSeen(values),
    };
    if let Some(f) = floats.filter(|f| f.n > 0) {
        e.min = Some(f.min);
        e.max = Some(f.max);
        e.constant = f.min == f.max && f.not_finite == 0;
    }
    if let Some(s) = ints.filter(|s| s.n > 0) {
        int_figures(&mut e, s, r, boolean, floats.is_none());
    }
    Some(e)
}

fn int_figures(e: &mut Estimate, s: &IntStats, r: &Acc, boolean: bool, own_range: bool) {
    if own_range {
        e.min = Some(s.min as f64);
        e.max = Some(s.max as f64);
        e.constant = s.min == s.max;
    }
    let range = s.range_bits();
    e.range_bits = Some(range);
    e.range_saves_bits = Some(r.declared.saturating_sub(u64::from(range)) * s.n);
    if boolean && s.min == s.max {
        e.always = Some(s.min != 0);
    }
    e.distinct_capped = s.capped;
    if !s.capped {
        e.distinct = Some(s.distinct() as u64);
    }
    e.entropy_bits = s.entropy();
    e.ideal_bits = e.entropy_bits.map(|h| h * s.n as f64);
    let d = s.delta;
    if d.samples > 0 || d.not_tracked > 0 {
        e.delta = Some(DeltaEstimate {
            samples: d.samples,
            bits: d.bits,
            mean_bits: d.bits as f64 / d.samples.max(1) as f64,
            width: d.width,
            fixed_bits: u64::from(d.width) * d.samples,
            not_tracked: d.not_tracked,
        });
    }
}
