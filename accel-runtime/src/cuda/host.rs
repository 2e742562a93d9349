//! The host side of a GPU run: captured values to device memory (tensors that share a
//! host buffer become views of one device allocation: the paper's Algorithm 2), the host
//! program (scalar code between launches, evaluated here), the launches, and the result
//! back to host memory.

use super::codegen::{columns, launch_name, words, Launch, LaunchKind};
use super::device::{DevBuf, Kernel, Session};
use crate::backend::abi::{Arena, MAX_RANK};
use crate::backend::failure::{Failure, FailureKind};
use crate::backend::layout::Word;
use crate::backend::layout::{self, size_of};
use accel_ir::consts::{const_type, constant_lit};
use accel_ir::{BinOp, Expr, Lit, ParOp, Pat, ScalarType, Stmt, Type, UnOp};
use std::collections::HashMap;

type R<T> = Result<T, String>;

/// A host value: its type and its words (device addresses for columns).
#[derive(Clone, Debug)]
pub struct HostVal {
    pub ty: Type,
    pub w: Vec<u64>,
}

/// Scalar methods the host program evaluates (others make the site run elsewhere).
pub const HOST_METHODS: &[&str] = &[
    "sqrt", "abs", "min", "max", "floor", "ceil", "trunc", "round", "exp", "ln", "powi", "powf",
    "sin", "cos", "tan", "log2", "log10", "pow",
];

/// One run of a compiled site on the GPU.
pub struct Run<'a, 'g> {
    pub session: &'a Session<'g>,
    pub launches: &'a [Launch],
    pub kernels: &'a [Vec<Kernel>],
    /// Device memory alive until the run ends.
    pub keep: Vec<DevBuf>,
    /// The error word kernels record failures in: kind, a, b.
    pub err: u64,
    pub env: HashMap<String, HostVal>,
    /// Bytes copied to and from the device, for ACCEL_LOG.
    pub bytes_in: usize,
    pub bytes_out: usize,
    /// Device memory the run holds now, and the most it held.
    pub held: usize,
    pub peak: usize,
}

impl Run<'_, '_> {
    fn alloc(&mut self, bytes: usize) -> R<u64> {
        let b = self.session.alloc(bytes)?;
        let p = b.ptr;
        self.hold(b);
        Ok(p)
    }

    /// Keeps a device buffer until the run ends (or a loop finds it unreachable).
    pub fn hold(&mut self, b: DevBuf) {
        self.held += b.bytes;
        self.peak = self.peak.max(self.held);
        self.keep.push(b);
    }

    /// Uploads every tensor buffer the captured values view (each once, however many
    /// views of it there are: one device allocation per host buffer); returns each
    /// buffer's host address, size and device address.
    pub fn upload_tensor_buffers(
        &mut self,
        buffers: &[(usize, usize)],
    ) -> R<Vec<(usize, usize, u64)>> {
        let mut roots = Vec::new();
        for &(base, bytes) in buffers {
            let data: &[u8] = if bytes == 0 {
                &[]
            } else {
                // SAFETY: the marshal holds the buffer's lock for the run; it has `bytes` bytes.
                unsafe { std::slice::from_raw_parts(base as *const u8, bytes) }
            };
            let buf = self.session.upload(data)?;
            self.bytes_in += bytes;
            roots.push((base, bytes, buf.ptr));
            self.hold(buf);
        }
        Ok(roots)
    }

    /// Copies the tensors the kernels wrote back to their host buffers.
    pub fn download_tensor_buffers(&mut self, roots: &[(usize, usize, u64)]) -> R<()> {
        for &(base, bytes, dev) in roots {
            if bytes > 0 {
                // SAFETY: the marshal holds the buffer's lock until after the run; the buffer
                // has `bytes` bytes and nothing else reads it meanwhile.
                let dst = unsafe { std::slice::from_raw_parts_mut(base as *mut u8, bytes) };
                self.session.download(dev, dst)?;
                self.bytes_out += bytes;
            }
        }
        Ok(())
    }

