//! The plan executor: a block's validation plan (`plan.rs`) run over the datagram —
//! runs of fixed-width leaves under one bounds check, flagged fields, arrays and lists
//! looped in place. A block it cannot decide goes back to the interpreter, which says
//! where and why.

use super::*;

/// Open array and list elements one plan run keeps (deeper nesting goes back to the
/// interpreter, which starts runs of its own).
pub(super) const ELEMENT_STACK: usize = 4;

/// An array or list element a plan run is inside: where its body's plan starts, where to
/// go on when the last element is done, and what decides whether another follows.
#[derive(Clone, Copy, Default)]
pub(super) struct Element {
    entry: u32,
    back: u32,
    /// Array: elements still to read after this one. List: elements done.
    left: u64,
    /// List: the index that ends it (arrays: -1).
    max: i64,
    previous: i64,
}

/// A flat element that is an optional field: `bool flag` then `if flag { … }` (or
/// `if "!flag"`) around fields that cannot be out of range — the commonest shape of
/// bitpacked game state, read as one bit and a skip.
#[derive(Clone, Copy)]
struct Flagged {
    slot: u16,
    negate: bool,
    /// The fields the flag's run counts, and the guarded run's bits and fields.
    flag_fields: u32,
    bits: u32,
    fields: u32,
}

impl Flagged {
    fn of(flat: &[plan::Segment], checks: &[plan::Check]) -> Option<Flagged> {
        let [flag, then] = flat else { return None };
        let [c] = plan::checks(checks, flag.checks) else {
            return None;
        };
        let shape = flag.slot == plan::NO_SLOT
            && flag.bits == 1
            && then.slot != plan::NO_SLOT
            && then.checks.1 == 0
            && (c.at, c.mask, c.bias, c.slot) == (0, 1, 0, then.slot)
            && c.max >= 1;
        shape.then_some(Flagged {
            slot: then.slot,
            negate: then.negate,
            flag_fields: flag.fields,
            bits: then.bits,
            fields: then.fields,
        })
    }
}

/// The width of each rung's difference, known before packets flow.
const LADDER_WIDTHS: [u32; 5] = {
    let mut w = [0; 5];
    let mut k = 0;
    while k < 5 {
        let (lo, hi) = RELATIVE_INDEX_LADDER[k];
        w[k] = match crate::bits::int_width(lo, hi) {
            Some(b) => b,
            None => 0,
        };
        k += 1;
    }
    w
};

/// A relative list's next index after `previous`, read at `pos` (the article's ladder:
/// a flag for +1, else flags choosing a range, then the difference); `None` when out
/// of bits or past `max`. Counts the element's group, its index group, the flags and
/// the difference as the interpreter does. The flags are read from one word: a path
/// that needs a bit past the end consumes more bits than there are, whatever the
/// word holds there, so one comparison at the end decides as a check per flag would.
#[inline(always)]
fn relative_next(
    data: &[u8],
    len: u64,
    pos: &mut u64,
    count: &mut u32,
    previous: i64,
    max: i64,
) -> Option<i64> {
    let word = BitReader::peek_masked(data, *pos, u32::MAX);
    if word & 1 == 1 {
        *count += 3;
        *pos += 1;
        return (*pos <= len && previous < max).then_some(previous + 1);
    }
    // Zero flags after the first before a set one: the rung (5: none set, the last range).
    let k = ((word >> 1) | 1 << 5).trailing_zeros() as usize;
    let ((lo, hi), width) = match RELATIVE_INDEX_LADDER.get(k) {
        Some(&r) => (r, LADDER_WIDTHS[k]),
        None => ((126, max + 1), crate::bits::int_width(126, max + 1).unwrap_or(0)),
    };
    // The first flag, the rung's flags (the set one included, unless none is).
    let at = 1 + (k as u64 + 1).min(5);
    if *pos + at + width as u64 > len {
        return None;
    }
    let d = lo + BitReader::peek_at(data, *pos + at, width) as i64;
    *pos += at + width as u64;
    *count += 3 + at as u32;
    let index = previous + d;
    (d <= hi && index <= max).then_some(index)
}

