//! The CPU backend's tiers: quick code (Cranelift's single-pass register allocator),
//! optimized code (the backtracking one) and LLVM's code compute the same bits for the
//! same sites; under
//! the adaptive policy a site's first call runs quick code while the optimized code
//! compiles in the background, later calls run the optimized code, and a long call
//! already running switches its kernels' chunks to it.

use accel_runtime::__private::{
    cpu_compilations, cpu_llvm_switched_chunks, cpu_llvm_tier_ups, cpu_switched_chunks,
    cpu_tier_ups, llvm_fallbacks, wait_for_cpu_tier_ups, with_cpu_tier, with_disk_cache, CpuTier,
};
use accel_runtime::prelude::*;

mod common;

/// Held by each test: one test's site compilations at a time (one test counts them).
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A deterministic generator (splitmix64).
fn noise(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

/// The length (at most eight) of the run of positive values starting at `i`.
#[accel]
fn run_at(xs: &[f64], i: usize) -> usize {
    let mut k = 1;
    while k < 8 && i + k < xs.len() && xs[i + k] > 0.0 {
        k += 1;
    }
    k
}

/// Sites of every shape the tiers compile differently (register pressure in stencils,
/// loops, reductions, scans, filters, in-place tensors), printed.
fn sites(xs: &[f64], w: usize) -> String {
    let n = xs.len();
    let h = n / w;
    let blur = accelerate!(create(n, |p| {
        let (i, j) = (p / w, p % w);
        if i == 0 || j == 0 || i == h - 1 || j == w - 1 {
            xs[p]
        } else {
            (xs[p - w] + xs[p + w] + xs[p - 1] + xs[p + 1] + 4.0 * xs[p]) * 0.125
        }
    }));
    let escape = accelerate!(create(n, |p| {
        let (cr, ci) = (xs[p] * 3.0, xs[(p * 7) % n] * 3.0);
        let (mut zr, mut zi, mut k) = (0.0, 0.0, 0u32);
        while k < 100 && zr * zr + zi * zi < 4.0 {
            let t = zr * zr - zi * zi + cr;
            zi = 2.0 * zr * zi + ci;
            zr = t;
            k += 1;
        }
        k
    }));
    let runs = accelerate!(create(n, |i| run_at(xs, i)));
    // Integers: a float sum's grouping differs between the CPU's chunks and debug mode's
    // fold (the tiers group alike, and the other sites compare bits).
    let sum = accelerate!(xs.par_iter().map(|x| (x * 1e6) as i64).sum::<i64>());
    let kept = accelerate!(xs.par_iter().filter(|x| **x > 0.1).count());
    let prefix = accelerate!(scan(|a, b| a + b, 0i64, map(|x| (x * 1e6) as i64, xs)));
    let t = Tensor::from_vec(xs.to_vec(), &[h, w]);
    accelerate!(parallel_loop(h, |i| {
        for j in 1..w {
            t.set([i, j], t.get([i, j - 1]) * 0.5 + t.get([i, j]));
        }
    }));
    format!(
        "{blur:?}\n{escape:?}\n{runs:?}\n{sum:?}\n{kept}\n{prefix:?}\n{:?}",
        t.to_vec()
    )
}

#[test]
fn quick_optimized_and_llvm_code_compute_the_same_bits() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    for (n, w) in [(7usize * 5, 7usize), (33 * 17, 33), (128 * 40, 128)] {
        let xs = noise(n, n as u64);
        let debug = with_mode(Mode::Debug, || sites(&xs, w));
        let quick = with_mode(Mode::Cpu, || {
            with_cpu_tier(CpuTier::Quick, || sites(&xs, w))
        });
        let optimized = with_mode(Mode::Cpu, || {
            with_cpu_tier(CpuTier::Optimized, || sites(&xs, w))
        });
        assert_eq!(quick, optimized, "n = {n}: the tiers differ");
        assert_eq!(quick, debug, "n = {n}: cpu and debug differ");
        if common::llvm_present() {
            let llvm = with_mode(Mode::Cpu, || with_cpu_tier(CpuTier::Llvm, || sites(&xs, w)));
            assert_eq!(
                llvm, optimized,
                "n = {n}: LLVM's code and Cranelift's differ"
            );
            assert_eq!(
                llvm_fallbacks(),
                0,
                "a site asked for LLVM code got Cranelift's"
            );
        }
    }
}

