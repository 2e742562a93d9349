//! The gang loops of kernel chunks: a chunk's whole gangs of four consecutive indices,
//! each running the element (or iteration) for its four lanes; the caller runs the
//! indices left with scalar code.

use super::super::cx::*;
use super::super::kernel::ScalarKernel;
use super::super::ops::Producer;
use super::super::proofs::{Proofs, ShiftedLoad};
use super::aliases::{aliases, dealias, Aliases};
pub(in crate::cpu::codegen) use super::blocked::StoreFn;
use super::blocked::{blocked_loop, column_walk, row_uniform, with_column_reads, BlockedLoop};
use super::coherence::Settling;
pub(in crate::cpu::codegen) use super::state::ElementFn;
use super::state::{Divisor, RowWalk};
use super::uniform::varying_vars;
use super::walks::{long_loop, GangSpan};
use super::{Gang, Slot, G, MAX_LANES};
use accel_ir::ops::{Create, ParallelLoop};
use accel_ir::{BinOp, Expr, Pat, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types as ct, InstBuilder, StackSlotData, StackSlotKind, Value};
use cranelift_frontend::Variable;
use std::collections::{HashMap, HashSet};

/// What a gang loop may generate besides the gang's element: calls of the launch's
/// scalar kernel for the indices it leaves (a row's last indices, the borders shifted
/// loads would cross) and, for a `create`, the store of a gang's element at its index
/// (which lets a blocked element finish apart from where it started; see `blocked`).
pub(in crate::cpu::codegen) struct Tails<'a, 'b, F> {
    pub(in crate::cpu::codegen) scalar: ScalarKernel,
    pub(in crate::cpu::codegen) store: Option<&'a mut StoreFn<'b, F>>,
}

