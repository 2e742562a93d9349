//! Captured sequences of tuples, arrays and records that the CPU backend reads where they
//! lie (no columns built per call): each shape against debug mode, bit for bit, at every
//! tier, at lengths around a gang's width (4 to 32 lanes) and past a launch's split;
//! under a mask, inside a nested operation, out of bounds; and which captures were read
//! in place (a capture read elsewhere than at its operation's index keeps columns).

use accel_runtime::__private::inputs_read_in_place;
use accel_runtime::prelude::*;
use accel_runtime::ErrorKind;

mod common;

#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Particle {
    x: f32,
    y: f32,
    z: f32,
    mass: f32,
}

/// Runs `site` against debug mode at every CPU tier (and in the other modes), and says
/// how many captures the runs read in place.
fn exact_in_place<R: Accel + std::fmt::Debug>(site: impl Fn() -> R) -> (R, usize) {
    let before = inputs_read_in_place();
    let r = common::exact(&site);
    let read = inputs_read_in_place() - before;
    common::agree(&site);
    (r, read)
}

#[test]
fn pairs_are_read_in_place_at_every_length() {
    for n in common::GANG_LENGTHS {
        let a = common::numbers(n, 1);
        let b = common::numbers(n, 2);
        let pairs: Vec<(f32, f32)> = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| (x as f32, y as f32))
            .collect();
        // A float sum groups its additions by chunks: within rounding of debug mode's.
        let before = inputs_read_in_place();
        let dot = common::agree(|| accelerate!(pairs.par_iter().map(|&(x, y)| x * y).sum::<f32>()));
        let read = inputs_read_in_place() - before;
        assert!(read >= 1, "n = {n}: {read} captures read in place");
        if n < 64 {
            let want: f32 = pairs.iter().map(|&(x, y)| x * y).sum();
            assert!((dot - want).abs() <= 1e-4 * (1.0 + want.abs()), "n = {n}");
        }
        let (scaled, read) = exact_in_place(|| {
            accelerate!(pairs
                .par_iter()
                .map(|&(x, y)| x - 2.0 * y)
                .collect::<Vec<f32>>())
        });
        assert!(read >= 3, "n = {n}");
        let want: Vec<f32> = pairs.iter().map(|&(x, y)| x - 2.0 * y).collect();
        assert_eq!(scaled, want, "n = {n}");
    }
}

#[test]
fn arrays_records_and_mixed_numbers_are_read_in_place() {
    for n in [5, 16, 33, 4099] {
        let v = common::numbers(3 * n, 3);
        let points: Vec<[f64; 3]> = (0..n)
            .map(|i| [v[3 * i], v[3 * i + 1], v[3 * i + 2]])
            .collect();
        let (got, read) = exact_in_place(|| {
            accelerate!(create(points.len(), |i| points[i][0] + points[i][1] * points[i][2]))
        });
        assert!(read >= 3);
        let want: Vec<f64> = points.iter().map(|p| p[0] + p[1] * p[2]).collect();
        assert_eq!(got, want);

        let particles: Vec<Particle> = (0..n)
            .map(|i| Particle {
                x: v[3 * i] as f32,
                y: v[3 * i + 1] as f32,
                z: v[3 * i + 2] as f32,
                mass: 1.0 + i as f32,
            })
            .collect();
        let (got, read) = exact_in_place(|| {
            accelerate!(particles
                .par_iter()
                .map(|p| p.mass * (p.x * p.x + p.y * p.y + p.z * p.z))
                .collect::<Vec<f32>>())
        });
        assert!(read >= 3);
        let want: Vec<f32> = particles
            .iter()
            .map(|p| p.mass * (p.x * p.x + p.y * p.y + p.z * p.z))
            .collect();
        assert_eq!(got, want);

        let mixed: Vec<(u32, f32, i32)> = (0..n)
            .map(|i| (i as u32 * 7, v[i] as f32, -(i as i32)))
            .collect();
        let (got, read) = exact_in_place(|| {
            accelerate!(create(mixed.len(), |i| mixed[i].0 as f32 * mixed[i].1
                + mixed[i].2 as f32))
        });
        assert!(read >= 3);
        let want: Vec<f32> = mixed
            .iter()
            .map(|m| m.0 as f32 * m.1 + m.2 as f32)
            .collect();
        assert_eq!(got, want);

        // Scalars of two sizes: 16-byte rows (Rust's padding after the f32).
        let wide: Vec<(f32, f64)> = (0..n).map(|i| (v[i] as f32, v[n + i])).collect();
        let (got, read) =
            exact_in_place(|| accelerate!(create(wide.len(), |i| wide[i].0 as f64 - wide[i].1)));
        assert!(read >= 3);
        let want: Vec<f64> = wide.iter().map(|w| w.0 as f64 - w.1).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn reads_under_a_mask_and_inside_a_nested_operation_agree() {
    for n in [7, 32, 1000] {
        let v = common::numbers(2 * n, 4);
        let pairs: Vec<(f32, f32)> = (0..n).map(|i| (v[i] as f32, v[n + i] as f32)).collect();
        let (got, read) = exact_in_place(|| {
            accelerate!(create(pairs.len(), |i| if i % 3 == 0 {
                pairs[i].0
            } else {
                pairs[i].1 * 2.0
            }))
        });
        assert!(read >= 3);
        let want: Vec<f32> = (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    pairs[i].0
                } else {
                    pairs[i].1 * 2.0
                }
            })
            .collect();
        assert_eq!(got, want);
        let (got, read) = exact_in_place(|| {
            accelerate!(create(pairs.len(), |i| reduce(
                |a, b| a + b,
                0.0f32,
                create(4, |k| pairs[i].0 * k as f32 + pairs[i].1)
            )))
        });
        assert!(read >= 3);
        assert_eq!(got.len(), n);
    }
}

