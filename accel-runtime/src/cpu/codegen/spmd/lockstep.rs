//! Lockstep counters: the variables of a `while` on a varying condition that every lane
//! still in the loop holds the same value of.
//!
//! `let mut k = 1; while k < 8 && is_letter(text[i + k]) { k += 1; }` (a search forward
//! from the lane's index) makes `k` varying: lanes leave the loop at different counts.
//! But the lanes still in it entered together with the same `k` and have all run the
//! body as often: when every assignment to `k` in the loop is a statement of the body
//! itself (not under further control) whose value reads nothing varying but `k`, the
//! running lanes agree on `k`. The loop can then keep `k` as one scalar, and
//! `text[i + k]` is a vector load at a uniform offset instead of a gather; each lane's
//! `k` after the loop is the value it left with, recorded at every test of the
//! condition.

use super::super::cx::*;
use super::coherence::mirrored;
use super::uniform::reads_varying;
use super::{not_spmd, Mask, Part, G};
use accel_ir::{BinOp, Expr, Lit, Pat, ScalarType, Stmt, Type};
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};
use cranelift_frontend::Variable;
use std::collections::{HashMap, HashSet};

/// For each `while` statement of `stmts` (by index), the variables bound by a `let mut`
/// before it in `stmts` that are lockstep counters of that loop, given the gang's
/// varying variables.
pub(super) fn lockstep_counters(
    stmts: &[Stmt],
    varying: &HashSet<String>,
) -> HashMap<usize, Vec<String>> {
    let mut found = HashMap::new();
    for (w, st) in stmts.iter().enumerate() {
        let Stmt::Expr(Expr::While { cond, body }) = st else {
            continue;
        };
        let names: Vec<String> = stmts[..w]
            .iter()
            .enumerate()
            .filter_map(|(l, st)| match st {
                Stmt::Let {
                    pat:
                        Pat::Bind {
                            name,
                            mutable: true,
                        },
                    init: Some(init),
                    ..
                } if varying.contains(name)
                    && !reads_varying(init, varying)
                    && !stmts[l + 1..w].iter().any(|s| stmt_assigns(s, name))
                    && counts_in_step(name, cond, body, varying) =>
                {
                    Some(name.clone())
                }
                _ => None,
            })
            .collect();
        if !names.is_empty() {
            found.insert(w, names);
        }
    }
    found
}

/// Whether `name` advances in step in `while cond { body }`: assigned only by statements
/// of `body` itself with values reading no varying variable but `name`, never in `cond`,
/// and not bound again inside (which would make a read of it another variable).
fn counts_in_step(name: &str, cond: &Expr, body: &Expr, varying: &HashSet<String>) -> bool {
    let Expr::Block { stmts, result } = body else {
        return false;
    };
    if assigns(cond, name) || cond.binds(name) || body.binds(name) {
        return false;
    }
    if result.as_deref().is_some_and(|r| assigns(r, name)) {
        return false;
    }
    let others: HashSet<String> = varying.iter().filter(|v| *v != name).cloned().collect();
    let mut stepped = false;
    for st in stmts {
        match st {
            Stmt::Expr(Expr::Assign { target, value }) if matches!(&**target, Expr::Var(v) if v == name) =>
            {
                if assigns(value, name) || reads_varying(value, &others) {
                    return false;
                }
                stepped = true;
            }
            st if stmt_assigns(st, name) => return false,
            _ => {}
        }
    }
    stepped
}

fn stmt_assigns(st: &Stmt, name: &str) -> bool {
    match st {
        Stmt::Let { init, .. } => init.as_ref().is_some_and(|e| assigns(e, name)),
        Stmt::Expr(e) => assigns(e, name),
    }
}

/// Whether `e` assigns to `name` (or a part of it) anywhere.
fn assigns(e: &Expr, name: &str) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if let Expr::Assign { target, .. } = x {
            found |= target.assigned_root() == Some(name);
        }
    });
    found
}

