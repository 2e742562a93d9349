//! A `create` of rows (each element a sequence): the rows' lengths first (they must all
//! be the first's: a regular nested result), then the rows written packed at `i * m`.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use super::closure_parts;
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::Create;
use accel_ir::{Expr, ParOp, Pat, Stmt, Type};

kernel_params!(
    /// Writes each row's length into `lens`.
    RowLens "_len" { n, lens }
);
kernel_params!(
    /// Checks that every row has length `m` and writes the rows packed.
    RowsKernel "" { n, m, lens; out }
);

impl Gen {
    /// A top-level `create` of rows of flat `row` elements.
    pub(super) fn rows_launch(&mut self, c: Create<'_>, row: &Type) -> R<Expr> {
        self.launch(
            &[c.n, c.f],
            c.n,
            LaunchKind::Rows { elem: row.clone() },
            &[RowLens::SUFFIX, RowsKernel::SUFFIX],
            |kg, name| kg.rows_kernels(name, c.f, row),
        )
    }
}

impl KernelGen<'_> {
    /// The kernels of a `create` whose elements are rows: their lengths first, then the
    /// rows, packed at `i * m`. A row made by a `create` (after the element's `let`s) has
    /// its length computed alone and is written straight into place; any other row (a
    /// `vec!` literal, a captured row, a sequential operation's result) is computed for
    /// its length, then again to be copied.
    pub(super) fn rows_kernels(&mut self, name: &str, f: &Expr, elem: &Type) -> R<String> {
        let made = row_parts(f);
        let prefix = |stmts: &[Stmt], m: &Expr| Expr::Block {
            stmts: stmts.to_vec(),
            result: Some(Box::new(m.clone())),
        };
        let each = "for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {";
        self.begin_params::<RowLens>(name, elem)?;
        self.line(each);
        self.depth += 1;
        let len = match &made {
            Some((param, stmts, m, _)) => {
                self.bind(param, usize_v("i".into()))?;
                self.expr(&prefix(stmts, m))?.w[0].clone()
            }
            None => self.apply_index(f, "i")?.w[0].clone(),
        };
        self.line(&format!("((ull*)lens)[i] = {len};"));
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        let mut src = self.end();
        self.scope.clear();
        let cols = self.begin_params::<RowsKernel>(name, elem)?.remove(0);
        self.line(each);
        self.depth += 1;
        self.line(&format!(
            "if (((const ull*)lens)[i] != m) {{ accel_fail(err, {FAIL_IRREGULAR}, m, ((const ull*)lens)[i]); continue; }}"
        ));
        match &made {
            Some((param, stmts, _, g)) => {
                self.bind(param, usize_v("i".into()))?;
                self.expr(&prefix(stmts, &Expr::Tuple(vec![])))?;
                let j = self.fresh("j");
                self.line(&format!("for (ull {j} = 0; {j} < m; {j}++) {{"));
                self.depth += 1;
                let v = self.apply_index(g, &j)?;
                let at = self.let_("ull", "at", &format!("i * m + {j}"));
                self.store_columns(&v, &cols, &at);
                self.depth -= 1;
                self.line("}");
            }
            None => {
                let row = self.apply_index(f, "i")?;
                self.copy_row(&row, &cols, "i * m", "m");
            }
        }
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }

    /// Copies the first `m` elements of a row value (a sequence of flat elements) to
    /// columns `cols` from index `at` on.
    pub(super) fn copy_row(&mut self, row: &V, cols: &[String], at: &str, m: &str) {
        let j = self.fresh("j");
        self.line(&format!("for (ull {j} = 0; {j} < {m}; {j}++) {{"));
        for (c, src) in cols.iter().zip(&row.w[1..]) {
            self.line(&format!("    {c}[{at} + {j}] = {src}[{j}];"));
        }
        self.line("}");
    }

    /// Row `at` (of length `m`) of rows of `elem` packed in columns `cols`, as a value.
    pub(super) fn row_view(elem: &Type, cols: &[String], at: &str, m: &str) -> V {
        let w = cols.iter().map(|c| format!("({c} + ({at}) * {m})"));
        V {
            ty: Type::Seq(Box::new(elem.clone())),
            w: std::iter::once(m.to_string()).chain(w).collect(),
        }
    }
}

/// A row-producing closure `|i| { lets…; create(m, g) }` split into its parameter, the
/// `let`s, the row length and the row's closure.
fn row_parts(f: &Expr) -> Option<(Pat, Vec<Stmt>, Expr, Expr)> {
    let (param, stmts, e) = closure_parts(f)?;
    let Expr::Par {
        op: ParOp::Create,
        args,
        ..
    } = e
    else {
        return None;
    };
    Some((param, stmts, args[0].clone(), args[1].clone()))
}

/// Runs a `create` of rows: the lengths (the first row's is the inner length), then the
/// rows.
pub(crate) fn run(run: &mut Run<'_, '_>, at: &Launching, elem: &Type) -> R<HostVal> {
    let n = at.n;
    let lens = run.alloc(8 * n.max(1) as usize)?;
    let mut m = 0u64;
    if n > 0 {
        run.start(at, at.grid(n, at.sms * 32), &RowLens { n, lens })?;
        run.check_failure()?;
        let mut first = [0u8; 8];
        run.session.download(lens, &mut first)?;
        m = u64::from_le_bytes(first);
    }
    let outs = run.alloc_rows(elem, n, m)?;
    if n > 0 {
        let out = outs.clone();
        run.start(at, at.grid(n, at.sms * 32), &RowsKernel { n, m, lens, out })?;
    }
    Ok(HostVal {
        ty: Type::Seq(Box::new(Type::Seq(Box::new(elem.clone())))),
        w: [vec![n, m], outs].concat(),
    })
}
