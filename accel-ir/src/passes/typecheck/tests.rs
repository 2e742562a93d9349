//! Tests of type inference.

use super::*;
use crate::expr::{BinOp, ParOp};
use crate::expr::{Loc, MatchArm};

fn f32s() -> Type {
    Type::Seq(Box::new(Type::Scalar(ScalarType::F32)))
}

fn lam(params: &[&str], body: Expr) -> Expr {
    Expr::Lambda {
        params: params.iter().map(|p| (Pat::bind(p), Type::Infer)).collect(),
        body: Box::new(body),
    }
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

#[test]
fn literals_take_the_types_of_what_they_meet() {
    // reduce(|a, b| a + b, 0.0, map(|x| x * 2.0, xs)) over f32
    let body = Expr::par(
        ParOp::Reduce,
        vec![
            lam(&["a", "b"], bin(BinOp::Add, Expr::var("a"), Expr::var("b"))),
            Expr::Lit(Lit::Float(0.0, None)),
            Expr::par(
                ParOp::Map,
                vec![
                    lam(
                        &["x"],
                        bin(BinOp::Mul, Expr::var("x"), Expr::Lit(Lit::Float(2.0, None))),
                    ),
                    Expr::var("xs"),
                ],
            ),
        ],
    );
    let typed = typecheck(
        &body,
        &[("xs".into(), f32s())],
        &Type::Scalar(ScalarType::F32),
    )
    .unwrap();
    assert_eq!(
        typed.to_string(),
        "(reduce (lambda (a: f32 b: f32) (+ a b)) 0.0f32 (map (lambda (x: f32) (* x 2.0f32)) xs))"
    );
}

#[test]
fn lets_learn_their_types_from_later_uses() {
    // { let mut acc = 0.0; for i in 0..n { acc = acc + xs[i]; } acc } with xs: [f32], n: usize
    let body = Expr::Block {
        stmts: vec![
            Stmt::Let {
                pat: Pat::Bind {
                    name: "acc".into(),
                    mutable: true,
                },
                ty: Type::Infer,
                init: Some(Expr::Lit(Lit::Float(0.0, None))),
            },
            Stmt::Expr(Expr::For {
                var: "i".into(),
                lo: Box::new(Expr::int(0)),
                hi: Box::new(Expr::var("n")),
                body: Box::new(Expr::Assign {
                    target: Box::new(Expr::var("acc")),
                    value: Box::new(bin(
                        BinOp::Add,
                        Expr::var("acc"),
                        Expr::Index(Box::new(Expr::var("xs")), Box::new(Expr::var("i"))),
                    )),
                }),
            }),
        ],
        result: Some(Box::new(Expr::var("acc"))),
    };
    let caps = [
        ("xs".into(), f32s()),
        ("n".into(), Type::Scalar(ScalarType::Usize)),
    ];
    let typed = typecheck(&body, &caps, &Type::Scalar(ScalarType::F32)).unwrap();
    assert_eq!(
        typed.to_string(),
        "(do (let mut acc: f32 0.0f32) (for i 0usize n (set! acc (+ acc (index xs i)))) acc)"
    );
}

#[test]
fn unconstrained_literals_default_as_in_rust_and_records_are_known() {
    let point = Type::Record(
        "P".into(),
        vec![
            ("x".into(), Type::Scalar(ScalarType::F64)),
            ("y".into(), Type::Scalar(ScalarType::F64)),
        ],
    );
    let body = Expr::Match {
        scrutinee: Box::new(Expr::var("p")),
        arms: vec![MatchArm {
            pat: Pat::Record {
                name: "P".into(),
                fields: vec![("x".into(), Pat::bind("x"))],
                rest: true,
            },
            guard: None,
            body: Expr::Tuple(vec![
                Expr::var("x"),
                Expr::int(7),
                Expr::Lit(Lit::Float(1.5, None)),
            ]),
        }],
    };
    let want = Type::Tuple(vec![
        Type::Scalar(ScalarType::F64),
        Type::Scalar(ScalarType::I32),
        Type::Scalar(ScalarType::F64),
    ]);
    let typed = typecheck(&body, &[("p".into(), point)], &want).unwrap();
    assert_eq!(
        typed.to_string(),
        "(match p (P { x: x, .. } => (tuple x 7i32 1.5f64)))"
    );
}

#[test]
fn mismatches_are_errors_that_say_where() {
    let body = Expr::par(
        ParOp::Map,
        vec![
            lam(
                &["x"],
                bin(BinOp::Add, Expr::var("x"), Expr::Lit(Lit::Bool(true))),
            ),
            Expr::var("xs"),
        ],
    );
    let e = typecheck(&body, &[("xs".into(), f32s())], &f32s()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "type error in accelerated code: the operands of `+`: f32 and bool differ"
    );
    let body = Expr::Par {
        op: ParOp::Create,
        args: vec![Expr::var("xs"), lam(&["i"], Expr::var("i"))],
        loc: Loc::default(),
    };
    let e = typecheck(&body, &[("xs".into(), f32s())], &f32s()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "type error in accelerated code: the length of `create`: [f32] and usize differ"
    );
}

#[test]
fn reduce_by_index_types_its_bins_indices_and_values() {
    let usizes = Type::Seq(Box::new(Type::Scalar(ScalarType::Usize)));
    let add = lam(&["a", "b"], bin(BinOp::Add, Expr::var("a"), Expr::var("b")));
    let hist = |is: &str| {
        Expr::par(
            ParOp::ReduceByIndex,
            vec![
                Expr::var("bins"),
                add.clone(),
                Expr::Lit(Lit::Float(0.0, None)),
                Expr::var(is),
                Expr::var("xs"),
            ],
        )
    };
    let captures = [
        ("bins".to_string(), f32s()),
        ("is".to_string(), usizes),
        ("xs".to_string(), f32s()),
    ];
    let typed = typecheck(&hist("is"), &captures, &f32s()).unwrap();
    assert_eq!(
        typed.to_string(),
        "(reduce_by_index bins (lambda (a: f32 b: f32) (+ a b)) 0.0f32 is xs)"
    );
    // Indices must be `usize`s.
    let err = typecheck(&hist("xs"), &captures, &f32s()).unwrap_err();
    assert!(
        err.to_string()
            .contains("the indices (`is`) of `reduce_by_index`"),
        "{err}"
    );
}

#[test]
fn filter_and_scatter_keep_their_element_type() {
    let usizes = Type::Seq(Box::new(Type::Scalar(ScalarType::Usize)));
    let captures = [("is".to_string(), usizes), ("xs".to_string(), f32s())];
    let positive = lam(
        &["x"],
        bin(BinOp::Gt, Expr::var("x"), Expr::Lit(Lit::Float(0.0, None))),
    );
    let kept = Expr::par(ParOp::Filter, vec![positive, Expr::var("xs")]);
    assert_eq!(
        typecheck(&kept, &captures, &f32s()).unwrap().to_string(),
        "(filter (lambda (x: f32) (> x 0.0f32)) xs)"
    );
    // The predicate must give a `bool`.
    let not_bool = Expr::par(
        ParOp::Filter,
        vec![lam(&["x"], Expr::var("x")), Expr::var("xs")],
    );
    let err = typecheck(&not_bool, &captures, &f32s()).unwrap_err();
    assert!(
        err.to_string().contains("the predicate of `filter`"),
        "{err}"
    );
    let written = |vs: &str| {
        Expr::par(
            ParOp::Scatter,
            vec![Expr::var("xs"), Expr::var("is"), Expr::var(vs)],
        )
    };
    assert_eq!(
        typecheck(&written("xs"), &captures, &f32s())
            .unwrap()
            .to_string(),
        "(scatter xs is xs)"
    );
    // Values of another type than the destination's elements.
    let err = typecheck(&written("is"), &captures, &f32s()).unwrap_err();
    assert!(
        err.to_string().contains("the values (`vs`) of `scatter`"),
        "{err}"
    );
}

#[test]
fn records_the_code_names_are_known_without_a_value_of_them() {
    // { let p: P = P { x: 2.5 }; p.x }, where no capture or result holds a P (a helper's
    // parameter `p: P` inlined).
    let point = Type::Record(
        "P".into(),
        vec![("x".into(), Type::Scalar(ScalarType::F64))],
    );
    let built = Expr::Record {
        name: "P".into(),
        fields: vec![("x".into(), Expr::Lit(Lit::Float(2.5, None)))],
    };
    let body = Expr::Block {
        stmts: vec![Stmt::Let {
            pat: Pat::bind("p"),
            ty: Type::Named("P".into()),
            init: Some(built),
        }],
        result: Some(Box::new(Expr::Field(Box::new(Expr::var("p")), "x".into()))),
    };
    let want = Type::Scalar(ScalarType::F64);
    let e = typecheck(&body, &[], &want).unwrap_err();
    assert!(
        e.to_string()
            .contains("the record type `P` is not known here"),
        "{e}"
    );
    let typed = typecheck_naming(&body, &[], &want, &[Type::Seq(Box::new(point))]).unwrap();
    assert_eq!(
        typed.to_string(),
        "(do (let p: P { x: f64 } (P x: 2.5f64)) p.x)"
    );
}

/// `create(lo.__range_count(hi, 0 as _), |i| lo.__range_at(i, 0 as _))`, as the front end
/// writes `(lo..hi).into_par_iter()` (`__range_count_inclusive` for `lo..=hi`).
fn range(lo: Expr, hi: Expr, count: &str) -> Expr {
    let witness = || Expr::Cast(Box::new(Expr::int(0)), Type::Infer);
    let method = |recv: &Expr, method: &str, arg: Expr| Expr::Method {
        recv: Box::new(recv.clone()),
        method: method.into(),
        args: vec![arg, witness()],
    };
    Expr::par(
        ParOp::Create,
        vec![
            method(&lo, count, hi),
            lam(&["i"], method(&lo, "__range_at", Expr::var("i"))),
        ],
    )
}

fn typed_range(lo: Expr, hi: Expr, count: &str, t: ScalarType) -> String {
    let captures = [
        ("lo".to_string(), Type::Scalar(t)),
        ("hi".to_string(), Type::Scalar(t)),
    ];
    let seq = Type::Seq(Box::new(Type::Scalar(t)));
    typecheck(&range(lo, hi, count), &captures, &seq)
        .unwrap()
        .to_string()
}

#[test]
fn ranges_take_their_bounds_type_and_are_empty_when_the_end_is_not_past_the_start() {
    let (lo, hi) = (Expr::var("lo"), Expr::var("hi"));
    // `usize` from zero: the plain form fusion knows; `u64` from zero, its length cast.
    assert_eq!(
        typed_range(Expr::int(0), hi.clone(), "__range_count", ScalarType::Usize),
        "(create hi (lambda (i: usize) i))"
    );
    assert_eq!(
        typed_range(Expr::int(0), hi.clone(), "__range_count", ScalarType::U64),
        "(do (let range_n#t1: usize (as hi usize)) (create range_n#t1 (lambda (i: usize) (as i u64))))"
    );
    assert_eq!(
        typed_range(lo.clone(), hi.clone(), "__range_count", ScalarType::Usize),
        "(do (let range_n#t1: usize (if (> hi lo) (- hi lo) 0usize)) (create range_n#t1 (lambda (i: usize) (+ i lo))))"
    );
    assert_eq!(
        typed_range(lo.clone(), hi.clone(), "__range_count", ScalarType::U64),
        "(do (let range_n#t1: usize (if (> hi lo) (as (- hi lo) usize) 0usize)) (create range_n#t1 (lambda (i: usize) (+ (as i u64) lo))))"
    );
    assert_eq!(
        typed_range(Expr::int(1), hi.clone(), "__range_count_inclusive", ScalarType::U32),
        "(do (let range_n#t1: usize (if (>= hi 1u32) (+ (as (- hi 1u32) usize) 1usize) 0usize)) (create range_n#t1 (lambda (i: usize) (+ (as i u32) 1u32))))"
    );
    // Signed: the difference in 64 bits (exact once `hi` is past `lo`), the elements
    // wrapping (`-128i8..127` has elements past `i8`'s positive half from its start).
    assert_eq!(
        typed_range(lo.clone(), hi.clone(), "__range_count", ScalarType::I8),
        "(do (let range_n#t1: usize (if (> hi lo) (as (.wrapping_sub (as hi i64) (as lo i64)) usize) 0usize)) (create range_n#t1 (lambda (i: usize) (.wrapping_add lo (as i i8)))))"
    );
    // A computed end is bound once; a computed count is bound before the `create`, whose
    // length is then a variable (the form fusion delays).
    let computed = bin(BinOp::Sub, hi.clone(), Expr::int(1));
    assert_eq!(
        typed_range(Expr::int(0), computed, "__range_count", ScalarType::I32),
        "(do (let range_hi#t1: i32 (- hi 1i32)) (let range_n#t2: usize (if (> range_hi#t1 0i32) (as (.wrapping_sub (as range_hi#t1 i64) (as 0i32 i64)) usize) 0usize)) (create range_n#t2 (lambda (i: usize) (as i i32))))"
    );
    // Unconstrained literals are `i32`s, as in Rust.
    let typed = typecheck(
        &Expr::Method {
            recv: Box::new(range(Expr::int(0), Expr::int(10), "__range_count")),
            method: "len".into(),
            args: vec![],
        },
        &[],
        &Type::Scalar(ScalarType::Usize),
    )
    .unwrap();
    assert_eq!(
        typed.to_string(),
        "(.len (do (let range_n#t1: usize (if (> 10i32 0i32) (as (.wrapping_sub (as 10i32 i64) (as 0i32 i64)) usize) 0usize)) (create range_n#t1 (lambda (i: usize) (as i i32)))))"
    );
}
