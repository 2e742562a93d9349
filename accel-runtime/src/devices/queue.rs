//! The queue devices take a site's parts from: each worker (a device) takes the next part
//! when it is free, so a device twice as fast runs twice as many parts, and a slow one
//! holds the site up by at most one part (a fixed even split waits for the slowest
//! device's half: 1.5x the balanced time for two devices whose speeds differ by 2x).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What the workers made of parts `0..count`, by part (`None`: not run, only after a
/// failure), and how many parts each worker ran.
pub struct Done<R> {
    pub results: Vec<Option<R>>,
    pub taken: Vec<usize>,
}

/// Runs parts `0..count` on `workers` workers: worker 0 (which runs part 0) on this
/// thread, each other one on a thread of its own, which runs its loop inside `on_thread`
/// (for what a thread must inherit from the caller's, such as the emulator standing in
/// for the GPU). `part(w, c)`
/// runs part `c` on worker `w`; after a part for which `failed` holds, no later part
/// starts (earlier ones still run, so the first failure in index order is known).
pub fn run<R: Send>(
    count: usize,
    workers: usize,
    part: &(dyn Fn(usize, usize) -> R + Sync),
    failed: &(dyn Fn(&R) -> bool + Sync),
    on_thread: &(dyn Fn(&dyn Fn()) + Sync),
) -> Done<R> {
    let next = AtomicUsize::new(0);
    let first_failure = AtomicUsize::new(usize::MAX);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..count).map(|_| None).collect());
    let taken: Vec<AtomicUsize> = (0..workers).map(|_| AtomicUsize::new(0)).collect();
    let run_part = |w: usize, c: usize| {
        let r = part(w, c);
        if failed(&r) {
            first_failure.fetch_min(c, Ordering::Relaxed);
        }
        taken[w].fetch_add(1, Ordering::Relaxed);
        results.lock().unwrap_or_else(|e| e.into_inner())[c] = Some(r);
    };
    let work = |w: usize| loop {
        let c = next.fetch_add(1, Ordering::Relaxed);
        if c >= count || c > first_failure.load(Ordering::Relaxed) {
            break;
        }
        run_part(w, c);
    };
    // The first worker (the first device listed) starts with the first part, whoever
    // starts first.
    let first = next.fetch_add(1, Ordering::Relaxed);
    std::thread::scope(|s| {
        // Threads only help when there are parts for them.
        for w in 1..workers.min(count) {
            let work = &work;
            let spawned = std::thread::Builder::new()
                .name(format!("accel device {w}"))
                .spawn_scoped(s, move || on_thread(&|| work(w)));
            // Without its thread a device takes no parts; the others take them all.
            if let Err(e) = spawned {
                crate::backend::log::warning!(
                    "no thread for device {w}: {e}; the others run its parts"
                );
            }
        }
        if first < count {
            run_part(0, first);
        }
        work(0);
    });
    Done {
        results: results.into_inner().unwrap_or_else(|e| e.into_inner()),
        taken: taken.into_iter().map(AtomicUsize::into_inner).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Two workers, the second twice as slow (sleeping, so the machine's load barely
    /// matters): the queue finishes within 10% of the balanced time, where an even split
    /// takes 1.5x; the best of three runs counts.
    /// A part's span on a lane of the timeline: (lane, part, start, end) in microseconds.
    type Span = (String, usize, f64, f64);

    /// `ACCEL_BALANCE_TRACE=FILE`: the test's last queue run and its even split as trace
    /// events, the timeline in the guide (`scripts/trace-timeline.py` draws it).
    fn write_trace(spans: &[Span]) {
        let Some(path) = std::env::var_os("ACCEL_BALANCE_TRACE") else {
            return;
        };
        let events: Vec<serde_json::Value> = spans
            .iter()
            .map(|(lane, c, start, end)| {
                serde_json::json!({
                    "name": format!("part {c} on {lane}"), "cat": "part", "ph": "X",
                    "pid": 1, "tid": 1, "ts": start, "dur": end - start,
                    "args": { "device": lane, "lo": c * 1000, "hi": (c + 1) * 1000 },
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&events).expect("events serialize");
        std::fs::write(path, text).expect("the trace file is written");
    }

    #[test]
    fn a_device_twice_as_slow_takes_half_as_many_parts() {
        let (count, fast) = (30, Duration::from_millis(10));
        let cost = |w: usize| if w == 0 { fast } else { 2 * fast };
        let lane = |w: usize| if w == 0 { "fast" } else { "slow (2x)" };
        // 30 parts at 1/10 + 1/20 parts a millisecond.
        let balanced = fast * 20;
        let mut best = Duration::MAX;
        let spans = Mutex::new(Vec::<Span>::new());
        for _ in 0..3 {
            spans.lock().unwrap().clear();
            let start = Instant::now();
            let at = |t: Instant| t.duration_since(start).as_secs_f64() * 1e6;
            let done = run(
                count,
                2,
                &|w, c| {
                    let t = Instant::now();
                    std::thread::sleep(cost(w));
                    spans
                        .lock()
                        .unwrap()
                        .push((lane(w).into(), c, at(t), at(Instant::now())));
                    c
                },
                &|_| false,
                &|f| f(),
            );
            best = best.min(start.elapsed());
            assert_eq!(done.results, (0..count).map(Some).collect::<Vec<_>>());
            assert!((19..=21).contains(&done.taken[0]), "{:?}", done.taken);
            assert_eq!(done.taken.iter().sum::<usize>(), count);
        }
        let even = {
            let start = Instant::now();
            let at = |t: Instant| t.duration_since(start).as_secs_f64() * 1e6;
            let spans = &spans;
            std::thread::scope(|s| {
                for w in 0..2 {
                    s.spawn(move || {
                        for k in 0..count / 2 {
                            let t = Instant::now();
                            std::thread::sleep(cost(w));
                            let lane = format!("even split: {}", lane(w));
                            let c = w * count / 2 + k;
                            spans
                                .lock()
                                .unwrap()
                                .push((lane, c, at(t), at(Instant::now())));
                        }
                    });
                }
            });
            start.elapsed()
        };
        write_trace(&spans.into_inner().unwrap());
        let (ratio, even_ratio) = (
            best.as_secs_f64() / balanced.as_secs_f64(),
            even.as_secs_f64() / balanced.as_secs_f64(),
        );
        assert!(ratio < 1.1, "the queue took {ratio:.2}x the balanced time");
        assert!(even_ratio > 1.4, "an even split took {even_ratio:.2}x");
    }

    #[test]
    fn after_a_failure_no_later_part_starts_and_every_earlier_one_runs() {
        let done = run(100, 2, &|_, c| c, &|c| *c == 10, &|f| f());
        for c in 0..=10 {
            assert_eq!(done.results[c], Some(c));
        }
        // A part taken before the failure was recorded may still run; not many.
        let after = done.results[11..].iter().filter(|r| r.is_some()).count();
        assert!(after <= 1, "{after} parts after the failure ran");
    }
}