impl<'p> Exec<'p> {
    /// Runs the validation plan from op `entry` to its `Return`. Array and list elements
    /// with plans of their own run in the same loop (a small stack of open elements),
    /// without a call per element. `Ok(false)`: an op failed — out of bits, a value out
    /// of range, a division by zero, a limit — and the interpreter must read the block
    /// again to locate it.
    #[inline]
    pub(super) fn run_plan(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        entry: u32,
        parent: u32,
        depth: u16,
    ) -> Result<bool, Stop> {
        let base = self.elements.len();
        let done = self.run_ops(r, out, entry, parent, depth);
        self.elements.truncate(base);
        self.fallbacks += u64::from(matches!(done, Ok(false)));
        done
    }

    #[inline(never)]
    fn run_ops(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        entry: u32,
        parent: u32,
        depth: u16,
    ) -> Result<bool, Stop> {
        use plan::{NO_ENTRY, Op};
        let program = self.program;
        let plan = &program.plan;
        let (ops, checks, segments) = (&plan.ops[..], &plan.checks[..], &plan.segments[..]);
        let limits = &program.limits;
        let data = r.data();
        let len = r.len_bits();
        let mut pos = r.bits_read();
        let mut count = self.count.get();
        let base = self.elements.len();
        let mut pc = entry as usize;
        loop {
            let Some(op) = ops.get(pc) else {
                return Ok(false);
            };
            pc += 1;
            match *op {
                Op::Run {
                    bits,
                    fields,
                    checks: (first, n),
                } => {
                    if pos + bits as u64 > len || !self.checked(plan::checks(checks, (first, n)), data, pos) {
                        return Ok(false);
                    }
                    pos += bits as u64;
                    count += fields;
                }
                Op::Cond {
                    slot,
                    negate,
                    bits,
                    fields,
                    checks: (first, n),
                } => {
                    if (self.slot(slot) != 0) == negate {
                        continue;
                    }
                    if pos + bits as u64 > len || !self.checked(plan::checks(checks, (first, n)), data, pos) {
                        return Ok(false);
                    }
                    pos += bits as u64;
                    count += fields;
                }
                Op::Unless { cond, to } => match eval(program.expr(cond), self.slots) {
                    Ok(0) => pc = to as usize,
                    Ok(_) => {}
                    Err(_) => return Ok(false),
                },
                Op::UnlessSlot { slot, negate, to } => {
                    if (self.slot(slot) == 0) != negate {
                        pc = to as usize;
                    }
                }
                Op::Goto { to } => pc = to as usize,
                Op::Array {
                    count: c,
                    body,
                    entry,
                    fixed,
                    flat,
                } => {
                    let n = match c {
                        Count::Const(n) => n,
                        Count::Expr(e) => match eval(program.expr(e), self.slots) {
                            Ok(n) => n.max(0) as u64,
                            Err(_) => return Ok(false),
                        },
                    };
                    if n > limits.max_elements {
                        return Ok(false);
                    }
                    // The array's group, then per element its group and body.
                    count += 1;
                    if n == 0 {
                        continue;
                    }
                    if fixed
                        && let Some(Op::Run {
                            bits,
                            fields,
                            checks: (first, k),
                        }) = ops.get(entry as usize)
                    {
                        // One run per element and no slot: one bounds check for all.
                        let total = n as u128 * (u64::from(*fields) + 1) as u128;
                        if pos as u128 + n as u128 * *bits as u128 > len as u128
                            || count as u128 + total > limits.max_fields as u128
                        {
                            return Ok(false);
                        }
                        let run = plan::checks(checks, (*first, *k));
                        if let [c] = run {
                            // The common element, one checked value: its place, mask and
                            // bound held in registers across the loop.
                            let (at, step, mask, max) = (pos + c.at as u64, *bits as u64, c.mask, c.max);
                            if (0..n).any(|i| BitReader::peek_masked(data, at + i * step, mask) > max) {
                                return Ok(false);
                            }
                        } else if !run.is_empty() {
                            for i in 0..n {
                                let at = pos + i * *bits as u64;
                                if run
                                    .iter()
                                    .any(|c| BitReader::peek_masked(data, at + c.at as u64, c.mask) > c.max)
                                {
                                    return Ok(false);
                                }
                            }
                        }
                        pos += n * *bits as u64;
                        count += total as u32;
                    } else if flat.1 > 0 || entry == NO_ENTRY {
                        let flat = segments
                            .get(flat.0 as usize..(flat.0 + flat.1) as usize)
                            .unwrap_or(&[]);
                        if let Some(f) = Flagged::of(flat, checks) {
                            if !self.flagged(f, n, data, len, (&mut pos, &mut count)) {
                                return Ok(false);
                            }
                            continue;
                        }
                        for _ in 0..n {
                            count += 1;
                            if !self.planned_element(
                                r,
                                out,
                                flat,
                                body,
                                (data, len),
                                (&mut pos, &mut count),
                                (parent, depth),
                            )? {
                                return Ok(false);
                            }
                        }
                    } else if self.elements.len() - base < ELEMENT_STACK {
                        count += 1;
                        self.elements.push(Element {
                            entry,
                            back: pc as u32,
                            left: n - 1,
                            max: -1,
                            previous: 0,
                        });
                        pc = entry as usize;
                    } else {
                        return Ok(false);
                    }
                }
                Op::RelativeList {
                    max,
                    body,
                    entry,
                    flat,
                } => {
                    // The list's group.
                    count += 1;
                    let Some(index) = relative_next(data, len, &mut pos, &mut count, -1, max) else {
                        return Ok(false);
                    };
                    if index == max {
                        continue;
                    }
                    if flat.1 > 0 || entry == NO_ENTRY {
                        let flat = segments
                            .get(flat.0 as usize..(flat.0 + flat.1) as usize)
                            .unwrap_or(&[]);
                        let mut previous = index;
                        let mut i = 0u64;
                        loop {
                            if !self.planned_element(
                                r,
                                out,
                                flat,
                                body,
                                (data, len),
                                (&mut pos, &mut count),
                                (parent, depth),
                            )? {
                                return Ok(false);
                            }
                            i += 1;
                            if i > limits.max_elements || count > limits.max_fields {
                                return Ok(false);
                            }
                            match relative_next(data, len, &mut pos, &mut count, previous, max) {
                                None => return Ok(false),
                                Some(index) if index == max => break,
                                Some(index) => previous = index,
                            }
                        }
                    } else if self.elements.len() - base < ELEMENT_STACK {
                        self.elements.push(Element {
                            entry,
                            back: pc as u32,
                            max,
                            previous: index,
                            left: 0,
                        });
                        pc = entry as usize;
                    } else {
                        return Ok(false);
                    }
                }
                Op::Node(id) => {
                    *r = BitReader::at(data, pos);
                    self.count.set(count);
                    self.node(r, out, id, parent, depth)?;
                    pos = r.bits_read();
                    count = self.count.get();
                }
                Op::Return => {
                    if self.elements.len() <= base {
                        break;
                    }
                    let Some(e) = self.elements.last_mut() else {
                        break;
                    };
                    // Every element adds a field: the limit bounds the work too.
                    if count > limits.max_fields {
                        return Ok(false);
                    }
                    let more = if e.max >= 0 {
                        // `left` counts the elements done.
                        e.left += 1;
                        if e.left > limits.max_elements {
                            return Ok(false);
                        }
                        match relative_next(data, len, &mut pos, &mut count, e.previous, e.max) {
                            None => return Ok(false),
                            Some(index) => {
                                e.previous = index;
                                index != e.max
                            }
                        }
                    } else if e.left > 0 {
                        e.left -= 1;
                        count += 1;
                        true
                    } else {
                        false
                    };
                    if more {
                        pc = e.entry as usize;
                    } else {
                        pc = e.back as usize;
                        self.elements.pop();
                    }
                }
            }
        }
        if count > limits.max_fields {
            return Ok(false);
        }
        *r = BitReader::at(data, pos);
        self.count.set(count);
        Ok(true)
    }

