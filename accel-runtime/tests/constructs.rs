//! Every construct of API.md's "Inside accelerated code", compiled through the macros and
//! run in debug mode and in cpu mode, with the exact values expected (cpu floats within
//! the tolerance of `Accel::close_to`, since parallel reductions group differently).

// Some expressions are spelled the long way on purpose, to exercise those forms.
#![allow(
    clippy::manual_range_patterns,
    clippy::bool_assert_comparison,
    clippy::nonminimal_bool,
    clippy::redundant_closure
)]

use accel_runtime::prelude::*;

mod common;

use common::{agree as debug, noise};

#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(Accel, Clone, Debug, PartialEq)]
struct Particle {
    pos: [f32; 3],
    mass: f32,
    alive: bool,
}

const SCALE: i64 = 10;

#[accel]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[accel]
fn dist(p: Point, q: Point) -> f64 {
    let (dx, dy) = (p.x - q.x, p.y - q.y);
    (dx * dx + dy * dy).sqrt()
}

#[accel]
fn classify(n: i32) -> i32 {
    match n {
        i32::MIN..=-1 => -1,
        0 => 0,
        1 | 2 | 3 => 1,
        n if n % 2 == 0 => 2,
        _ => 3,
    }
}

#[accel]
fn collatz_steps(n: u64) -> u32 {
    let mut n = n;
    let mut steps = 0u32;
    while n != 1 {
        n = if n.is_multiple_of(2) {
            n / 2
        } else {
            3 * n + 1
        };
        steps += 1;
    }
    steps
}

#[accel]
fn poly(x: f64, coeffs: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..coeffs.len() {
        acc = acc * x + coeffs[coeffs.len() - 1 - i];
    }
    acc
}

#[accel]
fn apply_twice(f: impl Fn(i64) -> i64, xs: &[i64]) -> Vec<i64> {
    map(|x| f(f(x)), xs)
}

#[accel]
fn sum_rows<F: Fn(f32) -> f32>(f: F, rows: Vec<Vec<f32>>) -> Vec<f32> {
    map(|row| reduce(|a, b| a + b, 0.0, map(&f, row)), rows)
}

#[accel]
fn g(x: i64) -> i64 {
    x * x + 1
}

/// Passes its function on to `apply_twice`: a closure through two `#[accel]` functions.
#[accel]
fn apply_twice_plus_one(f: impl Fn(i64) -> i64, xs: &[i64]) -> Vec<i64> {
    let ys = apply_twice(f, xs);
    map(|y| y + 1, &ys)
}

#[accel]
fn centroid(ps: &[Point]) -> Point {
    let n = ps.len() as f64;
    let s = reduce(
        |a: Point, b: Point| Point {
            x: a.x + b.x,
            y: a.y + b.y,
        },
        Point { x: 0.0, y: 0.0 },
        ps,
    );
    Point {
        x: s.x / n,
        y: s.y / n,
    }
}

#[test]
fn reduce_with_an_accel_function_and_integer_types() {
    let v: Vec<i64> = (1..=100).collect();
    assert_eq!(debug(|| accelerate!(reduce(add, 0, &v))), 5050);
    let u: Vec<u32> = vec![1, 2, 3];
    assert_eq!(debug(|| accelerate!(reduce(|a, b| a.max(b), 0, &u))), 3);
    let w: Vec<u64> = vec![u64::MAX / 2, 1];
    assert_eq!(
        with_mode(Mode::Debug, || accelerate!(reduce(
            |a, b| a.wrapping_add(b),
            0,
            w
        ))),
        u64::MAX / 2 + 1
    );
    let z: Vec<usize> = (0..10).collect();
    assert_eq!(
        debug(|| accelerate!(reduce(|a, b| a + b, 0usize, map(|x| x * x, &z[..])))),
        285
    );
    let b = vec![true, false, true];
    assert_eq!(
        debug(|| accelerate!(reduce(|p, q| p && q, true, &b))),
        false
    );
}

