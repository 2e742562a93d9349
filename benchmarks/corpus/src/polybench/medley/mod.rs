//! PolyBench's medley: deriche, floyd-warshall, nussinov.

use crate::Entry;

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![]
}
