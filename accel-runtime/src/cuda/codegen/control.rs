//! Control flow: `if`, `match`, blocks, loops, assignment.

use super::kernel::*;
use crate::cuda::c::*;
use accel_ir::passes::typecheck::bind_pattern;
use accel_ir::{Expr, MatchArm, Pat, Stmt, Type};
use std::collections::HashMap;

impl KernelGen<'_> {
    /// `if cond { then } else { els }`.
    pub(super) fn if_(&mut self, cond: &Expr, then: &Expr, els: Option<&Expr>) -> R<V> {
        let c = self.expr(cond)?.w[0].clone();
        let Some(els) = els else {
            self.line(&format!("if ({c}) {{"));
            self.depth += 1;
            self.expr(then)?;
            self.depth -= 1;
            self.line("}");
            return Ok(V::unit());
        };
        let t = self.type_of(then)?;
        let out = self.declare(&t, "if")?;
        self.line(&format!("if ({c}) {{"));
        self.depth += 1;
        let v = self.expr(then)?;
        self.assign_words(&out, &v);
        self.depth -= 1;
        self.line("} else {");
        self.depth += 1;
        let v = self.expr(els)?;
        self.assign_words(&out, &v);
        self.depth -= 1;
        self.line("}");
        Ok(out)
    }

    /// `match`: the arms tested in order.
    pub(super) fn match_(&mut self, scrutinee: &Expr, arms: &[MatchArm]) -> R<V> {
        let s = self.expr(scrutinee)?;
        let s = self.copy(&s, "scrut")?;
        bind_types_of(
            &arms.iter().map(|a| &a.pat).collect::<Vec<_>>(),
            &s.ty,
            &mut self.types,
            self.records,
        )?;
        let t = match arms.first() {
            Some(a) => self.type_of(&a.body)?,
            None => Type::Unit,
        };
        let out = self.declare(&t, "match")?;
        let done = self.let_("bool", "matched", "false");
        for arm in arms {
            let c = self.matches(&arm.pat, &s)?;
            self.line(&format!("if (!{done} && {c}) {{"));
            self.depth += 1;
            self.bind(&arm.pat, s.clone())?;
            let guard = match &arm.guard {
                Some(g) => self.expr(g)?.w[0].clone(),
                None => "true".into(),
            };
            self.line(&format!("if ({guard}) {{"));
            self.depth += 1;
            self.line(&format!("{done} = true;"));
            let v = self.expr(&arm.body)?;
            self.assign_words(&out, &v);
            self.depth -= 1;
            self.line("}");
            self.depth -= 1;
            self.line("}");
        }
        Ok(out)
    }

    /// A block: its statements, then its result.
    pub(super) fn block(&mut self, stmts: &[Stmt], result: Option<&Expr>) -> R<V> {
        for s in stmts {
            match s {
                Stmt::Let { pat, init, ty } => match init {
                    // A new tensor: its element type is the one its `let` gives it.
                    Some(Expr::Assoc { ty: t, func, args })
                        if (t.as_str(), func.as_str()) == ("Tensor", "zeros") =>
                    {
                        let Type::Tensor(elem) = ty else {
                            return Err(unsupported("`Tensor::zeros` of an unknown element type"));
                        };
                        let v = self.tensor_zeros(elem, &args[0])?;
                        self.bind(pat, v)?;
                    }
                    Some(x) => {
                        let v = self.expr(x)?;
                        self.bind(pat, v)?;
                    }
                    None => {
                        let Pat::Bind { name, .. } = pat else {
                            return Err(unsupported("a `let` pattern without a value"));
                        };
                        let v = self.declare(ty, name)?;
                        self.types.insert(name.clone(), ty.clone());
                        self.scope.insert(name.clone(), v);
                    }
                },
                Stmt::Expr(x) => {
                    self.expr(x)?;
                }
            }
        }
        match result {
            Some(r) => self.expr(r),
            None => Ok(V::unit()),
        }
    }

    /// `for var in lo..hi { body }`.
    pub(super) fn for_loop(&mut self, var: &str, lo: &Expr, hi: &Expr, body: &Expr) -> R<V> {
        let lo = self.expr(lo)?;
        let hi = self.expr(hi)?;
        let Type::Scalar(s) = lo.ty else {
            return Err(unsupported("a `for` over a non-integer range"));
        };
        let i = self.fresh(var);
        let end = self.let_(cty(s), "end", &hi.w[0]);
        self.line(&format!(
            "for ({} {i} = {}; {i} < {end}; {i}++) {{",
            cty(s),
            lo.w[0]
        ));
        self.depth += 1;
        let iv = V::scalar(s, i);
        self.bind(&Pat::bind(var), iv)?;
        self.expr(body)?;
        self.depth -= 1;
        self.line("}");
        Ok(V::unit())
    }

    /// `while cond { body }`.
    pub(super) fn while_loop(&mut self, cond: &Expr, body: &Expr) -> R<V> {
        self.line("while (true) {");
        self.depth += 1;
        let c = self.expr(cond)?.w[0].clone();
        self.line(&format!("if (!({c})) break;"));
        self.expr(body)?;
        self.depth -= 1;
        self.line("}");
        Ok(V::unit())
    }
}

/// Binds the names of every pattern in `pats` (matched against a value of type `t`).
fn bind_types_of(
    pats: &[&Pat],
    t: &Type,
    scope: &mut HashMap<String, Type>,
    records: &HashMap<String, Vec<(String, Type)>>,
) -> R<()> {
    for p in pats {
        bind_pattern(p, t, scope, records).map_err(|e| e.to_string())?;
    }
    Ok(())
}
