//! Lambda lifting (the paper's Listing 2): every closure becomes a function of its own whose
//! first parameters are the locals it captures, and the closure becomes that function
//! partially applied to those locals ([`Expr::Closure`]). Runs after [`super::resolve`], so
//! names are unique and free variables can be found without tracking shadowing.
//!
//! ```
//! use accel_ir::{passes::lift::lift, *};
//! // map(|x| x * c, xs)  ==>  (fn site::lambda#1 (c x) ...)  and  (map (closure site::lambda#1 c) xs)
//! let lam = Expr::Lambda {
//!     params: vec![(Pat::bind("x#1"), Type::Infer)],
//!     body: Box::new(Expr::Binary(BinOp::Mul, Box::new(Expr::var("x#1")), Box::new(Expr::var("c")))),
//! };
//! let site = SiteDef { file: "src/main.rs".into(), loc: Loc::default(), captures: vec!["c".into(), "xs".into()],
//!                      body: Expr::par(ParOp::Map, vec![lam, Expr::var("xs")]) };
//! let mut p = Program { functions: vec![], site, records: vec![] };
//! lift(&mut p);
//! assert_eq!(p.site.body.to_string(), "(map (closure site::lambda#1 c) xs)");
//! assert_eq!(p.functions[0].to_string(), "(fn site::lambda#1 (c x#1) -> _ (* x#1 c))");
//! ```

use crate::expr::{Expr, Loc, Stmt};
use crate::program::{FnDef, Param, Program};
use crate::{Pat, Type};
use std::collections::HashSet;

/// Lifts every lambda of the program into a function of its own, appended to
/// `p.functions` after the functions whose bodies held it.
pub fn lift(p: &mut Program) {
    let mut lifted = Vec::new();
    for f in &mut p.functions {
        let mut l = Lifter {
            owner: f.name.clone(),
            file: f.file.clone(),
            loc: f.loc,
            count: 0,
            out: &mut lifted,
        };
        l.expr(&mut f.body);
    }
    let mut l = Lifter {
        owner: "site".into(),
        file: p.site.file.clone(),
        loc: p.site.loc,
        count: 0,
        out: &mut lifted,
    };
    l.expr(&mut p.site.body);
    p.functions.extend(lifted);
}

struct Lifter<'a> {
    owner: String,
    file: String,
    loc: Loc,
    count: usize,
    out: &'a mut Vec<FnDef>,
}

impl Lifter<'_> {
    fn expr(&mut self, e: &mut Expr) {
        // Innermost lambdas first: an outer lambda then captures what its inner ones need.
        e.for_each_child_mut(&mut |c| self.expr(c));
        if let Expr::Lambda { params, body } = e {
            let captured = free_vars(
                body,
                params.iter().flat_map(|(p, _)| p.bound_names()).collect(),
            );
            self.count += 1;
            let name = format!("{}::lambda#{}", self.owner, self.count);
            let mut all_params: Vec<Param> = captured
                .iter()
                .map(|c| Param {
                    pat: Pat::bind(c),
                    ty: Type::Infer,
                })
                .collect();
            all_params.extend(params.drain(..).map(|(pat, ty)| Param { pat, ty }));
            self.out.push(FnDef {
                name: name.clone(),
                params: all_params,
                ret: Type::Infer,
                body: std::mem::replace(body, Expr::Tuple(vec![])),
                file: self.file.clone(),
                loc: self.loc,
            });
            *e = Expr::Closure {
                func: name,
                env: captured.into_iter().map(Expr::Var).collect(),
            };
        }
    }
}

/// The variables `body` uses that it does not bind, in first-use order.
fn free_vars(body: &Expr, mut bound: HashSet<String>) -> Vec<String> {
    collect_binders(body, &mut bound);
    let mut free = Vec::new();
    body.walk(&mut |e| {
        if let Expr::Var(v) = e {
            if !bound.contains(v) && !free.contains(v) {
                free.push(v.clone());
            }
        }
    });
    free
}

fn collect_binders(e: &Expr, bound: &mut HashSet<String>) {
    e.walk(&mut |e| match e {
        Expr::Lambda { params, .. } => params
            .iter()
            .for_each(|(p, _)| bound.extend(p.bound_names())),
        Expr::Block { stmts, .. } => {
            for s in stmts {
                if let Stmt::Let { pat, .. } = s {
                    bound.extend(pat.bound_names());
                }
            }
        }
        Expr::Match { arms, .. } => arms.iter().for_each(|a| bound.extend(a.pat.bound_names())),
        Expr::For { var, .. } => {
            bound.insert(var.clone());
        }
        _ => {}
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::{extract::tests::site, resolve::resolve_site};
    use crate::{BinOp, ParOp};

    #[test]
    fn nested_lambdas_lift_inside_out_and_capture_what_they_use() {
        // map(|row| reduce(|a, b| a + b * k, 0, row), xss)
        let inner = Expr::Lambda {
            params: vec![(Pat::bind("a"), Type::Infer), (Pat::bind("b"), Type::Infer)],
            body: Box::new(Expr::Binary(
                BinOp::Add,
                Box::new(Expr::var("a")),
                Box::new(Expr::Binary(
                    BinOp::Mul,
                    Box::new(Expr::var("b")),
                    Box::new(Expr::var("k")),
                )),
            )),
        };
        let outer = Expr::Lambda {
            params: vec![(Pat::bind("row"), Type::Infer)],
            body: Box::new(Expr::par(
                ParOp::Reduce,
                vec![inner, Expr::int(0), Expr::var("row")],
            )),
        };
        let body = Expr::par(ParOp::Map, vec![outer, Expr::var("xss")]);
        let r = resolve_site(&body);
        let mut p = Program {
            functions: vec![],
            records: vec![],
            site: site(r.body),
        };
        lift(&mut p);
        assert_eq!(
            p.to_string(),
            "\
(fn site::lambda#1 (k a#1 b#1) -> _ (+ a#1 (* b#1 k)))
(fn site::lambda#2 (k row#1) -> _ (reduce (closure site::lambda#1 k) 0 row#1))
(site src/main.rs:3 (v) (map (closure site::lambda#2 k) xss))"
        );
    }

    #[test]
    fn locals_of_the_lambda_are_not_captured() {
        let body = Expr::Lambda {
            params: vec![(Pat::bind("i"), Type::Infer)],
            body: Box::new(Expr::Block {
                stmts: vec![Stmt::Let {
                    pat: Pat::bind("t"),
                    ty: Type::Infer,
                    init: Some(Expr::var("i")),
                }],
                result: Some(Box::new(Expr::Binary(
                    BinOp::Add,
                    Box::new(Expr::var("t")),
                    Box::new(Expr::var("n")),
                ))),
            }),
        };
        let r = resolve_site(&Expr::par(ParOp::Create, vec![Expr::var("n"), body]));
        let mut p = Program {
            functions: vec![],
            records: vec![],
            site: site(r.body),
        };
        lift(&mut p);
        assert_eq!(
            p.functions[0].to_string(),
            "(fn site::lambda#1 (n i#1) -> _ (do (let t#1 i#1) (+ t#1 n)))"
        );
        assert_eq!(
            p.site.body.to_string(),
            "(create n (closure site::lambda#1 n))"
        );
    }
}
