//! Iterator chains (`xs.par_iter().zip(&ys).map(|(x, y)| x * y).sum()`): each source,
//! adaptor and consumer lowered to the parallel operation it spells, so that a chain is
//! fused and parallelised like the functional form (API.md, "Inside accelerated code").
//! References are invisible to accelerated code, so `&` patterns and `*` derefs of the
//! elements need no lowering of their own. Debug mode runs the chain as the Rust it is
//! (see `expand::rust_form`).

use super::*;
use accel_ir::{Lit, Pat, ScalarType, Stmt};
use syn::spanned::Spanned;

/// Methods that start a chain over a sequence or a range.
const SOURCES: &[&str] = &["iter", "par_iter", "into_iter", "into_par_iter"];

/// Methods that start a chain over a sequence's slices (rayon's and std's).
const SLICES: &[&str] = &[
    "windows",
    "par_windows",
    "chunks",
    "par_chunks",
    "chunks_exact",
    "par_chunks_exact",
];

/// Whether `name` is a method that this module lowers.
pub(super) fn is_chain_method(name: &str) -> bool {
    SOURCES.contains(&name)
        || SLICES.contains(&name)
        || matches!(
            name,
            "copied"
                | "cloned"
                | "map"
                | "zip"
                | "enumerate"
                | "filter"
                | "sum"
                | "product"
                | "fold"
                | "reduce"
                | "count"
                | "all"
                | "any"
                | "collect"
                | "min"
                | "max"
        )
}

impl Lowerer {
    /// A chain method `m` (one [`is_chain_method`] accepts).
    pub(super) fn chain(&mut self, m: &syn::ExprMethodCall) -> Expr {
        let name = m.method.to_string();
        let here = loc(m.method.span());
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let arity = |n: usize| args.len() == n;
        match name.as_str() {
            s if SOURCES.contains(&s) && arity(0) => self.chain_source(&m.receiver),
            s if SLICES.contains(&s) && arity(1) => self.slices(&name, &m.receiver, args[0], here),
            "copied" | "cloned" if arity(0) => self.chain_source(&m.receiver),
            "map" if arity(1) => {
                let xs = self.chain_source(&m.receiver);
                let f = self.fn_arg(args[0], ParOp::Map);
                self.par_at(ParOp::Map, vec![f, xs], here)
            }
            "filter" if arity(1) => {
                let xs = self.chain_source(&m.receiver);
                let p = self.fn_arg(args[0], ParOp::Filter);
                self.par_at(ParOp::Filter, vec![p, xs], here)
            }
            "zip" if arity(1) => {
                let xs = self.chain_source(&m.receiver);
                let ys = self.chain_source(args[0]);
                self.zip(xs, ys, here)
            }
            "enumerate" if arity(0) => {
                let xs = self.chain_source(&m.receiver);
                self.enumerate(xs, here)
            }
            "sum" | "product" if arity(0) => {
                let xs = self.chain_source(&m.receiver);
                // Rust's float sum starts at -0.0, the neutral element of `+` (an empty
                // sum, or one of -0.0s, is -0.0); as an integer it is 0.
                let (op, ne) = if name == "sum" {
                    let minus_zero = Expr::Lit(Lit::Float(-0.0, None));
                    (BinOp::Add, Expr::Cast(Box::new(minus_zero), Type::Infer))
                } else {
                    (BinOp::Mul, numeric_literal(1))
                };
                let op = self.binary_lambda(op);
                self.par_at(ParOp::Reduce, vec![op, ne, xs], here)
            }
            "fold" if arity(2) => {
                let xs = self.chain_source(&m.receiver);
                let ne = self.expr(args[0]);
                let op = self.fn_arg(args[1], ParOp::Reduce);
                self.par_at(ParOp::Reduce, vec![op, ne, xs], here)
            }
            // rayon's `reduce(|| ne, op)`.
            "reduce" if arity(2) => {
                let syn::Expr::Closure(identity) = args[0] else {
                    return self.error(args[0], "the first argument of `.reduce` is the neutral element as a closure without parameters: `.reduce(|| 0, |a, b| a + b)`");
                };
                if !identity.inputs.is_empty() {
                    return self.error(identity, "the neutral element of `.reduce` is a closure without parameters: `.reduce(|| 0, |a, b| a + b)`");
                }
                let xs = self.chain_source(&m.receiver);
                let ne = self.expr(&identity.body);
                let op = self.fn_arg(args[1], ParOp::Reduce);
                self.par_at(ParOp::Reduce, vec![op, ne, xs], here)
            }
            "reduce" if arity(1) => self.error(
                m,
                "`.reduce(op)` returns an `Option`, which accelerated code does not have: give the neutral element, `.fold(ne, op)` (or rayon's `.reduce(|| ne, op)`)",
            ),
            "count" if arity(0) => {
                let xs = self.chain_source(&m.receiver);
                let one = Expr::Lambda {
                    params: vec![(Pat::Wild, Type::Infer)],
                    body: Box::new(Expr::Lit(Lit::Int(1, Some(ScalarType::Usize)))),
                };
                let ones = self.par_at(ParOp::Map, vec![one, xs], here);
                let ne = Expr::Lit(Lit::Int(0, Some(ScalarType::Usize)));
                let op = self.binary_lambda(BinOp::Add);
                self.par_at(ParOp::Reduce, vec![op, ne, ones], here)
            }
            "all" | "any" if arity(1) => {
                let xs = self.chain_source(&m.receiver);
                let p = self.fn_arg(args[0], ParOp::Map);
                let tests = self.par_at(ParOp::Map, vec![p, xs], here);
                let (op, ne) = if name == "all" {
                    (BinOp::And, true)
                } else {
                    (BinOp::Or, false)
                };
                let op = self.binary_lambda(op);
                self.par_at(ParOp::Reduce, vec![op, Expr::Lit(Lit::Bool(ne)), tests], here)
            }
            "collect" if arity(0) => self.chain_source(&m.receiver),
            "min" | "max" if arity(0) => self.error(
                m,
                format!(
                    "`.{name}()` returns an `Option`, which accelerated code does not have: fold with the neutral element instead, e.g. `.fold(i64::{}, i64::{name})` (or `.fold(f32::{}, f32::{name})`)",
                    if name == "min" { "MAX" } else { "MIN" },
                    if name == "min" { "INFINITY" } else { "NEG_INFINITY" },
                ),
            ),
            _ => self.error(
                m,
                format!("`.{name}` takes other arguments in an iterator chain: see API.md's table of iterator chains"),
            ),
        }
    }

