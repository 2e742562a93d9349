//! Stress and limits: many threads making the first calls of many sites at once, indices
//! past `u32` on the CPU, and allocations larger than memory, which are errors naming the
//! site, not aborts. (Past `u32` on the GPU, which no machine here can hold: the kernel
//! check that every differential test runs rejects generated CUDA C computing an index in
//! 32 bits, `cuda::check::narrow_indices`.)

use accel_runtime::prelude::*;
use accel_runtime::ErrorKind;
use std::sync::{Arc, Barrier};

mod common;

fn site_of(marker: &str) -> String {
    common::site_of("stress.rs", include_str!("stress.rs"), marker)
}

/// Eight different sites over one input, each a function of `k`.
fn site(k: usize, v: &[i64]) -> i64 {
    match k {
        0 => accelerate!(reduce(|a, b| a + b, 0, v)),
        1 => accelerate!(reduce(|a, b| a + b, 0, map(|x| x * 3, v))),
        2 => accelerate!(reduce(|a, b| a.max(b), i64::MIN, v)),
        3 => accelerate!(reduce(|a, b| a.min(b), i64::MAX, map(|x| x - 1, v))),
        4 => accelerate!(v.iter().filter(|x| **x > 0).count()) as i64,
        5 => {
            let sums: Vec<i64> = accelerate!(scan(|a, b| a + b, 0, v));
            sums[v.len() - 1]
        }
        6 => accelerate!(reduce(|a, b| a + b, 0, map2(|x, y| x * y, v, v))),
        _ => accelerate!(reduce(|a, b| a ^ b, 0, v)),
    }
}

fn expected(k: usize, v: &[i64]) -> i64 {
    match k {
        0 | 5 => v.iter().sum(),
        1 => v.iter().map(|x| x * 3).sum(),
        2 => *v.iter().max().unwrap(),
        3 => v.iter().map(|x| x - 1).min().unwrap(),
        4 => v.iter().filter(|x| **x > 0).count() as i64,
        6 => v.iter().map(|x| x * x).sum(),
        _ => v.iter().fold(0, |a, b| a ^ b),
    }
}

/// `threads` threads released at once, each making the first call of site `t % 8` (on
/// an input of `len` values) through `call`; every result checked.
fn first_calls_at_once(
    threads: usize,
    len: usize,
    call: impl Fn(&dyn Fn() -> i64) -> i64 + Copy + Send + 'static,
) {
    let v: Arc<Vec<i64>> = Arc::new(common::noise(len, 3));
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (v, start) = (v.clone(), start.clone());
            std::thread::spawn(move || {
                call(&|| {
                    start.wait();
                    site(t % 8, &v)
                })
            })
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), expected(t % 8, &v), "site {}", t % 8);
    }
}

#[test]
fn many_threads_make_the_first_calls_of_many_sites_at_once() {
    first_calls_at_once(32, 10_000, |f| with_mode(Mode::Cpu, f));
    first_calls_at_once(32, 10_000, |f| with_mode(Mode::Debug, f));
}

#[cfg(feature = "cuda")]
#[test]
fn many_threads_make_the_first_calls_of_many_sites_at_once_in_the_cuda_mode() {
    use accel_runtime::cuda::{with_emulator, COMPILATIONS};
    use std::sync::atomic::Ordering;
    if !common::emulator_present() {
        return;
    }
    let before = COMPILATIONS.load(Ordering::Relaxed);
    // with_emulator is per thread: each thread sets it for itself.
    first_calls_at_once(16, 3000, |f| with_emulator(|| with_mode(Mode::Cuda, f)));
    // Each site compiled once, however many threads asked at once.
    assert_eq!(COMPILATIONS.load(Ordering::Relaxed) - before, 8);
}

#[test]
fn indices_past_u32_on_the_cpu() {
    // No memory: a reduction over a create of 2^32 + 5 indices.
    let n = (1usize << 32) + 5;
    let top = with_mode(Mode::Cpu, || {
        accelerate!(reduce(|a, b| a.max(b), 0, create(n, |i| i))) // [top index]
    });
    assert_eq!(top, n - 1);
    // 2^31 + 5 booleans (a byte each), read by indices past i32.
    let m = (1usize << 31) + 5;
    let mut v = vec![false; m];
    for i in [5, 1 << 31, m - 1] {
        v[i] = true;
    }
    let set = with_mode(Mode::Cpu, || {
        accelerate!(reduce(
            |a, b| a + b,
            0u64,
            map(|x| if x { 1u64 } else { 0 }, &v)
        ))
    });
    assert_eq!(set, 3);
    let last = with_mode(Mode::Cpu, || accelerate!(create(3, |i| v[m - 3 + i])));
    assert_eq!(last, vec![false, false, true]);
}