/// Escape-time iterations for point `p` of a 256-wide grid, from `k0`.
#[accel]
fn escape(p: usize, k0: u32) -> u32 {
    let (cr, ci) = (
        (p % 256) as f64 / 128.0 - 1.5,
        (p / 256) as f64 / 128.0 - 1.0,
    );
    let (mut zr, mut zi, mut k) = (0.0, 0.0, k0 % 7);
    while k < 300 && zr * zr + zi * zi < 4.0 {
        let t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        k += 1;
    }
    k
}

/// One call that runs long: `steps` launches one after another, each depending on the
/// last (a launch takes its kernel's newest code when it starts).
#[accel]
fn stepped(n: usize, steps: usize) -> Vec<u32> {
    let mut v = create(n, |p| escape(p, 0));
    for _s in 0..steps {
        v = create(n, |p| escape(p, v[p]));
    }
    v
}

/// One of three sites of the same long call, each with its own tiers (a retry on a
/// fresh site starts again from quick code).
fn long_site(k: usize, n: usize, steps: usize) -> Vec<u32> {
    match k {
        0 => accelerate!(stepped(n, steps)),
        1 => accelerate!(stepped(n, steps)),
        _ => accelerate!(stepped(n, steps)),
    }
}

#[test]
fn adaptive_sites_tier_up_and_a_running_call_switches() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // Long enough for both background compiles to land during the first call: the
    // site becomes hot after 50 times its quick compile (about 0.3 s here), and LLVM
    // takes another 0.1-0.3 s. A machine busy with other work compiles slower: a call
    // that ended before a compile landed is tried again, twice as long, on a fresh site.
    let n = 256 * 64;
    let mut tries = Vec::new();
    let mut switched_call = None;
    for (k, steps) in [1200, 2400, 4800].into_iter().enumerate() {
        let (ups, switched) = (cpu_tier_ups(), cpu_switched_chunks());
        let (llvm_ups, llvm_switched) = (cpu_llvm_tier_ups(), cpu_llvm_switched_chunks());
        let start = std::time::Instant::now();
        let v = with_mode(Mode::Cpu, || {
            with_cpu_tier(CpuTier::Adaptive, || long_site(k, n, steps))
        });
        let took = start.elapsed();
        // Seconds of quick code: the background compile lands during the call, whose
        // later launches then run the optimized kernels; the call runs far longer than
        // ten times its quick compile, so it makes the site hot while it runs, its LLVM
        // compile lands behind the optimized one, and its last launches run LLVM's.
        let optimized_switched = cpu_switched_chunks() > switched;
        let llvm_switched_too =
            !common::llvm_present() || cpu_llvm_switched_chunks() > llvm_switched;
        wait_for_cpu_tier_ups();
        assert_eq!(
            cpu_tier_ups(),
            ups + 1,
            "site {k}: the site's optimized code was not compiled"
        );
        if common::llvm_present() {
            assert_eq!(
                cpu_llvm_tier_ups(),
                llvm_ups + 1,
                "site {k}: the site did not get LLVM's code"
            );
        }
        tries.push(format!(
            "{steps} steps in {took:?}: optimized code switched to {optimized_switched}, LLVM's {llvm_switched_too}"
        ));
        if optimized_switched && llvm_switched_too {
            switched_call = Some((k, steps, v));
            break;
        }
    }
    let Some((k, steps, first)) = switched_call else {
        panic!(
            "no running call switched to the code compiled during it: {}",
            tries.join("; ")
        );
    };
    let again = with_mode(Mode::Cpu, || {
        with_cpu_tier(CpuTier::Adaptive, || long_site(k, n, steps))
    });
    let optimized = with_mode(Mode::Cpu, || {
        with_cpu_tier(CpuTier::Optimized, || long_site(k, n, steps))
    });
    assert_eq!(first, optimized);
    assert_eq!(again, optimized, "LLVM's code computed other bits");
    let debug = with_mode(Mode::Debug, || long_site(0, n, 3));
    let cpu = with_mode(Mode::Cpu, || long_site(0, n, 3));
    assert_eq!(cpu, debug);
}

/// One of four sites, each compiled on its first call.
fn one_of_four(k: usize, xs: &[f64]) -> f64 {
    match k % 4 {
        0 => accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x * 2.0, xs))),
        1 => accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x * x, xs))),
        2 => accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x - 1.0, xs))),
        _ => accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x.abs(), xs))),
    }
}

