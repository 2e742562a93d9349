//! PolyBench's linear-algebra kernels: 2mm, 3mm, atax, bicg, doitgen, mvt.

mod atax;
mod bicg;
mod doitgen;
mod mvt;
mod three_mm;
mod two_mm;

use crate::{boxed, Entry, Group};

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "2mm",
            group: Group::PolyBench,
            make: |s| boxed(two_mm::TwoMm::new(s)),
        },
        Entry {
            name: "3mm",
            group: Group::PolyBench,
            make: |s| boxed(three_mm::ThreeMm::new(s)),
        },
        Entry {
            name: "atax",
            group: Group::PolyBench,
            make: |s| boxed(atax::Atax::new(s)),
        },
        Entry {
            name: "bicg",
            group: Group::PolyBench,
            make: |s| boxed(bicg::Bicg::new(s)),
        },
        Entry {
            name: "doitgen",
            group: Group::PolyBench,
            make: |s| boxed(doitgen::Doitgen::new(s)),
        },
        Entry {
            name: "mvt",
            group: Group::PolyBench,
            make: |s| boxed(mvt::Mvt::new(s)),
        },
    ]
}
