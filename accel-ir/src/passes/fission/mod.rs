//! Fission (Accelerate's multi-GPU fission, Svensson et al., FHPC 2015): a fused site
//! whose body ends in one parallel operation is rewritten into programs that the
//! runtime's device scheduler runs on several devices at once:
//!
//! - the *length* program: the operation's index-space size;
//! - the *part* program: the operation over the indices `LO..HI` only (two `usize`
//!   captures appended to the site's), which any device runs on any range;
//! - the *combine*: how the parts' results make the site's (concatenation for `create`,
//!   `map` and `filter`; for `reduce`, the operator over the parts' results in index
//!   order; for `scan`, the carries into each part and a pass that adds them; for
//!   `reduce_by_index`, each part's bins merged into the initial ones in part order).
//!
//! A part's input sequences that the element reads only at its own index (`xs[i]`, with
//! `xs.len()` no shorter than the operation) are *sliced*: the runtime hands the part
//! `xs[lo..hi]` instead of `xs`, so a device receives only the range it computes. Every
//! other read keeps its index (`i = lo + j`), so it reads what it read before and a
//! failure names the same index.
//!
//! Runs on the fused, typed body (unique names); the programs it makes are typed too.

mod combines;
use combines::{destination, scan_carry_in, scan_fixup, without_aliases};

use crate::expr::{BinOp, Expr, ParOp, Pat, Stmt};
use crate::ops::{delayed, one_param};
use crate::types::{ScalarType, Type};

/// The first index of the range a part computes (a `usize` capture of the part program).
pub const LO: &str = "accel#lo";
/// The end of that range (excluded).
pub const HI: &str = "accel#hi";
/// The combine programs' input: the parts' results (a `reduce`'s partial results, a
/// `scan`'s part totals), one element per part in index order.
pub const PARTIALS: &str = "accel#partials";
/// A `scan` fix-up's input: the parts' scans concatenated.
pub const SCANNED: &str = "accel#scanned";
/// A `scan` fix-up's carries: `CARRIES[c]` is the fold of the parts before part `c + 1`.
pub const CARRIES: &str = "accel#carries";
/// A `scan` fix-up's part length (every part but the last is this long).
pub const CHUNK: &str = "accel#chunk";

/// A site split into programs the device scheduler runs.
#[derive(Debug, Clone)]
pub struct Split {
    /// The size of the operation's index space (`usize`), from the site's captures; for an
    /// operation of two inputs (`reduce_by_index`, `scatter`: indices and values) the
    /// tuple of their lengths, which must be equal.
    pub length: Expr,
    /// The operation split (which names the lengths that differ).
    pub op: ParOp,
    /// The operation over the indices `LO..HI`, from the site's captures, `LO` and `HI`.
    pub part: Expr,
    /// The part program's result type.
    pub part_result: Type,
    /// The element type of the result (of a `reduce`'s operands: its result).
    pub elem: Type,
    /// The captures handed to a part as `xs[lo..hi]` (their names; sequences of flat
    /// elements or of rows of them).
    pub sliced: Vec<String>,
    /// How the parts' results make the site's.
    pub combine: Combine,
    /// The captured tensors a `parallel_loop` writes: each iteration only the row of its
    /// index (every `set` indexes the tensor's first axis with the loop's index), so a
    /// part writes only its range's rows.
    pub written: Vec<String>,
    /// Whether the site is the `flatten` of the rows the parts make: the concatenated
    /// rows' columns are its result.
    pub flattened: bool,
    /// A `reduce_by_index`'s or `scatter`'s destination where it is a captured sequence
    /// that the part program reads only the length of (the combine alone reads its
    /// elements): a runtime holding it spread across ranks merges each rank's slice of
    /// the parts' bins or pairs into that rank's part of it.
    pub destination: Option<String>,
}

