//! Pieces of the combines: a scan's fix-ups (every part's carry, or one part's) and
//! which destination of a histogram or scatter only the combine reads.

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
    Expr::Par {
        op: ParOp::Create,
        args: vec![
            Expr::len_of(Expr::var(SCANNED)),
            Expr::Lambda {
                params: vec![(Pat::bind(k), usize_ty())],
                body: Box::new(carried),
            },
        ],
        loc,
    }
}
