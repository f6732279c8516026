//! The machine code of one program: its blocks compiled into one JIT module, which
//! lives as long as the program's last clone and is freed with it.

use super::lower::{self, Unsupported};
use super::{BlockFn, Env, MAX_UNITS, Refusal};
use crate::plan::{NO_ENTRY, Plan};
use crate::program::Limits;
use cranelift_codegen::ir::{AbiParam, UserFuncName, types::I64};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use std::sync::Mutex;

pub(super) struct Code {
    /// The module that owns the code's memory (behind a lock only to be `Sync`: it is
    /// never touched again until it is freed).
    module: Mutex<Option<JITModule>>,
    /// Compiled blocks by plan entry (an index of the plan's ops: at most the budget's
    /// units, a load to find).
    functions: Vec<Option<BlockFn>>,
    /// The whole datagram's function, when the plan describes one and its parts compiled.
    pub(super) datagram: Option<BlockFn>,
    blocks: usize,
    pub(super) limits: Limits,
    pub(super) slots: usize,
    pub(super) size: usize,
}

impl Drop for Code {
    fn drop(&mut self) {
        if let Ok(mut m) = self.module.lock()
            && let Some(m) = m.take()
        {
            // SAFETY: the function pointers live in `self.functions` only, handed out
            // as copies that borrow the program holding this code, which is being
            // dropped: none is running or called after this.
            unsafe { m.free_memory() };
        }
    }
}

impl Code {
    pub(super) fn blocks(&self) -> usize {
        self.blocks
    }

    #[inline(always)]
    pub(super) fn function(&self, entry: u32) -> Option<BlockFn> {
        *self.functions.get(entry as usize)?
    }

    /// Compiles each of `entries` whose ops all compile. `Ok(None)`: none did.
    pub(super) fn compile(plan: &Plan, env: Env<'_>, entries: &[u32]) -> Result<Option<Code>, Refusal> {
        let mut entries: Vec<u32> = entries.iter().copied().filter(|&e| e != NO_ENTRY).collect();
        entries.sort_unstable();
        entries.dedup();
        // Sized before any code is made: refused whole, cheaply, when too large.
        let mut units = 0u64;
        let mut compilable = Vec::new();
        for &e in &entries {
            match lower::measure(plan, env, e) {
                Ok(n) => {
                    units += n;
                    compilable.push(e);
                }
                Err(Unsupported::TooLarge) => units = MAX_UNITS + 1,
                Err(Unsupported::Op) => {}
            }
            if units > MAX_UNITS {
                return Err(Refusal::TooLarge { units });
            }
        }
        if compilable.is_empty() {
            return Ok(None);
        }
        // The whole datagram's function reads the header's plan again: made only
        // within the budget.
        let whole = plan.datagram.is_some()
            && units.saturating_add(lower::measure(plan, env, plan.header).unwrap_or(0)) <= MAX_UNITS;
        let mut module = module(units > QUICK_UNITS).map_err(Refusal::Host)?;
        let mut ctx = module.make_context();
        let mut fctx = FunctionBuilderContext::new();
        let mut ids = Vec::new();
        let mut size = 0;
        for (n, &entry) in compilable.iter().enumerate() {
            let mut sig = module.make_signature();
            sig.params.extend([AbiParam::new(I64); 5]);
            sig.returns.push(AbiParam::new(I64));
            let id = module
                .declare_function(&format!("block{entry}"), Linkage::Local, &sig)
                .map_err(|e| Refusal::Host(e.to_string()))?;
            ctx.func.signature = sig;
            ctx.func.name = UserFuncName::user(0, n as u32);
            if lower::function(&mut ctx.func, &mut fctx, module.target_config(), plan, env, entry).is_err() {
                module.clear_context(&mut ctx);
                continue;
            }
            module
                .define_function(id, &mut ctx)
                .map_err(|e| Refusal::Host(e.to_string()))?;
            size += ctx.compiled_code().map_or(0, |c| c.code_buffer().len());
            module.clear_context(&mut ctx);
            ids.push((entry, id));
        }
        let datagram = self::datagram(&mut module, &mut ctx, &mut fctx, plan, env, &ids, whole)?;
        let datagram = datagram.map(|(id, bytes)| {
            size += bytes;
            id
        });
        module
            .finalize_definitions()
            .map_err(|e| Refusal::Host(e.to_string()))?;
        let mut functions = vec![None; ids.iter().map(|&(e, _)| e as usize + 1).max().unwrap_or(0)];
        let blocks = ids.len();
        for (entry, id) in ids {
            let p = module.get_finalized_function(id);
            // SAFETY: `p` is the entry of a function just compiled with the signature
            // `BlockFn` describes (five 64-bit integers or pointers in, one out, the
            // platform's C calling convention: `make_signature`'s default).
            let f = unsafe { std::mem::transmute::<*const u8, BlockFn>(p) };
            if let Some(slot) = functions.get_mut(entry as usize) {
                *slot = Some(f);
            }
        }
        let datagram = datagram.map(|id| {
            let p = module.get_finalized_function(id);
            // SAFETY: as for the blocks above: compiled with the `BlockFn` signature.
            unsafe { std::mem::transmute::<*const u8, BlockFn>(p) }
        });
        Ok(Some(Code {
            module: Mutex::new(Some(module)),
            functions,
            datagram,
            blocks,
            limits: env.limits,
            slots: env.slots,
            size,
        }))
    }
}

