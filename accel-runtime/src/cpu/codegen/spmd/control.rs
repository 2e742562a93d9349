//! Control flow per lane: blocks and `let`s, assignments (blended into the running lanes),
//! `if` (uniform: a branch; varying: both arms under masks, a costly arm only when some
//! lane takes it), `&&`/`||` (the right side under a mask), `while` (until no lane goes
//! on) and `for` over uniform bounds (one loop for the gang, versioned as scalar code's).

use super::super::cx::*;
use super::super::proofs::Proofs;
use super::{not_spmd, Mask, Part, G};
use accel_ir::{BinOp, Expr, Pat, ScalarType, Stmt, Type};
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};
use std::collections::{HashMap, HashSet};

impl FnCx<'_, '_> {
    /// A block for the gang. As in scalar code, a value bound by a `let` before a loop is
    /// pinned where it is computed (see [`FnCx::pin`]).
    pub(super) fn gblock(&mut self, stmts: &[Stmt], result: Option<&Expr>) -> R<G> {
        let loop_after = loops_after(stmts, result);
        let counters = match &self.gang {
            Some(g) => super::lockstep::lockstep_counters(stmts, &g.varying),
            None => HashMap::new(),
        };
        // The values the lockstep counters start from, as they are bound.
        let mut starts: HashMap<String, V> = HashMap::new();
        for (k, st) in stmts.iter().enumerate() {
            match st {
                Stmt::Let {
                    pat,
                    init: Some(init),
                    ..
                } => {
                    let mut g = self.gexpr(init)?;
                    let computed = !matches!(init, Expr::Lit(_) | Expr::Var(_));
                    if loop_after[k] && computed && matches!(g.ty, Type::Scalar(_)) {
                        g = self.gpin(g);
                    }
                    if let Pat::Bind { name, .. } = pat {
                        if counters.values().flatten().any(|c| c == name) {
                            if let Some(v) = g.as_uniform() {
                                starts.insert(name.clone(), v);
                            }
                        }
                    }
                    self.gbind(pat, g)?;
                }
                Stmt::Let { pat, .. } => {
                    return Err(unsupported(format!("`let {pat};` without a value")))
                }
                Stmt::Expr(x @ Expr::While { cond, body }) => {
                    // Lockstep counters stay exact in every lane.
                    let mut free = self.free_running(stmts, k, result, body);
                    free.retain(|name| !counters.get(&k).is_some_and(|c| c.contains(name)));
                    if let Some(g) = self.gang.as_mut() {
                        g.pending_free = free;
                    }
                    let ran = match counters.get(&k) {
                        Some(names) => {
                            let lockstep: Vec<(String, V)> = names
                                .iter()
                                .filter_map(|c| starts.get(c).map(|v| (c.clone(), v.clone())))
                                .collect();
                            self.gwhile_lockstep(cond, body, lockstep).map(|_| ())
                        }
                        None => self.gexpr(x).map(|_| ()),
                    };
                    if let Some(g) = self.gang.as_mut() {
                        g.pending_free.clear();
                    }
                    ran?;
                }
                Stmt::Expr(x) => {
                    self.gexpr(x)?;
                }
            }
        }
        match result {
            Some(r) => self.gexpr(r),
            None => Ok(G::unit()),
        }
    }

    /// The variables that the loop `body`, statement `k` of `stmts`, may leave free running
    /// (see `Gang::free_running`) where `stmts` is the element's outermost block: those it
    /// assigns whole that no later statement, nor the result, mentions.
    fn free_running(
        &self,
        stmts: &[Stmt],
        k: usize,
        result: Option<&Expr>,
        body: &Expr,
    ) -> HashSet<String> {
        let outermost = self
            .gang
            .as_ref()
            .is_some_and(|g| g.root_block == stmts.as_ptr() as usize);
        let mut assigned = HashSet::new();
        if !outermost {
            return assigned;
        }
        body.walk(&mut |x| {
            if let Expr::Assign { target, .. } = x {
                if let Expr::Var(name) = &**target {
                    assigned.insert(name.clone());
                }
            }
        });
        let mut later = HashSet::new();
        let mut mention = |x: &Expr| {
            if let Expr::Var(name) = x {
                later.insert(name.clone());
            }
        };
        for st in &stmts[k + 1..] {
            match st {
                Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => e.walk(&mut mention),
                Stmt::Let { .. } => {}
            }
        }
        if let Some(r) = result {
            r.walk(&mut mention);
        }
        assigned.retain(|name| !later.contains(name));
        assigned
    }