#[test]
fn map_map2_scan_create_and_flatten() {
    let xs: Vec<f32> = vec![1.0, 2.0, 3.0];
    let c = 2.5f32;
    let ys: Vec<f32> = debug(|| accelerate!(map(|x| c * x, &xs)));
    assert_eq!(ys, vec![2.5, 5.0, 7.5]);
    let zs = debug(|| accelerate!(map2(|a, b| a - b, &ys, &xs)));
    assert_eq!(zs, vec![1.5, 3.0, 4.5]);
    let prefix = debug(|| accelerate!(scan(|a, b| a + b, 0, &vec![1, 2, 3, 4])));
    assert_eq!(prefix, vec![1, 3, 6, 10]);
    let squares: Vec<usize> = debug(|| accelerate!(create(5, |i| i * i)));
    assert_eq!(squares, vec![0, 1, 4, 9, 16]);
    let rows = vec![vec![1i32, 2], vec![3, 4], vec![5, 6]];
    assert_eq!(
        debug(|| accelerate!(flatten(&rows))),
        vec![1, 2, 3, 4, 5, 6]
    );
    // A reduce over rows with a row-wise operator and a row as neutral element.
    let col_sums =
        debug(|| accelerate!(reduce(|a, b| map2(|x, y| x + y, a, b), vec![0, 0], &rows)));
    assert_eq!(col_sums, vec![9, 12]);
}

#[test]
fn empty_and_single_element_sequences() {
    let empty: Vec<f64> = vec![];
    assert_eq!(
        debug(|| accelerate!(reduce(|a, b| a + b, 0.0, &empty))),
        0.0
    );
    assert_eq!(
        debug(|| accelerate!(map(|x| x * 2.0, &empty))),
        Vec::<f64>::new()
    );
    assert_eq!(
        debug(|| accelerate!(scan(|a, b| a + b, 0.0, &empty))),
        Vec::<f64>::new()
    );
    let one = vec![7i32];
    assert_eq!(debug(|| accelerate!(scan(|a, b| a * b, 1, &one))), vec![7]);
    let none: Vec<Vec<i32>> = vec![];
    assert_eq!(debug(|| accelerate!(flatten(&none))), Vec::<i32>::new());
}

#[test]
fn let_patterns_blocks_shadowing_if_and_match() {
    let pairs = vec![(1i32, 10i32), (-2, 20), (3, 30)];
    let out: Vec<i32> = debug(|| {
        accelerate!(map(
            |p| {
                let (a, b) = p;
                let a = if a < 0 { -a } else { a };
                let scaled = {
                    let k = 2;
                    a * k
                };
                match (scaled, b) {
                    (2, _) => b,
                    (4, b) => b + 1,
                    _ => 0,
                }
            },
            &pairs
        ))
    });
    assert_eq!(out, vec![10, 21, 0]);
    let ns = vec![-5, 0, 2, 3, 8, 9];
    assert_eq!(
        debug(|| accelerate!(map(classify, &ns))),
        vec![-1, 0, 1, 1, 2, 3]
    );
}

#[test]
fn loops_over_mutable_locals_and_sequence_indexing() {
    let ns: Vec<u64> = vec![1, 6, 7, 27];
    assert_eq!(
        debug(|| accelerate!(map(collatz_steps, &ns))),
        vec![0, 8, 16, 111]
    );
    let coeffs = vec![1.0, 2.0, 3.0]; // 1 + 2x + 3x²
    let xs = vec![0.0, 1.0, 2.0];
    assert_eq!(
        debug(|| accelerate!(map(|x| poly(x, &coeffs), &xs))),
        vec![1.0, 6.0, 17.0]
    );
    let v = vec![3, 1, 4, 1, 5];
    let n = v.len();
    // Inclusive ranges and compound assignment.
    let tri: Vec<usize> = debug(|| {
        accelerate!(create(n, |i| {
            let mut s = 0;
            for k in 0..=i {
                s += k;
            }
            s
        }))
    });
    assert_eq!(tri, vec![0, 1, 3, 6, 10]);
    let rev: Vec<i32> = debug(|| accelerate!(create(n, |i| v[n - 1 - i])));
    assert_eq!(rev, vec![5, 1, 4, 1, 3]);
}

