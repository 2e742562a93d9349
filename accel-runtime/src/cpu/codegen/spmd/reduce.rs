//! Reductions for the gang. Nested in an element, a `reduce` over a delayed array is a loop
//! all lanes run together, each lane folding its own element with the same grouping as
//! scalar code (four contiguous streams, combined in order), so a lane's result is the
//! scalar code's. At a kernel's top level, a reduction whose operator is primitive and
//! commutative on every field (`+`, `*`, integer `min`/`max`: `(a.0 + b.0, a.1 + b.1)`)
//! keeps one accumulator vector per field, the gang's lanes folded at the end.

use super::super::cx::*;
use super::super::proofs::Proofs;
use super::{not_spmd, Part, G};
use accel_ir::ops::{delayed, OpView, Reduce};
use accel_ir::passes::recognize::{componentwise, Prim};
use accel_ir::{Expr, ParOp, ScalarType, Type};
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::Variable;

/// The lanes of a reduction's gangs where its operator rounds: four of Cranelift's groups,
/// one of LLVM's on AVX-512 (see [`FnCx::gang_reduce`]).
const REDUCTION_LANES: usize = 16;

impl FnCx<'_, '_> {
    /// A parallel operation nested in a gang's element.
    pub(super) fn gpar(&mut self, e: &Expr, op: ParOp, args: &[Expr]) -> R<G> {
        match op.view(args).map_err(|e| e.to_string())? {
            OpView::Reduce(r) => self.gnested_reduce(r),
            OpView::Create(c) => {
                let ty = self.type_of(e)?;
                self.gnested_create(c, &ty)
            }
            _ => Err(not_spmd(format!(
                "a nested `{}` whose result differs between lanes",
                op.name()
            ))),
        }
    }

    /// `f(args)` for the gang (`f` a closure).
    pub(super) fn gapply(&mut self, f: &Expr, args: Vec<G>) -> R<G> {
        let Expr::Lambda { params, body } = f else {
            return Err(unsupported("a function argument that is not a closure"));
        };
        for ((p, _), a) in params.iter().zip(args) {
            self.gbind(p, a)?;
        }
        self.gexpr(body)
    }

    /// A nested `reduce` over `create(n, |j| body)` with `n` the same for every lane: four
    /// streams of `n / 4`, the rest into the last, combined in order (scalar code's
    /// `stream_reduce`).
    fn gnested_reduce(&mut self, r: Reduce<'_>) -> R<G> {
        let Some((n, param, body)) = delayed(r.xs) else {
            return self.greduce_lanes_seq(r);
        };
        if self.varies(n) {
            return Err(not_spmd(
                "a nested reduction whose length differs between lanes",
            ));
        }
        if self.vector_reduce_shape(r)?.is_some() {
            // Scalar code folds it on vectors of consecutive elements (a dot product):
            // faster than lanes gathering one element each.
            return Err(not_spmd(
                "a nested reduction that scalar code runs on vectors of its elements",
            ));
        }
        let n = self.expr(n)?.w[0];
        let zero = self.iconst(0);
        let proofs = Proofs {
            indexed: self.uniform_indexed_by(body, param),
            affine: self.uniform_affine_loads(body, param),
            ..Proofs::default()
        };
        let result: std::cell::RefCell<Option<(Type, Vec<Vec<Variable>>)>> =
            std::cell::RefCell::new(None);
        self.versioned(&proofs, param, zero, n, |f| {
            let v = f.gstreams(r, param, body, n)?;
            let mut out = result.borrow_mut();
            if out.is_none() {
                let vars = f.declare_gvars(&v)?;
                *out = Some((v.ty.clone(), vars));
            } else if let Some((_, vars)) = &*out {
                f.def_gvars(vars, &v)?;
            }
            Ok(())
        })?;
        let (ty, vars) = result
            .into_inner()
            .ok_or_else(|| not_spmd("a reduction without a result"))?;
        Ok(self.use_gvars(&ty, &vars))
    }

