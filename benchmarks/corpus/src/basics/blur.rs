//! A 3x3 box blur of a grey `f32` image with clamped borders (a pixel outside the image
//! reads the nearest edge pixel).

use crate::check::close;
use crate::random::uniform;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Blur {
    image: Vec<f32>,
    width: usize,
    height: usize,
}

/// The pixel at `(x, y)`, clamped into the image.
#[accel]
pub fn clamped(image: &[f32], width: usize, height: usize, x: i64, y: i64) -> f32 {
    let cx = x.clamp(0, width as i64 - 1) as usize;
    let cy = y.clamp(0, height as i64 - 1) as usize;
    image[cy * width + cx]
}

/// The mean of the 3x3 neighbourhood of pixel `p`.
#[accel]
pub fn box3(image: &[f32], width: usize, height: usize, p: usize) -> f32 {
    let x = (p % width) as i64;
    let y = (p / width) as i64;
    let mut sum = 0.0f32;
    for dy in -1..2i64 {
        for dx in -1..2i64 {
            sum += clamped(image, width, height, x + dx, y + dy);
        }
    }
    sum / 9.0
}

impl Blur {
    pub fn new(scale: Scale) -> Blur {
        let (width, height) = scale.pick((37, 23), (4096, 4096));
        Blur {
            image: uniform(width * height, 201, 0.0, 1.0),
            width,
            height,
        }
    }
}

impl Program for Blur {
    type Output = Vec<f32>;

    fn size(&self) -> String {
        format!("{}x{}", self.width, self.height)
    }

    fn sequential(&self) -> Vec<f32> {
        (0..self.width * self.height)
            .map(|p| box3(&self.image, self.width, self.height, p))
            .collect()
    }

    fn rayon(&self) -> Vec<f32> {
        let mut out = vec![0.0; self.width * self.height];
        out.par_chunks_mut(self.width)
            .enumerate()
            .for_each(|(y, row)| {
                for (x, o) in row.iter_mut().enumerate() {
                    *o = box3(&self.image, self.width, self.height, y * self.width + x);
                }
            });
        out
    }

    fn accel(&self) -> Vec<f32> {
        let (image, width, height) = (&self.image, self.width, self.height);
        accelerate!(create(width * height, |p| box3(image, width, height, p)))
    }

    fn check(&self, got: &Vec<f32>, want: &Vec<f32>) -> Result<(), String> {
        close(got, want, 1e-6, 1.0)
    }
}
