//! The IR printer: a compact S-expression form that tests compare as text.
//!
//! `(reduce add 0 v)`, `(map (lambda (x) (* c x)) xs)`, `(do (let x 1) (+ x 2))`.

use crate::expr::{Expr, Lit, Pat, Stmt, UnOp};
use crate::program::{FnDef, Program, SiteDef};
use crate::types::Type;
use std::fmt::{self, Display, Formatter, Write};

impl Display for Lit {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Lit::Int(v, suffix) => {
                write!(f, "{v}")?;
                if let Some(s) = suffix {
                    f.write_str(s.name())?;
                }
                Ok(())
            }
            Lit::Float(v, suffix) => {
                write!(f, "{v:?}")?;
                if let Some(s) = suffix {
                    f.write_str(s.name())?;
                }
                Ok(())
            }
            Lit::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl Display for Pat {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Pat::Wild => f.write_str("_"),
            Pat::Bind { name, mutable } => {
                if *mutable {
                    f.write_str("mut ")?;
                }
                f.write_str(name)
            }
            Pat::Tuple(ps) => {
                f.write_str("(")?;
                sep(f, ps, ", ")?;
                if ps.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            Pat::Record { name, fields, rest } => {
                write!(f, "{name} {{")?;
                for (i, (field, p)) in fields.iter().enumerate() {
                    f.write_str(if i == 0 { " " } else { ", " })?;
                    write!(f, "{field}: {p}")?;
                }
                if *rest {
                    f.write_str(if fields.is_empty() { " .." } else { ", .." })?;
                }
                f.write_str(" }")
            }
            Pat::Lit { negative, lit } => {
                if *negative {
                    f.write_str("-")?;
                }
                write!(f, "{lit}")
            }
            Pat::Const(name) => f.write_str(name),
            Pat::Range { lo, hi, inclusive } => {
                write!(f, "{lo}{}{hi}", if *inclusive { "..=" } else { ".." })
            }
            Pat::Or(ps) => sep(f, ps, " | "),
        }
    }
}

fn sep<T: Display>(f: &mut Formatter<'_>, items: &[T], separator: &str) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(separator)?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

fn list(f: &mut Formatter<'_>, head: &str, items: &[Expr]) -> fmt::Result {
    write!(f, "({head}")?;
    for e in items {
        write!(f, " {e}")?;
    }
    f.write_str(")")
}

fn typed(p: &Pat, t: &Type) -> String {
    match t {
        Type::Infer => p.to_string(),
        t => format!("{p}: {t}"),
    }
}

impl Display for Stmt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Stmt::Let {
                pat,
                ty,
                init: Some(e),
            } => write!(f, "(let {} {e})", typed(pat, ty)),
            Stmt::Let {
                pat,
                ty,
                init: None,
            } => write!(f, "(let {})", typed(pat, ty)),
            Stmt::Expr(e) => write!(f, "{e}"),
        }
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Lit(l) => write!(f, "{l}"),
            Expr::Var(n) | Expr::FnRef(n) | Expr::Const(n) => f.write_str(n),
            Expr::Tuple(es) if es.is_empty() => f.write_str("()"),
            Expr::Tuple(es) => list(f, "tuple", es),
            Expr::Array(es) => {
                f.write_str("[")?;
                sep(f, es, " ")?;
                f.write_str("]")
            }
            Expr::ArrayRepeat(v, n) => write!(f, "[{v}; {n}]"),
            Expr::Seq(es) => list(f, "seq", es),
            Expr::SeqRepeat(v, n) => write!(f, "(seq-repeat {v} {n})"),
            Expr::Slice { seq, lo, hi } => write!(f, "(slice {seq} {lo} {hi})"),
            Expr::Record { name, fields } => {
                write!(f, "({name}")?;
                for (n, e) in fields {
                    write!(f, " {n}: {e}")?;
                }
                f.write_str(")")
            }
            Expr::Field(e, name) => write!(f, "{e}.{name}"),
            Expr::Index(a, i) => write!(f, "(index {a} {i})"),
            Expr::Unary(UnOp::Neg, e) => write!(f, "(neg {e})"),
            Expr::Unary(UnOp::Not, e) => write!(f, "(not {e})"),
            Expr::Binary(op, a, b) => write!(f, "({} {a} {b})", op.symbol()),
            Expr::Cast(e, t) => write!(f, "(as {e} {t})"),
            Expr::Call { func, args, .. } => list(f, func, args),
            Expr::Par { op, args, .. } => list(f, op.name(), args),
            Expr::Apply { func, args } => {
                write!(f, "(apply {func}")?;
                for a in args {
                    write!(f, " {a}")?;
                }
                f.write_str(")")
            }
            Expr::Method { recv, method, args } => {
                write!(f, "(.{method} {recv}")?;
                for a in args {
                    write!(f, " {a}")?;
                }
                f.write_str(")")
            }
            Expr::Assoc { ty, func, args } => list(f, &format!("{ty}::{func}"), args),
            Expr::Lambda { params, body } => {
                f.write_str("(lambda (")?;
                for (i, (p, t)) in params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    f.write_str(&typed(p, t))?;
                }
                write!(f, ") {body})")
            }
            Expr::Closure { func, env } => list(f, &format!("closure {func}"), env),
            Expr::If {
                cond,
                then,
                els: Some(e),
            } => write!(f, "(if {cond} {then} {e})"),
            Expr::If {
                cond,
                then,
                els: None,
            } => write!(f, "(if {cond} {then})"),
            Expr::Match { scrutinee, arms } => {
                write!(f, "(match {scrutinee}")?;
                for arm in arms {
                    write!(f, " ({}", arm.pat)?;
                    if let Some(g) = &arm.guard {
                        write!(f, " if {g}")?;
                    }
                    write!(f, " => {})", arm.body)?;
                }
                f.write_str(")")
            }
            Expr::Block { stmts, result } => {
                f.write_str("(do")?;
                for s in stmts {
                    write!(f, " {s}")?;
                }
                if let Some(r) = result {
                    write!(f, " {r}")?;
                }
                f.write_str(")")
            }
            Expr::Assign { target, value } => write!(f, "(set! {target} {value})"),
            Expr::For { var, lo, hi, body } => write!(f, "(for {var} {lo} {hi} {body})"),
            Expr::While { cond, body } => write!(f, "(while {cond} {body})"),
        }
    }
}

