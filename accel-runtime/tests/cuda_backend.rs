//! The CUDA backend: aliasing, failures, the kernel cache, ACCEL_DUMP, and the errors of a
//! machine without a GPU. Runs on the GPU when there is one, else on the emulator (the
//! generated kernels compiled as C++); NVRTC and ptxas checks skip visibly without them.
#![cfg(feature = "cuda")]

use accel_runtime::prelude::*;

mod common;
use common::panic_message;

fn site_of(marker: &str) -> String {
    common::site_of("cuda_backend.rs", include_str!("cuda_backend.rs"), marker)
}

/// Runs `f` in cuda mode: on the GPU when there is one, else on the emulator. Tests that
/// use it start with `if !device() { return; }`.
fn on_device<R>(f: impl FnOnce() -> R) -> R {
    if common::gpu_present() {
        with_mode(Mode::Cuda, f)
    } else {
        accel_runtime::cuda::with_emulator(|| with_mode(Mode::Cuda, f))
    }
}

/// Whether there is a GPU or the emulator to run on (says visibly when not).
fn device() -> bool {
    common::gpu_present() || common::emulator_present()
}

#[test]
fn listing_3_aliasing_views_are_one_device_allocation() {
    if !device() {
        return;
    }
    let t = Tensor::<i64>::zeros(&[6]);
    let a = t.sub(1, 2);
    let b = t.sub(4, 2);
    on_device(|| {
        accelerate!(parallel_loop(1, |i| {
            a.set([i], 7);
            b.set([i + 1], 2);
        }))
    });
    assert_eq!(t.to_vec(), vec![0, 7, 0, 0, 0, 2]);
}

#[test]
fn views_of_one_buffer_see_each_others_writes_across_kernels() {
    if !device() {
        return;
    }
    // Two launches in one site: the second reads what the first wrote through another
    // view of the same buffer.
    let t = Tensor::<i32>::zeros(&[2, 4]);
    let top = t.sub(0, 1);
    let bottom = t.sub(1, 1);
    on_device(|| {
        accelerate!({
            parallel_loop(4, |j| top.set([0, j], j as i32 + 1));
            parallel_loop(4, |j| bottom.set([0, j], top.get([0, 3 - j]) * 10));
        })
    });
    assert_eq!(t.to_vec(), vec![1, 2, 3, 4, 40, 30, 20, 10]);
}

#[test]
fn failures_in_kernels_name_the_site() {
    if !device() {
        return;
    }
    let v = vec![1.0f32, 2.0, 3.0];
    let k = 5usize;
    let r = std::panic::catch_unwind(|| {
        on_device(|| accelerate!(map(|x| x + v[k], &v))) // out of bounds
    });
    let message = *r
        .expect_err("the index is out of bounds")
        .downcast::<String>()
        .unwrap();
    assert_eq!(
        message,
        format!(
            "accelerate! at {}: index out of bounds: the len is 3 but the index is 5",
            site_of("// out of bounds")
        )
    );
    let zero = 0i32;
    let ints = vec![1i32, 2];
    let r = std::panic::catch_unwind(|| {
        on_device(|| accelerate!(reduce(|a, b| a + b, 0, map(|x| x / zero, &ints))))
        // by zero
    });
    let message = *r
        .expect_err("division by zero")
        .downcast::<String>()
        .unwrap();
    assert_eq!(
        message,
        format!(
            "accelerate! at {}: attempt to divide by zero",
            site_of("// by zero")
        )
    );
    let (bins, values) = (vec![0usize, 1, 2], vec![1i64; 2]);
    let r = std::panic::catch_unwind(|| {
        on_device(|| {
            accelerate!(reduce_by_index(
                vec![0i64; 4],
                |x, y| x + y,
                0,
                &bins,
                &values
            ))
        })
        // histogram lengths
    });
    let message = *r.expect_err("lengths differ").downcast::<String>().unwrap();
    assert_eq!(
        message,
        format!(
            "accelerate! at {}: reduce_by_index lengths differ: 3 indices vs 2 values",
            site_of("// histogram lengths")
        )
    );
}

