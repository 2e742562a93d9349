//! PolyBench's linear-algebra kernels: 2mm, 3mm, atax, bicg, doitgen, mvt.

use crate::Entry;

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![]
}
