//! The plan executor: a block's validation plan (`plan.rs`) run over the datagram —
//! runs of fixed-width leaves under one bounds check, flagged fields, arrays and lists
//! looped in place. A block it cannot decide goes back to the interpreter, which says
//! where and why.

use super::*;
use crate::native::{Io, NODE_READ, NODE_STOPPED, Ran};

/// What the interpreter reads a node with for compiled code ([`read_node`]).
struct NodeCx<'e, 'p, 'd> {
    exec: &'e mut Exec<'p>,
    r: BitReader<'d>,
    out: &'e mut Dissection,
    parent: u32,
    depth: u16,
}

/// Reads node `id` for compiled code at `io.pos`, as `run_ops` reads an `Op::Node`.
///
/// # Safety
///
/// `cx` is a live `NodeCx` no one else uses during the call, `io` a live `Io`.
unsafe extern "C" fn read_node(cx: *mut std::ffi::c_void, io: *mut Io, id: u32) -> u32 {
    // SAFETY: as the caller vouches (`Exec::run_native` made both for this call).
    let (cx, io) = unsafe { (&mut *cx.cast::<NodeCx>(), &mut *io) };
    cx.r = BitReader::at(cx.r.data(), io.pos);
    cx.exec.count.set(io.count);
    cx.exec.seen = io.seen;
    match cx.exec.node(&mut cx.r, cx.out, id, cx.parent, cx.depth) {
        Ok(()) => {
            io.pos = cx.r.bits_read();
            io.count = cx.exec.count.get();
            io.seen = cx.exec.seen;
            NODE_READ
        }
        Err(Stop) => NODE_STOPPED,
    }
}

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

/// Where a plan run is: the datagram and its length in bits, the next bit, the fields
/// counted, the next op, and where the run's own open elements start on the stack.
struct Cursor<'d> {
    data: &'d [u8],
    len: u64,
    pos: u64,
    count: u32,
    pc: usize,
    base: usize,
}

