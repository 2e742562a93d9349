//! PolyBench's data mining: correlation, covariance.

use crate::Entry;

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![]
}
