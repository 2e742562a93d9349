//! A segmented reduction: `create(n, |c| reduce(op, ne, create(m, g)))` with `m` the
//! same for every segment. With many segments one thread reduces each (the plain
//! `create` kernel); with few long ones (k-means' per-cluster sums) many blocks share a
//! segment and a block per segment combines their partials in order. The host picks at
//! run time.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use super::closure_parts;
use super::map::MapKernel;
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::Create;
use accel_ir::passes::recognize::primitive;
use accel_ir::{Expr, ParOp, Pat, Stmt, Type};
use std::collections::HashSet;

kernel_params!(
    /// `per_seg` blocks per segment, each reducing a chunk of it into `partials`.
    SegPart "_part" { n, m, per_seg, chunk, partials }
);
kernel_params!(
    /// A block per segment combining its partials in order.
    SegFinal "_final" { n, per_seg, partials; out }
);

impl Gen {
    /// The segment length (as a host expression) of a `create` whose elements are
    /// reductions of equally long delayed sequences: `m` must be computable on the host,
    /// before any element.
    pub(super) fn segments(&mut self, f: &Expr) -> R<Option<(Expr, bool)>> {
        let Some(seg) = segment_parts(f) else {
            return Ok(None);
        };
        let mut local: HashSet<String> = seg.param.bound_names().into_iter().collect();
        for st in &seg.stmts {
            if let Stmt::Let { pat, .. } = st {
                local.extend(pat.bound_names());
            }
        }
        let mut on_host = true;
        seg.m.walk(&mut |x| match x {
            Expr::Var(v) if local.contains(v) || !self.host_scope.contains_key(v) => {
                on_host = false
            }
            Expr::Par { .. } | Expr::Lambda { .. } => on_host = false,
            _ => {}
        });
        if !on_host {
            return Ok(None);
        }
        Ok(self
            .host(&seg.m)
            .ok()
            .map(|m| (m, primitive(&seg.op).is_some())))
    }

    /// A top-level segmented reduction (segments of length `m`, a host expression).
    pub(super) fn segmented_launch(
        &mut self,
        c: Create<'_>,
        elem: &Type,
        m: Expr,
        commutative: bool,
    ) -> R<Expr> {
        self.launch(
            &[c.n, c.f],
            c.n,
            LaunchKind::SegReduce {
                elem: elem.clone(),
                commutative,
                m,
            },
            &[MapKernel::SUFFIX, SegPart::SUFFIX, SegFinal::SUFFIX],
            |kg, name| {
                let mut src = kg.map_kernel(name, c.f, elem)?;
                src.push_str(&kg.segment_kernels(name, c.f, elem, commutative)?);
                Ok(src)
            },
        )
    }
}