/// How the parts' results make the site's result.
#[derive(Debug, Clone)]
pub enum Combine {
    /// `create`, `map`, `map2` and `filter`: the parts' sequences (a filter's of uneven
    /// lengths), concatenated in index order (a `map` fusion left is split as the `create`
    /// it stands for).
    Concat,
    /// `parallel_loop`: the parts write their rows of the tensors in place; no value.
    Nothing,
    /// `reduce`: `reduce` is this program over the parts' results ([`PARTIALS`], a
    /// sequence of `elem`, appended to the site's captures).
    Reduce {
        /// `reduce(op, ne, PARTIALS)`.
        partials: Expr,
    },
    /// `reduce_by_index`: each part makes bins of its own from `ne`; `bins` is the number
    /// of bins (`usize`, from the site's captures), and `merge` combines the initial bins
    /// with the parts' bins in part order ([`PARTIALS`]: every part's bins, one part
    /// after another).
    Histogram {
        /// `dest.len()`.
        bins: Expr,
        /// `create(dest.len(), |b| fold of op over dest[b] and PARTIALS[c * m + b])`.
        merge: Expr,
    },
    /// `scatter`: each part computes the (index, value) pairs of its range; `apply`
    /// writes them ([`PARTIALS`], every part's pairs in order) into the destination.
    Scatter {
        /// `scatter(dest, PARTIALS.0, PARTIALS.1)`.
        apply: Expr,
    },
    /// `scan`: `carries` scans the parts' totals ([`PARTIALS`]); `fixup` combines each
    /// element after the first part with the carry into its part (captures: the site's,
    /// then [`SCANNED`], [`CARRIES`] and [`CHUNK`]).
    Scan {
        /// `scan(op, ne, PARTIALS)`.
        carries: Expr,
        /// `create(len SCANNED, |i| if i < CHUNK { SCANNED[i] } else { op(CARRIES[i / CHUNK - 1], SCANNED[i]) })`.
        fixup: Expr,
        /// `create(len SCANNED, |i| op(CARRIES[0], SCANNED[i]))`: one part's scan with the
        /// carry into it (a distributed site's rank fixes its own part only).
        carry_in: Expr,
    },
}

fn usize_ty() -> Type {
    Type::Scalar(ScalarType::Usize)
}

fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

fn index(xs: Expr, i: Expr) -> Expr {
    Expr::Index(Box::new(xs), Box::new(i))
}

fn let_usize(name: &str, init: Expr) -> Stmt {
    Stmt::Let {
        pat: Pat::bind(name),
        ty: usize_ty(),
        init: Some(init),
    }
}

fn block(stmts: &[Stmt], result: Expr) -> Expr {
    if stmts.is_empty() {
        return result;
    }
    Expr::Block {
        stmts: stmts.to_vec(),
        result: Some(Box::new(result)),
    }
}

/// Whether values of `t` are flat (scalars, tuples, records and arrays of them): what a
/// part's result element may be, so parts concatenate column by column.
fn flat(t: &Type) -> bool {
    match t {
        Type::Scalar(_) => true,
        Type::Tuple(ts) => !ts.is_empty() && ts.iter().all(flat),
        Type::Record(_, fs) => fs.iter().all(|(_, t)| flat(t)),
        Type::Array(t, _) => flat(t),
        _ => false,
    }
}

/// Whether `e` contains a parallel operation.
fn has_par(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= matches!(x, Expr::Par { .. }));
    found
}

