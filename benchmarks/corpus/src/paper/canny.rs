//! Canny edge detection on a 2048x2048 grey `f32` image (random grey blocks of 64x64
//! pixels, levels in [0, 1), plus noise in [-0.05, 0.05)): a 5x5 Gaussian blur (binomial
//! weights 1 4 6 4 1) with clamped borders, the Sobel gradient's magnitude and direction
//! (quantised to 0, 45, 90 or 135 degrees by comparing |gx| and |gy| against tan 22.5),
//! non-maximum suppression along that direction, a double threshold (strong 2, weak 1,
//! none 0, as `u32`), and one local pass of hysteresis: a weak pixel with a strong
//! 8-neighbour becomes strong (no connected-component pass). Every stage is a function
//! of one pixel (`#[accel]` helpers): the sequential form maps the pixels stage after
//! stage, the rayon form fills each stage's rows with `par_chunks_mut`, the accel form is
//! one `accelerate!` of four `create`s over the pixels. The test size is 37x23 with 8x8
//! blocks.

use crate::check::exact;
use crate::random::{bits, uniform};
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

/// The weak threshold of the gradient magnitude.
pub const LOW: f32 = 0.1;
/// The strong threshold of the gradient magnitude.
pub const HIGH: f32 = 0.3;

pub struct Canny {
    image: Vec<f32>,
    width: usize,
    height: usize,
}

/// The pixel at `(x, y)`, clamped into the image.
#[accel]
pub fn pixel(image: &[f32], width: usize, height: usize, x: i64, y: i64) -> f32 {
    let cx = x.clamp(0, width as i64 - 1) as usize;
    let cy = y.clamp(0, height as i64 - 1) as usize;
    image[cy * width + cx]
}

/// The 5x5 Gaussian blur of pixel `p` (binomial weights, clamped borders).
#[accel]
pub fn gaussian(image: &[f32], width: usize, height: usize, p: usize) -> f32 {
    let x = (p % width) as i64;
    let y = (p / width) as i64;
    let weights = [1.0f32, 4.0, 6.0, 4.0, 1.0];
    let mut sum = 0.0f32;
    for dy in 0..5usize {
        for dx in 0..5usize {
            let v = pixel(image, width, height, x + dx as i64 - 2, y + dy as i64 - 2);
            sum += weights[dy] * weights[dx] * v;
        }
    }
    sum / 256.0
}

/// The gradient direction quantised: 0 along x, 1 along the diagonal x = y, 2 along y,
/// 3 along the diagonal x = -y (y grows downwards).
#[accel]
pub fn direction(gx: f32, gy: f32) -> u32 {
    let tan22 = 0.414_213_56f32;
    if gy.abs() <= tan22 * gx.abs() {
        0
    } else if gx.abs() <= tan22 * gy.abs() {
        2
    } else if (gx > 0.0) == (gy > 0.0) {
        1
    } else {
        3
    }
}

/// The Sobel gradient of pixel `p` of the blurred image: its magnitude and quantised
/// direction.
#[accel]
pub fn sobel(image: &[f32], width: usize, height: usize, p: usize) -> (f32, u32) {
    let x = (p % width) as i64;
    let y = (p / width) as i64;
    let at = |dx: i64, dy: i64| pixel(image, width, height, x + dx, y + dy);
    let gx = (at(1, -1) + 2.0 * at(1, 0) + at(1, 1)) - (at(-1, -1) + 2.0 * at(-1, 0) + at(-1, 1));
    let gy = (at(-1, 1) + 2.0 * at(0, 1) + at(1, 1)) - (at(-1, -1) + 2.0 * at(0, -1) + at(1, -1));
    ((gx * gx + gy * gy).sqrt(), direction(gx, gy))
}

/// The gradient magnitude at `(x, y)`, clamped into the image.
#[accel]
pub fn magnitude(gradient: &[(f32, u32)], width: usize, height: usize, x: i64, y: i64) -> f32 {
    let cx = x.clamp(0, width as i64 - 1) as usize;
    let cy = y.clamp(0, height as i64 - 1) as usize;
    gradient[cy * width + cx].0
}

/// Non-maximum suppression and the double threshold of pixel `p`: 2 (strong), 1 (weak)
/// or 0 (none, or not a maximum along its gradient).
#[accel]
pub fn classify(gradient: &[(f32, u32)], width: usize, height: usize, p: usize) -> u32 {
    let x = (p % width) as i64;
    let y = (p / width) as i64;
    let (m, d) = gradient[p];
    let (dx, dy) = match d {
        0 => (1i64, 0i64),
        1 => (1, 1),
        2 => (0, 1),
        _ => (1, -1),
    };
    let ahead = magnitude(gradient, width, height, x + dx, y + dy);
    let behind = magnitude(gradient, width, height, x - dx, y - dy);
    if m < ahead || m < behind {
        0
    } else if m >= HIGH {
        2
    } else if m >= LOW {
        1
    } else {
        0
    }
}