impl KernelGen<'_> {
    /// The kernels of a segmented reduction (see [`LaunchKind::SegReduce`]): `NAME_part`
    /// runs `per_seg` blocks per segment, each over a chunk of it, into `partials`;
    /// `NAME_final` runs a block per segment over its partials, in order.
    pub(super) fn segment_kernels(
        &mut self,
        name: &str,
        f: &Expr,
        elem: &Type,
        commutative: bool,
    ) -> R<String> {
        let seg = segment_parts(f).ok_or("a segmented reduction")?;
        let s = format!("{name}_s");
        let acc = format!("{s}_acc");
        let mut src = Self::acc_struct(&s, elem)?;
        let prologue = |kg: &mut Self, segment: &str| -> R<()> {
            kg.bind(&seg.param, usize_v(segment.into()))?;
            kg.expr(&Expr::Block {
                stmts: seg.stmts.clone(),
                result: None,
            })?;
            Ok(())
        };
        self.scope.clear();
        self.begin_params::<SegPart>(name, elem)?;
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.line("const ull seg = blockIdx.x / per_seg;");
        self.line("const ull start = (blockIdx.x % per_seg) * chunk;");
        self.line("const ull end = start + chunk < m ? start + chunk : m;");
        prologue(self, "seg")?;
        self.reduction_parts(&s, Some(&seg.g), &seg.op, &seg.ne, elem)?;
        if commutative {
            self.line(&format!("{acc} t = ne;"));
            self.line("for (ull i = start + threadIdx.x; i < end; i += blockDim.x) { t = combine(t, element(i)); accel_arena_reset(&arena); }");
            self.commutative_tree();
        } else {
            self.fold_part(&acc, "element(i)");
            self.line("sh[threadIdx.x] = t;");
            self.ordered_tree();
        }
        self.line(&format!(
            "if (threadIdx.x == 0) (({acc}*)partials)[blockIdx.x] = sh[0];"
        ));
        src.push_str(&self.end());

        self.scope.clear();
        let cols = self.begin_params::<SegFinal>(name, elem)?.remove(0);
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.line("const ull seg = blockIdx.x;");
        prologue(self, "seg")?;
        self.reduction_parts(&s, None, &seg.op, &seg.ne, elem)?;
        self.line(&format!(
            "const {acc}* parts = (const {acc}*)partials + seg * per_seg;"
        ));
        self.line("ull start = 0, end = per_seg;");
        self.fold_part(&acc, "parts[i]");
        self.line("sh[threadIdx.x] = t;");
        self.ordered_tree();
        self.line("if (threadIdx.x == 0) {");
        self.depth += 1;
        let v = Self::acc_value(elem, "sh[0]")?;
        self.store_columns(&v, &cols, "seg");
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }
}

/// The parts of `|c| { lets; reduce(op, ne, create(m, g)) }`.
struct Segments {
    param: Pat,
    stmts: Vec<Stmt>,
    op: Expr,
    ne: Expr,
    m: Expr,
    g: Expr,
}

fn segment_parts(f: &Expr) -> Option<Segments> {
    let (param, stmts, e) = closure_parts(f)?;
    let Expr::Par {
        op: ParOp::Reduce,
        args,
        ..
    } = e
    else {
        return None;
    };
    let Expr::Par {
        op: ParOp::Create,
        args: input,
        ..
    } = &args[2]
    else {
        return None;
    };
    Some(Segments {
        param,
        stmts,
        op: args[0].clone(),
        ne: args[1].clone(),
        m: input[0].clone(),
        g: input[1].clone(),
    })
}

/// Runs a segmented reduction: one thread per segment when the segments fill the device
/// or are short, else about eight blocks per multiprocessor shared by the segments.
pub(crate) fn run(run: &mut Run<'_, '_>, at: &Launching, elem: &Type, m: &Expr) -> R<HostVal> {
    let (n, sms, threads) = (at.n, at.sms, at.threads);
    let m = run.eval(m)?.w[0];
    let outs = run.alloc_rows(elem, n, 1)?;
    // Segments enough to fill the device, or short ones: one thread each.
    let thread_per_segment = n >= sms * threads || m < 2 * threads;
    if n > 0 && thread_per_segment {
        let out = outs.clone();
        run.start(at, at.grid(n, sms * 32), &MapKernel { n, out })?;
    } else if n > 0 {
        // Few long segments: about eight blocks per multiprocessor in all.
        let per_seg = (sms * 8).div_ceil(n).clamp(1, m.div_ceil(threads));
        let chunk = m.div_ceil(per_seg);
        let acc_bytes = 8 * words(elem)?.len().max(1);
        let partials = run.alloc(acc_bytes * (n * per_seg) as usize)?;
        let part = SegPart {
            n,
            m,
            per_seg,
            chunk,
            partials,
        };
        run.start(at, (n * per_seg) as u32, &part)?;
        let out = outs.clone();
        let fin = SegFinal {
            n,
            per_seg,
            partials,
            out,
        };
        run.start(at, n as u32, &fin)?;
    }
    Ok(HostVal {
        ty: Type::Seq(Box::new(elem.clone())),
        w: [vec![n], outs].concat(),
    })
}
