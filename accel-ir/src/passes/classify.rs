//! Classification (the paper's section 4.2) and the per-backend rules.
//!
//! A site runs on the functional backend when its program uses only `map map2 reduce scan
//! flatten create`, on the imperative backend when it uses only `parallel_loop`; using none
//! or both is an error that says which operations were found and where. The front end
//! performs the same checks at compile time (over the descriptions `#[accel]` generates);
//! this pass is the definition they follow, run again on every assembled program.

use super::IrError;
use crate::expr::{Expr, Loc, ParOp};
use crate::program::Program;

/// The backend family a site belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Immutable sequences and SOACs (Futhark-style).
    Functional,
    /// `parallel_loop` over mutable tensors (CUDA-style).
    Imperative,
}

/// Classifies a program, then checks the rules of its backend.
pub fn classify(p: &Program) -> Result<Backend, IrError> {
    let mut functional = None;
    let mut imperative = None;
    let mut scan = |owner: Option<&str>, file: &str, body: &Expr| {
        body.walk(&mut |e| {
            if let Expr::Par { op, loc, .. } = e {
                let slot = if op.is_imperative() {
                    &mut imperative
                } else {
                    &mut functional
                };
                if slot.is_none() {
                    *slot = Some(describe_use(*op, owner, file, *loc));
                }
            }
        })
    };
    scan(None, &p.site.file, &p.site.body);
    for f in &p.functions {
        scan(Some(&f.name), &f.file, &f.body);
    }
    match (functional, imperative) {
        (None, None) => Err(IrError::NoParallelOp),
        (Some(functional), Some(imperative)) => Err(IrError::Mixed {
            functional,
            imperative,
        }),
        (Some(_), None) => Ok(Backend::Functional),
        (None, Some(_)) => {
            check_imperative(p)?;
            Ok(Backend::Imperative)
        }
    }
}

/// `map at src/main.rs:12:20`, or `parallel_loop in `crate::step` at src/ode.rs:40:5`.
pub fn describe_use(op: ParOp, owner: Option<&str>, file: &str, loc: Loc) -> String {
    match owner {
        Some(f) => format!(
            "{} in `{f}` at {file}:{}:{}",
            op.name(),
            loc.line,
            loc.column + 1
        ),
        None => format!("{} at {file}:{}:{}", op.name(), loc.line, loc.column + 1),
    }
}

/// The imperative backend has no function values: no user function takes or returns a
/// function, and no `if` or `match` chooses between functions.
pub fn check_imperative(p: &Program) -> Result<(), IrError> {
    for f in &p.functions {
        if f.is_higher_order() {
            return Err(IrError::Imperative {
                what: format!("function `{}` takes or returns a function", f.name),
                loc: f.loc,
                why: "imperative code cannot pass functions around; call the function directly"
                    .into(),
            });
        }
    }
    let bodies = std::iter::once((&p.site.body, p.site.loc))
        .chain(p.functions.iter().map(|f| (&f.body, f.loc)));
    for (body, loc) in bodies {
        let mut found = None;
        body.walk(&mut |e| {
            let branches: Vec<&Expr> = match e {
                Expr::If { then, els, .. } => {
                    std::iter::once(&**then).chain(els.as_deref()).collect()
                }
                Expr::Match { arms, .. } => arms.iter().map(|a| &a.body).collect(),
                _ => return,
            };
            if found.is_none() && branches.into_iter().any(is_function_value) {
                found = Some(e.to_string());
            }
        });
        if let Some(what) = found {
            return Err(IrError::Imperative {
                what: format!("`{what}` chooses between functions"),
                loc,
                why: "an `if` or `match` must not produce a function; call the chosen function in each branch".into(),
            });
        }
    }
    Ok(())
}

fn is_function_value(e: &Expr) -> bool {
    match e {
        Expr::FnRef(_) | Expr::Lambda { .. } | Expr::Closure { .. } => true,
        Expr::Block {
            result: Some(r), ..
        } => is_function_value(r),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::extract::tests::{call, site};
    use crate::program::{FnDef, Param};
    use crate::{Pat, Type};

    fn par(op: ParOp, line: u32) -> Expr {
        Expr::Par {
            op,
            args: vec![],
            loc: Loc { line, column: 8 },
        }
    }

    fn func(name: &str, body: Expr, params: Vec<Type>) -> FnDef {
        FnDef {
            name: name.into(),
            params: params
                .into_iter()
                .map(|ty| Param {
                    pat: Pat::bind("a"),
                    ty,
                })
                .collect(),
            ret: Type::Unit,
            body,
            file: "src/ode.rs".into(),
            loc: Loc {
                line: 40,
                column: 0,
            },
        }
    }

    #[test]
    fn classifies_by_the_operations_of_the_whole_program() {
        let p = Program {
            functions: vec![],
            records: vec![],
            site: site(par(ParOp::Reduce, 3)),
        };
        assert_eq!(classify(&p), Ok(Backend::Functional));
        let p = Program {
            functions: vec![func("crate::step", par(ParOp::ParallelLoop, 41), vec![])],
            records: vec![],
            site: site(call("crate::step", vec![])),
        };
        assert_eq!(classify(&p), Ok(Backend::Imperative));
    }

    #[test]
    fn no_operation_and_mixing_are_errors_that_say_where() {
        let p = Program {
            functions: vec![],
            records: vec![],
            site: site(Expr::int(1)),
        };
        assert_eq!(classify(&p), Err(IrError::NoParallelOp));
        let p = Program {
            functions: vec![func("crate::step", par(ParOp::ParallelLoop, 41), vec![])],
            records: vec![],
            site: site(Expr::Tuple(vec![
                par(ParOp::Map, 3),
                call("crate::step", vec![]),
            ])),
        };
        let err = classify(&p).unwrap_err();
        assert_eq!(
            err.to_string(),
            "accelerated code mixes functional operations (map at src/main.rs:3:9) with parallel_loop \
             (parallel_loop in `crate::step` at src/ode.rs:41:9); one accelerate! site runs on one \
             backend: split it into two sites"
        );
    }

    #[test]
    fn imperative_code_has_no_function_values() {
        let higher = func(
            "crate::apply",
            Expr::Tuple(vec![]),
            vec![Type::Fn(vec![], Box::new(Type::Unit))],
        );
        let p = Program {
            functions: vec![higher],
            records: vec![],
            site: site(par(ParOp::ParallelLoop, 3)),
        };
        assert!(
            matches!(classify(&p), Err(IrError::Imperative { what, .. }) if what == "function `crate::apply` takes or returns a function")
        );
        let choose = Expr::If {
            cond: Box::new(Expr::var("c")),
            then: Box::new(Expr::fn_ref("f")),
            els: Some(Box::new(Expr::fn_ref("g"))),
        };
        let p = Program {
            functions: vec![],
            records: vec![],
            site: site(Expr::Tuple(vec![choose, par(ParOp::ParallelLoop, 3)])),
        };
        assert!(
            matches!(classify(&p), Err(IrError::Imperative { what, .. }) if what == "`(if c f g)` chooses between functions")
        );
    }
}
