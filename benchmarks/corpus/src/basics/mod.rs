//! Image and text basics: blur, histogram equalisation, byte and word counting, prefix
//! sums, run-length encoding.

mod blur;
mod byte_count;
mod histogram_equalisation;
mod prefix_sum;
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
    ]
}
