//! Type inference for an inlined site: unification, rooted in the types of the captured
//! values (which the runtime knows from their Rust types) and of the result. The inferred
//! types are written back into the expression: every `let` and lambda parameter gets its
//! type, every literal its suffix (unconstrained integers default to `i32` and floats to
//! `f64`, as in Rust). Afterwards the type of any expression follows from its parts.

use super::IrError;
use crate::expr::{Expr, Lit, Pat, Stmt};
use crate::types::{Records, ScalarType, Type};
use std::collections::HashMap;

mod ranges;
mod rules;

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
    typecheck_naming(body, captures, result, &[])
}

/// Like [`typecheck`], where the body may also name the records among `records` (types
/// holding `Type::Record`s, such as a program's [`records`](crate::Program::records)).
pub fn typecheck_naming(
    body: &Expr,
    captures: &[(String, Type)],
    result: &Type,
    records: &[Type],
) -> Result<Expr, IrError> {
    let mut tc = Checker::default();
    for t in captures
        .iter()
        .map(|(_, t)| t)
        .chain([result])
        .chain(records)
    {
        t.learn_records(&mut tc.records);
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

/// The type of an expression of a typed program (every binder annotated, every literal
/// suffixed), by the same rules as inference: `vars` gives the types of its free
/// variables, `records` the fields of the records it names.
///
/// ```
/// use accel_ir::passes::typecheck::type_of;
/// use accel_ir::{Expr, ScalarType, Type};
/// let x = Expr::Method { recv: Box::new(Expr::var("x")), method: "sin_cos".into(), args: vec![] };
/// let e = Expr::Field(Box::new(x), "0".into());
/// let f32_ = Type::Scalar(ScalarType::F32);
/// let t = type_of(&e, &|v| (v == "x").then(|| f32_.clone()), &Default::default()).unwrap();
/// assert_eq!(t, f32_);
/// ```
pub fn type_of(e: &Expr, vars: VarTypes<'_>, records: &Records) -> Result<Type, IrError> {
    let mut tc = Checker {
        outer: Some(vars),
        records: records.clone(),
        ..Checker::default()
    };
    let t = tc.infer(e)?;
    tc.to_type(&t, false).and_then(known)
}

/// Binds the names of pattern `p`, matched against a value of type `t`, in `scope`, by
/// the same rule as inference.
pub fn bind_pattern(
    p: &Pat,
    t: &Type,
    scope: &mut HashMap<String, Type>,
    records: &Records,
) -> Result<(), IrError> {
    let mut tc = Checker {
        records: records.clone(),
        ..Checker::default()
    };
    let ty = tc.ty_of(t)?;
    tc.bind(p, &ty)?;
    for name in p.bound_names() {
        if let Some(bound) = tc.scope.get(&name) {
            let bound = tc.to_type(bound, false).and_then(known)?;
            scope.insert(name, bound);
        }
    }
    Ok(())
}

/// `t` when inference left nothing in it open.
fn known(t: Type) -> Result<Type, IrError> {
    fn open(t: &Type) -> bool {
        match t {
            Type::Infer => true,
            Type::Tuple(ts) => ts.iter().any(open),
            Type::Array(t, _) | Type::Seq(t) | Type::Tensor(t) => open(t),
            Type::Record(_, fs) => fs.iter().any(|(_, t)| open(t)),
            _ => false,
        }
    }
    if open(&t) {
        return Err(err(format!("the type {t} is not fully known")));
    }
    Ok(t)
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

/// The types of the variables a typed expression uses, by name.
pub type VarTypes<'a> = &'a dyn Fn(&str) -> Option<Type>;

#[derive(Default)]
struct Checker<'a> {
    binding: Vec<Option<Ty>>,
    kinds: Vec<Kind>,
    scope: HashMap<String, Ty>,
    records: Records,
    /// The types of variables bound outside the expression being typed (typed code).
    outer: Option<VarTypes<'a>>,
    /// How many names the rewriting of ranges has bound (see [`ranges`]).
    range_names: std::cell::Cell<usize>,
}

const USIZE: Ty = Ty::Scalar(ScalarType::Usize);
const BOOL: Ty = Ty::Scalar(ScalarType::Bool);

impl Checker<'_> {
    fn fresh(&mut self, kind: Kind) -> Ty {
        self.binding.push(None);
        self.kinds.push(kind);
        Ty::Var(self.binding.len() - 1)
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
                    None => return Err(err(format!("the record type `{n}` is not known here (no captured or returned value holds one, and the code names no record of that name)"))),
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
            // A number literal of whatever type the context needs (`1 as _`, `-0.0 as _`,
            // which the front end writes for an iterator's `product` and `sum`): a slot
            // like an unsuffixed literal's, but of any number type.
            Expr::Cast(inner, t)
                if *t == Type::Infer
                    && matches!(**inner, Expr::Lit(Lit::Int(_, None) | Lit::Float(_, None))) =>
            {
                let Ty::Var(n) = self.fresh(Kind::Any) else {
                    return;
                };
                *t = placeholder(n);
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

    fn var(&mut self, name: &str) -> Result<Ty, IrError> {
        if let Some(t) = self.scope.get(name) {
            return Ok(t.clone());
        }
        match self.outer.and_then(|outer| outer(name)) {
            Some(t) => self.ty_of(&t),
            None => Err(err(format!("`{name}` is not bound"))),
        }
    }
}

impl Checker<'_> {
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
            records: self.records.clone(),
            ..Checker::default()
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
                    Expr::Lit(Lit::Float(v, _)) if s.is_float() => Lit::Float(*v, Some(s)),
                    // `-0.0 as _` of an integer type: 0.
                    Expr::Lit(Lit::Float(v, _)) => Lit::Int(*v as i64 as u64, Some(s)),
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
        result?;
        // A range's methods, their operands typed now.
        let mut names = self.range_names.get();
        ranges::desugar(e, &mut names)?;
        ranges::hoist_count(e);
        self.range_names.set(names);
        Ok(())
    }
}

fn literal_usize(e: &Expr) -> Option<usize> {
    match e {
        Expr::Cast(inner, _) => literal_usize(inner),
        e => e.literal_usize(),
    }
}

pub use crate::consts::const_type;

#[cfg(test)]
mod tests;