#[test]
fn operators_casts_math_methods_and_constants() {
    let xs = vec![0.25f64, 1.0, 4.0];
    let ys: Vec<f64> = debug(|| {
        accelerate!(map(
            |x| x.sqrt()
                + x.ln().abs().floor()
                + x.powi(2).min(1.0)
                + (x as i64) as f64
                + std::f64::consts::PI * 0.0,
            &xs
        ))
    });
    assert_eq!(
        ys,
        vec![
            0.5 + 1.0 + 0.0625 + 0.0,
            1.0 + 0.0 + 1.0 + 1.0,
            2.0 + 1.0 + 1.0 + 4.0
        ]
    );
    let ints = vec![5i64, -3, 12];
    let r: Vec<i64> = debug(|| accelerate!(map(|x| ((x % 4) << 1 | 1) ^ (x >> 1) & SCALE, &ints)));
    let expected: Vec<i64> = ints
        .iter()
        .map(|&x| ((x % 4) << 1 | 1) ^ (x >> 1) & SCALE)
        .collect();
    assert_eq!(r, expected);
    let flags: Vec<bool> =
        debug(|| accelerate!(map(|x| !(x > 0) || x == 12 && x != i64::MAX, &ints)));
    assert_eq!(flags, vec![false, true, true]);
    let m = debug(|| {
        accelerate!(reduce(
            |a, b| f32::max(a, b),
            f32::MIN,
            &[1.5f32, -2.0, 0.5]
        ))
    });
    assert_eq!(m, 1.5);
}

#[test]
fn records_tuples_and_arrays_as_arguments_results_and_elements() {
    let ps = vec![
        Point { x: 0.0, y: 0.0 },
        Point { x: 3.0, y: 4.0 },
        Point { x: 6.0, y: 8.0 },
    ];
    let origin = Point { x: 0.0, y: 0.0 };
    assert_eq!(
        debug(|| accelerate!(map(|p| dist(p, origin), &ps))),
        vec![0.0, 5.0, 10.0]
    );
    assert_eq!(
        debug(|| accelerate!(centroid(&ps))),
        Point { x: 3.0, y: 4.0 }
    );
    let moved: Vec<Point> = debug(|| accelerate!(map(|p| Point { x: p.y, y: p.x }, &ps)));
    assert_eq!(moved[1], Point { x: 4.0, y: 3.0 });
    let parts = vec![
        Particle {
            pos: [1.0, 2.0, 3.0],
            mass: 2.0,
            alive: true,
        },
        Particle {
            pos: [0.0, 0.0, 1.0],
            mass: 4.0,
            alive: false,
        },
    ];
    // A tuple result of records' fields, array indexing and struct patterns.
    let (total, heaviest_z) = debug(|| {
        accelerate!((
            reduce(
                |a, b| a + b,
                0.0,
                map(|p| if p.alive { p.mass } else { 0.0 }, &parts)
            ),
            reduce(
                |a, b| if a.1 >= b.1 { a } else { b },
                (0.0, 0.0),
                map(
                    |p| {
                        let Particle { pos, mass, .. } = p;
                        (pos[2], mass)
                    },
                    &parts
                )
            )
        ))
    });
    assert_eq!((total, heaviest_z), (2.0, (1.0, 4.0)));
    let arrays: Vec<[i32; 2]> = debug(|| accelerate!(create(3, |i| [i as i32, -(i as i32)])));
    assert_eq!(arrays, vec![[0, 0], [1, -1], [2, -2]]);
    let filled: Vec<[i32; 0]> = vec![];
    assert_eq!(debug(|| accelerate!(map(|a| a, &filled))).len(), 0);
    let rep: Vec<[f32; 3]> = debug(|| accelerate!(create(2, |i| [i as f32; 3])));
    assert_eq!(rep, vec![[0.0; 3], [1.0; 3]]);
}

