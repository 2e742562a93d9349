//! PolyBench's linear-algebra solvers: cholesky, durbin, gramschmidt, lu, ludcmp, trisolv.

mod cholesky;
mod durbin;
mod gramschmidt;
mod lu;
mod ludcmp;
mod trisolv;

use crate::{boxed, Entry, Group};

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "cholesky",
            group: Group::PolyBench,
            make: |s| boxed(cholesky::Cholesky::new(s)),
        },
        Entry {
            name: "durbin",
            group: Group::PolyBench,
            make: |s| boxed(durbin::Durbin::new(s)),
        },
        Entry {
            name: "gramschmidt",
            group: Group::PolyBench,
            make: |s| boxed(gramschmidt::Gramschmidt::new(s)),
        },
        Entry {
            name: "lu",
            group: Group::PolyBench,
            make: |s| boxed(lu::Lu::new(s)),
        },
        Entry {
            name: "ludcmp",
            group: Group::PolyBench,
            make: |s| boxed(ludcmp::Ludcmp::new(s)),
        },
        Entry {
            name: "trisolv",
            group: Group::PolyBench,
            make: |s| boxed(trisolv::Trisolv::new(s)),
        },
    ]
}
