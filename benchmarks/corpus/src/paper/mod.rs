//! The Accelerate paper's benchmark table (Black-Scholes, dot, Mandelbrot, N-body, SMVM,
//! radix sort, Canny, fluid), each as a user would write it.

mod radix_sort;
mod smvm;

use crate::{boxed, Entry, Group};

/// The paper's programs.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "smvm",
            group: Group::Paper,
            make: |s| boxed(smvm::Smvm::new(s)),
        },
        Entry {
            name: "radix-sort",
            group: Group::Paper,
            make: |s| boxed(radix_sort::RadixSort::new(s)),
        },
    ]
}
