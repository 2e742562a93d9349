//! Thread-local settings that hold for the duration of a call (`with_mode`, the CUDA
//! emulator, kernel checks, the devices' parts).

use std::cell::Cell;
#[cfg(feature = "cuda")]
use std::cell::RefCell;

/// Runs `f` with the thread-local `cell` set to `value`, restoring the old value after it
/// (also when `f` panics).
pub fn with_cell<T: Copy + 'static, R>(
    cell: &'static std::thread::LocalKey<Cell<T>>,
    value: T,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore<T: Copy + 'static>(&'static std::thread::LocalKey<Cell<T>>, T);
    impl<T: Copy + 'static> Drop for Restore<T> {
        fn drop(&mut self) {
            self.0.with(|c| c.set(self.1));
        }
    }
    let _restore = Restore(cell, cell.with(|c| c.replace(value)));
    f()
}

/// Runs `f` with the thread-local `cell` holding `value`, putting the old value back after
/// it (also when `f` panics); the value `f` leaves there is dropped then, on this thread.
/// (The CUDA backend's settings for a split site's parts are its users.)
#[cfg(feature = "cuda")]
pub fn with_ref_cell<T: 'static, R>(
    cell: &'static std::thread::LocalKey<RefCell<T>>,
    value: T,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore<T: 'static>(&'static std::thread::LocalKey<RefCell<T>>, Option<T>);
    impl<T: 'static> Drop for Restore<T> {
        fn drop(&mut self) {
            if let Some(before) = self.1.take() {
                let _left = self.0.with(|c| c.replace(before));
            }
        }
    }
    let _restore = Restore(cell, Some(cell.with(|c| c.replace(value))));
    f()
}
