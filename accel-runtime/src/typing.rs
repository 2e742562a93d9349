//! Typing helpers shared by the compiled backends: the type of an annotated expression,
//! the values of Rust's named constants, and the primitive reduction operators.

use accel_ir::passes::typecheck::const_type;
use accel_ir::{BinOp, Expr, Lit, ParOp, Pat, ScalarType, Stmt, Type};
use std::collections::HashMap;

type R<T> = Result<T, String>;

fn unsupported(what: impl std::fmt::Display) -> String {
    format!("{what} is not supported by the compiled backends yet")
}

/// The records (name and fields) that appear in `t`, added to `out`.
pub fn learn_records(t: &Type, out: &mut HashMap<String, Vec<(String, Type)>>) {
    match t {
        Type::Record(n, fs) => {
            out.insert(n.clone(), fs.clone());
            fs.iter().for_each(|(_, t)| learn_records(t, out));
        }
        Type::Tuple(ts) => ts.iter().for_each(|t| learn_records(t, out)),
        Type::Array(t, _) | Type::Seq(t) | Type::Tensor(t) => learn_records(t, out),
        _ => {}
    }
}

/// The parts of a tuple, record or array type, in order (none for other types).
pub fn parts(t: &Type) -> Vec<Type> {
    match t {
        Type::Tuple(ts) => ts.clone(),
        Type::Record(_, fs) => fs.iter().map(|(_, t)| t.clone()).collect(),
        Type::Array(e, n) => vec![(**e).clone(); *n],
        _ => vec![],
    }
}

/// The type of field `f` of `t` and its offset in `t`'s flat list of words, where a
/// value of type `u` has `word_count(u)` words (each backend has its own word type).
pub fn field_offset(t: &Type, f: &str, word_count: impl Fn(&Type) -> R<usize>) -> R<(Type, usize)> {
    let named: Vec<(String, Type)> = match t {
        Type::Record(_, fs) => fs.clone(),
        Type::Tuple(_) | Type::Array(..) => parts(t)
            .into_iter()
            .enumerate()
            .map(|(k, t)| (k.to_string(), t))
            .collect(),
        t => return Err(format!("`.{f}` of a value of type {t}")),
    };
    let mut off = 0;
    for (name, ft) in named {
        if name == f {
            return Ok((ft, off));
        }
        off += word_count(&ft)?;
    }
    Err(format!("no field `{f}` in {t}"))
}

/// The value of an integer literal usable as a length.
pub fn literal(e: &Expr) -> Option<usize> {
    match e {
        Expr::Lit(Lit::Int(v, _)) => usize::try_from(*v).ok(),
        _ => None,
    }
}

/// The type of field `f` (a record field, or a tuple or array element by position) of `t`.
pub fn field_type(t: &Type, f: &str) -> R<Type> {
    field_offset(t, f, |_| Ok(0)).map(|(t, _)| t)
}

/// The value of a named constant (`f32::MAX`, `std::f64::consts::PI`) of scalar type `s`.
pub fn constant_lit(c: &str, s: ScalarType) -> Option<Lit> {
    let name = c.rsplit("::").next().unwrap_or(c);
    let f = |x: f64| Some(Lit::Float(x, Some(s)));
    match (s, name) {
        (ScalarType::F32, "MAX") => f(f32::MAX as f64),
        (ScalarType::F32, "MIN") => f(f32::MIN as f64),
        (ScalarType::F32, "EPSILON") => f(f32::EPSILON as f64),
        (ScalarType::F32, "MIN_POSITIVE") => f(f32::MIN_POSITIVE as f64),
        (ScalarType::F64, "MAX") => f(f64::MAX),
        (ScalarType::F64, "MIN") => f(f64::MIN),
        (ScalarType::F64, "EPSILON") => f(f64::EPSILON),
        (ScalarType::F64, "MIN_POSITIVE") => f(f64::MIN_POSITIVE),
        (_, "INFINITY") => f(f64::INFINITY),
        (_, "NEG_INFINITY") => f(f64::NEG_INFINITY),
        (_, "NAN") => f(f64::NAN),
        (_, "PI") => f(std::f64::consts::PI),
        (_, "E") => f(std::f64::consts::E),
        (_, "TAU") => f(std::f64::consts::TAU),
        (_, "SQRT_2") => f(std::f64::consts::SQRT_2),
        (_, "LN_2") => f(std::f64::consts::LN_2),
        (_, "LN_10") => f(std::f64::consts::LN_10),
        (_, "FRAC_PI_2") => f(std::f64::consts::FRAC_PI_2),
        (_, "FRAC_1_SQRT_2") => f(std::f64::consts::FRAC_1_SQRT_2),
        (ScalarType::I32, "MAX") => Some(Lit::Int(i32::MAX as u64, Some(s))),
        (ScalarType::I32, "MIN") => Some(Lit::Int(i32::MIN as i64 as u64, Some(s))),
        (ScalarType::I64, "MAX") => Some(Lit::Int(i64::MAX as u64, Some(s))),
        (ScalarType::I64, "MIN") => Some(Lit::Int(i64::MIN as u64, Some(s))),
        (ScalarType::U32, "MAX") => Some(Lit::Int(u32::MAX as u64, Some(s))),
        (ScalarType::U64 | ScalarType::Usize, "MAX") => Some(Lit::Int(u64::MAX, Some(s))),
        (ScalarType::U32 | ScalarType::U64 | ScalarType::Usize, "MIN") => {
            Some(Lit::Int(0, Some(s)))
        }
        _ => None,
    }
}