    /// The sequence a chain step reads: a range (`(a..b)`), a chain, or any sequence
    /// (`&ys`, `ys`).
    pub(super) fn chain_source(&mut self, e: &syn::Expr) -> Expr {
        match e {
            syn::Expr::Paren(p) => self.chain_source(&p.expr),
            syn::Expr::Group(g) => self.chain_source(&g.expr),
            syn::Expr::Reference(r) => self.chain_source(&r.expr),
            syn::Expr::Range(r) => self.range(r),
            e => self.expr(e),
        }
    }

    /// `a..b` (or `a..=b`) as a sequence of the bounds' integer type: `create(count, |i|
    /// element i)`, the count and the elements written as `a.__range_count(b, 0 as _)` and
    /// `a.__range_at(i, 0 as _)`, which type inference rewrites once it knows the bounds'
    /// type (`usize` ranges become `create(b - a, |i| i + a)`; an empty range is empty).
    fn range(&mut self, r: &syn::ExprRange) -> Expr {
        let Some((lo, hi, inclusive)) = self.range_ends(
            r,
            "a range in an iterator chain needs both bounds (`a..b` or `a..=b`)",
        ) else {
            return Expr::Tuple(vec![]);
        };
        let count = match inclusive {
            true => "__range_count_inclusive",
            false => "__range_count",
        };
        let (i, here) = (self.fresh_name("i"), loc(r.span()));
        // The bounds' type, once inferred.
        let witness = || Expr::Cast(Box::new(Expr::int(0)), Type::Infer);
        let range = |lo: &Expr| {
            let n = Expr::Method {
                recv: Box::new(lo.clone()),
                method: count.into(),
                args: vec![hi.clone(), witness()],
            };
            let element = Expr::Method {
                recv: Box::new(lo.clone()),
                method: "__range_at".into(),
                args: vec![Expr::var(&i), witness()],
            };
            (n, element)
        };
        if matches!(lo, Expr::Lit(_)) {
            let (n, element) = range(&lo);
            return self.par_at(ParOp::Create, vec![n, lambda(&[&i], element)], here);
        }
        let lo_name = self.fresh_name("lo");
        let (n, element) = range(&Expr::var(&lo_name));
        let body = self.par_at(ParOp::Create, vec![n, lambda(&[&i], element)], here);
        let_in(&lo_name, lo, body)
    }