/// One local pass of hysteresis at pixel `p`: a weak pixel with a strong 8-neighbour
/// becomes strong.
#[accel]
pub fn promote(class: &[u32], width: usize, height: usize, p: usize) -> u32 {
    let x = (p % width) as i64;
    let y = (p / width) as i64;
    if class[p] != 1 {
        class[p]
    } else {
        let mut strong = false;
        for dy in -1..2i64 {
            for dx in -1..2i64 {
                let cx = (x + dx).clamp(0, width as i64 - 1) as usize;
                let cy = (y + dy).clamp(0, height as i64 - 1) as usize;
                if class[cy * width + cx] == 2 {
                    strong = true;
                }
            }
        }
        if strong {
            2
        } else {
            1
        }
    }
}

impl Canny {
    pub fn new(scale: Scale) -> Canny {
        let (width, height, block): (usize, usize, usize) =
            scale.pick((37, 23, 8), (2048, 2048, 64));
        let columns = width.div_ceil(block);
        let noise = uniform(width * height, 601, -0.05, 0.05);
        let image = (0..width * height)
            .map(|p| {
                let b = (p / width / block) * columns + p % width / block;
                let level = (bits(600, b as u64) >> 40) as f32 / (1u32 << 24) as f32;
                level + noise[p]
            })
            .collect();
        Canny {
            image,
            width,
            height,
        }
    }

    /// The four stages, each mapping the pixels with `grid`.
    fn stages<G: Grid>(&self) -> Vec<u32> {
        let (w, h) = (self.width, self.height);
        let blurred = G::map(w, h, |p| gaussian(&self.image, w, h, p));
        let gradient = G::map(w, h, |p| sobel(&blurred, w, h, p));
        let class = G::map(w, h, |p| classify(&gradient, w, h, p));
        G::map(w, h, |p| promote(&class, w, h, p))
    }
}

/// How the sequential and rayon forms compute an image pixel by pixel.
trait Grid {
    fn map<T: Send + Clone + Default>(
        width: usize,
        height: usize,
        f: impl Fn(usize) -> T + Sync,
    ) -> Vec<T>;
}

/// Pixel after pixel.
struct Sequential;

impl Grid for Sequential {
    fn map<T: Send + Clone + Default>(
        width: usize,
        height: usize,
        f: impl Fn(usize) -> T + Sync,
    ) -> Vec<T> {
        (0..width * height).map(f).collect()
    }
}

/// Rows in parallel.
struct Rows;

impl Grid for Rows {
    fn map<T: Send + Clone + Default>(
        width: usize,
        height: usize,
        f: impl Fn(usize) -> T + Sync,
    ) -> Vec<T> {
        let mut out = vec![T::default(); width * height];
        out.par_chunks_mut(width).enumerate().for_each(|(y, row)| {
            for (x, o) in row.iter_mut().enumerate() {
                *o = f(y * width + x);
            }
        });
        out
    }
}

impl Program for Canny {
    type Output = Vec<u32>;

    fn size(&self) -> String {
        format!("{}x{}", self.width, self.height)
    }

    fn sequential(&self) -> Vec<u32> {
        self.stages::<Sequential>()
    }

    fn rayon(&self) -> Vec<u32> {
        self.stages::<Rows>()
    }

    fn accel(&self) -> Vec<u32> {
        let (image, w, h) = (&self.image, self.width, self.height);
        accelerate!({
            let blurred = create(w * h, |p| gaussian(image, w, h, p));
            let gradient = create(w * h, |p| sobel(&blurred, w, h, p));
            let class = create(w * h, |p| classify(&gradient, w, h, p));
            create(w * h, |p| promote(&class, w, h, p))
        })
    }

    fn check(&self, got: &Vec<u32>, want: &Vec<u32>) -> Result<(), String> {
        // Every form does the same f32 operations in the same order (no sum is regrouped),
        // so the thresholded pixels agree exactly on the CPU and the emulator. A GPU that
        // contracts `a * b + c` into fused multiply-adds (CUDA's default) rounds the blur
        // differently in the last bit, which could flip a pixel within rounding of a
        // threshold or of its neighbour's magnitude: at the test size the nearest is 3e-4
        // (relative) away, far beyond rounding; at 2048x2048 there are exact ties.
        exact(got, want)
    }
}