fn sevenths(n: usize) -> Result<Vec<bool>, accel_runtime::AccelError> {
    try_accelerate!(create(n, |i| i % 7 == 0)) // [too big]
}

#[test]
fn an_allocation_larger_than_memory_is_an_error_naming_the_site() {
    let n = 1usize << 44; // 16 TiB of booleans
    let e = with_mode(Mode::Cpu, || sevenths(n)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    assert_eq!(e.site(), site_of("[too big]"));
    assert_eq!(
        e.to_string(),
        format!(
            "accelerate! at {}: could not allocate 17592186044416 bytes",
            site_of("[too big]")
        )
    );
    // The site and the process go on.
    let small = with_mode(Mode::Cpu, || sevenths(10)).unwrap();
    let expected: Vec<bool> = (0..10).map(|i| i % 7 == 0).collect();
    assert_eq!(small, expected);
}

fn quarters(n: usize) -> Result<Vec<f32>, accel_runtime::AccelError> {
    try_accelerate!(create(n, |i| i as f32 * 0.25)) // [wraps]
}

fn triples(n: usize) -> Result<Vec<(f32, f32, f32)>, accel_runtime::AccelError> {
    try_accelerate!(create(n, |i| (i as f32, 1.0f32, 2.0f32))) // [wraps in rows]
}

#[test]
fn an_allocation_whose_size_wraps_is_an_error_not_a_smaller_one() {
    // 2^62 + 1 f32s are 4 bytes modulo 2^64, and 2^62 + 1 rows of 12 bytes 12: the
    // compiled code allocated that little and wrote past it.
    for n in [(1usize << 62) + 1, usize::MAX / 3, usize::MAX] {
        let e = with_mode(Mode::Cpu, || quarters(n)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfMemory);
        assert_eq!(
            e.to_string(),
            format!(
                "accelerate! at {}: could not allocate {n} elements: their size passes isize::MAX bytes",
                site_of("[wraps]")
            )
        );
        let e = with_mode(Mode::Cpu, || triples(n)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfMemory);
        assert!(
            e.to_string()
                .contains(&format!("could not allocate {n} elements")),
            "{e}"
        );
    }
    assert_eq!(
        with_mode(Mode::Cpu, || quarters(3)).unwrap(),
        vec![0.0, 0.25, 0.5]
    );
    assert_eq!(
        with_mode(Mode::Cpu, || triples(2)).unwrap(),
        vec![(0.0, 1.0, 2.0), (1.0, 1.0, 2.0)]
    );
}

#[cfg(feature = "cuda")]
#[test]
fn a_device_allocation_larger_than_memory_is_an_error_naming_the_site() {
    if !common::emulator_present() {
        return;
    }
    let run =
        |n: usize| accel_runtime::cuda::with_emulator(|| with_mode(Mode::Cuda, || sevenths(n)));
    let e = run(1usize << 44).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    assert_eq!(e.site(), site_of("[too big]"));
    assert!(
        e.to_string().starts_with(&format!(
            "accelerate! at {}: could not allocate 17592186044416 bytes",
            site_of("[too big]")
        )),
        "{e}"
    );
    let expected: Vec<bool> = (0..10).map(|i| i % 7 == 0).collect();
    assert_eq!(run(10).unwrap(), expected);
}

/// A histogram's private histograms are a number fixed by its sizes alone: counts are
/// exact on pools of any size, and float sums come out bit for bit the same on each.
#[test]
fn histograms_on_pools_of_every_size() {
    let n = 1 << 20;
    let noise = common::noise(n, 17);
    let bins: Vec<usize> = noise
        .iter()
        .enumerate()
        .map(|(i, x)| (i * 7919 + x.unsigned_abs() as usize) % 4096)
        .collect();
    let weights: Vec<f32> = noise.iter().map(|&x| x as f32 * 0.37).collect();
    let mut want = vec![0u32; 4096];
    for &b in &bins {
        want[b] += 1;
    }
    let mut float_sums = Vec::new();
    for threads in [1, 3, 8] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let (counts, sums) = pool.install(|| {
            with_mode(Mode::Cpu, || {
                let counts = accelerate!(reduce_by_index(
                    vec![0u32; 4096],
                    |a, b| a + b,
                    0,
                    &bins,
                    map(|_| 1u32, &bins)
                ));
                let sums = accelerate!(reduce_by_index(
                    vec![0.0f32; 1000],
                    |a, b| a + b,
                    0.0,
                    map(|b| b % 1000, &bins),
                    &weights
                ));
                (counts, sums)
            })
        });
        assert_eq!(counts, want, "{threads} threads");
        float_sums.push(sums.iter().map(|s| s.to_bits()).collect::<Vec<u32>>());
    }
    assert_eq!(float_sums[0], float_sums[1]);
    assert_eq!(float_sums[0], float_sums[2]);
}
