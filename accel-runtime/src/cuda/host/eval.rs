//! The host program's evaluation: scalar code between launches, loops whose data stays on
//! the device (buffers no value reaches any more are freed after each iteration), element
//! reads, and the launches themselves (each kind's in `cuda::codegen::ops`).

use super::scalar::*;
use super::{offset_columns, Launching, Run};
use crate::backend::failure::{Failure, FailureKind};
use crate::cuda::codegen::kernel::words;
use crate::cuda::codegen::launch::{launch_name, LaunchKind};
use crate::cuda::codegen::ops::{
    filter, flatten, histogram, map, parallel_loop, reduce, row_fold, rows, scan, segmented,
};
use crate::cuda::device::DevBuf;
use accel_ir::consts::{const_type, constant_lit};
use accel_ir::{BinOp, Expr, ParOp, Pat, ScalarType, Stmt, Type, UnOp};

type R<T> = Result<T, String>;

impl Run<'_, '_> {
    /// Evaluates an expression of the host program.
    pub fn eval(&mut self, e: &Expr) -> R<HostVal> {
        match e {
            Expr::Lit(l) => lit(l),
            Expr::Var(v) => self
                .env
                .get(v)
                .cloned()
                .ok_or_else(|| format!("`{v}` is not bound on the host")),
            Expr::Const(c) => {
                let s = const_type(c).ok_or_else(|| format!("the constant `{c}`"))?;
                lit(&constant_lit(c, s).ok_or_else(|| format!("the constant `{c}`"))?)
            }
            Expr::Tuple(es) | Expr::Array(es) => self.eval_aggregate(e, es),
            Expr::Record { name, fields } => self.eval_record(name, fields),
            Expr::Field(b, f) => {
                let v = self.eval(b)?;
                field(&v, f)
            }
            Expr::Unary(op, x) => self.eval_unary(*op, x),
            Expr::Binary(op, a, b) => self.eval_binary(*op, a, b),
            Expr::Cast(x, t) => self.eval_cast(x, t),
            Expr::Method { recv, method, args } => self.eval_method(recv, method, args),
            Expr::Assoc { ty, func, args } => self.eval_assoc(ty, func, args),
            Expr::If { cond, then, els } => {
                let c = self.eval(cond)?;
                if c.w[0] != 0 {
                    self.eval(then)
                } else if let Some(e) = els {
                    self.eval(e)
                } else {
                    Ok(unit())
                }
            }
            Expr::Block { stmts, result } => {
                // The block's `let`s shadow outer bindings until its end.
                let mut shadowed = Vec::new();
                let r = self.block(stmts, result.as_deref(), &mut shadowed);
                for (name, before) in shadowed.into_iter().rev() {
                    match before {
                        Some(v) => self.env.insert(name, v),
                        None => self.env.remove(&name),
                    };
                }
                r
            }
            Expr::Assign { target, value } => {
                let Expr::Var(name) = &**target else {
                    return Err("an assignment to a field or element on the host".into());
                };
                let v = self.eval(value)?;
                self.env.insert(name.clone(), v);
                Ok(unit())
            }
            Expr::For { var, lo, hi, body } => self.eval_for(var, lo, hi, body),
            Expr::While { cond, body } => {
                let since = self.keep.len();
                while self.eval(cond)?.w[0] != 0 {
                    self.eval(body)?;
                    self.free_unreachable(since)?;
                }
                Ok(unit())
            }
            Expr::Call { func, .. } => {
                let k = (0..self.launches.len())
                    .find(|&k| launch_name(k) == *func)
                    .ok_or_else(|| format!("no launch named {func}"))?;
                self.launch(k)
            }
            Expr::Index(b, i) => self.eval_index(b, i),
            Expr::Seq(es) => {
                let vs = es.iter().map(|x| self.eval(x)).collect::<R<Vec<_>>>()?;
                let elem = match vs.first() {
                    Some(v) => v.ty.clone(),
                    None => return Err("an empty `vec!` has no element type here".into()),
                };
                self.upload_elements(elem, &vs)
            }
            Expr::SeqRepeat(x, n) => {
                let v = self.eval(x)?;
                let n = self.eval(n)?.w[0] as usize;
                let vs = vec![v.clone(); n];
                self.upload_elements(v.ty, &vs)
            }
            Expr::Slice { seq, lo, hi } => self.eval_slice(seq, lo, hi),
            Expr::Par {
                op: ParOp::Flatten,
                args,
                ..
            } => {
                let v = self.eval(&args[0])?;
                flatten::flattened(v)
            }
            other => Err(format!("the host cannot evaluate {other:?}")),
        }
    }

