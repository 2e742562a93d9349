//! Tests of the front end.

use super::*;

fn site(src: &str) -> Result<String, Vec<String>> {
    let e: syn::Expr = syn::parse_str(src).expect("test input parses");
    let mut l = Lowerer::new(None);
    let ir = l.expr(&e);
    if l.errors.is_empty() {
        Ok(ir.to_string())
    } else {
        Err(l.errors.iter().map(|e| e.to_string()).collect())
    }
}

fn function(name: &str, params: &[&str], body: &str) -> Result<String, Vec<String>> {
    let b: syn::Block = syn::parse_str(body).expect("test input parses");
    let mut l = Lowerer::new(Some(name.to_string()));
    for p in params {
        l.bind(p.to_string());
    }
    let ir = l.block(&b);
    if l.errors.is_empty() {
        Ok(ir.to_string())
    } else {
        Err(l.errors.iter().map(|e| e.to_string()).collect())
    }
}

#[test]
fn lowers_operations_calls_and_captures() {
    assert_eq!(site("reduce(add, 0, &v)").unwrap(), "(reduce add 0 v)");
    assert_eq!(
        site("map(|x| c * x, &xs)").unwrap(),
        "(map (lambda (x) (* c x)) xs)"
    );
    assert_eq!(site("geo::dist(p, q)").unwrap(), "(geo::dist p q)");
    assert_eq!(
        site("map(|x: f32| x.sqrt() as f64, xs)").unwrap(),
        "(map (lambda (x: f32) (as (.sqrt x) f64)) xs)"
    );
    assert_eq!(
        site("create(n, |i| vec![i; 2])").unwrap(),
        "(create n (lambda (i) (seq-repeat i 2)))"
    );
    assert_eq!(
        site("map(|r| r[1..], &rows)").unwrap(),
        "(map (lambda (r) (slice r 1 (.len r))) rows)"
    );
    assert_eq!(
        site("Tensor::<f32>::zeros(&[2, 3])").unwrap(),
        "(Tensor::zeros [2 3])"
    );
}

#[test]
fn desugars_compound_assignment_inclusive_ranges_and_negative_patterns() {
    let ir = function("f", &["n"], "{ let mut s = 0; for i in 0..=n { s += i; } match s { -1 | 0 => 0, i64::MIN..=-2 => 1, _ => s } }").unwrap();
    assert_eq!(
        ir,
        "(do (let mut s 0) (for i 0 (+ n 1) (do (set! s (+ s i)))) (match s (-1 | 0 => 0) (i64::MIN..=-2 => 1) (_ => s)))"
    );
}

#[test]
fn records_the_callees_and_operations_it_finds() {
    let e: syn::Expr = syn::parse_str("map(f, map2(|a, b| g(a, b), xs, m::h(ys)))").unwrap();
    let mut l = Lowerer::new(None);
    l.expr(&e);
    let callees: Vec<&str> = l.callees.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(callees, vec!["f", "g", "m::h"]);
    let ops: Vec<&str> = l.ops.iter().map(|(op, _)| op.name()).collect();
    assert_eq!(ops, vec!["map", "map2"]);
}

#[test]
fn locals_are_values_and_function_parameters_are_applied() {
    assert_eq!(
        function("apply", &["f", "x"], "{ f(x) }").unwrap(),
        "(do (apply f x))"
    );
    assert_eq!(
        function("g", &["f", "xs"], "{ map(f, xs) }").unwrap(),
        "(do (map f xs))"
    );
}

#[test]
fn iterator_chains_lower_to_parallel_operations() {
    assert_eq!(site("xs.par_iter().map(|x| x * 2).sum()").unwrap(), "(reduce (lambda (__accel_a1 __accel_b2) (+ __accel_a1 __accel_b2)) (as -0.0 _) (map (lambda (x) (* x 2)) xs))");
    assert_eq!(site("xs.iter().zip(&ys).filter(|(x, y)| **x > **y).count()").unwrap(),
        "(reduce (lambda (__accel_a3 __accel_b4) (+ __accel_a3 __accel_b4)) 0usize (map (lambda (_) 1usize) (filter (lambda ((x, y)) (> x y)) (map2 (lambda (__accel_x1 __accel_y2) (tuple __accel_x1 __accel_y2)) (slice xs 0usize (.min (.len xs) (.len ys))) (slice ys 0usize (.min (.len xs) (.len ys)))))))"
    );
    assert_eq!(site("(1..n).into_par_iter().enumerate().map(|(i, x)| i * x).fold(0, |a, b| a + b)").unwrap(), "(reduce (lambda (a b) (+ a b)) 0 (map (lambda ((i, x)) (* i x)) (do (let __accel_xs2 (create (.__range_count 1 n (as 0 _)) (lambda (__accel_i1) (.__range_at 1 __accel_i1 (as 0 _))))) (map2 (lambda (__accel_j4 __accel_x5) (tuple __accel_j4 __accel_x5)) (create (.len __accel_xs2) (lambda (__accel_i3) __accel_i3)) __accel_xs2))))");
}