/// The element of a parallel operation's input: its length, index name and element
/// (a delayed array's, or `xs[i]` of a captured sequence).
fn input(
    s: &Expr,
    captures: &[(String, Type)],
    prefix: &[Stmt],
    arg: usize,
) -> Result<(Expr, String, Expr), String> {
    if let Some((n, i, body)) = delayed(s) {
        return Ok((n.clone(), i.to_string(), body.clone()));
    }
    // A name the statements before bind to a captured sequence (`let evens = stage;`) is
    // that sequence.
    let mut s = s.clone();
    while let Expr::Var(x) = &s {
        let bound = prefix.iter().rev().find_map(|st| match st {
            Stmt::Let {
                pat: Pat::Bind { name, .. },
                init: Some(init @ Expr::Var(_)),
                ..
            } if name == x => Some(init.clone()),
            _ => None,
        });
        match bound {
            Some(init) => s = init,
            None => break,
        }
    }
    let s = &s;
    if let Expr::Var(x) = s {
        if captures
            .iter()
            .any(|(c, t)| c == x && matches!(t, Type::Seq(_)))
        {
            let i = format!("accel#i{arg}");
            return Ok((
                Expr::len_of(s.clone()),
                i.clone(),
                index(s.clone(), Expr::var(&i)),
            ));
        }
    }
    Err("its input is neither a captured sequence nor a delayed array".into())
}

/// The sequences whose `len()` bounds the length `n` from above (`n` is their length, or
/// the `same_len` or `min` of lengths including theirs).
fn length_sources(n: &Expr, out: &mut Vec<String>) {
    match n {
        Expr::Method { recv, method, args } if method == "len" && args.is_empty() => {
            if let Expr::Var(x) = &**recv {
                out.push(x.clone());
            }
        }
        Expr::Method { recv, method, args } if method == "min" && args.len() == 1 => {
            length_sources(recv, out);
            length_sources(&args[0], out);
        }
        Expr::Assoc { func, args, .. } if func == "same_len" => {
            args.iter().for_each(|a| length_sources(a, out))
        }
        _ => {}
    }
}

/// How many times `x` occurs in `e`, and how many of those are `x[i]`.
fn uses(e: &Expr, x: &str, i: &str) -> (usize, usize) {
    let (mut all, mut at_i) = (0, 0);
    e.walk(&mut |y| match y {
        Expr::Var(v) if v == x => all += 1,
        Expr::Index(xs, k) if matches!((&**xs, &**k), (Expr::Var(v), Expr::Var(w)) if v == x && w == i) => {
            at_i += 1
        }
        _ => {}
    });
    (all, at_i)
}

/// Rewrites every `x[i]` of a sliced `x` into `x[j]`.
fn reindex(e: &mut Expr, sliced: &[String], i: &str, j: &str) {
    if let Expr::Index(xs, k) = e {
        if let (Expr::Var(v), Expr::Var(w)) = (&**xs, &mut **k) {
            if w == i && sliced.contains(v) {
                *w = j.to_string();
                return;
            }
        }
    }
    e.for_each_child_mut(&mut |c| reindex(c, sliced, i, j));
}

/// One input sequence of the operation a site ends in: which argument it is (none for
/// `create`: the whole is), its length, index name and element.
struct Input {
    arg: Option<usize>,
    n: Expr,
    i: String,
    element: Expr,
}

/// The operation a site ends in, with what comes before it.
struct Tail<'a> {
    /// The statements before it (no parallel operation among them).
    prefix: &'a [Stmt],
    op: ParOp,
    args: &'a [Expr],
    loc: crate::Loc,
    /// Its input sequences (one index space: their lengths agree).
    inputs: Vec<Input>,
    /// Its result's (or a `reduce`'s operands') element type.
    elem: Type,
}

impl Tail<'_> {
    /// The size of the index space: the input's length; for several inputs, a tuple of
    /// their lengths, which the runtime checks are equal (naming the operation, as it
    /// does on one device).
    fn length(&self) -> Expr {
        match &self.inputs[..] {
            [one] => one.n.clone(),
            all => Expr::Tuple(all.iter().map(|x| x.n.clone()).collect()),
        }
    }
}

/// A site's statements before its last expression, and that expression.
fn statements_and_tail(body: &Expr) -> (&[Stmt], &Expr) {
    match body {
        Expr::Block {
            stmts,
            result: Some(r),
        } => (stmts, r),
        e => (&[], e),
    }
}

