//! PolyBench's seidel-2d at LARGE's grid (N = 2000) with 20 time steps instead of 500
//! (500 take about 25 s sequentially here): each step sweeps the interior in row-major
//! order, setting every point to the mean of its 3x3 neighbourhood, in place (a
//! Gauss-Seidel sweep: the neighbours above and to the left already have this step's
//! values). The parallel forms sweep the same points by tiled wavefronts, as Pluto's tiling
//! of this kernel does. A point needs this step's values above-left, above, above-right
//! and left of it and last step's below and to its right, so after skewing the columns
//! (`j' = i + j`) every dependence points down or right, and rectangles of `(i, j')` are
//! legal tiles: bands of `h` rows by `w` skewed columns, each a parallelogram of the grid
//! swept row by row. Tile `(ti, tj)` depends only on tiles with a smaller `ti + tj`, so
//! each such wavefront's tiles run in parallel, and every form computes the same values.
//! (A wavefront of single points, `2i + j = d`, has the same dependencies but runs 3x
//! slower than the sequential sweep in both parallel forms: its points lie a row apart,
//! so every read misses the cache lines the last point loaded.) The rayon form shares
//! the grid through a raw pointer (a wavefront's tiles write disjoint points); the accel
//! form holds it in a `Tensor` and runs one `parallel_loop` over each wavefront's tiles.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Seidel2d {
    tsteps: usize,
    n: usize,
    tiles: Tiles,
    a: Vec<f64>,
}

/// The tiling of the interior: bands of `h` rows by `w` skewed columns `j' = i + j`.
#[derive(Clone, Copy)]
struct Tiles {
    n: usize,
    h: usize,
    w: usize,
}

impl Tiles {
    /// The bands of rows and of skewed columns (the interior's `j'` run from 2 to
    /// `2n - 4`).
    fn counts(self) -> (usize, usize) {
        (
            (self.n - 2).div_ceil(self.h),
            (2 * self.n - 5).div_ceil(self.w),
        )
    }

    /// The row bands `ti` of the tiles `(ti, d - ti)` of wavefront `d`.
    fn wavefront(self, d: usize) -> std::ops::RangeInclusive<usize> {
        let (rows, columns) = self.counts();
        d.saturating_sub(columns - 1)..=d.min(rows - 1)
    }

    /// The interior rows of band `ti`.
    fn rows(self, ti: usize) -> std::ops::RangeInclusive<usize> {
        ti * self.h + 1..=(ti * self.h + self.h).min(self.n - 2)
    }

    /// The interior columns of row `i` in skewed band `tj` (empty where the band misses
    /// the row).
    fn columns(self, tj: usize, i: usize) -> std::ops::RangeInclusive<usize> {
        let (lo, hi) = (tj * self.w + 2, tj * self.w + self.w + 1);
        lo.max(i + 1) - i..=hi.min(i + self.n - 2).max(i) - i
    }
}

impl Seidel2d {
    pub fn new(scale: Scale) -> Seidel2d {
        let (tsteps, n, h, w) = scale.pick((3, 23, 4, 5), (20, 2000, 150, 100));
        Seidel2d {
            tsteps,
            n,
            tiles: Tiles { n, h, w },
            a: matrix(n * n, 524, 0.0, 1.0),
        }
    }
}

/// The new value of point `(i, j)`, PolyBench's expression.
fn point(a: &[f64], n: usize, i: usize, j: usize) -> f64 {
    (a[(i - 1) * n + j - 1]
        + a[(i - 1) * n + j]
        + a[(i - 1) * n + j + 1]
        + a[i * n + j - 1]
        + a[i * n + j]
        + a[i * n + j + 1]
        + a[(i + 1) * n + j - 1]
        + a[(i + 1) * n + j]
        + a[(i + 1) * n + j + 1])
        / 9.0
}

/// A grid the tiles of one wavefront update in place from several threads.
#[derive(Clone, Copy)]
struct SharedGrid(*mut f64);

// SAFETY: the tiles of a wavefront write disjoint points and read only points no tile of
// the same wavefront writes (see the module's comment), so sharing the pointer between
// the wavefront's threads races on nothing; the grid outlives the parallel iteration.
unsafe impl Send for SharedGrid {}
// SAFETY: as above.
unsafe impl Sync for SharedGrid {}

impl SharedGrid {
    /// Sweeps tile `(ti, tj)` of `tiles` row by row.
    ///
    /// # Safety
    /// The grid holds `n * n` elements, and no other thread writes the points the tile
    /// reads or reads the points it writes while it runs.
    unsafe fn sweep_tile(self, tiles: Tiles, ti: usize, tj: usize) {
        let n = tiles.n;
        // SAFETY: the caller's promise: the grid is live and this tile's points are ours.
        let a = unsafe { std::slice::from_raw_parts_mut(self.0, n * n) };
        for i in tiles.rows(ti) {
            for j in tiles.columns(tj, i) {
                a[i * n + j] = point(a, n, i, j);
            }
        }
    }
}

impl Program for Seidel2d {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{} steps, {}x{}", self.tsteps, self.n, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for _ in 0..self.tsteps {
            for i in 1..=n - 2 {
                for j in 1..=n - 2 {
                    a[i * n + j] = point(&a, n, i, j);
                }
            }
        }
        a
    }

    fn rayon(&self) -> Vec<f64> {
        let tiles = self.tiles;
        let (rows, columns) = tiles.counts();
        let mut a = self.a.clone();
        let grid = SharedGrid(a.as_mut_ptr());
        for _ in 0..self.tsteps {
            for d in 0..rows + columns - 1 {
                tiles.wavefront(d).into_par_iter().for_each(|ti| {
                    // SAFETY: `a` holds n * n points and outlives the loop; the tiles of
                    // one wavefront touch no point another of them writes.
                    unsafe { grid.sweep_tile(tiles, ti, d - ti) }
                });
            }
        }
        a
    }

    fn accel(&self) -> Vec<f64> {
        let Tiles { n, h, w } = self.tiles;
        let (rows, columns) = self.tiles.counts();
        let a = Tensor::from_vec(self.a.clone(), &[n, n]);
        for _ in 0..self.tsteps {
            for d in 0..rows + columns - 1 {
                let band = self.tiles.wavefront(d);
                let (first, count) = (*band.start(), band.count());
                accelerate!(parallel_loop(count, |k| {
                    let ti = first + k;
                    let (lo, hi) = ((d - ti) * w + 2, (d - ti) * w + w + 1);
                    for i in ti * h + 1..=(ti * h + h).min(n - 2) {
                        for j in lo.max(i + 1) - i..=hi.min(i + n - 2).max(i) - i {
                            let v = (a.get([i - 1, j - 1])
                                + a.get([i - 1, j])
                                + a.get([i - 1, j + 1])
                                + a.get([i, j - 1])
                                + a.get([i, j])
                                + a.get([i, j + 1])
                                + a.get([i + 1, j - 1])
                                + a.get([i + 1, j])
                                + a.get([i + 1, j + 1]))
                                / 9.0;
                            a.set([i, j], v);
                        }
                    }
                }));
            }
        }
        a.to_vec()
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