/// `cond` split at its first conjunct that `varies`: the conjuncts before it (tested
/// first, in order, as `&&` does) and the rest; no split (`None`: all of `cond`) when
/// the first conjunct varies or none does.
pub(super) fn uniform_prefix(
    cond: &Expr,
    varies: impl Fn(&Expr) -> bool,
) -> (Vec<&Expr>, Option<Expr>) {
    let conjuncts = conjuncts(cond);
    let same = conjuncts.iter().take_while(|c| !varies(c)).count();
    if same == 0 || same == conjuncts.len() {
        return (Vec::new(), None);
    }
    let rest = conjuncts[same..]
        .iter()
        .map(|c| (*c).clone())
        .reduce(|a, b| Expr::Binary(BinOp::And, Box::new(a), Box::new(b)))
        .expect("a varying conjunct");
    (conjuncts[..same].to_vec(), Some(rest))
}

/// The conjuncts of `cond` (`a && b && c`), in order.
fn conjuncts(cond: &Expr) -> Vec<&Expr> {
    let mut found = Vec::new();
    let mut walk = vec![cond];
    while let Some(e) = walk.pop() {
        match e {
            Expr::Binary(BinOp::And, a, b) => {
                walk.push(b);
                walk.push(a);
            }
            e => found.push(e),
        }
    }
    found
}

/// How a loop keeps a lockstep counter's lanes (see [`FnCx::gwhile_recording`]).
pub(super) struct Kept {
    /// The counter, one scalar inside the loop.
    counter: String,
    /// The variable holding its lanes while the loop runs.
    lanes: String,
    /// Counted instead of recorded (see [`counted_step`]): the value it starts from, its
    /// type and its step.
    counted: Option<(Value, ScalarType, i64)>,
}

impl FnCx<'_, '_> {
    /// `while cond { body }` with lockstep counters (see the module's documentation),
    /// each with the value it starts from: inside the loop each is one scalar, as if
    /// uniform; its lanes' values are kept aside and are the variable's again after the
    /// loop: every running lane's set to the scalar at each test of the condition or,
    /// for a counter stepped by a constant, computed from how often each lane ran the
    /// body.
    pub(super) fn gwhile_lockstep(
        &mut self,
        cond: &Expr,
        body: &Expr,
        counters: Vec<(String, V)>,
    ) -> R<G> {
        let mut aside = Vec::new();
        let mut kept = Vec::new();
        for (name, start) in counters {
            let Some(gang) = self.gang.as_mut() else {
                break;
            };
            let Some(slots) = gang.vars.remove(&name) else {
                continue;
            };
            gang.varying.remove(&name);
            let exit = format!("{name}#exit");
            gang.vars.insert(exit.clone(), slots);
            gang.varying.insert(exit.clone());
            let counted = match (&start.ty, start.w.first()) {
                (Type::Scalar(s), Some(&v)) => {
                    let from = self.iconst_value(v);
                    counted_step(&name, from, cond, body, *s).map(|step| (v, *s, step))
                }
                _ => None,
            };
            let scalar = self.vars.remove(&name);
            self.bind_var(&name, start);
            kept.push(Kept {
                counter: name.clone(),
                lanes: exit.clone(),
                counted,
            });
            aside.push((name, exit, scalar));
        }
        if kept.iter().any(|k| k.counted.is_some()) {
            self.g.shapes.push("counted loop");
        }
        let r = self.gwhile_recording(cond, body, &kept);
        for (name, exit, scalar) in aside {
            self.vars.remove(&name);
            if let Some(s) = scalar {
                self.vars.insert(name.clone(), s);
            }
            if let Some(gang) = self.gang.as_mut() {
                gang.varying.remove(&exit);
                if let Some(slots) = gang.vars.remove(&exit) {
                    gang.vars.insert(name.clone(), slots);
                }
                gang.varying.insert(name);
            }
        }
        r
    }

