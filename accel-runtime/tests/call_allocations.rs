//! A site called in a loop allocates nothing per call on the CPU but its result: the
//! words of its captured values and of its result, the run's bookkeeping and its small
//! scratch memory (a reduction's partial results) are reused from the calls before it on
//! the same thread. (PolyBench's trisolv calls a dot-product site once per row: five
//! allocations a call were a fifth of its time beside the dot products.)

use accel_runtime::__private::{with_cpu_tier, CpuTier};
use accel_runtime::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the allocations of the thread that asks (the tier-up threads' are not a call's).
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: the allocator runs while threads start and end, too.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every method forwards to the system allocator with the caller's arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as the caller's contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as the caller's contract.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller's contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    ALLOCATIONS.set(0);
    COUNTING.set(true);
    f();
    COUNTING.set(false);
    ALLOCATIONS.get()
}

fn dot(l: &[f64], x: &[f64], i: usize) -> f64 {
    accelerate!(l[..i].par_iter().zip(&x[..i]).map(|(a, b)| a * b).sum())
}

fn scaled(xs: &[f64], k: f64) -> Vec<f64> {
    accelerate!(xs.par_iter().map(|x| x * k).collect::<Vec<f64>>())
}

#[test]
fn a_site_called_in_a_loop_allocates_only_its_result() {
    let xs: Vec<f64> = (0..3000).map(|k| (k % 17) as f64 * 0.25).collect();
    let ys: Vec<f64> = (0..3000).map(|k| (k % 5) as f64 - 2.0).collect();
    let want = |i: usize| -> f64 { xs[..i].iter().zip(&ys[..i]).map(|(a, b)| a * b).sum() };
    with_mode(Mode::Cpu, || {
        with_cpu_tier(CpuTier::Optimized, || {
            // Compiled, and the reused buffers made, by the first calls.
            assert_eq!(scaled(&xs, 2.0).len(), xs.len());
            for i in [0, 100, 2999] {
                assert_eq!(dot(&xs, &ys, i), want(i));
            }
            // A loop of one site (trisolv's rows): nothing but the first call allocates.
            for i in [1, 15, 16, 17, 64, 1000, 2999] {
                let mut got = 0.0;
                let n = allocations(|| got = dot(&xs, &ys, i));
                // Integer-valued products: every grouping of the sum gives the same.
                assert_eq!(got, want(i), "dot of {i}");
                assert_eq!(n, 0, "a reduction of {i} elements allocated {n} time(s)");
            }
            for i in [1, 15, 64, 1000, 2999] {
                let mut out = Vec::new();
                let n = allocations(|| out = scaled(&xs[..i], 2.0));
                let twice: Vec<f64> = xs[..i].iter().map(|x| x * 2.0).collect();
                assert_eq!(out, twice);
                // Its result's memory, new or (a small one) left by an earlier call.
                assert!(
                    n <= 1,
                    "a map of {i} elements allocated {n} times, not only its result"
                );
            }
        })
    });
}