#[test]
fn higher_order_functions_and_nested_sequences() {
    let xs = vec![1i64, 2, 3];
    let k = 10;
    assert_eq!(
        debug(|| accelerate!(apply_twice(|x| x * k, &xs))),
        vec![100, 200, 300]
    );
    let rows = vec![vec![1.0f32, 2.0], vec![3.0, 4.0]];
    assert_eq!(
        debug(|| accelerate!(sum_rows(|x| x * x, rows.clone()))),
        vec![5.0, 25.0]
    );
    let nested: Vec<Vec<usize>> = debug(|| accelerate!(create(3, |i| create(2, |j| j + i))));
    assert_eq!(nested, vec![vec![0, 1], vec![1, 2], vec![2, 3]]);
}

#[test]
fn closures_bound_by_let() {
    // The paper's Listing 2, as the paper writes it.
    let s = vec![1i64, 2, 3, 4];
    let c = 3i64;
    let r: i64 = debug(|| {
        accelerate!({
            let f = |x| c * g(x);
            let s2 = map(f, &s);
            reduce(add, 0, s2)
        })
    });
    assert_eq!(r, 3 * (2 + 5 + 10 + 17));
    // Called directly, passed to a parallel operation and through two #[accel] functions.
    let k = 10i64;
    assert_eq!(
        debug(|| accelerate!({
            let scale = |x: i64| x * k;
            let offset = scale(2);
            map(|x| scale(x) + offset, &s)
        })),
        vec![30, 40, 50, 60]
    );
    assert_eq!(
        debug(|| accelerate!({
            let f = |x| x * k;
            apply_twice_plus_one(f, &s)
        })),
        vec![101, 201, 301, 401]
    );
    // Inside an element, capturing the element's parameter and a local; a closure that
    // calls another.
    assert_eq!(
        debug(|| accelerate!(map(
            |x| {
                let base = x * 2;
                let h = |y: i64| y + base + x;
                let twice = |y: i64| h(h(y));
                twice(1)
            },
            &s
        ))),
        vec![7, 13, 19, 25]
    );
    // Shadowing after the closure does not change what it captured.
    assert_eq!(
        debug(|| accelerate!({
            let m = 2i64;
            let f = |x: i64| x * m;
            let m = 100i64;
            map(|x| f(x) + m, &s)
        })),
        vec![102, 104, 106, 108]
    );
}

