//! Image and text basics: blur, histogram equalisation, grey levels, byte and word
//! counting, prefix sums, run-length encoding; and what users parallelise first: Collatz
//! orbits, counting primes, a Monte Carlo estimate, k-means' assignment step.

mod blur;
mod byte_count;
mod collatz;
mod grayscale;
mod histogram_equalisation;
mod kmeans;
mod monte_carlo_pi;
mod prefix_sum;
mod primes;
mod rle;
mod word_count;

use crate::{boxed, Entry, Group};

/// The basics.
pub fn programs() -> Vec<Entry> {
    vec![
        Entry {
            name: "blur",
            group: Group::Basics,
            make: |s| boxed(blur::Blur::new(s)),
        },
        Entry {
            name: "histogram-equalisation",
            group: Group::Basics,
            make: |s| boxed(histogram_equalisation::HistogramEqualisation::new(s)),
        },
        Entry {
            name: "byte-count",
            group: Group::Basics,
            make: |s| boxed(byte_count::ByteCount::new(s)),
        },
        Entry {
            name: "word-count",
            group: Group::Basics,
            make: |s| boxed(word_count::WordCount::new(s)),
        },
        Entry {
            name: "prefix-sum",
            group: Group::Basics,
            make: |s| boxed(prefix_sum::PrefixSum::new(s)),
        },
        Entry {
            name: "rle",
            group: Group::Basics,
            make: |s| boxed(rle::Rle::new(s)),
        },
        Entry {
            name: "grayscale",
            group: Group::Basics,
            make: |s| boxed(grayscale::Grayscale::new(s)),
        },
        Entry {
            name: "collatz",
            group: Group::Basics,
            make: |s| boxed(collatz::Collatz::new(s)),
        },
        Entry {
            name: "primes",
            group: Group::Basics,
            make: |s| boxed(primes::Primes::new(s)),
        },
        Entry {
            name: "monte-carlo-pi",
            group: Group::Basics,
            make: |s| boxed(monte_carlo_pi::MonteCarloPi::new(s)),
        },
        Entry {
            name: "kmeans",
            group: Group::Basics,
            make: |s| boxed(kmeans::Kmeans::new(s)),
        },
    ]
}
