//! The queue devices take a site's parts from: each worker (a device) takes the next part
//! when it is free, so a device twice as fast runs twice as many parts, and a slow one
//! holds the site up by at most one part (a fixed even split waits for the slowest
//! device's half: 1.5x the balanced time for two devices whose speeds differ by 2x).
//!
//! How much a worker takes follows the paces measured so far in the run (chunks per
//! second of the parts each worker finished): at most half of its share of what is left
//! (the share a worker of its pace would run if all finished together), and nothing once
//! the others would run all that is left, with what they are running, before it ran one
//! more chunk. A GPU beside the CPU cores thus takes large parts, and the CPU no last part
//! that the GPU would have finished sooner (split across an H100 and 16 cores, a
//! Mandelbrot of fixed-size parts ran at 2.6x the GPU's time alone). Which worker runs a
//! chunk never moves a chunk's boundaries.

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

/// What the queue knows of one worker.
#[derive(Clone, Copy, Default)]
struct Pace {
    /// Its finished parts: how many, and the sums of their chunks `k`, times `t`, `k * k`
    /// and `k * t` (a line `t = fixed + k * per_chunk` is fitted to them).
    parts: f64,
    k: f64,
    t: f64,
    kk: f64,
    kt: f64,
    /// The part it is running: when it began, and its chunks.
    running: Option<(Instant, usize)>,
    /// It takes no more parts (the others finish sooner without it).
    stopped: bool,
}

impl Pace {
    fn finished(&mut self, chunks: usize, took: Duration) {
        let (k, t) = (chunks as f64, took.as_secs_f64());
        self.parts += 1.0;
        self.k += k;
        self.t += t;
        self.kk += k * k;
        self.kt += k * t;
        self.running = None;
    }

    /// Seconds a part costs whatever its size, and seconds a chunk, once a part finished:
    /// fitted to its parts of different sizes (a GPU's first small parts are mostly its
    /// launch and wait), else its time a chunk.
    fn model(&self) -> Option<(f64, f64)> {
        if self.parts == 0.0 {
            return None;
        }
        let n = self.parts;
        let (mean_k, mean_t) = (self.k / n, self.t / n);
        let variance = self.kk / n - mean_k * mean_k;
        let average = (0.0, self.t / self.k.max(1.0));
        if variance < 1e-6 {
            return Some(average);
        }
        let per_chunk = (self.kt / n - mean_k * mean_t) / variance;
        let fixed = mean_t - per_chunk * mean_k;
        Some(match per_chunk > 0.0 && fixed >= 0.0 {
            true => (fixed, per_chunk),
            false => average,
        })
    }

    /// Chunks its running part still has to run, at `per_chunk` seconds a chunk.
    fn outstanding(&self, per_chunk: f64, now: Instant) -> f64 {
        self.running.map_or(0.0, |(began, chunks)| {
            let ran = now.duration_since(began).as_secs_f64() / per_chunk.max(1e-12);
            (chunks as f64 - ran).max(0.0)
        })
    }
}

/// The next chunk and every worker's pace.
struct Queue {
    next: usize,
    paces: Vec<Pace>,
}