#[test]
fn histograms_with_reduce_by_index() {
    // Counts: indices past the end are skipped.
    let is = vec![2usize, 0, 2, 7, 1, 2];
    let ones = vec![1u32; 6];
    assert_eq!(
        debug(|| accelerate!(reduce_by_index(vec![0u32; 3], |a, b| a + b, 0, &is, &ones))),
        vec![1, 1, 3]
    );
    // The initial bins are kept; values fused from a producer; `max` as the operator.
    let start = vec![5i64, -1, 0];
    let xs = vec![3i64, 9, -4, 8, 2, 6];
    assert_eq!(
        debug(|| accelerate!(reduce_by_index(
            &start,
            |a: i64, b: i64| a.max(b),
            i64::MIN,
            &is,
            map(|x| x * 10, &xs)
        ))),
        vec![90, 20, 60]
    );
    // Tuples as values (k-means' sums), many values into few bins, at chunk edges.
    for n in [0usize, 1, 4095, 4096, 4097, 100_003] {
        let bins: Vec<usize> = (0..n).map(|i| (i * 7 + i / 3) % 5).collect();
        let got = debug(|| {
            accelerate!(reduce_by_index(
                vec![(0i64, 0u32); 5],
                |a: (i64, u32), b: (i64, u32)| (a.0 + b.0, a.1 + b.1),
                (0, 0),
                &bins,
                create(n, |i| (i as i64 - 50, 1))
            ))
        });
        let mut want = vec![(0i64, 0u32); 5];
        for (i, &b) in bins.iter().enumerate() {
            want[b].0 += i as i64 - 50;
            want[b].1 += 1;
        }
        assert_eq!(got, want, "n = {n}");
    }
    // Initial bins repeated from a captured value or a tuple of literals (the compiled
    // modes read them without making the sequence), and a repeated input of map2.
    let seven = 7i64;
    assert_eq!(
        debug(|| accelerate!(reduce_by_index(vec![seven; 3], |a, b| a + b, 0, &is, &xs))),
        vec![16, 9, 12]
    );
    assert_eq!(
        debug(|| accelerate!(reduce_by_index(
            vec![(1i64, 0u32); 3],
            |a: (i64, u32), b: (i64, u32)| (a.0 + b.0, a.1 + b.1),
            (0, 0),
            &is,
            map(|x| (x, 1u32), &xs)
        ))),
        vec![(10, 1), (3, 1), (6, 3)]
    );
    assert_eq!(
        debug(|| accelerate!(map2(|a, b| a * b, vec![seven; 6], &xs))),
        vec![21, 63, -28, 56, 14, 42]
    );
    // No values: the bins are the initial ones (no chunk runs to copy them).
    let (no_is, no_xs): (Vec<usize>, Vec<i64>) = (Vec::new(), Vec::new());
    assert_eq!(
        debug(|| accelerate!(reduce_by_index(&start, |a, b| a + b, 0, &no_is, &no_xs))),
        vec![5, -1, 0]
    );
    // As many bins as values (one chunk), and no bins at all.
    let n = 50_000usize;
    let perm: Vec<usize> = (0..n).map(|i| (i * 7919) % n).collect();
    let vals: Vec<u64> = (0..n as u64).collect();
    let got = debug(|| {
        accelerate!(reduce_by_index(
            vec![1u64; n],
            |a, b| a + b,
            0,
            &perm,
            &vals
        ))
    });
    let mut want = vec![1u64; n];
    for (k, &b) in perm.iter().enumerate() {
        want[b] += k as u64;
    }
    assert_eq!(got, want);
    let no_bins: Vec<u64> = Vec::new();
    let none: Vec<u64> =
        debug(|| accelerate!(reduce_by_index(&no_bins, |a, b| a + b, 0, &perm, &vals)));
    assert!(none.is_empty());
    // One bin: every value meets the same one.
    let xs = noise(100_003, 3);
    let zeros = vec![0usize; xs.len()];
    assert_eq!(
        debug(|| accelerate!(reduce_by_index(vec![7i64], |a, b| a + b, 0, &zeros, &xs))),
        vec![7 + xs.iter().sum::<i64>()]
    );
    histograms_with_general_operators();
    // Nested inside an element: a histogram per row.
    let rows = vec![vec![0usize, 1, 1], vec![2, 2, 2], vec![5, 0, 9]];
    assert_eq!(
        debug(|| accelerate!(map(
            |row: Vec<usize>| reduce_by_index(
                vec![0u32; 3],
                |a, b| a + b,
                0,
                &row,
                map(|_| 1u32, &row)
            ),
            &rows
        ))),
        vec![vec![1, 2, 0], vec![0, 0, 3], vec![1, 0, 0]]
    );
}

/// Operators with no atomic form (the GPU takes a lock per bin), records as values, and
/// float sums, which combine in a different order on each backend (compared within
/// `close_to`'s tolerance).
fn histograms_with_general_operators() {
    for n in [0usize, 1, 255, 256, 257, 4097, 100_003] {
        let xs = noise(n, 11);
        let bins: Vec<usize> = xs
            .iter()
            .map(|x| (x.unsigned_abs() as usize * 31) % 300)
            .collect();
        // The largest value of each bin with its first position: a total order's maximum,
        // so associative and commutative, but not a scalar at a time.
        let got = debug(|| {
            accelerate!(reduce_by_index(
                vec![(i64::MIN, 0usize); 300],
                |a: (i64, usize), b: (i64, usize)| if a.0 > b.0 || (a.0 == b.0 && a.1 < b.1) {
                    a
                } else {
                    b
                },
                (i64::MIN, 0),
                &bins,
                create(n, |i| (xs[i], i))
            ))
        });
        let mut want = vec![(i64::MIN, 0usize); 300];
        for (i, (&x, &b)) in xs.iter().zip(&bins).enumerate() {
            if x > want[b].0 {
                want[b] = (x, i);
            }
        }
        assert_eq!(got, want, "n = {n}");
        // Booleans: whether a bin saw a negative value.
        let got = debug(|| {
            accelerate!(reduce_by_index(
                vec![false; 300],
                |a: bool, b: bool| a || b,
                false,
                &bins,
                map(|x| x < 0, &xs)
            ))
        });
        let mut want = vec![false; 300];
        for (&x, &b) in xs.iter().zip(&bins) {
            want[b] |= x < 0;
        }
        assert_eq!(got, want, "n = {n}");
        // Records, summed in f64, and f32 sums.
        let got = debug(|| {
            accelerate!(reduce_by_index(
                vec![Point { x: 0.0, y: 0.0 }; 300],
                |p: Point, q: Point| Point {
                    x: p.x + q.x,
                    y: p.y + q.y
                },
                Point { x: 0.0, y: 0.0 },
                &bins,
                map(
                    |x| Point {
                        x: x as f64 * 0.5,
                        y: 1.0
                    },
                    &xs
                )
            ))
        });
        let mut want = vec![Point { x: 0.0, y: 0.0 }; 300];
        for (&x, &b) in xs.iter().zip(&bins) {
            want[b].x += x as f64 * 0.5;
            want[b].y += 1.0;
        }
        assert_eq!(got, want, "n = {n}");
        let got = debug(|| {
            accelerate!(reduce_by_index(
                vec![0.0f32; 300],
                |a, b| a + b,
                0.0,
                &bins,
                map(|x| x as f32 * 0.125, &xs)
            ))
        });
        assert_eq!(got.len(), 300);
    }
}

