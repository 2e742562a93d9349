//! Inlining: the site and every function it reaches become one expression with no calls
//! and no function values. A call becomes a block that binds the parameters; a function
//! passed as an argument (a closure or a function name) is substituted into the callee's
//! body, so higher-order code is specialised away (defunctionalisation by inlining, which
//! the absence of recursion makes total). Function names used as the function argument of
//! a parallel operation are eta-expanded into closures first.
//!
//! Runs on a resolved program (unique names), after [`super::extract`]. Inlined bodies get
//! fresh names, so every binder of the result is still unique.

use super::IrError;
use crate::expr::{Expr, Pat, Stmt};
use crate::program::{FnDef, Program};
use crate::types::Type;
use std::collections::HashMap;

/// Inlines every call of the program into its site's body.
pub fn inline(p: &Program) -> Result<Expr, IrError> {
    let functions: HashMap<&str, &FnDef> =
        p.functions.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut inliner = Inliner {
        functions,
        counter: 0,
        depth: 0,
    };
    inliner.expr(&p.site.body, &HashMap::new())
}

struct Inliner<'a> {
    functions: HashMap<&'a str, &'a FnDef>,
    counter: usize,
    depth: usize,
}

/// A function value bound to a name in the current scope: parameters of inlined
/// higher-order functions.
type FnEnv = HashMap<String, Expr>;

impl<'a> Inliner<'a> {
    fn fresh(&mut self, name: &str) -> String {
        self.counter += 1;
        let base = name.split('#').next().unwrap_or(name);
        format!("{base}#i{}", self.counter)
    }

    /// Turns a function value into a lambda: closures stay, names are eta-expanded.
    fn as_lambda(&mut self, f: &Expr, env: &FnEnv) -> Result<Expr, IrError> {
        match f {
            Expr::Lambda { .. } => self.expr(f, env),
            Expr::FnRef(name) => {
                let def = self.function(name)?;
                let params: Vec<String> = def.params.iter().map(|_| self.fresh("arg")).collect();
                let call = Expr::Call {
                    func: name.clone(),
                    args: params.iter().map(|p| Expr::Var(p.clone())).collect(),
                    loc: def.loc,
                };
                let lam = Expr::Lambda {
                    params: params
                        .iter()
                        .zip(&def.params)
                        .map(|(p, d)| (Pat::bind(p), d.ty.clone()))
                        .collect(),
                    body: Box::new(call),
                };
                self.expr(&lam, env)
            }
            Expr::Var(v) => match env.get(v) {
                Some(bound) => Ok(self.freshen(bound)),
                None => Ok(f.clone()),
            },
            other => self.expr(other, env),
        }
    }

