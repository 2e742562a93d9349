//! PolyBench's linear-algebra solvers: cholesky, durbin, gramschmidt, lu, ludcmp, trisolv.

use crate::Entry;

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![]
}
