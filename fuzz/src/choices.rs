//! The random choices a program is generated from, recorded so that a program can be
//! regenerated from them and reduced by simplifying them (the approach of Hypothesis'
//! "internal reduction"): every choice's option 0 is the simplest, and a choice past the end
//! of a replayed sequence is 0, so shortening the sequence or lowering a value gives a
//! smaller program that is still well-typed by construction.

/// A source of choices: random (recording what it drew) or replaying recorded ones.
#[derive(Clone, Debug)]
pub struct Choices {
    values: Vec<u32>,
    pos: usize,
    rng: Option<u64>,
}

impl Choices {
    /// Fresh random choices from `seed`.
    pub fn random(seed: u64) -> Choices {
        Choices {
            values: Vec::new(),
            pos: 0,
            rng: Some(seed ^ 0x5851_f42d_4c95_7f2d),
        }
    }

    /// Replays `values`; past their end every choice is 0.
    pub fn replay(values: Vec<u32>) -> Choices {
        Choices {
            values,
            pos: 0,
            rng: None,
        }
    }

    /// The choices made so far (all of them, once generation is over).
    pub fn values(&self) -> &[u32] {
        &self.values[..self.pos.min(self.values.len())]
    }

    /// A choice in `0..n` (`n >= 1`).
    pub fn below(&mut self, n: usize) -> usize {
        let n = n.max(1);
        let value = match (self.values.get(self.pos), &mut self.rng) {
            (Some(&v), _) => v,
            (None, Some(state)) => {
                let v = (splitmix(state) >> 32) as u32;
                self.values.push(v);
                v
            }
            (None, None) => 0,
        };
        self.pos += 1;
        value as usize % n
    }

    /// True with probability `percent`%, false when reduced to 0.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) >= 100 - percent.min(100)
    }

    /// One of `options`, the first being the simplest.
    pub fn pick<T: Clone>(&mut self, options: &[T]) -> T {
        options[self.below(options.len())].clone()
    }
}

/// SplitMix64: a small, well-mixed generator (Steele, Lea, Flood 2014).
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaying_recorded_choices_repeats_them_and_past_the_end_gives_zero() {
        let mut random = Choices::random(7);
        let drawn: Vec<usize> = (0..20).map(|_| random.below(1000)).collect();
        let mut again = Choices::replay(random.values().to_vec());
        assert_eq!(
            (0..20).map(|_| again.below(1000)).collect::<Vec<_>>(),
            drawn
        );
        assert_eq!(again.below(5), 0);
        assert!(!again.chance(99));
        let mut other = Choices::random(8);
        assert_ne!(
            (0..20).map(|_| other.below(1000)).collect::<Vec<_>>(),
            drawn
        );
    }
}
