//! 8- and 16-bit integers (`i8 i16 u8 u16`) as elements, scalars and results in every
//! mode: arithmetic wraps at the type's width as release Rust's does, division fails as
//! Rust's does, shifts mask their amount, casts follow `as` (floats saturate), byte
//! literals are `u8`, and byte data is counted, histogrammed and scanned in its own width.
//! Each site runs in debug, cpu and cuda (emulator) modes, which must agree, and is
//! checked against Rust's own result.

// Byte ranges are spelled out too, as users write them without clippy.
#![allow(clippy::manual_range_contains)]

use accel_runtime::prelude::*;
use accel_runtime::ErrorKind;

mod common;

const SOURCE: &str = include_str!("small_ints.rs");

use common::{agree, map_matches_std};

/// Edge values of an integer type and pseudo-random ones, 23 in all (not a multiple of
/// four).
macro_rules! values {
    ($t:ident, $seed:expr) => {{
        let mut v: Vec<$t> = vec![$t::MIN, $t::MAX, 0, 1, 2, $t::MAX - 1, $t::MIN + 1];
        v.extend(common::noise(16, $seed).into_iter().map(|x| x as $t));
        v
    }};
}

macro_rules! arithmetic {
    ($($name:ident: $t:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[test]
            fn operators_wrap_at_the_types_width() {
                let xs = values!($t, 3);
                let ys = values!($t, 5);
                let got = agree(|| {
                    accelerate!(map2(
                        |x, y| (x.wrapping_add(y), x.wrapping_sub(y), x.wrapping_mul(y), x & y, x | y, x ^ y, !x),
                        &xs,
                        &ys
                    ))
                });
                let want: Vec<_> = xs
                    .iter()
                    .zip(&ys)
                    .map(|(&x, &y)| (x.wrapping_add(y), x.wrapping_sub(y), x.wrapping_mul(y), x & y, x | y, x ^ y, !x))
                    .collect();
                assert_eq!(got, want);
                // The operators themselves, on values that do not overflow here, and
                // compared: the wrapped result is what later operations see.
                let got = agree(|| accelerate!(map2(|x, y| (x / 2 + y / 2, x < y, x == y, x >= y), &xs, &ys)));
                let want: Vec<_> = xs.iter().zip(&ys).map(|(&x, &y)| (x / 2 + y / 2, x < y, x == y, x >= y)).collect();
                assert_eq!(got, want);
            }

            #[test]
            fn shifts_mask_their_amount() {
                let xs = values!($t, 7);
                let amounts: Vec<u32> = (0..xs.len() as u32).collect();
                let got = agree(|| {
                    accelerate!(map2(|x, n| (x << (n % 8), x >> (n % 8), (x as u32) << n, x >> (n / 4 % 8)), &xs, &amounts))
                });
                let want: Vec<_> = xs
                    .iter()
                    .zip(&amounts)
                    .map(|(&x, &n)| (x << (n % 8), x >> (n % 8), (x as u32) << n, x >> (n / 4 % 8)))
                    .collect();
                assert_eq!(got, want);
            }

            #[test]
            fn division_and_remainder_and_their_failures() {
                let xs = values!($t, 11);
                let ys: Vec<$t> = values!($t, 13)
                    .into_iter()
                    .zip(&xs)
                    .map(|(y, x)| if y == 0 || x.checked_div(y).is_none() { 3 } else { y })
                    .collect();
                let got = agree(|| accelerate!(map2(|x, y| (x / y, x % y), &xs, &ys)));
                let want: Vec<_> = xs.iter().zip(&ys).map(|(&x, &y)| (x / y, x % y)).collect();
                assert_eq!(got, want);
                let zeros = vec![0 as $t; xs.len()];
                for (mode, e) in common::errors_in_every_mode(|| try_accelerate!(map2(|x, y| x / y, &xs, &zeros))) {
                    assert_eq!(e.kind(), ErrorKind::DivisionByZero, "{mode}: {e}");
                }
            }

            #[test]
            fn casts_follow_as() {
                let xs = values!($t, 17);
                let got = agree(|| accelerate!(map(|x| (x as i64, x as u64, x as u8, x as i8, x as u16), &xs)));
                let want: Vec<_> = xs.iter().map(|&x| (x as i64, x as u64, x as u8, x as i8, x as u16)).collect();
                assert_eq!(got, want);
                let got = agree(|| accelerate!(map(|x| (x as i16, x as u32, x as f32, x as f64), &xs)));
                let want: Vec<_> = xs.iter().map(|&x| (x as i16, x as u32, x as f32, x as f64)).collect();
                assert_eq!(got, want);
                // From wider integers (wrapping) and floats (saturating; NaN is 0).
                let wide: Vec<i64> = vec![-1, 255, 256, 65535, 65536, -129, 40000, i64::MIN, i64::MAX, 7];
                let got = agree(|| accelerate!(map(|w| w as $t, &wide)));
                assert_eq!(got, wide.iter().map(|&w| w as $t).collect::<Vec<$t>>());
                let floats: Vec<f64> = vec![-1e9, -129.5, -1.5, -0.5, 0.0, 0.9, 127.9, 128.0, 255.5, 256.0, 1e9, f64::NAN, f64::INFINITY];
                let got = agree(|| accelerate!(map(|f| (f as $t, (f as f32) as $t), &floats)));
                let want: Vec<($t, $t)> = floats.iter().map(|&f| (f as $t, (f as f32) as $t)).collect();
                assert_eq!(got, want);
            }

            #[test]
            fn constants_reductions_and_scans() {
                let xs = values!($t, 19);
                let got = agree(|| accelerate!(map(|x| (x == $t::MAX, x == $t::MIN, x.max($t::MIN + 3)), &xs)));
                let want: Vec<_> = xs.iter().map(|&x| (x == $t::MAX, x == $t::MIN, x.max($t::MIN + 3))).collect();
                assert_eq!(got, want);
                // A wrapping sum in the type itself, and a wide sum of widened elements.
                let got = agree(|| accelerate!(reduce(|a: $t, b: $t| a.wrapping_add(b), 0, &xs)));
                assert_eq!(got, xs.iter().fold(0 as $t, |a, &b| a.wrapping_add(b)));
                let got = agree(|| accelerate!(xs.iter().map(|&x| x as i64).sum::<i64>()));
                assert_eq!(got, xs.iter().map(|&x| x as i64).sum::<i64>());
                let got = agree(|| accelerate!(reduce(|a: $t, b: $t| a.max(b), $t::MIN, &xs)));
                assert_eq!(got, *xs.iter().max().unwrap());
                let got = agree(|| accelerate!(scan(|a: $t, b: $t| a.wrapping_add(b), 0, &xs)));
                let want: Vec<$t> = xs.iter().scan(0 as $t, |s, &x| { *s = s.wrapping_add(x); Some(*s) }).collect();
                assert_eq!(got, want);
            }
        }
    )*};
}

