//! The compiled reader: the validation plan (`plan.rs`) compiled to machine code when a
//! definition loads, with Cranelift (feature `jit`). Each top-level block's plan — the
//! header, the fragment header, every packet type's body — becomes one function over
//! the datagram that reads every field, checks every range, follows conditions, arrays
//! and lists, and writes the slots later ops and roles read: what the plan executor
//! (`exec/planned.rs`) does, without dispatching ops. It takes the plan (and the
//! expressions, slots and limits the plan refers to) as its only input.
//!
//! A compiled function answers as the plan does: the block read, or "no" — and then the
//! interpreter reads the block again and says where and why. A block with an op it
//! cannot compile (a node only the interpreter reads, an op it does not know) stays
//! with the plan executor, whole; a definition too large for the budget is refused
//! ([`Refusal`]) and runs interpreted. `--no-jit` or `GPCAP_NO_JIT=1` ([`set_enabled`])
//! keeps every definition interpreted: the interpreter is the oracle the compiled code
//! is tested against.

use super::plan::Plan;
use super::program::Limits;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "jit")]
mod aligned;
#[cfg(feature = "jit")]
mod code;
#[cfg(feature = "jit")]
mod datagram;
#[cfg(feature = "jit")]
mod expr;
#[cfg(feature = "jit")]
mod lower;

/// Zero bytes the compiled code may read past a datagram's last byte: it loads 8 bytes
/// at a time at byte offsets up to the datagram's length, so its buffer is the datagram
/// followed by these ([`Padded`]).
pub const PADDING: usize = 16;

/// What a compiled block reads and writes besides the datagram and the slots: the
/// fields counted (in and out) and the role slots written (a bit each, or-ed in); and
/// for a node it leaves to the interpreter, the position and the call that reads it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Io {
    pub count: u32,
    pub seen: u32,
    /// The position, handed to `call` and back.
    pub pos: u64,
    /// What `call` reads the node with (the interpreter's state).
    pub cx: *mut std::ffi::c_void,
    /// Reads node `id` at `pos` with `cx`, updating this `Io`: [`NODE_READ`], or
    /// [`NODE_STOPPED`] (a fault, recorded: the packet stops).
    pub call: NodeFn,
}

/// The interpreter reading one node for compiled code: (its state, the [`Io`], the
/// node) → [`NODE_READ`] or [`NODE_STOPPED`].
pub type NodeFn = unsafe extern "C" fn(*mut std::ffi::c_void, *mut Io, u32) -> u32;

pub const NODE_READ: u32 = 0;
pub const NODE_STOPPED: u32 = 1;

/// A compiled block's answer when a node it left to the interpreter stopped the packet.
pub const STOPPED: u64 = u64::MAX - 1;

/// What a compiled block did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// Read to the bit given.
    Read(u64),
    /// Undecided: the interpreter must read the block again.
    No,
    /// The interpreter, reading a node for it, recorded a fault.
    Stopped,
}

/// A compiled block: (datagram, its length in bits, the bit to start at, the slots,
/// the [`Io`]) → the bit after the block, [`FAILED`] or [`STOPPED`].
pub type BlockFn = unsafe extern "C" fn(*const u8, u64, u64, *mut i64, *mut Io) -> u64;

/// A compiled block's answer when it cannot decide: the interpreter reads it again.
pub const FAILED: u64 = u64::MAX;

/// Ops and range checks lowered in all, at most (an array's body counts where it is
/// used): past them a definition is refused for compilation, whose compile time would
/// pass the budget (250 ms).
pub const MAX_UNITS: u64 = 20_000;

/// Array and list elements nested in one compiled block, at most (deeper: the block
/// stays with the plan executor).
pub const MAX_NEST: u32 = 8;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Whether definitions compiled from now on get native code (`--no-jit` turns it off
/// for the whole process; the command line reads `GPCAP_NO_JIT` too).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    cfg!(feature = "jit") && ENABLED.load(Ordering::Relaxed)
}

/// Why a definition runs interpreted although compiled code was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Past [`MAX_UNITS`]: `units` ops to lower.
    TooLarge { units: u64 },
    /// No code generator for this machine, or it failed (its words).
    Host(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooLarge { units } => write!(
                f,
                "too large to compile ({units} plan ops, at most {MAX_UNITS}): it runs interpreted, with the same results"
            ),
            Refusal::Host(why) => write!(
                f,
                "not compiled ({why}): it runs interpreted, with the same results"
            ),
        }
    }
}

/// A program's compiled blocks, by plan entry; shared by every clone of the program.
#[derive(Clone, Default)]
pub struct Native {
    #[cfg(feature = "jit")]
    code: Option<std::sync::Arc<code::Code>>,
    refused: Option<Refusal>,
}

impl std::fmt::Debug for Native {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Native")
            .field("blocks", &self.blocks())
            .field("refused", &self.refused)
            .finish()
    }
}

/// Compiled code is made from the plan: two programs are equal by their plans.
impl PartialEq for Native {
    fn eq(&self, _: &Native) -> bool {
        true
    }
}

/// What the compiled code refers to besides the plan: the expressions' code, how many
/// slots the dissector holds, the limits.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub code: &'a [super::expr::Op],
    pub slots: usize,
    pub limits: Limits,
}

