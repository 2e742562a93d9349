//! A program written only with iterator chains, as a Rust programmer writes with std or
//! rayon: statistics of a year of temperature readings from many stations. Every
//! `accelerate!` below is a chain (`par_iter`, `zip`, `map`, `filter`, `enumerate`, `sum`,
//! `fold`, `count`, `all`, `collect`), lowered to the parallel operations it spells and
//! fused; no rayon import is needed. Each result is checked against the same chain run by
//! std's sequential iterators.
//!
//! `cargo run -p accel-examples --bin sensors` (`ACCEL_MODE=debug` runs each chain as the
//! Rust it is, with `fold`'s assumptions checked).

use accel_examples::random::uniform;
use accel_runtime::prelude::*;

/// Root mean square of a station's readings: an `#[accel]` function may hold a chain too,
/// and one nested in a parallel operation's element runs sequentially there.
#[accel]
fn rms(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x * x).sum::<f64>() / xs.len() as f64).sqrt()
}

/// Readings of `stations` stations, `per_station` each: a seasonal curve plus noise.
fn readings(stations: usize, per_station: usize) -> Vec<Vec<f64>> {
    (0..stations)
        .map(|s| {
            let noise = uniform(per_station, 100 + s as u64, -4.0, 4.0);
            noise
                .iter()
                .enumerate()
                .map(|(t, e)| {
                    let season = (t as f64 / per_station as f64 * std::f64::consts::TAU).sin();
                    10.0 + 12.0 * season + s as f64 * 0.1 + *e as f64
                })
                .collect()
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn main() {
    let small = std::env::args().any(|a| a == "--small");
    let (stations, per_station) = if small { (8, 1000) } else { (64, 100_000) };
    let by_station = readings(stations, per_station);
    let all: Vec<f64> = by_station.iter().flatten().copied().collect();
    let n = all.len();

    // Mean and variance: two reductions, each one pass with SIMD accumulators.
    let mean: f64 = accelerate!(all.par_iter().sum::<f64>()) / n as f64;
    let variance: f64 =
        accelerate!(all.par_iter().map(|x| (x - mean) * (x - mean)).sum::<f64>()) / n as f64;
    let expected_mean = all.iter().sum::<f64>() / n as f64;
    assert!(close(mean, expected_mean), "{mean} vs {expected_mean}");
    let expected_variance = all
        .iter()
        .map(|x| (x - expected_mean) * (x - expected_mean))
        .sum::<f64>()
        / n as f64;
    assert!(close(variance, expected_variance));

    // Extremes with `fold` (min() and max() return an Option, which accelerated code has not).
    let hottest: f64 = accelerate!(all.par_iter().copied().fold(f64::NEG_INFINITY, f64::max));
    let coldest: f64 = accelerate!(all.par_iter().copied().fold(f64::INFINITY, f64::min));
    assert_eq!(
        hottest,
        all.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    );
    assert_eq!(coldest, all.iter().copied().fold(f64::INFINITY, f64::min));

    // How many readings pass 25 degrees (a filter fused into its count: no array), and
    // whether every reading is physically plausible.
    let threshold = 25.0;
    let hot: usize = accelerate!(all.par_iter().filter(|x| **x > threshold).count());
    assert_eq!(hot, all.iter().filter(|x| **x > threshold).count());
    let plausible: bool = accelerate!(all.par_iter().all(|x| *x > -60.0 && *x < 60.0));
    assert!(plausible);

    // The first station against its neighbour: the correlation's sums over zipped series.
    let (a, b) = (&by_station[0], &by_station[1]);
    let (ma, mb) = (
        a.iter().sum::<f64>() / a.len() as f64,
        b.iter().sum::<f64>() / b.len() as f64,
    );
    let covariance: f64 = accelerate!(a
        .par_iter()
        .zip(b)
        .map(|(x, y)| (x - ma) * (y - mb))
        .sum::<f64>());
    let spread_a: f64 = accelerate!(a.par_iter().map(|x| (x - ma) * (x - ma)).sum::<f64>());
    let spread_b: f64 = accelerate!(b.par_iter().map(|y| (y - mb) * (y - mb)).sum::<f64>());
    let correlation = covariance / (spread_a * spread_b).sqrt();
    let expected_covariance: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    assert!(close(covariance, expected_covariance));

    // Day-to-day changes (a zip of a series with itself shifted by one, the shorter
    // length winning) and the first change of more than 7.5 degrees.
    let changes: Vec<f64> = accelerate!(a
        .par_iter()
        .zip(&a[1..])
        .map(|(today, tomorrow)| tomorrow - today)
        .collect::<Vec<f64>>());
    let expected_changes: Vec<f64> = a.iter().zip(&a[1..]).map(|(t, u)| u - t).collect();
    assert_eq!(changes, expected_changes);
    let first_jump: usize = accelerate!(changes
        .par_iter()
        .enumerate()
        .filter(|(_, d)| d.abs() > 7.5)
        .map(|(i, _)| i)
        .fold(usize::MAX, usize::min));
    let expected_jump = changes
        .iter()
        .enumerate()
        .filter(|(_, d)| d.abs() > 7.5)
        .map(|(i, _)| i)
        .fold(usize::MAX, usize::min);
    assert_eq!(first_jump, expected_jump);

    // Per station: the root mean square and the count of hot readings, a chain nested in
    // each element of a parallel one.
    let station_rms: Vec<f64> =
        accelerate!(by_station.par_iter().map(|s| rms(s)).collect::<Vec<f64>>());
    let hot_days: Vec<usize> = accelerate!(by_station
        .par_iter()
        .map(|s| s.iter().filter(|x| **x > threshold).count())
        .collect::<Vec<usize>>());
    for (k, s) in by_station.iter().enumerate() {
        assert!(close(station_rms[k], rms(s)));
        assert_eq!(hot_days[k], s.iter().filter(|x| **x > threshold).count());
    }

    println!("sensors: {stations} stations x {per_station} readings");
    println!("mean {mean:.3}, standard deviation {:.3}", variance.sqrt());
    println!("coldest {coldest:.2}, hottest {hottest:.2}, {hot} readings above {threshold}");
    println!("correlation of stations 0 and 1: {correlation:.4}");
    println!("first change above 7.5 degrees at day {first_jump}");
    println!("root mean square, stations 0..3: {:.3?}", &station_rms[..3]);
    println!("hot readings per station, 0..3: {:?}", &hot_days[..3]);
}
