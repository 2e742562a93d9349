//! Inner loops on lanes: a sequential `for` loop inside scalar code whose iterations are
//! independent runs gangs of consecutive iterations, as a kernel runs gangs of elements.
//!
//! A row of an in-place form (`rows.par_chunks_mut(n).for_each(|row| for j in k + 1..n
//! { row[j] -= l * pivot[j] })`: LU's update, Floyd-Warshall's relaxation) cannot run a
//! gang of rows, which would read and write down columns lane by lane; its loop along the
//! row can. Lanes run an iteration's statements in lockstep, which computes what the loop
//! computes when no iteration reads what another writes: the body assigns only variables
//! it binds itself (no accumulator: a sum's order is kept) and writes one tensor, the
//! only one it touches, whose every access has the loop variable itself as one same
//! coordinate: `row[j]`, or `a[i][j]` written and `a[k][j]` read (two iterations then
//! never touch one element). A lane's element is computed by the same operations as
//! the scalar loop's, so results are bit for bit the same.

use super::super::cx::*;
use super::super::proofs::Proofs;
use super::aliases::Aliases;
use super::{Slot, G};
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};
use std::collections::{HashMap, HashSet};

/// Whether the iterations of `for var in .. { body }` may run in lockstep (see the
/// module's rules), `is_tensor` telling which variables bound outside are tensors.
pub(in crate::cpu::codegen) fn independent_iterations(
    var: &str,
    body: &Expr,
    is_tensor: &dyn Fn(&str) -> bool,
) -> bool {
    let bound: HashSet<String> = body.bound_inside().into_iter().collect();
    let mut ok = true;
    let mut tensor_uses = 0usize;
    // Every access of a tensor: its name, coordinates and whether it writes.
    let mut accesses: Vec<(&str, &Vec<Expr>, bool)> = Vec::new();
    body.walk(&mut |e| match e {
        Expr::Assign { target, .. } => {
            ok &= target.assigned_root().is_some_and(|x| bound.contains(x));
        }
        // Nested launches and function values keep their own order.
        Expr::Par { .. } | Expr::Apply { .. } | Expr::Closure { .. } | Expr::Lambda { .. } => {
            ok = false
        }
        Expr::Var(x) if is_tensor(x) && !bound.contains(x) => tensor_uses += 1,
        Expr::Method { recv, method, args } if matches!(method.as_str(), "get" | "set") => {
            if let (Expr::Var(t), Some(Expr::Array(coords))) = (&**recv, args.first()) {
                if is_tensor(t) && !bound.contains(t) {
                    accesses.push((t, coords, method == "set"));
                }
            }
        }
        _ => {}
    });
    // A tensor named anywhere but as the receiver of `get`/`set` (a view taken, a call's
    // argument) may be read or written elsewhere.
    if !ok || tensor_uses != accesses.len() {
        return false;
    }
    let Some(&(written, at, _)) = accesses.iter().find(|a| a.2) else {
        return false;
    };
    // Iterations `j1 != j2` touch different elements when every access has the loop
    // variable itself at one same coordinate.
    let is_var = |c: &Expr| matches!(c, Expr::Var(x) if x == var);
    let own_coordinate = (0..at.len()).any(|p| {
        accesses
            .iter()
            .all(|(_, c, _)| c.len() == at.len() && is_var(&c[p]))
    });
    own_coordinate && accesses.iter().all(|(t, ..)| *t == written)
}

/// Whether an iteration `body` of a `parallel_loop` has a loop that runs better on lanes
/// than the iterations themselves: one with independent iterations (see
/// [`independent_iterations`]), not a short loop of literal bounds. Lanes of iterations
/// would walk such a loop's rows side by side, a column at a time (`a[i][j]` for the
/// gang's `i`): gathers and scatters where the loop's own lanes load whole vectors.
pub(in crate::cpu::codegen) fn prefers_inner_loops(body: &Expr) -> bool {
    // Which names are tensors is known only as the code is generated: here, those that
    // `get` and `set` are called on.
    let mut tensors = HashSet::new();
    body.walk(&mut |e| {
        if let Expr::Method { recv, method, args } = e {
            if let (Expr::Var(t), "get" | "set", Some(Expr::Array(_))) =
                (&**recv, method.as_str(), args.first())
            {
                tensors.insert(t.clone());
            }
        }
    });
    let mut found = false;
    body.walk(&mut |e| {
        if let Expr::For { var, lo, hi, body } = e {
            let short = match (lo.literal_usize(), hi.literal_usize()) {
                (Some(lo), Some(hi)) => hi.saturating_sub(lo) < super::MAX_LANES,
                _ => false,
            };
            found |= !short && independent_iterations(var, body, &|x| tensors.contains(x));
        }
    });
    found
}