#[test]
fn large_reductions_and_scans_cross_many_blocks() {
    if !device() {
        return;
    }
    // Sizes around block and chunk edges of the partial, carry and final kernels.
    for n in [
        0usize, 1, 31, 32, 33, 255, 256, 257, 2047, 2048, 2049, 10_000,
    ] {
        let xs: Vec<i64> = (0..n as i64).map(|x| x * 7 % 13 - 6).collect();
        let sum: i64 = on_device(|| accelerate!(reduce(|a, b| a + b, 0, &xs)));
        assert_eq!(sum, xs.iter().sum::<i64>(), "sum of {n}");
        let prefix: Vec<i64> = on_device(|| accelerate!(scan(|a, b| a + b, 0, &xs)));
        let expected: Vec<i64> = xs
            .iter()
            .scan(0, |s, x| {
                *s += x;
                Some(*s)
            })
            .collect();
        assert_eq!(prefix, expected, "scan of {n}");
        // Not commutative: the order of the elements must be kept.
        let last: (i64, i64) = on_device(|| {
            accelerate!(reduce(
                |a: (i64, i64), b: (i64, i64)| if b.0 >= 0 { b } else { a },
                (-1, 0),
                map(|x| (x, x * 2), &xs)
            ))
        });
        let expected = xs
            .iter()
            .rev()
            .find(|&&x| x >= 0)
            .map_or((-1, 0), |&x| (x, 2 * x));
        assert_eq!(last, expected, "last non-negative of {n}");
    }
}

#[test]
#[ignore = "run in a child process by the tests below, with its environment set"]
fn child_runs_a_site_on_the_device() {
    let v: Vec<f32> = (0..1000).map(|x| x as f32).collect();
    let s: f32 = accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x * 2.0, &v)));
    println!("child result {s}");
    if std::env::var("ACCEL_MODE").is_err() {
        // Assigning to a field between launches: not for the CUDA backend's host program
        // yet, so the CPU runs the site.
        let w = vec![1i64, 2, 3];
        let sum: (i64, i64) = accelerate!({
            let mut t = (reduce(|a, b| a + b, 0, &w), 0);
            t.1 = 4;
            t
        }); // host variable
        println!("child sum {sum:?}");
    }
    println!(
        "nvrtc calls {}",
        accel_runtime::cuda::NVRTC_CALLS.load(std::sync::atomic::Ordering::Relaxed)
    );
}