arithmetic!(i8_: i8, i16_: i16, u8_: u8, u16_: u16);

#[test]
fn signed_division_overflow_fails_as_in_rust() {
    let xs: Vec<i8> = vec![5, i8::MIN, 3];
    let ys: Vec<i8> = vec![1, -1, 1];
    for (mode, e) in common::errors_in_every_mode(|| try_accelerate!(map2(|x, y| x / y, &xs, &ys)))
    {
        assert_eq!(e.kind(), ErrorKind::Overflow, "{mode}: {e}");
        assert!(e.to_string().contains("overflow"), "{mode}: {e}");
    }
    let xs: Vec<i16> = vec![i16::MIN];
    let ys: Vec<i16> = vec![-1];
    for (mode, e) in common::errors_in_every_mode(|| try_accelerate!(map2(|x, y| x % y, &xs, &ys)))
    {
        assert_eq!(e.kind(), ErrorKind::Overflow, "{mode}: {e}");
    }
}

/// Text as bytes: byte literals, counting, a filter and a histogram of byte values.
#[test]
fn bytes_are_counted_filtered_and_histogrammed_in_their_own_width() {
    let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog; THE END.\n"
        .iter()
        .cycle()
        .take(1000)
        .copied()
        .collect();
    let spaces = agree(|| accelerate!(text.iter().filter(|&&c| c == b' ').count()));
    assert_eq!(spaces, text.iter().filter(|&&c| c == b' ').count());
    let letters = agree(|| accelerate!(filter(|c: u8| c >= b'a' && c <= b'z', &text)));
    assert_eq!(
        letters,
        text.iter()
            .copied()
            .filter(|c| c.is_ascii_lowercase())
            .collect::<Vec<u8>>()
    );
    let upper = agree(|| {
        accelerate!(map(
            |c: u8| if c >= b'a' && c <= b'z' {
                c - (b'a' - b'A')
            } else {
                c
            },
            &text
        ))
    });
    assert_eq!(upper, text.to_ascii_uppercase());
    let counts = vec![0u32; 256];
    let ones = vec![1u32; text.len()];
    let hist = agree(|| {
        accelerate!(reduce_by_index(
            counts.clone(),
            |a, b| a + b,
            0,
            map(|c: u8| c as usize, &text),
            &ones
        ))
    });
    let mut want = vec![0u32; 256];
    for &c in &text {
        want[c as usize] += 1;
    }
    assert_eq!(hist, want);
    // A histogram whose bins are bytes themselves (wrapping counts).
    let bins = vec![0u8; 4];
    let small = agree(|| {
        accelerate!(reduce_by_index(
            bins.clone(),
            |a: u8, b: u8| a.wrapping_add(b),
            0,
            map(|c: u8| (c % 4) as usize, &text),
            map(|_c: u8| 1u8, &text)
        ))
    });
    let mut want = [0u8; 4];
    for &c in &text {
        want[(c % 4) as usize] = want[(c % 4) as usize].wrapping_add(1);
    }
    assert_eq!(small, want.to_vec());
}

