//! Thread-local settings that hold for the duration of a call (`with_mode`, the CUDA
//! emulator, kernel checks).

use std::cell::Cell;

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