    /// `g` stored to the stack and loaded back, so that Cranelift computes it here rather
    /// than at its first use inside a loop.
    fn gpin(&mut self, g: G) -> G {
        let w =
            g.w.into_iter()
                .map(|p| match p {
                    Part::Var(vs) => Part::Var(vs.into_iter().map(|v| self.pin_value(v)).collect()),
                    Part::Uni(x) => Part::Uni(self.pin_value(x)),
                    p @ (Part::Seq(..) | Part::Rev(_) | Part::Clamp(_) | Part::Strided(..)) => p,
                })
                .collect();
        G { ty: g.ty, w }
    }

    fn pin_value(&mut self, x: Value) -> Value {
        let t = self.b.func.dfg.value_type(x);
        let slot = self
            .b
            .create_sized_stack_slot(cranelift_codegen::ir::StackSlotData::new(
                cranelift_codegen::ir::StackSlotKind::ExplicitSlot,
                t.bytes().max(8),
                4,
            ));
        self.b.ins().stack_store(ct::I64, x, slot, 0);
        self.b.ins().stack_load(ct::I64, t, slot, 0)
    }

    /// An assignment for the gang: to a varying variable, blended into the running lanes.
    pub(super) fn gassign(&mut self, target: &Expr, v: G) -> R<()> {
        let root = target
            .assigned_root()
            .ok_or_else(|| unsupported("this assignment target"))?;
        let varying = self
            .gang
            .as_ref()
            .is_some_and(|g| g.vars.contains_key(root));
        if !varying {
            // A uniform variable assigned under uniform control: scalar code's assignment.
            let w =
                v.w.into_iter()
                    .map(|p| match p {
                        Part::Uni(x) => Ok(x),
                        _ => Err(not_spmd(format!("`{root}` assigned a value per lane"))),
                    })
                    .collect::<R<Vec<_>>>()?;
            return self.assign(target, V { ty: v.ty, w });
        }
        if let Expr::Var(_) = target {
            return self.set_gvar(root, v);
        }
        // A field or element: the variable's value with those words replaced.
        let mut whole = self.gvar(root)?;
        let (_, at) = place_in(target, &whole.ty)?;
        for (k, p) in v.w.into_iter().enumerate() {
            whole.w[at + k] = p;
        }
        self.set_gvar(root, whole)
    }

    /// `if cond { then } else { els }` for the gang.
    pub(super) fn gif(&mut self, cond: &Expr, then: &Expr, els: Option<&Expr>) -> R<G> {
        let ty = match els {
            Some(_) => self.type_of(then)?,
            None => Type::Unit,
        };
        if !self.varies(cond) {
            let c = self.expr(cond)?.w[0];
            return self.branches(c, then, els, &ty);
        }
        let settled = self.gang.as_ref().and_then(|g| g.settled);
        if let Some((_, holds)) = settled.filter(|&(at, _)| at == cond as *const Expr as usize) {
            return match (holds, els) {
                (true, _) => self.gexpr(then),
                (false, Some(e)) => self.gexpr(e),
                (false, None) => Ok(G::unit()),
            };
        }
        let outer = self.gang.as_ref().and_then(|x| x.mask.clone());
        // Arms that store (an in-place stencil's `if interior { t.set([p], ..) }`) run as
        // vector stores where every lane takes them, lane by lane under a mask.
        let fits = |f: &Self, e: &Expr| f.cheap(e) || (stores(e) && straight(e));
        let coherent = fits(self, then)
            && els.is_none_or(|e| fits(self, e))
            && outer.is_none()
            && !self.loads(cond)
            && [Some(then), els]
                .into_iter()
                .flatten()
                .any(|e| self.loads(e) || stores(e));
        if coherent {
            if let Some(none) = self.holds_in_no_lane(cond)? {
                let every = self.holds_in_every_lane(cond)?;
                return self.gif_summarized((none, every), cond, then, els, &ty);
            }
        }
        self.gif_varying(cond, then, els, &ty)
    }