    /// [`FnCx::gwhile`], keeping each counter of `kept` in its lanes: stored into them
    /// before each test of the condition (for the lanes that run the test), or counted.
    pub(super) fn gwhile_recording(&mut self, cond: &Expr, body: &Expr, kept: &[Kept]) -> R<G> {
        let head = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        if !self.varies(cond) {
            self.b.ins().jump(head, &[]);
            self.b.switch_to_block(head);
            for k in kept {
                let now = self.var(&k.counter)?;
                self.set_gvar(&k.lanes, G::uniform(now))?;
            }
            let c = self.expr(cond)?.w[0];
            self.loop_test(c, body_block, exit);
            self.b.switch_to_block(body_block);
            self.gexpr(body)?;
            self.b.ins().jump(head, &[]);
            self.b.switch_to_block(exit);
            return Ok(G::unit());
        }
        let outer = self.gang.as_ref().and_then(|x| x.mask.clone());
        let start = match &outer {
            Some(m) => m.clone(),
            None => self.all_lanes(),
        };
        let live = self.mask_variables(&start);
        self.in_varying_loop(1);
        // Each counted counter's trips, per lane: how often it ran the body.
        let zero = self.vconst_i32_splat(0);
        let trips: Vec<Vec<Variable>> = kept
            .iter()
            .map(|k| match k.counted {
                Some(_) => self.mask_variables(&vec![zero; start.len()]),
                None => Vec::new(),
            })
            .collect();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let cur: Mask = live.iter().map(|v| self.b.use_var(*v)).collect();
        self.set_mask(Some(cur.clone()));
        for k in kept.iter().filter(|k| k.counted.is_none()) {
            let now = self.var(&k.counter)?;
            self.set_gvar(&k.lanes, G::uniform(now))?;
        }
        // Leading conjuncts the same in every lane (`k < 8` on a lockstep counter) end
        // the loop for the whole gang as scalar tests; the rest is tested per lane.
        let (same, rest) = uniform_prefix(cond, |e| self.varies(e));
        for conjunct in same {
            let go = self.expr(conjunct)?.w[0];
            let next = self.b.create_block();
            self.loop_test(go, next, exit);
            self.b.switch_to_block(next);
        }
        let c = self.gexpr(rest.as_ref().unwrap_or(cond));
        let c = c.and_then(|c| self.mask_of(&c));
        self.set_mask(outer.clone());
        let m = self.mask_and(&cur, &c?);
        let any = self.any_lane(&m);
        self.loop_test(any, body_block, exit);
        self.b.switch_to_block(body_block);
        for vars in &trips {
            for (var, ran) in vars.iter().zip(&m) {
                // A running lane's mask is -1.
                let before = self.b.use_var(*var);
                let after = self.b.ins().isub(before, *ran);
                self.b.def_var(*var, after);
            }
        }
        let free = self
            .gang
            .as_mut()
            .map(|g| std::mem::take(&mut g.pending_free));
        let outer_free = match (free, self.gang.as_mut()) {
            (Some(names), Some(g)) if !names.is_empty() => {
                g.free_running.replace((m.clone(), names))
            }
            (_, g) => g.and_then(|g| g.free_running.take()),
        };
        let ran = self.gexpr_in(m.clone(), body);
        if let Some(g) = self.gang.as_mut() {
            g.free_running = outer_free;
        }
        ran?;
        for (var, x) in live.iter().zip(&m) {
            self.b.def_var(*var, *x);
        }
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        self.set_mask(outer);
        self.in_varying_loop(-1);
        for (k, vars) in kept.iter().zip(&trips) {
            if let Some((start, s, step)) = k.counted {
                let counts: Vec<Value> = vars.iter().map(|v| self.b.use_var(*v)).collect();
                let value = self.counted_lanes(start, s, step, counts)?;
                self.set_gvar(&k.lanes, value)?;
            }
        }
        Ok(G::unit())
    }

