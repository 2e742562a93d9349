//! PolyBench's stencils: adi, fdtd-2d, heat-3d, jacobi-1d, jacobi-2d, seidel-2d.

use crate::Entry;

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![]
}