/// A prefix sum of 16-bit values into 32 bits, and records and tuples with small fields.
#[test]
fn small_fields_in_tuples_records_and_nested_sequences() {
    #[derive(Accel, Clone, Copy, Debug, PartialEq)]
    struct Pixel {
        r: u8,
        g: u8,
        b: u8,
        a: i16,
    }
    let pixels: Vec<Pixel> = (0..37u32)
        .map(|k| Pixel {
            r: (k * 7) as u8,
            g: (k * 13 + 200) as u8,
            b: (k * 31) as u8,
            a: (k as i16 - 18) * 1000,
        })
        .collect();
    let grey = agree(|| {
        accelerate!(map(
            |p: Pixel| ((p.r as u32 * 77 + p.g as u32 * 150 + p.b as u32 * 29) >> 8) as u8,
            &pixels
        ))
    });
    let want: Vec<u8> = pixels
        .iter()
        .map(|p| ((p.r as u32 * 77 + p.g as u32 * 150 + p.b as u32 * 29) >> 8) as u8)
        .collect();
    assert_eq!(grey, want);
    let dimmed = agree(|| {
        accelerate!(map(
            |p: Pixel| Pixel {
                r: p.r / 2,
                g: p.g.saturating_add(40),
                b: p.b,
                a: p.a.wrapping_mul(3)
            },
            &pixels
        ))
    });
    let want: Vec<Pixel> = pixels
        .iter()
        .map(|p| Pixel {
            r: p.r / 2,
            g: p.g.saturating_add(40),
            b: p.b,
            a: p.a.wrapping_mul(3),
        })
        .collect();
    assert_eq!(dimmed, want);
    let words: Vec<u16> = (0..300u32)
        .map(|k| (k.wrapping_mul(2654435761) >> 16) as u16)
        .collect();
    let sums = agree(|| accelerate!(scan(|a, b| a + b, 0u32, map(|w: u16| w as u32, &words))));
    let want: Vec<u32> = words
        .iter()
        .scan(0u32, |s, &w| {
            *s += w as u32;
            Some(*s)
        })
        .collect();
    assert_eq!(sums, want);
    let rows: Vec<Vec<i8>> = (0..5)
        .map(|r| (0..7).map(|c| (r * 40 - c * 9) as i8).collect())
        .collect();
    let row_sums = agree(|| {
        accelerate!(map(
            |row: Vec<i8>| row.iter().map(|&x| x as i32).sum::<i32>(),
            &rows
        ))
    });
    assert_eq!(
        row_sums,
        rows.iter()
            .map(|r| r.iter().map(|&x| x as i32).sum::<i32>())
            .collect::<Vec<_>>()
    );
    let pairs = agree(|| accelerate!(create(9, |i| (i as u8, (i as i16) - 4, [i as i8; 2]))));
    assert_eq!(
        pairs,
        (0..9)
            .map(|i| (i as u8, (i as i16) - 4, [i as i8; 2]))
            .collect::<Vec<_>>()
    );
}

