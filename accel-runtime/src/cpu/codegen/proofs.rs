//! Bounds proofs for loops: the accesses a loop over a variable makes that one test before
//! it can prove in bounds (sequences indexed by the variable, tensor accesses, loads at
//! indices affine in it), and loop versioning on them: an unchecked copy when the test
//! holds, the checked one otherwise.

use super::cx::*;
use crate::backend::abi::MAX_RANK;
use accel_ir::{BinOp, Expr, Lit, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};
use std::collections::HashSet;

/// Code generation of a loop, run once per version.
pub(super) type Run<'r, F> = dyn Fn(&mut F) -> R<()> + 'r;

impl FnCx<'_, '_> {
    /// Runs `run` twice behind one test: when every sequence in `indexed` is at least `hi`
    /// long, a copy in which indexing them by `var` (which stays below `hi`) is unchecked;
    /// otherwise the checked copy.
    pub(super) fn versioned(
        &mut self,
        proofs: &Proofs,
        var: &str,
        lo: Value,
        hi: Value,
        run: impl Fn(&mut Self) -> R<()>,
    ) -> R<()> {
        self.versioned_with(proofs, var, lo, hi, &run, Some(&run))
            .map(|_| ())
    }

    /// [`Self::versioned`] with the checked copy given apart: `None` runs nothing when the
    /// test fails (the caller's checked code covers those iterations). Returns the test's
    /// outcome (true when nothing needed testing).
    pub(super) fn versioned_with(
        &mut self,
        proofs: &Proofs,
        var: &str,
        lo: Value,
        hi: Value,
        fast_run: &Run<'_, Self>,
        slow_run: Option<&Run<'_, Self>>,
    ) -> R<Value> {
        let indexed: Vec<&String> = proofs
            .indexed
            .iter()
            .filter(|q| !self.safe.iter().any(|(a, b)| a == *q && b == var))
            .collect();
        let tensors: Vec<&(String, Vec<Expr>)> = proofs
            .tensors
            .iter()
            .filter(|t| !self.safe_tensors.contains(t))
            .collect();
        let affine: Vec<&AffineLoad> = proofs
            .affine
            .iter()
            .filter(|l| !self.safe_affine.contains(&(l.seq.clone(), l.index.clone())))
            .collect();
        let shifted: Vec<&ShiftedLoad> = proofs
            .shifted
            .iter()
            .filter(|l| !self.safe_affine.contains(&(l.seq.clone(), l.index.clone())))
            .collect();
        if indexed.is_empty() && tensors.is_empty() && affine.is_empty() && shifted.is_empty() {
            fast_run(self)?;
            return Ok(self.b.ins().iconst(ct::I8, 1));
        }
        let mut ok = self.b.ins().iconst(ct::I8, 1);
        for seq in &indexed {
            let len = self.var(seq)?.w[0];
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, len);
            ok = self.b.ins().band(ok, fits);
        }
        // A tensor access: the rank, then each coordinate below its dimension (the loop
        // variable through `hi`).
        for (t, coords) in &tensors {
            let tv = self.var(t)?;
            let rank = self
                .b
                .ins()
                .icmp_imm_s(IntCC::Equal, tv.w[1], coords.len() as i64);
            ok = self.b.ins().band(ok, rank);
            for (k, c) in coords.iter().enumerate() {
                let dim = tv.w[2 + k];
                let fits = match c {
                    Expr::Var(x) if x == var => {
                        self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, dim)
                    }
                    other if self.gang.is_some() && self.varies(other) => {
                        self.lanes_below(other, dim)?
                    }
                    other => {
                        let i = self.expr(other)?.w[0];
                        self.b.ins().icmp(IntCC::UnsignedLessThan, i, dim)
                    }
                };
                ok = self.b.ins().band(ok, fits);
            }
        }
        for l in &affine {
            let fits = self.affine_fits(l, lo, hi)?;
            ok = self.b.ins().band(ok, fits);
        }
        for l in &shifted {
            let fits = self.shifted_fits(l, lo, hi)?;
            ok = self.b.ins().band(ok, fits);
        }
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let after = self.b.create_block();
        self.b.ins().brif(ok, fast, &[], slow, &[]);
        self.b.switch_to_block(fast);
        let before = (
            self.safe.len(),
            self.safe_tensors.len(),
            self.safe_affine.len(),
        );
        self.safe
            .extend(indexed.iter().map(|q| ((*q).clone(), var.to_string())));
        self.safe_tensors
            .extend(tensors.iter().map(|t| (*t).clone()));
        self.safe_affine
            .extend(affine.iter().map(|l| (l.seq.clone(), l.index.clone())));
        self.safe_affine
            .extend(shifted.iter().map(|l| (l.seq.clone(), l.index.clone())));
        let r = fast_run(self);
        self.safe.truncate(before.0);
        self.safe_tensors.truncate(before.1);
        self.safe_affine.truncate(before.2);
        r?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(slow);
        if let Some(slow_run) = slow_run {
            slow_run(self)?;
        }
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        Ok(ok)
    }

    /// Whether an affine load is in bounds for every iteration of `lo..hi` (an `I8`).
    fn affine_fits(&mut self, l: &AffineLoad, lo: Value, hi: Value) -> R<Value> {
        // An affine load: its largest index, `(hi - 1) * stride + offset`, computed
        // without wrapping, below the length (or no iteration at all).
        let stride = self.expr(&l.stride)?.w[0];
        let offset = if self.gang.is_some() && self.varies(&l.offset) {
            self.largest_lane(&l.offset)?
        } else {
            self.expr(&l.offset)?.w[0]
        };
        let len = self.var(&l.seq)?.w[0];
        let empty = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, lo);
        let last = self.b.ins().iadd_imm_s(hi, -1);
        let scaled = self.b.ins().imul(last, stride);
        let high = self.b.ins().umulhi(last, stride);
        let no_wrap = self.b.ins().icmp_imm_u(IntCC::Equal, high, 0);
        let top = self.b.ins().iadd(scaled, offset);
        let no_carry = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, top, scaled);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, top, len);
        let fits = self.b.ins().band(no_wrap, no_carry);
        let fits = self.b.ins().band(fits, inside);
        let fits = self.b.ins().bor(empty, fits);
        Ok(fits)
    }

    /// Whether a shifted load is in bounds for every iteration of `lo..hi` (an `I8`).
    fn shifted_fits(&mut self, l: &ShiftedLoad, lo: Value, hi: Value) -> R<Value> {
        // A shifted load: every index of `lo..hi` moved by the offset, inside (or no
        // iteration at all).
        let off = self.expr(&l.offset)?.w[0];
        let len = self.var(&l.seq)?.w[0];
        let empty = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, lo);
        let fits = if l.minus {
            let from = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, lo, off);
            let end = self.b.ins().isub(hi, off);
            let to = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, len);
            self.b.ins().band(from, to)
        } else {
            let end = self.b.ins().iadd(hi, off);
            let no_carry = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, end, hi);
            let to = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, len);
            self.b.ins().band(no_carry, to)
        };
        let fits = self.b.ins().bor(empty, fits);
        Ok(fits)
    }

    /// The tensor accesses in `body` whose coordinates are each `var`, a literal, or a
    /// variable `body` neither binds nor assigns: checkable once before a loop over `var`.
    pub(super) fn tensor_accesses(&self, body: &Expr, var: &str) -> Vec<(String, Vec<Expr>)> {
        let changed = changed_in(body);
        let mut out: Vec<(String, Vec<Expr>)> = Vec::new();
        body.walk(&mut |e| {
            let Expr::Method { recv, method, args } = e else {
                return;
            };
            let (Expr::Var(t), "get" | "set", Some(Expr::Array(coords))) =
                (&**recv, method.as_str(), args.first())
            else {
                return;
            };
            let tensor = matches!(self.vars.get(t), Some((Type::Tensor(_), _)));
            let invariant = coords.iter().all(|c| match c {
                Expr::Var(x) => x == var || (!changed.contains(x) && self.vars.contains_key(x)),
                Expr::Lit(Lit::Int(..)) => true,
                _ => false,
            });
            let uses_var = coords.iter().any(|c| matches!(c, Expr::Var(x) if x == var));
            let key = (t.clone(), coords.clone());
            if tensor && invariant && uses_var && coords.len() <= MAX_RANK && !out.contains(&key) {
                out.push(key);
            }
        });
        out
    }

    /// The loads `seq[index]` in `body` whose index is affine in `var` (`var * c + b`,
    /// `b + var`, …) with `c` and `b` made of literals and variables `body` neither binds
    /// nor assigns (no loads, no divisions: evaluating them early cannot fail): by
    /// sequence, index, stride `c` and offset `b`.
    pub(super) fn affine_loads(&self, body: &Expr, var: &str) -> Vec<AffineLoad> {
        let changed = changed_in(body);
        if changed.contains(var) {
            return Vec::new();
        }
        let invariant = |e: &Expr| {
            let mut ok = true;
            e.walk(&mut |x| match x {
                Expr::Lit(Lit::Int(..)) => {}
                Expr::Var(v) => {
                    ok &= v != var
                        && !changed.contains(v)
                        && matches!(self.vars.get(v), Some((Type::Scalar(ScalarType::Usize), _)))
                }
                Expr::Binary(BinOp::Add | BinOp::Mul, ..) => {}
                _ => ok = false,
            });
            ok
        };
        let is_var = |e: &Expr| matches!(e, Expr::Var(v) if v == var);
        let one = Expr::Lit(Lit::Int(1, Some(ScalarType::Usize)));
        let zero = Expr::Lit(Lit::Int(0, Some(ScalarType::Usize)));
        // `var`, `var * c` or `c * var`: the stride.
        let scaled = |e: &Expr| -> Option<Expr> {
            match e {
                v if is_var(v) => Some(one.clone()),
                Expr::Binary(BinOp::Mul, a, c) if is_var(a) && invariant(c) => Some((**c).clone()),
                Expr::Binary(BinOp::Mul, c, a) if is_var(a) && invariant(c) => Some((**c).clone()),
                _ => None,
            }
        };
        let mut out: Vec<AffineLoad> = Vec::new();
        body.walk(&mut |e| {
            let Expr::Index(base, index) = e else { return };
            let Expr::Var(seq) = &**base else { return };
            if !matches!(self.vars.get(seq), Some((Type::Seq(_), _))) || changed.contains(seq) {
                return;
            }
            let parts = match &**index {
                Expr::Binary(BinOp::Add, a, b) => match (scaled(a), scaled(b)) {
                    (Some(c), _) if invariant(b) => Some((c, (**b).clone())),
                    (_, Some(c)) if invariant(a) => Some((c, (**a).clone())),
                    _ => None,
                },
                // A plain `seq[var]` is the `safe` pairs' case.
                i if !is_var(i) => scaled(i).map(|c| (c, zero.clone())),
                _ => None,
            };
            if let Some((stride, offset)) = parts {
                if !out.iter().any(|l| l.seq == *seq && l.index == **index) {
                    out.push(AffineLoad {
                        seq: seq.clone(),
                        index: (**index).clone(),
                        stride,
                        offset,
                    });
                }
            }
        });
        out
    }

    /// The sequence variables of the enclosing scope that `body` indexes by `var`.
    pub(super) fn indexed_by(&self, body: &Expr, var: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        body.walk(&mut |e| {
            if let Expr::Index(b, i) = e {
                if let (Expr::Var(s), Expr::Var(j)) = (&**b, &**i) {
                    let is_seq = matches!(self.vars.get(s), Some((Type::Seq(_), _)));
                    if j == var && is_seq && !out.contains(s) {
                        out.push(s.clone());
                    }
                }
            }
        });
        out
    }

    /// The sequences whose length a producer's length expression is or bounds (`xs.len()`,
    /// both of `same_len(xs.len(), ys.len())` and of `min(xs.len(), ys.len())`): indexing
    /// them by the producer's index is safe.
    pub(super) fn length_sources(n: &Expr) -> Vec<String> {
        match n {
            Expr::Method { recv, method, args } if method == "len" && args.is_empty() => {
                match &**recv {
                    Expr::Var(s) => vec![s.clone()],
                    _ => vec![],
                }
            }
            Expr::Assoc { func, args, .. } if func == "same_len" => {
                args.iter().flat_map(Self::length_sources).collect()
            }
            // `min(xs.len(), ys.len())` (an iterator's `zip`) is below both lengths.
            Expr::Method { recv, method, args } if method == "min" && args.len() == 1 => {
                [&**recv, &args[0]]
                    .into_iter()
                    .flat_map(Self::length_sources)
                    .collect()
            }
            _ => vec![],
        }
    }
}