    /// One element of a flat body: its runs and conditional runs in order, a run not
    /// taken checked anyway and dropped, so the data's flags cost no branch. False: out
    /// of bits or a value out of range.
    #[inline(always)]
    fn segments(
        &mut self,
        segments: &[plan::Segment],
        checks: &[plan::Check],
        data: &[u8],
        len: u64,
        pos: &mut u64,
        count: &mut u32,
    ) -> bool {
        for s in segments {
            if s.slot != plan::NO_SLOT {
                let take = (self.slot(s.slot) != 0) != s.negate;
                // Taken or not without a branch on the flag (the data's own coin toss)
                // when there is nothing to check, or a window checks it all in a few
                // instructions (a conditional run fills no slot). Checks one by one
                // cost more than the branch saved.
                let bad = match &s.pack {
                    _ if s.checks.1 == 0 => Some(false),
                    Some(p) if p.slot_count == 0 => plan::window(data, *pos).map(|w| p.out_of_range(w) != 0),
                    _ => None,
                };
                if let Some(bad) = bad {
                    if take & ((*pos + s.bits as u64 > len) | bad) {
                        return false;
                    }
                    *pos += std::hint::select_unpredictable(take, s.bits as u64, 0);
                    *count += std::hint::select_unpredictable(take, s.fields, 0);
                    continue;
                }
                if !take {
                    continue;
                }
            }
            if *pos + s.bits as u64 > len {
                return false;
            }
            let ok = match (&s.pack, plan::window(data, *pos)) {
                (Some(p), Some(window)) => self.packed(p, window),
                _ => self.checked(plan::checks(checks, s.checks), data, *pos),
            };
            if !ok {
                return false;
            }
            *pos += s.bits as u64;
            *count += s.fields;
        }
        *count <= self.program.limits.max_fields
    }