impl Native {
    /// Compiles the top-level blocks of `plan` (`entries`: the header's, the fragment
    /// header's, each body's), those whose ops all compile; nothing when compiled code
    /// is off ([`set_enabled`]) or the feature is not built.
    pub fn compile(plan: &Plan, env: Env<'_>, entries: &[u32]) -> Native {
        if !enabled() {
            return Native::default();
        }
        #[cfg(feature = "jit")]
        {
            match code::Code::compile(plan, env, entries) {
                Ok(Some(c)) => Native {
                    code: Some(std::sync::Arc::new(c)),
                    refused: None,
                },
                Ok(None) => Native::default(),
                Err(r) => Native {
                    code: None,
                    refused: Some(r),
                },
            }
        }
        #[cfg(not(feature = "jit"))]
        {
            let _ = (plan, env, entries);
            Native::default()
        }
    }

    /// Why this program has no compiled code although it was asked for.
    pub fn refused(&self) -> Option<&Refusal> {
        self.refused.as_ref()
    }

    /// Blocks compiled.
    pub fn blocks(&self) -> usize {
        #[cfg(feature = "jit")]
        {
            self.code.as_ref().map_or(0, |c| c.blocks())
        }
        #[cfg(not(feature = "jit"))]
        0
    }

    /// Bytes of machine code.
    pub fn code_size(&self) -> usize {
        #[cfg(feature = "jit")]
        {
            self.code.as_ref().map_or(0, |c| c.size)
        }
        #[cfg(not(feature = "jit"))]
        0
    }

    /// The compiled function of a whole datagram ([`crate::plan::Datagram`]), on the
    /// terms of [`Native::block`].
    #[inline(always)]
    pub fn datagram(&self, slots: usize, limits: &Limits) -> Option<Compiled> {
        #[cfg(feature = "jit")]
        {
            let c = self.code.as_ref()?;
            if slots < c.slots || *limits != c.limits {
                return None;
            }
            c.datagram.map(|f| Compiled { f })
        }
        #[cfg(not(feature = "jit"))]
        {
            let _ = (slots, limits);
            None
        }
    }

    /// The compiled block at plan entry `entry`, for a dissector holding `slots` slots
    /// under `limits`: none when the block did not compile, or the program was compiled
    /// for other limits or more slots.
    #[inline(always)]
    pub fn block(&self, entry: u32, slots: usize, limits: &Limits) -> Option<Compiled> {
        #[cfg(feature = "jit")]
        {
            let c = self.code.as_ref()?;
            if slots < c.slots || *limits != c.limits {
                return None;
            }
            c.function(entry).map(|f| Compiled { f })
        }
        #[cfg(not(feature = "jit"))]
        {
            let _ = (entry, slots, limits);
            None
        }
    }
}

/// A compiled block, ready to call on a [`Padded`] datagram.
#[derive(Clone, Copy)]
pub struct Compiled {
    #[cfg_attr(not(feature = "jit"), allow(dead_code))]
    f: BlockFn,
}

/// A datagram copied with [`PADDING`] zero bytes after it, reused from one datagram to
/// the next: what compiled code reads.
#[derive(Debug, Clone, Default)]
pub struct Padded {
    buf: Vec<u8>,
    /// The datagram copied (its address and length), so that one copy serves every
    /// block of it.
    from: (usize, usize),
}

impl Padded {
    /// `data` and its padding (copied unless it is the datagram copied last).
    #[inline]
    pub fn of(&mut self, data: &[u8]) -> &[u8] {
        let from = (data.as_ptr() as usize, data.len());
        let need = data.len() + PADDING;
        if self.from != from || self.buf.len() < need {
            if self.buf.len() < need {
                self.buf.resize(need.max(2048), 0);
            }
            if let Some((head, tail)) = self.buf.split_at_mut_checked(data.len()) {
                head.copy_from_slice(data);
                if let Some(pad) = tail.first_chunk_mut::<PADDING>() {
                    *pad = [0; PADDING];
                }
            }
            self.from = from;
        }
        self.buf.get(..need).unwrap_or(&[])
    }

    /// Forgets the copy: the next datagram may sit where this one was.
    #[inline]
    pub fn reset(&mut self) {
        self.from = (0, 0);
    }
}

impl Compiled {
    /// Runs the block over `padded` (a datagram of `len_bits` bits and its padding) from
    /// bit `pos`, with `slots` and `io`.
    ///
    /// # Safety
    ///
    /// `slots` is valid for reads and writes for the whole call, by the compiled code
    /// and by `io.call`; `io.call`, called with `io.cx`, `io` and a node of the
    /// program, must be sound for the whole call (it reads that node and returns).
    #[inline(always)]
    pub unsafe fn run(&self, padded: &[u8], len_bits: u64, pos: u64, slots: *mut [i64], io: &mut Io) -> Ran {
        #[cfg(feature = "jit")]
        {
            let bytes = (len_bits / 8) as usize;
            if padded.len() < bytes + PADDING || !len_bits.is_multiple_of(8) || pos > len_bits {
                return Ran::No;
            }
            // SAFETY: the code was compiled from this program's plan for at most
            // `slots.len()` slots (`Native::block` checked; the caller vouches for
            // them), and it reads and writes
            // only these buffers: the slots by indices below that count, `io` in place,
            // and `padded` by 8-byte loads at byte offsets up to `len_bits / 8` — no
            // position it reads at passes `len_bits` (each advance is checked against
            // it, and `pos` was above) — which the `PADDING` bytes after the datagram
            // make readable. It allocates nothing and calls only `io.call`, which the
            // caller vouches for; the slots and `io` it reads again after that call.
            let end = unsafe { (self.f)(padded.as_ptr(), len_bits, pos, slots.cast::<i64>(), io) };
            match end {
                FAILED => Ran::No,
                STOPPED => Ran::Stopped,
                end => Ran::Read(end),
            }
        }
        #[cfg(not(feature = "jit"))]
        {
            let _ = (padded, len_bits, pos, slots, io);
            Ran::No
        }
    }
}
