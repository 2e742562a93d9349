//! The integer and float methods of the method table that Rust defines per type (`clamp`,
//! `signum`, `abs_diff`, `rem_euclid`, `div_euclid`, `div_ceil`, `saturating_add`,
//! `saturating_sub`),
//! on every type that has them, over edge values and random ones: every mode agrees with
//! Rust's own result (checked exactly here), on whole gangs, on the lanes left over and
//! under a mask (lanes not running must not fail), and their failures are the same kind in
//! every mode.

use accel_runtime::prelude::*;
use accel_runtime::ErrorKind;

mod common;

use common::{agree, map_matches_std};

/// Edge values of an integer type and pseudo-random ones, 23 in all (not a multiple of
/// four: the last lanes run as scalar code).
macro_rules! values {
    ($t:ty) => {{
        let mut v: Vec<$t> = vec![<$t>::MIN, <$t>::MAX, 0, 1, 2, <$t>::MAX - 1, <$t>::MIN + 1];
        v.extend(common::noise(16, 7).into_iter().map(|x| x as $t));
        v
    }};
}

macro_rules! int_methods {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        mod $name {
            use super::*;

            fn xs() -> Vec<$t> {
                values!($t)
            }

            /// `ys` without zeros, and with no `MIN / -1` pair against `xs`.
            fn divisors() -> Vec<$t> {
                let xs = xs();
                let mut ys: Vec<$t> = xs.iter().rev().copied().collect();
                for (y, x) in ys.iter_mut().zip(&xs) {
                    if *y == 0 || x.checked_rem(*y).is_none() {
                        *y = 3;
                    }
                }
                ys
            }

            #[test]
            fn clamp_saturating_and_abs_diff() {
                let (xs, ys) = (xs(), divisors());
                let (lo, hi) = (<$t>::MIN / 4 + 1, <$t>::MAX / 3);
                let got = agree(|| accelerate!(map(|x| x.clamp(lo, hi), &xs)));
                assert_eq!(got, xs.iter().map(|&x| x.clamp(lo, hi)).collect::<Vec<_>>());
                let got = agree(|| accelerate!(map2(|x, y| x.clamp(y.min(5), y.max(5)), &xs, &ys)));
                let want: Vec<$t> = xs.iter().zip(&ys).map(|(&x, &y)| x.clamp(y.min(5), y.max(5))).collect();
                assert_eq!(got, want);
                let got = agree(|| accelerate!(map2(|x, y| (x.saturating_add(y), x.saturating_sub(y)), &xs, &ys)));
                let want: Vec<($t, $t)> = xs.iter().zip(&ys).map(|(x, y)| (x.saturating_add(*y), x.saturating_sub(*y))).collect();
                assert_eq!(got, want);
                let got = agree(|| accelerate!(map2(|x, y| x.abs_diff(y), &xs, &ys)));
                let want: Vec<_> = xs.iter().zip(&ys).map(|(x, y)| x.abs_diff(*y)).collect();
                assert_eq!(got, want);
            }

            #[test]
            fn euclidean_division() {
                let (xs, ys) = (xs(), divisors());
                let got = agree(|| accelerate!(map2(|x, y| (x.rem_euclid(y), x.div_euclid(y)), &xs, &ys)));
                let want: Vec<($t, $t)> = xs.iter().zip(&ys).map(|(x, y)| (x.rem_euclid(*y), x.div_euclid(*y))).collect();
                assert_eq!(got, want);
                // Lanes that do not take the branch have a zero divisor: they must not fail.
                let zs: Vec<$t> = ys.iter().enumerate().map(|(k, y)| if k % 3 == 0 { 0 } else { *y }).collect();
                let got = agree(|| accelerate!(map2(|x, y| if y != 0 { x.rem_euclid(y) } else { 7 }, &xs, &zs)));
                let want: Vec<$t> = xs.iter().zip(&zs).map(|(x, y)| if *y != 0 { x.rem_euclid(*y) } else { 7 }).collect();
                assert_eq!(got, want);
            }

            #[test]
            fn failures_have_one_kind_in_every_mode() {
                let xs = xs();
                let zs = vec![0 as $t; xs.len()];
                for (mode, e) in common::errors_in_every_mode(|| try_accelerate!(map2(|x, y| x.rem_euclid(y), &xs, &zs))) {
                    assert_eq!(e.kind(), ErrorKind::DivisionByZero, "{mode}: {e}");
                }
                let (lo, hi) = (5 as $t, 2 as $t);
                for (mode, e) in common::errors_in_every_mode(|| try_accelerate!(map(|x| x.clamp(lo, hi), &xs))) {
                    assert_eq!(e.kind(), ErrorKind::Panicked, "{mode}: {e}");
                    assert!(e.to_string().contains("min > max"), "{mode}: {e}");
                }
            }
        }
    )*};
}

int_methods!(
    i8_: i8, i16_: i16, u8_: u8, u16_: u16, i32_: i32, i64_: i64, u32_: u32, u64_: u64, usize_: usize,
);

macro_rules! div_ceil {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[test]
        fn $name() {
            let xs = values!($t);
            let ys: Vec<$t> = xs.iter().rev().map(|y| if *y == 0 { 7 } else { *y }).collect();
            let got = agree(|| accelerate!(map2(|x, y| x.div_ceil(y), &xs, &ys)));
            let want: Vec<$t> = xs.iter().zip(&ys).map(|(x, y)| x.div_ceil(*y)).collect();
            assert_eq!(got, want);
        }
    )*};
}

