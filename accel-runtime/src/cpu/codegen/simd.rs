//! SIMD: reductions with a primitive commutative operator and producers whose element is
//! straight-line arithmetic of one scalar type on in-bounds loads run on the tier's vectors
//! (128 bits with Cranelift, the host's width with LLVM), the rest element by element.
//!
//! A reduction keeps [`REDUCTION_BYTES`] of partial results whatever the tier: element
//! `lo + i` goes to partial `i % P` (`P` partials of the element's size), in as many vector
//! accumulators as the tier's width makes them (eight of 128 bits, two of 512), and the
//! partials are folded by halving (`p + p + P/2`, then `p + p + P/4`, ...), which any split
//! into power-of-two vectors computes alike: the tiers' results are the same bits, and
//! eight independent add chains keep Cranelift's 128-bit code as busy as LLVM's two
//! 512-bit chains.

use super::cx::*;
use super::ops::Producer;
use super::proofs::{affine_key, affine_offset};
use accel_ir::consts::const_type;
use accel_ir::ops::{delayed, Reduce};
use accel_ir::passes::recognize::{primitive, Prim};
use accel_ir::{BinOp, Expr, Lit, Pat, ScalarType, Stmt, Type, UnOp};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types as ct, InstBuilder, MemFlagsData, Value};
use std::collections::HashMap;

/// The bytes of partial results a SIMD reduction keeps (see the module's documentation):
/// sixteen `f64`s, thirty-two `f32`s.
const REDUCTION_BYTES: usize = 128;

/// A reduction [`FnCx::vector_reduce`] runs on vectors: its operator, number type, vector
/// type and lanes, element body and the affine loads to check before the loop.
pub(super) struct VectorReduce {
    prim: Prim,
    s: ScalarType,
    vt: CType,
    lanes: usize,
    body: Expr,
    affine: Vec<(String, Expr, Expr)>,
}

impl FnCx<'_, '_> {
    /// How [`vector_reduce`](Self::vector_reduce) would run `r`, or `None` when it does
    /// not qualify.
    pub(super) fn vector_reduce_shape(&self, r: Reduce<'_>) -> R<Option<VectorReduce>> {
        let Some(prim) = primitive(r.op) else {
            return Ok(None);
        };
        let Type::Scalar(s) = self.type_of(r.ne)? else {
            return Ok(None);
        };
        let Some((vt, lanes)) = self.tier_vector_of(s) else {
            return Ok(None);
        };
        let min_max_ok = matches!(s, ScalarType::I32 | ScalarType::U32);
        if matches!(prim, Prim::Min | Prim::Max) && !min_max_ok {
            return Ok(None);
        }
        // The element as a body over an index parameter, and the sequences safe to load.
        let (param, body, safe): (String, Expr, Vec<String>) = match (r.xs, delayed(r.xs)) {
            (_, Some((n, name, body))) => (name.to_string(), body.clone(), Self::length_sources(n)),
            // A reduction over a variable runs over exactly its indices.
            (Expr::Var(xs), _) => (
                "vector#i".to_string(),
                Expr::Index(Box::new(Expr::var(xs)), Box::new(Expr::var("vector#i"))),
                vec![xs.clone()],
            ),
            _ => return Ok(None),
        };
        let mut locals = Vec::new();
        let mut affine = Some(Vec::new());
        if !self.vectorizable_affine(&body, &param, s, &safe, &mut locals, &mut affine) {
            return Ok(None);
        }
        Ok(Some(VectorReduce {
            prim,
            s,
            vt,
            lanes,
            body,
            affine: affine.unwrap_or_default(),
        }))
    }

