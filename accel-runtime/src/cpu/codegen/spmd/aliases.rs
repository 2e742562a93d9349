//! Aliases: names an element binds once to another variable (inlining binds a function's
//! parameters to its arguments so), read through to the name they stand for when the
//! gang loop looks for patterns of its index (`p / d`).

use accel_ir::{Expr, Pat, Stmt};
use std::collections::HashMap;

/// Names bound once to another variable in an element (`let p2 = p;`, as inlining binds
/// a function's parameters), each to the name it stands for.
pub(in crate::cpu::codegen) type Aliases = HashMap<String, String>;

/// The aliases of `body` (see [`Aliases`]).
pub(super) fn aliases(body: &Expr) -> Aliases {
    let mut out = Aliases::new();
    body.walk(&mut |e| {
        let Expr::Block { stmts, .. } = e else {
            return;
        };
        for st in stmts {
            if let accel_ir::Stmt::Let {
                pat:
                    Pat::Bind {
                        name,
                        mutable: false,
                    },
                init: Some(Expr::Var(y)),
                ..
            } = st
            {
                out.insert(name.clone(), y.clone());
            }
        }
    });
    out
}

/// `e` with every alias replaced by the name it stands for.
pub(in crate::cpu::codegen) fn dealias(e: &Expr, aliases: &Aliases) -> Expr {
    let mut e = e.clone();
    fn go(e: &mut Expr, aliases: &Aliases) {
        if let Expr::Var(x) = e {
            let mut name = x.clone();
            // Binders are unique, so the chain ends.
            while let Some(y) = aliases.get(&name) {
                name = y.clone();
            }
            *x = name;
        }
        e.for_each_child_mut(&mut |c| go(c, aliases));
    }
    go(&mut e, aliases);
    e
}

/// `e` with aliases and the names `lets` bind read through, each `let`'s value in turn
/// (the `let`s before an element's `if` or loop, which the patterns of the gang's index
/// are looked for through).
pub(super) fn expand_lets(e: &Expr, lets: &[Stmt], aliases: &Aliases) -> Expr {
    fn go(e: &mut Expr, lets: &[Stmt], aliases: &Aliases) {
        if let Expr::Var(x) = e {
            let init = lets.iter().find_map(|s| match s {
                Stmt::Let {
                    pat: Pat::Bind { name, .. },
                    init: Some(init),
                    ..
                } if name == x => Some(init),
                _ => None,
            });
            // Binders are unique and a `let` reads only those before it: this ends.
            if let Some(init) = init {
                *e = expand_lets(init, lets, aliases);
            }
            return;
        }
        e.for_each_child_mut(&mut |c| go(c, lets, aliases));
    }
    let mut e = dealias(e, aliases);
    go(&mut e, lets, aliases);
    e
}