    /// [`Self::gif`] on a condition `none` says holds in no lane of the gang (a stencil's
    /// interior, away from the borders its condition tests) and `every` (when known) says
    /// holds in every lane (`i < k` for a gang below `k`): the one arm for every lane,
    /// without the condition's masks; elsewhere the condition per lane.
    fn gif_summarized(
        &mut self,
        (none, every): (Value, Option<Value>),
        cond: &Expr,
        then: &Expr,
        els: Option<&Expr>,
        ty: &Type,
    ) -> R<G> {
        self.g.shapes.push("coherent if");
        let result = self.result_vars(ty)?;
        let (interior, undecided, per_lane, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().brif(none, interior, &[], undecided, &[]);
        self.b.switch_to_block(interior);
        self.arm_into(els, ty, &result)?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(undecided);
        if let Some(every) = every {
            let all = self.b.create_block();
            self.b.ins().brif(every, all, &[], per_lane, &[]);
            self.b.switch_to_block(all);
            self.arm_into(Some(then), ty, &result)?;
            self.b.ins().jump(join, &[]);
        } else {
            self.b.ins().jump(per_lane, &[]);
        }
        self.b.switch_to_block(per_lane);
        let v = self.gif_varying(cond, then, els, ty)?;
        if *ty != Type::Unit {
            self.def_result(ty, &result, &v)?;
        }
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(self.use_result(ty, &result))
    }

    /// `if` on a condition that differs between lanes (of type `ty`).
    fn gif_varying(&mut self, cond: &Expr, then: &Expr, els: Option<&Expr>, ty: &Type) -> R<G> {
        let ty = ty.clone();
        let g = self.gexpr(cond)?;
        let m = self.mask_of(&g)?;
        let outer = self.gang.as_ref().and_then(|x| x.mask.clone());
        let not_m = self.mask_not(&m);
        let m_then = self.and_active(m.clone());
        let m_else = self.and_active(not_m);
        if self.cheap(then) && els.is_none_or(|e| self.cheap(e)) {
            // Branching on whether all lanes agree pays where they mostly do: a condition
            // on indices (a stencil's borders) is coherent across neighbouring lanes; one
            // on loaded data (Floyd-Warshall's path[p] < through_k) is as random as the
            // data, and its branches mispredict: both arms and a blend instead.
            if outer.is_none()
                && !self.loads(cond)
                && (self.loads(then) || els.is_some_and(|e| self.loads(e)))
            {
                return self.coherent_if(&m, m_then, m_else, then, els, &ty);
            }
            // Both arms for every lane, then a blend: no branch to mispredict.
            self.set_mask(Some(m_then));
            let tv = self.gexpr(then);
            self.set_mask(Some(m_else));
            let ev = els.map(|e| self.gexpr(e)).transpose();
            self.set_mask(outer);
            let (tv, ev) = (tv?, ev?);
            return match ev {
                Some(ev) if ty != Type::Unit => self.blend(&m, &tv, &ev),
                _ => Ok(G::unit()),
            };
        }
        // Each arm only when some lane takes it, its value kept in variables.
        let result = self.result_vars(&ty)?;
        for (arm, lanes, first) in [(Some(then), m_then, true), (els, m_else, false)] {
            let Some(arm) = arm else { continue };
            let run = self.b.create_block();
            let after = self.b.create_block();
            let any = self.any_lane(&lanes);
            self.b.ins().brif(any, run, &[], after, &[]);
            self.b.switch_to_block(run);
            let v = self.gexpr_in(lanes.clone(), arm);
            let v = v?;
            if ty != Type::Unit {
                let v = if first {
                    v
                } else {
                    let old = self.use_result(&ty, &result);
                    self.blend(&lanes, &v, &old)?
                };
                self.def_result(&ty, &result, &v)?;
            }
            self.b.ins().jump(after, &[]);
            self.b.switch_to_block(after);
        }
        Ok(self.use_result(&ty, &result))
    }

    /// A cheap `if` on a varying condition `m` where every lane runs: when every lane
    /// takes one arm (a stencil's interior, a border row), that arm alone, unmasked (its
    /// loads vector loads); otherwise both arms for every lane and a blend, no branch to
    /// mispredict.
    fn coherent_if(
        &mut self,
        m: &Mask,
        m_then: Mask,
        m_else: Mask,
        then: &Expr,
        els: Option<&Expr>,
        ty: &Type,
    ) -> R<G> {
        let result = self.result_vars(ty)?;
        let (only_else, check, only_then, both, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let any_then = self.any_lane(&m_then);
        self.b.ins().brif(any_then, check, &[], only_else, &[]);
        self.b.switch_to_block(only_else);
        self.arm_into(els, ty, &result)?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(check);
        let any_else = self.any_lane(&m_else);
        self.b.ins().brif(any_else, both, &[], only_then, &[]);
        self.b.switch_to_block(only_then);
        self.arm_into(Some(then), ty, &result)?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(both);
        self.set_mask(Some(m_then));
        let tv = self.gexpr(then);
        self.set_mask(Some(m_else));
        let ev = els.map(|e| self.gexpr(e)).transpose();
        self.set_mask(None);
        let (tv, ev) = (tv?, ev?);
        if let Some(ev) = ev {
            if *ty != Type::Unit {
                let v = self.blend(m, &tv, &ev)?;
                self.def_result(ty, &result, &v)?;
            }
        }
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(self.use_result(ty, &result))
    }

    /// An `if` on a uniform condition `c`: a branch, each arm for the gang, their values
    /// merged as vectors.
    fn branches(&mut self, c: Value, then: &Expr, els: Option<&Expr>, ty: &Type) -> R<G> {
        let result = self.result_vars(ty)?;
        let then_block = self.b.create_block();
        let else_block = self.b.create_block();
        let merge = self.b.create_block();
        self.b.ins().brif(c, then_block, &[], else_block, &[]);
        for (block, arm) in [(then_block, Some(then)), (else_block, els)] {
            self.b.switch_to_block(block);
            self.arm_into(arm, ty, &result)?;
            self.b.ins().jump(merge, &[]);
        }
        self.b.switch_to_block(merge);
        Ok(self.use_result(ty, &result))
    }

    /// Variables holding a value of type `ty` for every lane (vectors).
    fn result_vars(&mut self, ty: &Type) -> R<Vec<Vec<cranelift_frontend::Variable>>> {
        let ss = Self::word_scalars(ty)?;
        let mut out = Vec::new();
        for s in ss {
            let (t, n) = self.lane_vectors(s);
            let zero = self.vconst_bytes(t, vec![0; t.bytes() as usize]);
            let vars = (0..n)
                .map(|_| {
                    let v = self.b.declare_var(t);
                    self.b.def_var(v, zero);
                    v
                })
                .collect();
            out.push(vars);
        }
        Ok(out)
    }

    /// Runs `arm` (if any) for the gang as it is, its value (of type `ty`) into `result`.
    fn arm_into(
        &mut self,
        arm: Option<&Expr>,
        ty: &Type,
        result: &[Vec<cranelift_frontend::Variable>],
    ) -> R<()> {
        if let Some(arm) = arm {
            let v = self.gexpr(arm)?;
            if *ty != Type::Unit {
                self.def_result(ty, result, &v)?;
            }
        }
        Ok(())
    }

    fn def_result(
        &mut self,
        ty: &Type,
        vars: &[Vec<cranelift_frontend::Variable>],
        v: &G,
    ) -> R<()> {
        let ss = Self::word_scalars(ty)?;
        for ((p, s), vs) in v.w.iter().zip(ss).zip(vars) {
            let xs = self.vectors(p, s);
            for (var, x) in vs.iter().zip(xs) {
                self.b.def_var(*var, x);
            }
        }
        Ok(())
    }

    fn use_result(&mut self, ty: &Type, vars: &[Vec<cranelift_frontend::Variable>]) -> G {
        let w = vars
            .iter()
            .map(|vs| Part::Var(vs.iter().map(|v| self.b.use_var(*v)).collect()))
            .collect();
        G { ty: ty.clone(), w }
    }

    /// The affine loads of `body` over `var` (see [`FnCx::affine_loads`]) whose stride is
    /// the same in every lane: those a test before the loop can prove (with the largest
    /// lane's offset); the others are checked lane by lane.
    pub(super) fn uniform_affine_loads(
        &self,
        body: &Expr,
        var: &str,
    ) -> Vec<super::super::proofs::AffineLoad> {
        self.affine_loads(body, var)
            .into_iter()
            .filter(|l| !self.varies(&l.stride) && !self.varies(&Expr::Var(l.seq.clone())))
            .collect()
    }

    /// The sequences the same for every lane that `body` indexes by `var` (a sequence
    /// per lane is checked lane by lane).
    pub(super) fn uniform_indexed_by(&self, body: &Expr, var: &str) -> Vec<String> {
        self.indexed_by(body, var)
            .into_iter()
            .filter(|s| !self.varies(&Expr::Var(s.clone())))
            .collect()
    }

    /// `e` for the lanes `lanes` (the running lanes again afterwards).
    pub(super) fn gexpr_in(&mut self, lanes: Mask, e: &Expr) -> R<G> {
        let outer = self.gang.as_ref().and_then(|x| x.mask.clone());
        self.set_mask(Some(lanes));
        let r = self.gexpr(e);
        self.set_mask(outer);
        r
    }

    /// Sets the running lanes.
    pub(super) fn set_mask(&mut self, m: Option<Mask>) {
        if let Some(g) = &mut self.gang {
            g.mask = m;
        }
    }

    /// Whether `e` may run for lanes that do not take it (its effects would be wrong
    /// otherwise): no loops or nested operations, no `match`, no tensor stores, and every
    /// load and integer division in it per lane (those mask the lanes not running).
    pub(super) fn cheap(&self, e: &Expr) -> bool {
        let mut ok = straight(e);
        e.walk(&mut |x| match x {
            Expr::Method { method, .. } if method == "set" => ok = false,
            Expr::Method { method, .. } if method == "get" => ok &= self.varies(x),
            Expr::Index(..) => ok &= self.varies(x),
            Expr::Binary(BinOp::Div | BinOp::Rem, a, _) => {
                let float = matches!(self.type_of(a), Ok(Type::Scalar(s)) if s.is_float());
                ok &= float || self.varies(x);
            }
            Expr::Assign { target, .. } => {
                ok &= target
                    .assigned_root()
                    .is_some_and(|r| self.gang.as_ref().is_some_and(|g| g.varying.contains(r)));
            }
            _ => {}
        });
        ok
    }

    /// Whether `e` reads memory at varying indices: loads that masking turns into
    /// gathers, and that a coherent `if` can make vector loads again. Arithmetic alone
    /// gains nothing from the coherent form's extra branches and copies (Black-Scholes'
    /// `if d < 0.0 { 1.0 - w } else { w }` ran 1.5x slower with them).
    fn loads(&self, e: &Expr) -> bool {
        let mut any = false;
        e.walk(&mut |x| {
            any |= matches!(x, Expr::Index(..)) && self.varies(x)
                || matches!(x, Expr::Method { method, .. } if method == "get") && self.varies(x)
        });
        any
    }

    /// `a && b`, `a || b`: `b` runs for the lanes `a` leaves undecided.
    pub(super) fn glogic(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<G> {
        if op == BinOp::And {
            if let Some(m) = self.range_test(a, b)? {
                return Ok(Self::bool_of(m));
            }
        }
        let l = self.gexpr(a)?;
        let ml = self.mask_of(&l)?;
        let undecided = if op == BinOp::And {
            ml.clone()
        } else {
            self.mask_not(&ml)
        };
        let lanes = self.and_active(undecided);
        let combine = |f: &mut Self, mb: &Mask| {
            if op == BinOp::And {
                f.mask_and(&ml, mb)
            } else {
                f.mask_or(&ml, mb)
            }
        };
        if self.cheap(b) {
            let r = self.gexpr_in(lanes, b);
            let mb = self.mask_of(&r?)?;
            return Ok(Self::bool_of(combine(self, &mb)));
        }
        let res = self.mask_variables(&ml);
        let run = self.b.create_block();
        let after = self.b.create_block();
        let any = self.any_lane(&lanes);
        self.b.ins().brif(any, run, &[], after, &[]);
        self.b.switch_to_block(run);
        let r = self.gexpr_in(lanes, b);
        let mb = self.mask_of(&r?)?;
        let v = combine(self, &mb);
        for (var, x) in res.iter().zip(v) {
            self.b.def_var(*var, x);
        }
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        Ok(Self::bool_of(
            res.iter().map(|v| self.b.use_var(*v)).collect(),
        ))
    }

    /// `while cond { body }` for the gang: on a uniform condition one loop; on a varying
    /// one, until no lane goes on, the body under the lanes that do.
    pub(super) fn gwhile(&mut self, cond: &Expr, body: &Expr) -> R<G> {
        self.gwhile_recording(cond, body, &[])
    }

    /// `for var in lo..hi { body }` with bounds the same for every lane: one loop for the
    /// gang, versioned on its bounds proofs as scalar code's.
    pub(super) fn gfor(&mut self, var: &str, lo: &Expr, hi: &Expr, body: &Expr) -> R<G> {
        // Bounds that read varying variables may still be one value for the gang (the
        // row of a 2-D element walking rows, `for k in i + 1..m`; the length of rows of
        // one width).
        let start = self.gexpr(lo)?;
        let Part::Uni(lo_value) = start.w[0] else {
            return Err(not_spmd("a `for` loop whose start differs between lanes"));
        };
        let s = Self::g_scalar(&start)?;
        let end = self.gexpr(hi)?;
        let Part::Uni(hi) = end.w[0] else {
            return self.gfor_varying_end(var, lo_value, s, end, body);
        };
        self.gfor_range(var, lo_value, hi, s, body)?;
        Ok(G::unit())
    }

    /// `for var in lo..hi { body }` over bound values the same for every lane (numbers of
    /// `s`): one loop for the gang, versioned on its bounds proofs as scalar code's.
    pub(super) fn gfor_range(
        &mut self,
        var: &str,
        lo: Value,
        hi: Value,
        s: ScalarType,
        body: &Expr,
    ) -> R<()> {
        let run = |f: &mut Self| {
            f.counted_loop(lo, hi, s, |f, i| {
                f.bind_var(
                    var,
                    V {
                        ty: Type::Scalar(s),
                        w: vec![i],
                    },
                );
                f.gexpr(body).map(|_| ())
            })
        };
        if s != ScalarType::Usize {
            return run(self);
        }
        let proofs = Proofs {
            indexed: self.uniform_indexed_by(body, var),
            tensors: self.tensor_accesses(body, var),
            affine: self.uniform_affine_loads(body, var),
            ..Proofs::default()
        };
        self.versioned(&proofs, var, lo, hi, run)
    }
}

impl FnCx<'_, '_> {
    /// `for var in lo..end` with `lo` the same for every lane and `end` not: the counter
    /// runs from `lo` until no lane is below its end, the body under the lanes that are.
    fn gfor_varying_end(
        &mut self,
        var: &str,
        lo: Value,
        s: ScalarType,
        end: G,
        body: &Expr,
    ) -> R<G> {
        let counter = self.b.declare_var(clif(s));
        self.b.def_var(counter, lo);
        let head = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let j = self.b.use_var(counter);
        let below = self.gcompare(
            cranelift_codegen::ir::condcodes::IntCC::SignedLessThan,
            s,
            &Part::Uni(j),
            &end.w[0],
        );
        let m = self.and_active(below);
        let any = self.any_lane(&m);
        self.loop_test(any, body_block, exit);
        self.b.switch_to_block(body_block);
        self.bind_var(
            var,
            V {
                ty: Type::Scalar(s),
                w: vec![j],
            },
        );
        self.gexpr_in(m, body)?;
        let next = self.b.ins().iadd_imm_s(j, 1);
        self.b.def_var(counter, next);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(G::unit())
    }
}

/// For each statement of a block, whether a loop follows it in the block.
pub(in crate::cpu::codegen) fn loops_after(stmts: &[Stmt], result: Option<&Expr>) -> Vec<bool> {
    let has_loop = |e: &Expr| {
        let mut found = false;
        e.walk(&mut |x| found |= matches!(x, Expr::For { .. } | Expr::While { .. }));
        found
    };
    let mut after = vec![result.is_some_and(has_loop); stmts.len()];
    for k in (0..stmts.len().saturating_sub(1)).rev() {
        let next = match &stmts[k + 1] {
            Stmt::Let { init: Some(x), .. } | Stmt::Expr(x) => has_loop(x),
            Stmt::Let { init: None, .. } => false,
        };
        after[k] = after[k + 1] || next;
    }
    after
}

/// The type and word offset of an assignment target (a field or literal element path)
/// inside its root variable of type `t`.
fn place_in(target: &Expr, t: &Type) -> R<(Type, usize)> {
    match target {
        Expr::Var(_) => Ok((t.clone(), 0)),
        Expr::Field(base, f) => {
            let (bt, at) = place_in(base, t)?;
            let (ft, off) = field_offset(&bt, f)?;
            Ok((ft, at + off))
        }
        Expr::Index(base, i) => {
            let (bt, at) = place_in(base, t)?;
            let k = i
                .literal_usize()
                .ok_or_else(|| not_spmd("assigning to an array element at a computed index"))?;
            let (ft, off) = field_offset(&bt, &k.to_string())?;
            Ok((ft, at + off))
        }
        _ => Err(unsupported("this assignment target")),
    }
}

/// Whether `e` stores into a tensor.
fn stores(e: &Expr) -> bool {
    let mut any = false;
    e.walk(&mut |x| any |= matches!(x, Expr::Method { method, .. } if method == "set"));
    any
}

/// Whether `e` has no loops, nested parallel operations or `match` (an arm copied into
/// each of a summarized `if`'s cases stays small).
fn straight(e: &Expr) -> bool {
    let mut ok = true;
    e.walk(&mut |x| {
        ok &= !matches!(
            x,
            Expr::For { .. } | Expr::While { .. } | Expr::Par { .. } | Expr::Match { .. }
        )
    });
    ok
}
