//! Grey levels of an RGB image, 4096x4096 pixels of three bytes each, as a user writes a
//! per-pixel conversion: `par_chunks(3)` over the bytes, a weighted sum of the pixel's
//! channels (`0.299 r + 0.587 g + 0.114 b` in `f32`) cast back to a byte. The three forms
//! are the same chain (`chunks`, `par_chunks`, and inside `accelerate!`). The test size
//! is 1001 pixels.

use crate::check::exact;
use crate::random::bits;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Grayscale {
    rgb: Vec<u8>,
}

impl Grayscale {
    pub fn new(scale: Scale) -> Grayscale {
        let pixels = scale.pick(1001, 4096 * 4096);
        let rgb = (0..3 * pixels as u64).map(|i| bits(640, i) as u8).collect();
        Grayscale { rgb }
    }
}

fn grey(px: &[u8]) -> u8 {
    (0.299 * px[0] as f32 + 0.587 * px[1] as f32 + 0.114 * px[2] as f32) as u8
}

impl Program for Grayscale {
    type Output = Vec<u8>;

    fn size(&self) -> String {
        format!("{} pixels", self.rgb.len() / 3)
    }

    fn sequential(&self) -> Vec<u8> {
        self.rgb.chunks(3).map(grey).collect()
    }

    fn rayon(&self) -> Vec<u8> {
        self.rgb.par_chunks(3).map(grey).collect()
    }

    fn accel(&self) -> Vec<u8> {
        let rgb = &self.rgb;
        accelerate!(rgb
            .par_chunks(3)
            .map(|px| (0.299 * px[0] as f32 + 0.587 * px[1] as f32 + 0.114 * px[2] as f32) as u8)
            .collect())
    }

    fn check(&self, got: &Vec<u8>, want: &Vec<u8>) -> Result<(), String> {
        exact(got, want)
    }
}