    /// Uploads a captured value: `words` are its host words (host addresses).
    /// `roots` maps each tensor buffer's host base address to its device copy.
    pub fn upload(
        &mut self,
        t: &Type,
        words_in: &[u64],
        at: &mut usize,
        roots: &[(usize, usize, u64)],
    ) -> R<Vec<u64>> {
        let mut next = || -> R<u64> {
            let w = *words_in
                .get(*at)
                .ok_or("a captured value has fewer words than its type")?;
            *at += 1;
            Ok(w)
        };
        Ok(match t {
            Type::Scalar(_) => vec![next()?],
            Type::Unit => vec![],
            Type::Tuple(_) | Type::Record(..) | Type::Array(..) => {
                let mut out = Vec::new();
                for p in t.parts() {
                    out.extend(self.upload(&p, words_in, at, roots)?);
                }
                out
            }
            Type::Seq(e) => {
                let len = next()?;
                let mut out = vec![len];
                out.extend(self.upload_columns(e, len, words_in, at)?);
                out
            }
            Type::Tensor(_) => {
                let host = next()? as usize;
                let (base, _, dev) = roots
                    .iter()
                    .copied()
                    .find(|&(b, bytes, _)| host >= b && host <= b + bytes)
                    .ok_or("a captured tensor's buffer was not marshaled")?;
                let mut out = vec![dev + (host - base) as u64];
                for _ in 0..1 + MAX_RANK {
                    out.push(next()?);
                }
                out
            }
            t => return Err(format!("cannot pass a value of type {t} to the GPU")),
        })
    }

    fn upload_columns(
        &mut self,
        e: &Type,
        count: u64,
        words_in: &[u64],
        at: &mut usize,
    ) -> R<Vec<u64>> {
        Ok(match e {
            Type::Scalar(s) => {
                let host = *words_in.get(*at).ok_or("a column is missing")? as usize;
                *at += 1;
                let bytes = count as usize * size_of(*s);
                let data: &[u8] = if bytes == 0 {
                    &[]
                } else {
                    // SAFETY: marshaled columns hold `count` elements of `s` at `host` and
                    // stay alive (borrowed or kept by the marshal) for the whole run.
                    unsafe { std::slice::from_raw_parts(host as *const u8, bytes) }
                };
                let buf = self.session.upload(data)?;
                self.bytes_in += bytes;
                let p = buf.ptr;
                self.hold(buf);
                vec![p]
            }
            Type::Seq(inner) => {
                let n = *words_in.get(*at).ok_or("a row length is missing")?;
                *at += 1;
                let mut out = vec![n];
                out.extend(self.upload_columns(inner, count * n, words_in, at)?);
                out
            }
            Type::Unit => vec![],
            t => {
                let mut out = Vec::new();
                for p in t.parts() {
                    out.extend(self.upload_columns(&p, count, words_in, at)?);
                }
                out
            }
        })
    }

    /// Copies a result's columns back into memory of `arena`, giving its host words.
    pub fn download(&mut self, v: &HostVal, arena: &mut Arena) -> R<Vec<u64>> {
        let mut at = 0;
        let mut out = Vec::new();
        self.download_value(&v.ty, &v.w, &mut at, arena, &mut out)?;
        Ok(out)
    }

    fn download_value(
        &mut self,
        t: &Type,
        w: &[u64],
        at: &mut usize,
        arena: &mut Arena,
        out: &mut Vec<u64>,
    ) -> R<()> {
        match t {
            Type::Scalar(_) => {
                out.push(w[*at]);
                *at += 1;
            }
            Type::Unit => {}
            Type::Seq(e) => {
                let len = w[*at];
                *at += 1;
                out.push(len);
                self.download_columns(e, len, w, at, arena, out)?;
            }
            Type::Tensor(_) => {
                return Err("a tensor cannot be a result of compiled code yet".into())
            }
            t => {
                for p in t.parts() {
                    self.download_value(&p, w, at, arena, out)?;
                }
            }
        }
        Ok(())
    }

    fn download_columns(
        &mut self,
        e: &Type,
        count: u64,
        w: &[u64],
        at: &mut usize,
        arena: &mut Arena,
        out: &mut Vec<u64>,
    ) -> R<()> {
        match e {
            Type::Scalar(s) => {
                let dev = w[*at];
                *at += 1;
                let bytes = count as usize * size_of(*s);
                let host = arena.alloc(bytes, size_of(*s));
                if host.is_null() {
                    return Err(format!("could not allocate {bytes} bytes for a result"));
                }
                if bytes > 0 {
                    // SAFETY: the arena just allocated `bytes` bytes at `host`, nothing else
                    // refers to them yet.
                    let dst = unsafe { std::slice::from_raw_parts_mut(host, bytes) };
                    self.session.download(dev, dst)?;
                    self.bytes_out += bytes;
                }
                out.push(host as u64);
            }
            Type::Seq(inner) => {
                let n = w[*at];
                *at += 1;
                out.push(n);
                self.download_columns(inner, count * n, w, at, arena, out)?;
            }
            Type::Unit => {}
            t => {
                for p in t.parts() {
                    self.download_columns(&p, count, w, at, arena, out)?;
                }
            }
        }
        Ok(())
    }