    /// Enters (`1`) or leaves (`-1`) a loop whose steps differ between lanes.
    fn in_varying_loop(&mut self, step: isize) {
        if let Some(g) = self.gang.as_mut() {
            g.varying_loops = g.varying_loops.saturating_add_signed(step);
        }
    }

    /// Refuses a division lane by lane (`what`) inside a loop whose steps differ between
    /// lanes: each lane's division costs what scalar code's does, and the gang goes on
    /// dividing for every lane until its last one leaves (trial division for primes: 7x
    /// slower than the scalar kernel), so scalar code does less of the same work.
    pub(super) fn no_division_in_varying_loop(&self, what: &str) -> R<()> {
        match self.gang.as_ref().is_some_and(|g| g.varying_loops > 0) {
            true => Err(not_spmd(format!(
                "a loop whose steps differ between lanes divides lane by lane ({what})"
            ))),
            false => Ok(()),
        }
    }

    /// Variables holding the vectors of `m`, one per group.
    pub(super) fn mask_variables(&mut self, m: &[Value]) -> Vec<Variable> {
        m.iter()
            .map(|&x| {
                let v = self.b.declare_var(self.mask_type());
                self.b.def_var(v, x);
                v
            })
            .collect()
    }

    /// `start + step * trips` per lane, in the counter's type `s` (see [`counted_step`]:
    /// `step * trips` fits 32 bits where `s` is wider).
    fn counted_lanes(&mut self, start: Value, s: ScalarType, step: i64, trips: Vec<Value>) -> R<G> {
        let steps = match step {
            1 => trips,
            _ => {
                let by = self.b.ins().iconst(ct::I32, step);
                let mt = self.mask_type();
                let by = self.b.ins().splat(mt, by);
                trips.iter().map(|&t| self.b.ins().imul(t, by)).collect()
            }
        };
        let advance = self.cast_part(&Part::Var(steps), ScalarType::I32, s)?;
        let Part::Var(advance) = advance else {
            return Err(not_spmd("a counted loop's lanes"));
        };
        let from = self.splat_word(start, s);
        let w = advance
            .iter()
            .zip(from)
            .map(|(&a, f)| self.b.ins().iadd(f, a))
            .collect();
        Ok(G {
            ty: Type::Scalar(s),
            w: vec![Part::Var(w)],
        })
    }
}