    /// `xs.windows(k)` and `xs.chunks(k)` (`chunks_exact`, rayon's `par_` forms): the
    /// sequence of views `&xs[i..i + k]` (windows: `len - k + 1` of them, none when `len <
    /// k`) or `&xs[c * k..min(c * k + k, len)]` (chunks, the last shorter; exact chunks drop
    /// it). A zero `k` fails as Rust's assertion does ("window size must be non-zero",
    /// "chunk size must be non-zero").
    fn slices(&mut self, name: &str, xs: &syn::Expr, k: &syn::Expr, here: Loc) -> Expr {
        let mut lets = Vec::new();
        let xs = self.chain_source(xs);
        let (xs, len) = self.with_length(xs, "xs", &mut lets);
        // A literal or a variable is used as it is: a `let` would hide the producer from
        // the consumer's fusion.
        let k = match self.expr(k) {
            k @ (Expr::Lit(_) | Expr::Var(_)) => k,
            k => {
                let size = self.fresh_name("k");
                lets.push((size.clone(), k));
                Expr::var(&size)
            }
        };
        let bin = |op, a: Expr, b: Expr| Expr::Binary(op, Box::new(a), Box::new(b));
        let usize_lit = |v| Expr::Lit(Lit::Int(v, Some(ScalarType::Usize)));
        let i = self.fresh_name("i");
        let slice = |lo: Expr, hi: Expr| Expr::Slice {
            seq: Box::new(xs.clone()),
            lo: Box::new(lo),
            hi: Box::new(hi),
        };
        let (count, view) = if name.contains("windows") {
            let some = bin(
                BinOp::Sub,
                bin(BinOp::Add, len.clone(), usize_lit(1)),
                k.clone(),
            );
            let count = Expr::If {
                cond: Box::new(bin(BinOp::Ge, len.clone(), nonzero_size(&k, "window"))),
                then: Box::new(some),
                els: Some(Box::new(usize_lit(0))),
            };
            let hi = bin(BinOp::Add, Expr::var(&i), k.clone());
            (count, slice(Expr::var(&i), hi))
        } else {
            let lo = bin(BinOp::Mul, Expr::var(&i), k.clone());
            let exact = name.contains("exact");
            let count = chunk_count(len.clone(), k.clone(), exact);
            let end = bin(BinOp::Add, lo.clone(), k.clone());
            let hi = if exact {
                end
            } else {
                Expr::Method {
                    recv: Box::new(end),
                    method: "min".into(),
                    args: vec![len.clone()],
                }
            };
            (count, slice(lo, hi))
        };
        // The count bound first: fusion delays a `create` whose length is a variable.
        let n = self.fresh_name("n");
        lets.push((n.clone(), count));
        let body = self.par_at(
            ParOp::Create,
            vec![Expr::var(&n), lambda(&[&i], view)],
            here,
        );
        within_lets(lets, body)
    }

    /// `xs.zip(ys)`: pairs of the first `min(len xs, len ys)` elements, as in Rust: `map2`
    /// over the two prefixes, which fusion sees as in bounds (their end is the minimum of
    /// the lengths), so a zip of producers is one pass.
    fn zip(&mut self, xs: Expr, ys: Expr, here: Loc) -> Expr {
        let mut lets = Vec::new();
        let (xs, len_xs) = self.with_length(xs, "xs", &mut lets);
        let (ys, len_ys) = self.with_length(ys, "ys", &mut lets);
        let n = Expr::Method {
            recv: Box::new(len_xs),
            method: "min".into(),
            args: vec![len_ys],
        };
        let prefix = |s: Expr| Expr::Slice {
            seq: Box::new(s),
            lo: Box::new(Expr::Lit(Lit::Int(0, Some(ScalarType::Usize)))),
            hi: Box::new(n.clone()),
        };
        let (x, y) = (self.fresh_name("x"), self.fresh_name("y"));
        let pair = lambda(&[&x, &y], Expr::Tuple(vec![Expr::var(&x), Expr::var(&y)]));
        let zipped = self.par_at(ParOp::Map2, vec![pair, prefix(xs), prefix(ys)], here);
        within_lets(lets, zipped)
    }

    /// `xs.enumerate()`: pairs `(i, x)`.
    fn enumerate(&mut self, xs: Expr, here: Loc) -> Expr {
        let mut lets = Vec::new();
        let (xs, len) = self.with_length(xs, "xs", &mut lets);
        let i = self.fresh_name("i");
        let indices = self.par_at(ParOp::Create, vec![len, lambda(&[&i], Expr::var(&i))], here);
        let (j, x) = (self.fresh_name("j"), self.fresh_name("x"));
        let pair = lambda(&[&j, &x], Expr::Tuple(vec![Expr::var(&j), Expr::var(&x)]));
        let body = self.par_at(ParOp::Map2, vec![pair, indices, xs], here);
        within_lets(lets, body)
    }

