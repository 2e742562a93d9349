//! Producers on the GPU: `create` (what fusion makes of every `map`) as one thread per
//! element writing into new columns, cheap elements four per thread with their loads
//! issued together; `map`/`map2` left over by fusion become a `create` over host values.
//! Nested, a loop into the thread's arena.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use super::light;
use crate::backend::layout::{is_flat, size_of, Word};
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::Create;
use accel_ir::{Expr, ParOp, Pat, ScalarType, Stmt, Type};

kernel_params!(
    /// Writes elements `0..n` into the output columns (also a segmented reduction's
    /// kernel for many segments).
    MapKernel "" { n; out }
);

impl Gen {
    /// `map(f, xs)`/`map2(f, xs, ys)` that fusion left (over a slice, say): the inputs
    /// become host values and the map a `create` over them.
    pub(super) fn map_on_host(&mut self, f: &Expr, inputs: &[&Expr]) -> R<Expr> {
        let mut stmts = Vec::new();
        let mut values = Vec::new();
        for (k, xs) in inputs.iter().enumerate() {
            if let Expr::Var(_) = xs {
                values.push((*xs).clone());
                continue;
            }
            let name = self.fresh(&format!("map{k}_"));
            let t = self.type_of(xs)?;
            let lowered = self.host(xs)?;
            self.host_scope.insert(name.clone(), t.clone());
            stmts.push(Stmt::Let {
                pat: Pat::bind(&name),
                ty: t,
                init: Some(lowered),
            });
            values.push(Expr::var(&name));
        }
        let len = |xs: &Expr| Expr::len_of(xs.clone());
        let n = if values.len() == 2 {
            Expr::Assoc {
                ty: "accel".into(),
                func: "same_len".into(),
                args: vec![len(&values[0]), len(&values[1])],
            }
        } else {
            len(&values[0])
        };
        let i = Expr::var("accel#i");
        let elems = values
            .iter()
            .map(|xs| Expr::Index(Box::new(xs.clone()), Box::new(i.clone())))
            .collect();
        let f = Expr::Lambda {
            params: vec![(Pat::bind("accel#i"), Type::Scalar(ScalarType::Usize))],
            body: Box::new(Expr::applied(f, elems)),
        };
        let launch = self.par(ParOp::Create, &[n, f])?;
        Ok(Expr::Block {
            stmts,
            result: Some(Box::new(launch)),
        })
    }

    /// A top-level `create`: of rows ([`rows`]), of equally long reductions that few
    /// segments make worth splitting ([`segmented`]), or of flat elements.
    pub(super) fn create_launch(&mut self, c: Create<'_>) -> R<Expr> {
        let t = self.type_of(&Expr::par(ParOp::Create, vec![c.n.clone(), c.f.clone()]))?;
        let Type::Seq(elem) = t else {
            return Err("create of a non-sequence".into());
        };
        match *elem {
            Type::Seq(ref row) if is_flat(row) => self.rows_launch(c, row),
            ref e if is_flat(e) => match self.segments(c.f)? {
                Some((m, commutative)) => self.segmented_launch(c, e, m, commutative),
                None => self.launch(
                    &[c.n, c.f],
                    c.n,
                    LaunchKind::Map { elem: e.clone() },
                    &[MapKernel::SUFFIX],
                    |kg, name| kg.map_kernel(name, c.f, e),
                ),
            },
            _ => Err(unsupported(format!(
                "a parallel operation producing a sequence of {elem}"
            ))),
        }
    }
}