/// The operation `body` ends in, or why it is not split.
fn tail_of<'a>(
    body: &'a Expr,
    captures: &[(String, Type)],
    result: &Type,
) -> Result<Tail<'a>, String> {
    let (prefix, tail) = statements_and_tail(body);
    if prefix.iter().any(|s| match s {
        Stmt::Let { init, .. } => init.as_ref().is_some_and(has_par),
        Stmt::Expr(e) => has_par(e),
    }) {
        return Err("it runs parallel operations before its last one".into());
    }
    let Expr::Par { op, args, loc } = tail else {
        return Err("it does not end in a parallel operation".into());
    };
    let input_args: &[usize] = match op {
        ParOp::Create | ParOp::ParallelLoop => &[],
        // What fusion left a `map`: its function over its inputs' elements.
        ParOp::Map => &[1],
        ParOp::Map2 => &[1, 2],
        ParOp::Reduce | ParOp::Scan => &[2],
        ParOp::Filter => &[1],
        ParOp::ReduceByIndex => &[3, 4],
        ParOp::Scatter => &[1, 2],
        other => {
            return Err(format!(
                "`{}` is not split across devices yet",
                other.name()
            ))
        }
    };
    let inputs = if matches!(op, ParOp::Create | ParOp::ParallelLoop) {
        let Some((i, e)) = one_param(&args[1]) else {
            return Err(format!("its `{}` does not name its index", op.name()));
        };
        vec![Input {
            arg: None,
            n: args[0].clone(),
            i: i.to_string(),
            element: e.clone(),
        }]
    } else {
        input_args
            .iter()
            .map(|&k| {
                let (n, i, element) = input(&args[k], captures, prefix, k)?;
                Ok(Input {
                    arg: Some(k),
                    n,
                    i,
                    element,
                })
            })
            .collect::<Result<Vec<_>, String>>()?
    };
    let Type::Seq(elem) = (match op {
        ParOp::Reduce => Type::Seq(Box::new(result.clone())),
        // A loop's iterations make no value: what they write is the result.
        ParOp::ParallelLoop => Type::Seq(Box::new(Type::Unit)),
        _ => result.clone(),
    }) else {
        return Err(format!("its result is a {result}"));
    };
    // A `create` may make rows (a regular sequence of sequences: parts concatenate row
    // by row); every other operation's elements are flat.
    let rows = matches!(op, ParOp::Create | ParOp::Map | ParOp::Map2)
        && matches!(&*elem, Type::Seq(e) if flat(e));
    if !flat(&elem) && !rows && *op != ParOp::ParallelLoop {
        return Err(format!(
            "its elements are {elem} (only flat elements, and rows of them made by `create`, are split)"
        ));
    }
    if inputs.iter().any(|x| has_par(&x.n)) {
        return Err("its length is computed by a parallel operation".into());
    }
    Ok(Tail {
        prefix,
        op: *op,
        args,
        loc: *loc,
        inputs,
        elem: *elem,
    })
}

/// The captures a part may get only its range of: flat sequences at least as long as the
/// operation, read only at the index of an input's element (and nowhere else).
fn sliced(t: &Tail<'_>, captures: &[(String, Type)]) -> Vec<String> {
    let mut bounded = Vec::new();
    for x in &t.inputs {
        length_sources(&x.n, &mut bounded);
    }
    let inputs: Vec<usize> = t.inputs.iter().filter_map(|x| x.arg).collect();
    let elsewhere: Vec<&Expr> = t
        .prefix
        .iter()
        .filter_map(|s| match s {
            Stmt::Let { init, .. } => init.as_ref(),
            Stmt::Expr(e) => Some(e),
        })
        .chain(
            t.args
                .iter()
                .enumerate()
                .filter(|(k, _)| t.op != ParOp::Create && !inputs.contains(k))
                .map(|(_, a)| a),
        )
        .collect();
    captures
        .iter()
        .filter(|(x, ty)| {
            matches!(ty, Type::Seq(e) if flat(e) || matches!(&**e, Type::Seq(r) if flat(r)))
                && bounded.contains(x)
                && elsewhere.iter().all(|e| uses(e, x, "").0 == 0)
                && t.inputs.iter().all(|input| {
                    let (in_element, at_i) = uses(&input.element, x, &input.i);
                    in_element == at_i
                })
                && t.inputs
                    .iter()
                    .any(|input| uses(&input.element, x, &input.i).1 > 0)
        })
        .map(|(x, _)| x.clone())
        .collect()
}

