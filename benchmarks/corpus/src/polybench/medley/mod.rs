//! PolyBench's medley: deriche, floyd-warshall, nussinov.

mod deriche;
mod floyd_warshall;
mod nussinov;

use crate::{boxed, Entry, Group};

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "deriche",
            group: Group::PolyBench,
            make: |s| boxed(deriche::Deriche::new(s)),
        },
        Entry {
            name: "floyd-warshall",
            group: Group::PolyBench,
            make: |s| boxed(floyd_warshall::FloydWarshall::new(s)),
        },
        Entry {
            name: "nussinov",
            group: Group::PolyBench,
            make: |s| boxed(nussinov::Nussinov::new(s)),
        },
    ]
}