impl KernelGen<'_> {
    pub(crate) fn map_kernel(&mut self, name: &str, f: &Expr, elem: &Type) -> R<String> {
        if !light(f) {
            let cols = self.begin_params::<MapKernel>(name, elem)?.remove(0);
            self.line("for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {");
            self.depth += 1;
            let v = self.apply_index(f, "i")?;
            self.store_columns(&v, &cols, "i");
            self.line("accel_arena_reset(&arena);");
            self.depth -= 1;
            self.line("}");
            return Ok(self.end());
        }
        // Cheap elements: four per iteration, all loaded before any is stored (outputs may
        // alias inputs as far as the compiler knows, so it would not hoist the loads of the
        // next iteration above this one's stores): four loads in flight per thread.
        let e = format!("{name}_e");
        let mut src = Self::acc_struct(&e, elem)?;
        let s = format!("{e}_acc");
        let cols = self.begin_params::<MapKernel>(name, elem)?.remove(0);
        self.line(&format!(
            "auto element = [&](ull i) __attribute__((always_inline)) -> {s} {{"
        ));
        self.depth += 1;
        let v = self.apply_index(f, "i")?;
        self.line(&format!("{s} r;"));
        self.assign_acc("r", &v);
        self.line("return r;");
        self.depth -= 1;
        self.line("};");
        self.line(&format!(
            "auto store = [&](ull i, const {s}& e) __attribute__((always_inline)) {{"
        ));
        self.depth += 1;
        let ev = Self::acc_value(elem, "e")?;
        self.store_columns(&ev, &cols, "i");
        self.depth -= 1;
        self.line("};");
        self.line("const ull stride = (ull)gridDim.x * blockDim.x;");
        self.line("ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x;");
        self.line("for (; i + 3 * stride < n; i += 4 * stride) {");
        self.line(&format!("    {s} e0 = element(i), e1 = element(i + stride), e2 = element(i + 2 * stride), e3 = element(i + 3 * stride);"));
        self.line("    store(i, e0); store(i + stride, e1); store(i + 2 * stride, e2); store(i + 3 * stride, e3);");
        self.line("    accel_arena_reset(&arena);");
        self.line("}");
        self.line(
            "for (; i < n; i += stride) { store(i, element(i)); accel_arena_reset(&arena); }",
        );
        src.push_str(&self.end());
        Ok(src)
    }

    /// `map(f, xs)`/`map2(f, xs, ys)` inside a kernel that fusion left (a sequence bound
    /// by a `let`, say): the inputs computed, then a loop writing `f` of each element into
    /// the thread's arena. `map2`'s inputs must have one length.
    pub(super) fn nested_map(&mut self, f: &Expr, inputs: &[&Expr]) -> R<V> {
        let mut seqs = Vec::new();
        for xs in inputs {
            let v = self.expr(xs)?;
            if !matches!(v.ty, Type::Seq(_)) {
                return Err(unsupported(format!("a map over {}", v.ty)));
            }
            seqs.push(v);
        }
        let mut n = seqs[0].w[0].clone();
        if let [xs, ys] = &seqs[..] {
            let (a, b) = (&xs.w[0], &ys.w[0]);
            self.fail_unless_same_len(a, b);
            n = self.let_("ull", "len", &format!("{a} < {b} ? {a} : {b}"));
        }
        let op = if inputs.len() == 2 {
            ParOp::Map2
        } else {
            ParOp::Map
        };
        let args = [
            vec![f.clone()],
            inputs.iter().map(|x| (*x).clone()).collect(),
        ]
        .concat();
        let Type::Seq(elem) = self.type_of(&Expr::par(op, args))? else {
            return Err("a map's result is not a sequence".into());
        };
        self.arena_sequence(&elem, &n, |this, j| {
            let xs = seqs
                .iter()
                .map(|v| this.index(v, j))
                .collect::<R<Vec<_>>>()?;
            this.apply(f, xs)
        })
    }

    /// A `create` inside a kernel: a loop into the thread's arena (rows too).
    pub(super) fn nested_create(&mut self, c: Create<'_>) -> R<V> {
        let t = self.type_of(&Expr::par(ParOp::Create, vec![c.n.clone(), c.f.clone()]))?;
        let Type::Seq(elem) = &t else {
            return Err("create of a non-sequence".into());
        };
        let n = self.expr(c.n)?.w[0].clone();
        self.arena_sequence(elem, &n, |this, j| this.apply_index(c.f, j))
    }
}

/// Runs a `create` launch: the output columns, then one thread per element.
pub(crate) fn run(run: &mut Run<'_, '_>, at: &Launching, elem: &Type) -> R<HostVal> {
    let n = at.n;
    let mut outs = Vec::new();
    for c in columns(elem)? {
        let Word::Ptr(s) = c else {
            return Err("a map result column is not a pointer".into());
        };
        outs.push(run.alloc(n as usize * size_of(s))?);
    }
    if n > 0 {
        let out = outs.clone();
        run.start(at, at.grid(n, at.sms * 32), &MapKernel { n, out })?;
    }
    Ok(HostVal {
        ty: Type::Seq(Box::new(elem.clone())),
        w: [vec![n], outs].concat(),
    })
}
