//! `reduce` and `scan` over rows (a row as neutral element, every row its length): the
//! running rows live in device memory, each thread's in its own row. Each thread folds a
//! contiguous chunk into its row of the totals; one block combines the totals (an
//! order-keeping tree) or, for a scan, computes each chunk's carry, and each thread then
//! rescans its chunk from its carry.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::{Expr, ParOp, Type};

kernel_params!(
    /// Each thread folds its chunk into its row of the totals `tot`.
    RowPart "_part" { n, chunk; tot }
);
kernel_params!(
    /// One block folds the `count` totals; the result is row 0 of `tot`.
    RowFinal "_final" { count; tot }
);
kernel_params!(
    /// One block: the carry into each chunk, with scratch rows `scr`.
    RowCarry "_carry" { count; tot, car, scr }
);
kernel_params!(
    /// Each thread rescans its chunk from its carry into the output.
    RowScanFinal "_final" { n, chunk; car, out }
);

impl Gen {
    /// A top-level `reduce` or `scan` (`op`, with arguments `args`) over rows of `row`:
    /// the neutral row is evaluated once on the host first (its length is the rows').
    pub(super) fn row_fold_launch(
        &mut self,
        op: ParOp,
        args: &[&Expr; 3],
        n: Expr,
        element: Expr,
        row: &Type,
    ) -> R<Expr> {
        let ne = match args[1] {
            Expr::Var(v) if self.host_scope.contains_key(v) => v.clone(),
            _ => return self.with_host_arg(op, args, 1, "ne"),
        };
        let elem = row.clone();
        let scan = op == ParOp::Scan;
        let (kind, suffixes) = if scan {
            let kind = LaunchKind::RowScan {
                elem: elem.clone(),
                ne: ne.clone(),
            };
            (
                kind,
                vec![RowPart::SUFFIX, RowCarry::SUFFIX, RowScanFinal::SUFFIX],
            )
        } else {
            let kind = LaunchKind::RowReduce {
                elem: elem.clone(),
                ne: ne.clone(),
            };
            (kind, vec![RowPart::SUFFIX, RowFinal::SUFFIX])
        };
        let fold = args[0];
        self.launch(args, &n, kind, &suffixes, |kg, name| {
            kg.row_fold_kernels(name, &element, fold, &ne, &elem, scan)
        })
    }
}