    /// A tuple or an array.
    fn eval_aggregate(&mut self, e: &Expr, es: &[Expr]) -> R<HostVal> {
        let vs = es.iter().map(|x| self.eval(x)).collect::<R<Vec<_>>>()?;
        let ty = match e {
            Expr::Tuple(_) if vs.is_empty() => Type::Unit,
            Expr::Tuple(_) => Type::Tuple(vs.iter().map(|v| v.ty.clone()).collect()),
            _ => Type::Array(
                Box::new(vs.first().map(|v| v.ty.clone()).unwrap_or(Type::Unit)),
                vs.len(),
            ),
        };
        Ok(HostVal {
            ty,
            w: vs.into_iter().flat_map(|v| v.w).collect(),
        })
    }

    /// A record.
    fn eval_record(&mut self, name: &str, fields: &[(String, Expr)]) -> R<HostVal> {
        let mut tys = Vec::new();
        let mut w = Vec::new();
        for (f, x) in fields {
            let v = self.eval(x)?;
            tys.push((f.clone(), v.ty));
            w.push(v.w);
        }
        Ok(HostVal {
            ty: Type::Record(name.to_string(), tys),
            w: w.concat(),
        })
    }

    /// `-x`, `!x`.
    fn eval_unary(&mut self, op: UnOp, x: &Expr) -> R<HostVal> {
        let v = self.eval(x)?;
        let s = scalar(&v)?;
        let w = v.w[0];
        let r = match (op, s) {
            (UnOp::Not, ScalarType::Bool) => (w == 0) as u64,
            (UnOp::Not, _) => !w,
            (UnOp::Neg, ScalarType::F32) => (-f32::from_bits(w as u32)).to_bits() as u64,
            (UnOp::Neg, ScalarType::F64) => (-f64::from_bits(w)).to_bits(),
            (UnOp::Neg, _) => w.wrapping_neg(),
        };
        Ok(HostVal {
            ty: v.ty,
            w: vec![normalize(s, r)],
        })
    }

    /// `a op b` (`&&` and `||` short-circuit).
    fn eval_binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<HostVal> {
        let x = self.eval(a)?;
        if matches!(op, BinOp::And | BinOp::Or) {
            let l = x.w[0] != 0;
            if (op == BinOp::And) != l {
                return Ok(x);
            }
            return self.eval(b);
        }
        let y = self.eval(b)?;
        binary(op, &x, &y)
    }

    /// `x as t`.
    fn eval_cast(&mut self, x: &Expr, t: &Type) -> R<HostVal> {
        let v = self.eval(x)?;
        let (Type::Scalar(from), Type::Scalar(to)) = (&v.ty, t) else {
            return Err(format!("a cast from {} to {t}", v.ty));
        };
        Ok(HostVal {
            ty: t.clone(),
            w: vec![cast(v.w[0], *from, *to)],
        })
    }

    /// A method (a tensor's shape is uploaded as a sequence).
    fn eval_method(&mut self, recv: &Expr, method: &str, args: &[Expr]) -> R<HostVal> {
        let r = self.eval(recv)?;
        match (&r.ty, method) {
            (Type::Tensor(_), "to_vec") => return self.tensor_to_vec(&r),
            (Type::Tensor(_), "get" | "set") => {
                let a = args.iter().map(|x| self.eval(x)).collect::<R<Vec<_>>>()?;
                let index = a.first().ok_or("a tensor element without an index")?;
                return self.tensor_element(&r, index, a.get(1));
            }
            _ => {}
        }
        if let (Type::Tensor(_), "shape") = (&r.ty, method) {
            let dims = tensor_dims(&r)
                .iter()
                .map(|&d| HostVal {
                    ty: Type::Scalar(ScalarType::Usize),
                    w: vec![d],
                })
                .collect::<Vec<_>>();
            return self.upload_elements(Type::Scalar(ScalarType::Usize), &dims);
        }
        let a = args.iter().map(|x| self.eval(x)).collect::<R<Vec<_>>>()?;
        method_of(&r, method, &a)
    }