div_ceil!(div_ceil_u8: u8, div_ceil_u16: u16, div_ceil_u32: u32, div_ceil_u64: u64, div_ceil_usize: usize);

macro_rules! signum {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[test]
        fn $name() {
            let xs = values!($t);
            let got = agree(|| accelerate!(map(|x| x.signum(), &xs)));
            assert_eq!(got, xs.iter().map(|x| x.signum()).collect::<Vec<$t>>());
        }
    )*};
}

signum!(signum_i8: i8, signum_i16: i16, signum_i32: i32, signum_i64: i64);

macro_rules! float_methods {
    ($($name:ident: $t:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            fn xs() -> Vec<$t> {
                let mut v: Vec<$t> = vec![0.0, -0.0, 1.5, -1.5, 7.25, -7.25, $t::INFINITY, $t::NEG_INFINITY, $t::NAN, 1e30, -1e-30];
                v.extend(common::noise(12, 9).into_iter().map(|x| x as $t / 7.0));
                v
            }

            /// Bit patterns, so that NaNs and signed zeros compare.
            fn bits(v: &[$t]) -> Vec<String> {
                v.iter().map(|x| format!("{x:?}")).collect()
            }

            #[test]
            fn clamp_and_euclidean_division() {
                let xs = xs();
                let ys: Vec<$t> = xs.iter().rev().map(|y| if *y == 0.0 { 2.5 } else { *y }).collect();
                let (lo, hi) = (-3.0 as $t, 40.0 as $t);
                let got = agree(|| accelerate!(map(|x| x.clamp(lo, hi), &xs)));
                assert_eq!(bits(&got), bits(&xs.iter().map(|x| x.clamp(lo, hi)).collect::<Vec<_>>()));
                let got = agree(|| accelerate!(map2(|x, y| x.rem_euclid(y), &xs, &ys)));
                let want: Vec<$t> = xs.iter().zip(&ys).map(|(x, y)| x.rem_euclid(*y)).collect();
                assert_eq!(bits(&got), bits(&want));
                let got = agree(|| accelerate!(map2(|x, y| x.div_euclid(y), &xs, &ys)));
                let want: Vec<$t> = xs.iter().zip(&ys).map(|(x, y)| x.div_euclid(*y)).collect();
                assert_eq!(bits(&got), bits(&want));
            }

            #[test]
            fn clamp_with_a_nan_or_reversed_bound_fails_in_every_mode() {
                let xs = xs();
                for (lo, hi) in [(2.0 as $t, 1.0 as $t), ($t::NAN, 1.0)] {
                    for (mode, e) in common::errors_in_every_mode(|| try_accelerate!(map(|x| x.clamp(lo, hi), &xs))) {
                        assert_eq!(e.kind(), ErrorKind::Panicked, "{mode}: {e}");
                    }
                }
                // Under a mask: lanes that do not clamp must not fail on their bounds.
                let his: Vec<$t> = xs.iter().enumerate().map(|(k, _)| if k % 2 == 0 { -5.0 } else { 5.0 }).collect();
                let got = agree(|| accelerate!(map2(|x, h| if h > 0.0 { x.clamp(-h, h) } else { h }, &xs, &his)));
                let want: Vec<$t> = xs.iter().zip(&his).map(|(x, h)| if *h > 0.0 { x.clamp(-h, *h) } else { *h }).collect();
                assert_eq!(bits(&got), bits(&want));
            }
        }
    )*};
}

float_methods!(f32_: f32, f64_: f64);

/// Range membership (`(lo..=hi).contains(&x)`, as clippy asks for `x >= lo && x <= hi`)
/// in every range form, with constant and computed bounds, on integers and floats (NaN
/// and the bounds themselves included), in every mode against Rust's own result.
#[test]
fn range_contains_matches_rust_in_every_form() {
    let xs: Vec<i32> = vec![
        i32::MIN,
        -7,
        -1,
        0,
        1,
        2,
        9,
        10,
        11,
        99,
        100,
        101,
        i32::MAX,
        5,
        6,
        7,
        8,
        3,
        4,
        12,
        13,
        -2,
        50,
    ];
    let (lo, hi) = (-1i32, 10i32);
    map_matches_std!(xs, |x| (
        (0..=10).contains(&x),
        (0..10).contains(&x),
        (lo..=hi).contains(&x),
        (lo..hi).contains(&x),
        (2..).contains(&x),
        (..=10).contains(&x),
        (..lo).contains(&x),
    ));
    let fs: Vec<f64> = vec![
        f64::NAN,
        -0.0,
        0.0,
        0.5,
        1.0,
        1.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -1.0,
    ];
    map_matches_std!(fs, |f| ((0.0..1.0).contains(&f), (0.0..=1.0).contains(&f)));
    // A bound computed per element, and the value tested read at a computed index.
    let n = xs.len();
    let got =
        agree(|| accelerate!(create(n, |i| (xs[n - 1 - i]..=xs[i]).contains(&xs[(i + 3) % n]))));
    let want: Vec<bool> = (0..n)
        .map(|i| (xs[n - 1 - i]..=xs[i]).contains(&xs[(i + 3) % n]))
        .collect();
    assert_eq!(got, want);
}
