//! Image and text basics: blur, histogram equalisation, byte and word counting, prefix
//! sums, run-length encoding.

mod blur;
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
            name: "word-count",
            group: Group::Basics,
            make: |s| boxed(word_count::WordCount::new(s)),
        },
    ]
}