impl FnCx<'_, '_> {
    /// Runs `each` for every whole gang of `lo..hi` (its first index given) with the
    /// element `body` over the index `param` generated for gangs: `param` is the gang's
    /// index and the sequences in `safe` are long enough for it. Returns where the
    /// indices left begin (`lo` when the bounds test failed: then no gang ran).
    ///
    /// With `scalar` (the launch's scalar kernel, for ranges of indices), an element that
    /// divides its index by a value `d` bound outside it (`p / d`, `p % d`: a 2-D
    /// `create`) walks the range row by row instead ([`RowWalk`]): whole gangs within
    /// each row, where `p / d` is the same for every lane and `p % d` consecutive, and
    /// the few indices at a row's end as scalar code; then every index is done.
    pub(in crate::cpu::codegen) fn gang_loop(
        &mut self,
        body: &Expr,
        param: &str,
        safe: &[String],
        (lo, hi): (Value, Value),
        each: impl FnMut(&mut Self, Value) -> R<()>,
        tails: Option<Tails<'_, '_, Self>>,
    ) -> R<Value> {
        let (scalar, store) = match tails {
            Some(t) => (Some(t.scalar), t.store),
            None => (None, None),
        };
        let (divisors, aliases) = match scalar.is_some() {
            true => self.row_divisors(body, param),
            false => (vec![], Aliases::new()),
        };
        let walk = !divisors.is_empty();
        let (groups, group) = self.gang_shape(body, param);
        let shift = (group * groups).trailing_zeros() as i64;
        // Loads at the index shifted (a stencil's neighbours) hold for gangs between the
        // borders they would cross: the indices before run first as scalar code, those
        // after are left to the caller's scalar loop.
        let shifted = self.shifted_loads(body, param);
        // Gangs start anywhere unless the element divides (by a multiple of their width,
        // the quotient an aligned gang's lanes share): a stencil's first gang then starts
        // right after the border, not up to a gang's width later, and a `create` may end
        // with an overlapping gang.
        let align = !walk && divides(body);
        let (lo, hi) = match scalar {
            Some(scalar) if !shifted.is_empty() => {
                let (from, to) = self.inner_range(&shifted, (lo, hi), align, shift)?;
                self.call_scalar(scalar, lo, from);
                (from, to)
            }
            _ => (lo, hi),
        };
        let hi = self.within_indexed(body, param, safe, (lo, hi), walk)?;
        let index = self.b.declare_var(ct::I64);
        let mut vars = HashMap::new();
        vars.insert(
            param.to_string(),
            (
                Type::Scalar(ScalarType::Usize),
                // A multiple of the gang's width only where the element divides (above).
                vec![Slot::Seq(index, align)],
            ),
        );
        self.vars
            .insert(param.to_string(), (Type::Scalar(ScalarType::Usize), vec![]));
        let shape = (groups, group);
        let (rows, zero) = self.start_gang(body, param, vars, divisors, aliases, shape)?;
        let before = self.safe.len();
        self.safe.extend(vouched_pairs(body, param, safe));
        self.g.simd_loops += 1;
        let len = self.b.ins().isub(hi, lo);
        // An element written in place must not be computed twice (its second time would
        // read the first's result).
        let overlap = store.is_some() && !align && !self.g.writes_in_place;
        // Rows: every index of the chunk; else the gangs of the whole range.
        let span = (!walk).then(|| self.gang_span((lo, len, hi), shift, overlap));
        let top = span.as_ref().map_or(hi, |s| s.tail);
        // Sequences and tensors indexed by the gang's index checked once for the whole
        // chunk; when the test fails no gang runs, and the caller's checked scalar loop
        // takes every index (reporting the first that fails, as it would).
        let proofs = Proofs {
            indexed: self.indexed_by(body, param),
            tensors: self.tensor_accesses(body, param),
            affine: Vec::new(),
            shifted,
        };
        let blocked = match (&rows, &store) {
            (Some(rows), Some(_)) => self.blocked(body, param, rows),
            // A 1-D element walking down columns, written to its own output only.
            (None, Some(_)) if !self.g.writes_in_place => self.blocked_line(body, param),
            _ => None,
        };
        let each = std::cell::RefCell::new(each);
        let store = std::cell::RefCell::new(store);
        let gangs_run = |f: &mut Self| match &rows {
            Some(rows) => {
                let scalar = scalar.expect("rows walk with a scalar kernel");
                let each = &mut *each.borrow_mut();
                let mut store = store.borrow_mut();
                match (&blocked, store.as_mut()) {
                    (Some(bl), Some(store)) => {
                        f.g.shapes.push("blocked");
                        f.walk_blocked(rows, index, (lo, hi), bl, &mut **store, scalar)
                    }
                    _ if rows.divisors.len() == 1 && long_loop(body) => {
                        f.g.shapes.push("tiles");
                        f.walk_tiles(rows, index, (lo, hi), each, scalar)
                    }
                    _ => {
                        f.g.shapes.push("rows");
                        f.walk_rows(rows, index, (lo, hi), overlap, each, scalar)
                    }
                }
            }
            _ => {
                let span = span.as_ref().expect("a range not walked by rows");
                let mut store = store.borrow_mut();
                let blocked = blocked.as_ref().zip(store.as_mut().map(|s| &mut **s));
                let each = &mut *each.borrow_mut();
                f.run_line(body, param, (index, span, shift), blocked, each)
            }
        };
        let r = self.run_gangs_proved(&proofs, param, (lo, top), zero, &gangs_run);
        self.safe.truncate(before);
        if let Some(g) = self.gang.take() {
            for name in g.vars.keys() {
                self.vars.remove(name);
            }
        }
        let proved = r?;
        Ok(self.b.ins().select(proved, top, lo))
    }