    /// A chunk of a reduction with SIMD vectors, when the operator is a commutative
    /// primitive (`+`, `*`; integer `min`/`max`) on a scalar type and the element is
    /// straight-line arithmetic on in-bounds loads at the index: the module's partials
    /// over the chunk, a scalar loop for the rest, partials folded at the end. `None` when
    /// the reduction does not qualify (the general four-stream path handles it).
    pub(super) fn vector_reduce(&mut self, r: Reduce<'_>, lo: Value, hi: Value) -> R<Option<V>> {
        let Some(VectorReduce {
            prim,
            s,
            vt,
            lanes,
            body,
            affine,
        }) = self.vector_reduce_shape(r)?
        else {
            return Ok(None);
        };
        if affine.is_empty() {
            return self
                .vector_reduce_loop(r, prim, s, vt, lanes, &body, lo, hi)
                .map(Some);
        }
        // Loads `xs[off + i]`: versioned on all of them being in bounds for `lo..hi`
        // (`off <= len` and `hi <= len - off`); otherwise the checked scalar loop runs.
        let mut all_ok: Option<Value> = None;
        let mut keys = Vec::new();
        for (seq, index, off) in &affine {
            let o = self.expr(off)?.w[0];
            let len = self.var(seq)?.w[0];
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, o, len);
            let room = self.b.ins().isub(len, o);
            let within = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, room);
            let both = self.b.ins().band(fits, within);
            all_ok = Some(match all_ok {
                Some(x) => self.b.ins().band(x, both),
                None => both,
            });
            let key = affine_key(seq, index);
            self.affine.insert(key.clone(), o);
            keys.push(key);
        }
        let ne = self.expr(r.ne)?;
        let result = self.declare_like(&ne);
        let vector = self.b.create_block();
        let scalar = self.b.create_block();
        let merge = self.b.create_block();
        let ok = all_ok.expect("at least one affine load");
        self.b.ins().brif(ok, vector, &[], scalar, &[]);
        self.b.switch_to_block(vector);
        let v = self.vector_reduce_loop(r, prim, s, vt, lanes, &body, lo, hi)?;
        self.def_vars(&result, &v);
        self.b.ins().jump(merge, &[]);
        self.b.switch_to_block(scalar);
        let t = ne.ty.clone();
        let acc = self.declare_like(&ne);
        self.counted_loop(lo, hi, ScalarType::Usize, |f, i| {
            f.fold_step(r.op, r.xs, &t, &acc, i)?;
            Ok(())
        })?;
        let r = self.use_vars(&t, &acc);
        self.def_vars(&result, &r);
        self.b.ins().jump(merge, &[]);
        self.b.switch_to_block(merge);
        for k in keys {
            self.affine.remove(&k);
        }
        Ok(Some(self.use_vars(&t, &result)))
    }

    /// The vector loop of [`vector_reduce`](Self::vector_reduce) over `lo..hi` (its
    /// element `body` qualified), then the rest one element at a time.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn vector_reduce_loop(
        &mut self,
        r: Reduce<'_>,
        prim: Prim,
        s: ScalarType,
        vt: CType,
        lanes: usize,
        body: &Expr,
        lo: Value,
        hi: Value,
    ) -> R<V> {
        let ne = self.expr(r.ne)?;
        self.g.simd_loops += 1;
        let partials = REDUCTION_BYTES / s.bytes() as usize;
        let ne_v = self.b.ins().splat(vt, ne.w[0]);
        let accs: Vec<_> = (0..partials / lanes)
            .map(|_| {
                let a = self.b.declare_var(vt);
                self.b.def_var(a, ne_v);
                a
            })
            .collect();
        let step = partials as i64;
        let len = self.b.ins().isub(hi, lo);
        let blocks = self.b.ins().udiv_imm_u(len, step);
        let zero = self.iconst(0);
        let was = std::mem::replace(&mut self.movable_vector_loads, true);
        let looped = self.counted_loop(zero, blocks, ScalarType::Usize, |f, j| {
            let off = f.b.ins().imul_imm_s(j, step);
            let base = f.b.ins().iadd(lo, off);
            for (k, acc) in accs.iter().enumerate() {
                let at = f.b.ins().iadd_imm_s(base, (k * lanes) as i64);
                let v = f.vexpr(body, at, s, vt, &mut HashMap::new())?;
                let a = f.b.use_var(*acc);
                let r = f.vprim(prim, s, a, v);
                f.b.def_var(*acc, r);
            }
            Ok(())
        });
        self.movable_vector_loads = was;
        looped?;
        // The rest, one element at a time.
        let acc = self.declare_like(&ne);
        let done = self.b.ins().imul_imm_s(blocks, step);
        let rest = self.b.ins().iadd(lo, done);
        let t = ne.ty.clone();
        self.counted_loop(rest, hi, ScalarType::Usize, |f, i| {
            f.fold_step(r.op, r.xs, &t, &acc, i)?;
            Ok(())
        })?;
        // The partials folded by halving: the accumulators pairwise, then one's lanes.
        let vs: Vec<Value> = accs.iter().map(|a| self.b.use_var(*a)).collect();
        let v = self.fold_halving(prim, s, vs);
        let xs: Vec<Value> = (0..lanes)
            .map(|k| self.b.ins().extractlane(v, k as u8))
            .collect();
        let x = self.fold_halving(prim, s, xs);
        let rest = self.use_vars(&t, &acc).w[0];
        let total = self.vprim(prim, s, x, rest);
        Ok(V {
            ty: t,
            w: vec![total],
        })
    }

    /// `xs` (a power of two of them) folded by halving: `x[k] op x[k + n/2]`, again until
    /// one is left.
    fn fold_halving(&mut self, prim: Prim, s: ScalarType, mut xs: Vec<Value>) -> Value {
        while xs.len() > 1 {
            let half = xs.len() / 2;
            xs = (0..half)
                .map(|k| self.vprim(prim, s, xs[k], xs[k + half]))
                .collect();
        }
        xs[0]
    }

    /// The vector type of the tier's width for `s` and its lanes: 128 bits with
    /// Cranelift, the host's vectors with LLVM (`group_lanes` 32-bit lanes).
    fn tier_vector_of(&self, s: ScalarType) -> Option<(CType, usize)> {
        let (narrow, lanes) = Self::vector_of(s)?;
        let lanes = lanes * self.g.group_lanes / 4;
        Some((narrow.lane_type().by(lanes as u32)?, lanes))
    }

    /// The vector lanes and type for a scalar type.
    pub(super) fn vector_of(s: ScalarType) -> Option<(CType, usize)> {
        match s {
            ScalarType::F32 => Some((ct::F32X4, 4)),
            ScalarType::F64 => Some((ct::F64X2, 2)),
            ScalarType::I32 | ScalarType::U32 => Some((ct::I32X4, 4)),
            ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => Some((ct::I64X2, 2)),
            ScalarType::Bool
            | ScalarType::I8
            | ScalarType::I16
            | ScalarType::U8
            | ScalarType::U16 => None,
        }
    }

    /// The bulk of a producer kernel's chunk with SIMD vectors, when its element is
    /// straight-line arithmetic of one scalar type on in-bounds loads at the index (SAXPY):
    /// returns where the scalar loop must continue, or `None` when it does not qualify.
    pub(super) fn vector_map(
        &mut self,
        p: Producer<'_>,
        elem: &Type,
        out: &[Value],
        lo: Value,
        hi: Value,
    ) -> R<Option<Value>> {
        let Type::Scalar(s) = *elem else {
            return Ok(None);
        };
        let Some((vt, lanes)) = Self::vector_of(s) else {
            return Ok(None);
        };
        // After fusion, producers are `create(n, |i| element)`.
        let Producer::Create(c) = p else {
            return Ok(None);
        };
        let (param, body) = match c.f {
            Expr::Lambda { params, body } => match params.first() {
                Some((Pat::Bind { name, .. }, _)) => (name.clone(), (**body).clone()),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let safe = Self::length_sources(c.n);
        if !self.vectorizable(&body, &param, s, &safe, &mut Vec::new()) {
            return Ok(None);
        }
        let len = self.b.ins().isub(hi, lo);
        self.g.simd_loops += 1;
        let blocks = self.b.ins().udiv_imm_u(len, lanes as i64);
        let zero = self.iconst(0);
        self.counted_loop(zero, blocks, ScalarType::Usize, |f, j| {
            let off = f.b.ins().imul_imm_s(j, lanes as i64);
            let at = f.b.ins().iadd(lo, off);
            let v = f.vexpr(&body, at, s, vt, &mut HashMap::new())?;
            let bytes = f.scaled(at, s);
            let addr = f.b.ins().iadd(out[0], bytes);
            f.b.ins()
                .store(MemFlagsData::new().with_notrap(), v, addr, 0);
            Ok(())
        })?;
        let done = self.b.ins().imul_imm_s(blocks, lanes as i64);
        Ok(Some(self.b.ins().iadd(lo, done)))
    }

    /// The primitive operator on scalars or vectors.
    pub(super) fn vprim(&mut self, prim: Prim, s: ScalarType, a: Value, b: Value) -> Value {
        match (prim, s.is_float()) {
            (Prim::Add, true) => self.b.ins().fadd(a, b),
            (Prim::Add, false) => self.b.ins().iadd(a, b),
            (Prim::Mul, true) => self.b.ins().fmul(a, b),
            (Prim::Mul, false) => self.b.ins().imul(a, b),
            (Prim::Min, _) if signed(s) => self.b.ins().smin(a, b),
            (Prim::Min, _) => self.b.ins().umin(a, b),
            (Prim::Max, _) if signed(s) => self.b.ins().smax(a, b),
            (Prim::Max, _) => self.b.ins().umax(a, b),
        }
    }

    /// Whether `e` can be evaluated on vectors of consecutive indices `param`.
    pub(super) fn vectorizable(
        &self,
        e: &Expr,
        param: &str,
        s: ScalarType,
        safe: &[String],
        locals: &mut Vec<String>,
    ) -> bool {
        self.vectorizable_affine(e, param, s, safe, locals, &mut None)
    }

    /// Like [`vectorizable`](Self::vectorizable); when `affine` is given, loads
    /// `xs[off + i]` (and `xs[i]` of a sequence not known to be long enough) qualify too,
    /// collected as `(xs, off)` for the caller to check in bounds before the loop.
    pub(super) fn vectorizable_affine(
        &self,
        e: &Expr,
        param: &str,
        s: ScalarType,
        safe: &[String],
        locals: &mut Vec<String>,
        affine: &mut Option<Vec<(String, Expr, Expr)>>,
    ) -> bool {
        let scalar = Type::Scalar(s);
        match e {
            Expr::Lit(Lit::Int(_, Some(t)) | Lit::Float(_, Some(t))) => *t == s,
            Expr::Var(v) => {
                locals.contains(v) || matches!(self.vars.get(v), Some((t, _)) if *t == scalar)
            }
            Expr::Const(c) => const_type(c) == Some(s),
            Expr::Index(b, i) => {
                let Expr::Var(seq) = &**b else {
                    return false;
                };
                if !matches!(self.vars.get(seq), Some((Type::Seq(t), _)) if **t == scalar) {
                    return false;
                }
                if matches!(&**i, Expr::Var(j) if j == param) && safe.contains(seq) {
                    return true;
                }
                let Some(list) = affine else {
                    return false;
                };
                match affine_offset(i, param, locals) {
                    Some(off) => {
                        list.push((seq.clone(), (**i).clone(), off));
                        true
                    }
                    None => false,
                }
            }
            Expr::Binary(op, a, b) => {
                let ok = match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul => true,
                    BinOp::Div => s.is_float(),
                    _ => false,
                };
                ok && self.vectorizable_affine(a, param, s, safe, locals, affine)
                    && self.vectorizable_affine(b, param, s, safe, locals, affine)
            }
            Expr::Unary(UnOp::Neg, a) => {
                (s.is_float() || signed(s))
                    && self.vectorizable_affine(a, param, s, safe, locals, affine)
            }
            Expr::Method { recv, method, args } => {
                let ok = match method.as_str() {
                    "sqrt" | "abs" => s.is_float() && args.is_empty(),
                    _ => false,
                };
                ok && self.vectorizable_affine(recv, param, s, safe, locals, affine)
            }
            Expr::Block {
                stmts,
                result: Some(r),
            } => {
                for st in stmts {
                    match st {
                        Stmt::Let {
                            pat:
                                Pat::Bind {
                                    name,
                                    mutable: false,
                                },
                            ty,
                            init: Some(init),
                        } if (*ty == scalar
                            || *ty == Type::Infer
                            || *ty == Type::Scalar(ScalarType::Usize)
                                && name.starts_with("i#")) =>
                        {
                            // An index rebinding (`let i#f1 = i#f2`) keeps its meaning.
                            if let Expr::Var(v) = init {
                                if v == param {
                                    return false;
                                }
                            }
                            if !self.vectorizable_affine(init, param, s, safe, locals, affine) {
                                return false;
                            }
                            locals.push(name.clone());
                        }
                        _ => return false,
                    }
                }
                self.vectorizable_affine(r, param, s, safe, locals, affine)
            }
            _ => false,
        }
    }

    /// Evaluates a vectorizable expression for the indices `base..base + lanes`.
    pub(super) fn vexpr(
        &mut self,
        e: &Expr,
        base: Value,
        s: ScalarType,
        vt: CType,
        locals: &mut HashMap<String, Value>,
    ) -> R<Value> {
        Ok(match e {
            Expr::Var(v) => match locals.get(v) {
                Some(x) => *x,
                None => {
                    let x = self.var(v)?.w[0];
                    self.b.ins().splat(vt, x)
                }
            },
            Expr::Lit(_) | Expr::Const(_) => {
                let x = self.expr(e)?.w[0];
                self.b.ins().splat(vt, x)
            }
            Expr::Index(b, i) => {
                let Expr::Var(seq) = &**b else {
                    return Err("a vector load of a non-variable".into());
                };
                let cols = self.var(seq)?.w;
                let at = match self.affine.get(&affine_key(seq, i)) {
                    Some(&off) => self.b.ins().iadd(base, off),
                    None => base,
                };
                let off = self.scaled(at, s);
                let addr = self.b.ins().iadd(cols[1], off);
                let flags = MemFlagsData::new().with_notrap().with_readonly();
                let flags = match self.movable_vector_loads {
                    true => flags.with_can_move(),
                    false => flags,
                };
                self.b.ins().load(vt, flags, addr, 0)
            }
            Expr::Binary(op, a, b) => {
                let x = self.vexpr(a, base, s, vt, locals)?;
                let y = self.vexpr(b, base, s, vt, locals)?;
                match (op, s.is_float()) {
                    (BinOp::Add, true) => self.b.ins().fadd(x, y),
                    (BinOp::Add, false) => self.b.ins().iadd(x, y),
                    (BinOp::Sub, true) => self.b.ins().fsub(x, y),
                    (BinOp::Sub, false) => self.b.ins().isub(x, y),
                    (BinOp::Mul, true) => self.b.ins().fmul(x, y),
                    (BinOp::Mul, false) => self.b.ins().imul(x, y),
                    (BinOp::Div, _) => self.b.ins().fdiv(x, y),
                    _ => return Err("an operator that does not vectorize".into()),
                }
            }
            Expr::Unary(_, a) => {
                let x = self.vexpr(a, base, s, vt, locals)?;
                if s.is_float() {
                    self.b.ins().fneg(x)
                } else {
                    self.b.ins().ineg(x)
                }
            }
            Expr::Method { recv, method, .. } => {
                let x = self.vexpr(recv, base, s, vt, locals)?;
                if method == "sqrt" {
                    self.b.ins().sqrt(x)
                } else {
                    self.b.ins().fabs(x)
                }
            }
            Expr::Block {
                stmts,
                result: Some(r),
            } => {
                for st in stmts {
                    if let Stmt::Let {
                        pat: Pat::Bind { name, .. },
                        init: Some(init),
                        ..
                    } = st
                    {
                        let v = self.vexpr(init, base, s, vt, locals)?;
                        locals.insert(name.clone(), v);
                    }
                }
                self.vexpr(r, base, s, vt, locals)?
            }
            _ => return Err("an expression that does not vectorize".into()),
        })
    }
}