/// The part's index.
const J: &str = "accel#j";

/// An input's element over the part's range: `let i = LO + j;` and the element, reading
/// a sliced capture at `j`.
fn ranged(x: &Input, sliced: &[String]) -> (Stmt, Expr) {
    let mut element = x.element.clone();
    reindex(&mut element, sliced, &x.i, J);
    let i = let_usize(&x.i, binary(BinOp::Add, Expr::var(LO), Expr::var(J)));
    (i, element)
}

/// `create(HI - LO, |j| { stmts; element })` (or a `parallel_loop` over the range).
fn over_range(op: ParOp, stmts: &[Stmt], element: Expr, loc: crate::Loc) -> Expr {
    Expr::Par {
        op,
        args: vec![
            binary(BinOp::Sub, Expr::var(HI), Expr::var(LO)),
            Expr::Lambda {
                params: vec![(Pat::bind(J), usize_ty())],
                body: Box::new(block(stmts, element)),
            },
        ],
        loc,
    }
}

/// The operation over `LO..HI`: index `j` of the part is `i = LO + j` of the whole, and
/// a sliced capture is read at `j`. A histogram's part starts from bins of `ne`; a
/// scatter's part is the (index, value) pairs of its range, `create(HI - LO, |j| { let
/// i = LO + j; (is[i], vs[i]) })`, which the combine writes into the destination.
fn part(t: &Tail<'_>, sliced: &[String]) -> Expr {
    let input = |x: &Input| {
        let (i, element) = ranged(x, sliced);
        over_range(ParOp::Create, &[i], element, t.loc)
    };
    let whole = match t.op {
        ParOp::Create => input(&t.inputs[0]),
        ParOp::ParallelLoop => {
            let (i, body) = ranged(&t.inputs[0], sliced);
            over_range(ParOp::ParallelLoop, &[i], body, t.loc)
        }
        ParOp::Scatter => {
            let (lets, pair): (Vec<Stmt>, Vec<Expr>) =
                t.inputs.iter().map(|x| ranged(x, sliced)).unzip();
            over_range(ParOp::Create, &lets, Expr::Tuple(pair), t.loc)
        }
        ParOp::Map | ParOp::Map2 => {
            let (lets, elements): (Vec<Stmt>, Vec<Expr>) =
                t.inputs.iter().map(|x| ranged(x, sliced)).unzip();
            let element = Expr::applied(&t.args[0], elements);
            over_range(ParOp::Create, &lets, element, t.loc)
        }
        op => {
            let mut args = t.args.to_vec();
            for x in &t.inputs {
                if let Some(k) = x.arg {
                    args[k] = input(x);
                }
            }
            if op == ParOp::ReduceByIndex {
                args[0] = Expr::SeqRepeat(
                    Box::new(t.args[2].clone()),
                    Box::new(Expr::len_of(t.args[0].clone())),
                );
            }
            Expr::Par {
                op,
                args,
                loc: t.loc,
            }
        }
    };
    block(t.prefix, whole)
}