#[test]
fn filters_keep_elements_in_order() {
    // Sizes around the CPU's chunks and the GPU's blocks; some kept, none, all.
    for n in [0usize, 1, 2, 3, 255, 256, 257, 4095, 4096, 4097, 100_003] {
        let xs = noise(n, 7);
        let want: Vec<i64> = xs.iter().copied().filter(|x| x % 3 == 0).collect();
        assert_eq!(
            debug(|| accelerate!(filter(|x| x % 3 == 0, &xs))),
            want,
            "n = {n}"
        );
        let none: Vec<i64> = debug(|| accelerate!(filter(|x| x > 1000, &xs)));
        assert!(none.is_empty(), "n = {n}");
        let all: Vec<i64> = debug(|| accelerate!(filter(|x| x < 1000, &xs)));
        assert_eq!(all, xs, "n = {n}");
    }
    // One site whose calls keep few elements, most, then few again (the CPU backend picks
    // the pages of its scratch array by its last call): every result exact.
    let xs = noise(1 << 20, 5);
    for below in [-480i64, 450, -480, 450, 0] {
        let want: Vec<i64> = xs.iter().copied().filter(|&x| x < below).collect();
        let got = debug(|| accelerate!(filter(|x| x < below, &xs)));
        assert_eq!(got, want, "below {below}");
    }
    // Fused with a producer; tuples as elements.
    let xs = noise(10_000, 3);
    let want: Vec<(i64, usize)> = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| (x * 2, i))
        .filter(|&(y, i)| y > 0 && i % 2 == 0)
        .collect();
    let got = debug(|| {
        accelerate!(filter(
            |(y, i): (i64, usize)| y > 0 && i % 2 == 0,
            create(xs.len(), |i| (xs[i] * 2, i))
        ))
    });
    assert_eq!(got, want);
    // Reductions over a filter build no array: a sum and a count.
    let pos_sum: i64 = xs.iter().filter(|&&x| x > 0).sum();
    let pos_count = xs.iter().filter(|&&x| x > 0).count();
    assert_eq!(
        debug(|| accelerate!(reduce(|a, b| a + b, 0, filter(|x| x > 0, &xs)))),
        pos_sum
    );
    assert_eq!(
        debug(|| accelerate!(reduce(
            |a, b| a + b,
            0usize,
            map(|_| 1usize, filter(|x| x > 0, &xs))
        ))),
        pos_count
    );
    // The filtered sequence consumed by another operation.
    let squares: Vec<i64> = xs.iter().filter(|&&x| x < 0).map(|x| x * x).collect();
    assert_eq!(
        debug(|| accelerate!(map(|x| x * x, filter(|x| x < 0, &xs)))),
        squares
    );
    // Nested inside an element: how many of each row's elements are even (captured rows
    // are regular).
    let rows = vec![
        vec![1i64, 2, 3, 4],
        vec![5, 7, 9, 11],
        vec![6, 8, 10, 12],
        vec![7, 0, 2, 1],
    ];
    assert_eq!(
        debug(|| accelerate!(map(
            |row: Vec<i64>| filter(|x| x % 2 == 0, &row).len(),
            &rows
        ))),
        vec![2, 0, 4, 2]
    );
}