/// The loop-invariant offset of an index `off + i`, `i + off` or `i` (offset 0) over the
/// loop variable `param`.
/// What a loop over a variable is versioned on: sequences indexed by the variable, tensor
/// accesses, and affine loads (see [`FnCx::versioned`]).
#[derive(Default)]
pub(super) struct Proofs {
    pub(super) indexed: Vec<String>,
    pub(super) tensors: Vec<(String, Vec<Expr>)>,
    pub(super) affine: Vec<AffineLoad>,
    pub(super) shifted: Vec<ShiftedLoad>,
}

/// A load `seq[index]` with `index = var + offset` or `var - offset` in a loop over
/// `var` (a stencil's neighbour `a[p - n]` in a gang loop over `p`): in bounds for every
/// `var` of the loop when `lo - offset` does not wrap and `hi + offset` (or `hi - offset`)
/// is at most the length.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ShiftedLoad {
    pub(super) seq: String,
    pub(super) index: Expr,
    pub(super) offset: Expr,
    pub(super) minus: bool,
}

/// A load `seq[index]` with `index = var * stride + offset` in a loop over `var`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct AffineLoad {
    pub(super) seq: String,
    pub(super) index: Expr,
    pub(super) stride: Expr,
    pub(super) offset: Expr,
}

/// The variables `body` binds or assigns (which a loop over it may change).
pub(super) fn changed_in(body: &Expr) -> HashSet<String> {
    let mut changed: HashSet<String> = body.bound_inside().into_iter().collect();
    body.walk(&mut |e| {
        if let Expr::Assign { target, .. } = e {
            if let Some(x) = target.assigned_root() {
                changed.insert(x.to_string());
            }
        }
    });
    changed
}

