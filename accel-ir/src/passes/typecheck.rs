//! Type inference for an inlined site: unification, rooted in the types of the captured
//! values (which the runtime knows from their Rust types) and of the result. The inferred
//! types are written back into the expression: every `let` and lambda parameter gets its
//! type, every literal its suffix (unconstrained integers default to `i32` and floats to
//! `f64`, as in Rust). Afterwards the type of any expression follows from its parts.

use super::IrError;
use crate::expr::{BinOp, Expr, Lit, ParOp, Pat, Stmt, UnOp};
use crate::types::{ScalarType, Type};
use std::collections::HashMap;

/// An inference type: a [`Type`] with variables.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Var(usize),
    Scalar(ScalarType),
    Unit,
    Tuple(Vec<Ty>),
    Array(Box<Ty>, usize),
    Seq(Box<Ty>),
    Tensor(Box<Ty>),
    Record(String, Vec<(String, Ty)>),
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Any,
    Int,
    Float,
}

/// Infers the types of `body`, whose free variables are the `captures`; `result` is the
/// type the site must produce. Returns the body with every type written in.
pub fn typecheck(body: &Expr, captures: &[(String, Type)], result: &Type) -> Result<Expr, IrError> {
    let mut tc = Checker::default();
    for (_, t) in captures
        .iter()
        .chain(std::iter::once(&("".to_string(), result.clone())))
    {
        tc.learn_records(t);
    }
    for (name, t) in captures {
        let ty = tc.ty_of(t)?;
        tc.scope.insert(name.clone(), ty);
    }
    let mut body = body.clone();
    tc.number_slots(&mut body);
    let ty = tc.infer(&body)?;
    let want = tc.ty_of(result)?;
    tc.unify(&ty, &want).map_err(|m| {
        err(format!(
            "the site's value does not have the expected type: {m}"
        ))
    })?;
    tc.write_back(&mut body)?;
    Ok(body)
}

fn err(message: String) -> IrError {
    IrError::Type { message }
}

/// The placeholder written into a type slot before inference: `?N` names variable N.
fn placeholder(n: usize) -> Type {
    Type::Named(format!("?{n}"))
}

fn placeholder_var(t: &Type) -> Option<usize> {
    match t {
        Type::Named(n) => n.strip_prefix('?').and_then(|d| d.parse().ok()),
        _ => None,
    }
}

#[derive(Default)]
struct Checker {
    binding: Vec<Option<Ty>>,
    kinds: Vec<Kind>,
    scope: HashMap<String, Ty>,
    records: HashMap<String, Vec<(String, Type)>>,
}

const USIZE: Ty = Ty::Scalar(ScalarType::Usize);
const BOOL: Ty = Ty::Scalar(ScalarType::Bool);

impl Checker {
    fn fresh(&mut self, kind: Kind) -> Ty {
        self.binding.push(None);
        self.kinds.push(kind);
        Ty::Var(self.binding.len() - 1)
    }

    fn learn_records(&mut self, t: &Type) {
        match t {
            Type::Record(name, fields) => {
                self.records.insert(name.clone(), fields.clone());
                fields.iter().for_each(|(_, f)| self.learn_records(f));
            }
            Type::Tuple(ts) => ts.iter().for_each(|t| self.learn_records(t)),
            Type::Array(t, _) | Type::Seq(t) | Type::Tensor(t) => self.learn_records(t),
            _ => {}
        }
    }