    /// A nested `reduce` over a sequence per lane of one length for every lane: the
    /// four-stream fold of [`Self::gnested_reduce`] over its elements.
    fn greduce_lanes_seq(&mut self, r: Reduce<'_>) -> R<G> {
        // Scalar code folds floats on vectors of consecutive elements, grouped as those
        // vectors group them, and the gang's lanes must compute the same bits (integers
        // fold to the same bits in any grouping).
        let t = self.type_of(r.ne)?;
        let floats = Self::word_scalars(&t)?.iter().any(|s| s.is_float());
        if floats && self.vector_reduce_shape(r)?.is_some() {
            return Err(not_spmd(
                "a nested float reduction that scalar code runs on vectors of its elements",
            ));
        }
        let xs = self.gexpr(r.xs)?;
        let Part::Uni(n) = xs.w[0] else {
            return Err(not_spmd(
                "a nested reduction over sequences whose lengths differ between lanes",
            ));
        };
        // The sequence bound to a fresh name, its elements read by a fresh index.
        let id = self.gang.as_ref().map_or(0, |g| g.vars.len());
        let (seq, index) = (format!("lanes_seq#{id}"), format!("lanes_index#{id}"));
        self.bind_gvar(&seq, xs, true)?;
        if let Some(g) = &mut self.gang {
            g.varying.insert(seq.clone());
        }
        let body = Expr::Index(Box::new(Expr::Var(seq)), Box::new(Expr::Var(index.clone())));
        self.gstreams(r, &index, &body, n)
    }

    /// The four-stream fold of [`Self::gnested_reduce`].
    fn gstreams(&mut self, r: Reduce<'_>, param: &str, body: &Expr, n: Value) -> R<G> {
        let ne = self.gexpr(r.ne)?;
        let ne = self.materialize(&ne)?;
        let accs: Vec<Vec<Vec<Variable>>> =
            (0..4).map(|_| self.declare_gvars(&ne)).collect::<R<_>>()?;
        let ty = ne.ty.clone();
        let q = self.b.ins().ushr_imm_u(n, 2);
        let starts: Vec<Value> = (0..4i64).map(|k| self.b.ins().imul_imm_s(q, k)).collect();
        let step = |f: &mut Self, acc: &[Vec<Variable>], i: Value| -> R<()> {
            f.bind_var(
                param,
                V {
                    ty: Type::Scalar(ScalarType::Usize),
                    w: vec![i],
                },
            );
            let x = f.gexpr(body)?;
            let a = f.use_gvars(&ty, acc);
            let v = f.gapply(r.op, vec![a, x])?;
            f.def_gvars(acc, &v)
        };
        let zero = self.iconst(0);
        self.counted_loop(zero, q, ScalarType::Usize, |f, j| {
            for k in 0..4 {
                let i = f.b.ins().iadd(starts[k], j);
                step(f, &accs[k], i)?;
            }
            Ok(())
        })?;
        let rest = self.b.ins().imul_imm_s(q, 4);
        self.counted_loop(rest, n, ScalarType::Usize, |f, i| step(f, &accs[3], i))?;
        let mut total = self.use_gvars(&ty, &accs[0]);
        for acc in &accs[1..] {
            let next = self.use_gvars(&ty, acc);
            total = self.gapply(r.op, vec![total, next])?;
        }
        Ok(total)
    }

    /// Variables holding `g` as vectors.
    fn declare_gvars(&mut self, g: &G) -> R<Vec<Vec<Variable>>> {
        let g = self.materialize(g)?;
        Ok(g.w
            .iter()
            .map(|p| match p {
                Part::Var(vs) => vs
                    .iter()
                    .map(|&x| {
                        let t = self.b.func.dfg.value_type(x);
                        let var = self.b.declare_var(t);
                        self.b.def_var(var, x);
                        var
                    })
                    .collect(),
                _ => unreachable!("materialized"),
            })
            .collect())
    }

    fn def_gvars(&mut self, vars: &[Vec<Variable>], g: &G) -> R<()> {
        let ss = Self::word_scalars(&g.ty)?;
        for ((vs, p), s) in vars.iter().zip(&g.w).zip(ss) {
            let xs = self.vectors(p, s);
            for (v, x) in vs.iter().zip(xs) {
                self.b.def_var(*v, x);
            }
        }
        Ok(())
    }

    fn use_gvars(&mut self, ty: &Type, vars: &[Vec<Variable>]) -> G {
        G {
            ty: ty.clone(),
            w: vars
                .iter()
                .map(|vs| Part::Var(vs.iter().map(|v| self.b.use_var(*v)).collect()))
                .collect(),
        }
    }

