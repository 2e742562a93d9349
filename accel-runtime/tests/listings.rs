//! The paper's Listings 1–3, in Rust. The paper writes them in MExpr; these keep their
//! point: (1) an accelerated expression and the function it depends on are extracted,
//! nothing else; (2) a closure capturing a local is lambda-lifted with the local as a
//! parameter; (3) aliasing tensors stay aliased: writes through two views of one tensor
//! land in the one buffer, giving `[0, 7, 0, 0, 0, 2]`.

use accel_runtime::ir::passes::lift::lift;
use accel_runtime::prelude::*;

#[accel]
fn add_one(x: i64) -> i64 {
    x + 1
}

#[accel]
fn unrelated(x: i64) -> i64 {
    x * 100
}

#[test]
fn listing_1_extracts_the_expression_and_exactly_what_it_uses() {
    let s = vec![1i64, 2, 3];
    let s2 = with_mode(Mode::Debug, || accelerate!(map(add_one, &s)));
    assert_eq!(s2, vec![2, 3, 4]);
    assert_eq!(unrelated(1), 100);
    let p = describe!(map(add_one, &s)).program().unwrap();
    assert_eq!(p.function_names(), vec!["listings::add_one"]);
    assert_eq!(p.site.captures, vec!["s"]);
    assert_eq!(p.site.body.to_string(), "(map listings::add_one s)");
}

#[test]
fn listing_2_lifts_a_closure_with_its_captured_local() {
    let y = 2i64;
    let s = vec![1i64, 2, 3];
    assert_eq!(
        with_mode(Mode::Debug, || accelerate!(map(|x| x + y, &s))),
        vec![3, 4, 5]
    );
    let (site, line) = (describe!(map(|x| x + y, &s)), line!());
    let mut p = site.program().unwrap();
    lift(&mut p);
    assert_eq!(
        p.to_string(),
        format!(
            "(fn site::lambda#1 (y x#1) -> _ (+ x#1 y))\n\
             (site accel-runtime/tests/listings.rs:{line} (y s) (map (closure site::lambda#1 y) s))"
        )
    );
}

#[test]
fn listing_3_aliasing_views_write_one_buffer() {
    let t = Tensor::<i64>::zeros(&[6]);
    let a = t.sub(1, 2);
    let b = t.sub(4, 2);
    with_mode(Mode::Debug, || {
        accelerate!(parallel_loop(1, |i| {
            a.set([i], 7);
            b.set([i + 1], 2);
        }))
    });
    assert_eq!(t.to_vec(), vec![0, 7, 0, 0, 0, 2]);
}
