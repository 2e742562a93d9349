//! Name resolution: every binder gets a unique name (`x#1`, `x#2`, … for shadowed names),
//! and the variables a site uses without binding them are its captures.
//!
//! ```
//! use accel_ir::{passes::resolve::resolve_site, Expr, Pat, ParOp, Type};
//! let lam = Expr::Lambda { params: vec![(Pat::bind("x"), Type::Infer)], body: Box::new(Expr::var("x")) };
//! let site = Expr::par(ParOp::Map, vec![lam, Expr::var("xs")]);
//! let r = resolve_site(&site);
//! assert_eq!(r.body.to_string(), "(map (lambda (x#1) x#1) xs)");
//! assert_eq!(r.captures, vec!["xs".to_string()]);
//! ```

use super::IrError;
use crate::expr::{Expr, Pat, Stmt};
use crate::program::FnDef;
use std::collections::HashMap;

/// A resolved site body and the locals it captures, in first-use order.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The body with unique names.
    pub body: Expr,
    /// The site's free variables, in first-use order.
    pub captures: Vec<String>,
}

/// Resolves a site: its free variables are captures and keep their Rust names.
pub fn resolve_site(body: &Expr) -> Resolved {
    let mut r = Resolver::default();
    let mut body = body.clone();
    r.expr(&mut body);
    Resolved {
        body,
        captures: r.free,
    }
}

/// Resolves a function: parameters and locals are renamed; a free variable is an error
/// (functions capture nothing).
pub fn resolve_fn(def: &FnDef) -> Result<FnDef, IrError> {
    let mut r = Resolver::default();
    let mut def = def.clone();
    r.scopes.push(HashMap::new());
    for p in &mut def.params {
        r.bind(&mut p.pat);
    }
    r.expr(&mut def.body);
    match r.free.into_iter().next() {
        Some(name) => Err(IrError::UnboundInFunction {
            func: def.name.clone(),
            name,
        }),
        None => Ok(def),
    }
}

#[derive(Default)]
struct Resolver {
    scopes: Vec<HashMap<String, String>>,
    counters: HashMap<String, u32>,
    free: Vec<String>,
}

impl Resolver {
    fn fresh(&mut self, name: &str) -> String {
        let n = self.counters.entry(name.to_string()).or_insert(0);
        *n += 1;
        format!("{name}#{n}")
    }

    fn lookup(&self, name: &str) -> Option<&String> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// Binds the names of `pat` in the innermost scope, renaming them in place.
    fn bind(&mut self, pat: &mut Pat) {
        let mut renames = HashMap::new();
        for name in pat.bound_names() {
            let fresh = self.fresh(&name);
            renames.insert(name, fresh);
        }
        rename_pat(pat, &renames);
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .extend(renames);
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(HashMap::new());
        f(self);
        self.scopes.pop();
    }

    fn expr(&mut self, e: &mut Expr) {
        match e {
            Expr::Var(name) => match self.lookup(name) {
                Some(unique) => *name = unique.clone(),
                None => {
                    if !self.free.contains(name) {
                        self.free.push(name.clone());
                    }
                }
            },
            Expr::Lambda { params, body } => self.scoped(|r| {
                for (p, _) in params.iter_mut() {
                    r.bind(p);
                }
                r.expr(body);
            }),
            Expr::Block { stmts, result } => self.scoped(|r| {
                for s in stmts.iter_mut() {
                    match s {
                        Stmt::Let { pat, init, .. } => {
                            if let Some(init) = init {
                                r.expr(init);
                            }
                            r.bind(pat);
                        }
                        Stmt::Expr(e) => r.expr(e),
                    }
                }
                if let Some(res) = result {
                    r.expr(res);
                }
            }),
            Expr::Match { scrutinee, arms } => {
                self.expr(scrutinee);
                for arm in arms.iter_mut() {
                    self.scoped(|r| {
                        r.bind(&mut arm.pat);
                        if let Some(g) = &mut arm.guard {
                            r.expr(g);
                        }
                        r.expr(&mut arm.body);
                    });
                }
            }
            Expr::For { var, lo, hi, body } => {
                self.expr(lo);
                self.expr(hi);
                self.scoped(|r| {
                    let mut pat = Pat::bind(var);
                    r.bind(&mut pat);
                    if let Pat::Bind { name, .. } = pat {
                        *var = name;
                    }
                    r.expr(body);
                });
            }
            _ => e.for_each_child_mut(&mut |c| self.expr(c)),
        }
    }
}