    fn function(&self, name: &str) -> Result<&'a FnDef, IrError> {
        self.functions
            .get(name)
            .copied()
            .ok_or_else(|| IrError::UnknownFunction {
                name: name.to_string(),
            })
    }

    fn expr(&mut self, e: &Expr, env: &FnEnv) -> Result<Expr, IrError> {
        Ok(match e {
            Expr::Call { func, args, .. } => {
                let def = self.function(func)?;
                self.call(def, args, env)?
            }
            Expr::Apply { func, args } => {
                let f = self.as_lambda(func, env)?;
                let args = args
                    .iter()
                    .map(|a| self.expr(a, env))
                    .collect::<Result<Vec<_>, _>>()?;
                Expr::applied(&f, args)
            }
            Expr::Var(v) if env.contains_key(v) => self.freshen(&env[v]),
            Expr::Block { stmts, result } if stmts.iter().any(binds_closure) => {
                // `let f = |x| …;`: the closure joins the function values in scope and is
                // substituted where `f` is used, as a function argument is.
                let mut env = env.clone();
                let mut kept = Vec::new();
                for st in stmts {
                    match st {
                        Stmt::Let {
                            pat: Pat::Bind { name, .. },
                            init: Some(lambda @ Expr::Lambda { .. }),
                            ..
                        } => {
                            let value = self.as_lambda(lambda, &env)?;
                            env.insert(name.clone(), value);
                        }
                        Stmt::Let { pat, ty, init } => kept.push(Stmt::Let {
                            pat: pat.clone(),
                            ty: ty.clone(),
                            init: init.as_ref().map(|i| self.expr(i, &env)).transpose()?,
                        }),
                        Stmt::Expr(x) => kept.push(Stmt::Expr(self.expr(x, &env)?)),
                    }
                }
                let result = match result {
                    Some(r) => Some(Box::new(self.expr(r, &env)?)),
                    None => None,
                };
                Expr::Block {
                    stmts: kept,
                    result,
                }
            }
            Expr::Par { op, args, loc } => {
                let fn_arg = op.fn_arg();
                let args = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        if Some(i) == fn_arg {
                            self.as_lambda(a, env)
                        } else {
                            self.expr(a, env)
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Expr::Par {
                    op: *op,
                    args,
                    loc: *loc,
                }
            }
            other => {
                let mut out = other.clone();
                let mut result = Ok(());
                out.for_each_child_mut(&mut |c| {
                    if result.is_ok() {
                        match self.expr(c, env) {
                            Ok(new) => *c = new,
                            Err(err) => result = Err(err),
                        }
                    }
                });
                result?;
                out
            }
        })
    }

    /// `f(args)`: the body of `f` with its parameters bound to the arguments; function
    /// arguments are substituted instead of bound.
    fn call(&mut self, def: &FnDef, args: &[Expr], env: &FnEnv) -> Result<Expr, IrError> {
        self.depth += 1;
        if self.depth > 256 {
            return Err(IrError::Recursion {
                cycle: def.name.clone(),
            });
        }
        let mut stmts = Vec::new();
        let mut inner_env = FnEnv::new();
        let mut renames = HashMap::new();
        for (param, arg) in def.params.iter().zip(args) {
            let is_fn = param.ty.is_fn()
                || matches!(arg, Expr::Lambda { .. } | Expr::FnRef(_))
                || matches!(arg, Expr::Var(v) if env.contains_key(v));
            if is_fn {
                if let Pat::Bind { name, .. } = &param.pat {
                    let value = self.as_lambda(arg, env)?;
                    inner_env.insert(name.clone(), value);
                    continue;
                }
            }
            let mut pat = param.pat.clone();
            self.rename_pat(&mut pat, &mut renames);
            stmts.push(Stmt::Let {
                pat,
                ty: param.ty.clone(),
                init: Some(self.expr(arg, env)?),
            });
        }
        let mut body = def.body.clone();
        rename_vars(&mut body, &mut renames, self);
        let body = self.expr(&body, &inner_env)?;
        self.depth -= 1;
        Ok(Expr::Block {
            stmts,
            result: Some(Box::new(self.with_type(body, &def.ret))),
        })
    }

    /// The result of an inlined call keeps the declared return type where it is
    /// informative, bound to a fresh name: backends rely on every binder of a site being
    /// unique (two inlined calls binding one name read each other's result in the CPU
    /// backend's gangs: found by accel-fuzz).
    fn with_type(&mut self, body: Expr, ret: &Type) -> Expr {
        match ret {
            Type::Infer | Type::Unit | Type::Fn(..) => body,
            t => {
                let name = self.fresh("ret");
                Expr::Block {
                    stmts: vec![Stmt::Let {
                        pat: Pat::bind(&name),
                        ty: t.clone(),
                        init: Some(body),
                    }],
                    result: Some(Box::new(Expr::Var(name))),
                }
            }
        }
    }

    /// A copy of a substituted function value with fresh binders, so that every use of it
    /// keeps binder names unique.
    fn freshen(&mut self, e: &Expr) -> Expr {
        let mut copy = e.clone();
        rename_vars(&mut copy, &mut HashMap::new(), self);
        copy
    }

    fn rename_pat(&mut self, p: &mut Pat, renames: &mut HashMap<String, String>) {
        match p {
            Pat::Bind { name, .. } => {
                let fresh = self.fresh(name);
                renames.insert(name.clone(), fresh.clone());
                *name = fresh;
            }
            Pat::Tuple(ps) | Pat::Or(ps) => ps.iter_mut().for_each(|p| self.rename_pat(p, renames)),
            Pat::Record { fields, .. } => fields
                .iter_mut()
                .for_each(|(_, p)| self.rename_pat(p, renames)),
            Pat::Wild | Pat::Lit { .. } | Pat::Const(_) | Pat::Range { .. } => {}
        }
    }
}

/// Gives every binder of an inlined body a fresh name, so that inlining one function
/// twice, or into a scope that uses the same names, never captures a variable.
fn rename_vars(e: &mut Expr, renames: &mut HashMap<String, String>, inliner: &mut Inliner<'_>) {
    match e {
        Expr::Var(v) => {
            if let Some(n) = renames.get(v) {
                *v = n.clone();
            }
        }
        Expr::Block { stmts, result } => {
            for s in stmts.iter_mut() {
                match s {
                    Stmt::Let { pat, init, .. } => {
                        if let Some(init) = init {
                            rename_vars(init, renames, inliner);
                        }
                        inliner.rename_pat(pat, renames);
                    }
                    Stmt::Expr(e) => rename_vars(e, renames, inliner),
                }
            }
            if let Some(r) = result {
                rename_vars(r, renames, inliner);
            }
        }
        Expr::Lambda { params, body } => {
            for (p, _) in params.iter_mut() {
                inliner.rename_pat(p, renames);
            }
            rename_vars(body, renames, inliner);
        }
        Expr::Match { scrutinee, arms } => {
            rename_vars(scrutinee, renames, inliner);
            for arm in arms.iter_mut() {
                inliner.rename_pat(&mut arm.pat, renames);
                if let Some(g) = &mut arm.guard {
                    rename_vars(g, renames, inliner);
                }
                rename_vars(&mut arm.body, renames, inliner);
            }
        }
        Expr::For { var, lo, hi, body } => {
            rename_vars(lo, renames, inliner);
            rename_vars(hi, renames, inliner);
            let fresh = inliner.fresh(var);
            renames.insert(var.clone(), fresh.clone());
            *var = fresh;
            rename_vars(body, renames, inliner);
        }
        _ => e.for_each_child_mut(&mut |c| rename_vars(c, renames, inliner)),
    }
}

