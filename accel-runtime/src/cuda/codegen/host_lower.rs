//! The host program: the site's body with every top-level parallel operation replaced by
//! a launch (each operation's lowering is in [`super::ops`]); what remains must be scalar
//! code, small literal sequences, element reads and loops that the host evaluates
//! ([`crate::cuda::host`]) between launches.

use super::super::host::scalar::HOST_METHODS;
use super::kernel::*;
use super::launch::{launch_name, Launch, LaunchKind};
use crate::backend::layout::is_flat;
use accel_ir::passes::typecheck::{bind_pattern, type_of};
use accel_ir::{Expr, ParOp, Pat, ScalarType, Stmt, Type};
use std::collections::{HashMap, HashSet};

/// The host program being lowered, and the kernels made so far.
pub(super) struct Gen {
    pub(super) source: String,
    pub(super) launches: Vec<Launch>,
    pub(super) records: HashMap<String, Vec<(String, Type)>>,
    /// Types of the host program's variables.
    pub(super) host_scope: HashMap<String, Type>,
    /// How many host variables [`Gen::fresh`] has named.
    pub(super) named: usize,
}

impl Gen {
    /// A new host variable's name, `accel#{what}{k}`, unique in the program: arguments
    /// are lowered before their operation's launch exists, so a count of launches would
    /// give an operation and one nested in its argument the same name (a histogram's
    /// bins read the inner histogram's: found by accel-fuzz).
    pub(super) fn fresh(&mut self, what: &str) -> String {
        self.named += 1;
        format!("accel#{what}{}", self.named)
    }

    /// The type of a host expression.
    pub(super) fn type_of(&mut self, e: &Expr) -> R<Type> {
        let vars = |v: &str| self.host_scope.get(v).cloned();
        type_of(e, &vars, &self.records).map_err(|e| e.to_string())
    }

    /// The host program: parallel operations become launches; everything else must be
    /// scalar code the host evaluates.
    pub(super) fn host(&mut self, e: &Expr) -> R<Expr> {
        match e {
            Expr::Par { op, args, .. } => self.par(*op, args),
            Expr::Block { stmts, result } => self.host_block(stmts, result.as_deref()),
            Expr::Lit(_) | Expr::Var(_) | Expr::Const(_) => Ok(e.clone()),
            // Loops between launches (an iterative algorithm whose data stays on the device).
            Expr::Assign { target, value } => match &**target {
                Expr::Var(v) if self.host_scope.contains_key(v) => Ok(Expr::Assign {
                    target: target.clone(),
                    value: Box::new(self.host(value)?),
                }),
                _ => Err(unsupported(
                    "assigning to a field or an element outside parallel operations",
                )),
            },
            Expr::For { var, lo, hi, body } => {
                let t = self.type_of(lo)?;
                let (lo, hi) = (self.host(lo)?, self.host(hi)?);
                self.host_scope.insert(var.clone(), t);
                Ok(Expr::For {
                    var: var.clone(),
                    lo: Box::new(lo),
                    hi: Box::new(hi),
                    body: Box::new(self.host(body)?),
                })
            }
            Expr::While { .. }
            | Expr::Slice { .. }
            | Expr::Tuple(_)
            | Expr::Record { .. }
            | Expr::Field(..)
            | Expr::Unary(..)
            | Expr::Binary(..)
            | Expr::Cast(..)
            | Expr::If { .. }
            | Expr::Array(_) => self.host_children(e),
            Expr::Method { recv, method, args } => self.host_method(recv, method, args),
            Expr::Assoc { ty, func, args } => self.host_assoc(ty, func, args),
            Expr::Index(b, i) => self.host_index(b, i),
            Expr::Seq(es) if es.is_empty() => {
                Err(unsupported("an empty `vec![]` outside parallel operations"))
            }
            Expr::Seq(_) | Expr::SeqRepeat(..) => {
                match self.type_of(e)? {
                    Type::Seq(t) if is_flat(&t) => {}
                    t => {
                        return Err(unsupported(format!(
                            "a `vec!` of type {t} outside parallel operations"
                        )))
                    }
                }
                self.host_children(e)
            }
            other => Err(unsupported(format!(
                "{} outside parallel operations",
                describe(other)
            ))),
        }
    }

