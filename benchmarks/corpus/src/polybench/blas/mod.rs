//! PolyBench's BLAS-like kernels: gemm, gemver, gesummv, symm, syr2k, syrk, trmm.

mod gemm;

use crate::{boxed, Entry, Group};

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "gemm",
            group: Group::PolyBench,
            make: |s| boxed(gemm::Gemm::new(s)),
        },
        Entry {
            name: "sgemm-1024",
            group: Group::PolyBench,
            make: |s| boxed(gemm::Sgemm::new(s)),
        },
    ]
}