/// Whether a statement binds a closure to a name (`let f = |x| …;`).
fn binds_closure(st: &Stmt) -> bool {
    matches!(
        st,
        Stmt::Let {
            pat: Pat::Bind { .. },
            init: Some(Expr::Lambda { .. }),
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BinOp, Loc, ParOp};
    use crate::passes::extract::tests::site;
    use crate::program::Param;
    use crate::ScalarType;

    fn func(name: &str, params: Vec<(&str, Type)>, body: Expr) -> FnDef {
        FnDef {
            name: name.into(),
            params: params
                .into_iter()
                .map(|(n, ty)| Param {
                    pat: Pat::bind(n),
                    ty,
                })
                .collect(),
            ret: Type::Infer,
            body,
            file: "src/lib.rs".into(),
            loc: Loc::default(),
        }
    }

    fn call(f: &str, args: Vec<Expr>) -> Expr {
        Expr::Call {
            func: f.into(),
            args,
            loc: Loc::default(),
        }
    }

    #[test]
    fn calls_become_blocks_and_function_arguments_are_substituted() {
        let f32t = Type::Scalar(ScalarType::F32);
        let sq = func(
            "sq",
            vec![("x", f32t.clone())],
            Expr::Binary(
                BinOp::Mul,
                Box::new(Expr::var("x")),
                Box::new(Expr::var("x")),
            ),
        );
        // apply(f, xs) = map(f, xs)
        let apply = func(
            "apply",
            vec![
                ("f", Type::Fn(vec![f32t.clone()], Box::new(f32t.clone()))),
                ("xs", Type::Infer),
            ],
            Expr::par(ParOp::Map, vec![Expr::var("f"), Expr::var("xs")]),
        );
        let p = Program {
            functions: vec![sq, apply],
            records: vec![],
            site: site(call("apply", vec![Expr::fn_ref("sq"), Expr::var("v")])),
        };
        let e = inline(&p).unwrap();
        assert_eq!(
            e.to_string(),
            "(do (let xs#i3 v) (map (lambda (arg#i4: f32) (do (let x#i5: f32 arg#i4) (* x#i5 x#i5))) xs#i3))"
        );
    }

    #[test]
    fn one_function_inlined_twice_gets_fresh_names() {
        let inc = func(
            "inc",
            vec![("x", Type::Infer)],
            Expr::Block {
                stmts: vec![Stmt::Let {
                    pat: Pat::bind("y"),
                    ty: Type::Infer,
                    init: Some(Expr::var("x")),
                }],
                result: Some(Box::new(Expr::var("y"))),
            },
        );
        let p = Program {
            functions: vec![inc],
            records: vec![],
            site: site(call("inc", vec![call("inc", vec![Expr::var("v")])])),
        };
        assert_eq!(
            inline(&p).unwrap().to_string(),
            "(do (let x#i1 (do (let x#i2 v) (do (let y#i3 x#i2) y#i3))) (do (let y#i4 x#i1) y#i4))"
        );
    }

    /// Backends key variables by name: two inlined calls must not bind one result name
    /// (the CPU backend's gangs read the first call's result for the second: accel-fuzz).
    #[test]
    fn each_inlined_result_gets_its_own_name() {
        let u32t = Type::Scalar(ScalarType::U32);
        let mut ten = func("ten", vec![("a", u32t.clone())], Expr::int(10));
        ten.ret = u32t;
        let p = Program {
            functions: vec![ten],
            records: vec![],
            site: site(Expr::Binary(
                BinOp::BitXor,
                Box::new(call("ten", vec![Expr::var("v")])),
                Box::new(call("ten", vec![Expr::var("w")])),
            )),
        };
        assert_eq!(
            inline(&p).unwrap().to_string(),
            "(^ (do (let a#i1: u32 v) (do (let ret#i2: u32 10) ret#i2)) \
             (do (let a#i3: u32 w) (do (let ret#i4: u32 10) ret#i4)))"
        );
    }

    #[test]
    fn applying_a_closure_parameter_beta_reduces() {
        let twice = func(
            "twice",
            vec![
                ("g", Type::Fn(vec![], Box::new(Type::Infer))),
                ("x", Type::Infer),
            ],
            Expr::Apply {
                func: Box::new(Expr::var("g")),
                args: vec![Expr::Apply {
                    func: Box::new(Expr::var("g")),
                    args: vec![Expr::var("x")],
                }],
            },
        );
        let lam = Expr::Lambda {
            params: vec![(Pat::bind("a"), Type::Infer)],
            body: Box::new(Expr::Binary(
                BinOp::Add,
                Box::new(Expr::var("a")),
                Box::new(Expr::var("k")),
            )),
        };
        let p = Program {
            functions: vec![twice],
            records: vec![],
            site: site(call("twice", vec![lam, Expr::int(1)])),
        };
        assert_eq!(
            inline(&p).unwrap().to_string(),
            "(do (let x#i1 1) (do (let a#i2 (do (let a#i3 x#i1) (+ a#i3 k))) (+ a#i2 k)))"
        );
    }
}