impl Queue {
    /// How many chunks worker `w`, wanting `want`, takes of the `rest` left: none once the
    /// others (each with a measured pace, so none still on its first part) would run
    /// `rest` and what their running parts have left before it ran one chunk; else `want`,
    /// but at most half of its share of `rest` by the paces (a worker without one counted
    /// as fast as the fastest; all of `rest` for the last worker taking parts), and at
    /// least one.
    fn amount(&self, w: usize, want: usize, rest: usize, now: Instant) -> usize {
        let active = || self.paces.iter().enumerate().filter(|(_, p)| !p.stopped);
        // Alone, a worker takes what it wants: no one else would take the rest.
        if active().all(|(v, _)| v == w) {
            return want.clamp(1, rest);
        }
        let Some((fixed, per_chunk)) = self.paces[w].model() else {
            let workers = active().count().max(1);
            return want.min(rest.div_ceil(2 * workers)).max(1);
        };
        let (mut pace, mut work, mut their_fixed) = (0.0, rest as f64, f64::MAX);
        let mut all_known = true;
        for (_, p) in active().filter(|&(v, _)| v != w) {
            match p.model() {
                Some((a, b)) => {
                    pace += 1.0 / b.max(1e-12);
                    work += p.outstanding(b, now);
                    their_fixed = their_fixed.min(a);
                }
                // Running its first part: its pace is not known yet.
                None if p.running.is_some() => all_known = false,
                None => {}
            }
        }
        if all_known && pace > 0.0 && fixed + per_chunk > their_fixed + work / pace {
            return 0;
        }
        let rate = |p: &Pace| p.model().map(|(_, b)| 1.0 / b.max(1e-12));
        let mine = 1.0 / per_chunk.max(1e-12);
        let fastest = active().filter_map(|(_, p)| rate(p)).fold(mine, f64::max);
        let total: f64 = active().map(|(_, p)| rate(p).unwrap_or(fastest)).sum();
        let share = (rest as f64 * mine / (2.0 * total)) as usize;
        want.min(share).max(1)
    }
}

/// Most workers besides the caller's thread that run at once: four GPUs of four lanes
/// each and the CPU have one thread each.
const DEVICE_THREADS: usize = 4 * 4 + 1;

