//! PolyBench's data mining: correlation, covariance.

mod correlation;
mod covariance;

use crate::{boxed, Entry, Group};

/// The programs of this part.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "correlation",
            group: Group::PolyBench,
            make: |s| boxed(correlation::Correlation::new(s)),
        },
        Entry {
            name: "covariance",
            group: Group::PolyBench,
            make: |s| boxed(covariance::Covariance::new(s)),
        },
    ]
}