    /// The gangs of `span` (a 1-D range), `shift` the `log2` of their width: blocked
    /// where `blocked` gives the loop and the store (see `blocked`), with their `if`
    /// settled where it settles (see `coherence`), else gang by gang.
    fn run_line(
        &mut self,
        body: &Expr,
        param: &str,
        (index, span, shift): (Variable, &GangSpan, i64),
        blocked: Option<(&BlockedLoop, &mut StoreFn<'_, Self>)>,
        each: &mut ElementFn<'_, Self>,
    ) -> R<()> {
        if let Some((bl, store)) = blocked {
            self.g.shapes.push("blocked columns");
            return self.walk_blocked_line(index, span, shift, bl, store);
        }
        match Settling::of(body, param) {
            Some(s) if self.settles(s.cond, &s) => {
                self.run_gang_span_settling(index, span, shift, &s, each)
            }
            _ => self.run_gang_span(index, span, shift, each),
        }
    }

    /// The end of the part of `lo..hi` that the sequences `body` indexes by `param` (and
    /// `safe` does not vouch for) are long enough for: gangs run there behind one bounds
    /// test, and the caller's checked scalar loop takes the indices after (a walk of rows
    /// takes every index itself: `hi`). A sequence read under a condition may be shorter
    /// than the launch (`create(k + 1, |i| if i < k { y[i] } else { a })`, a padded
    /// copy): then the whole chunk ran as scalar code.
    fn within_indexed(
        &mut self,
        body: &Expr,
        param: &str,
        safe: &[String],
        (lo, hi): (Value, Value),
        walk: bool,
    ) -> R<Value> {
        if walk {
            return Ok(hi);
        }
        let mut end = hi;
        for seq in self.indexed_by(body, param) {
            let vouched =
                safe.contains(&seq) || self.safe.iter().any(|(s, p)| *s == seq && p == param);
            if !vouched {
                let len = self.var(&seq)?.w[0];
                end = self.b.ins().umin(end, len);
            }
        }
        Ok(self.b.ins().umax(end, lo))
    }

    /// Enters the gang state for `body` over `param` (its variables `vars`, its groups and
    /// their lanes from [`Self::gang_shape`]), the divisors of a row walk computed: the
    /// walk, and whether a divisor is zero (a zero one runs no gang: the caller's checked
    /// scalar loop then reports the division).
    pub(super) fn start_gang(
        &mut self,
        body: &Expr,
        param: &str,
        vars: HashMap<String, (Type, Vec<Slot>)>,
        divisors: Vec<Expr>,
        aliases: Aliases,
        (groups, group): (usize, usize),
    ) -> R<(Option<RowWalk>, Option<Value>)> {
        let walk = !divisors.is_empty();
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4));
        let dummy = self.b.ins().stack_addr(ct::I64, slot, 0);
        let mut zero = None;
        let mut ds = Vec::new();
        for expr in divisors {
            let value = self.expr(&expr)?.w[0];
            let is_zero = self.b.ins().icmp_imm_u(IntCC::Equal, value, 0);
            zero = Some(match zero {
                Some(z) => self.b.ins().bor(z, is_zero),
                None => is_zero,
            });
            ds.push(Divisor {
                expr,
                value,
                row: self.b.declare_var(ct::I64),
                row_start: self.b.declare_var(ct::I64),
            });
        }
        let rows = match walk {
            true => Some(self.row_walk(body, param, ds, aliases)),
            false => None,
        };
        self.gang = Some(Gang {
            varying: varying_vars(body, &[param.to_string()]),
            vars,
            mask: None,
            dummy: Some(dummy),
            wide_masks: HashMap::new(),
            bound_under: HashMap::new(),
            rows: rows.clone(),
            groups,
            group,
            row_values_set: false,
            settled: None,
            root_block: match body {
                Expr::Block { stmts, .. } => stmts.as_ptr() as usize,
                _ => 0,
            },
            pending_free: HashSet::new(),
            varying_loops: 0,
            free_running: None,
        });
        Ok((rows, zero))
    }

    /// The part of `lo..hi` where every shifted load stays inside its sequence: from the
    /// largest offset subtracted, up to the smallest length less an offset added (as
    /// `lo..lo` when none); its start a multiple of the gang's width when `aligned`.
    fn inner_range(
        &mut self,
        shifted: &[ShiftedLoad],
        (lo, hi): (Value, Value),
        aligned: bool,
        shift: i64,
    ) -> R<(Value, Value)> {
        let (mut from, mut to) = (lo, hi);
        for l in shifted {
            let off = self.expr(&l.offset)?.w[0];
            if l.minus {
                from = self.b.ins().umax(from, off);
            } else {
                let len = self.var(&l.seq)?.w[0];
                let room = self.b.ins().isub(len, off);
                let short = self.b.ins().icmp(IntCC::UnsignedLessThan, len, off);
                let zero = self.iconst(0);
                let limit = self.b.ins().select(short, zero, room);
                to = self.b.ins().umin(to, limit);
            }
        }
        if aligned {
            let width = 1i64 << shift;
            let up = self.b.ins().iadd_imm_s(from, width - 1);
            from = self.b.ins().band_imm_u(up, -width);
        }
        let from = self.b.ins().umin(from, hi);
        let to = self.b.ins().umax(to, from);
        Ok((from, to))
    }

    /// `body` as a blocked loop (see `blocked`), when it walks rows of one divisor and has
    /// that shape.
    fn blocked(&self, body: &Expr, param: &str, rows: &RowWalk) -> Option<BlockedLoop> {
        if rows.divisors.len() != 1 {
            return None;
        }
        let divisor = rows.divisors[0].expr.clone();
        let uniform = |e: &Expr, prefix: &[accel_ir::Stmt]| {
            row_uniform(
                e,
                prefix,
                param,
                Some(&divisor),
                &|x| self.outer_value(x),
                &rows.aliases,
            )
        };
        let bl = blocked_loop(body, &rows.aliases, &uniform)?;
        Some(with_column_reads(
            bl,
            (param, &divisor),
            &rows.aliases,
            &|x| self.outer_value(x),
        ))
    }

    /// `body` as a blocked loop over a 1-D range (see `blocked`), when it has that shape
    /// with bounds the same for every gang and its loop walks down columns
    /// ([`column_walk`]).
    fn blocked_line(&self, body: &Expr, param: &str) -> Option<BlockedLoop> {
        let aliases = aliases(body);
        // No divisor: bounds may read only values from outside the element.
        let uniform = |e: &Expr, prefix: &[accel_ir::Stmt]| {
            row_uniform(e, prefix, param, None, &|x| self.outer_value(x), &aliases)
        };
        blocked_loop(body, &aliases, &uniform).filter(|bl| column_walk(bl, param, &aliases))
    }

    /// Whether the element function `element` (a lambda of one index) is run as a blocked
    /// walk down columns ([`Self::blocked_line`]): its launch's chunks are then made long
    /// (see `begin_launch_touching`), since a tile of gangs is at most a chunk's.
    pub(in crate::cpu::codegen) fn walks_down_columns(&self, element: &Expr) -> bool {
        let Expr::Lambda { params, body } = element else {
            return false;
        };
        let [(Pat::Bind { name: param, .. }, _)] = &params[..] else {
            return false;
        };
        self.blocked_line(body, param).is_some()
    }

    /// `gangs_run` over `lo..top` behind the bounds test of `proofs` (and, walking rows,
    /// `zero`: whether a divisor is zero); returns whether it ran.
    pub(super) fn run_gangs_proved(
        &mut self,
        proofs: &Proofs,
        param: &str,
        (lo, top): (Value, Value),
        zero: Option<Value>,
        gangs_run: &super::super::proofs::Run<'_, Self>,
    ) -> R<Value> {
        let Some(zero) = zero else {
            return self.versioned_with(proofs, param, lo, top, gangs_run, None);
        };
        let run = self.b.create_block();
        let join = self.b.create_block();
        self.b.append_block_param(join, ct::I8);
        let no = self.b.ins().iconst(ct::I8, 0);
        self.b.ins().brif(zero, join, &[no.into()], run, &[]);
        self.b.switch_to_block(run);
        // An error (an element with no gang form) abandons the kernel's code.
        let ok = self.versioned_with(proofs, param, lo, top, gangs_run, None)?;
        self.b.ins().jump(join, &[ok.into()]);
        self.b.switch_to_block(join);
        Ok(self.b.block_params(join)[0])
    }

    /// The divisors `d` of `p / d` and `p % d` in `body` (`p` the index `param`) that
    /// read only values bound outside the element and are not literal multiples of the
    /// widest gang (those keep one quotient per aligned gang already), at most three,
    /// with the element's aliases they were read through.
    fn row_divisors(&self, body: &Expr, param: &str) -> (Vec<Expr>, Aliases) {
        let aliases = aliases(body);
        let mut found: Vec<Expr> = Vec::new();
        body.walk(&mut |e| {
            let Expr::Binary(BinOp::Div | BinOp::Rem, a, d) = e else {
                return;
            };
            let d = dealias(d, &aliases);
            let is_param = dealias(a, &aliases) == Expr::Var(param.to_string());
            let multiple_of_width = d.literal_usize().is_some_and(|c| c % MAX_LANES == 0);
            if is_param
                && !multiple_of_width
                && found.len() < 3
                && !found.contains(&d)
                && self.outer_value(&d)
            {
                found.push(d);
            }
        });
        (found, aliases)
    }

    /// The loads in `body` at the index `param` plus or minus a value bound outside the
    /// element (a stencil's `a[p - 1]`, `a[p + n]`, read through aliases): a test before
    /// the gang loop proves them for every lane of every gang, so they need no check, and
    /// under a mask they stay vector loads.
    pub(in crate::cpu::codegen) fn shifted_loads(
        &self,
        body: &Expr,
        param: &str,
    ) -> Vec<ShiftedLoad> {
        let aliases = aliases(body);
        let is_param = |e: &Expr| dealias(e, &aliases) == Expr::Var(param.to_string());
        let mut out: Vec<ShiftedLoad> = Vec::new();
        body.walk(&mut |e| {
            let Expr::Index(base, index) = e else { return };
            let Expr::Var(seq) = &**base else { return };
            if !matches!(self.vars.get(seq), Some((Type::Seq(_), w)) if !w.is_empty()) {
                return;
            }
            let (offset, minus) = match &**index {
                Expr::Binary(BinOp::Add, a, b) if is_param(a) => (b, false),
                Expr::Binary(BinOp::Add, a, b) if is_param(b) => (a, false),
                Expr::Binary(BinOp::Sub, a, b) if is_param(a) => (b, true),
                _ => return,
            };
            let offset = dealias(offset, &aliases);
            if !self.outer_value(&offset) {
                return;
            }
            let load = ShiftedLoad {
                seq: seq.clone(),
                index: (**index).clone(),
                offset,
                minus,
            };
            if !out.contains(&load) {
                out.push(load);
            }
        });
        out
    }

    /// Whether `e` is arithmetic on literals, constants and variables bound outside the
    /// element being generated (so it can be computed before the gang loop).
    pub(super) fn outer_value(&self, e: &Expr) -> bool {
        match e {
            Expr::Lit(_) | Expr::Const(_) => true,
            Expr::Var(x) => self.vars.get(x).is_some_and(|(_, w)| !w.is_empty()),
            Expr::Binary(op, a, b) => {
                !matches!(op, BinOp::And | BinOp::Or) && self.outer_value(a) && self.outer_value(b)
            }
            Expr::Cast(x, _) => self.outer_value(x),
            Expr::Method { recv, method, args } => {
                method == "len" && args.is_empty() && self.outer_value(recv)
            }
            _ => false,
        }
    }

    /// A producer's chunk for gangs: each gang's element stored into the output columns.
    /// Returns where the scalar loop continues, or `None` when the producer is not a
    /// `create` over a named index.
    pub(in crate::cpu::codegen) fn gang_produce(
        &mut self,
        p: Producer<'_>,
        elem: &Type,
        out: &[Value],
        (lo, hi): (Value, Value),
        scalar_kernel: ScalarKernel,
    ) -> R<Option<Value>> {
        let Producer::Create(Create {
            n,
            f: Expr::Lambda { params, body },
        }) = p
        else {
            return Ok(None);
        };
        let Some((Pat::Bind { name, .. }, _)) = params.first() else {
            return Ok(None);
        };
        let safe = Self::length_sources(n);
        let mut store = |f: &mut Self, base: Value, g: &G| f.store_gang(elem, out, base, g);
        let rest = self.gang_loop(
            body,
            name,
            &safe,
            (lo, hi),
            |f, base| {
                let g = f.gexpr(body)?;
                f.store_gang(elem, out, base, &g)
            },
            Some(Tails {
                scalar: scalar_kernel,
                store: Some(&mut store),
            }),
        )?;
        Ok(Some(rest))
    }

    /// A `parallel_loop` chunk for gangs: four iterations at a time. Returns where the
    /// scalar loop continues, or `None` when the body is not a closure over a named index
    /// or has an inner loop better run on lanes (see `inner`).
    pub(in crate::cpu::codegen) fn gang_iterations(
        &mut self,
        p: ParallelLoop<'_>,
        (lo, hi): (Value, Value),
        scalar_kernel: ScalarKernel,
    ) -> R<Option<Value>> {
        let Expr::Lambda { params, body } = p.f else {
            return Ok(None);
        };
        let Some((Pat::Bind { name, .. }, _)) = params.first() else {
            return Ok(None);
        };
        if super::inner::prefers_inner_loops(body) {
            return Ok(None);
        }
        let rest = self.gang_loop(
            body,
            name,
            &[],
            (lo, hi),
            |f, _| {
                let _: G = f.gexpr(body)?;
                Ok(())
            },
            Some(Tails {
                scalar: scalar_kernel,
                store: None,
            }),
        )?;
        Ok(Some(rest))
    }
}

/// Whether `body` divides or takes a remainder anywhere (an aligned gang index may then
/// share one quotient across its lanes).
fn divides(body: &Expr) -> bool {
    let mut found = false;
    body.walk(&mut |e| found |= matches!(e, Expr::Binary(BinOp::Div | BinOp::Rem, ..)));
    found
}

/// The (sequence, index) pairs that `safe` (sequences at least as long as the range of
/// `param`) vouches for in `body`: each sequence by `param`, and by the names the element
/// binds once to either (inlining binds a helper's parameters so: `text[i]` in a helper
/// called with `(text, p)` reads `text#1[i#2]`).
fn vouched_pairs(body: &Expr, param: &str, safe: &[String]) -> Vec<(String, String)> {
    let aliases = aliases(body);
    let names_of = |target: &str| -> Vec<String> {
        let mut names = vec![target.to_string()];
        names.extend(
            aliases
                .keys()
                .filter(|a| dealias(&Expr::var(a.as_str()), &aliases) == Expr::var(target))
                .cloned(),
        );
        names
    };
    let indices = names_of(param);
    safe.iter()
        .flat_map(|s| names_of(s))
        .flat_map(|s| indices.iter().map(move |j| (s.clone(), j.clone())))
        .collect()
}
