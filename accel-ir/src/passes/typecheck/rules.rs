//! The typing rule of each construct (inference; also the type of typed expressions).

use super::*;
use crate::expr::{BinOp, MatchArm, ParOp, UnOp};
use crate::methods::{self, Arg, Returns};
use crate::ops::{
    Create, Filter, Flatten, Map, Map2, OpView, ParallelLoop, Reduce, ReduceByIndex, Scan, Scatter,
};

impl Checker<'_> {
    pub(super) fn bind(&mut self, p: &Pat, t: &Ty) -> Result<(), IrError> {
        match p {
            Pat::Wild => Ok(()),
            Pat::Bind { name, .. } => {
                self.scope.insert(name.clone(), t.clone());
                Ok(())
            }
            Pat::Tuple(ps) => {
                let parts: Vec<Ty> = ps.iter().map(|_| self.fresh(Kind::Any)).collect();
                self.expect(t, &Ty::Tuple(parts.clone()), || {
                    format!("the pattern `{p}`")
                })?;
                ps.iter().zip(&parts).try_for_each(|(p, t)| self.bind(p, t))
            }
            Pat::Record { name, fields, .. } => {
                let Ty::Record(_, fs) = self.resolve(t) else {
                    return Err(err(format!(
                        "the pattern `{p}` matches a record, but the value is {}",
                        self.show(t)
                    )));
                };
                for (f, sub) in fields {
                    let ft = fs.iter().find(|(n, _)| n == f).map(|(_, t)| t.clone());
                    let ft =
                        ft.ok_or_else(|| err(format!("record `{name}` has no field `{f}`")))?;
                    self.bind(sub, &ft)?;
                }
                Ok(())
            }
            Pat::Lit { lit, .. } => {
                let lt = self.lit(lit);
                self.expect(t, &lt, || format!("the pattern `{p}`"))
            }
            Pat::Const(_) => Ok(()),
            Pat::Range { lo, hi, .. } => {
                self.bind(lo, t)?;
                self.bind(hi, t)
            }
            Pat::Or(ps) => ps.iter().try_for_each(|p| self.bind(p, t)),
        }
    }

    fn lit(&mut self, l: &Lit) -> Ty {
        match l {
            Lit::Int(_, Some(s)) | Lit::Float(_, Some(s)) => Ty::Scalar(*s),
            Lit::Int(_, None) => self.fresh(Kind::Int),
            Lit::Float(_, None) => self.fresh(Kind::Float),
            Lit::Bool(_) => BOOL,
        }
    }

    fn lambda(&mut self, f: &Expr, params: &[Ty], what: &str) -> Result<Ty, IrError> {
        let Expr::Lambda { params: ps, body } = f else {
            return Err(err(format!(
                "the function argument of `{what}` is not a closure after inlining"
            )));
        };
        if ps.len() != params.len() {
            return Err(err(format!(
                "the closure given to `{what}` takes {} parameter(s), but `{what}` passes {}",
                ps.len(),
                params.len()
            )));
        }
        for ((p, annotated), t) in ps.iter().zip(params) {
            let at = self.ty_of(annotated)?;
            self.expect(&at, t, || {
                format!("the parameter `{p}` of the closure given to `{what}`")
            })?;
            self.bind(p, t)?;
        }
        self.infer(body)
    }

    fn elem_of(&mut self, seq: &Ty, what: &str) -> Result<Ty, IrError> {
        // An array is a sequence too (`reduce(op, ne, &[1, 2, 3])`).
        if let Ty::Array(t, _) = self.resolve(seq) {
            return Ok(*t);
        }
        let elem = self.fresh(Kind::Any);
        self.expect(seq, &Ty::Seq(Box::new(elem.clone())), || {
            format!("`{what}` takes a sequence")
        })?;
        Ok(elem)
    }

    pub(super) fn infer(&mut self, e: &Expr) -> Result<Ty, IrError> {
        Ok(match e {
            Expr::Lit(l) => self.lit(l),
            Expr::Cast(inner, t) if matches!(**inner, Expr::Lit(_)) && placeholder_var(t).is_some() => {
                Ty::Var(placeholder_var(t).unwrap_or(0))
            }
            Expr::Var(v) => self.var(v)?,
            Expr::Const(c) => const_type(c).map(Ty::Scalar).ok_or_else(|| {
                err(format!("the constant `{c}` is not supported by the compiled backends yet (use a literal, or capture a local holding it)"))
            })?,
            Expr::Tuple(es) if es.is_empty() => Ty::Unit,
            Expr::Tuple(es) => Ty::Tuple(es.iter().map(|e| self.infer(e)).collect::<Result<_, _>>()?),
            Expr::Array(es) => {
                let t = self.fresh(Kind::Any);
                for x in es {
                    let xt = self.infer(x)?;
                    self.expect(&xt, &t, || "the elements of an array".into())?;
                }
                Ty::Array(Box::new(t), es.len())
            }
            Expr::ArrayRepeat(v, n) => self.infer_array_repeat(v, n)?,
            Expr::Seq(es) => {
                let t = self.fresh(Kind::Any);
                for x in es {
                    let xt = self.infer(x)?;
                    self.expect(&xt, &t, || "the elements of `vec![..]`".into())?;
                }
                Ty::Seq(Box::new(t))
            }
            Expr::SeqRepeat(v, n) => {
                let t = self.infer(v)?;
                let nt = self.infer(n)?;
                self.expect(&nt, &USIZE, || "the count of `vec![x; n]`".into())?;
                Ty::Seq(Box::new(t))
            }
            Expr::Slice { seq, lo, hi } => {
                let st = self.infer(seq)?;
                self.elem_of(&st, "a slice")?;
                for b in [lo, hi] {
                    let bt = self.infer(b)?;
                    self.expect(&bt, &USIZE, || "a slice bound".into())?;
                }
                st
            }
            Expr::Record { name, fields } => self.infer_record(name, fields)?,
            Expr::Field(base, f) => self.infer_field(base, f)?,
            Expr::Index(base, i) => self.infer_index(base, i)?,
            Expr::Unary(op, x) => {
                let t = self.infer(x)?;
                if *op == UnOp::Not && matches!(self.resolve(&t), Ty::Var(_)) {
                    self.expect(&t, &BOOL, || "`!`".into())?;
                }
                t
            }
            Expr::Binary(op, a, b) => self.infer_binary(*op, a, b)?,
            Expr::Cast(x, t) => {
                self.infer(x)?;
                self.ty_of(t)?
            }
            Expr::Par { op, args, .. } => self.par(*op, args)?,
            Expr::Method { recv, method, args } => self.method(recv, method, args)?,
            Expr::Assoc { ty, func, args } => self.assoc(ty, func, args)?,
            Expr::If { cond, then, els } => self.infer_if(cond, then, els.as_deref())?,
            Expr::Match { scrutinee, arms } => self.infer_match(scrutinee, arms)?,
            Expr::Block { stmts, result } => self.infer_block(stmts, result.as_deref())?,
            Expr::Assign { target, value } => {
                let tt = self.infer(target)?;
                let vt = self.infer(value)?;
                self.expect(&vt, &tt, || "an assignment".into())?;
                Ty::Unit
            }
            Expr::For { var, lo, hi, body } => {
                let lt = self.infer(lo)?;
                let ht = self.infer(hi)?;
                self.expect(&lt, &ht, || "the bounds of a `for` range".into())?;
                self.scope.insert(var.clone(), lt);
                self.infer(body)?;
                Ty::Unit
            }
            Expr::While { cond, body } => {
                let ct = self.infer(cond)?;
                self.expect(&ct, &BOOL, || "a `while` condition".into())?;
                self.infer(body)?;
                Ty::Unit
            }
            Expr::Lambda { .. } => return Err(err("a closure outside the function argument of a parallel operation".into())),
            Expr::Call { .. } | Expr::FnRef(_) | Expr::Apply { .. } | Expr::Closure { .. } => {
                return Err(err("calls remain after inlining".into()))
            }
        })
    }

    fn par(&mut self, op: ParOp, args: &[Expr]) -> Result<Ty, IrError> {
        let name = op.name();
        Ok(match op.view(args)? {
            OpView::Map(Map { f, xs }) => {
                let xs = self.infer(xs)?;
                let a = self.elem_of(&xs, name)?;
                Ty::Seq(Box::new(self.lambda(f, &[a], name)?))
            }
            OpView::Map2(Map2 { f, xs, ys }) => {
                let xs = self.infer(xs)?;
                let ys = self.infer(ys)?;
                let a = self.elem_of(&xs, name)?;
                let b = self.elem_of(&ys, name)?;
                Ty::Seq(Box::new(self.lambda(f, &[a, b], name)?))
            }
            OpView::Reduce(Reduce { op: f, ne, xs }) => self.fold(name, f, ne, xs)?,
            OpView::Scan(Scan { op: f, ne, xs }) => Ty::Seq(Box::new(self.fold(name, f, ne, xs)?)),
            OpView::Flatten(Flatten { xss }) => {
                let xss = self.infer(xss)?;
                let row = self.elem_of(&xss, name)?;
                let a = self.elem_of(&row, name)?;
                Ty::Seq(Box::new(a))
            }
            OpView::Create(Create { n, f }) => {
                let n = self.infer(n)?;
                self.expect(&n, &USIZE, || "the length of `create`".into())?;
                Ty::Seq(Box::new(self.lambda(f, &[USIZE], name)?))
            }
            OpView::ParallelLoop(ParallelLoop { n, f }) => {
                let n = self.infer(n)?;
                self.expect(&n, &USIZE, || "the count of `parallel_loop`".into())?;
                self.lambda(f, &[USIZE], name)?;
                Ty::Unit
            }
            OpView::ReduceByIndex(ReduceByIndex {
                dest,
                op: f,
                ne,
                is,
                vs,
            }) => {
                let a = self.fold(name, f, ne, vs)?;
                let dest = self.infer(dest)?;
                self.expect(&dest, &Ty::Seq(Box::new(a.clone())), || {
                    "the bins (`dest`) of `reduce_by_index`".into()
                })?;
                let is = self.infer(is)?;
                self.expect(&is, &Ty::Seq(Box::new(USIZE)), || {
                    "the indices (`is`) of `reduce_by_index`".into()
                })?;
                Ty::Seq(Box::new(a))
            }
            OpView::Filter(Filter { p, xs }) => {
                let xs = self.infer(xs)?;
                let a = self.elem_of(&xs, name)?;
                let kept = self.lambda(p, std::slice::from_ref(&a), name)?;
                self.expect(&kept, &BOOL, || "the predicate of `filter`".into())?;
                Ty::Seq(Box::new(a))
            }
            OpView::Scatter(Scatter { dest, is, vs }) => {
                let dest = self.infer(dest)?;
                let a = self.elem_of(&dest, name)?;
                let is = self.infer(is)?;
                self.expect(&is, &Ty::Seq(Box::new(USIZE)), || {
                    "the indices (`is`) of `scatter`".into()
                })?;
                let vs = self.infer(vs)?;
                self.expect(&vs, &Ty::Seq(Box::new(a.clone())), || {
                    "the values (`vs`) of `scatter`".into()
                })?;
                Ty::Seq(Box::new(a))
            }
        })
    }

    /// `reduce` and `scan`: `ne` and the operator's parameters and result have the
    /// element type, which is returned.
    fn fold(&mut self, name: &str, op: &Expr, ne: &Expr, xs: &Expr) -> Result<Ty, IrError> {
        let ne = self.infer(ne)?;
        let xs = self.infer(xs)?;
        let a = self.elem_of(&xs, name)?;
        self.expect(&ne, &a, || format!("the neutral element of `{name}`"))?;
        let r = self.lambda(op, &[a.clone(), a.clone()], name)?;
        self.expect(&r, &a, || format!("the operator of `{name}`"))?;
        Ok(a)
    }

    /// A method call, typed by the method table.
    fn method(&mut self, recv: &Expr, method: &str, args: &[Expr]) -> Result<Ty, IrError> {
        let rt = self.infer(recv)?;
        let ats = args
            .iter()
            .map(|a| self.infer(a))
            .collect::<Result<Vec<_>, _>>()?;
        let what = || format!("`.{method}()`");
        let m = methods::method(method).ok_or_else(|| {
            err(format!(
                "the method `.{method}()` is not supported in accelerated code"
            ))
        })?;
        let tensor = m.returns == Returns::TensorElement || m.args.contains(&Arg::TensorElement);
        let elem = if tensor {
            let elem = self.fresh(Kind::Any);
            self.expect(&rt, &Ty::Tensor(Box::new(elem.clone())), what)?;
            elem
        } else {
            Ty::Unit
        };
        for (a, rule) in ats.iter().zip(m.args) {
            let want = match rule {
                Arg::Receiver => rt.clone(),
                Arg::Scalar(s) => Ty::Scalar(*s),
                // A tensor index is `[usize; RANK]` (an array of any length).
                Arg::TensorIndex => Ty::Array(Box::new(USIZE), 0),
                Arg::TensorElement => elem.clone(),
                Arg::Any => continue,
            };
            self.expect(a, &want, what)?;
        }
        Ok(match m.returns {
            Returns::Receiver => rt,
            Returns::Scalar(s) => Ty::Scalar(s),
            Returns::PairOfReceiver => Ty::Tuple(vec![rt.clone(), rt]),
            // Rust knows the receiver's type where a method is called on it.
            Returns::UnsignedOfReceiver => match self.resolve(&rt) {
                Ty::Scalar(s) => Ty::Scalar(s.unsigned()),
                _ => rt,
            },
            Returns::TensorElement => elem,
            Returns::Unit => Ty::Unit,
            Returns::Shape => Ty::Seq(Box::new(USIZE)),
            Returns::ToVec => match self.resolve(&rt) {
                Ty::Tensor(t) => Ty::Seq(t),
                _ => rt,
            },
        })
    }

    /// A tensor's shape (`&[d0, d1]`, or a sequence): its dimensions are `usize`s, as
    /// the constructors' `&[usize]` makes them in Rust.
    fn shape(&mut self, shape: Option<&Ty>, what: &str) -> Result<(), IrError> {
        let usize_ = Ty::Scalar(ScalarType::Usize);
        match shape.map(|t| self.resolve(t)) {
            Some(Ty::Array(d, _) | Ty::Seq(d)) => {
                self.expect(&d, &usize_, || format!("the shape of `{what}`"))
            }
            _ => Ok(()),
        }
    }

    fn assoc(&mut self, ty: &str, func: &str, args: &[Expr]) -> Result<Ty, IrError> {
        let ats = args
            .iter()
            .map(|a| self.infer(a))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(match (ty, func) {
            ("Tensor", "zeros") => {
                self.shape(ats.first(), "Tensor::zeros")?;
                Ty::Tensor(Box::new(self.fresh(Kind::Any)))
            }
            ("Tensor", "from_vec") => {
                self.shape(ats.get(1), "Tensor::from_vec")?;
                let elem = self.elem_of(&ats[0], "Tensor::from_vec")?;
                Ty::Tensor(Box::new(elem))
            }
            (t, _) => {
                let first = match ScalarType::from_name(t) {
                    Some(s) => Ty::Scalar(s),
                    None => ats.first().cloned().unwrap_or(Ty::Unit),
                };
                for a in &ats {
                    self.expect(a, &first, || format!("`{ty}::{func}`"))?;
                }
                first
            }
        })
    }

    /// `[v; n]`: the length must be a literal.
    fn infer_array_repeat(&mut self, v: &Expr, n: &Expr) -> Result<Ty, IrError> {
        Ok({
            let t = self.infer(v)?;
            let nt = self.infer(n)?;
            self.expect(&nt, &USIZE, || "an array length".into())?;
            let len = match n {
                Expr::Cast(l, _) | Expr::Unary(_, l) if matches!(**l, Expr::Lit(Lit::Int(..))) => {
                    literal_usize(l)
                }
                other => literal_usize(other),
            };
            let len = len.ok_or_else(|| {
                err("the length of `[x; n]` must be a literal in compiled code".into())
            })?;
            Ty::Array(Box::new(t), len)
        })
    }

    /// A record literal, checked against its declaration when known.
    fn infer_record(&mut self, name: &str, fields: &[(String, Expr)]) -> Result<Ty, IrError> {
        Ok({
            let mut tys = Vec::new();
            for (f, x) in fields {
                tys.push((f.clone(), self.infer(x)?));
            }
            match self.records.get(name).cloned() {
                Some(decl) => {
                    let decl_ty = self.ty_of(&Type::Record(name.to_string(), decl.clone()))?;
                    let Ty::Record(_, decl_fields) = &decl_ty else {
                        unreachable!("from_type of a record is a record")
                    };
                    for (f, t) in &tys {
                        let want = decl_fields
                            .iter()
                            .find(|(n, _)| n == f)
                            .map(|(_, t)| t.clone());
                        let want =
                            want.ok_or_else(|| err(format!("record `{name}` has no field `{f}`")))?;
                        self.expect(t, &want, || format!("the field `{name}.{f}`"))?;
                    }
                    decl_ty
                }
                None => Ty::Record(name.to_string(), tys),
            }
        })
    }

    /// `base.f`: a tuple element or a record field.
    fn infer_field(&mut self, base: &Expr, f: &str) -> Result<Ty, IrError> {
        Ok({
            let bt = self.infer(base)?;
            match self.resolve(&bt) {
                Ty::Tuple(ts) => f
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| ts.get(i).cloned())
                    .ok_or_else(|| err(format!("a tuple has no field `{f}`")))?,
                Ty::Record(n, fs) => fs
                    .iter()
                    .find(|(x, _)| x == f)
                    .map(|(_, t)| t.clone())
                    .ok_or_else(|| err(format!("record `{n}` has no field `{f}`")))?,
                other => {
                    return Err(err(format!(
                        "`.{f}` of a value of type {}",
                        self.show(&other)
                    )))
                }
            }
        })
    }

    /// `base[i]`: an array or sequence element at a `usize`.
    fn infer_index(&mut self, base: &Expr, i: &Expr) -> Result<Ty, IrError> {
        Ok({
            let it = self.infer(i)?;
            self.expect(&it, &USIZE, || "an index".into())?;
            let bt = self.infer(base)?;
            match self.resolve(&bt) {
                Ty::Array(t, _) => *t,
                _ => self.elem_of(&bt, "indexing")?,
            }
        })
    }

    /// A binary operator.
    fn infer_binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Result<Ty, IrError> {
        Ok({
            let at = self.infer(a)?;
            let bt = self.infer(b)?;
            match op {
                BinOp::And | BinOp::Or => {
                    self.expect(&at, &BOOL, || format!("the operands of `{}`", op.symbol()))?;
                    self.expect(&bt, &BOOL, || format!("the operands of `{}`", op.symbol()))?;
                    BOOL
                }
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                    self.expect(&at, &bt, || format!("the operands of `{}`", op.symbol()))?;
                    BOOL
                }
                BinOp::Shl | BinOp::Shr => at,
                _ => {
                    self.expect(&at, &bt, || format!("the operands of `{}`", op.symbol()))?;
                    at
                }
            }
        })
    }

    /// `if`: a `bool` condition; with `else`, both branches of one type.
    fn infer_if(&mut self, cond: &Expr, then: &Expr, els: Option<&Expr>) -> Result<Ty, IrError> {
        Ok({
            let ct = self.infer(cond)?;
            self.expect(&ct, &BOOL, || "an `if` condition".into())?;
            let tt = self.infer(then)?;
            match els {
                Some(e) => {
                    let et = self.infer(e)?;
                    self.expect(&et, &tt, || "the branches of an `if`".into())?;
                    tt
                }
                None => Ty::Unit,
            }
        })
    }

    /// `match`: every arm's pattern binds against the scrutinee; the arms agree.
    fn infer_match(&mut self, scrutinee: &Expr, arms: &[MatchArm]) -> Result<Ty, IrError> {
        Ok({
            let st = self.infer(scrutinee)?;
            let rt = self.fresh(Kind::Any);
            for arm in arms {
                self.bind(&arm.pat, &st)?;
                if let Some(g) = &arm.guard {
                    let gt = self.infer(g)?;
                    self.expect(&gt, &BOOL, || "a match guard".into())?;
                }
                let bt = self.infer(&arm.body)?;
                self.expect(&bt, &rt, || "the arms of a `match`".into())?;
            }
            rt
        })
    }

    /// A block: its `let`s bind, its result is its type.
    fn infer_block(&mut self, stmts: &[Stmt], result: Option<&Expr>) -> Result<Ty, IrError> {
        Ok({
            for s in stmts {
                match s {
                    Stmt::Let { pat, ty, init } => {
                        let declared = self.ty_of(ty)?;
                        if let Some(init) = init {
                            let it = self.infer(init)?;
                            self.expect(&it, &declared, || format!("`let {pat}`"))?;
                        }
                        self.bind(pat, &declared)?;
                    }
                    Stmt::Expr(e) => {
                        self.infer(e)?;
                    }
                }
            }
            match result {
                Some(r) => self.infer(r)?,
                None => Ty::Unit,
            }
        })
    }
}
