//! Control flow: `if` (as selects when it only assigns scalars), `match`, blocks,
//! assignment.

use super::cx::*;
use crate::backend::failure::FailureKind;
use accel_ir::{Expr, Stmt, Type};
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};
use cranelift_frontend::Variable;
use std::collections::HashMap;

impl FnCx<'_, '_> {
    /// A block: its statements, then its result (`()` when it has none). A scalar bound by
    /// a `let` before a loop is pinned where it is computed (see [`FnCx::pin`]).
    pub(super) fn block(&mut self, stmts: &[Stmt], result: Option<&Expr>) -> R<V> {
        let loop_after = super::spmd::loops_after(stmts, result);
        for (k, s) in stmts.iter().enumerate() {
            match s {
                Stmt::Let {
                    pat,
                    ty,
                    init: Some(init),
                } => {
                    let mut v = match (ty, init) {
                        // The element type of a new tensor is the one its `let` gives it.
                        (Type::Tensor(elem), Expr::Assoc { ty, func, args })
                            if (ty.as_str(), func.as_str()) == ("Tensor", "zeros") =>
                        {
                            self.tensor_zeros(elem, &args[0])?
                        }
                        _ => self.expr(init)?,
                    };
                    let computed = !matches!(init, Expr::Lit(_) | Expr::Var(_));
                    if loop_after[k] && computed && matches!(v.ty, Type::Scalar(_)) {
                        v = self.pin(v);
                    }
                    match super::local_arrays::mutable_name(pat) {
                        Some(name)
                            if matches!(v.ty, Type::Array(..))
                                && super::local_arrays::assigned_at_computed_index(
                                    name,
                                    &stmts[k + 1..],
                                    result,
                                ) =>
                        {
                            self.bind_local_array(name, v)?
                        }
                        _ => self.bind(pat, v)?,
                    }
                }
                Stmt::Let {
                    pat, init: None, ..
                } => return Err(unsupported(format!("`let {pat};` without a value"))),
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

    pub(super) fn if_(&mut self, cond: &Expr, then: &Expr, els: Option<&Expr>) -> R<V> {
        if els.is_none() {
            if let Some(assigns) = self.plain_assignments(then) {
                return self.if_converted(cond, &assigns);
            }
        }
        let c = self.expr(cond)?;
        let then_block = self.b.create_block();
        let else_block = self.b.create_block();
        let merge = self.b.create_block();
        self.b.ins().brif(c.w[0], then_block, &[], else_block, &[]);
        self.b.switch_to_block(then_block);
        let tv = self.expr(then)?;
        let params: Vec<Value> =
            tv.w.iter()
                .map(|w| {
                    let t = self.b.func.dfg.value_type(*w);
                    self.b.append_block_param(merge, t)
                })
                .collect();
        let args: Vec<_> = tv.w.iter().map(|w| (*w).into()).collect();
        self.b.ins().jump(merge, &args);
        self.b.switch_to_block(else_block);
        match els {
            Some(e) => {
                let ev = self.expr(e)?;
                let args: Vec<_> = ev.w.iter().map(|w| (*w).into()).collect();
                self.b.ins().jump(merge, &args);
            }
            None => {
                self.b.ins().jump(merge, &[]);
            }
        }
        self.b.switch_to_block(merge);
        Ok(V {
            ty: tv.ty,
            w: params,
        })
    }

    pub(super) fn match_(&mut self, scrutinee: &Expr, arms: &[accel_ir::MatchArm]) -> R<V> {
        let s = self.expr(scrutinee)?;
        let merge = self.b.create_block();
        let mut params: Option<(Type, Vec<Value>)> = None;
        for arm in arms {
            let matched = self.test_pat(&arm.pat, &s)?;
            let body = self.b.create_block();
            let next = self.b.create_block();
            self.b.ins().brif(matched, body, &[], next, &[]);
            self.b.switch_to_block(body);
            self.bind(&arm.pat, s.clone())?;
            if let Some(g) = &arm.guard {
                let gv = self.expr(g)?;
                let guarded = self.b.create_block();
                self.b.ins().brif(gv.w[0], guarded, &[], next, &[]);
                self.b.switch_to_block(guarded);
            }
            let v = self.expr(&arm.body)?;
            if params.is_none() {
                let ps =
                    v.w.iter()
                        .map(|w| {
                            let t = self.b.func.dfg.value_type(*w);
                            self.b.append_block_param(merge, t)
                        })
                        .collect();
                params = Some((v.ty.clone(), ps));
            }
            let args: Vec<_> = v.w.iter().map(|w| (*w).into()).collect();
            self.b.ins().jump(merge, &args);
            self.b.switch_to_block(next);
        }
        // Rust checked exhaustiveness: no arm matching cannot happen.
        let zero = self.iconst(0);
        let one = self.b.ins().iconst(ct::I8, 1);
        self.fail_if(one, FailureKind::NoArm, zero, zero);
        let (ty, ps) = params.unwrap_or((Type::Unit, vec![]));
        let dummy: Vec<_> = ps
            .iter()
            .map(|p| {
                let t = self.b.func.dfg.value_type(*p);
                self.zero(t).into()
            })
            .collect();
        self.b.ins().jump(merge, &dummy);
        self.b.switch_to_block(merge);
        Ok(V { ty, w: ps })
    }

    /// The assignments of an `if` without `else` whose body only assigns variables or
    /// literals to mutable scalar variables (`best = d; arg = i;`): it can run as selects
    /// instead of a branch that a data-dependent condition would mispredict.
    pub(super) fn plain_assignments<'e>(&self, then: &'e Expr) -> Option<Vec<(&'e str, &'e Expr)>> {
        let stmts: Vec<&Expr> = match then {
            Expr::Block {
                stmts,
                result: None,
            } => stmts
                .iter()
                .map(|st| match st {
                    Stmt::Expr(e) => Some(e),
                    Stmt::Let { .. } => None,
                })
                .collect::<Option<Vec<_>>>()?,
            e @ Expr::Assign { .. } => vec![e],
            _ => return None,
        };
        let mut out = Vec::new();
        for e in stmts {
            let Expr::Assign { target, value } = e else {
                return None;
            };
            let (Expr::Var(name), Expr::Var(_) | Expr::Lit(_)) = (&**target, &**value) else {
                return None;
            };
            if !matches!(self.vars.get(name), Some((Type::Scalar(_), _))) {
                return None;
            }
            out.push((name.as_str(), &**value));
        }
        (!out.is_empty()).then_some(out)
    }

    /// `if cond { a = x; b = y; }` as `a = select(cond, x, a); b = select(cond, y, b)`.
    pub(super) fn if_converted(&mut self, cond: &Expr, assigns: &[(&str, &Expr)]) -> R<V> {
        let c = self.expr(cond)?.w[0];
        for (name, value) in assigns {
            let new = self.expr(value)?;
            let (_, vars) = self.vars[*name].clone();
            let old = self.b.use_var(vars[0]);
            let w = self.b.ins().select(c, new.w[0], old);
            self.b.def_var(vars[0], w);
        }
        Ok(V {
            ty: Type::Unit,
            w: vec![],
        })
    }

    pub(super) fn assign(&mut self, target: &Expr, v: V) -> R<()> {
        if let Some((addr, _)) = self.local_place(target)? {
            self.store_local(addr, &v);
            return Ok(());
        }
        // The word range of the target inside its variable.
        fn place(
            e: &Expr,
            vars: &HashMap<String, (Type, Vec<Variable>)>,
        ) -> R<(String, Type, usize)> {
            match e {
                Expr::Var(n) => {
                    let (t, _) = vars.get(n).ok_or_else(|| format!("`{n}` is not bound"))?;
                    Ok((n.clone(), t.clone(), 0))
                }
                Expr::Field(base, f) => {
                    let (n, t, at) = place(base, vars)?;
                    let (ft, off) = field_offset(&t, f)?;
                    Ok((n, ft, at + off))
                }
                Expr::Index(base, i) => {
                    let (n, t, at) = place(base, vars)?;
                    if let Type::Seq(_) = t {
                        return Err(unsupported(crate::backend::SEQUENCE_ELEMENT_ASSIGNED));
                    }
                    let k = i.literal_usize().ok_or_else(|| {
                        unsupported("assigning to an array element at a computed index")
                    })?;
                    let (ft, off) = field_offset(&t, &k.to_string())?;
                    Ok((n, ft, at + off))
                }
                _ => Err(unsupported("this assignment target")),
            }
        }
        let (name, _, at) = place(target, &self.vars)?;
        let vars = self.vars[&name].1.clone();
        for (k, w) in v.w.iter().enumerate() {
            self.b.def_var(vars[at + k], *w);
        }
        Ok(())
    }
}