    /// `T::func(..)` and `same_len`.
    fn eval_assoc(&mut self, ty: &str, func: &str, args: &[Expr]) -> R<HostVal> {
        let a = args.iter().map(|x| self.eval(x)).collect::<R<Vec<_>>>()?;
        if (ty, func) == ("Tensor", "from_vec") {
            return self.tensor_from_vec(&a[0], &a[1]);
        }
        if (ty, func) == ("accel", "same_len") {
            if a[0].w[0] != a[1].w[0] {
                return Err(Failure::new(FailureKind::Lengths, a[0].w[0], a[1].w[0]).describe());
            }
            return Ok(a[0].clone());
        }
        let counted = match (ty, func) {
            ("accel", "histogram_len") => Some(FailureKind::HistogramLengths),
            ("accel", "scatter_len") => Some(FailureKind::ScatterLengths),
            _ => None,
        };
        if let Some(kind) = counted {
            if a[0].w[0] != a[1].w[0] {
                return Err(Failure::new(kind, a[0].w[0], a[1].w[0]).describe());
            }
            return Ok(a[0].clone());
        }
        let (recv, rest) = a
            .split_first()
            .ok_or_else(|| format!("`{ty}::{func}` needs arguments"))?;
        method_of(recv, func, rest)
    }

    /// `for var in lo..hi`: buffers no value reaches any more are freed after each iteration.
    fn eval_for(&mut self, var: &str, lo: &Expr, hi: &Expr, body: &Expr) -> R<HostVal> {
        let (lo, hi) = (self.eval(lo)?, self.eval(hi)?);
        let s = scalar(&lo)?;
        // Signed words hold their value sign-extended.
        let (a, b) = match s {
            ScalarType::I32 | ScalarType::I64 => (lo.w[0] as i64 as i128, hi.w[0] as i64 as i128),
            _ => (lo.w[0] as i128, hi.w[0] as i128),
        };
        let before = self.env.get(var).cloned();
        let since = self.keep.len();
        for k in a..b {
            self.env.insert(
                var.to_string(),
                HostVal {
                    ty: lo.ty.clone(),
                    w: vec![normalize(s, k as u64)],
                },
            );
            self.eval(body)?;
            self.free_unreachable(since)?;
        }
        match before {
            Some(v) => self.env.insert(var.to_string(), v),
            None => self.env.remove(var),
        };
        Ok(unit())
    }

    /// `b[i]`: an element read back from the device (a row stays a view on it).
    fn eval_index(&mut self, b: &Expr, i: &Expr) -> R<HostVal> {
        // `t.shape()[k]`: the dimension is a host word already.
        if let Expr::Method { recv, method, .. } = b {
            if method == "shape" {
                let t = self.eval(recv)?;
                let k = self.eval(i)?.w[0];
                let dims = tensor_dims(&t);
                let d = *dims
                    .get(k as usize)
                    .ok_or_else(|| index_failure(k, dims.len() as u64))?;
                return Ok(HostVal {
                    ty: Type::Scalar(ScalarType::Usize),
                    w: vec![d],
                });
            }
        }
        let v = self.eval(b)?;
        let k = self.eval(i)?.w[0];
        match v.ty.clone() {
            Type::Array(e, n) => {
                if k >= n as u64 {
                    return Err(index_failure(k, n as u64));
                }
                let size = words(&e)?.len();
                let at = k as usize * size;
                Ok(HostVal {
                    ty: *e,
                    w: v.w[at..at + size].to_vec(),
                })
            }
            Type::Seq(e) => {
                if k >= v.w[0] {
                    return Err(index_failure(k, v.w[0]));
                }
                let mut at = 1;
                let w = self.element_of(&e, &v.w, &mut at, k)?;
                Ok(HostVal { ty: *e, w })
            }
            t => Err(format!("indexing {t} on the host")),
        }
    }

    /// `&xs[lo..hi]`: a view of the columns.
    fn eval_slice(&mut self, seq: &Expr, lo: &Expr, hi: &Expr) -> R<HostVal> {
        let v = self.eval(seq)?;
        let (lo, hi) = (self.eval(lo)?.w[0], self.eval(hi)?.w[0]);
        let Type::Seq(elem) = &v.ty else {
            return Err(format!("slicing {}", v.ty));
        };
        if lo > hi || hi > v.w[0] {
            return Err(Failure::new(FailureKind::Slice, lo, hi).describe());
        }
        let mut at = 1;
        let mut cols = vec![hi - lo];
        offset_columns(elem, &v.w, &mut at, lo, &mut cols)?;
        Ok(HostVal {
            ty: v.ty.clone(),
            w: cols,
        })
    }

