//! Stages: a site that runs several parallel operations one after another (`reduce` of a
//! `filter` of a histogram, a normalisation by a sum) becomes a sequence of programs that
//! each end in one of them, as Accelerate's fission treats a program operation by
//! operation. Stage `k`'s result is a value named [`stage_name`]`(k)`, which later stages
//! and the site's last expression read as a capture; each stage can then be split across
//! devices by itself ([`super::split`]).
//!
//! Only operations the site runs unconditionally are staged: one inside an `if` or a
//! loop of the site's own code would run whether or not its branch is taken (or once for
//! every iteration), so such a site is not staged; a nested block runs unconditionally,
//! and its operations are staged in order. Statements before an operation (`let`s of
//! scalars) are repeated in every later stage that may read them: they are pure and
//! cheap.

use super::has_par;
use crate::expr::{Expr, ParOp, Stmt};
use crate::passes::typecheck::type_of;
use crate::types::{Records, Type};

/// One stage: a program ending in one parallel operation, from the site's captures and
/// the earlier stages' results.
#[derive(Debug, Clone)]
pub struct Stage {
    /// The program.
    pub body: Expr,
    /// Its result's type.
    pub ty: Type,
}

/// A site as stages.
#[derive(Debug, Clone)]
pub struct Staged {
    /// The stages, in the order they run.
    pub stages: Vec<Stage>,
    /// The site's value from the captures and every stage's result.
    pub last: Expr,
}

/// The capture that holds stage `k`'s result.
pub fn stage_name(k: usize) -> String {
    format!("accel#stage{k}")
}

/// The arguments of `op` that are its input sequences or sizes (evaluated once, before
/// the operation): the places a parallel operation of the site's own may sit.
fn value_args(op: ParOp) -> &'static [usize] {
    match op {
        ParOp::Map | ParOp::Filter => &[1],
        ParOp::Map2 => &[1, 2],
        ParOp::Reduce | ParOp::Scan => &[1, 2],
        ParOp::Flatten => &[0],
        ParOp::Create | ParOp::ParallelLoop => &[0],
        ParOp::ReduceByIndex => &[0, 2, 3, 4],
        ParOp::Scatter => &[0, 1, 2],
    }
}

struct Stager<'a> {
    /// The `let`s seen so far (free of parallel operations once staged).
    prefix: Vec<Stmt>,
    stages: Vec<Stage>,
    captures: &'a [(String, Type)],
    records: &'a Records,
}

impl Stager<'_> {
    /// Replaces every parallel operation `e` runs unconditionally with its stage's
    /// result (innermost first), or says why the site cannot be staged.
    fn extract(&mut self, e: &mut Expr) -> Result<(), String> {
        match e {
            Expr::Par { op, args, .. } => {
                let op = *op;
                for &k in value_args(op) {
                    match &mut args[k] {
                        // An input that is a delayed array is part of this operation
                        // (fusion made it so): only its size may hold a stage.
                        Expr::Par {
                            op: ParOp::Create,
                            args: inner,
                            ..
                        } => self.extract(&mut inner[0])?,
                        a => self.extract(a)?,
                    }
                }
                // Functions' bodies run inside the operation, element by element.
                for (k, a) in args.iter().enumerate() {
                    if !value_args(op).contains(&k)
                        && !matches!(a, Expr::Lambda { .. })
                        && has_par(a)
                    {
                        return Err("a parallel operation is an argument it cannot stage".into());
                    }
                }
                let body = if self.prefix.is_empty() {
                    e.clone()
                } else {
                    Expr::Block {
                        stmts: self.prefix.clone(),
                        result: Some(Box::new(e.clone())),
                    }
                };
                let ty = self.type_of(&body)?;
                let name = stage_name(self.stages.len());
                self.stages.push(Stage { body, ty });
                *e = Expr::Var(name);
                Ok(())
            }
            Expr::Lambda { .. } => Ok(()),
            Expr::If { .. } | Expr::Match { .. } | Expr::While { .. } | Expr::For { .. }
                if has_par(e) =>
            {
                Err("it runs a parallel operation under a condition or in a loop".into())
            }
            Expr::Block { .. } if has_par(e) => self.extract_block(e),
            _ => {
                let mut failure = Ok(());
                e.for_each_child_mut(&mut |c| {
                    if failure.is_ok() {
                        failure = self.extract(c);
                    }
                });
                failure
            }
        }
    }

    /// Stages the operations of a nested block (which runs unconditionally) in order, its
    /// `let`s before them repeated in their stages (and only theirs: the block's names end
    /// with it).
    fn extract_block(&mut self, e: &mut Expr) -> Result<(), String> {
        let Expr::Block { stmts, result } = e else {
            return Ok(());
        };
        let outer = self.prefix.len();
        for st in stmts.iter_mut() {
            match st {
                Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => self.extract(e)?,
                Stmt::Let { init: None, .. } => {}
            }
            self.prefix.push(st.clone());
        }
        if let Some(r) = result {
            self.extract(r)?;
        }
        self.prefix.truncate(outer);
        // What is left of it is scalar `let`s and stages' results: a block whose
        // value is a name it does not bind is that name (its `let`s are pure).
        if let Some(Expr::Var(v)) = result.as_deref() {
            if !stmts.iter().any(|st| binds(st, v)) {
                *e = Expr::Var(v.clone());
            }
        }
        Ok(())
    }

    /// The type of a stage's program, from the captures and the earlier stages'.
    fn type_of(&self, body: &Expr) -> Result<Type, String> {
        let vars = |v: &str| {
            self.captures
                .iter()
                .find(|(n, _)| n == v)
                .map(|(_, t)| t.clone())
                .or_else(|| {
                    (0..self.stages.len())
                        .find(|&k| stage_name(k) == v)
                        .map(|k| self.stages[k].ty.clone())
                })
        };
        type_of(body, &vars, self.records).map_err(|e| format!("a stage's type: {e}"))
    }
}