#[test]
fn rejects_with_messages() {
    let err = |src: &str| site(src).unwrap_err().join("\n");
    assert!(err("map(|x| { println!(\"{}\", x); x }, v)")
        .starts_with("`println!` is not supported in accelerated code"));
    assert!(err("map(|x| x.iter().rev().sum(), v)")
        .starts_with("the iterator method `.rev()` is not supported"));
    assert!(err("xs.iter().max()").starts_with(
        "`.max()` returns an `Option`, which accelerated code does not have: fold with the neutral element instead, e.g. `.fold(i64::MIN, i64::max)`"
    ));
    assert!(err("xs.iter().reduce(|a, b| a + b)").starts_with("`.reduce(op)` returns an `Option`"));
    assert!(err("accelerate!(map(f, v))").starts_with("nested accelerate! is not supported"));
    assert!(err("map(|x| Box::new(x), v)").starts_with("`Box` is a heap type"));
    assert!(err("map(|x| unsafe { x }, v)").starts_with("`unsafe` code is not allowed"));
    assert!(err("map(3, v)").starts_with("the function argument of `map` must be"));
    assert!(err("map(f)").starts_with("`map` takes 2 argument(s): `map(f, xs)`; found 1"));
    assert!(
        function("fact", &["n"], "{ n * fact(n - 1) }").unwrap_err()[0]
            .starts_with("recursion is not supported")
    );
    assert!(function("f", &[], "{ y + 1 }").unwrap_err()[0]
        .starts_with("`y` is not a parameter or local of this function"));
}

#[test]
fn never_panics_on_unusual_input() {
    // Every expression form syn accepts either lowers or becomes an error.
    for src in [
        "loop { break 1 }",
        "async move { 1 }",
        "x?",
        "|| 1",
        "(|x| x)(1)",
        "a..b",
        "[1, 2][..]",
        "'a: { 1 }",
        "const { 1 }",
        "x.await",
        "S { ..base }",
        "T(1)",
        "if let Some(x) = y { x } else { 0 }",
        "match x { Some(y) => y, _ => 0 }",
        "let x = 1",
        "1u8",
        "1e400",
        "'c'",
        "b\"bytes\"",
        "<T as Tr>::f(1)",
        "x as String",
        "!!!!x",
        "f::<i32>(1)",
    ] {
        let _ = site(src);
    }
}

#[test]
fn desugars_byte_classes_and_range_contains_into_comparisons() {
    assert_eq!(
        site("c.is_ascii_digit()").unwrap(),
        "(do (let __accel_c1 c) (&& (>= __accel_c1 48u8) (<= __accel_c1 57u8)))"
    );
    assert_eq!(
        site("(97..=122).contains(&x)").unwrap(),
        "(do (let __accel_x1 x) (&& (>= __accel_x1 97) (<= __accel_x1 122)))"
    );
    // Computed bounds are evaluated once, before the value, as Rust's range is built first.
    assert_eq!(
        site("(a[0]..b).contains(&x)").unwrap(),
        "(do (let __accel_lo1 (index a 0)) (do (let __accel_hi2 b) (do (let __accel_x3 x) (&& (>= __accel_x3 __accel_lo1) (< __accel_x3 __accel_hi2)))))"
    );
    assert_eq!(
        site("(..=n).contains(&x)").unwrap(),
        "(do (let __accel_hi1 n) (do (let __accel_x2 x) (<= __accel_x2 __accel_hi1)))"
    );
    // Other `contains` and other methods are not ranges' or classes'.
    assert!(site("xs.contains(&x)").is_err());
}