    /// A run's checks from its window, the range checks two groups at once: what
    /// [`Exec::checked`] decides, in a few instructions a group instead of a dozen a
    /// value.
    #[inline(always)]
    fn packed(&mut self, p: &plan::Pack, window: u128) -> bool {
        if p.out_of_range(window) != 0 {
            return false;
        }
        for c in p.slots() {
            let v = (window >> c.at) as u32 & c.mask;
            if v > c.max {
                return false;
            }
            self.write_slot(c.slot, v as i64 + c.bias);
        }
        true
    }

    /// `n` elements of the [`Flagged`] shape: a bit, and the fields it guards skipped or
    /// not. What the segments would do, element by element, without their loop: the
    /// flag's slot, which only its own element reads, is written once, as the last
    /// element left it. False: out of bits or past the field limit.
    #[inline(always)]
    fn flagged(
        &mut self,
        f: Flagged,
        n: u64,
        data: &[u8],
        len: u64,
        (pos, count): (&mut u64, &mut u32),
    ) -> bool {
        let max_fields = self.program.limits.max_fields;
        let mut last = 0;
        for _ in 0..n {
            *count += 1 + f.flag_fields;
            if *pos >= len {
                return false;
            }
            last = BitReader::peek_masked(data, *pos, 1);
            *pos += 1;
            let take = (last != 0) != f.negate;
            if take & (*pos + f.bits as u64 > len) {
                return false;
            }
            *pos += std::hint::select_unpredictable(take, f.bits as u64, 0);
            *count += std::hint::select_unpredictable(take, f.fields, 0);
            if *count > max_fields {
                return false;
            }
        }
        if n > 0 {
            self.write_slot(f.slot, i64::from(last));
        }
        true
    }

    /// A run's range checks, its bits at `pos` known to lie in the datagram, and the
    /// slots its fields fill. False: a value out of range.
    #[inline(always)]
    fn checked(&mut self, checks: &[plan::Check], data: &[u8], pos: u64) -> bool {
        for c in checks {
            let v = BitReader::peek_masked(data, pos + c.at as u64, c.mask);
            if v > c.max {
                return false;
            }
            if c.slot != plan::NO_SLOT {
                self.write_slot(c.slot, v as i64 + c.bias);
            }
        }
        true
    }

    /// One array or list element inside a plan run, whose body has no plan of its own to
    /// jump to: its flat segments, or (none) the interpreter.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn planned_element(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        flat: &[plan::Segment],
        body: Block,
        (data, len): (&[u8], u64),
        (pos, count): (&mut u64, &mut u32),
        (parent, depth): (u32, u16),
    ) -> Result<bool, Stop> {
        if flat.is_empty() {
            return self.interpret(r, out, pos, count, body, parent, depth);
        }
        let checks = &self.program.plan.checks[..];
        Ok(self.segments(flat, checks, data, len, pos, count))
    }

    /// One element without a plan, read by the interpreter at `pos` inside a plan.
    #[allow(clippy::too_many_arguments)]
    fn interpret(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        pos: &mut u64,
        count: &mut u32,
        body: Block,
        parent: u32,
        depth: u16,
    ) -> Result<bool, Stop> {
        *r = BitReader::at(r.data(), *pos);
        self.count.set(*count);
        self.block(r, out, body, parent, depth)?;
        *pos = r.bits_read();
        *count = self.count.get();
        Ok(*count <= self.program.limits.max_fields)
    }
}
