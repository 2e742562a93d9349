//! Histogram equalisation of a 4096x4096 grey image of `u32` levels in 0..256 (skewed
//! towards dark: each pixel the product of two uniform bytes, divided by 256): the
//! 256-bin histogram, its cumulative distribution, and every pixel remapped to
//! `round((cdf(v) - cdf_min) * 255 / (pixels - cdf_min))`, in integers. The sequential
//! form counts in a loop; the rayon form counts with `par_iter().fold(..).reduce(..)`,
//! sums the 256 bins sequentially and remaps with `par_iter().map(..)`; the accel form is
//! one `#[accel]` function: `reduce_by_index` for the histogram, `scan` for the
//! distribution, a filtered `fold` for its least nonzero value and `map` over the pixels.
//! The test size is 37x23.

use crate::check::exact;
use crate::random::bits;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct HistogramEqualisation {
    image: Vec<u32>,
    width: usize,
    height: usize,
}

/// Level `v` remapped through the cumulative distribution `cdf` of an image of `total`
/// pixels whose least nonzero cumulative count is `cdf_min`.
#[accel]
pub fn remap(cdf: &[u32], cdf_min: u32, total: u32, v: u32) -> u32 {
    let span = (total - cdf_min) as u64;
    (((cdf[v as usize] - cdf_min) as u64 * 255 + span / 2) / span) as u32
}

/// The image equalised.
#[accel]
pub fn equalise(image: &[u32]) -> Vec<u32> {
    let hist = reduce_by_index(
        vec![0u32; 256],
        |a, b| a + b,
        0,
        map(|v| v as usize, image),
        map(|_| 1u32, image),
    );
    let cdf = scan(|a, b| a + b, 0, &hist);
    let cdf_min = cdf
        .iter()
        .copied()
        .filter(|c| *c > 0)
        .fold(u32::MAX, |a, b| a.min(b));
    let total = image.len() as u32;
    map(|v| remap(&cdf, cdf_min, total, v), image)
}

impl HistogramEqualisation {
    pub fn new(scale: Scale) -> HistogramEqualisation {
        let (width, height) = scale.pick((37, 23), (4096, 4096));
        let image = (0..(width * height) as u64)
            .map(|i| {
                let r = bits(620, i);
                (((r & 0xff) * ((r >> 8) & 0xff)) >> 8) as u32
            })
            .collect();
        HistogramEqualisation {
            image,
            width,
            height,
        }
    }

    /// The cumulative distribution of a histogram and its least nonzero value.
    fn cdf(hist: &[u32]) -> (Vec<u32>, u32) {
        let mut cdf = Vec::with_capacity(hist.len());
        let mut sum = 0;
        for h in hist {
            sum += h;
            cdf.push(sum);
        }
        let cdf_min = *cdf.iter().find(|&&c| c > 0).unwrap();
        (cdf, cdf_min)
    }
}

impl Program for HistogramEqualisation {
    type Output = Vec<u32>;

    fn size(&self) -> String {
        format!("{}x{}", self.width, self.height)
    }

    fn sequential(&self) -> Vec<u32> {
        let mut hist = vec![0u32; 256];
        for &v in &self.image {
            hist[v as usize] += 1;
        }
        let (cdf, cdf_min) = Self::cdf(&hist);
        let total = self.image.len() as u32;
        self.image
            .iter()
            .map(|&v| remap(&cdf, cdf_min, total, v))
            .collect()
    }

    fn rayon(&self) -> Vec<u32> {
        let hist = self
            .image
            .par_iter()
            .fold(
                || vec![0u32; 256],
                |mut hist, &v| {
                    hist[v as usize] += 1;
                    hist
                },
            )
            .reduce(
                || vec![0u32; 256],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
        let (cdf, cdf_min) = Self::cdf(&hist);
        let total = self.image.len() as u32;
        self.image
            .par_iter()
            .map(|&v| remap(&cdf, cdf_min, total, v))
            .collect()
    }

    fn accel(&self) -> Vec<u32> {
        let image = &self.image;
        accelerate!(equalise(image))
    }

    fn check(&self, got: &Vec<u32>, want: &Vec<u32>) -> Result<(), String> {
        exact(got, want)
    }
}