    /// A chunk `lo..hi` of a top-level reduction for gangs, when its operator is
    /// primitive and commutative on every field: whole gangs into one accumulator vector
    /// per field, the rest one element at a time, then the lanes folded in order into the
    /// rest's total. `None` when it does not qualify.
    pub(in crate::cpu::codegen) fn gang_reduce(
        &mut self,
        r: Reduce<'_>,
        lo: Value,
        hi: Value,
    ) -> R<Option<V>> {
        let Some(prims) = componentwise(r.op) else {
            return Ok(None);
        };
        let t = self.type_of(r.ne)?;
        let Ok(ss) = Self::word_scalars(&t) else {
            return Ok(None);
        };
        let commutative = |p: Prim, s: ScalarType| match p {
            Prim::Add | Prim::Mul => s != ScalarType::Bool,
            Prim::Min | Prim::Max => !s.is_float() && s != ScalarType::Bool,
        };
        if prims.len() != ss.len() || prims.iter().zip(&ss).any(|(p, s)| !commutative(*p, *s)) {
            return Ok(None);
        }
        let Some((n, param, body)) = delayed(r.xs) else {
            return Ok(None);
        };
        let param = param.to_string();
        let safe = Self::length_sources(n);
        let ne = self.expr(r.ne)?;
        // Lane `j` folds the chunk's elements `j`, `j + w`, `j + 2w`, ... for a gang of `w`
        // lanes, and the elements after the last whole gang are folded one by one: a sum
        // of floats depends on `w`. It is the same at every tier (the quick code's chunks
        // and the optimized code's may make one result).
        let rounds = prims
            .iter()
            .zip(&ss)
            .any(|(p, s)| matches!(p, Prim::Add | Prim::Mul) && s.is_float());
        let pinned = std::mem::replace(&mut self.g.pinned_lanes, rounds.then_some(REDUCTION_LANES));
        let out = self.gang_reduce_lanes(r, (lo, hi), (&prims, &ss, &t), (&param, body, &safe), ne);
        self.g.pinned_lanes = pinned;
        out
    }

    /// [`Self::gang_reduce`]'s loop and folds, once it qualifies.
    fn gang_reduce_lanes(
        &mut self,
        r: Reduce<'_>,
        (lo, hi): (Value, Value),
        (prims, ss, t): (&[Prim], &[ScalarType], &Type),
        (param, body, safe): (&str, &Expr, &[String]),
        ne: V,
    ) -> R<Option<V>> {
        let t = t.clone();
        // One group's vectors for every group of the gang the loop runs.
        let (groups, _) = self.gang_shape(body, param);
        let ne_g = self.materialize(&G::uniform(ne.clone()))?;
        let ne_g = G {
            ty: ne_g.ty,
            w: ne_g
                .w
                .into_iter()
                .map(|p| match p {
                    Part::Var(vs) => Part::Var(vs.repeat(groups)),
                    p => p,
                })
                .collect(),
        };
        let accs = self.declare_gvars(&ne_g)?;
        let rest = self.gang_loop(
            body,
            param,
            safe,
            (lo, hi),
            |f, _| {
                let x = f.gexpr(body)?;
                let x = f.materialize(&x)?;
                for (k, (&p, &s)) in prims.iter().zip(ss).enumerate() {
                    let Part::Var(xs) = &x.w[k] else {
                        unreachable!("materialized")
                    };
                    for (j, &xv) in xs.iter().enumerate() {
                        let a = f.b.use_var(accs[k][j]);
                        let v = f.vprim(p, s, a, xv);
                        f.b.def_var(accs[k][j], v);
                    }
                }
                Ok(())
            },
            None,
        )?;
        // The elements left, as scalar code folds them.
        let tail = self.declare_like(&ne);
        self.counted_loop(rest, hi, ScalarType::Usize, |f, i| {
            f.fold_step(r.op, r.xs, &t, &tail, i)?;
            Ok(())
        })?;
        let mut total = self.use_vars(&t, &tail).w;
        for (k, (&p, &s)) in prims.iter().zip(ss).enumerate() {
            // The lanes in order: each vector's, vector after vector.
            let mut folded: Option<Value> = None;
            for var in &accs[k] {
                let v = self.b.use_var(*var);
                let lanes = self.b.func.dfg.value_type(v).lane_count();
                for l in 0..lanes {
                    let x = self.b.ins().extractlane(v, l as u8);
                    // A small integer's lanes wrap to its width here (sums and products
                    // of 32-bit lanes agree with it modulo the width).
                    let x = if s.is_small_int() {
                        self.b.ins().ireduce(clif(s), x)
                    } else {
                        x
                    };
                    folded = Some(match folded {
                        Some(a) => self.vprim(p, s, a, x),
                        None => x,
                    });
                }
            }
            let folded = folded.expect("a word has lanes");
            total[k] = self.vprim(p, s, folded, total[k]);
        }
        Ok(Some(V { ty: t, w: total }))
    }
}