#[test]
fn scatters_write_values_at_their_indices() {
    // Indices past the end are skipped; unwritten elements keep `dest`'s.
    let dest = vec![0i64; 5];
    assert_eq!(
        debug(|| accelerate!(scatter(&dest, vec![4usize, 9, 0], vec![40i64, 90, 10]))),
        vec![10, 0, 0, 0, 40]
    );
    // A permutation at sizes around chunk edges, from a producer, with tuples.
    for n in [0usize, 1, 3, 4096, 4097, 100_003] {
        let perm: Vec<usize> = (0..n).map(|i| (i * 7919) % n.max(1)).collect();
        let start = vec![(-1i64, false); n];
        let got = debug(|| {
            accelerate!(scatter(
                &start,
                &perm,
                create(perm.len(), |k| (k as i64, k % 2 == 0))
            ))
        });
        let mut want = start.clone();
        for (k, &i) in perm.iter().enumerate() {
            want[i] = (k as i64, k % 2 == 0);
        }
        assert_eq!(got, want, "n = {n}");
    }
    // Fewer values than places, into a destination that is a producer.
    let got = debug(|| {
        accelerate!(scatter(
            create(6, |i| i as u32 * 100),
            vec![5usize, 1],
            vec![7u32, 8]
        ))
    });
    assert_eq!(got, vec![0, 8, 200, 300, 400, 7]);
    // Nested inside an element: each row reversed by writing at mirrored indices.
    let rows = vec![vec![1i64, 2, 3], vec![4, 5, 6]];
    assert_eq!(
        debug(|| accelerate!(map(
            |row: Vec<i64>| scatter(&row, create(3, |k| 2 - k), &row),
            &rows
        ))),
        vec![vec![3, 2, 1], vec![6, 5, 4]]
    );
}

#[test]
fn sequence_arguments_by_value_reference_and_slice() {
    let v = vec![1, 2, 3, 4];
    assert_eq!(debug(|| accelerate!(map(|x| x + 1, &v))), vec![2, 3, 4, 5]);
    assert_eq!(debug(|| accelerate!(map(|x| x + 1, &v[1..3]))), vec![3, 4]);
    // Moving a sequence into the site (by value) also works compiled.
    let owned2 = v.clone();
    assert_eq!(
        with_mode(Mode::Cpu, || accelerate!(map(|x| x + 1, owned2))),
        vec![2, 3, 4, 5]
    );
    let owned = v.clone();
    assert_eq!(
        with_mode(Mode::Debug, || accelerate!(map(|x| x + 1, owned))),
        vec![2, 3, 4, 5]
    );
}

#[test]
fn tensors_in_parallel_loops() {
    let t = Tensor::<f64>::zeros(&[3, 4]);
    let scale = 0.5;
    debug(|| accelerate!(parallel_loop(12, |k| t.set([k / 4, k % 4], k as f64 * scale))));
    assert_eq!(t.get([2, 3]), 5.5);
    assert_eq!(t.shape(), &[3, 4]);
    let src = Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[6]);
    let dst = Tensor::<i32>::zeros(&[6]);
    debug(|| {
        accelerate!(parallel_loop(src.shape()[0], |i| dst
            .set([i], src.get([i]) * 2 + src.rank() as i32)))
    });
    assert_eq!(dst.to_vec(), vec![1, 3, 5, 7, 9, 11]);
    let cube = Tensor::<u32>::zeros(&[2, 2, 2]);
    debug(|| accelerate!(parallel_loop(8, |i| cube.set([i / 4, (i / 2) % 2, i % 2], i as u32))));
    assert_eq!(cube.to_vec(), (0..8).collect::<Vec<u32>>());
}
