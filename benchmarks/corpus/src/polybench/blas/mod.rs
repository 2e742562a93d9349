//! PolyBench's BLAS-like kernels: gemm, gemver, gesummv, symm, syr2k, syrk, trmm.

mod gemm;
mod gemver;
mod gesummv;
mod symm;
mod syr2k;
mod syrk;
mod trmm;

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
        Entry {
            name: "gemver",
            group: Group::PolyBench,
            make: |s| boxed(gemver::Gemver::new(s)),
        },
        Entry {
            name: "gesummv",
            group: Group::PolyBench,
            make: |s| boxed(gesummv::Gesummv::new(s)),
        },
        Entry {
            name: "symm",
            group: Group::PolyBench,
            make: |s| boxed(symm::Symm::new(s)),
        },
        Entry {
            name: "syr2k",
            group: Group::PolyBench,
            make: |s| boxed(syr2k::Syr2k::new(s)),
        },
        Entry {
            name: "syrk",
            group: Group::PolyBench,
            make: |s| boxed(syrk::Syrk::new(s)),
        },
        Entry {
            name: "trmm",
            group: Group::PolyBench,
            make: |s| boxed(trmm::Trmm::new(s)),
        },
    ]
}
