//! Fusion's rewrites, each on a small program.
use super::*;
use crate::expr::BinOp;

fn lam(p: &str, body: Expr) -> Expr {
    Expr::Lambda {
        params: vec![(Pat::bind(p), Type::Infer)],
        body: Box::new(body),
    }
}

fn lam2(a: &str, b: &str, body: Expr) -> Expr {
    Expr::Lambda {
        params: vec![(Pat::bind(a), Type::Infer), (Pat::bind(b), Type::Infer)],
        body: Box::new(body),
    }
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

fn add() -> Expr {
    lam2("a", "b", bin(BinOp::Add, Expr::var("a"), Expr::var("b")))
}

/// `v.len()`.
fn len(v: &str) -> Expr {
    Expr::Method {
        recv: Box::new(Expr::var(v)),
        method: "len".into(),
        args: vec![],
    }
}

/// `a.len().min(b.len())`: a `zip`'s length.
fn min_len(a: &str, b: &str) -> Expr {
    Expr::Method {
        recv: Box::new(len(a)),
        method: "min".into(),
        args: vec![len(b)],
    }
}

/// `|(x, y)| x * y` over a `zip`'s pairs.
fn pair_product(x: &str, y: &str) -> Expr {
    Expr::Lambda {
        params: vec![(Pat::Tuple(vec![Pat::bind(x), Pat::bind(y)]), Type::Infer)],
        body: Box::new(bin(BinOp::Mul, Expr::var(x), Expr::var(y))),
    }
}

/// `reduce(|a, b| a + b, 0, map(f, xs))`.
fn sum_of_map(f: Expr, xs: Expr) -> Expr {
    Expr::par(
        ParOp::Reduce,
        vec![add(), Expr::int(0), Expr::par(ParOp::Map, vec![f, xs])],
    )
}

/// `let ys = map(|x| x, xs);`
fn let_ys() -> Stmt {
    Stmt::Let {
        pat: Pat::bind("ys"),
        ty: Type::Infer,
        init: Some(Expr::par(
            ParOp::Map,
            vec![lam("x", Expr::var("x")), Expr::var("xs")],
        )),
    }
}

#[test]
fn a_zip_of_a_map_into_a_reduction_is_one_pass() {
    // `xs.iter().map(f).zip(&ys).map(|(a, b)| a * b).sum()` as the front end writes it.
    let n = min_len("xs", "ys");
    let prefix = |s: Expr| Expr::Slice {
        seq: Box::new(s),
        lo: Box::new(Expr::int(0)),
        hi: Box::new(n.clone()),
    };
    let doubled = Expr::par(
        ParOp::Map,
        vec![
            lam("x", bin(BinOp::Mul, Expr::var("x"), Expr::int(2))),
            Expr::var("xs"),
        ],
    );
    let pair = lam2("x", "y", Expr::Tuple(vec![Expr::var("x"), Expr::var("y")]));
    let zipped = Expr::par(
        ParOp::Map2,
        vec![pair, prefix(doubled), prefix(Expr::var("ys"))],
    );
    let e = sum_of_map(pair_product("a", "b"), zipped);
    let fused = fuse(&e).to_string();
    assert!(
        fused.starts_with("(reduce (lambda (a b) (+ a b)) 0 (create (.min (.len xs) (.len ys))"),
        "{fused}"
    );
    assert!(
        !fused.contains("slice") && !fused.contains("(map"),
        "{fused}"
    );
    assert!(
        fused.contains("(index xs") && fused.contains("(index ys"),
        "{fused}"
    );
}

#[test]
fn map_into_reduce_is_one_pass_redomap() {
    let e = Expr::par(
        ParOp::Reduce,
        vec![
            add(),
            Expr::int(0),
            Expr::par(
                ParOp::Map,
                vec![
                    lam("x", bin(BinOp::Mul, Expr::var("x"), Expr::var("x"))),
                    Expr::var("xs"),
                ],
            ),
        ],
    );
    assert_eq!(
        e.to_string(),
        "(reduce (lambda (a b) (+ a b)) 0 (map (lambda (x) (* x x)) xs))"
    );
    assert_eq!(
        fuse(&e).to_string(),
        "(reduce (lambda (a b) (+ a b)) 0 (create (.len xs) (lambda (i#f1: usize) (do (let x (index xs i#f1)) (* x x)))))"
    );
}

#[test]
fn a_reduction_over_a_filter_builds_no_array() {
    let positive = lam("x", bin(BinOp::Gt, Expr::var("x"), Expr::int(0)));
    let filtered = Expr::par(ParOp::Filter, vec![positive, Expr::var("xs")]);
    let sum = Expr::par(ParOp::Reduce, vec![add(), Expr::int(0), filtered.clone()]);
    assert_eq!(
        fuse(&sum).to_string(),
        "(reduce (lambda (a b) (+ a b)) 0 (create (.len xs) (lambda (i#f1: usize) (do (let kept#f2 (index xs i#f1)) \
         (if (do (let x kept#f2) (> x 0)) kept#f2 0)))))"
    );
    // Counting: `map` over the filter, then `reduce`.
    let ones = Expr::par(ParOp::Map, vec![lam("y", Expr::int(1)), filtered.clone()]);
    let count = Expr::par(ParOp::Reduce, vec![add(), Expr::int(0), ones]);
    assert_eq!(
        fuse(&count).to_string(),
        "(reduce (lambda (a b) (+ a b)) 0 (create (.len xs) (lambda (i#f1: usize) (do (let kept#f2 (index xs i#f1)) \
         (if (do (let x kept#f2) (> x 0)) (do (let y kept#f2) 1) 0)))))"
    );
    // A filter whose result is kept stays a filter.
    assert_eq!(fuse(&filtered).to_string(), filtered.to_string());
}

#[test]
fn map_of_map2_of_create_composes_into_one_create() {
    let inner = Expr::par(
        ParOp::Map2,
        vec![
            lam2("a", "b", bin(BinOp::Sub, Expr::var("a"), Expr::var("b"))),
            Expr::var("xs"),
            Expr::par(
                ParOp::Create,
                vec![Expr::var("n"), lam("j", Expr::var("j"))],
            ),
        ],
    );
    let e = Expr::par(
        ParOp::Map,
        vec![
            lam("y", bin(BinOp::Add, Expr::var("y"), Expr::int(1))),
            inner,
        ],
    );
    assert_eq!(
        fuse(&e).to_string(),
        // The composed element functions read the outer index itself (no `let i#f1 = i#f2`).
        "(create (accel::same_len (.len xs) n) (lambda (i#f2: usize) (do (let a (index xs i#f2)) (let b i#f2) (let y (- a b)) \
         (+ y 1))))"
    );
}

#[test]
fn a_let_with_one_consuming_use_does_not_block_fusion() {
    // { let ys = map(f, xs); reduce(+, 0, ys) }
    let e = Expr::Block {
        stmts: vec![let_ys()],
        result: Some(Box::new(Expr::par(
            ParOp::Reduce,
            vec![add(), Expr::int(0), Expr::var("ys")],
        ))),
    };
    assert_eq!(
        fuse(&e).to_string(),
        "(do (reduce (lambda (a b) (+ a b)) 0 (create (.len xs) (lambda (i#f1: usize) (do (let x (index xs i#f1)) x)))))"
    );
}

#[test]
fn reductions_of_one_input_fuse_side_by_side() {
    // (reduce(+, 0, map(f, xs)), reduce(max, m, map(f, xs))): one pass.
    let f = || {
        Expr::par(
            ParOp::Map,
            vec![
                lam("x", bin(BinOp::Mul, Expr::var("x"), Expr::int(2))),
                Expr::var("xs"),
            ],
        )
    };
    let max = lam2(
        "p",
        "q",
        Expr::Method {
            recv: Box::new(Expr::var("p")),
            method: "max".into(),
            args: vec![Expr::var("q")],
        },
    );
    let e = Expr::Tuple(vec![
        Expr::par(ParOp::Reduce, vec![add(), Expr::int(0), f()]),
        Expr::par(ParOp::Reduce, vec![max, Expr::var("m"), f()]),
    ]);
    assert_eq!(
        fuse(&e).to_string(),
        "(reduce (lambda (acc#f3 elem#f4) (tuple (do (let a acc#f3.0) (let b elem#f4.0) (+ a b)) \
         (do (let p acc#f3.1) (let q elem#f4.1) (.max p q)))) (tuple 0 m) (create (.len xs) \
         (lambda (i#f1: usize) (do (let x (index xs i#f1)) (let x#f5 (* x 2)) (tuple x#f5 x#f5)))))"
    );
}

#[test]
fn nothing_is_computed_twice() {
    // Two uses: ys stays a manifest array.
    let two = Expr::Block {
        stmts: vec![let_ys()],
        result: Some(Box::new(Expr::Tuple(vec![
            Expr::par(ParOp::Reduce, vec![add(), Expr::int(0), Expr::var("ys")]),
            Expr::par(ParOp::Scan, vec![add(), Expr::int(0), Expr::var("ys")]),
        ]))),
    };
    assert!(fuse(&two)
        .to_string()
        .starts_with("(do (let ys (create (.len xs)"));
    // One use, but inside a closure that runs once per element of zs: not substituted.
    let under_lambda = Expr::Block {
        stmts: vec![let_ys()],
        result: Some(Box::new(Expr::par(
            ParOp::Map,
            vec![
                lam(
                    "z",
                    Expr::par(ParOp::Reduce, vec![add(), Expr::var("z"), Expr::var("ys")]),
                ),
                Expr::var("zs"),
            ],
        ))),
    };
    assert!(fuse(&under_lambda)
        .to_string()
        .starts_with("(do (let ys (create (.len xs)"));
}

#[test]
fn a_zip_mapped_by_a_tuple_pattern_is_straight_line_code() {
    // `xs.iter().zip(&ys).map(|(x, y)| x * y)`: the pair's components bound directly.
    let pair = lam2("a", "b", Expr::Tuple(vec![Expr::var("a"), Expr::var("b")]));
    let zipped = Expr::par(ParOp::Map2, vec![pair, Expr::var("xs"), Expr::var("xs")]);
    let product = Expr::Lambda {
        params: vec![(
            Pat::Tuple(vec![Pat::bind("x"), Pat::bind("y")]),
            Type::Infer,
        )],
        body: Box::new(bin(BinOp::Mul, Expr::var("x"), Expr::var("y"))),
    };
    let e = Expr::par(ParOp::Map, vec![product, zipped]);
    assert_eq!(
        fuse(&e).to_string(),
        "(create (.len xs) (lambda (i#f2: usize) (do (let a (index xs i#f2)) (let b (index xs i#f2)) \
         (let x a) (let y b) (* x y))))"
    );
}

#[test]
fn flattening_keeps_what_a_later_statement_names() {
    // `let a = 1; let y = { let a = 2; a }; y + a`: hoisting would shadow the outer `a`.
    let inner = Expr::Block {
        stmts: vec![Stmt::Let {
            pat: Pat::bind("a"),
            ty: Type::Infer,
            init: Some(Expr::int(2)),
        }],
        result: Some(Box::new(Expr::var("a"))),
    };
    let e = Expr::Block {
        stmts: vec![
            Stmt::Let {
                pat: Pat::bind("a"),
                ty: Type::Infer,
                init: Some(Expr::int(1)),
            },
            Stmt::Let {
                pat: Pat::bind("y"),
                ty: Type::Infer,
                init: Some(inner),
            },
        ],
        result: Some(Box::new(bin(BinOp::Add, Expr::var("y"), Expr::var("a")))),
    };
    assert_eq!(fuse(&e).to_string(), e.to_string());
    // `let (p, q) = (1, p)` names the outer `p`: it stays one binding.
    let swap = Expr::Block {
        stmts: vec![Stmt::Let {
            pat: Pat::Tuple(vec![Pat::bind("p"), Pat::bind("q")]),
            ty: Type::Infer,
            init: Some(Expr::Tuple(vec![Expr::int(1), Expr::var("p")])),
        }],
        result: Some(Box::new(Expr::var("q"))),
    };
    assert_eq!(fuse(&swap).to_string(), swap.to_string());
}

#[test]
fn a_zip_of_slices_bound_in_a_block_fuses_into_its_consumers() {
    // `l[a..b].par_iter().zip(&x[..i]).map(|(p, q)| p * q).sum()` as the front end
    // writes it: the slices bound in a block whose result is the zip's `create`.
    let slice = |s: &str, lo: Expr, hi: Expr| Expr::Slice {
        seq: Box::new(Expr::var(s)),
        lo: Box::new(lo),
        hi: Box::new(hi),
    };
    let bind = |name: &str, init: Expr| Stmt::Let {
        pat: Pat::bind(name),
        ty: Type::Infer,
        init: Some(init),
    };
    let index = |s: &str| Expr::Index(Box::new(Expr::var(s)), Box::new(Expr::var("k")));
    let zipped = Expr::Block {
        stmts: vec![
            bind("xs1", slice("l", Expr::var("a"), Expr::var("b"))),
            bind("ys2", slice("x", Expr::int(0), Expr::var("i"))),
        ],
        result: Some(Box::new(Expr::par(
            ParOp::Create,
            vec![
                min_len("xs1", "ys2"),
                lam("k", Expr::Tuple(vec![index("xs1"), index("ys2")])),
            ],
        ))),
    };
    let e = sum_of_map(pair_product("p", "q"), zipped);
    let fused = fuse(&e).to_string();
    assert!(
        fused.starts_with("(do (let xs1 (slice l a b)) (let ys2 (slice x 0 i)) (reduce (lambda (a b) (+ a b)) 0 (create (.min (.len xs1) (.len ys2))"),
        "{fused}"
    );
    assert_eq!(fused.matches("(create").count(), 1, "{fused}");
    assert!(!fused.contains("(map"), "{fused}");
}