impl KernelGen<'_> {
    /// `dst[at] = op(acc, x)` for rows of length `m` (a combined row of another length is
    /// a failure). Safe when the result is `acc` or `x` itself: `dst` row `at` is never
    /// `x`, and copying a row onto itself changes nothing.
    pub(super) fn combine_rows_into(
        &mut self,
        op: &Expr,
        acc: V,
        x: V,
        dst: &[String],
        at: &str,
        m: &str,
    ) -> R<()> {
        let r = self.apply(op, vec![acc, x])?;
        self.line(&format!(
            "if ({} != {m}) accel_fail(err, {FAIL_ROW_LENGTH}, {m}, {}); else {{",
            r.w[0], r.w[0]
        ));
        self.depth += 1;
        self.copy_row(&r, dst, &format!("({at}) * {m}"), m);
        self.depth -= 1;
        self.line("}");
        self.line("accel_arena_reset(&arena);");
        Ok(())
    }

    /// `for (HEADER) dst[dt] = op(acc[at], x[xt]);` over rows of length `m` packed in
    /// columns (each pair: the columns and a row index).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn combine_rows_loop(
        &mut self,
        header: &str,
        op: &Expr,
        elem: &Type,
        (acc, at): (&[String], &str),
        (x, xt): (&[String], &str),
        (dst, dt): (&[String], &str),
        m: &str,
    ) -> R<()> {
        self.line(header);
        self.depth += 1;
        let a = Self::row_view(elem, acc, at, m);
        let b = Self::row_view(elem, x, xt, m);
        self.combine_rows_into(op, a, b, dst, dt, m)?;
        self.depth -= 1;
        self.line("}");
        Ok(())
    }

    /// The kernels of a `reduce` or `scan` over rows (see [`LaunchKind::RowReduce`]). The
    /// running rows live in device memory, each thread's in its own row: the totals
    /// (`tot`), for scans also the carries (`car`) and one block's scratch rows (`scr`).
    fn row_fold_kernels(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &str,
        elem: &Type,
        scan: bool,
    ) -> R<String> {
        let mut src = self.row_part_kernel(name, f, op, ne, elem)?;
        if !scan {
            src.push_str(&self.row_final_kernel(name, op, ne, elem)?);
        } else {
            src.push_str(&self.row_carry_kernel(name, op, ne, elem)?);
            src.push_str(&self.row_scan_final_kernel(name, f, op, ne, elem)?);
        }
        Ok(src)
    }

    /// 1. Each thread folds its contiguous chunk into its row of the totals.
    fn row_part_kernel(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &str,
        elem: &Type,
    ) -> R<String> {
        // 1. Each thread folds its contiguous chunk into its row of the totals.
        let tot_c = self.begin_params::<RowPart>(name, elem)?.remove(0);
        let nev = self
            .scope
            .get(ne)
            .cloned()
            .ok_or("the neutral row is not bound")?;
        let m = nev.w[0].clone();
        self.line("const ull t = blockIdx.x * (ull)blockDim.x + threadIdx.x;");
        self.line("const ull lo = t * chunk;");
        self.line("if (lo < n) {");
        self.depth += 1;
        self.line("const ull hi = lo + chunk < n ? lo + chunk : n;");
        self.copy_row(&nev, &tot_c, &format!("t * {m}"), &m);
        self.line("for (ull i = lo; i < hi; i++) {");
        self.depth += 1;
        let x = self.apply_index(f, "i")?;
        let acc = Self::row_view(elem, &tot_c, "t", &m);
        self.combine_rows_into(op, acc, x, &tot_c, "t", &m)?;
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
        Ok(self.end())
    }

    /// 2 (reduce). One block folds the totals into row 0.
    fn row_final_kernel(&mut self, name: &str, op: &Expr, ne: &str, elem: &Type) -> R<String> {
        // 2. One block: each thread folds its part of the totals into the part's first
        // row, then an order-keeping tree over those rows; the result is row 0.
        self.scope.clear();
        let tot_c = self.begin_params::<RowFinal>(name, elem)?.remove(0);
        let m = self.scope.get(ne).ok_or("the neutral row is not bound")?.w[0].clone();
        self.line("const ull per = (count + blockDim.x - 1) / blockDim.x;");
        self.line("const ull lo = threadIdx.x * per;");
        self.line("const ull hi = lo + per < count ? lo + per : count;");
        self.combine_rows_loop(
            "for (ull r = lo + 1; r < hi; r++) {",
            op,
            elem,
            (&tot_c, "lo"),
            (&tot_c, "r"),
            (&tot_c, "lo"),
            &m,
        )?;
        self.line("const ull active = (count + per - 1) / per;");
        self.line("__syncthreads();");
        self.line("for (ull s = 1; s < active; s *= 2) {");
        self.depth += 1;
        self.combine_rows_loop(
            "if (threadIdx.x % (2 * s) == 0 && threadIdx.x + s < active) {",
            op,
            elem,
            (&tot_c, "lo"),
            (&tot_c, "(threadIdx.x + s) * per"),
            (&tot_c, "lo"),
            &m,
        )?;
        self.line("__syncthreads();");
        self.depth -= 1;
        self.line("}");
        Ok(self.end())
    }

    /// 2 (scan). One block computes the carry into each chunk.
    fn row_carry_kernel(&mut self, name: &str, op: &Expr, ne: &str, elem: &Type) -> R<String> {
        // 2. One block: the carry into each chunk (an exclusive scan of the totals). Each
        // thread totals its part of them (scratch rows 0..B), one thread scans those
        // (carries into the parts: scratch rows B..2B), each thread rescans its part.
        self.scope.clear();
        let sets = self.begin_params::<RowCarry>(name, elem)?;
        let (tot_c, car_c, scr_c) = (&sets[0], &sets[1], &sets[2]);
        let nev = self
            .scope
            .get(ne)
            .cloned()
            .ok_or("the neutral row is not bound")?;
        let m = nev.w[0].clone();
        self.line("const ull b = threadIdx.x;");
        self.line("const ull per = (count + blockDim.x - 1) / blockDim.x;");
        self.line("const ull lo = b * per < count ? b * per : count;");
        self.line("const ull hi = lo + per < count ? lo + per : count;");
        self.copy_row(&nev, scr_c, &format!("b * {m}"), &m);
        self.combine_rows_loop(
            "for (ull r = lo; r < hi; r++) {",
            op,
            elem,
            (scr_c, "b"),
            (tot_c, "r"),
            (scr_c, "b"),
            &m,
        )?;
        self.line("__syncthreads();");
        self.line("if (b == 0) {");
        self.depth += 1;
        self.copy_row(&nev, scr_c, &format!("blockDim.x * {m}"), &m);
        self.combine_rows_loop(
            "for (ull p = 0; p + 1 < blockDim.x; p++) {",
            op,
            elem,
            (scr_c, "blockDim.x + p"),
            (scr_c, "p"),
            (scr_c, "blockDim.x + p + 1"),
            &m,
        )?;
        self.depth -= 1;
        self.line("}");
        self.line("__syncthreads();");
        self.line("if (lo < hi) {");
        self.depth += 1;
        let from = Self::row_view(elem, scr_c, "blockDim.x + b", &m);
        self.copy_row(&from, car_c, &format!("lo * {m}"), &m);
        self.combine_rows_loop(
            "for (ull r = lo; r + 1 < hi; r++) {",
            op,
            elem,
            (car_c, "r"),
            (tot_c, "r"),
            (car_c, "r + 1"),
            &m,
        )?;
        self.depth -= 1;
        self.line("}");
        Ok(self.end())
    }

    /// 3 (scan). Each thread rescans its chunk from its carry.
    fn row_scan_final_kernel(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &str,
        elem: &Type,
    ) -> R<String> {
        // 3. Each thread rescans its chunk from its carry, straight into the result rows.
        self.scope.clear();
        let sets = self.begin_params::<RowScanFinal>(name, elem)?;
        let (car_c, out_c) = (&sets[0], &sets[1]);
        let m = self.scope.get(ne).ok_or("the neutral row is not bound")?.w[0].clone();
        self.line("const ull t = blockIdx.x * (ull)blockDim.x + threadIdx.x;");
        self.line("const ull lo = t * chunk;");
        self.line("if (lo < n) {");
        self.depth += 1;
        self.line("const ull hi = lo + chunk < n ? lo + chunk : n;");
        let x = self.apply_index(f, "lo")?;
        let acc = Self::row_view(elem, car_c, "t", &m);
        self.combine_rows_into(op, acc, x, out_c, "lo", &m)?;
        self.line("for (ull i = lo + 1; i < hi; i++) {");
        self.depth += 1;
        let x = self.apply_index(f, "i")?;
        let acc = Self::row_view(elem, out_c, "i - 1", &m);
        self.combine_rows_into(op, acc, x, out_c, "i", &m)?;
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
        Ok(self.end())
    }
}

