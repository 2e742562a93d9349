//! The Mandelbrot set on a 2048x2048 view of [-2, 1) x [-1, 1): per pixel, the number of
//! iterations (at most 256) until the orbit escapes, in `f64`, with the classic suite's
//! `accel_examples::classic::escape_time` (uneven work per pixel). The sequential form
//! maps the pixels in a loop, the rayon form fills rows with `par_chunks_mut`, the accel
//! form is `create` over the pixels. The test size is 37x23.

use crate::check::exact;
use crate::{Program, Scale};
use accel_examples::classic::escape_time;
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Mandelbrot {
    width: usize,
    height: usize,
}

impl Mandelbrot {
    pub fn new(scale: Scale) -> Mandelbrot {
        let (width, height) = scale.pick((37, 23), (2048, 2048));
        Mandelbrot { width, height }
    }
}

impl Program for Mandelbrot {
    type Output = Vec<u32>;

    fn size(&self) -> String {
        format!("{}x{}", self.width, self.height)
    }

    fn sequential(&self) -> Vec<u32> {
        (0..self.width * self.height)
            .map(|k| escape_time(k, self.width, self.height))
            .collect()
    }

    fn rayon(&self) -> Vec<u32> {
        let mut out = vec![0; self.width * self.height];
        out.par_chunks_mut(self.width)
            .enumerate()
            .for_each(|(y, row)| {
                for (x, o) in row.iter_mut().enumerate() {
                    *o = escape_time(y * self.width + x, self.width, self.height);
                }
            });
        out
    }

    fn accel(&self) -> Vec<u32> {
        let (width, height) = (self.width, self.height);
        accelerate!(create(width * height, |k| escape_time(k, width, height)))
    }

    fn check(&self, got: &Vec<u32>, want: &Vec<u32>) -> Result<(), String> {
        exact(got, want)
    }
}
