//! A compiled loop applying one math function to arrays of numbers, as compiled code
//! does (scalar or on vectors, with or without FMA): what the accuracy tests measure.

use super::super::cx::{FnCx, Gen, R};
use super::Math;
use accel_ir::ScalarType;
use cranelift_codegen::ir::{types as ct, AbiParam, InstBuilder, MemFlagsData};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{Linkage, Module};
use std::collections::HashMap;

/// How a [`MathProbe`] is compiled.
#[derive(Clone, Copy, Debug)]
pub struct ProbeConfig {
    /// `f64` numbers (else `f32`).
    pub f64: bool,
    /// On 128-bit vectors (4 `f32` or 2 `f64` lanes), as SIMD code computes; else one
    /// number at a time, as scalar code does.
    pub vector: bool,
    /// Fused multiply-adds: `None` as the host has them.
    pub fma: Option<bool>,
    /// The platform's libm instead of the inlined library (`ACCEL_EXACT_MATH=1`).
    pub exact: bool,
}

/// A compiled loop `out[i] = name(xs[i], ys[i])` (`ys` only for two-argument functions).
pub struct MathProbe {
    code: usize,
    lanes: usize,
    f64: bool,
}

type Probe = extern "C" fn(*const u8, *const u8, *mut u8, u64) -> u32;

impl MathProbe {
    /// Compiles the loop for `name` (a float method: `exp`, `sin`, `powf`, …).
    pub fn new(name: &str, config: ProbeConfig) -> R<MathProbe> {
        let mut flags = settings::builder();
        flags.set("opt_level", "speed").map_err(|e| e.to_string())?;
        let isa = cranelift_native::builder()
            .map_err(|e| e.to_string())?
            .finish(settings::Flags::new(flags))
            .map_err(|e| e.to_string())?;
        let host_fma = isa
            .isa_flags()
            .iter()
            .filter(|f| f.name == "has_fma" || f.name == "has_avx")
            .all(|f| f.as_bool() == Some(true));
        let mut g = Gen {
            module: crate::cpu::codegen::jit_module(isa)?,
            helpers: HashMap::new(),
            records: HashMap::new(),
            kernels: 0,
            max_groups: 1,
            search_lanes: crate::cpu::codegen::spmd::GROUP,
            group_lanes: crate::cpu::codegen::spmd::GROUP,
            vector_registers: crate::cpu::codegen::spmd::CRANELIFT_VECTOR_REGISTERS,
            next_group: crate::cpu::codegen::spmd::GROUP,
            simd_loops: 0,
            shapes: Vec::new(),
            site_words: 0,
            row_inputs: HashMap::new(),
            manifests: HashMap::new(),
            listing: None,
            fma: config.fma.unwrap_or(host_fma) && host_fma,
            blendv: false,
            exact_math: config.exact,
            spmd: false,
            inner_gangs: false,
            spmd_fallbacks: Vec::new(),
            in_place: Default::default(),
            writes_in_place: false,
            rows_result: None,
            wrote_rows: false,
            pinned_lanes: None,
            out_row_bytes: None,
            defined: Vec::new(),
            deferred: None,
            llvm: None,
            llvm_on_miss: crate::cpu::llvm::OnMiss::Compile,
            llvm_from_disk: false,
            calls_scalar: false,
        };
        g.declare_helpers()?;
        let mut sig = g.module.make_signature();
        for _ in 0..4 {
            sig.params.push(AbiParam::new(ct::I64));
        }
        sig.returns.push(AbiParam::new(ct::I32));
        let id = g
            .module
            .declare_function("probe", Linkage::Local, &sig)
            .map_err(|e| e.to_string())?;
        let mut ctx = g.module.make_context();
        ctx.func.signature = sig;
        let mut fbc = FunctionBuilderContext::new();
        let t = match (config.f64, config.vector) {
            (true, true) => ct::F64X2,
            (true, false) => ct::F64,
            (false, true) => ct::F32X4,
            (false, false) => ct::F32,
        };
        let lanes = t.lane_count() as usize;
        {
            let b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
            let mut f = FnCx::new(b, &mut g, false);
            let entry = f.b.create_block();
            f.b.append_block_params_for_function_params(entry);
            f.b.switch_to_block(entry);
            let ps = f.b.block_params(entry).to_vec();
            let (xs, ys, out, n) = (ps[0], ps[1], ps[2], ps[3]);
            f.make_fail_block();
            let blocks = f.b.ins().udiv_imm_u(n, lanes as i64);
            let zero = f.iconst(0);
            let name = name.to_string();
            f.counted_loop(zero, blocks, ScalarType::Usize, |f, j| {
                let off = f.b.ins().imul_imm_s(j, t.bytes() as i64);
                let flags = MemFlagsData::trusted();
                let xa = f.b.ins().iadd(xs, off);
                let x = f.b.ins().load(t, flags, xa, 0);
                let ya = f.b.ins().iadd(ys, off);
                let y = f.b.ins().load(t, flags, ya, 0);
                let r = match f.inline_math(t, &name, &[x, y]) {
                    Some(r) => r,
                    None => {
                        let args: &[_] = if name == "powf" { &[x, y] } else { &[x] };
                        Math::new(f, t).call_lanes(&name, args)
                    }
                };
                let oa = f.b.ins().iadd(out, off);
                f.b.ins().store(flags, r, oa, 0);
                Ok(())
            })?;
            f.finish();
            let config = f.g.module.target_config();
            f.b.finalize(config);
        }
        g.define(id, &mut ctx, "the math probe")?;
        g.module.finalize_definitions().map_err(|e| e.to_string())?;
        let code = g.module.get_finalized_function(id) as usize;
        // The code lives as long as the process (probes are few).
        Box::leak(Box::new(g.module));
        Ok(MathProbe {
            code,
            lanes,
            f64: config.f64,
        })
    }

    /// `name(xs[i], ys[i])` for every `i` (`ys` shorter than `xs` counts as zeros).
    pub fn run_f64(&self, xs: &[f64], ys: &[f64]) -> Vec<f64> {
        assert!(self.f64, "an f64 probe");
        self.run(xs, ys)
    }

    /// `name(xs[i], ys[i])` for every `i` (`ys` shorter than `xs` counts as zeros).
    pub fn run_f32(&self, xs: &[f32], ys: &[f32]) -> Vec<f32> {
        assert!(!self.f64, "an f32 probe");
        self.run(xs, ys)
    }

    fn run<T: Copy + Default>(&self, xs: &[T], ys: &[T]) -> Vec<T> {
        let n = xs.len().div_ceil(self.lanes) * self.lanes;
        let mut x = xs.to_vec();
        x.resize(n, T::default());
        let mut y = ys.to_vec();
        y.resize(n, T::default());
        let mut out = vec![T::default(); n];
        // SAFETY: `code` is the probe compiled with the `Probe` signature; it reads `n`
        // numbers of `T` from `x` and `y` and writes `n` to `out`, all of that length.
        unsafe {
            let f: Probe = std::mem::transmute::<usize, Probe>(self.code);
            f(
                x.as_ptr().cast(),
                y.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                n as u64,
            );
        }
        out.truncate(xs.len());
        out
    }
}