#[test]
fn a_stencil_reads_its_neighbours_in_place() {
    for n in [1, 2, 17, 33, 1000, 4099] {
        let v = common::numbers(2 * n, 6);
        let pairs: Vec<(f32, f32)> = (0..n).map(|i| (v[i] as f32, v[n + i] as f32)).collect();
        let (got, read) = exact_in_place(|| {
            accelerate!(create(pairs.len(), |i| {
                if i == 0 || i == pairs.len() - 1 {
                    pairs[i].0
                } else {
                    pairs[i - 1].0 * 0.25 + pairs[i].1 * 0.5 + pairs[i + 1].0 * 0.25
                }
            }))
        });
        assert!(read >= 3, "n = {n}");
        let want: Vec<f32> = (0..n)
            .map(|i| {
                if i == 0 || i == n - 1 {
                    pairs[i].0
                } else {
                    pairs[i - 1].0 * 0.25 + pairs[i].1 * 0.5 + pairs[i + 1].0 * 0.25
                }
            })
            .collect();
        assert_eq!(got, want, "n = {n}");
    }
    // Unguarded, the neighbour before the first element is out of bounds (its index
    // wraps), as with columns.
    let pairs: Vec<(f32, f32)> = (0..20).map(|i| (i as f32, 2.0)).collect();
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!(create(pairs.len(), |i| pairs[i - 1].0 + pairs[i].1))
    }) {
        assert!(
            matches!(e.kind(), ErrorKind::IndexOutOfBounds | ErrorKind::Overflow),
            "{mode}: {e}"
        );
    }
}

#[test]
fn a_capture_read_elsewhere_keeps_columns() {
    let n = 100;
    let v = common::numbers(2 * n, 5);
    let pairs: Vec<(f32, f32)> = (0..n).map(|i| (v[i] as f32, v[n + i] as f32)).collect();
    // Read backwards, and whole in a loop: columns, and the same results.
    let (got, read) =
        exact_in_place(|| accelerate!(create(pairs.len(), |i| pairs[pairs.len() - 1 - i].0)));
    assert_eq!(read, 0);
    assert_eq!(got, pairs.iter().rev().map(|p| p.0).collect::<Vec<f32>>());
    let (got, read) = exact_in_place(|| {
        accelerate!(create(4, |i| {
            let mut s = 0.0f32;
            for p in pairs.iter() {
                s += p.1 * i as f32;
            }
            s
        }))
    });
    assert_eq!(read, 0);
    assert_eq!(got.len(), 4);
}

#[test]
fn an_index_past_the_end_fails_as_it_does_on_columns() {
    let pairs: Vec<(f32, f32)> = (0..40).map(|i| (i as f32, 1.0)).collect();
    let n = pairs.len() + 1;
    for (mode, e) in
        common::errors_in_every_mode(|| try_accelerate!(create(n, |i| pairs[i].0 + pairs[i].1)))
    {
        assert_eq!(e.kind(), ErrorKind::IndexOutOfBounds, "{mode}: {e}");
        assert!(
            e.to_string().contains("the len is 40 but the index is 40"),
            "{mode}: {e}"
        );
    }
}