pub(super) fn affine_offset(i: &Expr, param: &str, locals: &[String]) -> Option<Expr> {
    let is_param = |e: &Expr| matches!(e, Expr::Var(v) if v == param);
    match i {
        e if is_param(e) => Some(Expr::Lit(Lit::Int(0, Some(ScalarType::Usize)))),
        Expr::Binary(BinOp::Add, a, b) if is_param(b) && invariant(a, param, locals) => {
            Some((**a).clone())
        }
        Expr::Binary(BinOp::Add, a, b) if is_param(a) && invariant(b, param, locals) => {
            Some((**b).clone())
        }
        _ => None,
    }
}

/// Whether an index expression is the same on every iteration over `param`.
pub(super) fn invariant(e: &Expr, param: &str, locals: &[String]) -> bool {
    match e {
        Expr::Var(v) => v != param && !locals.contains(v),
        Expr::Lit(_) | Expr::Const(_) => true,
        Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
            invariant(a, param, locals) && invariant(b, param, locals)
        }
        Expr::Method { recv, method, args } => {
            method == "len" && args.is_empty() && invariant(recv, param, locals)
        }
        _ => false,
    }
}

/// The key of a versioned load `seq[index]` in [`FnCx::affine`].
pub(super) fn affine_key(seq: &str, index: &Expr) -> String {
    format!("{seq}[{index:?}]")
}