    /// The first failure a kernel recorded, if any (waits for the kernels).
    pub fn check_failure(&self) -> R<()> {
        self.session.synchronize()?;
        let mut bytes = [0u8; 24];
        self.session.download(self.err, &mut bytes)?;
        let word = |k: usize| u64::from_le_bytes(bytes[k * 8..k * 8 + 8].try_into().unwrap());
        match word(0) {
            0 => Ok(()),
            kind => Err(Failure {
                code: kind as u32,
                a: word(1),
                b: word(2),
            }
            .describe()),
        }
    }

    // ---- the host program ----

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
            Expr::Tuple(es) | Expr::Array(es) => {
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
            Expr::Record { name, fields } => {
                let mut tys = Vec::new();
                let mut w = Vec::new();
                for (f, x) in fields {
                    let v = self.eval(x)?;
                    tys.push((f.clone(), v.ty));
                    w.push(v.w);
                }
                Ok(HostVal {
                    ty: Type::Record(name.clone(), tys),
                    w: w.concat(),
                })
            }
            Expr::Field(b, f) => {
                let v = self.eval(b)?;
                field(&v, f)
            }
            Expr::Unary(op, x) => {
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
            Expr::Binary(op, a, b) => {
                let x = self.eval(a)?;
                if matches!(op, BinOp::And | BinOp::Or) {
                    let l = x.w[0] != 0;
                    if (*op == BinOp::And) != l {
                        return Ok(x);
                    }
                    return self.eval(b);
                }
                let y = self.eval(b)?;
                binary(*op, &x, &y)
            }
            Expr::Cast(x, t) => {
                let v = self.eval(x)?;
                let (Type::Scalar(from), Type::Scalar(to)) = (&v.ty, t) else {
                    return Err(format!("a cast from {} to {t}", v.ty));
                };
                Ok(HostVal {
                    ty: t.clone(),
                    w: vec![cast(v.w[0], *from, *to)],
                })
            }
            Expr::Method { recv, method, args } => {
                let r = self.eval(recv)?;
                if let (Type::Tensor(_), "shape") = (&r.ty, method.as_str()) {
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
            Expr::Assoc { ty, func, args } => {
                let a = args.iter().map(|x| self.eval(x)).collect::<R<Vec<_>>>()?;
                if (ty.as_str(), func.as_str()) == ("accel", "same_len") {
                    if a[0].w[0] != a[1].w[0] {
                        return Err(
                            Failure::new(FailureKind::Lengths, a[0].w[0], a[1].w[0]).describe()
                        );
                    }
                    return Ok(a[0].clone());
                }
                let (recv, rest) = a
                    .split_first()
                    .ok_or_else(|| format!("`{ty}::{func}` needs arguments"))?;
                method_of(recv, func, rest)
            }
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
            Expr::For { var, lo, hi, body } => {
                let (lo, hi) = (self.eval(lo)?, self.eval(hi)?);
                let s = scalar(&lo)?;
                // Signed words hold their value sign-extended.
                let (a, b) = match s {
                    ScalarType::I32 | ScalarType::I64 => {
                        (lo.w[0] as i64 as i128, hi.w[0] as i64 as i128)
                    }
                    _ => (lo.w[0] as i128, hi.w[0] as i128),
                };
                let before = self.env.get(var).cloned();
                let since = self.keep.len();
                for k in a..b {
                    self.env.insert(
                        var.clone(),
                        HostVal {
                            ty: lo.ty.clone(),
                            w: vec![normalize(s, k as u64)],
                        },
                    );
                    self.eval(body)?;
                    self.free_unreachable(since)?;
                }
                match before {
                    Some(v) => self.env.insert(var.clone(), v),
                    None => self.env.remove(var),
                };
                Ok(unit())
            }
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
            Expr::Index(b, i) => {
                // `t.shape()[k]`: the dimension is a host word already.
                if let Expr::Method { recv, method, .. } = &**b {
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
            Expr::Slice { seq, lo, hi } => {
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
            Expr::Par {
                op: ParOp::Flatten,
                args,
                ..
            } => {
                let v = self.eval(&args[0])?;
                let Type::Seq(row) = &v.ty else {
                    return Err(format!("flatten of {}", v.ty));
                };
                let Type::Seq(_) = **row else {
                    return Err(format!("flatten of {}", v.ty));
                };
                Ok(HostVal {
                    ty: (**row).clone(),
                    w: [vec![v.w[0] * v.w[1]], v.w[2..].to_vec()].concat(),
                })
            }
            other => Err(format!("the host cannot evaluate {other:?}")),
        }
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
                    pat, init: Some(x), ..
                } => {
                    let v = self.eval(x)?;
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

    /// Element `k` of a sequence of `e` whose columns are `w[at..]` (read back from the
    /// device; a row stays a view on it).
    fn element_of(&mut self, e: &Type, w: &[u64], at: &mut usize, k: u64) -> R<Vec<u64>> {
        Ok(match e {
            Type::Scalar(s) => {
                let col = w[*at];
                *at += 1;
                let size = size_of(*s);
                let mut bytes = [0u8; 8];
                self.session
                    .download(col + k * size as u64, &mut bytes[..size])?;
                self.bytes_out += size;
                vec![normalize(*s, u64::from_le_bytes(bytes))]
            }
            Type::Seq(inner) => {
                let n = w[*at];
                let mut out = vec![n];
                let mut rest = *at + 1;
                offset_columns(inner, w, &mut rest, k * n, &mut out)?;
                *at = rest;
                out
            }
            Type::Unit => vec![],
            t => {
                let mut out = Vec::new();
                for p in t.parts() {
                    out.extend(self.element_of(&p, w, at, k)?);
                }
                out
            }
        })
    }

    /// A sequence of host values (flat elements) uploaded as columns.
    fn upload_elements(&mut self, elem: Type, vs: &[HostVal]) -> R<HostVal> {
        let kinds = words(&elem)?;
        let mut cols = vec![vs.len() as u64];
        for (j, kind) in kinds.iter().enumerate() {
            let Word::Scalar(s) = kind else {
                return Err("a `vec!` of sequences on the host".into());
            };
            let size = size_of(*s);
            let bytes: Vec<u8> = vs
                .iter()
                .flat_map(|v| v.w[j].to_le_bytes()[..size].to_vec())
                .collect();
            let buf = self.session.upload(&bytes)?;
            self.bytes_in += bytes.len();
            cols.push(buf.ptr);
            self.hold(buf);
        }
        Ok(HostVal {
            ty: Type::Seq(Box::new(elem)),
            w: cols,
        })
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
        if !super::PROFILE.load(Relaxed) {
            return self.launch_kernels(k);
        }
        self.session.synchronize()?;
        let start = std::time::Instant::now();
        let r = self.launch_kernels(k)?;
        self.session.synchronize()?;
        super::KERNEL_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
        Ok(r)
    }

    fn launch_kernels(&mut self, k: usize) -> R<HostVal> {
        let l = self.launches[k].clone();
        let kernels = self.kernels[k].clone();
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
        let with = |extra: &[u64], err: u64| -> Vec<u64> {
            [free.clone(), extra.to_vec(), vec![err]].concat()
        };
        let sms = self.session.gpu().multiprocessors as u64;
        let threads = self.session.gpu().threads as u64;
        let grid = |n: u64, cap: u64| n.div_ceil(threads).clamp(1, cap) as u32;
        let err = self.err;
        match &l.kind {
            LaunchKind::Map { elem } => {
                let mut outs = Vec::new();
                for c in columns(elem)? {
                    let Word::Ptr(s) = c else {
                        return Err("a map result column is not a pointer".into());
                    };
                    outs.push(self.alloc(n as usize * size_of(s))?);
                }
                if n > 0 {
                    let params = with(&[vec![n], outs.clone()].concat(), err);
                    self.session
                        .launch(kernels[0], grid(n, sms * 32), &params)?;
                }
                Ok(HostVal {
                    ty: Type::Seq(Box::new(elem.clone())),
                    w: [vec![n], outs].concat(),
                })
            }
            LaunchKind::SegReduce { elem, m, .. } => {
                let m = self.eval(m)?.w[0];
                let outs = self.alloc_rows(elem, n, 1)?;
                // Segments enough to fill the device, or short ones: one thread each.
                let thread_per_segment = n >= sms * threads || m < 2 * threads;
                if n > 0 && thread_per_segment {
                    let params = with(&[vec![n], outs.clone()].concat(), err);
                    self.session
                        .launch(kernels[0], grid(n, sms * 32), &params)?;
                } else if n > 0 {
                    // Few long segments: about eight blocks per multiprocessor in all.
                    let per_seg = (sms * 8).div_ceil(n).clamp(1, m.div_ceil(threads));
                    let chunk = m.div_ceil(per_seg);
                    let acc_bytes = 8 * words(elem)?.len().max(1);
                    let partials = self.alloc(acc_bytes * (n * per_seg) as usize)?;
                    self.session.launch(
                        kernels[1],
                        (n * per_seg) as u32,
                        &with(&[n, m, per_seg, chunk, partials], err),
                    )?;
                    let params = with(&[vec![n, per_seg, partials], outs.clone()].concat(), err);
                    self.session.launch(kernels[2], n as u32, &params)?;
                }
                Ok(HostVal {
                    ty: Type::Seq(Box::new(elem.clone())),
                    w: [vec![n], outs].concat(),
                })
            }
            LaunchKind::Rows { elem } => {
                // Row lengths first; the first row's length is the inner length.
                let lens = self.alloc(8 * n.max(1) as usize)?;
                let mut m = 0u64;
                if n > 0 {
                    self.session
                        .launch(kernels[0], grid(n, sms * 32), &with(&[n, lens], err))?;
                    self.check_failure()?;
                    let mut first = [0u8; 8];
                    self.session.download(lens, &mut first)?;
                    m = u64::from_le_bytes(first);
                }
                let outs = self.alloc_rows(elem, n, m)?;
                if n > 0 {
                    let params = with(&[vec![n, m, lens], outs.clone()].concat(), err);
                    self.session
                        .launch(kernels[1], grid(n, sms * 32), &params)?;
                }
                Ok(HostVal {
                    ty: Type::Seq(Box::new(Type::Seq(Box::new(elem.clone())))),
                    w: [vec![n, m], outs].concat(),
                })
            }
            LaunchKind::Loop => {
                if n > 0 {
                    self.session
                        .launch(kernels[0], grid(n, sms * 32), &with(&[n], err))?;
                }
                Ok(unit())
            }
            LaunchKind::Reduce { elem, commutative } => {
                let acc_bytes = 8 * words(elem)?.len().max(1);
                let blocks = if n == 0 {
                    0
                } else if *commutative {
                    n.div_ceil(threads).clamp(1, sms * 8)
                } else {
                    n.div_ceil(8 * threads).clamp(1, 1024)
                };
                let chunk = if blocks == 0 { 0 } else { n.div_ceil(blocks) };
                let partials = self.alloc(acc_bytes * blocks.max(1) as usize)?;
                if blocks > 0 {
                    self.session.launch(
                        kernels[0],
                        blocks as u32,
                        &with(&[n, chunk, partials], err),
                    )?;
                }
                let words_n = words(elem)?.len();
                let out = self.alloc(8 * words_n.max(1))?;
                self.session
                    .launch(kernels[1], 1, &with(&[blocks, partials, out], err))?;
                self.check_failure()?;
                let mut bytes = vec![0u8; 8 * words_n];
                self.session.download(out, &mut bytes)?;
                let w = bytes
                    .chunks(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                Ok(HostVal {
                    ty: elem.clone(),
                    w,
                })
            }
            LaunchKind::RowReduce { elem, ne } | LaunchKind::RowScan { elem, ne } => {
                let scan = matches!(l.kind, LaunchKind::RowScan { .. });
                let ne = self
                    .env
                    .get(ne)
                    .ok_or(format!("`{ne}` is not bound"))?
                    .clone();
                let m = ne.w[0];
                if n == 0 && !scan {
                    return Ok(ne);
                }
                // Each of up to two threads per core's worth of threads folds a contiguous
                // chunk; `count` chunks in all.
                let blocks = n.div_ceil(threads).clamp(1, sms * 2);
                let chunk = n.div_ceil(blocks * threads).max(1);
                let count = n.div_ceil(chunk);
                let tot = self.alloc_rows(elem, count, m)?;
                let outs = if scan {
                    self.alloc_rows(elem, n, m)?
                } else {
                    Vec::new()
                };
                if n > 0 {
                    let params = with(&[vec![n, chunk], tot.clone()].concat(), err);
                    self.session.launch(kernels[0], blocks as u32, &params)?;
                    if scan {
                        let car = self.alloc_rows(elem, count, m)?;
                        let scr = self.alloc_rows(elem, 2 * threads, m)?;
                        let params =
                            with(&[vec![count], tot.clone(), car.clone(), scr].concat(), err);
                        self.session.launch(kernels[1], 1, &params)?;
                        let params = with(&[vec![n, chunk], car, outs.clone()].concat(), err);
                        self.session.launch(kernels[2], blocks as u32, &params)?;
                    } else {
                        self.session.launch(
                            kernels[1],
                            1,
                            &with(&[vec![count], tot.clone()].concat(), err),
                        )?;
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
            LaunchKind::Scan { elem } => {
                let mut outs = Vec::new();
                for c in columns(elem)? {
                    let Word::Ptr(s) = c else {
                        return Err("a scan result column is not a pointer".into());
                    };
                    outs.push(self.alloc(n as usize * size_of(s))?);
                }
                if n > 0 {
                    let acc_bytes = 8 * words(elem)?.len().max(1);
                    let blocks = n.div_ceil(8 * threads).clamp(1, 1024);
                    let chunk = n.div_ceil(blocks);
                    let partials = self.alloc(acc_bytes * blocks as usize)?;
                    let carries = self.alloc(acc_bytes * blocks as usize)?;
                    self.session.launch(
                        kernels[0],
                        blocks as u32,
                        &with(&[n, chunk, partials], err),
                    )?;
                    self.session
                        .launch(kernels[1], 1, &with(&[blocks, partials, carries], err))?;
                    self.session.launch(
                        kernels[2],
                        blocks as u32,
                        &with(&[vec![n, chunk, carries], outs.clone()].concat(), err),
                    )?;
                }
                Ok(HostVal {
                    ty: Type::Seq(Box::new(elem.clone())),
                    w: [vec![n], outs].concat(),
                })
            }
        }
    }
}

impl Run<'_, '_> {
    /// Columns for `rows` rows of `m` elements of `elem`.
    fn alloc_rows(&mut self, elem: &Type, rows: u64, m: u64) -> R<Vec<u64>> {
        let mut cols = Vec::new();
        for c in columns(elem)? {
            let Word::Ptr(s) = c else {
                return Err("a row column is not a pointer".into());
            };
            let bytes = (rows as usize)
                .checked_mul(m as usize)
                .and_then(|k| k.checked_mul(size_of(s)))
                .ok_or("the rows are too large")?;
            cols.push(self.alloc(bytes)?);
        }
        Ok(cols)
    }
}

/// Columns of a sequence of `e` (read from `w` at `at`), advanced by `k` elements.
fn offset_columns(e: &Type, w: &[u64], at: &mut usize, k: u64, out: &mut Vec<u64>) -> R<()> {
    match e {
        Type::Scalar(s) => {
            let p = w[*at];
            *at += 1;
            out.push(if p == 0 {
                0
            } else {
                p + k * size_of(*s) as u64
            });
        }
        Type::Seq(inner) => {
            let n = w[*at];
            *at += 1;
            out.push(n);
            offset_columns(inner, w, at, k * n, out)?;
        }
        Type::Unit => {}
        t => {
            for p in t.parts() {
                offset_columns(&p, w, at, k, out)?;
            }
        }
    }
    Ok(())
}

fn index_failure(k: u64, len: u64) -> String {
    Failure::new(FailureKind::Index, k, len).describe()
}

fn unit() -> HostVal {
    HostVal {
        ty: Type::Unit,
        w: vec![],
    }
}

fn field(v: &HostVal, f: &str) -> R<HostVal> {
    let (ft, off) = layout::field_offset(&v.ty, f)?;
    let n = words(&ft)?.len();
    Ok(HostVal {
        ty: ft,
        w: v.w[off..off + n].to_vec(),
    })
}

fn scalar(v: &HostVal) -> R<ScalarType> {
    match v.ty {
        Type::Scalar(s) => Ok(s),
        ref t => Err(format!("a scalar was expected on the host, found {t}")),
    }
}

fn lit(l: &Lit) -> R<HostVal> {
    let (s, w) = match l {
        Lit::Bool(b) => (ScalarType::Bool, *b as u64),
        Lit::Int(v, Some(s)) if s.is_float() => return lit(&Lit::Float(*v as f64, Some(*s))),
        Lit::Int(v, Some(s)) => (*s, *v),
        Lit::Float(v, Some(ScalarType::F32)) => (ScalarType::F32, (*v as f32).to_bits() as u64),
        Lit::Float(v, Some(ScalarType::F64)) => (ScalarType::F64, v.to_bits()),
        _ => return Err("an untyped literal".into()),
    };
    Ok(HostVal {
        ty: Type::Scalar(s),
        w: vec![normalize(s, w)],
    })
}

/// A word in the ABI's canonical form for its type (32-bit integers sign- or
/// zero-extended).
fn normalize(s: ScalarType, w: u64) -> u64 {
    match s {
        ScalarType::I32 => w as i32 as i64 as u64,
        ScalarType::U32 | ScalarType::F32 => w as u32 as u64,
        ScalarType::Bool => (w & 1 != 0) as u64,
        _ => w,
    }
}

/// A scalar as a number the host computes with.
#[derive(Clone, Copy)]
enum Num {
    I(i128),
    F(f64),
}

fn num(s: ScalarType, w: u64) -> Num {
    match s {
        ScalarType::F32 => Num::F(f32::from_bits(w as u32) as f64),
        ScalarType::F64 => Num::F(f64::from_bits(w)),
        ScalarType::I32 => Num::I(w as i32 as i128),
        ScalarType::I64 => Num::I(w as i64 as i128),
        ScalarType::U32 => Num::I(w as u32 as i128),
        _ => Num::I(w as i128),
    }
}

/// A number back to a word of type `s` (integers wrap, floats round; float to integer
/// saturates, as `as` does).
fn word(s: ScalarType, n: Num) -> u64 {
    match (s, n) {
        (ScalarType::F32, Num::F(x)) => (x as f32).to_bits() as u64,
        (ScalarType::F32, Num::I(i)) => (i as f32).to_bits() as u64,
        (ScalarType::F64, Num::F(x)) => x.to_bits(),
        (ScalarType::F64, Num::I(i)) => (i as f64).to_bits(),
        (ScalarType::Bool, Num::I(i)) => (i != 0) as u64,
        (ScalarType::Bool, Num::F(x)) => (x != 0.0) as u64,
        (s, Num::F(x)) => match s {
            ScalarType::I32 => x as i32 as i64 as u64,
            ScalarType::I64 => x as i64 as u64,
            ScalarType::U32 => x as u32 as u64,
            _ => x as u64,
        },
        (s, Num::I(i)) => normalize(s, i as u64),
    }
}

fn cast(w: u64, from: ScalarType, to: ScalarType) -> u64 {
    word(to, num(from, w))
}

fn binary(op: BinOp, x: &HostVal, y: &HostVal) -> R<HostVal> {
    let s = scalar(x)?;
    let (a, b) = (num(s, x.w[0]), num(s, y.w[0]));
    let boolean = |c: bool| HostVal {
        ty: Type::Scalar(ScalarType::Bool),
        w: vec![c as u64],
    };
    let cmp = |o: std::cmp::Ordering| match op {
        BinOp::Eq => o.is_eq(),
        BinOp::Ne => !o.is_eq(),
        BinOp::Lt => o.is_lt(),
        BinOp::Le => o.is_le(),
        BinOp::Gt => o.is_gt(),
        _ => o.is_ge(),
    };
    if matches!(
        op,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
    ) {
        return Ok(boolean(match (a, b) {
            (Num::I(p), Num::I(q)) => cmp(p.cmp(&q)),
            (Num::F(p), Num::F(q)) => match p.partial_cmp(&q) {
                Some(o) => cmp(o),
                None => op == BinOp::Ne,
            },
            _ => return Err("a comparison of mixed types".into()),
        }));
    }
    let r = match (a, b) {
        (Num::F(p), Num::F(q)) => {
            // f32 arithmetic rounds at f32: compute in the type's precision.
            if s == ScalarType::F32 {
                let (p, q) = (p as f32, q as f32);
                Num::F(match op {
                    BinOp::Add => p + q,
                    BinOp::Sub => p - q,
                    BinOp::Mul => p * q,
                    BinOp::Div => p / q,
                    BinOp::Rem => p % q,
                    _ => return Err(format!("`{}` on floats", op.symbol())),
                } as f64)
            } else {
                Num::F(match op {
                    BinOp::Add => p + q,
                    BinOp::Sub => p - q,
                    BinOp::Mul => p * q,
                    BinOp::Div => p / q,
                    BinOp::Rem => p % q,
                    _ => return Err(format!("`{}` on floats", op.symbol())),
                })
            }
        }
        (Num::I(p), Num::I(q)) => {
            let bits = if matches!(s, ScalarType::I32 | ScalarType::U32) {
                32
            } else {
                64
            };
            Num::I(match op {
                BinOp::Add => p + q,
                BinOp::Sub => p - q,
                BinOp::Mul => p.wrapping_mul(q),
                BinOp::Div | BinOp::Rem => {
                    if q == 0 {
                        return Err("attempt to divide by zero".into());
                    }
                    let (min, signed) = match s {
                        ScalarType::I32 => (i32::MIN as i128, true),
                        ScalarType::I64 => (i64::MIN as i128, true),
                        _ => (0, false),
                    };
                    if signed && p == min && q == -1 {
                        return Err("attempt to divide with overflow".into());
                    }
                    if op == BinOp::Div {
                        p / q
                    } else {
                        p % q
                    }
                }
                BinOp::BitAnd => p & q,
                BinOp::BitOr => p | q,
                BinOp::BitXor => p ^ q,
                BinOp::Shl => p << (q as u32 & (bits - 1)),
                BinOp::Shr => p >> (q as u32 & (bits - 1)),
                _ => return Err(format!("`{}` on integers", op.symbol())),
            })
        }
        _ => return Err("arithmetic on mixed types".into()),
    };
    Ok(HostVal {
        ty: x.ty.clone(),
        w: vec![word(s, r)],
    })
}

fn method_of(r: &HostVal, method: &str, a: &[HostVal]) -> R<HostVal> {
    let usize_val = |n: u64| HostVal {
        ty: Type::Scalar(ScalarType::Usize),
        w: vec![n],
    };
    match (&r.ty, method) {
        (Type::Seq(_), "len") => return Ok(usize_val(r.w[0])),
        (Type::Seq(_), "is_empty") => {
            return Ok(HostVal {
                ty: Type::Scalar(ScalarType::Bool),
                w: vec![(r.w[0] == 0) as u64],
            })
        }
        (Type::Array(_, n), "len") => return Ok(usize_val(*n as u64)),
        (Type::Tensor(_), "len") => return Ok(usize_val(tensor_dims(r).iter().product())),
        (Type::Tensor(_), "rank") => return Ok(usize_val(r.w[1])),
        _ => {}
    }
    let s = scalar(r)?;
    let x = num(s, r.w[0]);
    let arg = |k: usize| -> R<Num> {
        a.get(k)
            .map(|v| num(scalar(v).unwrap_or(s), v.w[0]))
            .ok_or_else(|| format!("`.{method}()` needs an argument"))
    };
    let r = match x {
        Num::F(v) => {
            let f32_ = s == ScalarType::F32;
            let y = |k| match arg(k) {
                Ok(Num::F(y)) => Ok(y),
                Ok(Num::I(i)) => Ok(i as f64),
                Err(e) => Err(e),
            };
            Num::F(match method {
                "sqrt" => v.sqrt(),
                "abs" => v.abs(),
                "floor" => v.floor(),
                "ceil" => v.ceil(),
                "trunc" => v.trunc(),
                "round" => v.round(),
                "exp" => v.exp(),
                "ln" => v.ln(),
                "sin" => v.sin(),
                "cos" => v.cos(),
                "tan" => v.tan(),
                "log2" => v.log2(),
                "log10" => v.log10(),
                "min" => v.min(y(0)?),
                "max" => v.max(y(0)?),
                "powf" => v.powf(y(0)?),
                "powi" => v.powi(y(0)? as i32),
                m => return Err(format!("`.{m}()` on the host")),
            })
            .round_to(f32_)
        }
        Num::I(v) => Num::I(match method {
            "abs" => v.abs(),
            "min" => match arg(0)? {
                Num::I(y) => v.min(y),
                _ => return Err("`.min()` of mixed types".into()),
            },
            "max" => match arg(0)? {
                Num::I(y) => v.max(y),
                _ => return Err("`.max()` of mixed types".into()),
            },
            "pow" => match arg(0)? {
                Num::I(e) => {
                    let mut acc: i128 = 1;
                    for _ in 0..e.clamp(0, 128) {
                        acc = word_int(s, acc.wrapping_mul(v));
                    }
                    acc
                }
                _ => return Err("`.pow()` of a float".into()),
            },
            m => return Err(format!("`.{m}()` on the host")),
        }),
    };
    Ok(HostVal {
        ty: Type::Scalar(s),
        w: vec![word(s, r)],
    })
}

/// A tensor's dimensions (its words: pointer, rank, then `MAX_RANK` dimensions).
fn tensor_dims(t: &HostVal) -> &[u64] {
    let rank = (t.w[1] as usize).min(MAX_RANK);
    &t.w[2..2 + rank]
}

fn word_int(s: ScalarType, v: i128) -> i128 {
    match num(s, word(s, Num::I(v))) {
        Num::I(i) => i,
        Num::F(_) => v,
    }
}

trait RoundTo {
    fn round_to(self, f32_: bool) -> Num;
}

impl RoundTo for Num {
    fn round_to(self, f32_: bool) -> Num {
        match self {
            Num::F(v) if f32_ => Num::F(v as f32 as f64),
            n => n,
        }
    }
}