/// How the parts' results make the site's.
fn combine(t: &Tail<'_>) -> Combine {
    let over_partials = |o: ParOp| {
        block(
            t.prefix,
            Expr::Par {
                op: o,
                args: vec![t.args[0].clone(), t.args[1].clone(), Expr::var(PARTIALS)],
                loc: t.loc,
            },
        )
    };
    match t.op {
        ParOp::Reduce => Combine::Reduce {
            partials: over_partials(ParOp::Reduce),
        },
        ParOp::Scan => Combine::Scan {
            carries: over_partials(ParOp::Scan),
            fixup: block(t.prefix, scan_fixup(&t.args[0], t.loc)),
            carry_in: block(t.prefix, scan_carry_in(&t.args[0], t.loc)),
        },
        ParOp::ParallelLoop => Combine::Nothing,
        ParOp::Scatter => {
            let field = |f: &str| {
                let k = "accel#k";
                Expr::Par {
                    op: ParOp::Create,
                    args: vec![
                        Expr::len_of(Expr::var(PARTIALS)),
                        Expr::Lambda {
                            params: vec![(Pat::bind(k), usize_ty())],
                            body: Box::new(Expr::Field(
                                Box::new(index(Expr::var(PARTIALS), Expr::var(k))),
                                f.into(),
                            )),
                        },
                    ],
                    loc: t.loc,
                }
            };
            let apply = Expr::Par {
                op: ParOp::Scatter,
                args: vec![t.args[0].clone(), field("0"), field("1")],
                loc: t.loc,
            };
            Combine::Scatter {
                apply: block(t.prefix, apply),
            }
        }
        ParOp::ReduceByIndex => Combine::Histogram {
            bins: block(t.prefix, Expr::len_of(t.args[0].clone())),
            merge: block(t.prefix, histogram_merge(t)),
        },
        _ => Combine::Concat,
    }
}

/// `{ let d = dest; create(d.len(), |b| { let mut acc = d[b]; for c in 0..PARTIALS.len()
/// / d.len() { acc = op(acc, PARTIALS[c * d.len() + b]); } acc }) }`.
fn histogram_merge(t: &Tail<'_>) -> Expr {
    let (d, b, c, acc) = ("accel#dest", "accel#b", "accel#c", "accel#acc");
    let bins = || Expr::len_of(Expr::var(d));
    let at = binary(
        BinOp::Add,
        binary(BinOp::Mul, Expr::var(c), bins()),
        Expr::var(b),
    );
    let step = Expr::Assign {
        target: Box::new(Expr::var(acc)),
        value: Box::new(Expr::applied(
            &t.args[1],
            vec![Expr::var(acc), index(Expr::var(PARTIALS), at)],
        )),
    };
    let zero = Expr::Lit(crate::expr::Lit::Int(0, Some(ScalarType::Usize)));
    let element = Expr::Block {
        stmts: vec![
            Stmt::Let {
                pat: Pat::Bind {
                    name: acc.into(),
                    mutable: true,
                },
                ty: t.elem.clone(),
                init: Some(index(Expr::var(d), Expr::var(b))),
            },
            Stmt::Expr(Expr::For {
                var: c.into(),
                lo: Box::new(zero),
                hi: Box::new(binary(
                    BinOp::Div,
                    Expr::len_of(Expr::var(PARTIALS)),
                    bins(),
                )),
                body: Box::new(step),
            }),
        ],
        result: Some(Box::new(Expr::var(acc))),
    };
    Expr::Block {
        stmts: vec![Stmt::Let {
            pat: Pat::bind(d),
            ty: Type::Seq(Box::new(t.elem.clone())),
            init: Some(t.args[0].clone()),
        }],
        result: Some(Box::new(Expr::Par {
            op: ParOp::Create,
            args: vec![
                bins(),
                Expr::Lambda {
                    params: vec![(Pat::bind(b), usize_ty())],
                    body: Box::new(element),
                },
            ],
            loc: t.loc,
        })),
    }
}

