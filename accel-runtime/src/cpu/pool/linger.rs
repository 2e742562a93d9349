//! Helpers that stay awake a while: a helper that has run its launch's chunks waits up to
//! [`LINGER`] for the next launch before going back to the pool, as OpenMP's threads spin
//! for a while (its `blocktime`) after a parallel region.
//!
//! A site called in a loop (a stencil's time steps, a factorisation's pivots) launches
//! every few hundred microseconds; a pool thread that went to sleep in between takes tens
//! to a hundred microseconds to wake on the next launch (measured here: 60-130 µs, on a
//! launch of 1 ms), all of it time the launch runs on one core. A lingering helper joins
//! the next launch at once: the launcher publishes each launch, and a helper that sees a
//! new one takes one of its seats (never more helpers than the pool has threads beside
//! the launcher). Only launches from outside every pool are published, so a site called
//! inside a user's pool still runs on that pool's threads alone.

use super::Launch;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a helper waits for the next launch.
const LINGER: Duration = Duration::from_micros(500);

/// The latest launch from outside every pool, and how many launches were published.
static LATEST: Mutex<Option<Arc<Launch>>> = Mutex::new(None);
static PUBLISHED: AtomicU64 = AtomicU64::new(0);

/// Offers `launch` to the helpers lingering.
pub(super) fn publish(launch: &Arc<Launch>) {
    *LATEST.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(launch));
    PUBLISHED.fetch_add(1, Ordering::Release);
}

/// A helper's work: `launch`'s chunks (when a seat is left), then, for a published
/// launch, those of the launches published while it lingers.
pub(super) fn help(mut launch: Arc<Launch>) {
    let mut seen = PUBLISHED.load(Ordering::Acquire);
    loop {
        if launch.take_seat() {
            launch.help();
        }
        if !launch.shared {
            return;
        }
        match next_launch(&mut seen, LINGER) {
            Some(next) => launch = next,
            None => return,
        }
    }
}

/// Waits up to `linger` for a launch published after the `seen`-th; `None` when none
/// came.
fn next_launch(seen: &mut u64, linger: Duration) -> Option<Arc<Launch>> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        let now = PUBLISHED.load(Ordering::Acquire);
        if now != *seen {
            *seen = now;
            let latest = LATEST.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if latest.is_some() {
                return latest;
            }
        }
        spins += 1;
        if spins.is_multiple_of(64) {
            if start.elapsed() >= linger {
                return None;
            }
            // Another thread that wants this core gets it.
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::pool::RunCtx;
    use std::sync::atomic::{AtomicU32, AtomicUsize};

    /// A kernel that counts the indices of its chunks into the counter at `env`.
    extern "C" fn count(env: *const u64, lo: u64, hi: u64, _: *mut u64, _: *const RunCtx) -> u32 {
        // SAFETY: the tests pass the address of an `AtomicU64` that outlives the launch.
        let counter = unsafe { &*(env as *const AtomicU64) };
        counter.fetch_add(hi - lo, Ordering::Relaxed);
        0
    }

    fn launch(counter: &AtomicU64, seats: u64, shared: bool) -> Arc<Launch> {
        Arc::new(Launch {
            kernel: count,
            env: counter as *const AtomicU64 as u64,
            n: 100,
            size: 16,
            chunks: 7,
            partials: 0,
            partial_words: 0,
            ctx: 0,
            ends: AtomicU64::new(7 << 32),
            failed: AtomicU64::new(u64::MAX),
            done: AtomicU64::new(0),
            helpers_ran: AtomicUsize::new(0),
            status: AtomicU32::new(0),
            launcher: std::thread::current(),
            seats: AtomicU64::new(seats),
            shared,
        })
    }

    #[test]
    fn a_launch_takes_no_more_helpers_than_its_seats() {
        let counter = AtomicU64::new(0);
        let l = launch(&counter, 2, false);
        assert!(l.take_seat());
        assert!(l.take_seat());
        assert!(!l.take_seat());
        // A helper without a seat runs nothing; an unshared launch's helper leaves.
        help(Arc::clone(&l));
        assert_eq!(counter.load(Ordering::Relaxed), 0);
        let counter = AtomicU64::new(0);
        help(launch(&counter, 1, false));
        assert_eq!(counter.load(Ordering::Relaxed), 100, "every index ran once");
    }

    #[test]
    fn a_lingering_helper_finds_the_next_launch_published() {
        let counter = AtomicU64::new(0);
        let l = launch(&counter, 1, true);
        let mut seen = PUBLISHED.load(Ordering::Acquire);
        let waiting = std::thread::spawn(move || next_launch(&mut seen, Duration::from_secs(30)));
        publish(&l);
        let found = waiting.join().expect("the helper returns");
        // Other tests publish too: the launch found is the latest, this one or a later.
        assert!(found.is_some(), "a launch published while waiting is found");
        let mut seen = PUBLISHED.load(Ordering::Acquire);
        assert!(
            next_launch(&mut seen, Duration::from_millis(1)).is_none()
                || PUBLISHED.load(Ordering::Acquire) != seen,
            "none is found when none was published"
        );
    }
}