impl FnCx<'_, '_> {
    /// Whether `for var in .. { body }` in this scalar code runs gangs of iterations.
    pub(in crate::cpu::codegen) fn inner_loop_on_lanes(&self, var: &str, body: &Expr) -> bool {
        self.g.inner_gangs
            && self.gang.is_none()
            && !self.host
            && independent_iterations(var, body, &|x| {
                matches!(self.vars.get(x), Some((Type::Tensor(_), _)))
            })
    }

    /// The whole gangs of `for var in lo..hi { body }` (iterations independent, see
    /// [`independent_iterations`]), behind one bounds test for the accesses indexed by
    /// `var` or affine in it; returns where the iterations left begin (`lo` when the test failed: then
    /// the caller's checked scalar loop runs them all and reports the first failure).
    pub(in crate::cpu::codegen) fn gang_inner_loop(
        &mut self,
        var: &str,
        body: &Expr,
        (lo, hi): (Value, Value),
    ) -> R<Value> {
        let (groups, group) = self.gang_shape(body, var);
        let shift = (group * groups).trailing_zeros() as i64;
        let hi = self.b.ins().umax(lo, hi);
        let len = self.b.ins().isub(hi, lo);
        let gangs = self.b.ins().ushr_imm_u(len, shift);
        let whole = self.b.ins().ishl_imm_u(gangs, shift);
        let top = self.b.ins().iadd(lo, whole);
        let index = self.b.declare_var(ct::I64);
        let usize_ = Type::Scalar(ScalarType::Usize);
        // The loop starts anywhere: its gangs are not aligned to their width.
        let vars = HashMap::from([(
            var.to_string(),
            (usize_.clone(), vec![Slot::Seq(index, false)]),
        )]);
        let shadowed = self.vars.insert(var.to_string(), (usize_, vec![]));
        let shape = (groups, group);
        let (_, zero) = self.start_gang(body, var, vars, vec![], Aliases::new(), shape)?;
        self.g.simd_loops += 1;
        let proofs = Proofs {
            indexed: self.indexed_by(body, var),
            tensors: self.tensor_accesses(body, var),
            // A stencil's row: `from[i * n + j - 1]`, `from[(i + 1) * n + j]`.
            affine: self.affine_loads(body, var),
            ..Proofs::default()
        };
        let gangs_run = |f: &mut Self| {
            let first = f.iconst(0);
            f.counted_loop(first, gangs, ScalarType::Usize, |f, g| {
                let off = f.b.ins().ishl_imm_u(g, shift);
                let base = f.b.ins().iadd(lo, off);
                f.b.def_var(index, base);
                let _: G = f.gexpr(body)?;
                Ok(())
            })
        };
        let r = self.run_gangs_proved(&proofs, var, (lo, top), zero, &gangs_run);
        self.gang = None;
        match shadowed {
            Some(v) => self.vars.insert(var.to_string(), v),
            None => self.vars.remove(var),
        };
        let proved = r?;
        Ok(self.b.ins().select(proved, top, lo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{BinOp, Pat, Stmt};

    fn v(x: &str) -> Expr {
        Expr::var(x)
    }

    fn get(t: &str, at: Vec<Expr>) -> Expr {
        Expr::Method {
            recv: Box::new(v(t)),
            method: "get".into(),
            args: vec![Expr::Array(at)],
        }
    }

    fn set(t: &str, at: Vec<Expr>, value: Expr) -> Expr {
        Expr::Method {
            recv: Box::new(v(t)),
            method: "set".into(),
            args: vec![Expr::Array(at), value],
        }
    }

    fn block(stmts: Vec<Stmt>) -> Expr {
        Expr::Block {
            stmts,
            result: None,
        }
    }

    fn sub(a: Expr, b: Expr) -> Expr {
        Expr::Binary(BinOp::Sub, Box::new(a), Box::new(b))
    }

    fn independent(body: &Expr) -> bool {
        independent_iterations("j", body, &|x| x == "row" || x == "other")
    }

    #[test]
    fn an_update_of_the_loops_own_element_is_independent() {
        // row[j] -= l * pivot[j]
        let pivot_j = Expr::Index(Box::new(v("pivot")), Box::new(v("j")));
        let product = Expr::Binary(BinOp::Mul, Box::new(v("l")), Box::new(pivot_j));
        let body = block(vec![Stmt::Expr(set(
            "row",
            vec![v("j")],
            sub(get("row", vec![v("j")]), product),
        ))]);
        assert!(independent(&body));
        // In a 2-D tensor, row `i` bound outside.
        let body = set(
            "row",
            vec![v("i"), v("j")],
            get("row", vec![v("i"), v("j")]),
        );
        assert!(independent(&body));
        // Row `k` read along the loop, row `i` written: LU's update in a 2-D tensor.
        let row_k = get("row", vec![v("k"), v("j")]);
        assert!(independent(&set("row", vec![v("i"), v("j")], row_k)));
    }

    #[test]
    fn reading_another_element_of_the_written_tensor_is_a_dependence() {
        let next = Expr::Binary(BinOp::Add, Box::new(v("j")), Box::new(Expr::int(1)));
        assert!(!independent(&set(
            "row",
            vec![v("j")],
            get("row", vec![next])
        )));
        assert!(!independent(&set(
            "row",
            vec![v("j")],
            get("row", vec![v("k")])
        )));
        // Writing at a fixed index: every iteration writes the same element.
        assert!(!independent(&set("row", vec![v("k")], v("j"))));
    }

    #[test]
    fn accumulators_views_and_second_tensors_keep_the_loop_sequential() {
        let sum = Expr::Assign {
            target: Box::new(v("s")),
            value: Box::new(get("row", vec![v("j")])),
        };
        assert!(!independent(&sum));
        let two = block(vec![
            Stmt::Expr(set("row", vec![v("j")], Expr::int(0))),
            Stmt::Expr(set("other", vec![v("j")], Expr::int(0))),
        ]);
        assert!(!independent(&two));
        let view = Expr::Method {
            recv: Box::new(v("row")),
            method: "len".into(),
            args: vec![],
        };
        let body = block(vec![
            Stmt::Expr(set("row", vec![v("j")], Expr::int(0))),
            Stmt::Expr(view),
        ]);
        assert!(!independent(&body));
        // A loop that writes nothing gains nothing.
        assert!(!independent(&get("row", vec![v("j")])));
    }

    #[test]
    fn iterations_with_a_long_independent_loop_leave_the_lanes_to_it() {
        let update = set("a", vec![v("i"), v("j")], get("a", vec![v("k"), v("j")]));
        let for_j = |lo: Expr, hi: Expr| Expr::For {
            var: "j".into(),
            lo: Box::new(lo),
            hi: Box::new(hi),
            body: Box::new(update.clone()),
        };
        assert!(prefers_inner_loops(&for_j(v("k"), v("n"))));
        // Three channels of a pixel: the pixels keep the lanes.
        assert!(!prefers_inner_loops(&for_j(Expr::int(0), Expr::int(3))));
        let sum = Expr::Assign {
            target: Box::new(v("s")),
            value: Box::new(get("a", vec![v("i"), v("j")])),
        };
        let for_sum = Expr::For {
            var: "j".into(),
            lo: Box::new(Expr::int(0)),
            hi: Box::new(v("n")),
            body: Box::new(sum),
        };
        assert!(!prefers_inner_loops(&for_sum));
    }

    #[test]
    fn locals_of_the_body_may_be_assigned() {
        let body = block(vec![
            Stmt::Let {
                pat: Pat::bind("t"),
                ty: Type::Infer,
                init: Some(get("row", vec![v("j")])),
            },
            Stmt::Expr(Expr::Assign {
                target: Box::new(v("t")),
                value: Box::new(Expr::int(2)),
            }),
            Stmt::Expr(set("row", vec![v("j")], v("t"))),
        ]);
        assert!(independent(&body));
    }
}