/// A commutative primitive reduction operator.
#[derive(Clone, Copy)]
pub enum Prim {
    Add,
    Mul,
    Min,
    Max,
}

/// The primitive a reduction operator closure is, if any: `|a, b| a + b`, `a * b`,
/// `a.min(b)`, `a.max(b)` (either operand order).
pub fn primitive(op: &Expr) -> Option<Prim> {
    let Expr::Lambda { params, body } = op else {
        return None;
    };
    let (Some((Pat::Bind { name: a, .. }, _)), Some((Pat::Bind { name: b, .. }, _))) =
        (params.first(), params.get(1))
    else {
        return None;
    };
    let pair = |x: &Expr, y: &Expr| match (x, y) {
        (Expr::Var(x), Expr::Var(y)) => (x == a && y == b) || (x == b && y == a),
        _ => false,
    };
    match &**body {
        Expr::Binary(BinOp::Add, x, y) if pair(x, y) => Some(Prim::Add),
        Expr::Binary(BinOp::Mul, x, y) if pair(x, y) => Some(Prim::Mul),
        Expr::Method { recv, method, args } if args.len() == 1 && pair(recv, &args[0]) => {
            match method.as_str() {
                "min" => Some(Prim::Min),
                "max" => Some(Prim::Max),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The type of an expression whose binders are annotated.
pub fn type_of(
    e: &Expr,
    scope: &mut HashMap<String, Type>,
    records: &HashMap<String, Vec<(String, Type)>>,
) -> R<Type> {
    let scalar = |s| Type::Scalar(s);
    Ok(match e {
        Expr::Lit(Lit::Bool(_)) => scalar(ScalarType::Bool),
        Expr::Lit(Lit::Int(_, Some(s)) | Lit::Float(_, Some(s))) => scalar(*s),
        Expr::Lit(_) => return Err("an untyped literal".into()),
        Expr::Var(v) => scope
            .get(v)
            .cloned()
            .ok_or_else(|| format!("`{v}` is not bound"))?,
        Expr::Const(c) => {
            scalar(const_type(c).ok_or_else(|| unsupported(format!("the constant `{c}`")))?)
        }
        Expr::Tuple(es) if es.is_empty() => Type::Unit,
        Expr::Tuple(es) => Type::Tuple(
            es.iter()
                .map(|x| type_of(x, scope, records))
                .collect::<R<_>>()?,
        ),
        Expr::Array(es) => {
            let t = match es.first() {
                Some(x) => type_of(x, scope, records)?,
                None => Type::Unit,
            };
            Type::Array(Box::new(t), es.len())
        }
        Expr::ArrayRepeat(x, n) => Type::Array(
            Box::new(type_of(x, scope, records)?),
            literal(n).unwrap_or(0),
        ),
        Expr::Seq(es) => Type::Seq(Box::new(match es.first() {
            Some(x) => type_of(x, scope, records)?,
            None => Type::Unit,
        })),
        Expr::SeqRepeat(x, _) => Type::Seq(Box::new(type_of(x, scope, records)?)),
        Expr::Slice { seq, .. } => type_of(seq, scope, records)?,
        Expr::Record { name, fields } => match records.get(name) {
            Some(decl) => Type::Record(name.clone(), decl.clone()),
            None => Type::Record(
                name.clone(),
                fields
                    .iter()
                    .map(|(f, x)| Ok((f.clone(), type_of(x, scope, records)?)))
                    .collect::<R<_>>()?,
            ),
        },
        Expr::Field(b, f) => field_type(&type_of(b, scope, records)?, f)?,
        Expr::Index(b, _) => match type_of(b, scope, records)? {
            Type::Seq(t) | Type::Array(t, _) => *t,
            t => return Err(format!("indexing {t}")),
        },
        Expr::Unary(_, x) => type_of(x, scope, records)?,
        Expr::Binary(op, a, _) => match op {
            BinOp::Eq
            | BinOp::Ne
            | BinOp::Lt
            | BinOp::Le
            | BinOp::Gt
            | BinOp::Ge
            | BinOp::And
            | BinOp::Or => scalar(ScalarType::Bool),
            _ => type_of(a, scope, records)?,
        },
        Expr::Cast(_, t) => t.clone(),
        Expr::Method { recv, method, .. } => {
            let rt = type_of(recv, scope, records)?;
            match method.as_str() {
                "len" | "rank" => scalar(ScalarType::Usize),
                "is_empty" | "is_nan" | "is_finite" | "is_infinite" | "is_multiple_of" => {
                    scalar(ScalarType::Bool)
                }
                "count_ones" | "leading_zeros" | "trailing_zeros" => scalar(ScalarType::U32),
                "get" => match rt {
                    Type::Tensor(t) => *t,
                    t => return Err(format!("`.get()` on {t}")),
                },
                "set" => Type::Unit,
                "shape" => Type::Seq(Box::new(scalar(ScalarType::Usize))),
                "to_vec" => match rt {
                    Type::Tensor(t) => Type::Seq(t),
                    t => t,
                },
                _ => rt,
            }
        }
        Expr::Assoc { ty, args, .. } => match ScalarType::from_name(ty) {
            Some(s) => scalar(s),
            None => match args.first() {
                Some(a) => type_of(a, scope, records)?,
                None => Type::Unit,
            },
        },
        Expr::If {
            then, els: Some(_), ..
        } => type_of(then, scope, records)?,
        Expr::If { .. } | Expr::Assign { .. } | Expr::For { .. } | Expr::While { .. } => Type::Unit,
        Expr::Match { scrutinee, arms } => {
            let st = type_of(scrutinee, scope, records)?;
            match arms.first() {
                Some(arm) => {
                    bind_types(&arm.pat, &st, scope)?;
                    type_of(&arm.body, scope, records)?
                }
                None => Type::Unit,
            }
        }
        Expr::Block { stmts, result } => {
            for s in stmts {
                if let Stmt::Let { pat, ty, init } = s {
                    let t = match (ty, init) {
                        (Type::Infer, Some(x)) => type_of(x, scope, records)?,
                        (t, _) => t.clone(),
                    };
                    bind_types(pat, &t, scope)?;
                }
            }
            match result {
                Some(r) => type_of(r, scope, records)?,
                None => Type::Unit,
            }
        }
        Expr::Par { op, args, .. } => {
            let lambda_result =
                |f: &Expr, ps: Vec<Type>, scope: &mut HashMap<String, Type>| -> R<Type> {
                    let Expr::Lambda { params, body } = f else {
                        return Err("a function argument that is not a closure".into());
                    };
                    for ((p, _), t) in params.iter().zip(ps) {
                        bind_types(p, &t, scope)?;
                    }
                    type_of(body, scope, records)
                };
            let elem = |x: &Expr, scope: &mut HashMap<String, Type>| -> R<Type> {
                match type_of(x, scope, records)? {
                    Type::Seq(t) | Type::Array(t, _) => Ok(*t),
                    t => Err(format!("a sequence was expected, found {t}")),
                }
            };
            match op {
                ParOp::Map => {
                    let a = elem(&args[1], scope)?;
                    Type::Seq(Box::new(lambda_result(&args[0], vec![a], scope)?))
                }
                ParOp::Map2 => {
                    let a = elem(&args[1], scope)?;
                    let b = elem(&args[2], scope)?;
                    Type::Seq(Box::new(lambda_result(&args[0], vec![a, b], scope)?))
                }
                ParOp::Create => Type::Seq(Box::new(lambda_result(
                    &args[1],
                    vec![scalar(ScalarType::Usize)],
                    scope,
                )?)),
                ParOp::Reduce => type_of(&args[1], scope, records)?,
                ParOp::Scan => Type::Seq(Box::new(type_of(&args[1], scope, records)?)),
                ParOp::Flatten => match type_of(&args[0], scope, records)? {
                    Type::Seq(row) => *row,
                    t => return Err(format!("flatten of {t}")),
                },
                ParOp::ParallelLoop => Type::Unit,
            }
        }
        Expr::Lambda { .. }
        | Expr::Call { .. }
        | Expr::FnRef(_)
        | Expr::Apply { .. }
        | Expr::Closure { .. } => return Err("a function value in compiled code".into()),
    })
}

pub fn bind_types(p: &Pat, t: &Type, scope: &mut HashMap<String, Type>) -> R<()> {
    match p {
        Pat::Bind { name, .. } => {
            scope.insert(name.clone(), t.clone());
        }
        Pat::Tuple(ps) => {
            for (k, q) in ps.iter().enumerate() {
                bind_types(q, &field_type(t, &k.to_string())?, scope)?;
            }
        }
        Pat::Record { fields, .. } => {
            for (f, q) in fields {
                bind_types(q, &field_type(t, f)?, scope)?;
            }
        }
        Pat::Or(ps) => {
            if let Some(q) = ps.first() {
                bind_types(q, t, scope)?;
            }
        }
        _ => {}
    }
    Ok(())
}