    /// A top-level parallel operation: the launch that replaces it (its kernels made).
    pub(super) fn par(&mut self, op: ParOp, args: &[Expr]) -> R<Expr> {
        op.view(args).map_err(|e| e.to_string())?.lower(self)
    }

    /// A block of the host program; its `let`s get their types.
    fn host_block(&mut self, stmts: &[Stmt], result: Option<&Expr>) -> R<Expr> {
        let mut out = Vec::new();
        for s in stmts {
            match s {
                Stmt::Let { pat, ty, init } => {
                    let Some(init) = init else {
                        return Err(unsupported(
                            "a `let` without a value outside parallel operations",
                        ));
                    };
                    let t = match ty {
                        Type::Infer => self.type_of(init)?,
                        t => t.clone(),
                    };
                    let lowered = match (&t, init) {
                        // A new tensor: its element type is the one its `let` gives it.
                        (Type::Tensor(_), Expr::Assoc { ty, func, args })
                            if (ty.as_str(), func.as_str()) == ("Tensor", "zeros") =>
                        {
                            self.new_tensor(func, args)?
                        }
                        _ => self.host(init)?,
                    };
                    bind_pattern(pat, &t, &mut self.host_scope, &self.records)
                        .map_err(|e| e.to_string())?;
                    out.push(Stmt::Let {
                        pat: pat.clone(),
                        ty: t,
                        init: Some(lowered),
                    });
                }
                Stmt::Expr(x) => out.push(Stmt::Expr(self.host(x)?)),
            }
        }
        let result = match result {
            Some(r) => Some(Box::new(self.host(r)?)),
            None => None,
        };
        Ok(Expr::Block { stmts: out, result })
    }

    /// A method the host evaluates: of numbers (those it knows), lengths, tensor shapes.
    fn host_method(&mut self, recv: &Expr, method: &str, args: &[Expr]) -> R<Expr> {
        let rt = self.type_of(recv)?;
        let scalar_method = matches!(rt, Type::Scalar(_)) && HOST_METHODS.contains(&method);
        let seq_len = matches!(rt, Type::Seq(_) | Type::Tensor(_) | Type::Array(..))
            && matches!(method, "len" | "is_empty")
            && args.is_empty();
        let tensor_dims = matches!(rt, Type::Tensor(_))
            && matches!(method, "shape" | "rank" | "to_vec")
            && args.is_empty();
        let tensor_element = matches!(rt, Type::Tensor(_)) && matches!(method, "get" | "set");
        if !(scalar_method || seq_len || tensor_dims || tensor_element) {
            return Err(unsupported(format!(
                "`.{method}()` outside parallel operations"
            )));
        }
        Ok(Expr::Method {
            recv: Box::new(self.host(recv)?),
            method: method.to_string(),
            args: args.iter().map(|a| self.host(a)).collect::<R<_>>()?,
        })
    }

    /// `Tensor::zeros(shape)` (where a `let` gives its type) or `Tensor::from_vec(v,
    /// shape)`: made on the device (`cuda::host::tensors`).
    fn new_tensor(&mut self, func: &str, args: &[Expr]) -> R<Expr> {
        let shape = args.last().ok_or("a tensor without a shape")?;
        match self.type_of(shape)? {
            Type::Array(_, k) if k > crate::backend::abi::MAX_RANK => {
                return Err(unsupported(format!(
                    "tensors of rank {k} (compiled code holds rank {} at most)",
                    crate::backend::abi::MAX_RANK
                )))
            }
            Type::Array(..) | Type::Seq(_) => {}
            t => return Err(unsupported(format!("a tensor's shape of type {t}"))),
        }
        Ok(Expr::Assoc {
            ty: "Tensor".into(),
            func: func.to_string(),
            args: args.iter().map(|a| self.host(a)).collect::<R<_>>()?,
        })
    }

    /// `T::func(..)` on the host: number methods it knows, `same_len` and
    /// `histogram_len`, `scatter_len`.
    fn host_assoc(&mut self, ty: &str, func: &str, args: &[Expr]) -> R<Expr> {
        if (ty, func) == ("Tensor", "from_vec") {
            return self.new_tensor(func, args);
        }
        let known = (ty == "accel" && matches!(func, "same_len" | "histogram_len" | "scatter_len"))
            || ((ScalarType::from_name(ty).is_some() || ty == "cmp")
                && HOST_METHODS.contains(&func));
        if !known {
            return Err(unsupported(format!(
                "`{ty}::{func}` outside parallel operations"
            )));
        }
        Ok(Expr::Assoc {
            ty: ty.to_string(),
            func: func.to_string(),
            args: args.iter().map(|a| self.host(a)).collect::<R<_>>()?,
        })
    }

