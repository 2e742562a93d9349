//! Counting the words of at least eight letters in a text: random lowercase words of 1 to
//! 12 letters separated by one to three spaces, as bytes (`u8`) in all three forms.

use crate::check::same;
use crate::random::bits;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

/// The shortest word counted.
pub const LONG: usize = 8;

pub struct WordCount {
    text: Vec<u8>,
}

/// Whether `c` is a letter.
#[allow(clippy::manual_range_contains)]
#[accel]
pub fn is_letter(c: u8) -> bool {
    c >= b'a' && c <= b'z'
}

/// Whether a word of at least `LONG` letters starts at `i`.
#[accel]
pub fn long_word_at(text: &[u8], i: usize) -> bool {
    if !is_letter(text[i]) || (i > 0 && is_letter(text[i - 1])) {
        false
    } else {
        let mut k = 1;
        while k < 8 && i + k < text.len() && is_letter(text[i + k]) {
            k += 1;
        }
        k == 8
    }
}

impl WordCount {
    pub fn new(scale: Scale) -> WordCount {
        let n = scale.pick(5000, 1 << 26);
        let mut text = Vec::with_capacity(n + 16);
        let mut i = 0u64;
        while text.len() < n {
            let r = bits(301, i);
            i += 1;
            let letters = 1 + (r % 12) as usize;
            for k in 0..letters {
                text.push(b'a' + ((r >> (8 + 4 * k)) % 26) as u8);
            }
            text.extend(std::iter::repeat_n(b' ', 1 + (r >> 60) as usize % 3));
        }
        text.truncate(n);
        WordCount { text }
    }
}

impl Program for WordCount {
    type Output = usize;

    fn size(&self) -> String {
        format!("{} characters", self.text.len())
    }

    fn sequential(&self) -> usize {
        self.text
            .split(|&c| !is_letter(c))
            .filter(|w| w.len() >= LONG)
            .count()
    }

    fn rayon(&self) -> usize {
        self.text
            .par_split(|&c| !is_letter(c))
            .filter(|w| w.len() >= LONG)
            .count()
    }

    fn accel(&self) -> usize {
        let text = &self.text;
        accelerate!((0..text.len())
            .into_par_iter()
            .filter(|i| long_word_at(text, *i))
            .count())
    }

    fn check(&self, got: &usize, want: &usize) -> Result<(), String> {
        same(got, want)
    }
}
