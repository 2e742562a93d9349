//! LLVM's code kept on disk: a second process loads the object code the first compiled
//! instead of compiling it again (at its first call under `ACCEL_TIER=llvm`, and under
//! the adaptive policy without waiting for the site to get hot); an entry altered on disk
//! or a directory open to others is never used, and the code is then compiled again.
//! Each process is a child of the test with its own cache directory.

use accel_runtime::__private::{
    cpu_llvm_tier_ups, llvm_compiles_and_loads_from_disk, wait_for_cpu_tier_ups,
};
use accel_runtime::prelude::*;

mod common;

/// The site the children run: LLVM compiles it, or loads it from disk.
#[accel]
fn smoothed(xs: &[f64]) -> Vec<f64> {
    let n = xs.len();
    create(n, |i| {
        let l = xs[if i == 0 { 0 } else { i - 1 }];
        let r = xs[if i + 1 == n { i } else { i + 1 }];
        0.25 * l + 0.5 * xs[i] + 0.25 * r
    })
}

/// The one site of the children.
fn site(xs: &[f64]) -> Vec<f64> {
    accelerate!(smoothed(xs))
}

fn inputs() -> Vec<f64> {
    common::values(5000, 7)
}

/// The child: runs the site (checked against debug mode), lets the background finish,
/// runs it again, and prints how many modules LLVM compiled and loaded from disk and how
/// many sites got LLVM's code in the background.
#[test]
#[ignore = "run by the tests below in child processes"]
fn child_runs_the_site() {
    let xs = inputs();
    let want = with_mode(Mode::Debug, || site(&xs));
    let first = with_mode(Mode::Cpu, || site(&xs));
    // Long enough for the adaptive policy to look in the disk cache (after 2 ms of the
    // site's run time), short of the site getting hot (50 times its quick compile, which
    // takes 20 ms or more in this debug build).
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(40) {
        assert_eq!(with_mode(Mode::Cpu, || site(&xs)), first);
    }
    wait_for_cpu_tier_ups();
    let again = with_mode(Mode::Cpu, || site(&xs));
    assert_eq!(first, want);
    assert_eq!(again, want);
    let (compiles, from_disk) = llvm_compiles_and_loads_from_disk();
    let maps = std::fs::read_to_string("/proc/self/maps").expect("the process's mappings");
    println!(
        "counts: compiles={compiles} from_disk={from_disk} background={} library={}",
        cpu_llvm_tier_ups(),
        u8::from(maps.contains("libLLVM"))
    );
}

/// The child's counts: (LLVM compiles, loads from disk, sites given LLVM's code in the
/// background).
fn child(dir: &std::path::Path, tier: &str) -> (usize, usize, usize) {
    let (counts, _, _) = child_saying(dir, tier);
    counts
}

/// [`child`]'s counts, whether it loaded LLVM's library, and what it wrote to stderr.
fn child_saying(dir: &std::path::Path, tier: &str) -> ((usize, usize, usize), bool, String) {
    let dir = dir.to_string_lossy().into_owned();
    // One thread: a site whose calls leave other threads of the pool idle gets hot after
    // a few milliseconds (`tiers::ALONE_LLVM_AFTER_MS`), and this one must not.
    let env = [
        ("ACCEL_CACHE_DIR", dir.as_str()),
        ("ACCEL_TIER", tier),
        ("ACCEL_NUM_THREADS", "1"),
    ];
    let (ok, out, err) = common::run_child("child_runs_the_site", &env);
    assert!(ok, "the child failed:\n{out}\n{err}");
    let line = out
        .lines()
        .find_map(|l| Some(&l[l.find("counts: ")? + "counts: ".len()..]))
        .unwrap_or_else(|| panic!("the child printed no counts:\n{out}\n{err}"));
    let count = |name: &str| -> usize {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in `{line}`"))
    };
    let counts = (count("compiles"), count("from_disk"), count("background"));
    (counts, count("library") == 1, err)
}

fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("accel-llvm-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The entries of the LLVM code's directory.
fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("cpu-llvm"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_second_process_loads_llvms_code_from_disk() {
    if !common::llvm_present() {
        return;
    }
    let dir = fresh_dir("second");
    assert_eq!(child(&dir, "llvm"), (1, 0, 0), "the first process compiles");
    assert_eq!(
        entries(&dir).len(),
        2,
        "and keeps the code and what LLVM compiles with here"
    );
    assert_eq!(child(&dir, "llvm"), (0, 1, 0), "the second loads it");
    // Under the adaptive policy, the site's first calls run Cranelift's code, and once
    // it has run 2 ms the background finds LLVM's code, though the site is not hot, and
    // without loading LLVM's library (a short process exiting while it loads crashes).
    let (counts, library, err) = child_saying(&dir, "adaptive");
    assert_eq!(counts, (0, 1, 1), "{err}");
    assert!(!library, "the look loaded LLVM's library");
    // Without the record of what LLVM compiles with here, there is no look.
    for entry in entries(&dir) {
        let bytes = std::fs::read(&entry).expect("an entry");
        if bytes.windows(7).any(|w| w == b"libLLVM") {
            std::fs::remove_file(&entry).expect("the record removed");
        }
    }
    assert_eq!(entries(&dir).len(), 1, "the code alone is left");
    let (counts, library, err) = child_saying(&dir, "adaptive");
    assert_eq!((counts, library), ((0, 0, 0), false), "{err}");
    // Cranelift's tiers alone never look.
    assert_eq!(child(&dir, "cranelift"), (0, 0, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_altered_entry_is_compiled_again() {
    if !common::llvm_present() {
        return;
    }
    let dir = fresh_dir("altered");
    assert_eq!(child(&dir, "llvm"), (1, 0, 0));
    for entry in entries(&dir) {
        let mut bytes = std::fs::read(&entry).expect("an entry");
        let at = bytes.len() / 2;
        bytes[at] ^= 0x40;
        std::fs::write(&entry, bytes).expect("written back");
    }
    assert_eq!(
        child(&dir, "llvm"),
        (1, 0, 0),
        "the altered code is not run"
    );
    assert_eq!(
        child(&dir, "llvm"),
        (0, 1, 0),
        "the entry written again is used"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_open_to_others_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    if !common::llvm_present() {
        return;
    }
    let dir = fresh_dir("open");
    std::fs::create_dir_all(dir.join("cpu-llvm")).expect("made");
    let open = std::fs::Permissions::from_mode(0o777);
    std::fs::set_permissions(dir.join("cpu-llvm"), open).expect("opened");
    let (counts, _, said) = child_saying(&dir, "llvm");
    assert_eq!(counts, (1, 0, 0));
    assert!(
        said.contains("LLVM's code is not cached on disk")
            && said.contains("is open to other users (mode 777"),
        "the child did not say why: {said}"
    );
    assert!(entries(&dir).is_empty(), "nothing is written there");
    assert_eq!(child(&dir, "llvm"), (1, 0, 0), "nor read");
    let _ = std::fs::remove_dir_all(&dir);
}
