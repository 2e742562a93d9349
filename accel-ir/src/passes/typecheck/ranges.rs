//! Ranges in iterator chains (`(a..b).into_par_iter()`), of whatever integer type their
//! bounds have. The front end writes the range's length and its elements as
//! `lo.__range_count(hi, 0 as _)` (`__range_count_inclusive` for `a..=b`) and
//! `lo.__range_at(i, 0 as _)`, whose last argument takes the bounds' type; once inference
//! knows that type, they become ordinary arithmetic of it. A range whose end is not past
//! its start is empty, as in Rust.

use super::{err, IrError};
use crate::expr::{BinOp, Expr, Lit, ParOp, Pat, Stmt};
use crate::types::{ScalarType, Type};

/// The range methods the front end writes (never the user).
pub(super) const METHODS: [&str; 3] = ["__range_count", "__range_count_inclusive", "__range_at"];

/// Rewrites a range method whose operands are typed (their witness a suffixed literal) into
/// arithmetic of the bounds' type; `fresh` numbers the names it binds.
pub(super) fn desugar(e: &mut Expr, fresh: &mut usize) -> Result<(), IrError> {
    let Expr::Method { recv, method, args } = e else {
        return Ok(());
    };
    if !METHODS.contains(&method.as_str()) {
        return Ok(());
    }
    let [operand, witness] = args.as_mut_slice() else {
        return Err(err(format!("`{method}` takes two arguments")));
    };
    let Expr::Lit(Lit::Int(_, Some(t))) = witness else {
        return Err(err(format!("`{method}`: the range's type is not known")));
    };
    let t = *t;
    if t.is_float() || t == ScalarType::Bool {
        return Err(err(format!(
            "a range of {} is not an iterator: ranges in iterator chains are of integers",
            Type::Scalar(t)
        )));
    }
    let lo = std::mem::replace(&mut **recv, Expr::Tuple(vec![]));
    let operand = std::mem::replace(operand, Expr::Tuple(vec![]));
    *e = match method.as_str() {
        "__range_at" => element(lo, operand, t),
        m => count(lo, operand, t, m == "__range_count_inclusive", fresh),
    };
    Ok(())
}

fn usize_lit(v: u64) -> Expr {
    Expr::Lit(Lit::Int(v, Some(ScalarType::Usize)))
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

fn cast(e: Expr, from: ScalarType, to: ScalarType) -> Expr {
    if from == to {
        e
    } else {
        Expr::Cast(Box::new(e), Type::Scalar(to))
    }
}

fn is_zero(e: &Expr) -> bool {
    matches!(e, Expr::Lit(Lit::Int(0, _)))
}

/// Element `i` of the range starting at `lo`: `i + lo` for `usize` (wrapping for signed
/// types, whose element `i` may be past the type's positive half from `lo`).
fn element(lo: Expr, i: Expr, t: ScalarType) -> Expr {
    let i = cast(i, ScalarType::Usize, t);
    if is_zero(&lo) {
        i
    } else if t.is_signed_int() {
        Expr::Method {
            recv: Box::new(lo),
            method: "wrapping_add".into(),
            args: vec![i],
        }
    } else {
        bin(BinOp::Add, i, lo)
    }
}

/// The number of elements of `lo..hi` (`lo..=hi`), a `usize`.
fn count(lo: Expr, hi: Expr, t: ScalarType, inclusive: bool, fresh: &mut usize) -> Expr {
    let plus_one = |n: Expr| {
        if inclusive {
            bin(BinOp::Add, n, usize_lit(1))
        } else {
            n
        }
    };
    // From zero, an unsigned range holds `hi` elements (the form fusion knows best).
    if is_zero(&lo) && !t.is_signed_int() {
        // (A `usize` count stays as written: `create(n * m, ..)` is the shape the
        // backends' two-dimensional forms know.)
        let n = plus_one(cast(hi, t, ScalarType::Usize));
        return match n {
            n if t == ScalarType::Usize => n,
            n @ (Expr::Var(_) | Expr::Lit(_)) => n,
            n => bound(Vec::new(), n, fresh),
        };
    }
    // `hi` appears twice below: a computed one is bound once.
    let mut stmts = Vec::new();
    let hi = match hi {
        hi @ (Expr::Var(_) | Expr::Lit(_)) => hi,
        hi => let_fresh(&mut stmts, "range_hi", t, hi, fresh),
    };
    // The difference of the bounds as a `usize`: exact for every type once `hi` is past
    // `lo` (a signed difference wraps in 64 bits to its true value).
    let difference = if t.is_signed_int() {
        let wide = |e: Expr| cast(e, t, ScalarType::I64);
        let d = Expr::Method {
            recv: Box::new(wide(hi.clone())),
            method: "wrapping_sub".into(),
            args: vec![wide(lo.clone())],
        };
        cast(d, ScalarType::I64, ScalarType::Usize)
    } else {
        cast(
            bin(BinOp::Sub, hi.clone(), lo.clone()),
            t,
            ScalarType::Usize,
        )
    };
    let counted = Expr::If {
        cond: Box::new(bin(if inclusive { BinOp::Ge } else { BinOp::Gt }, hi, lo)),
        then: Box::new(plus_one(difference)),
        els: Some(Box::new(usize_lit(0))),
    };
    bound(stmts, counted, fresh)
}

/// `{ stmts; let range_n = count; range_n }`: a computed count bound to a name, which
/// [`hoist_count`] moves before its `create`.
fn bound(mut stmts: Vec<Stmt>, count: Expr, fresh: &mut usize) -> Expr {
    let n = let_fresh(&mut stmts, "range_n", ScalarType::Usize, count, fresh);
    Expr::Block {
        stmts,
        result: Some(Box::new(n)),
    }
}

/// Appends `let base#tN: t = init;` to `stmts` (`N` numbered by `fresh`, a name no other
/// pass makes); returns the variable.
fn let_fresh(
    stmts: &mut Vec<Stmt>,
    base: &str,
    t: ScalarType,
    init: Expr,
    fresh: &mut usize,
) -> Expr {
    *fresh += 1;
    let name = format!("{base}#t{fresh}");
    stmts.push(Stmt::Let {
        pat: Pat::bind(&name),
        ty: Type::Scalar(t),
        init: Some(init),
    });
    Expr::var(&name)
}

/// `create({ lets; n }, f)` as `{ lets; create(n, f) }`: a range's computed count bound
/// before the `create`, whose length is then a variable, the form fusion delays (a
/// filtered range's count builds no array). Names are unique in a site, so `f` cannot
/// mean another variable by a name the `let`s bind.
pub(super) fn hoist_count(e: &mut Expr) {
    let Expr::Par {
        op: ParOp::Create,
        args,
        ..
    } = e
    else {
        return;
    };
    let Some(Expr::Block {
        result: Some(result),
        ..
    }) = args.first()
    else {
        return;
    };
    if !matches!(**result, Expr::Var(_)) {
        return;
    }
    let Expr::Block {
        stmts,
        result: Some(n),
    } = std::mem::replace(&mut args[0], Expr::Tuple(vec![]))
    else {
        return;
    };
    args[0] = *n;
    let create = std::mem::replace(e, Expr::Tuple(vec![]));
    *e = Expr::Block {
        stmts,
        result: Some(Box::new(create)),
    };
}