/// Whether `st` binds the name `v`.
fn binds(st: &Stmt, v: &str) -> bool {
    match st {
        Stmt::Let { pat, .. } => pat.bound_names().iter().any(|n| n == v),
        Stmt::Expr(_) => false,
    }
}

/// The stages of a fused site (`body` with its captures; `records`: the records its types
/// name), or why it is not staged. A site with one parallel operation at its end is one
/// stage.
pub fn stages(
    body: &Expr,
    captures: &[(String, Type)],
    records: &Records,
) -> Result<Staged, String> {
    let (stmts, result): (&[Stmt], Option<&Expr>) = match body {
        Expr::Block { stmts, result } => (stmts, result.as_deref()),
        e => (&[], Some(e)),
    };
    let mut s = Stager {
        prefix: Vec::new(),
        stages: Vec::new(),
        captures,
        records,
    };
    for st in stmts {
        let mut st = st.clone();
        match &mut st {
            Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => s.extract(e)?,
            Stmt::Let { init: None, .. } => {}
        }
        s.prefix.push(st);
    }
    let mut last = result.cloned().unwrap_or(Expr::Tuple(Vec::new()));
    s.extract(&mut last)?;
    if s.stages.is_empty() {
        return Err("it runs no parallel operation".into());
    }
    let last = if s.prefix.is_empty() {
        last
    } else {
        Expr::Block {
            stmts: s.prefix,
            result: Some(Box::new(last)),
        }
    };
    Ok(Staged {
        stages: s.stages,
        last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BinOp, Lit, Pat};
    use crate::types::ScalarType;

    fn f64s() -> Type {
        Type::Seq(Box::new(Type::Scalar(ScalarType::F64)))
    }

    fn f64_() -> Type {
        Type::Scalar(ScalarType::F64)
    }

    fn add() -> Expr {
        Expr::Lambda {
            params: vec![(Pat::bind("a"), f64_()), (Pat::bind("b"), f64_())],
            body: Box::new(Expr::Binary(
                BinOp::Add,
                Box::new(Expr::var("a")),
                Box::new(Expr::var("b")),
            )),
        }
    }

    fn sum_of(xs: Expr) -> Expr {
        Expr::par(
            ParOp::Reduce,
            vec![add(), Expr::Lit(Lit::Float(0.0, Some(ScalarType::F64))), xs],
        )
    }

    /// `create(xs.len(), |i| xs[i] / s)`.
    fn divided(s: Expr) -> Expr {
        Expr::par(
            ParOp::Create,
            vec![
                Expr::len_of(Expr::var("xs")),
                Expr::Lambda {
                    params: vec![(Pat::bind("i"), Type::Scalar(ScalarType::Usize))],
                    body: Box::new(Expr::Binary(
                        BinOp::Div,
                        Box::new(Expr::Index(
                            Box::new(Expr::var("xs")),
                            Box::new(Expr::var("i")),
                        )),
                        Box::new(s),
                    )),
                },
            ],
        )
    }

    /// `{ let s = reduce(+, 0.0, xs); create(xs.len(), |i| xs[i] / s) }`.
    fn normalised() -> Expr {
        Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind("s"),
                ty: f64_(),
                init: Some(sum_of(Expr::var("xs"))),
            }],
            result: Some(Box::new(divided(Expr::var("s")))),
        }
    }

    #[test]
    fn a_normalisation_is_a_sum_then_a_map_that_reads_it() {
        let body = normalised();
        let caps = vec![("xs".to_string(), f64s())];
        let staged = stages(&body, &caps, &Records::default()).unwrap();
        assert_eq!(staged.stages.len(), 2);
        assert_eq!(staged.stages[0].ty, f64_());
        assert_eq!(staged.stages[1].ty, f64s());
        // The second stage binds `s` to the first's result before its `create`.
        let second = staged.stages[1].body.to_string();
        assert!(
            second.starts_with("(do (let s: f64 accel#stage0) (create"),
            "{second}"
        );
        assert_eq!(
            staged.last.to_string(),
            "(do (let s: f64 accel#stage0) accel#stage1)"
        );
    }

    #[test]
    fn operations_nested_as_inputs_run_innermost_first_and_functions_are_left_alone() {
        // (reduce(+, 0.0, create(n, |i| xs[i] / reduce(+, 0.0, xs))), 1.0): the inner
        // reduce is inside the element (run per element), not a stage.
        let inner = divided(sum_of(Expr::var("xs")));
        let body = Expr::Tuple(vec![
            sum_of(inner),
            Expr::Lit(Lit::Float(1.0, Some(ScalarType::F64))),
        ]);
        let caps = vec![("xs".to_string(), f64s())];
        let staged = stages(&body, &caps, &Records::default()).unwrap();
        assert_eq!(staged.stages.len(), 1);
        assert_eq!(staged.last.to_string(), "(tuple accel#stage0 1.0f64)");
        // A sum over a sequence made by a scan: the scan is a stage of its own.
        let scan = Expr::par(
            ParOp::Scan,
            vec![
                add(),
                Expr::Lit(Lit::Float(0.0, Some(ScalarType::F64))),
                Expr::var("xs"),
            ],
        );
        let staged = stages(&sum_of(scan), &caps, &Records::default()).unwrap();
        assert_eq!(staged.stages.len(), 2);
        assert_eq!(staged.stages[0].ty, f64s());
        assert!(staged.stages[1].body.to_string().ends_with("accel#stage0)"));
    }

    #[test]
    fn a_nested_block_is_staged_in_order_and_its_names_end_with_it() {
        // reduce(+, 0.0, { let s = reduce(+, 0.0, xs); create(xs.len(), |i| xs[i] / s) }):
        // the block's sum, then its map (with `s` bound), then the outer sum over it.
        let block = normalised();
        let caps = vec![("xs".to_string(), f64s())];
        let staged = stages(&sum_of(block), &caps, &Records::default()).unwrap();
        assert_eq!(staged.stages.len(), 3);
        assert_eq!(
            staged
                .stages
                .iter()
                .map(|s| s.ty.clone())
                .collect::<Vec<_>>(),
            vec![f64_(), f64s(), f64_()]
        );
        let map = staged.stages[1].body.to_string();
        assert!(
            map.starts_with("(do (let s: f64 accel#stage0) (create"),
            "{map}"
        );
        // The outer sum reads the map's stage directly, without the block's `let`.
        let sum = staged.stages[2].body.to_string();
        assert!(sum.starts_with("(reduce "), "{sum}");
        assert!(sum.ends_with(" accel#stage1)"), "{sum}");
        assert_eq!(staged.last.to_string(), "accel#stage2");
    }

    #[test]
    fn an_operation_under_a_condition_is_not_staged() {
        let body = Expr::If {
            cond: Box::new(Expr::Lit(Lit::Bool(true))),
            then: Box::new(sum_of(Expr::var("xs"))),
            els: Some(Box::new(Expr::Lit(Lit::Float(0.0, Some(ScalarType::F64))))),
        };
        let caps = vec![("xs".to_string(), f64s())];
        assert_eq!(
            stages(&body, &caps, &Records::default()).unwrap_err(),
            "it runs a parallel operation under a condition or in a loop"
        );
    }
}