impl Display for FnDef {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "(fn {} (", self.name)?;
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(&typed(&p.pat, &p.ty))?;
        }
        write!(f, ") -> {} {})", self.ret, self.body)
    }
}

impl Display for SiteDef {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "(site {}:{} (", self.file, self.loc.line)?;
        sep(f, &self.captures, " ")?;
        write!(f, ") {})", self.body)
    }
}

impl Display for Program {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        for func in &self.functions {
            writeln!(out, "{func}")?;
        }
        write!(out, "{}", self.site)?;
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use crate::expr::*;
    use crate::types::{ScalarType, Type};

    #[test]
    fn prints_every_form() {
        let lam = Expr::Lambda {
            params: vec![(Pat::bind("x"), Type::Scalar(ScalarType::F32))],
            body: Box::new(Expr::Binary(
                BinOp::Mul,
                Box::new(Expr::var("c")),
                Box::new(Expr::var("x")),
            )),
        };
        let e = Expr::Block {
            stmts: vec![
                Stmt::Let {
                    pat: Pat::Tuple(vec![Pat::bind("a"), Pat::Wild]),
                    ty: Type::Infer,
                    init: Some(Expr::Tuple(vec![
                        Expr::int(1),
                        Expr::Lit(Lit::Float(2.0, Some(ScalarType::F64))),
                    ])),
                },
                Stmt::Expr(Expr::Assign {
                    target: Box::new(Expr::var("a")),
                    value: Box::new(Expr::int(3)),
                }),
            ],
            result: Some(Box::new(Expr::par(ParOp::Map, vec![lam, Expr::var("xs")]))),
        };
        assert_eq!(
            e.to_string(),
            "(do (let (a, _) (tuple 1 2.0f64)) (set! a 3) (map (lambda (x: f32) (* c x)) xs))"
        );
        let m = Expr::Match {
            scrutinee: Box::new(Expr::var("n")),
            arms: vec![
                MatchArm {
                    pat: Pat::Lit {
                        negative: true,
                        lit: Lit::Int(1, None),
                    },
                    guard: None,
                    body: Expr::int(0),
                },
                MatchArm {
                    pat: Pat::Wild,
                    guard: Some(Expr::Lit(Lit::Bool(true))),
                    body: Expr::int(1),
                },
            ],
        };
        assert_eq!(m.to_string(), "(match n (-1 => 0) (_ if true => 1))");
        let t = Expr::Method {
            recv: Box::new(Expr::var("t")),
            method: "set".into(),
            args: vec![Expr::Array(vec![Expr::int(0)]), Expr::int(7)],
        };
        assert_eq!(t.to_string(), "(.set t [0] 7)");
    }
}

#[cfg(test)]
mod serde_tests {
    use crate::expr::*;
    use crate::program::{FnDef, Param};
    use crate::types::{ScalarType, Type};

    #[test]
    fn the_ir_round_trips_through_json() {
        let def = FnDef {
            name: "crate::f".into(),
            params: vec![Param {
                pat: Pat::Record {
                    name: "P".into(),
                    fields: vec![("x".into(), Pat::bind("x"))],
                    rest: true,
                },
                ty: Type::Named("P".into()),
            }],
            ret: Type::Seq(Box::new(Type::Scalar(ScalarType::F64))),
            body: Expr::Par {
                op: ParOp::Create,
                args: vec![
                    Expr::Lit(Lit::Int(3, Some(ScalarType::Usize))),
                    Expr::Lambda {
                        params: vec![(Pat::bind("i"), Type::Infer)],
                        body: Box::new(Expr::Match {
                            scrutinee: Box::new(Expr::var("i")),
                            arms: vec![MatchArm {
                                pat: Pat::Range {
                                    lo: Box::new(Pat::Const("usize::MIN".into())),
                                    hi: Box::new(Pat::Lit {
                                        negative: false,
                                        lit: Lit::Int(1, None),
                                    }),
                                    inclusive: true,
                                },
                                guard: None,
                                body: Expr::Lit(Lit::Float(0.5, None)),
                            }],
                        }),
                    },
                ],
                loc: Loc { line: 7, column: 4 },
            },
            file: "src/lib.rs".into(),
            loc: Loc { line: 6, column: 3 },
        };
        let json = serde_json::to_string(&def).unwrap();
        let back: FnDef = serde_json::from_str(&json).unwrap();
        assert_eq!(back, def);
        assert_eq!(back.to_string(), "(fn crate::f (P { x: x, .. }: P) -> [f64] (create 3usize (lambda (i) (match i (usize::MIN..=1 => 0.5)))))");
    }
}
