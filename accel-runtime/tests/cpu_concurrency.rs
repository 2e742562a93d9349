//! Concurrent first calls of a site compile it once; later calls and other threads reuse it.
//! (Its own test binary, so no other test compiles sites meanwhile.)

use accel_runtime::prelude::*;

fn site(xs: &[i64]) -> i64 {
    with_mode(Mode::Cpu, || {
        accelerate!(reduce(|a, b| a + b, 0, map(|x| x * 3, xs)))
    })
}

#[test]
fn concurrent_first_calls_compile_once() {
    let before = accel_runtime::__private::cpu_compilations();
    let xs: Vec<i64> = (0..100_000).collect();
    let expected: i64 = xs.iter().map(|x| x * 3).sum();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8).map(|_| s.spawn(|| site(&xs))).collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), expected);
        }
    });
    assert_eq!(accel_runtime::__private::cpu_compilations(), before + 1);
    // Same types again: a cache hit. Another element type: a second compilation.
    assert_eq!(site(&xs[..10]), 135);
    assert_eq!(accel_runtime::__private::cpu_compilations(), before + 1);
    let fs: Vec<f64> = vec![1.5, 2.5];
    assert_eq!(
        with_mode(Mode::Cpu, || accelerate!(reduce(|a, b| a + b, 0.0, &fs))),
        4.0
    );
    assert_eq!(accel_runtime::__private::cpu_compilations(), before + 2);
}
