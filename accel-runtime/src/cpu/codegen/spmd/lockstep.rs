//! Lockstep counters: the variables of a `while` on a varying condition that every lane
//! still in the loop holds the same value of.
//!
//! `let mut k = 1; while k < 8 && is_letter(text[i + k]) { k += 1; }` (a search forward
//! from the lane's index) makes `k` varying: lanes leave the loop at different counts.
//! But the lanes still in it entered together with the same `k` and have all run the
//! body as often: when every assignment to `k` in the loop is a statement of the body
//! itself (not under further control) whose value reads nothing varying but `k`, the
//! running lanes agree on `k`. The loop can then keep `k` as one scalar, and
//! `text[i + k]` is a vector load at a uniform offset instead of a gather; each lane's
//! `k` after the loop is the value it left with, recorded at every test of the
//! condition.

use super::uniform::reads_varying;
use accel_ir::{Expr, Pat, Stmt};
use std::collections::{HashMap, HashSet};

/// For each `while` statement of `stmts` (by index), the variables bound by a `let mut`
/// before it in `stmts` that are lockstep counters of that loop, given the gang's
/// varying variables.
pub(super) fn lockstep_counters(
    stmts: &[Stmt],
    varying: &HashSet<String>,
) -> HashMap<usize, Vec<String>> {
    let mut found = HashMap::new();
    for (w, st) in stmts.iter().enumerate() {
        let Stmt::Expr(Expr::While { cond, body }) = st else {
            continue;
        };
        let names: Vec<String> = stmts[..w]
            .iter()
            .enumerate()
            .filter_map(|(l, st)| match st {
                Stmt::Let {
                    pat:
                        Pat::Bind {
                            name,
                            mutable: true,
                        },
                    init: Some(init),
                    ..
                } if varying.contains(name)
                    && !reads_varying(init, varying)
                    && !stmts[l + 1..w].iter().any(|s| stmt_assigns(s, name))
                    && counts_in_step(name, cond, body, varying) =>
                {
                    Some(name.clone())
                }
                _ => None,
            })
            .collect();
        if !names.is_empty() {
            found.insert(w, names);
        }
    }
    found
}

/// Whether `name` advances in step in `while cond { body }`: assigned only by statements
/// of `body` itself with values reading no varying variable but `name`, never in `cond`,
/// and not bound again inside (which would make a read of it another variable).
fn counts_in_step(name: &str, cond: &Expr, body: &Expr, varying: &HashSet<String>) -> bool {
    let Expr::Block { stmts, result } = body else {
        return false;
    };
    if assigns(cond, name) || cond.binds(name) || body.binds(name) {
        return false;
    }
    if result.as_deref().is_some_and(|r| assigns(r, name)) {
        return false;
    }
    let others: HashSet<String> = varying.iter().filter(|v| *v != name).cloned().collect();
    let mut stepped = false;
    for st in stmts {
        match st {
            Stmt::Expr(Expr::Assign { target, value }) if matches!(&**target, Expr::Var(v) if v == name) =>
            {
                if assigns(value, name) || reads_varying(value, &others) {
                    return false;
                }
                stepped = true;
            }
            st if stmt_assigns(st, name) => return false,
            _ => {}
        }
    }
    stepped
}

fn stmt_assigns(st: &Stmt, name: &str) -> bool {
    match st {
        Stmt::Let { init, .. } => init.as_ref().is_some_and(|e| assigns(e, name)),
        Stmt::Expr(e) => assigns(e, name),
    }
}

/// Whether `e` assigns to `name` (or a part of it) anywhere.
fn assigns(e: &Expr, name: &str) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if let Expr::Assign { target, .. } = x {
            found |= target.assigned_root() == Some(name);
        }
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{BinOp, Lit, ScalarType, Type};

    fn var(n: &str) -> Expr {
        Expr::var(n)
    }

    fn lit(x: u64) -> Expr {
        Expr::Lit(Lit::Int(x, Some(ScalarType::Usize)))
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    fn let_mut(name: &str, init: Expr) -> Stmt {
        Stmt::Let {
            pat: Pat::Bind {
                name: name.into(),
                mutable: true,
            },
            ty: Type::Infer,
            init: Some(init),
        }
    }

    fn assign(name: &str, value: Expr) -> Stmt {
        Stmt::Expr(Expr::Assign {
            target: Box::new(var(name)),
            value: Box::new(value),
        })
    }

    fn block(stmts: Vec<Stmt>) -> Expr {
        Expr::Block {
            stmts,
            result: None,
        }
    }

    fn while_(cond: Expr, body: Vec<Stmt>) -> Stmt {
        Stmt::Expr(Expr::While {
            cond: Box::new(cond),
            body: Box::new(block(body)),
        })
    }

    fn set(names: &[&str]) -> HashSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// `while k < 8 && x[i + k] > 0 { <body> }` after `let mut k = 1;`.
    fn search(body: Vec<Stmt>) -> Vec<Stmt> {
        let probe = Expr::Index(
            Box::new(var("x")),
            Box::new(bin(BinOp::Add, var("i"), var("k"))),
        );
        vec![
            let_mut("k", lit(1)),
            while_(
                bin(
                    BinOp::And,
                    bin(BinOp::Lt, var("k"), lit(8)),
                    bin(BinOp::Gt, probe, lit(0)),
                ),
                body,
            ),
        ]
    }

    #[test]
    fn a_counter_stepped_by_the_body_is_in_lockstep() {
        let stmts = search(vec![assign("k", bin(BinOp::Add, var("k"), var("step")))]);
        let found = lockstep_counters(&stmts, &set(&["i", "k"]));
        assert_eq!(found, HashMap::from([(1, vec!["k".to_string()])]));
    }

    #[test]
    fn a_counter_stepped_under_control_or_by_a_varying_value_is_not() {
        let under_if = Stmt::Expr(Expr::If {
            cond: Box::new(bin(BinOp::Lt, var("i"), lit(3))),
            then: Box::new(block(vec![assign("k", bin(BinOp::Add, var("k"), lit(1)))])),
            els: None,
        });
        assert!(lockstep_counters(&search(vec![under_if]), &set(&["i", "k"])).is_empty());
        let by_lane = assign("k", bin(BinOp::Add, var("k"), var("i")));
        assert!(lockstep_counters(&search(vec![by_lane]), &set(&["i", "k"])).is_empty());
        // Never stepped: nothing to gain, and nothing said about it.
        assert!(lockstep_counters(&search(vec![]), &set(&["i", "k"])).is_empty());
    }

    #[test]
    fn a_counter_set_per_lane_before_the_loop_or_started_per_lane_is_not() {
        let step = assign("k", bin(BinOp::Add, var("k"), lit(1)));
        let mut stmts = search(vec![step.clone()]);
        stmts.insert(1, assign("k", var("i")));
        assert!(lockstep_counters(&stmts, &set(&["i", "k"])).is_empty());
        let mut stmts = search(vec![step]);
        stmts[0] = let_mut("k", var("i"));
        assert!(lockstep_counters(&stmts, &set(&["i", "k"])).is_empty());
    }
}
