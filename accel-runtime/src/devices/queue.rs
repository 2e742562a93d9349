//! The queue devices take a site's parts from: each worker (a device) takes the next part
//! when it is free, so a device twice as fast runs twice as many parts, and a slow one
//! holds the site up by at most one part (a fixed even split waits for the slowest
//! device's half: 1.5x the balanced time for two devices whose speeds differ by 2x).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the workers made of chunks `0..count`: each part run (its chunks and result), in
/// index order, and how many chunks each worker ran. Chunks no part covers were not run
/// (only after a failure).
pub struct Done<R> {
    pub parts: Vec<(Range<usize>, R)>,
    pub taken: Vec<usize>,
}

/// A part that runs shorter than this makes its worker take twice as many chunks next
/// time (where the site allows it): a GPU's part costs a launch, a wait and small copies
/// besides its work, about half of a 262,144-element Mandelbrot part on an H100.
const GROW_BELOW: Duration = Duration::from_millis(2);

/// Runs chunks `0..count` on `workers` workers: worker 0 (which runs chunk 0) on this
/// thread, each other one on a thread of its own, which runs its loop inside `on_thread`
/// (for what a thread must inherit from the caller's, such as the emulator standing in
/// for the GPU). `part(w, chunks)` runs a part of consecutive chunks on worker `w`. With
/// `grow`, a worker whose part ran shorter than [`GROW_BELOW`] takes twice as many chunks
/// next time, but never more than its share of what is left (the results must then not
/// depend on where parts begin: concatenations, not float reductions). After a part for
/// which `failed` holds, no later part starts (earlier ones still run, so the first
/// failure in index order is known).
pub fn run<R: Send>(
    count: usize,
    workers: usize,
    grow: bool,
    part: &(dyn Fn(usize, Range<usize>) -> R + Sync),
    failed: &(dyn Fn(&R) -> bool + Sync),
    on_thread: &(dyn Fn(&dyn Fn()) + Sync),
) -> Done<R> {
    let next = AtomicUsize::new(0);
    let first_failure = AtomicUsize::new(usize::MAX);
    let parts: Mutex<Vec<(Range<usize>, R)>> = Mutex::new(Vec::new());
    let taken: Vec<AtomicUsize> = (0..workers).map(|_| AtomicUsize::new(0)).collect();
    // Runs a part; returns how long it took.
    let run_part = |w: usize, chunks: Range<usize>| {
        let start = Instant::now();
        let r = part(w, chunks.clone());
        let took = start.elapsed();
        if failed(&r) {
            first_failure.fetch_min(chunks.start, Ordering::Relaxed);
        }
        taken[w].fetch_add(chunks.len(), Ordering::Relaxed);
        parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((chunks, r));
        took
    };
    // The next `want` chunks (fewer at the end, at most a worker's share of the rest).
    let take = |want: usize| {
        let mut at = next.load(Ordering::Relaxed);
        loop {
            if at >= count || at > first_failure.load(Ordering::Relaxed) {
                return None;
            }
            let share = (count - at).div_ceil(2 * workers).max(1);
            let end = at + want.min(share);
            match next.compare_exchange_weak(at, end, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(at..end),
                Err(now) => at = now,
            }
        }
    };
    // A worker's loop, from `first` (the first worker's first chunk) or the queue.
    let work = |w: usize, first: Option<Range<usize>>| {
        let mut want = 1;
        let mut chunks = first.or_else(|| take(want));
        while let Some(c) = chunks {
            let took = run_part(w, c);
            if grow && took < GROW_BELOW {
                want *= 2;
            }
            chunks = take(want);
        }
    };
    // The first worker (the first device listed) starts with the first chunk, whoever
    // starts first.
    let first = take(1);
    std::thread::scope(|s| {
        // Threads only help when there are parts for them.
        for w in 1..workers.min(count) {
            let work = &work;
            let spawned = std::thread::Builder::new()
                .name(format!("accel device {w}"))
                .spawn_scoped(s, move || on_thread(&|| work(w, None)));
            // Without its thread a device takes no parts; the others take them all.
            if let Err(e) = spawned {
                crate::backend::log::warning!(
                    "no thread for device {w}: {e}; the others run its parts"
                );
            }
        }
        work(0, first);
    });
    let mut parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
    parts.sort_by_key(|(chunks, _)| chunks.start);
    Done {
        parts,
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
                false,
                &|w, chunks| {
                    let t = Instant::now();
                    std::thread::sleep(cost(w));
                    let c = chunks.start;
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
            assert_eq!(
                done.parts,
                (0..count).map(|c| (c..c + 1, c)).collect::<Vec<_>>()
            );
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
        let done = run(100, 2, false, &|_, c| c.start, &|c| *c == 10, &|f| f());
        for c in 0..=10 {
            assert_eq!(done.parts[c], (c..c + 1, c));
        }
        // A part taken before the failure was recorded may still run; not many.
        let after = done.parts.len() - 11;
        assert!(after <= 1, "{after} parts after the failure ran");
    }

    /// A device whose parts cost a fixed 200 us besides 5 us per chunk (a GPU's launch and
    /// wait) takes more chunks at a time as it sees its parts run short, never more than
    /// its share of what is left; a device whose one chunk takes longer than the threshold
    /// keeps taking one; every chunk runs once, in parts of consecutive chunks.
    #[test]
    fn a_device_with_a_fixed_cost_per_part_takes_more_chunks_at_a_time() {
        let count = 400;
        let done = run(
            count,
            2,
            true,
            &|w, chunks| {
                let (fixed, per_chunk) = if w == 0 { (200, 5) } else { (0, 2500) };
                std::thread::sleep(Duration::from_micros(
                    fixed + per_chunk * chunks.len() as u64,
                ));
                (w, chunks.len())
            },
            &|_| false,
            &|f| f(),
        );
        let mut at = 0;
        for (chunks, _) in &done.parts {
            assert_eq!(chunks.start, at, "{:?}", done.parts);
            at = chunks.end;
        }
        assert_eq!(at, count);
        let largest = |worker| {
            done.parts
                .iter()
                .filter(|(_, (w, _))| *w == worker)
                .map(|(_, (_, len))| *len)
                .max()
                .unwrap_or(0)
        };
        // The fast device's parts grow while they run shorter than 2 ms; the slow one's
        // (2.5 ms a chunk) do not.
        assert!(largest(0) >= 16, "{:?}", done.parts);
        assert!(largest(1) <= 1, "{:?}", done.parts);
        assert!(done.parts.len() < count / 4, "{} parts", done.parts.len());
        assert_eq!(done.taken.iter().sum::<usize>(), count);
    }

    #[test]
    fn without_growth_every_part_is_one_chunk() {
        let done = run(50, 3, false, &|_, c| c.len(), &|_| false, &|f| f());
        assert_eq!(done.parts.len(), 50);
        assert!(done.parts.iter().all(|(c, len)| c.len() == 1 && *len == 1));
    }
}
