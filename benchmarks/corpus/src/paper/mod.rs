//! The Accelerate paper's benchmark table (Black-Scholes, dot, Mandelbrot, N-body, SMVM,
//! radix sort, Canny, fluid), each as a user would write it.

mod black_scholes;
mod canny;
mod dot;
mod fluid;
mod mandelbrot;
mod n_body;
mod radix_sort;
mod smvm;

use crate::{boxed, Entry, Group};

/// The paper's programs.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "black-scholes",
            group: Group::Paper,
            make: |s| boxed(black_scholes::BlackScholes::new(s)),
        },
        Entry {
            name: "dot",
            group: Group::Paper,
            make: |s| boxed(dot::Dot::new(s)),
        },
        Entry {
            name: "mandelbrot",
            group: Group::Paper,
            make: |s| boxed(mandelbrot::Mandelbrot::new(s)),
        },
        Entry {
            name: "n-body",
            group: Group::Paper,
            make: |s| boxed(n_body::NBody::new(s)),
        },
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
        Entry {
            name: "canny",
            group: Group::Paper,
            make: |s| boxed(canny::Canny::new(s)),
        },
        Entry {
            name: "fluid",
            group: Group::Paper,
            make: |s| boxed(fluid::Fluid::new(s)),
        },
    ]
}
