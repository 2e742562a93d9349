//! The site description lists exactly the functions a site needs, each once, however many
//! paths and sites reach it; functions used only outside `accelerate!` are never extracted.

use accel_runtime::prelude::*;

mod geo {
    use accel_runtime::prelude::*;

    #[accel]
    pub fn sq(x: f64) -> f64 {
        x * x
    }

    #[accel]
    pub fn dist(a: (f64, f64), b: (f64, f64)) -> f64 {
        (sq(a.0 - b.0) + sq(a.1 - b.1)).sqrt()
    }
}

use geo::dist;

#[accel]
fn nearest(p: (f64, f64), qs: &[(f64, f64)]) -> f64 {
    reduce(|a, b| a.min(b), f64::INFINITY, map(|q| dist(p, q), qs))
}

#[accel]
fn spread(ps: &[(f64, f64)]) -> f64 {
    // Reaches `sq` directly and through `dist`, and `dist` twice.
    reduce(
        |a, b| a.max(b),
        0.0,
        map(
            |p| geo::dist(p, (0.0, 0.0)) + dist(p, (1.0, 1.0)) + geo::sq(p.0),
            ps,
        ),
    )
}

/// Used only outside accelerated code, so it may use anything Rust allows.
fn report(x: f64) -> String {
    format!("{x:.1}")
}

#[test]
fn each_function_once_callees_first() {
    let ps = vec![(0.0, 0.0), (3.0, 4.0)];
    let p = describe!(spread(&ps)).program().unwrap();
    assert_eq!(
        p.function_names(),
        vec![
            "extraction::geo::sq",
            "extraction::geo::dist",
            "extraction::spread"
        ]
    );
    let p = describe!(nearest((0.0, 0.0), &ps)).program().unwrap();
    assert_eq!(
        p.function_names(),
        vec![
            "extraction::geo::sq",
            "extraction::geo::dist",
            "extraction::nearest"
        ]
    );
    // Calls are renamed to the unique names of what they resolved to.
    assert_eq!(
        p.function("extraction::geo::dist").unwrap().body.to_string(),
        "(do (.sqrt (+ (extraction::geo::sq (- a#1.0 b#1.0)) (extraction::geo::sq (- a#1.1 b#1.1)))))"
    );
}

#[test]
fn sites_sharing_functions_each_get_them_once() {
    let ps = vec![(0.0, 0.0), (3.0, 4.0)];
    let both = describe!((spread(&ps), nearest((1.0, 0.0), &ps)))
        .program()
        .unwrap();
    assert_eq!(
        both.function_names(),
        vec![
            "extraction::geo::sq",
            "extraction::geo::dist",
            "extraction::spread",
            "extraction::nearest"
        ]
    );
    let only_ops = describe!(map(|x| x + 1.0, &[1.0f64])).program().unwrap();
    assert!(only_ops.functions.is_empty());
    let (s, n) = with_mode(Mode::Debug, || {
        accelerate!((spread(&ps), nearest((1.0, 0.0), &ps)))
    });
    assert_eq!(report(s), "17.6"); // 5 + sqrt(13) + 9
    assert_eq!(n, 1.0);
}

#[test]
fn descriptions_carry_the_operations_and_captures() {
    let ps = vec![(0.0, 0.0)];
    let k = 2.0;
    let site = describe!(map(|p| dist(p, (k, k)), &ps));
    assert_eq!(site.ops.len(), 1);
    assert_eq!(site.ops[0].op, "map");
    assert_eq!(site.callees.len(), 1);
    assert_eq!(site.callees[0].0, "dist");
    assert_eq!(site.callees[0].1.path, "extraction::geo::dist");
    let p = site.program().unwrap();
    assert_eq!(p.site.captures, vec!["k", "ps"]); // textual first-use order
}