    /// A sequence and its length as an expression that does not compute it: a variable's
    /// `len()`, a `map`'s input's length, a `create`'s count. Anything else is bound to a
    /// fresh name in `lets` first.
    fn with_length(&mut self, e: Expr, base: &str, lets: &mut Vec<(String, Expr)>) -> (Expr, Expr) {
        if let Some(len) = length_of(&e) {
            return (e, len);
        }
        let name = self.fresh_name(base);
        lets.push((name.clone(), e));
        let e = Expr::var(&name);
        let len = length_of(&e).unwrap_or_else(|| Expr::Tuple(vec![]));
        (e, len)
    }

    /// A parallel operation the chain spells, recorded as used at `here`.
    pub(super) fn par_at(&mut self, op: ParOp, args: Vec<Expr>, here: Loc) -> Expr {
        self.ops.push((op, here));
        Expr::Par {
            op,
            args,
            loc: here,
        }
    }

    /// `|a, b| a OP b`.
    fn binary_lambda(&mut self, op: BinOp) -> Expr {
        let (a, b) = (self.fresh_name("a"), self.fresh_name("b"));
        let body = Expr::Binary(op, Box::new(Expr::var(&a)), Box::new(Expr::var(&b)));
        lambda(&[&a, &b], body)
    }

    /// A name no user code can bind (`__accel_` prefix) for the front end's temporaries.
    pub(super) fn fresh_name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("__accel_{base}{}", self.fresh)
    }
}

/// The length of `e` when it can be written without computing `e`.
pub(super) fn length_of(e: &Expr) -> Option<Expr> {
    match e {
        Expr::Var(_) => Some(Expr::Method {
            recv: Box::new(e.clone()),
            method: "len".into(),
            args: vec![],
        }),
        Expr::Par {
            op: ParOp::Map | ParOp::Map2,
            args,
            ..
        } => length_of(&args[1]),
        Expr::Par {
            op: ParOp::Create,
            args,
            ..
        } if matches!(args[0], Expr::Var(_) | Expr::Lit(_)) => Some(args[0].clone()),
        _ => None,
    }
}

/// How many chunks of `k` elements `len` elements make: `len / k` for exact chunks, else
/// one more when `k` does not divide `len` (`len / k + (len % k != 0)`: `(len + k - 1) /
/// k` wrapped around for a `k` near `usize::MAX`, which made no chunk of a non-empty
/// sequence). A zero `k` fails first, as Rust's "chunk size must be non-zero".
pub(super) fn chunk_count(len: Expr, k: Expr, exact: bool) -> Expr {
    let bin = |op, a: Expr, b: Expr| Expr::Binary(op, Box::new(a), Box::new(b));
    let whole = bin(BinOp::Div, len.clone(), nonzero_size(&k, "chunk"));
    if exact {
        return whole;
    }
    let usize_lit = |v| Expr::Lit(Lit::Int(v, Some(ScalarType::Usize)));
    let divides = bin(BinOp::Eq, bin(BinOp::Rem, len, k), usize_lit(0));
    let last = Expr::If {
        cond: Box::new(divides),
        then: Box::new(usize_lit(0)),
        els: Some(Box::new(usize_lit(1))),
    };
    bin(BinOp::Add, whole, last)
}

/// The size `k` of `chunks(k)` or `windows(k)` (`what`), checked to be non-zero where it
/// is not a non-zero literal: the backends fail with Rust's message (debug mode runs
/// Rust's own `chunks`).
pub(super) fn nonzero_size(k: &Expr, what: &str) -> Expr {
    if k.literal_usize().is_some_and(|c| c != 0) {
        return k.clone();
    }
    Expr::Method {
        recv: Box::new(k.clone()),
        method: format!("__{what}_size"),
        args: vec![],
    }
}

/// `0` or `1` of whatever number type the context needs (`sum` of `f32`s or of `u8`s).
fn numeric_literal(v: u64) -> Expr {
    Expr::Cast(Box::new(Expr::Lit(Lit::Int(v, None))), Type::Infer)
}

fn lambda(params: &[&str], body: Expr) -> Expr {
    Expr::Lambda {
        params: params.iter().map(|p| (Pat::bind(p), Type::Infer)).collect(),
        body: Box::new(body),
    }
}

/// `body` inside the `lets`, the first outermost.
pub(super) fn within_lets(lets: Vec<(String, Expr)>, body: Expr) -> Expr {
    lets.into_iter()
        .rev()
        .fold(body, |body, (name, init)| let_in(&name, init, body))
}

/// `{ let name = init; body }`.
pub(super) fn let_in(name: &str, init: Expr, body: Expr) -> Expr {
    Expr::Block {
        stmts: vec![Stmt::Let {
            pat: Pat::bind(name),
            ty: Type::Infer,
            init: Some(init),
        }],
        result: Some(Box::new(body)),
    }
}