#[test]
fn sites_first_called_inside_busy_rayon_tasks_compile() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // Quick code compiles on rayon's pool while the site is generated: a site compiled
    // from a rayon task, every pool thread busy with the caller's own tasks, must not wait
    // for a free pool thread.
    let xs: Vec<f64> = (0..1000).map(|i| i as f64 / 8.0).collect();
    let want: Vec<f64> = (0..4)
        .map(|k| with_mode(Mode::Debug, || one_of_four(k, &xs)))
        .collect();
    let (done, finished) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let threads = rayon::current_num_threads();
        let all_busy = std::sync::Barrier::new(threads);
        let got = std::sync::Mutex::new(vec![]);
        rayon::scope(|s| {
            for k in 0..threads {
                let (all_busy, got, xs) = (&all_busy, &got, &xs);
                s.spawn(move |_| {
                    all_busy.wait();
                    let v = with_mode(Mode::Cpu, || {
                        with_cpu_tier(CpuTier::Adaptive, || one_of_four(k, xs))
                    });
                    got.lock().unwrap().push((k % 4, v));
                });
            }
        });
        let _ = done.send(got.into_inner().unwrap());
    });
    let got = finished
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("sites compiled inside busy rayon tasks did not finish in two minutes");
    worker.join().unwrap();
    assert_eq!(got.len(), rayon::current_num_threads());
    for (k, v) in got {
        assert_eq!(v, want[k], "site {k}");
    }
}

/// Dot products in `f64` and sums in `f32`: reductions that run on vectors.
fn dots(xs: &[f64], ys: &[f64]) -> (f64, f32) {
    let dot = accelerate!(xs.par_iter().zip(ys).map(|(a, b)| a * b).sum::<f64>());
    let singles: Vec<f32> = xs.iter().map(|x| *x as f32).collect();
    let sum = accelerate!(singles.par_iter().map(|x| x * 1.5).sum::<f32>());
    (dot, sum)
}

/// The tiers whose results the float reduction tests compare with the quick code's, and
/// their names: the optimized code, and LLVM's where the library is here.
fn tiers_after_quick() -> Vec<(CpuTier, &'static str)> {
    let mut tiers = vec![(CpuTier::Optimized, "optimized")];
    if common::llvm_present() {
        tiers.push((CpuTier::Llvm, "LLVM's"));
    }
    tiers
}

/// A chunk's fold as the code generator documents it (`codegen::simd`): 128 bytes of
/// partial results, element `i` into partial `i % P`, the partials folded by halving, then
/// the rest one at a time.
fn documented_fold<T: Copy + std::ops::Add<Output = T>>(xs: &[T], zero: T) -> T {
    let p = 128 / std::mem::size_of::<T>();
    let whole = xs.len() / p * p;
    let mut partials = vec![zero; p];
    for (i, x) in xs[..whole].iter().enumerate() {
        partials[i % p] = partials[i % p] + *x;
    }
    while partials.len() > 1 {
        let half = partials.len() / 2;
        partials = (0..half)
            .map(|k| partials[k] + partials[k + half])
            .collect();
    }
    let rest = xs[whole..].iter().fold(zero, |a, x| a + *x);
    partials[0] + rest
}

#[test]
fn float_reductions_group_alike_at_every_tier() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    for n in [0usize, 1, 3, 15, 16, 17, 31, 32, 33, 63, 100, 1000, 2047] {
        let (xs, ys) = (noise(n, 11 + n as u64), noise(n, 12 + n as u64));
        let at = |tier| with_mode(Mode::Cpu, || with_cpu_tier(tier, || dots(&xs, &ys)));
        let quick = at(CpuTier::Quick);
        // One chunk at these lengths: the documented fold, bit for bit, from -0.0 (where
        // Rust's float sum starts).
        let products: Vec<f64> = xs.iter().zip(&ys).map(|(a, b)| a * b).collect();
        let scaled: Vec<f32> = xs.iter().map(|x| *x as f32 * 1.5).collect();
        let want = (
            documented_fold(&products, -0.0),
            documented_fold(&scaled, -0.0),
        );
        assert_eq!(quick.0.to_bits(), want.0.to_bits(), "n = {n}: f64 dot");
        assert_eq!(quick.1.to_bits(), want.1.to_bits(), "n = {n}: f32 sum");
        for (tier, name) in tiers_after_quick() {
            let got = at(tier);
            assert_eq!(
                (got.0.to_bits(), got.1.to_bits()),
                (quick.0.to_bits(), quick.1.to_bits()),
                "n = {n}: {name} code and the quick code differ"
            );
        }
    }
    assert_eq!(
        llvm_fallbacks(),
        0,
        "a site asked for LLVM code got Cranelift's"
    );
}