impl Cursor<'_> {
    /// Goes on at op `to` (true, for the loop).
    #[inline(always)]
    fn jump(&mut self, to: u32) -> bool {
        self.pc = to as usize;
        true
    }
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
        // A block read again must start from the slots it started from: a run that
        // failed may have written one that an expression before it reads.
        let (saved, seen) = (self.saved.len(), self.seen);
        for &s in &self.program.plan.read_slots {
            self.saved.push(self.slot(s));
        }
        let done = match self.run_native(r, out, entry, parent, depth) {
            Some(done) => done,
            None => {
                let base = self.elements.len();
                let done = self.run_ops(r, out, entry, parent, depth);
                self.elements.truncate(base);
                done
            }
        };
        if matches!(done, Ok(false)) {
            self.fallbacks += 1;
            self.seen = seen;
            for (i, &s) in self.program.plan.read_slots.iter().enumerate() {
                let v = self.saved.get(saved + i).copied().unwrap_or(0);
                if let Some(x) = self.slots.get_mut(s as usize) {
                    *x = v;
                }
            }
        }
        self.saved.truncate(saved);
        done
    }

    /// The block at `entry` by its compiled code, when it has some: what `run_ops` would
    /// answer (true: read, the reader after it; false: the interpreter must read it
    /// again; `Stop`: a node it left to the interpreter recorded a fault). None: no
    /// compiled code here, or compiled code is running already (a node it left to the
    /// interpreter reads its own blocks with the plan executor).
    #[inline(always)]
    fn run_native(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        entry: u32,
        parent: u32,
        depth: u16,
    ) -> Option<Result<bool, Stop>> {
        if !self.native {
            return None;
        }
        let program = self.program;
        let block = program.native.block(entry, self.slots.len(), &program.limits)?;
        Some(self.call_native(block, r, out, parent, depth))
    }

    /// The whole datagram by its compiled function ([`plan::Datagram`]), as
    /// [`Exec::run_native`] answers for a block; None: there is none.
    #[inline(always)]
    pub(super) fn datagram_native(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
    ) -> Option<Result<bool, Stop>> {
        if !self.native || self.record {
            return None;
        }
        let program = self.program;
        let whole = program.native.datagram(self.slots.len(), &program.limits)?;
        Some(self.call_native(whole, r, out, ROOT, 0))
    }

    /// Runs compiled code from the reader's position.
    #[inline(always)]
    fn call_native(
        &mut self,
        block: crate::native::Compiled,
        r: &mut BitReader,
        out: &mut Dissection,
        parent: u32,
        depth: u16,
    ) -> Result<bool, Stop> {
        let data = r.data();
        let (len, pos) = (r.len_bits(), r.bits_read());
        // Not copied again while the block runs: nodes it leaves to the interpreter run
        // no compiled code (`native` is off until it returns).
        let padded: *const [u8] = self.padded.of(data);
        self.native = false;
        // The state a node left to the interpreter is read with, behind one pointer.
        let mut cx = NodeCx {
            exec: &mut *self,
            r: BitReader::at(data, pos),
            out: &mut *out,
            parent,
            depth,
        };
        let mut io = crate::native::Io {
            count: cx.exec.count.get(),
            seen: cx.exec.seen,
            pos,
            cx: (&raw mut cx).cast(),
            call: read_node,
        };
        let slots: *mut [i64] = cx.exec.slots.as_mut_slice();
        // SAFETY: `slots` are the interpreter's, alive through the call, which the
        // compiled code and `read_node` (through `cx`, while the compiled code waits
        // for it) take turns at; `io.call` is `read_node`, `io.cx` the `NodeCx` above,
        // alive and not otherwise used until the call returns; `padded` is the
        // dissector's copy of the datagram, which nothing writes meanwhile.
        let ran = unsafe { block.run(&*padded, len, pos, slots, &mut io) };
        self.native = true;
        match ran {
            Ran::Read(end) => {
                *r = BitReader::at(data, end);
                self.count.set(io.count);
                self.seen = io.seen;
                Ok(true)
            }
            Ran::No => Ok(false),
            Ran::Stopped => Err(Stop),
        }
    }

    /// The plan loop: one op at a time until the entry's `Return` (see [`Exec::run_plan`]).
    #[inline(never)]
    fn run_ops(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        entry: u32,
        parent: u32,
        depth: u16,
    ) -> Result<bool, Stop> {
        use plan::Op;
        let program = self.program;
        let (ops, checks) = (&program.plan.ops[..], &program.plan.checks[..]);
        let mut at = Cursor {
            data: r.data(),
            len: r.len_bits(),
            pos: r.bits_read(),
            count: self.count.get(),
            pc: entry as usize,
            base: self.elements.len(),
        };
        loop {
            let Some(op) = ops.get(at.pc) else {
                return Ok(false);
            };
            at.pc += 1;
            let ok = match *op {
                Op::Run {
                    bits,
                    fields,
                    checks: run,
                } => self.plan_run(&mut at, plan::checks(checks, run), bits, fields),
                Op::Cond {
                    slot,
                    negate,
                    bits,
                    fields,
                    checks: run,
                } => {
                    (self.slot(slot) != 0) == negate
                        || self.plan_run(&mut at, plan::checks(checks, run), bits, fields)
                }
                Op::Unless { cond, to } => match eval(program.expr(cond), self.slots) {
                    Ok(0) => at.jump(to),
                    Ok(_) => true,
                    Err(_) => false,
                },
                Op::UnlessSlot { slot, negate, to } => (self.slot(slot) != 0) != negate || at.jump(to),
                Op::Goto { to } => at.jump(to),
                Op::Array {
                    count,
                    body,
                    entry,
                    fixed,
                    flat,
                } => self.plan_array(
                    r,
                    out,
                    &mut at,
                    (count, body, entry, fixed, flat),
                    (parent, depth),
                )?,
                Op::RelativeList {
                    max,
                    body,
                    entry,
                    flat,
                } => self.plan_list(r, out, &mut at, (max, body, entry, flat), (parent, depth))?,
                Op::Node(id) => {
                    *r = BitReader::at(at.data, at.pos);
                    self.count.set(at.count);
                    self.node(r, out, id, parent, depth)?;
                    at.pos = r.bits_read();
                    at.count = self.count.get();
                    true
                }
                Op::Return => match self.element_end(&mut at) {
                    Some(true) => true,
                    Some(false) => break,
                    None => false,
                },
            };
            if !ok {
                return Ok(false);
            }
        }
        if at.count > program.limits.max_fields {
            return Ok(false);
        }
        *r = BitReader::at(at.data, at.pos);
        self.count.set(at.count);
        Ok(true)
    }

    /// A run of fixed-width leaves: one bounds check, its range checks. False: out of
    /// bits or a value out of range.
    #[inline(always)]
    fn plan_run(&mut self, at: &mut Cursor, checks: &[plan::Check], bits: u32, fields: u32) -> bool {
        if at.pos + bits as u64 > at.len || !self.checked(checks, at.data, at.pos) {
            return false;
        }
        at.pos += bits as u64;
        at.count += fields;
        true
    }

    /// An array: its count, then its elements read in place (fixed runs, flat or flagged
    /// bodies), or its body's plan entered with an open element on the stack.
    #[inline(always)]
    fn plan_array(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        at: &mut Cursor,
        (c, body, entry, fixed, flat): (Count, Block, u32, bool, (u32, u32)),
        (parent, depth): (u32, u16),
    ) -> Result<bool, Stop> {
        let limits = &self.program.limits;
        let n = match c {
            Count::Const(n) => n,
            Count::Expr(e) => match eval(self.program.expr(e), self.slots) {
                Ok(n) => n.max(0) as u64,
                Err(_) => return Ok(false),
            },
        };
        if n > limits.max_elements {
            return Ok(false);
        }
        // The array's group, then per element its group and body.
        at.count += 1;
        if n == 0 {
            return Ok(true);
        }
        let ops = &self.program.plan.ops[..];
        if fixed && let Some(&plan::Op::Run { bits, fields, checks }) = ops.get(entry as usize) {
            return Ok(self.fixed_elements(at, n, bits, fields, checks));
        }
        if flat.1 > 0 || entry == plan::NO_ENTRY {
            let segments = &self.program.plan.segments[..];
            let flat = segments
                .get(flat.0 as usize..(flat.0 + flat.1) as usize)
                .unwrap_or(&[]);
            if let Some(f) = Flagged::of(flat, &self.program.plan.checks) {
                return Ok(self.flagged(f, n, at.data, at.len, (&mut at.pos, &mut at.count)));
            }
            for _ in 0..n {
                at.count += 1;
                let cursor = (&mut at.pos, &mut at.count);
                if !self.planned_element(r, out, flat, body, (at.data, at.len), cursor, (parent, depth))? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        at.count += 1;
        Ok(self.open_element(at, entry, n - 1, -1, 0))
    }

    /// `n` elements of one run each and no slot: one bounds check for all, the range
    /// checks in a tight loop.
    #[inline(always)]
    fn fixed_elements(&mut self, at: &mut Cursor, n: u64, bits: u32, fields: u32, run: (u32, u32)) -> bool {
        let limits = &self.program.limits;
        let total = n as u128 * (u64::from(fields) + 1) as u128;
        if at.pos as u128 + n as u128 * bits as u128 > at.len as u128
            || at.count as u128 + total > limits.max_fields as u128
        {
            return false;
        }
        let (data, pos) = (at.data, at.pos);
        let run = plan::checks(&self.program.plan.checks, run);
        if let [c] = run {
            // The common element, one checked value: its place, mask and bound held in
            // registers across the loop.
            let (first, step, mask, max) = (pos + c.at as u64, bits as u64, c.mask, c.max);
            if (0..n).any(|i| BitReader::peek_masked(data, first + i * step, mask) > max) {
                return false;
            }
        } else if !run.is_empty() {
            for i in 0..n {
                let el = pos + i * bits as u64;
                if run
                    .iter()
                    .any(|c| BitReader::peek_masked(data, el + c.at as u64, c.mask) > c.max)
                {
                    return false;
                }
            }
        }
        at.pos += n * bits as u64;
        at.count += total as u32;
        true
    }

    /// A list of relative indices: its first index, then its elements read in place
    /// (flat bodies) or its body's plan entered with an open element on the stack.
    #[inline(always)]
    fn plan_list(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        at: &mut Cursor,
        (max, body, entry, flat): (i64, Block, u32, (u32, u32)),
        (parent, depth): (u32, u16),
    ) -> Result<bool, Stop> {
        // The list's group.
        at.count += 1;
        let Some(index) = relative_next(at.data, at.len, &mut at.pos, &mut at.count, -1, max) else {
            return Ok(false);
        };
        if index == max {
            return Ok(true);
        }
        if flat.1 == 0 && entry != plan::NO_ENTRY {
            return Ok(self.open_element(at, entry, 0, max, index));
        }
        let limits = &self.program.limits;
        let flat = self
            .program
            .plan
            .segments
            .get(flat.0 as usize..(flat.0 + flat.1) as usize)
            .unwrap_or(&[]);
        let mut previous = index;
        let mut i = 0u64;
        loop {
            let cursor = (&mut at.pos, &mut at.count);
            if !self.planned_element(r, out, flat, body, (at.data, at.len), cursor, (parent, depth))? {
                return Ok(false);
            }
            i += 1;
            if i > limits.max_elements || at.count > limits.max_fields {
                return Ok(false);
            }
            match relative_next(at.data, at.len, &mut at.pos, &mut at.count, previous, max) {
                None => return Ok(false),
                Some(index) if index == max => return Ok(true),
                Some(index) => previous = index,
            }
        }
    }

    /// Enters an element's plan, coming back to the op after this one when the last is
    /// done. False: the stack of open elements is full (the interpreter reads it).
    #[inline(always)]
    fn open_element(&mut self, at: &mut Cursor, entry: u32, left: u64, max: i64, previous: i64) -> bool {
        if self.elements.len() - at.base >= ELEMENT_STACK {
            return false;
        }
        self.elements.push(Element {
            entry,
            back: at.pc as u32,
            left,
            max,
            previous,
        });
        at.pc = entry as usize;
        true
    }

    /// An element's `Return`: into the next element, back after the array or list, or
    /// (`Some(false)`) the run's own end. None: past a limit, or a list index that does
    /// not read.
    #[inline(always)]
    fn element_end(&mut self, at: &mut Cursor) -> Option<bool> {
        let limits = &self.program.limits;
        if self.elements.len() <= at.base {
            return Some(false);
        }
        let e = self.elements.last_mut()?;
        // Every element adds a field: the limit bounds the work too.
        if at.count > limits.max_fields {
            return None;
        }
        let more = if e.max >= 0 {
            // `left` counts the elements done.
            e.left += 1;
            if e.left > limits.max_elements {
                return None;
            }
            let index = relative_next(at.data, at.len, &mut at.pos, &mut at.count, e.previous, e.max)?;
            e.previous = index;
            index != e.max
        } else if e.left > 0 {
            e.left -= 1;
            at.count += 1;
            true
        } else {
            false
        };
        if more {
            at.pc = e.entry as usize;
        } else {
            at.pc = e.back as usize;
            self.elements.pop();
        }
        Some(true)
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