/// The step of `name`, a lockstep counter of `while cond { body }` starting from
/// `start` (when a constant) and of type `s`, when its lanes can be counted: each
/// lane's value after the loop is `start + step * trips`, `trips` the times the lane ran
/// the body, counted in 32-bit lanes. So the body steps it once, by a constant (`k += 1`,
/// `k -= 2`), and the sum is exact: in 32-bit types always (wrapping as the steps do), in
/// 64-bit ones when the condition bounds the counter by a constant on the side it moves
/// towards (`k < 8` from `k = 1`), so that `step * trips` fits 32 bits.
pub(super) fn counted_step(
    name: &str,
    start: Option<i64>,
    cond: &Expr,
    body: &Expr,
    s: ScalarType,
) -> Option<i64> {
    let Expr::Block { stmts, .. } = body else {
        return None;
    };
    let is_counter = |e: &Expr| matches!(e, Expr::Var(v) if v == name);
    let literal = |e: &Expr| match e {
        Expr::Lit(Lit::Int(c, _)) if *c <= i32::MAX as u64 => Some(*c as i64),
        _ => None,
    };
    let mut steps = stmts.iter().filter_map(|st| match st {
        Stmt::Expr(Expr::Assign { target, value }) if is_counter(target) => Some(match &**value {
            Expr::Binary(BinOp::Add, a, b) if is_counter(a) => literal(b),
            Expr::Binary(BinOp::Add, a, b) if is_counter(b) => literal(a),
            Expr::Binary(BinOp::Sub, a, b) if is_counter(a) => literal(b).map(|c| -c),
            _ => None,
        }),
        _ => None,
    });
    let step = match (steps.next(), steps.next()) {
        (Some(Some(step)), None) if step != 0 => step,
        _ => return None,
    };
    match s {
        ScalarType::I32 | ScalarType::U32 => return Some(step),
        ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => {}
        _ => return None,
    }
    let start = i128::from(start.filter(|&x| x >= 0)?);
    // The farthest the counter can advance: to a bound `k < end` (`k > end` stepping
    // down), plus the step that leaves it.
    let reach = conjuncts(cond).into_iter().find_map(|c| {
        let Expr::Binary(op, a, b) = c else {
            return None;
        };
        let (op, end) = match (is_counter(a), is_counter(b)) {
            (true, false) => (*op, literal(b)?),
            (false, true) => (mirrored(*op), literal(a)?),
            _ => return None,
        };
        let end = i128::from(end);
        match op {
            BinOp::Lt | BinOp::Le if step > 0 => Some((end - start).max(0) + i128::from(step)),
            BinOp::Gt | BinOp::Ge if step < 0 => Some((start - end).max(0) - i128::from(step)),
            _ => None,
        }
    })?;
    (reach < i128::from(i32::MAX)).then_some(step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{Lit, ScalarType, Type};

    fn var(n: &str) -> Expr {
        Expr::var(n)
    }

    fn lit(x: u64) -> Expr {
        Expr::Lit(Lit::Int(x, Some(ScalarType::Usize)))
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    fn let_mut(name: &str, init: Expr) -> Stmt {
        Stmt::Let {
            pat: Pat::Bind {
                name: name.into(),
                mutable: true,
            },
            ty: Type::Infer,
            init: Some(init),
        }
    }

    fn assign(name: &str, value: Expr) -> Stmt {
        Stmt::Expr(Expr::Assign {
            target: Box::new(var(name)),
            value: Box::new(value),
        })
    }

    fn block(stmts: Vec<Stmt>) -> Expr {
        Expr::Block {
            stmts,
            result: None,
        }
    }

    fn while_(cond: Expr, body: Vec<Stmt>) -> Stmt {
        Stmt::Expr(Expr::While {
            cond: Box::new(cond),
            body: Box::new(block(body)),
        })
    }

    fn set(names: &[&str]) -> HashSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// `while k < 8 && x[i + k] > 0 { <body> }` after `let mut k = 1;`.
    fn search(body: Vec<Stmt>) -> Vec<Stmt> {
        let probe = Expr::Index(
            Box::new(var("x")),
            Box::new(bin(BinOp::Add, var("i"), var("k"))),
        );
        vec![
            let_mut("k", lit(1)),
            while_(
                bin(
                    BinOp::And,
                    bin(BinOp::Lt, var("k"), lit(8)),
                    bin(BinOp::Gt, probe, lit(0)),
                ),
                body,
            ),
        ]
    }

    #[test]
    fn a_counter_stepped_by_the_body_is_in_lockstep() {
        let stmts = search(vec![assign("k", bin(BinOp::Add, var("k"), var("step")))]);
        let found = lockstep_counters(&stmts, &set(&["i", "k"]));
        assert_eq!(found, HashMap::from([(1, vec!["k".to_string()])]));
    }

    #[test]
    fn a_counter_stepped_under_control_or_by_a_varying_value_is_not() {
        let under_if = Stmt::Expr(Expr::If {
            cond: Box::new(bin(BinOp::Lt, var("i"), lit(3))),
            then: Box::new(block(vec![assign("k", bin(BinOp::Add, var("k"), lit(1)))])),
            els: None,
        });
        assert!(lockstep_counters(&search(vec![under_if]), &set(&["i", "k"])).is_empty());
        let by_lane = assign("k", bin(BinOp::Add, var("k"), var("i")));
        assert!(lockstep_counters(&search(vec![by_lane]), &set(&["i", "k"])).is_empty());
        // Never stepped: nothing to gain, and nothing said about it.
        assert!(lockstep_counters(&search(vec![]), &set(&["i", "k"])).is_empty());
    }

    fn step_of(step: Stmt, s: ScalarType, start: Option<i64>) -> Option<i64> {
        let stmts = search(vec![step]);
        let Stmt::Expr(Expr::While { cond, body }) = &stmts[1] else {
            unreachable!("a while")
        };
        counted_step("k", start, cond, body, s)
    }

    #[test]
    fn counters_stepped_by_constants_are_counted_where_exact() {
        let up = |c| assign("k", bin(BinOp::Add, var("k"), lit(c)));
        let down = |c| assign("k", bin(BinOp::Sub, var("k"), lit(c)));
        // 32-bit counters: always (the sum wraps as the steps do).
        assert_eq!(step_of(up(3), ScalarType::I32, None), Some(3));
        assert_eq!(step_of(down(2), ScalarType::U32, None), Some(-2));
        // 64-bit ones: bounded by `k < 8` from a constant start.
        assert_eq!(step_of(up(1), ScalarType::Usize, Some(1)), Some(1));
        assert_eq!(step_of(up(1), ScalarType::Usize, None), None);
        // `k < 8` does not bound a counter stepping down.
        assert_eq!(step_of(down(1), ScalarType::U64, Some(1)), None);
        // Not by a constant, or more than once: recorded instead.
        let by_var = assign("k", bin(BinOp::Add, var("k"), var("step")));
        assert_eq!(step_of(by_var, ScalarType::I32, None), None);
        let mut stmts = search(vec![up(1), up(1)]);
        let Stmt::Expr(Expr::While { cond, body }) = stmts.remove(1) else {
            unreachable!("a while")
        };
        assert_eq!(counted_step("k", None, &cond, &body, ScalarType::I32), None);
        // Small integers are recorded.
        assert_eq!(step_of(up(1), ScalarType::U8, None), None);
    }

    #[test]
    fn a_bound_too_far_for_32_bit_counts_is_not_counted() {
        let far = Expr::Lit(Lit::Int(1 << 40, Some(ScalarType::Usize)));
        let cond = bin(BinOp::Lt, var("k"), far);
        let body = block(vec![assign("k", bin(BinOp::Add, var("k"), lit(1)))]);
        assert_eq!(
            counted_step("k", Some(0), &cond, &body, ScalarType::Usize),
            None
        );
        let near = bin(BinOp::Gt, lit(1000), var("k"));
        assert_eq!(
            counted_step("k", Some(0), &near, &body, ScalarType::Usize),
            Some(1)
        );
    }

    #[test]
    fn a_condition_splits_after_its_leading_uniform_conjuncts() {
        let c = bin(
            BinOp::And,
            bin(BinOp::And, var("u1"), var("u2")),
            bin(BinOp::And, var("v"), var("u3")),
        );
        let varies = |e: &Expr| matches!(e, Expr::Var(v) if v.starts_with('v'));
        let (same, rest) = uniform_prefix(&c, varies);
        assert_eq!(same, vec![&var("u1"), &var("u2")]);
        assert_eq!(rest, Some(bin(BinOp::And, var("v"), var("u3"))));
        // Nothing to split off: the condition as it is.
        assert_eq!(uniform_prefix(&var("v"), varies), (vec![], None));
        assert_eq!(uniform_prefix(&c, |_| false), (vec![], None));
    }

    #[test]
    fn a_counter_set_per_lane_before_the_loop_or_started_per_lane_is_not() {
        let step = assign("k", bin(BinOp::Add, var("k"), lit(1)));
        let mut stmts = search(vec![step.clone()]);
        stmts.insert(1, assign("k", var("i")));
        assert!(lockstep_counters(&stmts, &set(&["i", "k"])).is_empty());
        let mut stmts = search(vec![step]);
        stmts[0] = let_mut("k", var("i"));
        assert!(lockstep_counters(&stmts, &set(&["i", "k"])).is_empty());
    }
}