/// The threads devices' workers run on, made once: a call of a split site hands its
/// workers to them instead of starting a thread for each (some tens of microseconds a
/// call), and a trace shows each device's parts on the same threads call after call.
fn device_threads() -> Result<&'static rayon::ThreadPool, String> {
    static THREADS: std::sync::OnceLock<Result<rayon::ThreadPool, String>> =
        std::sync::OnceLock::new();
    THREADS
        .get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(DEVICE_THREADS)
                .thread_name(|k| format!("accel device {}", k + 1))
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs chunks `0..count` on `workers` workers: worker 0 (which runs chunk 0) on this
/// thread, each other one on a thread of the devices' (see [`device_threads`]; more
/// workers than those threads wait for one), which runs its loop inside `on_thread`
/// (for what a thread must inherit from the caller's, such as the emulator standing in
/// for the GPU). `part(w, chunks)` runs a part of consecutive chunks on worker `w`. With
/// `grow`, a worker whose part ran shorter than [`GROW_BELOW`] takes twice as many chunks
/// next time, within what its pace allows (the results must then not depend on where
/// parts begin: concatenations, not float reductions). After a part for which `failed`
/// holds, no later part starts (earlier ones still run, so the first failure in index
/// order is known).
pub fn run<R: Send>(
    count: usize,
    workers: usize,
    grow: bool,
    part: &(dyn Fn(usize, Range<usize>) -> R + Sync),
    failed: &(dyn Fn(&R) -> bool + Sync),
    on_thread: &(dyn Fn(&dyn Fn()) + Sync),
) -> Done<R> {
    let first_failure = AtomicUsize::new(usize::MAX);
    let parts: Mutex<Vec<(Range<usize>, R)>> = Mutex::new(Vec::new());
    // Workers past the chunks get no thread (see below): none of their pace to wait for.
    let paces = (0..workers)
        .map(|w| Pace {
            stopped: w > 0 && w >= count,
            ..Pace::default()
        })
        .collect();
    let queue = Mutex::new(Queue { next: 0, paces });
    let lock = || queue.lock().unwrap_or_else(|e| e.into_inner());
    // Runs a part; returns how long it took.
    let run_part = |w: usize, chunks: Range<usize>| {
        let start = Instant::now();
        let r = part(w, chunks.clone());
        let took = start.elapsed();
        if failed(&r) {
            first_failure.fetch_min(chunks.start, Ordering::Relaxed);
        }
        lock().paces[w].finished(chunks.len(), took);
        parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((chunks, r));
        took
    };
    // The next chunks for worker `w`, wanting `want` (see `Queue::amount`).
    let take = |w: usize, want: usize| {
        let mut q = lock();
        let at = q.next;
        if at >= count || at > first_failure.load(Ordering::Relaxed) {
            return None;
        }
        let now = Instant::now();
        let amount = q.amount(w, want, count - at, now);
        if amount == 0 {
            q.paces[w].stopped = true;
            return None;
        }
        q.next = at + amount;
        q.paces[w].running = Some((now, amount));
        Some(at..at + amount)
    };
    // A worker's loop, from `first` (the first worker's first chunk) or the queue.
    let work = |w: usize, first: Option<Range<usize>>| {
        let mut want = 1;
        let mut chunks = first.or_else(|| take(w, want));
        while let Some(c) = chunks {
            let took = run_part(w, c);
            if grow && took < GROW_BELOW {
                want *= 2;
            }
            chunks = take(w, want);
        }
    };
    // The first worker (the first device listed) starts with the first chunk, whoever
    // starts first.
    let first = take(0, 1);
    // Threads only help when there are parts for them.
    let helpers = workers.min(count).saturating_sub(1);
    match device_threads() {
        Ok(threads) => threads.in_place_scope(|s| {
            for w in 1..=helpers {
                let work = &work;
                s.spawn(move |_| on_thread(&|| work(w, None)));
            }
            work(0, first);
        }),
        Err(e) => {
            // Without threads the other devices take no parts; the first takes them all.
            for pace in lock().paces.iter_mut().skip(1) {
                pace.stopped = true;
            }
            crate::backend::log::warning!(
                "no threads for the other devices: {e}; the first device runs every part"
            );
            work(0, first);
        }
    }
    let mut parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
    parts.sort_by_key(|(chunks, _)| chunks.start);
    let paces = queue.into_inner().unwrap_or_else(|e| e.into_inner()).paces;
    Done {
        parts,
        taken: paces.iter().map(|p| p.k as usize).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

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

    /// Two workers, the second twice as slow (sleeping, so the machine's load barely
    /// matters): the queue finishes within 10% of the balanced time, where an even split
    /// takes 1.5x; the best of three runs counts.
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

    /// The time `run` takes over `count` chunks on workers whose parts cost `cost(w,
    /// chunks)` (slept, so the machine's load barely matters), with growth: the best of
    /// three runs, and the parts of the last.
    fn timed(
        count: usize,
        workers: usize,
        cost: &(dyn Fn(usize, Range<usize>) -> Duration + Sync),
    ) -> (Duration, Vec<(Range<usize>, usize)>) {
        let mut best = Duration::MAX;
        let mut parts = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            let done = run(
                count,
                workers,
                true,
                &|w, c| {
                    std::thread::sleep(cost(w, c));
                    w
                },
                &|_| false,
                &|f| f(),
            );
            best = best.min(start.elapsed());
            parts = done.parts;
        }
        let mut at = 0;
        for (chunks, _) in &parts {
            assert_eq!(chunks.start, at, "{parts:?}");
            at = chunks.end;
        }
        assert_eq!(at, count);
        (best, parts)
    }

    /// A GPU beside the CPU's cores, shaped as an H100 and 16 cores ran a split
    /// Mandelbrot: the GPU's part costs a fixed 0.8 ms (launch, wait, copies' set-up) and
    /// 0.25 ms a chunk (copying its pixels back); the CPU's chunks cost 0.25-1.75 ms, the
    /// rows in the middle the most. Together they finish sooner than the GPU alone (the
    /// queue of fixed-size parts took 2.6x its time on the H100), within 20% of the
    /// time the two paces allow.
    #[test]
    fn a_gpu_and_the_cpu_finish_sooner_than_the_gpu_alone() {
        let count = 64;
        let weight = |c: usize| {
            let s = (std::f64::consts::PI * (c as f64 + 0.5) / count as f64).sin();
            0.25 + 1.5 * s * s
        };
        let cost = |w: usize, c: Range<usize>| {
            Duration::from_secs_f64(match w {
                0 => 0.8e-3 + 0.25e-3 * c.len() as f64,
                _ => 1e-3 * c.map(weight).sum::<f64>(),
            })
        };
        let (gpu, _) = timed(count, 1, &cost);
        let (both, parts) = timed(count, 2, &cost);
        // The work at the two paces with the GPU's parts as large as they grow (8
        // chunks, 2.8 ms): 64 chunks at 8 / 2.8 ms + 1 / ms.
        let ideal = Duration::from_secs_f64(count as f64 / (8.0 / 2.8e-3 + 1e3));
        let (vs_gpu, vs_ideal) = (
            both.as_secs_f64() / gpu.as_secs_f64(),
            both.as_secs_f64() / ideal.as_secs_f64(),
        );
        assert!(
            vs_gpu < 0.8 && vs_ideal < 1.15,
            "GPU and CPU {both:?}: {vs_gpu:.2}x the GPU alone, {vs_ideal:.2}x the ideal; {parts:?}"
        );
    }

    /// A CPU twenty times slower than the GPU takes no part that the GPU would finish
    /// sooner: the two finish within 12% of the time the paces allow (1.06x measured; the
    /// queue that capped parts at an even share of the rest, whatever the paces: 1.25x).
    #[test]
    fn a_much_slower_device_takes_no_last_part() {
        let count = 64;
        let cost = |w: usize, c: Range<usize>| {
            Duration::from_secs_f64(match w {
                0 => 0.2e-3 + 0.4e-3 * c.len() as f64,
                _ => 8e-3 * c.len() as f64,
            })
        };
        let (both, parts) = timed(count, 2, &cost);
        // 64 chunks at 8 / 3.4 ms (the GPU's parts grow to 8 chunks) + 1 / 8 ms.
        let ideal = Duration::from_secs_f64(count as f64 / (8.0 / 3.4e-3 + 0.125e3));
        let vs_ideal = both.as_secs_f64() / ideal.as_secs_f64();
        assert!(
            vs_ideal < 1.12,
            "{both:?}: {vs_ideal:.2}x the ideal {ideal:?}; {parts:?}"
        );
    }

    /// The same where copies make the GPU the slower device (a split Black-Scholes): the
    /// two finish sooner than the CPU alone, and the GPU takes no last part that the CPU
    /// would have finished first.
    #[test]
    fn a_slower_gpu_still_helps_the_cpu() {
        let count = 64;
        let cost = |w: usize, c: Range<usize>| {
            Duration::from_secs_f64(match w {
                0 => 1e-3 * c.len() as f64,
                _ => 0.5e-3 + 1.6e-3 * c.len() as f64,
            })
        };
        let (cpu, _) = timed(count, 1, &cost);
        let (both, parts) = timed(count, 2, &cost);
        let vs_cpu = both.as_secs_f64() / cpu.as_secs_f64();
        assert!(
            vs_cpu < 0.8,
            "CPU and GPU {both:?}: {vs_cpu:.2}x the CPU alone; {parts:?}"
        );
    }

    /// Call after call, the other devices' workers run on the same few threads (a
    /// thread started per worker and call has an id never used before).
    #[test]
    fn workers_run_on_threads_kept_from_call_to_call() {
        let threads = Mutex::new(std::collections::HashSet::new());
        for _ in 0..50 {
            run(
                4,
                3,
                false,
                &|w, _| {
                    if w > 0 {
                        threads.lock().unwrap().insert(std::thread::current().id());
                    } else {
                        // The first worker slow, so that the others take parts even on
                        // a machine too busy to wake them at once (with instant parts
                        // the first took every chunk of every call there).
                        std::thread::sleep(Duration::from_millis(1));
                    }
                },
                &|_| false,
                &|f| f(),
            );
        }
        let used = threads.into_inner().unwrap().len();
        assert!((1..=DEVICE_THREADS).contains(&used), "{used} threads");
    }

    #[test]
    fn without_growth_every_part_is_one_chunk() {
        let done = run(50, 3, false, &|_, c| c.len(), &|_| false, &|f| f());
        assert_eq!(done.parts.len(), 50);
        assert!(done.parts.iter().all(|(c, len)| c.len() == 1 && *len == 1));
    }
}