/// Sums whose elements branch (the reduction runs for gangs of lanes, `spmd::reduce`):
/// `f32` and `f64`, and both at once in a tuple.
fn branching_sums(xs: &[f64]) -> (f32, f64, (f32, f64)) {
    let singles: Vec<f32> = xs.iter().map(|x| *x as f32).collect();
    let single = accelerate!(reduce(
        |a, b| a + b,
        0.0,
        map(|x| if x > 0.0 { x * 2.0 } else { x.abs().sqrt() }, &singles)
    ));
    let double = accelerate!(reduce(
        |a, b| a + b,
        0.0,
        map(|x| if x > 0.1 { x * x } else { -x * 3.0 }, xs)
    ));
    let both = accelerate!(reduce(
        |a: (f32, f64), b: (f32, f64)| (a.0 + b.0, a.1 + b.1),
        (0.0f32, 0.0f64),
        map(|x| if x > 0.0 { (x as f32, x) } else { (1.0f32, -x) }, xs)
    ));
    (single, double, both)
}

/// A chunk's fold of a reduction run for gangs, as `spmd::reduce` documents it: element
/// `i` into lane `i % 16`, the lanes folded in order, then the elements after the last
/// whole gang one at a time.
fn gang_fold<T: Copy + std::ops::Add<Output = T>>(xs: &[T], zero: T) -> T {
    let whole = xs.len() / 16 * 16;
    let mut lanes = [zero; 16];
    for (i, x) in xs[..whole].iter().enumerate() {
        lanes[i % 16] = lanes[i % 16] + *x;
    }
    let folded = lanes[1..].iter().fold(lanes[0], |a, x| a + *x);
    folded + xs[whole..].iter().fold(zero, |a, x| a + *x)
}

#[test]
fn float_reductions_for_gangs_fold_alike_at_every_tier() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    for n in [0usize, 1, 15, 16, 17, 33, 1000, 2047, 100_003] {
        let xs = noise(n, 21 + n as u64);
        let at = |tier| with_mode(Mode::Cpu, || with_cpu_tier(tier, || branching_sums(&xs)));
        let quick = at(CpuTier::Quick);
        if n <= 2047 {
            // One chunk: the documented fold, bit for bit.
            let singles: Vec<f32> = xs
                .iter()
                .map(|&x| x as f32)
                .map(|x| if x > 0.0 { x * 2.0 } else { x.abs().sqrt() })
                .collect();
            let doubles: Vec<f64> = xs
                .iter()
                .map(|&x| if x > 0.1 { x * x } else { -x * 3.0 })
                .collect();
            let (firsts, seconds): (Vec<f32>, Vec<f64>) = xs
                .iter()
                .map(|&x| if x > 0.0 { (x as f32, x) } else { (1.0f32, -x) })
                .unzip();
            let want = (
                gang_fold(&singles, 0.0),
                gang_fold(&doubles, 0.0),
                (gang_fold(&firsts, 0.0), gang_fold(&seconds, 0.0)),
            );
            assert_eq!(format!("{quick:?}"), format!("{want:?}"), "n = {n}");
        }
        for (tier, name) in tiers_after_quick() {
            let got = at(tier);
            assert_eq!(
                format!("{got:?}"),
                format!("{quick:?}"),
                "n = {n}: {name} code and the quick code differ"
            );
        }
    }
}

/// A site the next test calls under two tiers.
fn tripled(xs: &[f64]) -> f64 {
    accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x * 3.0, xs)))
}

#[test]
fn a_thread_switching_tiers_runs_each_tiers_code() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let xs = noise(1000, 3);
    let quick = with_mode(Mode::Cpu, || with_cpu_tier(CpuTier::Quick, || tripled(&xs)));
    // The same thread, site and types: the plan of the quick call must not be reused
    // under another tier.
    let before = cpu_compilations();
    let optimized = with_mode(Mode::Cpu, || {
        with_cpu_tier(CpuTier::Optimized, || tripled(&xs))
    });
    assert_eq!(
        cpu_compilations(),
        before + 1,
        "the optimized call reused the quick code"
    );
    assert_eq!(quick.to_bits(), optimized.to_bits());
}

