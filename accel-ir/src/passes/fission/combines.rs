//! Pieces of the split: a scan's fix-ups (every part's carry, or one part's), which
//! destination of a histogram or scatter only the combine reads, and captures read
//! through aliases.

use super::*;

/// The destination of a `reduce_by_index` or `scatter` (`t`) that is a captured flat
/// sequence whose elements the part program (`part`) does not read.
pub(super) fn destination(
    t: &Tail<'_>,
    captures: &[(String, Type)],
    part: &Expr,
) -> Option<String> {
    if !matches!(t.op, ParOp::ReduceByIndex | ParOp::Scatter) {
        return None;
    }
    let Expr::Var(d) = &t.args[0] else {
        return None;
    };
    let captured = captures
        .iter()
        .any(|(x, ty)| x == d && matches!(ty, Type::Seq(e) if flat(e)));
    let rebound = t.prefix.iter().any(|s| match s {
        Stmt::Let { pat, .. } => pat.bound_names().iter().any(|n| n == d),
        Stmt::Expr(_) => false,
    });
    let (mut all, mut lengths) = (0, 0);
    part.walk(&mut |y| match y {
        Expr::Var(v) if v == d => all += 1,
        Expr::Method { recv, method, .. }
            if method == "len" && matches!(&**recv, Expr::Var(v) if v == d) =>
        {
            lengths += 1
        }
        _ => {}
    });
    (captured && !rebound && !part.binds(d) && all == lengths).then(|| d.clone())
}

/// `create(len SCANNED, |k| if k < CHUNK { SCANNED[k] } else { op(CARRIES[k / CHUNK - 1],
/// SCANNED[k]) })`.
pub(super) fn scan_fixup(op: &Expr, loc: crate::Loc) -> Expr {
    let k = "accel#k";
    let at = |xs: &str, c: Expr| index(Expr::var(xs), c);
    let one = Expr::Lit(crate::expr::Lit::Int(1, Some(ScalarType::Usize)));
    let part_of = binary(BinOp::Div, Expr::var(k), Expr::var(CHUNK));
    let carried = Expr::applied(
        op,
        vec![
            at(CARRIES, binary(BinOp::Sub, part_of, one)),
            at(SCANNED, Expr::var(k)),
        ],
    );
    let element = Expr::If {
        cond: Box::new(binary(BinOp::Lt, Expr::var(k), Expr::var(CHUNK))),
        then: Box::new(at(SCANNED, Expr::var(k))),
        els: Some(Box::new(carried)),
    };
    over_scanned(k, element, loc)
}

/// `create(len SCANNED, |k| element)`.
fn over_scanned(k: &str, element: Expr, loc: crate::Loc) -> Expr {
    Expr::Par {
        op: ParOp::Create,
        args: vec![
            Expr::len_of(Expr::var(SCANNED)),
            Expr::Lambda {
                params: vec![(Pat::bind(k), usize_ty())],
                body: Box::new(element),
            },
        ],
        loc,
    }
}

/// `create(len SCANNED, |k| op(CARRIES[0], SCANNED[k]))`.
pub(super) fn scan_carry_in(op: &Expr, loc: crate::Loc) -> Expr {
    let k = "accel#k";
    let zero = Expr::Lit(crate::expr::Lit::Int(0, Some(ScalarType::Usize)));
    let carried = Expr::applied(
        op,
        vec![
            index(Expr::var(CARRIES), zero),
            index(Expr::var(SCANNED), Expr::var(k)),
        ],
    );
    over_scanned(k, carried, loc)
}

/// `body` without its leading `let a = x;` that only name a capture `x` again (stages bind
/// earlier stages' results so), every `a` read as `x`: a capture read through an alias is
/// then sliced like one read directly. Fused names are unique, so no other binding can
/// be renamed by it.
pub(super) fn without_aliases(body: &Expr, captures: &[(String, Type)]) -> Option<Expr> {
    let Expr::Block {
        stmts,
        result: Some(r),
    } = body
    else {
        return None;
    };
    let mut renames: Vec<(String, String)> = Vec::new();
    let mut kept = Vec::new();
    for st in stmts {
        if let Stmt::Let {
            pat: Pat::Bind {
                name,
                mutable: false,
            },
            init: Some(Expr::Var(v)),
            ..
        } = st
        {
            let to = renames
                .iter()
                .find(|(a, _)| a == v)
                .map_or(v.clone(), |(_, to)| to.clone());
            if captures.iter().any(|(c, _)| *c == to) {
                renames.push((name.clone(), to));
                continue;
            }
        }
        kept.push(st.clone());
    }
    if renames.is_empty() {
        return None;
    }
    let mut out = Expr::Block {
        stmts: kept,
        result: Some(r.clone()),
    };
    rename(&mut out, &renames);
    Some(out)
}

/// Reads every `a` of `renames` as its `x`.
fn rename(e: &mut Expr, renames: &[(String, String)]) {
    if let Expr::Var(v) = e {
        if let Some((_, to)) = renames.iter().find(|(a, _)| a == v) {
            *v = to.clone();
        }
        return;
    }
    e.for_each_child_mut(&mut |c| rename(c, renames));
}