    fn block(
        &mut self,
        stmts: &[Stmt],
        result: Option<&Expr>,
        shadowed: &mut Vec<(String, Option<HostVal>)>,
    ) -> R<HostVal> {
        for s in stmts {
            match s {
                Stmt::Let {
                    pat,
                    ty,
                    init: Some(x),
                } => {
                    let v = match (ty, x) {
                        (Type::Tensor(elem), Expr::Assoc { ty, func, args })
                            if (ty.as_str(), func.as_str()) == ("Tensor", "zeros") =>
                        {
                            let shape = self.eval(&args[0])?;
                            self.tensor_zeros(elem, &shape)?
                        }
                        _ => self.eval(x)?,
                    };
                    for name in pat.bound_names() {
                        shadowed.push((name.clone(), self.env.get(&name).cloned()));
                    }
                    self.bind(pat, v)?;
                }
                Stmt::Let { init: None, .. } => {
                    return Err("a `let` without a value on the host".into())
                }
                Stmt::Expr(x) => {
                    self.eval(x)?;
                }
            }
        }
        match result {
            Some(r) => self.eval(r),
            None => Ok(unit()),
        }
    }

    /// After a loop iteration: frees the device buffers allocated since `keep[since]` that
    /// no bound value points into (a conservative scan of the bound values' words, so
    /// that a loop of launches does not hold every iteration's results to the end).
    fn free_unreachable(&mut self, since: usize) -> R<()> {
        if self.keep.len() == since {
            return Ok(());
        }
        let mut words: Vec<u64> = self
            .env
            .values()
            .flat_map(|v| v.w.iter().copied())
            .collect();
        words.sort_unstable();
        let reachable = |b: &DevBuf| {
            let first = words.partition_point(|&w| w < b.ptr);
            words
                .get(first)
                .is_some_and(|&w| w <= b.ptr + b.bytes as u64)
        };
        let (dead, live): (Vec<DevBuf>, Vec<DevBuf>) =
            self.keep.drain(since..).partition(|b| !reachable(b));
        self.keep.extend(live);
        self.held -= dead.iter().map(|b| b.bytes).sum::<usize>();
        if !dead.is_empty() {
            // Kernels still queued may use them.
            self.session.synchronize()?;
            drop(dead);
        }
        Ok(())
    }

    fn bind(&mut self, p: &Pat, v: HostVal) -> R<()> {
        match p {
            Pat::Wild => Ok(()),
            Pat::Bind { name, .. } => {
                self.env.insert(name.clone(), v);
                Ok(())
            }
            Pat::Tuple(ps) => {
                for (k, q) in ps.iter().enumerate() {
                    let f = field(&v, &k.to_string())?;
                    self.bind(q, f)?;
                }
                Ok(())
            }
            Pat::Record { fields, .. } => {
                for (f, q) in fields {
                    let x = field(&v, f)?;
                    self.bind(q, x)?;
                }
                Ok(())
            }
            _ => Err("this pattern on the host".into()),
        }
    }

    fn launch(&mut self, k: usize) -> R<HostVal> {
        use std::sync::atomic::Ordering::Relaxed;
        if !crate::cuda::PROFILE.load(Relaxed) {
            return self.launch_kernels(k);
        }
        self.session.synchronize()?;
        let start = std::time::Instant::now();
        let r = self.launch_kernels(k)?;
        self.session.synchronize()?;
        crate::cuda::KERNEL_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
        Ok(r)
    }

    /// Runs launch `k`: its size and free values from the host, then its kind's kernels.
    fn launch_kernels(&mut self, k: usize) -> R<HostVal> {
        let l = self.launches[k].clone();
        let n = self.eval(&l.n)?.w[0];
        let mut free = Vec::new();
        for (name, _) in &l.free {
            free.extend(
                self.env
                    .get(name)
                    .ok_or(format!("`{name}` is not bound"))?
                    .w
                    .clone(),
            );
        }
        let gpu = self.session.gpu();
        let at = Launching {
            prefix: l.kernel.clone(),
            names: l.kernels.clone(),
            kernels: self.kernels[k].clone(),
            n,
            free,
            sms: gpu.multiprocessors as u64,
            threads: gpu.threads as u64,
        };
        match &l.kind {
            LaunchKind::Map { elem } => map::run(self, &at, elem),
            LaunchKind::SegReduce { elem, m, .. } => segmented::run(self, &at, elem, m),
            LaunchKind::Rows { elem } => rows::run(self, &at, elem),
            LaunchKind::Loop => parallel_loop::run(self, &at),
            LaunchKind::Histogram {
                elem,
                m,
                locked,
                shared,
            } => histogram::run(self, &at, elem, m, *locked, *shared),
            LaunchKind::Filter { elem } => filter::run(self, &at, elem),
            LaunchKind::Reduce { elem, commutative } => reduce::run(self, &at, elem, *commutative),
            LaunchKind::RowReduce { elem, ne } => row_fold::run(self, &at, elem, ne, false),
            LaunchKind::RowScan { elem, ne } => row_fold::run(self, &at, elem, ne, true),
            LaunchKind::Scan { elem } => scan::run(self, &at, elem),
        }
    }
}