/// The child of the next test: an `f32` map and an `f32` escape-time loop compiled by LLVM,
/// written out by `ACCEL_DUMP`.
#[test]
#[ignore = "run by llvm_code_holds_a_gang_in_the_hosts_vectors in a child process"]
fn child_dumps_an_llvm_site() {
    let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let ys = with_mode(Mode::Cpu, || accelerate!(map(|x| x * 3.0 + 1.0, &xs)));
    assert_eq!(ys[999], 999.0 * 1.5 + 1.0);
    let steps = with_mode(Mode::Cpu, || {
        accelerate!(map(
            |c| {
                let (mut z, mut k) = (0.0f32, 0u32);
                while k < 50 && z * z < 4.0 {
                    z = z * z - c;
                    k += 1;
                }
                k
            },
            &xs
        ))
    });
    // 0 stays at 0; 499.5 leaves after the first step.
    assert_eq!((steps[0], steps[999]), (50, 1));
}

#[test]
fn llvm_code_holds_a_gang_in_the_hosts_vectors() {
    // The child's compiles take a core: not beside a test that times its tier-ups.
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    if !common::llvm_present() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    let host = if std::arch::is_x86_feature_detected!("avx512f") {
        512
    } else if std::arch::is_x86_feature_detected!("avx2") {
        256
    } else {
        128
    };
    #[cfg(not(target_arch = "x86_64"))]
    let host = 128;
    for bits in [None, Some(256), Some(128)] {
        let dir = std::env::temp_dir().join(format!("accel-vector-bits-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let dump = dir.to_string_lossy().into_owned();
        let mut env = vec![("ACCEL_TIER", "llvm"), ("ACCEL_DUMP", dump.as_str())];
        let asked = bits.map(|b: u32| b.to_string());
        if let Some(b) = &asked {
            env.push(("ACCEL_LLVM_VECTOR_BITS", b));
        }
        let (ok, _, err) = common::run_child("child_dumps_an_llvm_site", &env);
        assert!(ok, "{err}");
        let modules: Vec<String> = std::fs::read_dir(&dir)
            .expect("the dump folder")
            .map(|f| std::fs::read_to_string(f.expect("a dump").path()).expect("a listing"))
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(modules.len(), 2, "one listing per site");
        for module in modules {
            // The widest vector of `f32` lanes the module uses: a group's.
            let widest = [16, 8, 4]
                .into_iter()
                .find(|lanes| module.contains(&format!("<{lanes} x float>")))
                .expect("the module computes on vectors of f32");
            let mut want = bits.unwrap_or(host).min(host) / 32;
            // An iteration to convergence: its gang in 256-bit groups, more chains at once.
            if module.contains("(while ") {
                want = want.min(8);
            }
            assert_eq!(
                widest,
                want,
                "ACCEL_LLVM_VECTOR_BITS={asked:?} on a {host}-bit host:\n{}",
                module.lines().nth(1).unwrap_or("")
            );
        }
    }
}

/// The child of the next test: a thread starts compiling a site with LLVM, and the
/// process exits while it does.
#[test]
#[ignore = "run by a_process_exiting_during_an_llvm_compile_exits_cleanly in a child process"]
fn child_exits_during_an_llvm_compile() {
    // The library loaded first: a process that exits while it loads (dlopen runs its
    // static constructors) is not protected; one that exits while it compiles is.
    accel_runtime::__private::llvm_available().expect("LLVM is there");
    let xs = noise(4096, 3);
    std::thread::spawn(move || {
        with_mode(Mode::Cpu, || {
            with_cpu_tier(CpuTier::Llvm, || {
                accelerate!(map(|x| (x * 1.5).sin() + x.exp(), &xs))
            })
        })
    });
    // Each child exits at another point of the compile (Cranelift's IR, LLVM's passes,
    // its code generator).
    sleep_until_exit();
}

/// A child's wait before it exits: `ACCEL_TEST_EXIT_AFTER_MS` milliseconds (10 unset).
fn sleep_until_exit() {
    let ms = std::env::var("ACCEL_TEST_EXIT_AFTER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

/// Runs the child test `child` once per delay, each exiting that many milliseconds in,
/// without the disk cache; each must exit cleanly. Nothing to run without LLVM.
fn each_child_exits_cleanly(child: &str, delays_ms: &[&str]) {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    if !common::llvm_present() {
        return;
    }
    for ms in delays_ms {
        let (ok, out, err) = common::run_child(
            child,
            &[("ACCEL_CACHE", "0"), ("ACCEL_TEST_EXIT_AFTER_MS", ms)],
        );
        assert!(
            ok,
            "{child}, exiting {ms} ms in, did not exit cleanly:\n{out}\n{err}"
        );
    }
}

#[test]
fn a_process_exiting_during_an_llvm_compile_exits_cleanly() {
    // Exit waits for the compile: LLVM's statics are not destroyed under it (a process
    // that exited mid-compile crashed in LLVM's instruction selector).
    each_child_exits_cleanly(
        "child_exits_during_an_llvm_compile",
        &["5", "15", "30", "50", "80", "120"],
    );
}

/// The child of the next test: its thread calls a site that may tier up to LLVM, another
/// thread loads LLVM's library (as a background compile does), and the process exits
/// while it loads.
#[test]
#[ignore = "run by a_process_exiting_while_llvm_loads_exits_cleanly in a child process"]
fn child_exits_while_llvm_loads() {
    let xs = noise(4096, 5);
    let tripled = with_mode(Mode::Cpu, || {
        with_cpu_tier(CpuTier::Adaptive, || accelerate!(map(|x| x * 3.0, &xs)))
    });
    assert_eq!(tripled[7], xs[7] * 3.0);
    std::thread::spawn(accel_runtime::__private::llvm_available);
    sleep_until_exit();
}

#[test]
fn a_process_exiting_while_llvm_loads_exits_cleanly() {
    // Exit waits for the load: the destructors LLVM registered so far do not run while
    // its constructors still do (a C program exiting during another thread's dlopen of
    // libLLVM crashed or spun in 17 of 150 runs, 0-40 ms into the load).
    each_child_exits_cleanly(
        "child_exits_while_llvm_loads",
        &["0", "3", "6", "10", "13", "16", "20", "25", "30", "40"],
    );
}

/// Steps too small to split between threads: each runs on the calling thread.
#[accel]
fn small_steps(xs: &[f64], steps: usize) -> Vec<f64> {
    let mut v = create(xs.len(), |i| xs[i]);
    for _s in 0..steps {
        v = create(xs.len(), |i| v[i] * 0.5 + xs[i]);
    }
    v
}

/// Calls one of two sites (each tiers up once) for `ms` milliseconds, under the adaptive
/// policy without the disk cache, on `pool` (from one of its tasks), else from this
/// thread; its last result.
fn small_steps_for(
    which: usize,
    pool: Option<&rayon::ThreadPool>,
    xs: &[f64],
    ms: u64,
) -> Vec<f64> {
    let call = || match which {
        0 => accelerate!(small_steps(xs, 400)),
        _ => accelerate!(small_steps(xs, 400)),
    };
    let calls = || {
        with_disk_cache(false, || {
            with_mode(Mode::Cpu, || {
                with_cpu_tier(CpuTier::Adaptive, || {
                    let start = std::time::Instant::now();
                    let mut last = call();
                    while start.elapsed() < std::time::Duration::from_millis(ms) {
                        last = call();
                    }
                    last
                })
            })
        })
    };
    match pool {
        Some(pool) => pool.install(calls),
        None => calls(),
    }
}

#[test]
fn a_site_leaving_the_pool_idle_tiers_up_to_llvm_soon() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    if !common::llvm_present() {
        return;
    }
    let xs = noise(1000, 9);
    let want = with_mode(Mode::Debug, || accelerate!(small_steps(&xs, 400)));
    // 15 ms of calls from a task of a pool (of two threads, busy with the caller's tasks
    // as far as accel knows): short of any site's rent-or-buy threshold (20 ms at least).
    let busy = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool");
    let ups = cpu_llvm_tier_ups();
    let inside = small_steps_for(0, Some(&busy), &xs, 15);
    wait_for_cpu_tier_ups();
    assert_eq!(
        cpu_llvm_tier_ups(),
        ups,
        "a site called from a pool's task got hot early"
    );
    assert_eq!(inside, want);
    if rayon::current_num_threads() < 2 {
        eprintln!("SKIPPED: one core: no site leaves a thread of the pool idle here");
        return;
    }
    // Called from this thread, its calls leave the global pool's threads idle: LLVM
    // compiles there after 5 ms.
    let beside = small_steps_for(1, None, &xs, 15);
    wait_for_cpu_tier_ups();
    assert_eq!(
        cpu_llvm_tier_ups(),
        ups + 1,
        "a site leaving the pool idle did not get LLVM's code"
    );
    let llvm = small_steps_for(1, None, &xs, 0);
    assert_eq!(beside, want);
    assert_eq!(llvm, want, "LLVM's code computed other bits");
}
