//! Loop-carried store-to-load forwarding (scalar replacement, Carr and Kennedy, "Scalar
//! Replacement in the Presence of Conditional Control Flow", 1994): an in-place sweep
//! whose step sets `t[.., j]` and the next step reads `t[.., j - 1]` (Gauss-Seidel's
//! `a.set([i, j], (.. + a.get([i, j - 1]) + ..) / 9.0)`, ADI's tridiagonal recurrences)
//! keeps the value it stored in a register for the next step, instead of loading it back.
//! The load waited for the store through memory on every step of a chain of dependent
//! operations: a Gauss-Seidel sweep in plain Rust ran 1.4x faster with the value kept.
//!
//! The rules make the kept value the one memory holds. In the loop's body, the tensor is
//! set once, as a statement of the body itself (so every step sets it), at coordinates that
//! end with the loop variable and whose others read nothing the body binds or assigns; it
//! is named nowhere but as the receiver of `get` and `set`. Every other tensor the body
//! sets is one from outside the loop, and the tensors' memory is checked to be disjoint
//! before the loop (views of one allocation may overlap): where it is not, every read
//! loads. The first step loads (nothing is kept yet), with the same checks as before.
//!
//! Scalar code only. Kept per lane in gang code (tried), a tensor's value is eight vectors
//! for 16 lanes of `f64`, live across the loop with the block parameters that merge them
//! with the first step's loads: ADI's row sweep, two kept tensors, ran 1.3x slower; a
//! 5-point Gauss-Seidel sweep, one, 1.1-1.2x faster.

use super::cx::*;
use super::kept::{Carried, Forwarding};
use accel_ir::{BinOp, Expr, Lit, ScalarType, Stmt, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};
use cranelift_frontend::Variable;
use std::collections::HashSet;

/// The tensors of `for var in .. { body }` whose stored values may be kept from one step
/// to the next (see the module's rules); `is_tensor` tells which names bound outside the
/// body are tensors.
pub(super) fn carried_tensors(
    var: &str,
    body: &Expr,
    is_tensor: &dyn Fn(&str) -> bool,
) -> Vec<Carried> {
    let bound: HashSet<String> = body.bound_inside().into_iter().collect();
    let mut assigned = HashSet::new();
    let mut refused = false;
    body.walk(&mut |e| match e {
        Expr::Assign { target, .. } => {
            if let Some(x) = target.assigned_root() {
                assigned.insert(x.to_string());
            }
        }
        // Launches and function values keep their own order of memory accesses.
        Expr::Par { .. } | Expr::Apply { .. } | Expr::Closure { .. } | Expr::Lambda { .. } => {
            refused = true
        }
        // A tensor set through a view made inside the body: its memory is not known
        // before the loop.
        Expr::Method { recv, method, .. } if method == "set" => {
            refused |= !matches!(&**recv, Expr::Var(t) if !bound.contains(t) && is_tensor(t));
        }
        _ => {}
    });
    if refused {
        return vec![];
    }
    let invariant = |c: &Expr| {
        let mut ok = true;
        c.walk(&mut |x| {
            if let Expr::Var(y) = x {
                ok &= y != var && !bound.contains(y) && !assigned.contains(y);
            }
        });
        ok
    };
    let mut carried = Vec::new();
    for (tensor, coords) in top_level_sets(body) {
        let Some((last, lead)) = coords.split_last() else {
            continue;
        };
        let once = count(body, |e| calls(e, &tensor, &["set"], false)) == 1;
        let only_accessed = count(body, |e| matches!(e, Expr::Var(t) if *t == tensor))
            == count(body, |e| calls(e, &tensor, &["get", "set"], true));
        if !matches!(last, Expr::Var(v) if v == var)
            || !lead.iter().all(invariant)
            || !once
            || !only_accessed
        {
            continue;
        }
        let c = Carried {
            tensor,
            lead: lead.to_vec(),
        };
        if reads_before(body, &c, var) && !carried.contains(&c) {
            carried.push(c);
        }
    }
    carried
}