/// Compiles the whole datagram's function, when the plan describes one, the header
/// compiled and every body with a plan compiled (`ids`: the blocks compiled, by entry).
fn datagram(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    plan: &Plan,
    env: Env<'_>,
    ids: &[(u32, FuncId)],
    whole: bool,
) -> Result<Option<(FuncId, usize)>, Refusal> {
    let compiled = |e: u32| ids.iter().find(|&&(x, _)| x == e).map(|&(_, id)| id);
    let Some(d) = plan.datagram.filter(|_| whole) else {
        return Ok(None);
    };
    let bodies: Vec<Option<FuncId>> = plan.bodies.iter().map(|&e| compiled(e)).collect();
    let all = plan
        .bodies
        .iter()
        .all(|&e| e == NO_ENTRY || compiled(e).is_some());
    if compiled(plan.header).is_none() || !all || bodies.iter().all(Option::is_none) {
        return Ok(None);
    }
    let mut sig = module.make_signature();
    sig.params.extend([AbiParam::new(I64); 5]);
    sig.returns.push(AbiParam::new(I64));
    let id = module
        .declare_function("datagram", Linkage::Local, &sig)
        .map_err(|e| Refusal::Host(e.to_string()))?;
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, u32::MAX);
    let refs: Vec<_> = bodies
        .iter()
        .map(|b| b.map(|f| module.declare_func_in_func(f, &mut ctx.func)))
        .collect();
    let config = module.target_config();
    let read = |l: &mut lower::Lower, done| l.datagram(d, &refs, done);
    if lower::build(&mut ctx.func, fctx, config, plan, env, read).is_err() {
        module.clear_context(ctx);
        return Ok(None);
    }
    module
        .define_function(id, ctx)
        .map_err(|e| Refusal::Host(e.to_string()))?;
    let size = ctx.compiled_code().map_or(0, |c| c.code_buffer().len());
    module.clear_context(ctx);
    Ok(Some((id, size)))
}

/// Units past which a definition's code is made quickly rather than well: Cranelift's
/// optimizer and register allocator took over half a second on 5,000 fields.
const QUICK_UNITS: u64 = 2_000;

/// A JIT module for this machine, its code optimized for speed (`quick`: made fast,
/// without the optimizer and with the single-pass register allocator).
fn module(quick: bool) -> Result<JITModule, String> {
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| f.set(k, v).map_err(|e| e.to_string());
    set(&mut flags, "opt_level", if quick { "none" } else { "speed" })?;
    if quick {
        set(&mut flags, "regalloc_algorithm", "single_pass")?;
    }
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(&mut flags, "is_pic", "false")?;
    // The IR is made by this crate's lowering, tested; verifying it again at every load
    // doubled compile time.
    set(&mut flags, "enable_verifier", "false")?;
    let isa = cranelift_native::builder()
        .map_err(|e| format!("no code generator for this machine: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    Ok(JITModule::new(JITBuilder::with_isa(isa, default_libcall_names())))
}