    fn ty_of(&mut self, t: &Type) -> Result<Ty, IrError> {
        Ok(match t {
            Type::Scalar(s) => Ty::Scalar(*s),
            Type::Unit => Ty::Unit,
            Type::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| self.ty_of(t)).collect::<Result<_, _>>()?),
            Type::Array(t, n) => Ty::Array(Box::new(self.ty_of(t)?), *n),
            Type::Seq(t) => Ty::Seq(Box::new(self.ty_of(t)?)),
            Type::Tensor(t) => Ty::Tensor(Box::new(self.ty_of(t)?)),
            Type::Record(name, fields) => Ty::Record(
                name.clone(),
                fields.iter().map(|(f, t)| Ok((f.clone(), self.ty_of(t)?))).collect::<Result<_, IrError>>()?,
            ),
            Type::Named(n) => match placeholder_var(t) {
                Some(v) => Ty::Var(v),
                None => match self.records.get(n).cloned() {
                    Some(fields) => self.ty_of(&Type::Record(n.clone(), fields))?,
                    None => return Err(err(format!("the record type `{n}` is not known here (no value of it is captured or returned)"))),
                },
            },
            Type::Infer => self.fresh(Kind::Any),
            Type::Fn(..) => return Err(err("function values remain after inlining".into())),
        })
    }

    fn resolve(&self, t: &Ty) -> Ty {
        match t {
            Ty::Var(v) => match &self.binding[*v] {
                Some(b) => self.resolve(b),
                None => t.clone(),
            },
            Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| self.resolve(t)).collect()),
            Ty::Array(t, n) => Ty::Array(Box::new(self.resolve(t)), *n),
            Ty::Seq(t) => Ty::Seq(Box::new(self.resolve(t))),
            Ty::Tensor(t) => Ty::Tensor(Box::new(self.resolve(t))),
            Ty::Record(n, fs) => Ty::Record(
                n.clone(),
                fs.iter()
                    .map(|(f, t)| (f.clone(), self.resolve(t)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn show(&self, t: &Ty) -> String {
        match self.to_type(t, false) {
            Ok(t) => t.to_string(),
            Err(_) => "_".into(),
        }
    }

    fn unify(&mut self, a: &Ty, b: &Ty) -> Result<(), String> {
        let (a, b) = (self.resolve(a), self.resolve(b));
        match (&a, &b) {
            (Ty::Var(x), Ty::Var(y)) if x == y => Ok(()),
            (Ty::Var(x), other) | (other, Ty::Var(x)) => {
                let kind = self.kinds[*x];
                match (kind, other) {
                    (Kind::Any, _) => {}
                    (Kind::Int, Ty::Scalar(s)) if !s.is_float() && *s != ScalarType::Bool => {}
                    (Kind::Float, Ty::Scalar(s)) if s.is_float() => {}
                    (k, Ty::Var(y)) => {
                        let other_kind = self.kinds[*y];
                        if other_kind != Kind::Any && other_kind != k {
                            return Err("an integer and a float are mixed".into());
                        }
                        self.kinds[*y] = k;
                    }
                    (k, other) => {
                        let what = if k == Kind::Int {
                            "an integer"
                        } else {
                            "a float"
                        };
                        return Err(format!("expected {what}, found {}", self.show(other)));
                    }
                }
                self.binding[*x] = Some(other.clone());
                Ok(())
            }
            (Ty::Scalar(x), Ty::Scalar(y)) if x == y => Ok(()),
            (Ty::Unit, Ty::Unit) => Ok(()),
            (Ty::Tuple(xs), Ty::Tuple(ys)) if xs.len() == ys.len() => {
                xs.iter().zip(ys).try_for_each(|(x, y)| self.unify(x, y))
            }
            (Ty::Array(x, n), Ty::Array(y, m)) if n == m || *n == 0 || *m == 0 => self.unify(x, y),
            (Ty::Seq(x), Ty::Seq(y)) | (Ty::Tensor(x), Ty::Tensor(y)) => self.unify(x, y),
            (Ty::Record(n, xs), Ty::Record(m, ys)) if n == m && xs.len() == ys.len() => xs
                .iter()
                .zip(ys)
                .try_for_each(|((_, x), (_, y))| self.unify(x, y)),
            _ => Err(format!("{} and {} differ", self.show(&a), self.show(&b))),
        }
    }

    fn expect(&mut self, got: &Ty, want: &Ty, what: impl Fn() -> String) -> Result<(), IrError> {
        self.unify(got, want)
            .map_err(|m| err(format!("{}: {m}", what())))
    }

    /// Pre-order: replaces each open type slot and unsuffixed literal by a numbered variable.
    fn number_slots(&mut self, e: &mut Expr) {
        match e {
            Expr::Lit(Lit::Int(_, None)) | Expr::Lit(Lit::Float(_, None)) => {
                let kind = if matches!(e, Expr::Lit(Lit::Int(..))) {
                    Kind::Int
                } else {
                    Kind::Float
                };
                let Ty::Var(n) = self.fresh(kind) else { return };
                let lit = std::mem::replace(e, Expr::Tuple(vec![]));
                *e = Expr::Cast(Box::new(lit), placeholder(n));
                return;
            }
            Expr::Lambda { params, .. } => {
                for (_, t) in params.iter_mut() {
                    self.number_type(t);
                }
            }
            Expr::Block { stmts, .. } => {
                for s in stmts.iter_mut() {
                    if let Stmt::Let { ty, .. } = s {
                        self.number_type(ty);
                    }
                }
            }
            _ => {}
        }
        e.for_each_child_mut(&mut |c| self.number_slots(c));
    }

    fn number_type(&mut self, t: &mut Type) {
        if *t == Type::Infer {
            let Ty::Var(n) = self.fresh(Kind::Any) else {
                return;
            };
            *t = placeholder(n);
        }
    }

    fn var(&self, name: &str) -> Result<Ty, IrError> {
        self.scope
            .get(name)
            .cloned()
            .ok_or_else(|| err(format!("`{name}` is not bound")))
    }

    fn bind(&mut self, p: &Pat, t: &Ty) -> Result<(), IrError> {
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

    fn infer(&mut self, e: &Expr) -> Result<Ty, IrError> {
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
            Expr::ArrayRepeat(v, n) => {
                let t = self.infer(v)?;
                let nt = self.infer(n)?;
                self.expect(&nt, &USIZE, || "an array length".into())?;
                let len = match &**n {
                    Expr::Cast(l, _) | Expr::Unary(_, l) if matches!(**l, Expr::Lit(Lit::Int(..))) => literal_usize(l),
                    other => literal_usize(other),
                };
                let len = len.ok_or_else(|| err("the length of `[x; n]` must be a literal in compiled code".into()))?;
                Ty::Array(Box::new(t), len)
            }
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
            Expr::Record { name, fields } => {
                let mut tys = Vec::new();
                for (f, x) in fields {
                    tys.push((f.clone(), self.infer(x)?));
                }
                match self.records.get(name).cloned() {
                    Some(decl) => {
                        let decl_ty = self.ty_of(&Type::Record(name.clone(), decl.clone()))?;
                        let Ty::Record(_, decl_fields) = &decl_ty else { unreachable!("from_type of a record is a record") };
                        for (f, t) in &tys {
                            let want = decl_fields.iter().find(|(n, _)| n == f).map(|(_, t)| t.clone());
                            let want = want.ok_or_else(|| err(format!("record `{name}` has no field `{f}`")))?;
                            self.expect(t, &want, || format!("the field `{name}.{f}`"))?;
                        }
                        decl_ty
                    }
                    None => Ty::Record(name.clone(), tys),
                }
            }
            Expr::Field(base, f) => {
                let bt = self.infer(base)?;
                match self.resolve(&bt) {
                    Ty::Tuple(ts) => f.parse::<usize>().ok().and_then(|i| ts.get(i).cloned()).ok_or_else(|| err(format!("a tuple has no field `{f}`")))?,
                    Ty::Record(n, fs) => fs.iter().find(|(x, _)| x == f).map(|(_, t)| t.clone()).ok_or_else(|| err(format!("record `{n}` has no field `{f}`")))?,
                    other => return Err(err(format!("`.{f}` of a value of type {}", self.show(&other)))),
                }
            }
            Expr::Index(base, i) => {
                let it = self.infer(i)?;
                self.expect(&it, &USIZE, || "an index".into())?;
                let bt = self.infer(base)?;
                match self.resolve(&bt) {
                    Ty::Array(t, _) => *t,
                    _ => self.elem_of(&bt, "indexing")?,
                }
            }
            Expr::Unary(op, x) => {
                let t = self.infer(x)?;
                if *op == UnOp::Not && matches!(self.resolve(&t), Ty::Var(_)) {
                    self.expect(&t, &BOOL, || "`!`".into())?;
                }
                t
            }
            Expr::Binary(op, a, b) => {
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
            }
            Expr::Cast(x, t) => {
                self.infer(x)?;
                self.ty_of(t)?
            }
            Expr::Par { op, args, .. } => self.par(*op, args)?,
            Expr::Method { recv, method, args } => self.method(recv, method, args)?,
            Expr::Assoc { ty, func, args } => self.assoc(ty, func, args)?,
            Expr::If { cond, then, els } => {
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
            }
            Expr::Match { scrutinee, arms } => {
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
            }
            Expr::Block { stmts, result } => {
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
            }
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
        Ok(match op {
            ParOp::Map => {
                let xs = self.infer(&args[1])?;
                let a = self.elem_of(&xs, name)?;
                Ty::Seq(Box::new(self.lambda(&args[0], &[a], name)?))
            }
            ParOp::Map2 => {
                let xs = self.infer(&args[1])?;
                let ys = self.infer(&args[2])?;
                let a = self.elem_of(&xs, name)?;
                let b = self.elem_of(&ys, name)?;
                Ty::Seq(Box::new(self.lambda(&args[0], &[a, b], name)?))
            }
            ParOp::Reduce | ParOp::Scan => {
                let ne = self.infer(&args[1])?;
                let xs = self.infer(&args[2])?;
                let a = self.elem_of(&xs, name)?;
                self.expect(&ne, &a, || format!("the neutral element of `{name}`"))?;
                let r = self.lambda(&args[0], &[a.clone(), a.clone()], name)?;
                self.expect(&r, &a, || format!("the operator of `{name}`"))?;
                if op == ParOp::Reduce {
                    a
                } else {
                    Ty::Seq(Box::new(a))
                }
            }
            ParOp::Flatten => {
                let xss = self.infer(&args[0])?;
                let row = self.elem_of(&xss, name)?;
                let a = self.elem_of(&row, name)?;
                Ty::Seq(Box::new(a))
            }
            ParOp::Create => {
                let n = self.infer(&args[0])?;
                self.expect(&n, &USIZE, || "the length of `create`".into())?;
                Ty::Seq(Box::new(self.lambda(&args[1], &[USIZE], name)?))
            }
            ParOp::ParallelLoop => {
                let n = self.infer(&args[0])?;
                self.expect(&n, &USIZE, || "the count of `parallel_loop`".into())?;
                self.lambda(&args[1], &[USIZE], name)?;
                Ty::Unit
            }
        })
    }

    fn method(&mut self, recv: &Expr, method: &str, args: &[Expr]) -> Result<Ty, IrError> {
        let rt = self.infer(recv)?;
        let ats = args
            .iter()
            .map(|a| self.infer(a))
            .collect::<Result<Vec<_>, _>>()?;
        let what = || format!("`.{method}()`");
        Ok(match method {
            "len" | "rank" => USIZE,
            "is_empty" | "is_nan" | "is_finite" | "is_infinite" => BOOL,
            "is_multiple_of" => {
                self.expect(&ats[0], &rt, what)?;
                BOOL
            }
            "count_ones" | "leading_zeros" | "trailing_zeros" => Ty::Scalar(ScalarType::U32),
            "sin_cos" => Ty::Tuple(vec![rt.clone(), rt]),
            "powi" => {
                self.expect(&ats[0], &Ty::Scalar(ScalarType::I32), what)?;
                rt
            }
            "pow" => {
                self.expect(&ats[0], &Ty::Scalar(ScalarType::U32), what)?;
                rt
            }
            "get" => {
                let elem = self.fresh(Kind::Any);
                self.expect(&rt, &Ty::Tensor(Box::new(elem.clone())), what)?;
                // A tensor index is `[usize; RANK]` (an array of any length).
                self.expect(&ats[0], &Ty::Array(Box::new(USIZE), 0), what)?;
                elem
            }
            "set" => {
                let elem = self.fresh(Kind::Any);
                self.expect(&rt, &Ty::Tensor(Box::new(elem.clone())), what)?;
                self.expect(&ats[0], &Ty::Array(Box::new(USIZE), 0), what)?;
                self.expect(&ats[1], &elem, what)?;
                Ty::Unit
            }
            "sub" => rt,
            "shape" => Ty::Seq(Box::new(USIZE)),
            "to_vec" => match self.resolve(&rt) {
                Ty::Tensor(t) => Ty::Seq(t),
                _ => rt,
            },
            _ => {
                // Number methods whose arguments and result have the receiver's type.
                for a in &ats {
                    self.expect(a, &rt, what)?;
                }
                rt
            }
        })
    }

    fn assoc(&mut self, ty: &str, func: &str, args: &[Expr]) -> Result<Ty, IrError> {
        let ats = args
            .iter()
            .map(|a| self.infer(a))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(match (ty, func) {
            ("Tensor", "zeros") => Ty::Tensor(Box::new(self.fresh(Kind::Any))),
            ("Tensor", "from_vec") => {
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

    fn to_type(&self, t: &Ty, default: bool) -> Result<Type, IrError> {
        Ok(match self.resolve(t) {
            Ty::Var(v) => match (self.kinds[v], default) {
                (Kind::Int, true) => Type::Scalar(ScalarType::I32),
                (Kind::Float, true) => Type::Scalar(ScalarType::F64),
                (_, true) => {
                    return Err(err(
                        "a type cannot be inferred (add a type annotation)".into()
                    ))
                }
                (_, false) => Type::Infer,
            },
            Ty::Scalar(s) => Type::Scalar(s),
            Ty::Unit => Type::Unit,
            Ty::Tuple(ts) => Type::Tuple(
                ts.iter()
                    .map(|t| self.to_type(t, default))
                    .collect::<Result<_, _>>()?,
            ),
            Ty::Array(t, n) => Type::Array(Box::new(self.to_type(&t, default)?), n),
            Ty::Seq(t) => Type::Seq(Box::new(self.to_type(&t, default)?)),
            Ty::Tensor(t) => Type::Tensor(Box::new(self.to_type(&t, default)?)),
            Ty::Record(n, fs) => Type::Record(
                n,
                fs.iter()
                    .map(|(f, t)| Ok((f.clone(), self.to_type(t, default)?)))
                    .collect::<Result<_, IrError>>()?,
            ),
        })
    }

    /// Writes an inferred type into a slot; declared types are written resolved too (a
    /// record named in a signature gets its fields).
    fn write_type(&self, t: &mut Type) -> Result<(), IrError> {
        let ty = match placeholder_var(t) {
            Some(v) => Ty::Var(v),
            None => self.declared(t)?,
        };
        *t = self.to_type(&ty, true)?;
        Ok(())
    }

    /// A declared type as an inference type, without new variables (`_` stays open).
    fn declared(&self, t: &Type) -> Result<Ty, IrError> {
        let mut c = Checker {
            binding: vec![],
            kinds: vec![],
            scope: HashMap::new(),
            records: self.records.clone(),
        };
        match t {
            Type::Infer => Err(err(
                "a type cannot be inferred (add a type annotation)".into()
            )),
            t => c.ty_of(t),
        }
    }

    fn write_back(&self, e: &mut Expr) -> Result<(), IrError> {
        match e {
            Expr::Cast(inner, t) if placeholder_var(t).is_some() => {
                let resolved = self.to_type(&Ty::Var(placeholder_var(t).unwrap_or(0)), true)?;
                let Type::Scalar(s) = resolved else {
                    return Err(err(format!("a literal cannot have type {resolved}")));
                };
                let lit = match &**inner {
                    Expr::Lit(Lit::Int(v, _)) if s.is_float() => Lit::Float(*v as f64, Some(s)),
                    Expr::Lit(Lit::Int(v, _)) => Lit::Int(*v, Some(s)),
                    Expr::Lit(Lit::Float(v, _)) => Lit::Float(*v, Some(s)),
                    other => return Err(err(format!("unexpected literal {other}"))),
                };
                *e = Expr::Lit(lit);
                return Ok(());
            }
            Expr::Lambda { params, .. } => {
                for (_, t) in params.iter_mut() {
                    self.write_type(t)?;
                }
            }
            Expr::Block { stmts, .. } => {
                for s in stmts.iter_mut() {
                    if let Stmt::Let { ty, .. } = s {
                        self.write_type(ty)?;
                    }
                }
            }
            _ => {}
        }
        let mut result = Ok(());
        e.for_each_child_mut(&mut |c| {
            if result.is_ok() {
                result = self.write_back(c);
            }
        });
        result
    }
}

fn literal_usize(e: &Expr) -> Option<usize> {
    match e {
        Expr::Lit(Lit::Int(v, _)) => usize::try_from(*v).ok(),
        Expr::Cast(inner, _) => literal_usize(inner),
        _ => None,
    }
}

/// The type of a standard constant (`f32::MAX`, `std::f64::consts::PI`, `i64::MIN`).
pub fn const_type(path: &str) -> Option<ScalarType> {
    let segs: Vec<&str> = path.split("::").collect();
    segs.iter()
        .rev()
        .skip(1)
        .find_map(|s| ScalarType::from_name(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Loc, MatchArm};

    fn f32s() -> Type {
        Type::Seq(Box::new(Type::Scalar(ScalarType::F32)))
    }

    fn lam(params: &[&str], body: Expr) -> Expr {
        Expr::Lambda {
            params: params.iter().map(|p| (Pat::bind(p), Type::Infer)).collect(),
            body: Box::new(body),
        }
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    #[test]
    fn literals_take_the_types_of_what_they_meet() {
        // reduce(|a, b| a + b, 0.0, map(|x| x * 2.0, xs)) over f32
        let body = Expr::par(
            ParOp::Reduce,
            vec![
                lam(&["a", "b"], bin(BinOp::Add, Expr::var("a"), Expr::var("b"))),
                Expr::Lit(Lit::Float(0.0, None)),
                Expr::par(
                    ParOp::Map,
                    vec![
                        lam(
                            &["x"],
                            bin(BinOp::Mul, Expr::var("x"), Expr::Lit(Lit::Float(2.0, None))),
                        ),
                        Expr::var("xs"),
                    ],
                ),
            ],
        );
        let typed = typecheck(
            &body,
            &[("xs".into(), f32s())],
            &Type::Scalar(ScalarType::F32),
        )
        .unwrap();
        assert_eq!(
            typed.to_string(),
            "(reduce (lambda (a: f32 b: f32) (+ a b)) 0.0f32 (map (lambda (x: f32) (* x 2.0f32)) xs))"
        );
    }

    #[test]
    fn lets_learn_their_types_from_later_uses() {
        // { let mut acc = 0.0; for i in 0..n { acc = acc + xs[i]; } acc } with xs: [f32], n: usize
        let body = Expr::Block {
            stmts: vec![
                Stmt::Let {
                    pat: Pat::Bind {
                        name: "acc".into(),
                        mutable: true,
                    },
                    ty: Type::Infer,
                    init: Some(Expr::Lit(Lit::Float(0.0, None))),
                },
                Stmt::Expr(Expr::For {
                    var: "i".into(),
                    lo: Box::new(Expr::int(0)),
                    hi: Box::new(Expr::var("n")),
                    body: Box::new(Expr::Assign {
                        target: Box::new(Expr::var("acc")),
                        value: Box::new(bin(
                            BinOp::Add,
                            Expr::var("acc"),
                            Expr::Index(Box::new(Expr::var("xs")), Box::new(Expr::var("i"))),
                        )),
                    }),
                }),
            ],
            result: Some(Box::new(Expr::var("acc"))),
        };
        let caps = [
            ("xs".into(), f32s()),
            ("n".into(), Type::Scalar(ScalarType::Usize)),
        ];
        let typed = typecheck(&body, &caps, &Type::Scalar(ScalarType::F32)).unwrap();
        assert_eq!(
            typed.to_string(),
            "(do (let mut acc: f32 0.0f32) (for i 0usize n (set! acc (+ acc (index xs i)))) acc)"
        );
    }

    #[test]
    fn unconstrained_literals_default_as_in_rust_and_records_are_known() {
        let point = Type::Record(
            "P".into(),
            vec![
                ("x".into(), Type::Scalar(ScalarType::F64)),
                ("y".into(), Type::Scalar(ScalarType::F64)),
            ],
        );
        let body = Expr::Match {
            scrutinee: Box::new(Expr::var("p")),
            arms: vec![MatchArm {
                pat: Pat::Record {
                    name: "P".into(),
                    fields: vec![("x".into(), Pat::bind("x"))],
                    rest: true,
                },
                guard: None,
                body: Expr::Tuple(vec![
                    Expr::var("x"),
                    Expr::int(7),
                    Expr::Lit(Lit::Float(1.5, None)),
                ]),
            }],
        };
        let want = Type::Tuple(vec![
            Type::Scalar(ScalarType::F64),
            Type::Scalar(ScalarType::I32),
            Type::Scalar(ScalarType::F64),
        ]);
        let typed = typecheck(&body, &[("p".into(), point)], &want).unwrap();
        assert_eq!(
            typed.to_string(),
            "(match p (P { x: x, .. } => (tuple x 7i32 1.5f64)))"
        );
    }

    #[test]
    fn mismatches_are_errors_that_say_where() {
        let body = Expr::par(
            ParOp::Map,
            vec![
                lam(
                    &["x"],
                    bin(BinOp::Add, Expr::var("x"), Expr::Lit(Lit::Bool(true))),
                ),
                Expr::var("xs"),
            ],
        );
        let e = typecheck(&body, &[("xs".into(), f32s())], &f32s()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "type error in accelerated code: the operands of `+`: f32 and bool differ"
        );
        let body = Expr::Par {
            op: ParOp::Create,
            args: vec![Expr::var("xs"), lam(&["i"], Expr::var("i"))],
            loc: Loc::default(),
        };
        let e = typecheck(&body, &[("xs".into(), f32s())], &f32s()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "type error in accelerated code: the length of `create`: [f32] and usize differ"
        );
    }
}