/// The captured tensors a loop's iterations write, where each writes only the row of its
/// index: every `t.set([i, ..], v)` names a captured tensor and indexes its first axis
/// with the loop's index `i`. Otherwise the loop is not split.
fn own_rows(body: &Input, captures: &[(String, Type)]) -> Result<Vec<String>, String> {
    let mut written = Vec::new();
    let mut why = None;
    body.element.walk(&mut |e| {
        let Expr::Method { recv, method, args } = e else {
            return;
        };
        if method != "set" {
            return;
        }
        let tensor = match &**recv {
            Expr::Var(t) if captures.iter().any(|(c, ty)| c == t && matches!(ty, Type::Tensor(_))) => t,
            _ => {
                why.get_or_insert("it writes a tensor that is not a captured one");
                return;
            }
        };
        let first = match args.first() {
            Some(Expr::Array(idx)) | Some(Expr::Tuple(idx)) => idx.first(),
            _ => None,
        };
        if !matches!(first, Some(Expr::Var(v)) if *v == body.i) {
            why.get_or_insert(
                "its writes are not provably its iterations' own (each `set` must index its tensor's first axis with the loop's index)",
            );
            return;
        }
        if !written.contains(tensor) {
            written.push(tensor.clone());
        }
    });
    match why {
        Some(why) => Err(why.to_string()),
        None => Ok(written),
    }
}

/// Splits a fused site (`body`, with its captures and result type) for the device
/// scheduler, or says why it runs on one device.
pub fn split(body: &Expr, captures: &[(String, Type)], result: &Type) -> Result<Split, String> {
    let unaliased = without_aliases(body, captures);
    let body = unaliased.as_ref().unwrap_or(body);
    if let Some(rows) = flattened(body) {
        return split_flatten(rows, captures, result);
    }
    let t = tail_of(body, captures, result)?;
    let sliced = sliced(&t, captures);
    let part = part(&t, &sliced);
    let written = match t.op {
        ParOp::ParallelLoop => own_rows(&t.inputs[0], captures)?,
        _ => Vec::new(),
    };
    Ok(Split {
        length: block(t.prefix, t.length()),
        op: t.op,
        destination: destination(&t, captures, &part),
        part,
        part_result: match t.op {
            ParOp::Reduce => t.elem.clone(),
            ParOp::ParallelLoop => Type::Unit,
            ParOp::Scatter => Type::Seq(Box::new(Type::Tuple(vec![usize_ty(), t.elem.clone()]))),
            _ => Type::Seq(Box::new(t.elem.clone())),
        },
        elem: t.elem.clone(),
        sliced,
        combine: combine(&t),
        written,
        flattened: false,
    })
}

/// The rows a site ending in `flatten(rows)` flattens (with its statements before), if
/// it ends so.
fn flattened(body: &Expr) -> Option<Expr> {
    let (stmts, tail) = statements_and_tail(body);
    match tail {
        Expr::Par {
            op: ParOp::Flatten,
            args,
            ..
        } => Some(block(stmts, args[0].clone())),
        _ => None,
    }
}

/// A site ending in `flatten(rows)` where `rows` splits as a `create` (or `map`) of rows:
/// the parts make their rows, which concatenate row by row (every part's rows as long as
/// the others', as `flatten` requires of the whole), and the rows' columns are the
/// flattened sequence's ([`Split::flattened`]).
fn split_flatten(rows: Expr, captures: &[(String, Type)], result: &Type) -> Result<Split, String> {
    let Type::Seq(elem) = result else {
        return Err(format!("its result is a {result}"));
    };
    let nested = Type::Seq(Box::new(result.clone()));
    let inner = split(&rows, captures, &nested)
        .map_err(|why| format!("its `flatten`'s rows do not split: {why}"))?;
    if !matches!(inner.combine, Combine::Concat) || !flat(elem) {
        return Err(
            "`flatten` splits only over rows of flat elements made by `create`, `map` or `map2`"
                .into(),
        );
    }
    Ok(Split {
        flattened: true,
        destination: None,
        ..inner
    })
}

pub mod stages;

#[cfg(test)]
mod tests;