fn rename_pat(p: &mut Pat, renames: &HashMap<String, String>) {
    match p {
        Pat::Bind { name, .. } => {
            if let Some(n) = renames.get(name) {
                *name = n.clone();
            }
        }
        Pat::Tuple(ps) | Pat::Or(ps) => ps.iter_mut().for_each(|p| rename_pat(p, renames)),
        Pat::Record { fields, .. } => fields.iter_mut().for_each(|(_, p)| rename_pat(p, renames)),
        Pat::Wild | Pat::Lit { .. } | Pat::Const(_) | Pat::Range { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BinOp, MatchArm, ParOp};
    use crate::program::Param;
    use crate::types::Type;
    use crate::Loc;

    fn add(a: Expr, b: Expr) -> Expr {
        Expr::Binary(BinOp::Add, Box::new(a), Box::new(b))
    }

    fn let_(name: &str, init: Expr) -> Stmt {
        Stmt::Let {
            pat: Pat::bind(name),
            ty: Type::Infer,
            init: Some(init),
        }
    }

    #[test]
    fn shadowing_gets_fresh_names_and_captures_keep_theirs() {
        // { let x = c; let x = x + 1; map(|y| x + y, xs) }
        let lam = Expr::Lambda {
            params: vec![(Pat::bind("y"), Type::Infer)],
            body: Box::new(add(Expr::var("x"), Expr::var("y"))),
        };
        let body = Expr::Block {
            stmts: vec![
                let_("x", Expr::var("c")),
                let_("x", add(Expr::var("x"), Expr::int(1))),
            ],
            result: Some(Box::new(Expr::par(ParOp::Map, vec![lam, Expr::var("xs")]))),
        };
        let r = resolve_site(&body);
        assert_eq!(
            r.body.to_string(),
            "(do (let x#1 c) (let x#2 (+ x#1 1)) (map (lambda (y#1) (+ x#2 y#1)) xs))"
        );
        assert_eq!(r.captures, vec!["c", "xs"]);
    }

    #[test]
    fn scopes_end_with_their_block_match_arm_and_loop() {
        // { { let a = 1; } a } : the inner a is not visible outside, so `a` is captured.
        let body = Expr::Block {
            stmts: vec![Stmt::Expr(Expr::Block {
                stmts: vec![let_("a", Expr::int(1))],
                result: None,
            })],
            result: Some(Box::new(Expr::Match {
                scrutinee: Box::new(Expr::var("a")),
                arms: vec![MatchArm {
                    pat: Pat::Tuple(vec![Pat::bind("p"), Pat::bind("q")]),
                    guard: Some(Expr::var("p")),
                    body: Expr::For {
                        var: "i".into(),
                        lo: Box::new(Expr::int(0)),
                        hi: Box::new(Expr::var("q")),
                        body: Box::new(Expr::var("i")),
                    },
                }],
            })),
        };
        let r = resolve_site(&body);
        assert_eq!(
            r.body.to_string(),
            "(do (do (let a#1 1)) (match a ((p#1, q#1) if p#1 => (for i#1 0 q#1 i#1))))"
        );
        assert_eq!(r.captures, vec!["a"]);
    }

    #[test]
    fn functions_may_not_have_free_variables() {
        let def = FnDef {
            name: "f".into(),
            params: vec![Param {
                pat: Pat::bind("a"),
                ty: Type::Infer,
            }],
            ret: Type::Infer,
            body: add(Expr::var("a"), Expr::var("b")),
            file: "src/lib.rs".into(),
            loc: Loc::default(),
        };
        assert_eq!(
            resolve_fn(&def),
            Err(IrError::UnboundInFunction {
                func: "f".into(),
                name: "b".into()
            })
        );
        let ok = FnDef {
            body: add(Expr::var("a"), Expr::var("a")),
            ..def
        };
        assert_eq!(resolve_fn(&ok).unwrap().body.to_string(), "(+ a#1 a#1)");
    }
}
