//! How a gang loop that walks rows (see `RowWalk`) visits its range: row by row, or, for
//! an element with a long loop inside (a matrix product's `for k in 0..n`), in tiles of
//! a gang's width by the chunk's rows, column block after column block, so that what the
//! loops read down a column of another matrix stays in cache from one row to the next.
//! Elements are independent: the order changes no result.

use super::super::cx::*;
use super::super::kernel::ScalarKernel;
use super::aliases::{dealias, Aliases};
use super::coherence::{may_hold_in_every_lane, Settling};
use super::state::{never_zero, Divisor, ElementFn, RowValue, RowWalk};
use accel_ir::{BinOp, Expr, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};
use cranelift_frontend::Variable;

impl FnCx<'_, '_> {
    /// The gangs of `lo..hi` row by row (rows end at multiples of every divisor): in
    /// each row, its whole gangs (each divisor's row and its start set for [`RowWalk`]),
    /// then its last indices one by one; with `overlap`, rows at least a gang wide end
    /// with an overlapping gang instead (see [`Self::gang_span`]: a 120-wide row's last
    /// 8 elements ran as scalar code, dividing the index by each divisor in heat-3d).
    /// (Rows do not settle an element's `if` as [`Self::run_gang_span_settling`] does:
    /// heat-3d's 120-wide rows ran 5% slower, each row's tests costing more than the
    /// seven gangs saved.)
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk_rows(
        &mut self,
        rows: &RowWalk,
        index: Variable,
        (lo, hi): (Value, Value),
        overlap: bool,
        each: &mut ElementFn<'_, Self>,
        scalar: ScalarKernel,
    ) -> R<()> {
        if !rows.values.is_empty() {
            self.g.shapes.push("row values");
        }
        let at = self.b.declare_var(ct::I64);
        self.b.def_var(at, lo);
        // Each divisor's row at the chunk's start: divided once, then stepped (a row ends
        // at the next multiple of some divisor and passes none; dividing per row cost
        // heat-3d's 120-wide rows three divisions each).
        for d in &rows.divisors {
            let q = self.b.ins().udiv(lo, d.value);
            let start = self.b.ins().imul(q, d.value);
            self.b.def_var(d.row, q);
            self.b.def_var(d.row_start, start);
        }
        let head = self.b.create_block();
        let row_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let s = self.b.use_var(at);
        let done = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, s, hi);
        self.b.ins().brif(done, exit, &[], row_block, &[]);
        self.b.switch_to_block(row_block);
        // This row's indices from `s`: to the next multiple of a divisor or the chunk's end.
        let mut n = self.b.ins().isub(hi, s);
        for d in &rows.divisors {
            let (q, start) = (self.b.use_var(d.row), self.b.use_var(d.row_start));
            let next = self.b.ins().iadd(start, d.value);
            let crossed = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, s, next);
            let q_next = self.b.ins().iadd_imm_s(q, 1);
            let q = self.b.ins().select(crossed, q_next, q);
            let start = self.b.ins().select(crossed, next, start);
            self.b.def_var(d.row, q);
            self.b.def_var(d.row_start, start);
            let into = self.b.ins().isub(s, start);
            let left = self.b.ins().isub(d.value, into);
            n = self.b.ins().umin(n, left);
        }
        let end = self.b.ins().iadd(s, n);
        self.set_row_values(rows)?;
        let shift = (self.lanes() as i64).trailing_zeros() as i64;
        let span = self.gang_span((s, n, end), shift, overlap);
        self.run_gang_span(index, &span, shift, each)?;
        let tail = span.tail;
        // The row's last indices: the launch's scalar kernel's.
        self.call_scalar(scalar, tail, end);
        self.b.def_var(at, end);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        if let Some(g) = self.gang.as_mut() {
            g.row_values_set = false;
        }
        Ok(())
    }

    /// The walk of rows of `divisors` for `body` over `param`, with the divisions in it
    /// that are the same across a row (see [`RowWalk::values`]): of 64-bit integers, by a
    /// divisor of the walk or a non-zero literal (neither can fail), of values made of
    /// the rows (`p / d`), values from outside the element and literals.
    pub(super) fn row_walk(
        &mut self,
        body: &Expr,
        param: &str,
        divisors: Vec<Divisor>,
        aliases: Aliases,
    ) -> RowWalk {
        let exprs: Vec<Expr> = divisors.iter().map(|d| d.expr.clone()).collect();
        let mut found: Vec<(Expr, Expr)> = Vec::new();
        body.walk(&mut |e| {
            let Expr::Binary(BinOp::Div | BinOp::Rem, a, d) = e else {
                return;
            };
            let (a, d) = (dealias(a, &aliases), dealias(d, &aliases));
            let safe = never_zero(&d, &divisors);
            let row = |x: &Expr| self.same_across_row(x, param, &exprs);
            let dealiased = dealias(e, &aliases);
            let wide = matches!(
                self.type_of(&dealiased),
                Ok(Type::Scalar(
                    ScalarType::Usize | ScalarType::U64 | ScalarType::I64
                ))
            );
            let a_row = matches!(&a, Expr::Var(p) if p == param);
            let new = !found.iter().any(|(x, _)| x == e);
            if safe && wide && !a_row && row(&a) && row(&d) && new {
                found.push((e.clone(), dealiased));
            }
        });
        let values = found
            .into_iter()
            .map(|(expr, dealiased)| RowValue {
                expr,
                dealiased,
                var: self.b.declare_var(ct::I64),
            })
            .collect();
        RowWalk {
            param: param.to_string(),
            divisors,
            aliases,
            values,
        }
    }

    /// Whether `e` (dealiased) is the same in every gang of a row walked by `divisors`.
    fn same_across_row(&self, e: &Expr, param: &str, divisors: &[Expr]) -> bool {
        match e {
            Expr::Lit(_) | Expr::Const(_) => true,
            Expr::Var(_) => self.outer_value(e),
            Expr::Binary(BinOp::Div, a, d)
                if matches!(&**a, Expr::Var(p) if p == param) && divisors.contains(d) =>
            {
                true
            }
            Expr::Binary(op, a, b) if !matches!(op, BinOp::And | BinOp::Or) => {
                self.same_across_row(a, param, divisors) && self.same_across_row(b, param, divisors)
            }
            Expr::Cast(x, _) => self.same_across_row(x, param, divisors),
            _ => false,
        }
    }

    /// Computes this row's [`RowWalk::values`] (at its start, the divisors' rows set).
    fn set_row_values(&mut self, rows: &RowWalk) -> R<()> {
        if rows.values.is_empty() {
            return Ok(());
        }
        if let Some(g) = self.gang.as_mut() {
            g.row_values_set = false;
        }
        for value in &rows.values {
            match self.gexpr(&value.dealiased)?.w[..] {
                [super::Part::Uni(v)] => self.b.def_var(value.var, v),
                _ => return Err(super::not_spmd("a row's value that differs between lanes")),
            }
        }
        if let Some(g) = self.gang.as_mut() {
            g.row_values_set = true;
        }
        Ok(())
    }

    /// `e`'s value when it is one of the row's values and they are set.
    pub(super) fn row_value(&mut self, e: &Expr) -> Option<super::G> {
        let g = self.gang.as_ref().filter(|g| g.row_values_set)?;
        let var = g.rows.as_ref()?.values.iter().find(|v| v.expr == *e)?.var;
        let ty = self.type_of(e).ok()?;
        Some(super::G {
            ty,
            w: vec![super::Part::Uni(self.b.use_var(var))],
        })
    }

    /// The whole gangs (`1 << shift` wide) of the `n` indices from `s` to `end`. With
    /// `overlap` (elements that only compute and store their own index: a `create`'s), a
    /// range at least a gang wide ends with a gang at its last indices instead,
    /// overlapping the one before and storing the same values again: up to a gang's width
    /// less one of indices would otherwise run as scalar code (a 2000-element stencil's
    /// last 15, a 120-wide row's last 8).
    pub(super) fn gang_span(
        &mut self,
        (s, n, end): (Value, Value, Value),
        shift: i64,
        overlap: bool,
    ) -> GangSpan {
        let lanes = 1i64 << shift;
        let gangs = self.b.ins().ushr_imm_u(n, shift);
        let whole = self.b.ins().ishl_imm_u(gangs, shift);
        let tail = self.b.ins().iadd(s, whole);
        if !overlap {
            return GangSpan {
                start: s,
                count: gangs,
                whole: gangs,
                tail,
                last: None,
            };
        }
        // The overlapping last gang: one more, its start held at `end - lanes`.
        let wide = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, n, lanes);
        let ragged = self.b.ins().icmp(IntCC::UnsignedLessThan, whole, n);
        let extra = self.b.ins().band(wide, ragged);
        let extra = self.b.ins().uextend(ct::I64, extra);
        GangSpan {
            start: s,
            count: self.b.ins().iadd(gangs, extra),
            whole: gangs,
            tail: self.b.ins().select(wide, end, tail),
            last: Some(self.b.ins().iadd_imm_s(end, -lanes)),
        }
    }

    /// Runs `each` for the gangs of `span`, the gang's index kept in `index`.
    pub(super) fn run_gang_span(
        &mut self,
        index: Variable,
        span: &GangSpan,
        shift: i64,
        each: &mut ElementFn<'_, Self>,
    ) -> R<()> {
        let zero = self.iconst(0);
        self.counted_loop(zero, span.count, ScalarType::Usize, |f, j| {
            let base = f.span_gang(span, shift, j);
            f.b.def_var(index, base);
            each(f, base)
        })
    }

    /// [`Self::run_gang_span`] for an element that is `let`s and one `if` on a condition
    /// that [`Self::settles`]: at a gang where the condition holds in no lane or in every
    /// lane, the gangs up to where that could change (a stencil's interior, up to the far
    /// border) run its one arm without testing it; other gangs (at the borders, the
    /// overlapping last one) test it as usual.
    pub(super) fn run_gang_span_settling(
        &mut self,
        index: Variable,
        span: &GangSpan,
        shift: i64,
        settling: &Settling<'_>,
        each: &mut ElementFn<'_, Self>,
    ) -> R<()> {
        let cond = settling.cond;
        // Tested as the values it compares (through the element's `let`s, which `settles`
        // vouched for), not by binding the `let`s: they may compute more than it reads.
        let tested = settling.expand(cond);
        self.g.shapes.push("settled if");
        let next = self.b.declare_var(ct::I64);
        let zero = self.iconst(0);
        self.b.def_var(next, zero);
        let [head, test, general, exit] = [(); 4].map(|_| self.b.create_block());
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let j = self.b.use_var(next);
        let done = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, j, span.count);
        self.b.ins().brif(done, exit, &[], test, &[]);
        self.b.switch_to_block(test);
        let base = self.span_gang(span, shift, j);
        self.b.def_var(index, base);
        let (Some(none), Some(steady)) =
            (self.holds_in_no_lane(&tested)?, self.steady_span(&tested)?)
        else {
            return Err(unsupported("an `if` whose gangs cannot be settled"));
        };
        // A condition that never holds in every lane (`i == 0 || i == n - 1`: `==` holds
        // in one lane at most) needs no run for that.
        let every = match may_hold_in_every_lane(&tested) {
            true => self.holds_in_every_lane(&tested)?,
            false => None,
        };
        // The run: gangs from `j` whose first index is below the first point where the
        // decision could change, none of them the overlapping last gang.
        let mask = self.iconst((1i64 << shift) - 1);
        let ragged = self.b.ins().band(steady, mask);
        let ragged = self.b.ins().icmp_imm_u(IntCC::NotEqual, ragged, 0);
        let ragged = self.b.ins().uextend(ct::I64, ragged);
        let ahead = self.b.ins().ushr_imm_u(steady, shift);
        let ahead = self.b.ins().iadd(ahead, ragged);
        let end = self.b.ins().iadd(j, ahead);
        let end = self.b.ins().umin(end, span.whole);
        let in_run = self.b.ins().icmp(IntCC::UnsignedLessThan, j, end);
        let mut decisions = vec![(none, false)];
        decisions.extend(every.map(|e| (e, true)));
        for (decided, holds) in decisions {
            let (run, after) = (self.b.create_block(), self.b.create_block());
            let go = self.b.ins().band(decided, in_run);
            self.b.ins().brif(go, run, &[], after, &[]);
            self.b.switch_to_block(run);
            let key = cond as *const Expr as usize;
            self.counted_loop(j, end, ScalarType::Usize, |f, k| {
                // A whole gang: its start is not held back (see `GangSpan::last`).
                let off = f.b.ins().ishl_imm_u(k, shift);
                let base = f.b.ins().iadd(span.start, off);
                f.b.def_var(index, base);
                f.settle(Some((key, holds)));
                let r = each(f, base);
                f.settle(None);
                r
            })?;
            self.b.def_var(next, end);
            self.b.ins().jump(head, &[]);
            self.b.switch_to_block(after);
        }
        self.b.ins().jump(general, &[]);
        self.b.switch_to_block(general);
        each(self, base)?;
        let after = self.b.ins().iadd_imm_s(j, 1);
        self.b.def_var(next, after);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// The first index of gang `j` of `span`.
    pub(super) fn span_gang(&mut self, span: &GangSpan, shift: i64, j: Value) -> Value {
        let off = self.b.ins().ishl_imm_u(j, shift);
        let base = self.b.ins().iadd(span.start, off);
        match span.last {
            Some(last) => self.b.ins().umin(base, last),
            None => base,
        }
    }

    /// Marks an `if` condition as decided for the gangs generated next (see
    /// [`super::Gang::settled`]).
    fn settle(&mut self, settled: Option<(usize, bool)>) {
        if let Some(g) = self.gang.as_mut() {
            g.settled = settled;
        }
    }

    /// The gangs of `lo..hi` (rows of one divisor `d`) tile by tile: for each block of
    /// a gang's width of columns, its gang in every row of the range (the rows' first and
    /// last columns outside the range skipped), where a row has fewer columns left than
    /// the width those run as scalar code. Rows a multiple of 128 long go row by row.
    pub(super) fn walk_tiles(
        &mut self,
        rows: &RowWalk,
        index: Variable,
        (lo, hi): (Value, Value),
        each: &mut ElementFn<'_, Self>,
        scalar: ScalarKernel,
    ) -> R<()> {
        let div = &rows.divisors[0];
        let d = div.value;
        let width = self.lanes() as i64;
        let exit = self.b.create_block();
        let body = self.b.create_block();
        let empty = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, lo, hi);
        self.b.ins().brif(empty, exit, &[], body, &[]);
        self.b.switch_to_block(body);
        let first_row = self.b.ins().udiv(lo, d);
        let last = self.b.ins().iadd_imm_s(hi, -1);
        let last_row = self.b.ins().udiv(last, d);
        let rows_end = self.b.ins().iadd_imm_s(last_row, 1);
        // Column blocks: ceil(d / width).
        let blocks = self.b.ins().iadd_imm_s(d, width - 1);
        let blocks = self.b.ins().udiv_imm_u(blocks, width);
        let nrows = self.b.ins().isub(rows_end, first_row);
        let count = self.b.ins().imul(nrows, blocks);
        // Column blocks outer, unless rows are a multiple of 128 elements long: then a
        // loop down a column of another such matrix (a row apart each step) meets few
        // cache sets and evicts itself, and row after row is faster.
        let aligned_rows = self.b.ins().band_imm_u(d, 127);
        let by_columns = self.b.ins().icmp_imm_u(IntCC::NotEqual, aligned_rows, 0);
        let zero = self.iconst(0);
        self.counted_loop(zero, count, ScalarType::Usize, |f, q| {
            let (q_rows, r_rows) = (f.b.ins().udiv(q, nrows), f.b.ins().urem(q, nrows));
            let (q_blocks, r_blocks) = (f.b.ins().udiv(q, blocks), f.b.ins().urem(q, blocks));
            let t = f.b.ins().select(by_columns, q_rows, r_blocks);
            let i = f.b.ins().select(by_columns, r_rows, q_blocks);
            let i = f.b.ins().iadd(first_row, i);
            let j0 = f.b.ins().imul_imm_s(t, width);
            let j1 = f.b.ins().iadd_imm_s(j0, width);
            let j1 = f.b.ins().umin(j1, d);
            let start = f.b.ins().imul(i, d);
            // This row's columns inside `lo..hi`.
            let into = f.b.ins().isub(lo, start);
            let before = f.b.ins().icmp(IntCC::UnsignedLessThan, lo, start);
            let c0 = f.b.ins().select(before, zero, into);
            let c1 = f.b.ins().isub(hi, start);
            let c1 = f.b.ins().umin(c1, d);
            let from = f.b.ins().umax(c0, j0);
            let to = f.b.ins().umin(c1, j1);
            let to = f.b.ins().umax(to, from);
            let whole = f.b.ins().isub(to, from);
            let is_gang = f.b.ins().icmp_imm_u(IntCC::Equal, whole, width);
            let (gang, rest, next) = (f.b.create_block(), f.b.create_block(), f.b.create_block());
            f.b.ins().brif(is_gang, gang, &[], rest, &[]);
            f.b.switch_to_block(gang);
            let base = f.b.ins().iadd(start, from);
            f.b.def_var(div.row, i);
            f.b.def_var(div.row_start, start);
            f.b.def_var(index, base);
            each(f, base)?;
            f.b.ins().jump(next, &[]);
            f.b.switch_to_block(rest);
            // Fewer columns than a gang (the last block of a row, or a row cut by the
            // range): scalar code.
            let p0 = f.b.ins().iadd(start, from);
            let p1 = f.b.ins().iadd(start, to);
            f.call_scalar(scalar, p0, p1);
            f.b.ins().jump(next, &[]);
            f.b.switch_to_block(next);
            Ok(())
        })?;
        self.b.ins().jump(exit, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }
}

/// Whether `body` runs a loop whose length is not a literal (a `for` over a variable
/// range, a `while`, a nested reduction): an element worth visiting in tiles.
pub(in crate::cpu::codegen) fn long_loop(body: &Expr) -> bool {
    let mut found = false;
    body.walk(&mut |e| match e {
        Expr::For { lo, hi, .. } => {
            found |= lo.literal_usize().is_none() || hi.literal_usize().is_none()
        }
        Expr::While { .. } | Expr::Par { .. } => found = true,
        _ => {}
    });
    found
}

impl GangSpan {
    /// How many gangs run.
    pub(super) fn count(&self) -> Value {
        self.count
    }
}

/// The gangs of a range (see [`FnCx::gang_span`]).
pub(super) struct GangSpan {
    /// The first gang's index.
    start: Value,
    /// How many gangs run.
    count: Value,
    /// How many of them start a gang's width after the one before (all but an
    /// overlapping last one).
    whole: Value,
    /// Where the indices left for scalar code begin.
    pub(super) tail: Value,
    /// Where the last gang starts when it overlaps the one before.
    last: Option<Value>,
}