    /// Reading one element back (of flat elements, or a row of them).
    fn host_index(&mut self, b: &Expr, i: &Expr) -> R<Expr> {
        let readable = match self.type_of(b)? {
            Type::Seq(e) => is_flat(&e) || matches!(*e, Type::Seq(ref r) if is_flat(r)),
            Type::Array(e, _) => is_flat(&e),
            _ => false,
        };
        if !readable {
            return Err(unsupported(
                "indexing this value outside parallel operations",
            ));
        }
        Ok(Expr::Index(
            Box::new(self.host(b)?),
            Box::new(self.host(i)?),
        ))
    }

    /// `e` with each child lowered by [`Self::host`].
    pub(super) fn host_children(&mut self, e: &Expr) -> R<Expr> {
        let mut out = e.clone();
        let mut err = None;
        out.for_each_child_mut(&mut |c| {
            if err.is_none() {
                match self.host(c) {
                    Ok(x) => *c = x,
                    Err(m) => err = Some(m),
                }
            }
        });
        err.map_or(Ok(out), Err)
    }

    /// Evaluates argument `k` of the operation `op(args)` first, on the host (launching
    /// what it needs), into a variable; then lowers the operation over that variable.
    pub(super) fn with_host_arg(
        &mut self,
        op: ParOp,
        args: &[&Expr],
        k: usize,
        what: &str,
    ) -> R<Expr> {
        let name = self.fresh(what);
        let t = self.type_of(args[k])?;
        let lowered = self.host(args[k])?;
        self.host_scope.insert(name.clone(), t.clone());
        let mut again: Vec<Expr> = args.iter().map(|a| (*a).clone()).collect();
        again[k] = Expr::var(&name);
        let launch = self.par(op, &again)?;
        Ok(Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind(&name),
                ty: t,
                init: Some(lowered),
            }],
            result: Some(Box::new(launch)),
        })
    }

    /// Makes one launch of `kind` for an operation with arguments `args` over `0..n`:
    /// `generate` writes its kernels (named `PREFIX` + each of `suffixes`) given the
    /// prefix; returns the host program's call of the launch.
    pub(super) fn launch(
        &mut self,
        args: &[&Expr],
        n: &Expr,
        kind: LaunchKind,
        suffixes: &[&str],
        generate: impl FnOnce(&mut KernelGen<'_>, &str) -> R<String>,
    ) -> R<Expr> {
        let k = self.launches.len();
        let kernel = format!("accel_k{k}");
        // The host variables the kernels read: everything the operation mentions that the
        // host program binds.
        let mut free = Vec::new();
        let mut seen = HashSet::new();
        for a in args {
            a.walk(&mut |x| {
                if let Expr::Var(v) = x {
                    if let Some(t) = self.host_scope.get(v) {
                        if seen.insert(v.clone()) {
                            free.push((v.clone(), t.clone()));
                        }
                    }
                }
            });
        }
        let n_host = self.host(n)?;
        let launch = Launch {
            kind,
            kernel: kernel.clone(),
            kernels: suffixes.iter().map(|s| format!("{kernel}{s}")).collect(),
            n: n_host,
            free: free.clone(),
        };
        let mut kg = KernelGen::new(&self.records, &free);
        let src = generate(&mut kg, &kernel)?;
        self.source.push_str(&src);
        self.launches.push(launch);
        Ok(Expr::Call {
            func: launch_name(k),
            args: vec![],
            loc: Default::default(),
        })
    }
}

/// A construct named for messages.
fn describe(e: &Expr) -> String {
    match e {
        Expr::Index(..) => "indexing".into(),
        Expr::Slice { .. } => "slicing".into(),
        Expr::Seq(_) | Expr::SeqRepeat(..) => "a `vec!`".into(),
        Expr::Match { .. } => "`match`".into(),
        Expr::For { .. } => "`for` loops".into(),
        Expr::While { .. } => "`while` loops".into(),
        Expr::Assign { .. } => "assignment".into(),
        Expr::ArrayRepeat(..) => "`[x; n]`".into(),
        _ => "this construct".into(),
    }
}