/// The `(tensor, coordinates)` of the `set` calls that are statements of `body` itself.
fn top_level_sets(body: &Expr) -> Vec<(String, Vec<Expr>)> {
    let Expr::Block { stmts, result } = body else {
        return vec![];
    };
    let exprs = stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Expr(e) => Some(e),
            Stmt::Let { .. } => None,
        })
        .chain(result.as_deref());
    exprs
        .filter_map(|e| match e {
            Expr::Method { recv, method, args } if method == "set" => {
                match (&**recv, args.first()) {
                    (Expr::Var(t), Some(Expr::Array(coords))) => Some((t.clone(), coords.clone())),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

/// How many expressions of `body` `pick` picks.
fn count(body: &Expr, pick: impl Fn(&Expr) -> bool) -> usize {
    let mut n = 0;
    body.walk(&mut |e| n += usize::from(pick(e)));
    n
}

/// Whether `e` calls `method` (one of `methods`) on the variable `tensor`, with an array of
/// coordinates when `coords`.
fn calls(e: &Expr, tensor: &str, methods: &[&str], coords: bool) -> bool {
    matches!(e, Expr::Method { recv, method, args }
        if methods.contains(&method.as_str())
            && matches!(&**recv, Expr::Var(t) if t == tensor)
            && (!coords || matches!(args.first(), Some(Expr::Array(_)))))
}

/// Whether `body` reads `c`'s tensor at `[lead.., var - 1]`.
fn reads_before(body: &Expr, c: &Carried, var: &str) -> bool {
    count(body, |e| match e {
        Expr::Method { recv, method, args } => is_read_before(recv, method, args, c, var),
        _ => false,
    }) > 0
}

/// Whether `recv.method(args)` is `want` on `c`'s tensor at `[lead.., last]`, `at`
/// accepting `last`.
fn is_access(
    (recv, method, args): (&Expr, &str, &[Expr]),
    c: &Carried,
    want: &str,
    at: impl Fn(&Expr) -> bool,
) -> bool {
    let (Expr::Var(t), Some(Expr::Array(coords))) = (recv, args.first()) else {
        return false;
    };
    let Some((last, lead)) = coords.split_last() else {
        return false;
    };
    method == want && *t == c.tensor && lead == c.lead.as_slice() && at(last)
}

/// Whether `recv.method(args)` is `tensor.get([lead.., var - 1])` for `c`.
fn is_read_before(recv: &Expr, method: &str, args: &[Expr], c: &Carried, var: &str) -> bool {
    is_access((recv, method, args), c, "get", |last| {
        matches!(last, Expr::Binary(BinOp::Sub, a, b)
            if matches!(&**a, Expr::Var(v) if v == var)
                && matches!(&**b, Expr::Lit(Lit::Int(1, _))))
    })
}

/// Whether `recv.method(args)` is `tensor.set([lead.., var], _)` for `c`.
fn is_set_here(recv: &Expr, method: &str, args: &[Expr], c: &Carried, var: &str) -> bool {
    is_access(
        (recv, method, args),
        c,
        "set",
        |last| matches!(last, Expr::Var(v) if v == var),
    )
}

impl FnCx<'_, '_> {
    /// Before a loop over `var` whose body keeps the values of `carried`: the variables
    /// that keep them, nothing kept yet, and the test that the tensors the body sets
    /// (`written`) do not overlap the carried ones.
    pub(super) fn begin_forwarding(
        &mut self,
        var: &str,
        carried: &[Carried],
        written: &[String],
    ) -> R<()> {
        let mut kept = Vec::new();
        for c in carried {
            let s = self.tensor_scalar(&c.tensor)?;
            let (prev, current) = (self.b.declare_var(clif(s)), self.b.declare_var(clif(s)));
            let zero = self.zero(clif(s));
            self.b.def_var(prev, zero);
            self.b.def_var(current, zero);
            kept.push((c.clone(), prev, current));
        }
        let mut disjoint = self.b.ins().iconst(ct::I8, 1);
        for (k, c) in carried.iter().enumerate() {
            for other in written.iter().filter(|w| **w != c.tensor) {
                // A pair of carried tensors is tested once.
                if carried[..k].iter().any(|d| d.tensor == *other) {
                    continue;
                }
                let apart = self.tensors_apart(&c.tensor, other)?;
                disjoint = self.b.ins().band(disjoint, apart);
            }
        }
        self.g.shapes.push("kept stores");
        let have = self.b.declare_var(ct::I8);
        let no = self.b.ins().iconst(ct::I8, 0);
        self.b.def_var(have, no);
        self.forwarding.push(Forwarding {
            var: var.to_string(),
            kept,
            have,
            disjoint,
        });
        Ok(())
    }

    /// At the end of a step: the values this step set become the kept ones.
    pub(super) fn end_forwarding_step(&mut self) {
        let Some(f) = self.forwarding.last() else {
            return;
        };
        let (kept, have, disjoint) = (
            f.kept.iter().map(|(_, p, c)| (*p, *c)).collect::<Vec<_>>(),
            f.have,
            f.disjoint,
        );
        for (prev, current) in kept {
            let v = self.b.use_var(current);
            self.b.def_var(prev, v);
        }
        self.b.def_var(have, disjoint);
    }

    /// A read `recv.get(args)` of the value the step before set, when it is one: the kept
    /// value, or (first step, overlapping memory) the load `load` generates.
    pub(super) fn forwarded_get(
        &mut self,
        recv: &Expr,
        method: &str,
        args: &[Expr],
        load: &mut dyn FnMut(&mut Self) -> R<V>,
    ) -> Option<R<V>> {
        let f = self.forwarding.last()?;
        let (_, prev, _) = f
            .kept
            .iter()
            .find(|(c, ..)| is_read_before(recv, method, args, c, &f.var))?;
        let (prev, have) = (*prev, f.have);
        Some(self.kept_or_loaded(prev, have, load))
    }

    /// The kept value `prev` when `have`, else what `load` gives.
    fn kept_or_loaded(
        &mut self,
        prev: Variable,
        have: Variable,
        load: &mut dyn FnMut(&mut Self) -> R<V>,
    ) -> R<V> {
        let (kept, loading, after) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let h = self.b.use_var(have);
        self.b.ins().brif(h, kept, &[], loading, &[]);
        self.b.switch_to_block(loading);
        let loaded = load(self)?;
        let t = self.b.func.dfg.value_type(loaded.w[0]);
        self.b.append_block_param(after, t);
        self.b.ins().jump(after, &[loaded.w[0].into()]);
        self.b.switch_to_block(kept);
        let v = self.b.use_var(prev);
        self.b.ins().jump(after, &[v.into()]);
        self.b.switch_to_block(after);
        let w = self.b.block_params(after)[0];
        Ok(V {
            ty: loaded.ty,
            w: vec![w],
        })
    }

    /// After `recv.set(args)` stored `value`: keeps it when it is a carried element.
    pub(super) fn note_forwarded_set(
        &mut self,
        recv: &Expr,
        method: &str,
        args: &[Expr],
        value: Value,
    ) {
        let Some(f) = self.forwarding.last() else {
            return;
        };
        let current = f
            .kept
            .iter()
            .find(|(c, ..)| is_set_here(recv, method, args, c, &f.var))
            .map(|(_, _, current)| *current);
        if let Some(current) = current {
            self.b.def_var(current, value);
        }
    }

    /// The element type of the tensor named `t`.
    fn tensor_scalar(&self, t: &str) -> R<ScalarType> {
        match self.vars.get(t) {
            Some((Type::Tensor(elem), _)) => match **elem {
                Type::Scalar(s) => Ok(s),
                _ => Err(unsupported("tensors of compound elements")),
            },
            _ => Err(format!("`{t}` is not a tensor")),
        }
    }

    /// Whether the memory of tensors `a` and `b` is disjoint (1) or may overlap (0).
    fn tensors_apart(&mut self, a: &str, b: &str) -> R<Value> {
        let (a_lo, a_hi) = self.tensor_bytes(a)?;
        let (b_lo, b_hi) = self.tensor_bytes(b)?;
        let before = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, a_hi, b_lo);
        let after = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, b_hi, a_lo);
        Ok(self.b.ins().bor(before, after))
    }

    /// The first and one-past-last byte addresses of the tensor named `t`.
    fn tensor_bytes(&mut self, t: &str) -> R<(Value, Value)> {
        let s = self.tensor_scalar(t)?;
        let v = self.var(t)?;
        let len = self.tensor_method(&v, "len", &[], false)?.w[0];
        let bytes = self.scaled(len, s);
        let end = self.b.ins().iadd(v.w[0], bytes);
        Ok((v.w[0], end))
    }
}

/// The tensors set in `body` (outside names only: see [`carried_tensors`]).
pub(super) fn tensors_set(body: &Expr) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    body.walk(&mut |e| {
        if let Expr::Method { recv, method, .. } = e {
            if let (Expr::Var(t), "set") = (&**recv, method.as_str()) {
                if !names.contains(t) {
                    names.push(t.clone());
                }
            }
        }
    });
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::Pat;

    fn var(x: &str) -> Expr {
        Expr::var(x)
    }

    fn minus_one(x: &str) -> Expr {
        Expr::Binary(
            BinOp::Sub,
            Box::new(var(x)),
            Box::new(Expr::Lit(Lit::Int(1, None))),
        )
    }

    fn call(t: &str, method: &str, args: Vec<Expr>) -> Expr {
        Expr::Method {
            recv: Box::new(var(t)),
            method: method.into(),
            args,
        }
    }

    fn get(t: &str, coords: Vec<Expr>) -> Expr {
        call(t, "get", vec![Expr::Array(coords)])
    }

    fn set(t: &str, coords: Vec<Expr>, v: Expr) -> Expr {
        call(t, "set", vec![Expr::Array(coords), v])
    }

    fn block(stmts: Vec<Stmt>) -> Expr {
        Expr::Block {
            stmts,
            result: None,
        }
    }

    fn let_(name: &str, init: Expr) -> Stmt {
        Stmt::Let {
            pat: Pat::Bind {
                name: name.into(),
                mutable: false,
            },
            ty: Type::Infer,
            init: Some(init),
        }
    }

    /// `a.set([i, j], a.get([i, j - 1]))`, the sweep's step.
    fn step() -> Stmt {
        Stmt::Expr(set(
            "a",
            vec![var("i"), var("j")],
            get("a", vec![var("i"), minus_one("j")]),
        ))
    }

    fn carried(body: &Expr) -> Vec<Carried> {
        carried_tensors("j", body, &|x| x == "a" || x == "b")
    }

    #[test]
    fn a_step_that_sets_its_element_and_reads_the_one_before_is_carried() {
        assert_eq!(
            carried(&block(vec![step()])),
            vec![Carried {
                tensor: "a".into(),
                lead: vec![var("i")],
            }]
        );
        // Another tensor set beside it (its memory is tested before the loop).
        let beside = Stmt::Expr(set("b", vec![var("j")], get("a", vec![var("i"), var("j")])));
        assert_eq!(carried(&block(vec![step(), beside])).len(), 1);
    }

    #[test]
    fn steps_that_may_not_store_or_may_store_elsewhere_are_not_carried() {
        let if_ = Expr::If {
            cond: Box::new(Expr::Lit(Lit::Bool(true))),
            then: Box::new(block(vec![step()])),
            els: None,
        };
        let twice = Stmt::Expr(set(
            "a",
            vec![var("i"), var("j")],
            Expr::Lit(Lit::Float(0.0, None)),
        ));
        let moved = Stmt::Expr(Expr::Assign {
            target: Box::new(var("i")),
            value: Box::new(var("j")),
        });
        let view = let_("v", call("a", "sub", vec![var("i"), var("i")]));
        let inner_view = Stmt::Expr(set("w", vec![var("j")], Expr::Lit(Lit::Float(0.0, None))));
        let two_back = Stmt::Expr(set(
            "a",
            vec![var("i"), var("j")],
            get("a", vec![var("i"), var("i")]),
        ));
        for (body, why) in [
            (block(vec![Stmt::Expr(if_)]), "stored under an if"),
            (block(vec![step(), twice]), "stored twice"),
            (block(vec![moved, step()]), "a row the body assigns"),
            (block(vec![view, step()]), "named beside get and set"),
            (
                block(vec![let_("w", var("b")), step(), inner_view]),
                "a view set",
            ),
            (block(vec![two_back]), "no read of the element before"),
        ] {
            assert_eq!(carried(&body), vec![], "{why}");
        }
    }
}