fn child(env: &[(&str, &str)]) -> (bool, String, String) {
    common::run_child("child_runs_a_site_on_the_device", env)
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("accel-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "[accel tests] SKIPPED: {why}");
}

#[test]
fn without_a_gpu_cuda_mode_is_a_clear_error_and_dump_still_writes_the_code() {
    if common::gpu_present() {
        return skip("the no-GPU error: this machine has a GPU");
    }
    let (dump, cache) = (temp_dir("dump"), temp_dir("dump-cache"));
    let (ok, _, err) = child(&[
        ("ACCEL_MODE", "cuda"),
        ("ACCEL_DUMP", dump.to_str().unwrap()),
        ("ACCEL_CACHE_DIR", cache.to_str().unwrap()),
    ]);
    assert!(!ok, "cuda mode without a GPU must fail");
    let site = site_of("child result");
    let cu: Vec<_> = std::fs::read_dir(&dump)
        .expect("ACCEL_DUMP made its folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert!(
        cu.iter().any(|p| p.extension().is_some_and(|x| x == "cu")),
        "a .cu file: {cu:?}"
    );
    let source =
        std::fs::read_to_string(cu.iter().find(|p| p.extension().unwrap() == "cu").unwrap())
            .unwrap();
    assert!(source.contains("extern \"C\" __global__"), "{source}");
    if accel_runtime::cuda::nvrtc::available() {
        assert!(
            cu.iter()
                .any(|p| p.to_string_lossy().ends_with(".compute_90.ptx")),
            "a .ptx file: {cu:?}"
        );
        assert!(
            err.contains(&format!(
                "accelerate! at {site}: ACCEL_MODE=cuda needs a GPU: no CUDA driver (libcuda.so) was found"
            )),
            "{err}"
        );
    } else {
        skip("the PTX half of ACCEL_DUMP: NVRTC is not installed here");
        assert!(
            err.contains(&format!(
                "accelerate! at {site}: its kernels are not in the embedded bundle (no bundle \
                 is embedded) and NVRTC is not available to compile them"
            )),
            "{err}"
        );
    }
    for d in [dump, cache] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_second_process_takes_ptx_from_the_disk_cache() {
    if !common::emulator_present() {
        return;
    }
    if !accel_runtime::cuda::nvrtc::available() {
        return skip("the disk cache of PTX: NVRTC is not installed here");
    }
    let cache = temp_dir("cache");
    let dump = temp_dir("cache-dump");
    // ACCEL_DUMP makes the emulator produce PTX too, through the cache.
    let env = [
        ("ACCEL_MODE", "cuda"),
        ("ACCEL_CUDA_EMULATOR", "1"),
        ("ACCEL_CACHE_DIR", cache.to_str().unwrap()),
        ("ACCEL_DUMP", dump.to_str().unwrap()),
    ];
    let (ok, first, err) = child(&env);
    assert!(ok, "{err}");
    assert!(first.contains("child result 999000"), "{first}");
    assert!(first.contains("nvrtc calls 1"), "{first}");
    let (ok, second, err) = child(&env);
    assert!(ok, "{err}");
    assert!(second.contains("child result 999000"), "{second}");
    assert!(second.contains("nvrtc calls 0"), "{second}");
    for d in [cache, dump] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn the_default_mode_uses_the_device_and_falls_back_to_the_cpu_with_a_log() {
    if !common::emulator_present() {
        return;
    }
    let (ok, out, err) = child(&[("ACCEL_CUDA_EMULATOR", "1"), ("ACCEL_LOG", "1")]);
    assert!(ok, "{err}");
    assert!(out.contains("child result 999000"), "{out}");
    let site = site_of("child result");
    assert!(
        err.contains(&format!("[accel] {site}: cuda: compiled in")),
        "{err}"
    );
    assert!(
        err.contains(&format!("[accel] {site}: cuda: ran in")),
        "{err}"
    );
    assert!(out.contains("child sum (6, 4)"), "{out}");
    let host = site_of("// host variable");
    assert!(
        err.contains(&format!(
            "[accel] warning: {host}: cuda: the cuda backend cannot compile assigning to a field or an element outside parallel operations yet; running on the CPU instead"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("[accel] {host}: cpu: compiled in")),
        "{err}"
    );
}

#[test]
fn without_a_gpu_the_default_mode_says_why_it_uses_the_cpu() {
    if common::gpu_present() {
        return skip("the no-GPU log: this machine has a GPU");
    }
    let (ok, out, err) = child(&[("ACCEL_LOG", "1")]);
    assert!(ok, "{err}");
    assert!(out.contains("child result 999000"), "{out}");
    assert!(
        err.contains("[accel] the CUDA backend is not used: no CUDA driver (libcuda.so) was found"),
        "{err}"
    );
    let site = site_of("child result");
    assert!(
        err.contains(&format!("[accel] {site}: cpu: compiled in")),
        "{err}"
    );
}

#[test]
fn host_code_reads_elements_back_and_sends_literals() {
    if !device() {
        return;
    }
    let xs: Vec<i32> = (1..=10).collect();
    let last: i32 = on_device(|| {
        accelerate!({
            let s = scan(|a, b| a + b, 0, &xs);
            s[s.len() - 1]
        })
    });
    assert_eq!(last, 55);
    let ys = vec![2.0f32; 3];
    let v: Vec<f32> = on_device(|| accelerate!(map2(|a, b| a * b, vec![1.5f32, 2.0, 3.0], &ys)));
    assert_eq!(v, vec![3.0, 4.0, 6.0]);
    let r = std::panic::catch_unwind(|| {
        on_device(|| {
            accelerate!({
                let s = scan(|a, b| a + b, 0, &xs);
                s[20] // read back
            })
        })
    });
    let message = *r.expect_err("out of bounds").downcast::<String>().unwrap();
    assert_eq!(
        message,
        format!(
            "accelerate! at {}: index out of bounds: the len is 10 but the index is 20",
            site_of("// read back")
        )
    );
}

#[test]
fn sequences_made_inside_elements_live_in_a_per_thread_arena() {
    if !device() {
        return;
    }
    // A sequence rebuilt at every step from the previous one, as the functional Viterbi
    // does, then reduced: per-thread arena memory, freed after each element.
    let xs: Vec<i64> = (0..300).collect();
    let got: Vec<i64> = on_device(|| {
        accelerate!(map(
            |x| {
                let mut row = create(4, |j| x + j as i64);
                for t in 0..3 {
                    row = create(4, |j| row[(j + 1) % 4] * 2 - t as i64);
                }
                reduce(|a, b| a.max(b), i64::MIN, &row)
            },
            &xs
        ))
    });
    let expected: Vec<i64> = xs
        .iter()
        .map(|&x| {
            let mut row: Vec<i64> = (0..4).map(|j| x + j).collect();
            for t in 0..3 {
                row = (0..4).map(|j| row[(j + 1) % 4] * 2 - t).collect();
            }
            *row.iter().max().unwrap()
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
#[allow(clippy::useless_vec)] // `vec!` is what is under test
fn vec_literals_inside_elements_live_in_the_arena_too() {
    // Through `agree`: debug, cpu and cuda compared, and the kernels compiled by NVRTC.
    let xs: Vec<i32> = (0..100).collect();
    let got: Vec<i32> = common::agree(|| {
        accelerate!(map(
            |x| {
                let pair = vec![x, x * 3];
                let fill = vec![x + 1; 3];
                pair[1] - pair[0] + fill[2] * fill.len() as i32
            },
            &xs
        ))
    });
    let expected: Vec<i32> = xs.iter().map(|&x| 2 * x + 3 * (x + 1)).collect();
    assert_eq!(got, expected);
}

/// `f` gives `expected` in every mode (debug, cpu, and cuda on the GPU or the emulator,
/// its kernels compiled by NVRTC): the cuda run must compile, not fall back.
fn everywhere<R: Accel + PartialEq + std::fmt::Debug>(expected: R, f: impl Fn() -> R) {
    assert_eq!(common::agree(&f), expected);
    if device() {
        assert_eq!(on_device(&f), expected);
    }
}

#[test]
fn reductions_and_scans_over_rows_keep_their_running_rows_on_the_device() {
    // Sizes around the chunks (the emulator runs 2 blocks of 32 threads; a GPU more).
    for n in [0usize, 1, 2, 3, 65, 1000, 5000] {
        let rows: Vec<Vec<i64>> = (0..n as i64).map(|i| vec![i, 1, -i * i]).collect();
        let sums = vec![
            rows.iter().map(|r| r[0]).sum::<i64>(),
            n as i64,
            rows.iter().map(|r| r[2]).sum::<i64>(),
        ];
        everywhere(sums, || {
            accelerate!(reduce(
                |a, b| map2(|x, y| x + y, a, b),
                vec![0i64; 3],
                &rows
            ))
        });
        let mut run = vec![0i64; 3];
        let prefixes: Vec<Vec<i64>> = rows
            .iter()
            .map(|r| {
                run = run.iter().zip(r).map(|(a, b)| a + b).collect();
                run.clone()
            })
            .collect();
        everywhere(prefixes, || {
            accelerate!(scan(|a, b| map2(|x, y| x + y, a, b), vec![0i64; 3], &rows))
        });
    }
}

#[accel]
fn matmul2(a: Vec<i64>, b: Vec<i64>) -> Vec<i64> {
    // 2x2 matrices, row-major, modulo a prime: associative, not commutative.
    create(4, |k| {
        let (i, j) = (k / 2, k % 2);
        (a[2 * i] * b[j] + a[2 * i + 1] * b[2 + j]) % 1_000_003
    })
}

#[test]
fn row_folds_keep_the_order_of_a_non_commutative_operator() {
    for n in [1usize, 7, 64, 65, 700, 3000] {
        let ms: Vec<Vec<i64>> = (0..n as i64)
            .map(|i| vec![1 + i % 5, i % 3, (i * 7) % 4, 1 + i % 2])
            .collect();
        let mul = |a: &[i64], b: &[i64]| -> Vec<i64> {
            (0..4)
                .map(|k| {
                    let (i, j) = (k / 2, k % 2);
                    (a[2 * i] * b[j] + a[2 * i + 1] * b[2 + j]) % 1_000_003
                })
                .collect()
        };
        let mut acc = vec![1i64, 0, 0, 1];
        let mut prefixes = Vec::new();
        for m in &ms {
            acc = mul(&acc, m);
            prefixes.push(acc.clone());
        }
        everywhere(acc, || {
            accelerate!(reduce(matmul2, vec![1i64, 0, 0, 1], &ms))
        });
        everywhere(prefixes, || {
            accelerate!(scan(matmul2, vec![1i64, 0, 0, 1], &ms))
        });
    }
}

#[test]
#[allow(clippy::useless_vec)] // `vec!` is what is under test
fn rows_that_are_values_vec_literals_and_nested_scans() {
    let n = 300usize;
    everywhere(
        (0..n).map(|i| vec![i, 2 * i, 3 * i]).collect::<Vec<_>>(),
        || accelerate!(create(n, |i| vec![i, 2 * i, 3 * i])),
    );
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    everywhere(xs.iter().map(|&x| vec![x, -x]).collect::<Vec<_>>(), || {
        accelerate!(map(|x| vec![x, -x], &xs))
    });
    let rows: Vec<Vec<i32>> = (0..n as i32).map(|i| vec![i, 1, 2, i % 7]).collect();
    let scanned: Vec<Vec<i32>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .scan(0, |s, x| {
                    *s += x;
                    Some(*s)
                })
                .collect()
        })
        .collect();
    everywhere(scanned, || {
        accelerate!(map(|row| scan(|a, b| a + b, 0, row), &rows))
    });
    // Irregular rows are an error in every mode; on the device it names the site.
    if device() {
        let msg = panic_message(|| drop(on_device(|| accelerate!(create(3, |i| vec![i; i])))));
        assert!(msg.contains("irregular"), "unexpected message: {msg}");
    }
}

#[test]
fn tensor_shapes_on_the_host_and_in_kernels() {
    let t = Tensor::<f64>::zeros(&[4, 5]);
    let run = |out: &Tensor<usize>| {
        accelerate!(parallel_loop(t.shape()[0] * t.shape()[1], |k| {
            let s = t.shape();
            out.set([k], s[0] * 100 + t.shape()[1] * 10 + s.len() + t.rank())
        }))
    };
    let expected = vec![454usize; 20];
    let out = Tensor::<usize>::zeros(&[20]);
    with_mode(Mode::Debug, || run(&out));
    assert_eq!(out.to_vec(), expected);
    if device() {
        let out = Tensor::<usize>::zeros(&[20]);
        on_device(|| run(&out));
        assert_eq!(out.to_vec(), expected);
    }
}

/// Integer diffusion on a line for `steps` steps, one site: a loop of launches between
/// which the data stays on the device, then its total.
fn diffuse(n: usize, steps: usize) -> (Vec<i64>, i64) {
    accelerate!({
        let mut x = create(n, |i| if i == n / 2 { 1 << 40 } else { 0i64 });
        let mut done = 0usize;
        while done < steps {
            x = create(n, |i| {
                let l = if i > 0 { x[i - 1] } else { x[i] };
                let r = if i + 1 < n { x[i + 1] } else { x[i] };
                (l + 2 * x[i] + r) / 4
            });
            done += 1;
        }
        let mut total = 0i64;
        for k in -1..1 {
            total += reduce(|a, b| a + b, 0, &x) * (k + 2);
        }
        (x, total)
    }) // diffusion
}

fn diffuse_reference(n: usize, steps: usize) -> (Vec<i64>, i64) {
    let mut x: Vec<i64> = (0..n)
        .map(|i| if i == n / 2 { 1 << 40 } else { 0 })
        .collect();
    for _ in 0..steps {
        x = (0..n)
            .map(|i| {
                let l = if i > 0 { x[i - 1] } else { x[i] };
                let r = if i + 1 < n { x[i + 1] } else { x[i] };
                (l + 2 * x[i] + r) / 4
            })
            .collect();
    }
    let total = 3 * x.iter().sum::<i64>();
    (x, total)
}

#[test]
fn loops_of_launches_keep_the_data_on_the_device() {
    for (n, steps) in [(1, 3), (100, 0), (300, 25)] {
        everywhere(diffuse_reference(n, steps), || diffuse(n, steps));
    }
}

#[test]
#[ignore = "run in a child process by the test below, with its environment set"]
fn child_runs_a_loop_of_launches() {
    let (x, _) = diffuse(4096, 40);
    assert_eq!(x, diffuse_reference(4096, 40).0);
}

#[test]
fn a_loop_of_launches_frees_what_no_variable_reaches() {
    if !device() {
        return;
    }
    let mut env = vec![("ACCEL_MODE", "cuda"), ("ACCEL_LOG", "1")];
    if !common::gpu_present() {
        env.push(("ACCEL_CUDA_EMULATOR", "1"));
    }
    let (ok, _, err) = common::run_child("child_runs_a_loop_of_launches", &env);
    assert!(ok, "{err}");
    let site = site_of("// diffusion");
    let line = err
        .lines()
        .find(|l| l.starts_with(&format!("[accel] {site}: cuda: ran in")))
        .unwrap_or_else(|| panic!("no run line in {err}"));
    let peak: usize = line
        .split("at most ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|b| b.parse().ok())
        .unwrap_or_else(|| panic!("no peak in {line}"));
    // One sequence is 32 KiB; 40 steps that kept every one would hold 1.3 MB.
    assert!(peak <= 4 * 32768, "{line}");
}

#[test]
fn few_long_segments_are_reduced_by_many_blocks() {
    // k-means' per-cluster sums: few segments (the emulator's threshold is 32; a GPU's
    // its thread count), each a reduction over all points; and many short segments.
    let n = 3000usize;
    let label: Vec<usize> = (0..n).map(|i| (i * 7) % 5).collect();
    let xs: Vec<i64> = (0..n as i64).map(|i| i * 3 - 100).collect();
    for k in [1usize, 5, 40] {
        let expected: Vec<(i64, u32)> = (0..k)
            .map(|c| {
                (0..n)
                    .filter(|&i| label[i] == c)
                    .fold((0, 0), |a, i| (a.0 + xs[i], a.1 + 1))
            })
            .collect();
        everywhere(expected, || {
            accelerate!(create(k, |c| reduce(
                |a, b| (a.0 + b.0, a.1 + b.1),
                (0i64, 0u32),
                create(label.len(), |i| if label[i] == c {
                    (xs[i], 1)
                } else {
                    (0, 0)
                })
            )))
        });
        // Order kept: the last element of each segment that is a multiple of its index.
        let expected: Vec<i64> = (0..k)
            .map(|c| {
                (0..n as i64)
                    .rfind(|&i| i % (c as i64 + 2) == 0)
                    .unwrap_or(-1)
            })
            .collect();
        everywhere(expected, || {
            accelerate!(create(k, |c| {
                let step = c as i64 + 2;
                reduce(
                    |a, b| if b >= 0 { b } else { a },
                    -1i64,
                    create(n, |i| if i as i64 % step == 0 { i as i64 } else { -1 }),
                )
            }))
        });
    }
}

/// Sequences a `map` or `map2` makes inside an element that fusion cannot fold into a
/// consumer (bound by a `let` nothing reads: still computed, since it may fail) are built
/// in the thread's arena; `map2`'s length check there fails as on the CPU, naming the site.
/// (Found by accel-fuzz: "the cuda backend cannot compile a `map` that makes a sequence
/// inside a parallel operation".) Rows made there are below.
#[test]
fn maps_made_inside_elements() {
    if !device() {
        return;
    }
    let xs: Vec<i64> = (0..37).map(|i| (i * 7919) % 101 - 50).collect();
    let ys: Vec<i64> = (0..13).map(|i| (i * 31) % 17 - 8).collect();
    let zs: Vec<i64> = (0..13).map(|i| (i * 13) % 7).collect();
    let got = on_device(|| {
        accelerate!(map(
            |x| {
                reduce(
                    |a, b| a + b,
                    0,
                    map(|y| y + x, {
                        let _squares = map(|y| y * x, &ys);
                        let _sums = map2(|y, z| y + z, &ys, &zs);
                        map(|y| y - 1, &ys)
                    }),
                )
            },
            &xs
        ))
    });
    let want: Vec<i64> = xs
        .iter()
        .map(|x| ys.iter().map(|y| y - 1 + x).sum::<i64>())
        .collect();
    assert_eq!(got, want);
    let short = zs[..5].to_vec();
    let err = on_device(|| {
        try_accelerate!(map(
            |x| {
                reduce(
                    |a, b| a + b,
                    x,
                    map(|y| y + 1, {
                        let _pairs = map2(|y, z| y * z, &ys, &short); // [short map2]
                        map(|y| y - 1, &ys)
                    }),
                )
            },
            &xs
        ))
    })
    .unwrap_err();
    assert_eq!(err.kind(), accel_runtime::ErrorKind::LengthMismatch);
    assert_eq!(err.site(), site_of("[short map2]"));
    assert_eq!(
        err.to_string(),
        format!(
            "accelerate! at {}: map2 lengths differ: 13 vs 5",
            site_of("[short map2]")
        )
    );
}

/// Sequences of rows made inside an element (a `create` of `create`s, a `map` over rows in
/// a loop) are built in the thread's arena once row 0 fixes the row length; an irregular
/// one fails as on the CPU. (Found by accel-fuzz: "a sequence of [u32] made inside a
/// parallel operation".)
#[test]
fn rows_made_inside_elements() {
    if !device() {
        return;
    }
    let xs: Vec<i64> = (0..37).map(|i| (i * 7919) % 101 - 50).collect();
    let got = on_device(|| {
        accelerate!(map(
            |x| {
                let rows = create(4, |i| create(3, |k| x * i as i64 + k as i64));
                let _unused = create(2, |i| create(5, |k| i + k));
                reduce(
                    |a, b| a + b,
                    0,
                    map(|r: Vec<i64>| reduce(|a, b| a + b, 0, &r), &rows),
                ) + rows[3][2]
            },
            &xs
        ))
    });
    assert_eq!(got, xs.iter().map(|x| 21 * x + 14).collect::<Vec<i64>>());
    let got = on_device(|| {
        accelerate!(map(
            |x| {
                let mut rows = create(4, |i| create(3, |k| x * i as i64 + k as i64));
                for _ in 0..2 {
                    rows = map(|r: Vec<i64>| map(|v| v * 2, &r), &rows);
                }
                rows[3][2] + rows.len() as i64
            },
            &xs
        ))
    });
    assert_eq!(got, xs.iter().map(|x| 12 * x + 12).collect::<Vec<i64>>());
    let err = on_device(|| {
        try_accelerate!(map(
            |x| {
                let rows = create(4, |i| create(i, |k| x + k as i64)); // [irregular rows]
                rows.len() as i64
            },
            &xs
        ))
    })
    .unwrap_err();
    assert_eq!(err.kind(), accel_runtime::ErrorKind::Irregular);
    assert_eq!(
        err.to_string(),
        format!(
            "accelerate! at {}: a produced sequence of sequences is irregular: row 0 has 0 \
             elements, another row 1",
            site_of("[irregular rows]")
        )
    );
}
