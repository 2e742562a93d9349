//! PolyBench's stencils: adi, fdtd-2d, heat-3d, jacobi-1d, jacobi-2d, seidel-2d.

mod adi;
mod fdtd_2d;
mod heat_3d;
mod jacobi_1d;
mod jacobi_2d;
mod seidel_2d;

use crate::{boxed, Entry, Group};

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "adi",
            group: Group::PolyBench,
            make: |s| boxed(adi::Adi::new(s)),
        },
        Entry {
            name: "fdtd-2d",
            group: Group::PolyBench,
            make: |s| boxed(fdtd_2d::Fdtd2d::new(s)),
        },
        Entry {
            name: "heat-3d",
            group: Group::PolyBench,
            make: |s| boxed(heat_3d::Heat3d::new(s)),
        },
        Entry {
            name: "jacobi-1d",
            group: Group::PolyBench,
            make: |s| boxed(jacobi_1d::Jacobi1d::new(s)),
        },
        Entry {
            name: "jacobi-2d",
            group: Group::PolyBench,
            make: |s| boxed(jacobi_2d::Jacobi2d::new(s)),
        },
        Entry {
            name: "seidel-2d",
            group: Group::PolyBench,
            make: |s| boxed(seidel_2d::Seidel2d::new(s)),
        },
    ]
}