/// Runs a `reduce` or (with `scan`) a `scan` over rows: up to two blocks per
/// multiprocessor of threads each fold a contiguous chunk; `count` chunks in all.
pub(crate) fn run(
    run: &mut Run<'_, '_>,
    at: &Launching,
    elem: &Type,
    ne: &str,
    scan: bool,
) -> R<HostVal> {
    let (n, sms, threads) = (at.n, at.sms, at.threads);
    let ne = run
        .env
        .get(ne)
        .ok_or(format!("`{ne}` is not bound"))?
        .clone();
    let m = ne.w[0];
    if n == 0 && !scan {
        return Ok(ne);
    }
    let blocks = n.div_ceil(threads).clamp(1, sms * 2);
    let chunk = n.div_ceil(blocks * threads).max(1);
    let count = n.div_ceil(chunk);
    let tot = run.alloc_rows(elem, count, m)?;
    let outs = if scan {
        run.alloc_rows(elem, n, m)?
    } else {
        Vec::new()
    };
    if n > 0 {
        let part = RowPart {
            n,
            chunk,
            tot: tot.clone(),
        };
        run.start(at, blocks as u32, &part)?;
        if scan {
            let car = run.alloc_rows(elem, count, m)?;
            let scr = run.alloc_rows(elem, 2 * threads, m)?;
            let carry = RowCarry {
                count,
                tot: tot.clone(),
                car: car.clone(),
                scr,
            };
            run.start(at, 1, &carry)?;
            let out = outs.clone();
            run.start(at, blocks as u32, &RowScanFinal { n, chunk, car, out })?;
        } else {
            let tot = tot.clone();
            run.start(at, 1, &RowFinal { count, tot })?;
        }
    }
    let row = Type::Seq(Box::new(elem.clone()));
    Ok(if scan {
        HostVal {
            ty: Type::Seq(Box::new(row)),
            w: [vec![n, m], outs].concat(),
        }
    } else {
        HostVal {
            ty: row,
            w: [vec![m], tot].concat(),
        }
    })
}