/// Byte sites as image and text code writes them run on SIMD lanes in cpu mode (bytes
/// widened to 32-bit lanes, narrowed when stored), with results exactly Rust's, on whole
/// gangs and the lanes left over.
#[test]
fn byte_sites_run_on_simd_lanes() {
    let text: Vec<u8> = (0..4099u32)
        .map(|k| (k.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let cpu = |f: &dyn Fn() -> Vec<u8>| with_mode(Mode::Cpu, f);
    let upper = cpu(&|| {
        accelerate!(map(
            |c: u8| if c >= b'a' && c <= b'z' { c - 32 } else { c },
            &text
        )) // [upper]
    });
    assert_eq!(upper, text.to_ascii_uppercase());
    common::assert_vectorized("small_ints.rs", SOURCE, "[upper]");
    let signed: Vec<i8> = text.iter().map(|&c| c as i8).collect();
    let halved = with_mode(Mode::Cpu, || {
        accelerate!(map(|x: i8| (x / 2).wrapping_mul(3) - 1, &signed)) // [halved]
    });
    let want: Vec<i8> = signed
        .iter()
        .map(|&x| (x / 2).wrapping_mul(3).wrapping_sub(1))
        .collect();
    assert_eq!(halved, want);
    common::assert_vectorized("small_ints.rs", SOURCE, "[halved]");
    let words: Vec<u16> = text.iter().map(|&c| (c as u16).wrapping_mul(300)).collect();
    let scaled = with_mode(Mode::Cpu, || {
        accelerate!(map2(
            |w: u16, c: u8| w.wrapping_add(c as u16) << 1,
            &words,
            &text
        )) // [scaled]
    });
    let want: Vec<u16> = words
        .iter()
        .zip(&text)
        .map(|(&w, &c)| w.wrapping_add(c as u16) << 1)
        .collect();
    assert_eq!(scaled, want);
    common::assert_vectorized("small_ints.rs", SOURCE, "[scaled]");
    let floats: Vec<f32> = (0..4099).map(|k| k as f32 * 0.37 - 400.0).collect();
    let bytes = with_mode(Mode::Cpu, || accelerate!(map(|x: f32| x as u8, &floats))); // [saturated]
    assert_eq!(bytes, floats.iter().map(|&x| x as u8).collect::<Vec<u8>>());
    common::assert_vectorized("small_ints.rs", SOURCE, "[saturated]");
    let total = with_mode(Mode::Cpu, || {
        accelerate!(text.iter().map(|&c| c as u32).sum::<u32>())
    }); // [total]
    assert_eq!(total, text.iter().map(|&c| c as u32).sum::<u32>());
    let wrapped = with_mode(Mode::Cpu, || {
        accelerate!(reduce(|a: u8, b: u8| a.wrapping_add(b), 0, &text))
    }); // [wrapped]
    assert_eq!(wrapped, text.iter().fold(0u8, |a, &b| a.wrapping_add(b)));
}

/// Histograms whose bins are 8- or 16-bit integers combined by `+`, `min` or `max`: GPUs
/// have no atomics of that width, so the CUDA backend locks each bin (found by
/// accel-fuzz, seed 5: `min` into `i8` bins did not compile for the GPU).
#[test]
fn small_bins_combined_by_primitive_operators() {
    let keys: Vec<usize> = (0..777).map(|i| (i * 7) % 5).collect();
    let vals: Vec<i8> = (0..777).map(|i| ((i * 37) % 251) as i8).collect();
    let got = agree(|| {
        accelerate!(reduce_by_index(
            vec![i8::MAX; 5],
            |p, q| p.min(q),
            i8::MAX,
            &keys,
            &vals
        ))
    });
    let mut want = [i8::MAX; 5];
    for (&k, &v) in keys.iter().zip(&vals) {
        want[k] = want[k].min(v);
    }
    assert_eq!(got, want.to_vec());
    let bytes: Vec<u8> = vals.iter().map(|&v| v as u8).collect();
    let got = agree(|| {
        accelerate!(reduce_by_index(
            vec![0u16; 5],
            |p, q| p.wrapping_add(q),
            0,
            &keys,
            map(|b: u8| b as u16, &bytes)
        ))
    });
    let mut sums = [0u16; 5];
    for (&k, &b) in keys.iter().zip(&bytes) {
        sums[k] = sums[k].wrapping_add(b as u16);
    }
    assert_eq!(got, sums.to_vec());
    let empty: Vec<i64> = Vec::new();
    let top = agree(|| {
        accelerate!(reduce(
            |p, q| p.max(q),
            i8::MIN,
            reduce_by_index(
                vec![i8::MAX; 3],
                |p, q| p.min(q),
                i8::MAX,
                map(|x| (x as usize) % 3, &empty),
                map(|x| x as i8, &empty)
            )
        ))
    });
    assert_eq!(top, i8::MAX);
}

/// Every `u8::is_ascii_*` class on every byte, in every mode, against std's own answer
/// (whole gangs and the lanes left over: 256 bytes then 23).
#[test]
fn ascii_classes_match_std_on_every_byte() {
    let bytes: Vec<u8> = (0..=255u8).chain(0..23).collect();
    map_matches_std!(bytes, |c| (
        c.is_ascii_alphabetic(),
        c.is_ascii_uppercase(),
        c.is_ascii_lowercase(),
        c.is_ascii_alphanumeric(),
        c.is_ascii_digit(),
    ));
    map_matches_std!(bytes, |c| (
        c.is_ascii_hexdigit(),
        c.is_ascii_punctuation(),
        c.is_ascii_graphic(),
        c.is_ascii_whitespace(),
        c.is_ascii_control(),
    ));
    // As a word counter writes it: a class test on a byte read at a computed index.
    let text: Vec<u8> = b"Hello, world 42 times; 7 seas\tand\nmore".repeat(3);
    let starts = agree(|| {
        accelerate!((0..text.len())
            .into_par_iter()
            .filter(|&i| text[i].is_ascii_alphabetic()
                && (i == 0 || !text[i - 1].is_ascii_alphabetic()))
            .count())
    });
    let want = text
        .split(|c| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .count();
    assert_eq!(starts, want);
}
