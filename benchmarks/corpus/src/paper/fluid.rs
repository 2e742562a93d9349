//! Jos Stam's stable fluids ("Real-Time Fluid Dynamics for Games", 2003), the velocity
//! step on a 512x512 grid in grid units (cells of side 1), four steps from a random
//! velocity field (u and v uniform in [-10, 10) cells per unit time). One step diffuses u
//! and v by 20 Jacobi iterations of Stam's `lin_solve` (viscosity 5, dt 0.1), advects
//! both by the diffused velocity (a semi-Lagrangian back-trace with bilinear
//! interpolation), and projects: the divergence, 20 Jacobi iterations for the pressure,
//! and the pressure gradient subtracted. Reads outside the grid are clamped to its edge
//! (instead of Stam's `set_bnd` walls). Every stage is a function of one cell
//! (`#[accel]` helpers): the sequential form maps the cells, the rayon form fills rows
//! with `par_chunks_mut`, the accel form is one `accelerate!` `create` over the cells per
//! field and iteration, the steps and iterations ordinary Rust loops around them. The
//! test size is 37x23 cells.

use crate::check::close;
use crate::random::uniform;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

/// Time steps.
pub const STEPS: usize = 4;
/// Jacobi iterations per solve.
pub const ITERATIONS: usize = 20;
/// The time step.
pub const DT: f32 = 0.1;
/// The viscosity, in cells squared per unit time.
pub const VISCOSITY: f32 = 5.0;

pub struct Fluid {
    u: Vec<f32>,
    v: Vec<f32>,
    width: usize,
    height: usize,
}

/// The value of field `f` at cell `(x, y)`, clamped into the grid.
#[accel]
pub fn cell(f: &[f32], width: usize, height: usize, x: i64, y: i64) -> f32 {
    let cx = x.clamp(0, width as i64 - 1) as usize;
    let cy = y.clamp(0, height as i64 - 1) as usize;
    f[cy * width + cx]
}

/// One Jacobi iteration of Stam's `lin_solve` at cell `p`: `(x0 + a * (the four
/// neighbours of x)) / c`.
#[accel]
pub fn jacobi(x: &[f32], x0: &[f32], width: usize, height: usize, a: f32, c: f32, p: usize) -> f32 {
    let i = (p % width) as i64;
    let j = (p / width) as i64;
    let neighbours = cell(x, width, height, i - 1, j)
        + cell(x, width, height, i + 1, j)
        + cell(x, width, height, i, j - 1)
        + cell(x, width, height, i, j + 1);
    (x0[p] + a * neighbours) / c
}

/// Field `d` advected to cell `p` by the velocity `(u, v)` over `dt`: the value at the
/// point the cell's velocity came from, interpolated bilinearly.
#[accel]
pub fn advect(
    d: &[f32],
    u: &[f32],
    v: &[f32],
    width: usize,
    height: usize,
    dt: f32,
    p: usize,
) -> f32 {
    let x = ((p % width) as f32 - dt * u[p]).clamp(0.0, (width - 1) as f32);
    let y = ((p / width) as f32 - dt * v[p]).clamp(0.0, (height - 1) as f32);
    let i0 = x.floor() as usize;
    let j0 = y.floor() as usize;
    let i1 = (i0 + 1).min(width - 1);
    let j1 = (j0 + 1).min(height - 1);
    let s1 = x - i0 as f32;
    let t1 = y - j0 as f32;
    let (s0, t0) = (1.0 - s1, 1.0 - t1);
    s0 * (t0 * d[j0 * width + i0] + t1 * d[j1 * width + i0])
        + s1 * (t0 * d[j0 * width + i1] + t1 * d[j1 * width + i1])
}

/// The negated divergence of the velocity at cell `p`, as Stam's `project` computes it.
#[accel]
pub fn divergence(u: &[f32], v: &[f32], width: usize, height: usize, p: usize) -> f32 {
    let i = (p % width) as i64;
    let j = (p / width) as i64;
    -0.5 * (cell(u, width, height, i + 1, j) - cell(u, width, height, i - 1, j)
        + cell(v, width, height, i, j + 1)
        - cell(v, width, height, i, j - 1))
}

/// Velocity component `f` at cell `p` less the pressure gradient along `(dx, dy)`.
#[accel]
pub fn subtract_gradient(
    f: &[f32],
    pressure: &[f32],
    width: usize,
    height: usize,
    dx: i64,
    dy: i64,
    p: usize,
) -> f32 {
    let i = (p % width) as i64;
    let j = (p / width) as i64;
    f[p] - 0.5
        * (cell(pressure, width, height, i + dx, j + dy)
            - cell(pressure, width, height, i - dx, j - dy))
}

impl Fluid {
    pub fn new(scale: Scale) -> Fluid {
        let (width, height) = scale.pick((37, 23), (512, 512));
        Fluid {
            u: uniform(width * height, 610, -10.0, 10.0),
            v: uniform(width * height, 611, -10.0, 10.0),
            width,
            height,
        }
    }

    /// The simulation, each stage mapping the cells with `G`.
    fn simulate<G: Grid>(&self) -> (Vec<f32>, Vec<f32>) {
        let (w, h) = (self.width, self.height);
        let (mut u, mut v) = (self.u.clone(), self.v.clone());
        let a = DT * VISCOSITY;
        for _ in 0..STEPS {
            // Diffuse.
            let (u0, v0) = (u.clone(), v.clone());
            for _ in 0..ITERATIONS {
                u = G::map(w, h, |p| jacobi(&u, &u0, w, h, a, 1.0 + 4.0 * a, p));
                v = G::map(w, h, |p| jacobi(&v, &v0, w, h, a, 1.0 + 4.0 * a, p));
            }
            // Advect.
            let advected_u = G::map(w, h, |p| advect(&u, &u, &v, w, h, DT, p));
            v = G::map(w, h, |p| advect(&v, &u, &v, w, h, DT, p));
            u = advected_u;
            // Project.
            let div = G::map(w, h, |p| divergence(&u, &v, w, h, p));
            let mut pressure = vec![0.0f32; w * h];
            for _ in 0..ITERATIONS {
                pressure = G::map(w, h, |p| jacobi(&pressure, &div, w, h, 1.0, 4.0, p));
            }
            u = G::map(w, h, |p| subtract_gradient(&u, &pressure, w, h, 1, 0, p));
            v = G::map(w, h, |p| subtract_gradient(&v, &pressure, w, h, 0, 1, p));
        }
        (u, v)
    }
}

/// How the sequential and rayon forms compute a field cell by cell.
trait Grid {
    fn map(width: usize, height: usize, f: impl Fn(usize) -> f32 + Sync) -> Vec<f32>;
}

/// Cell after cell.
struct Sequential;

impl Grid for Sequential {
    fn map(width: usize, height: usize, f: impl Fn(usize) -> f32 + Sync) -> Vec<f32> {
        (0..width * height).map(f).collect()
    }
}

/// Rows in parallel.
struct Rows;

impl Grid for Rows {
    fn map(width: usize, height: usize, f: impl Fn(usize) -> f32 + Sync) -> Vec<f32> {
        let mut out = vec![0.0; width * height];
        out.par_chunks_mut(width).enumerate().for_each(|(y, row)| {
            for (x, o) in row.iter_mut().enumerate() {
                *o = f(y * width + x);
            }
        });
        out
    }
}

impl Program for Fluid {
    type Output = (Vec<f32>, Vec<f32>);

    fn size(&self) -> String {
        format!("{}x{}, {STEPS} steps", self.width, self.height)
    }

    fn sequential(&self) -> (Vec<f32>, Vec<f32>) {
        self.simulate::<Sequential>()
    }

    fn rayon(&self) -> (Vec<f32>, Vec<f32>) {
        self.simulate::<Rows>()
    }

    fn accel(&self) -> (Vec<f32>, Vec<f32>) {
        let (w, h) = (self.width, self.height);
        let (mut u, mut v) = (self.u.clone(), self.v.clone());
        let a = DT * VISCOSITY;
        let c = 1.0 + 4.0 * a;
        let dt = DT;
        for _ in 0..STEPS {
            // Diffuse.
            let (u0, v0) = (u.clone(), v.clone());
            for _ in 0..ITERATIONS {
                u = accelerate!(create(w * h, |p| jacobi(&u, &u0, w, h, a, c, p)));
                v = accelerate!(create(w * h, |p| jacobi(&v, &v0, w, h, a, c, p)));
            }
            // Advect.
            let advected_u = accelerate!(create(w * h, |p| advect(&u, &u, &v, w, h, dt, p)));
            v = accelerate!(create(w * h, |p| advect(&v, &u, &v, w, h, dt, p)));
            u = advected_u;
            // Project.
            let div = accelerate!(create(w * h, |p| divergence(&u, &v, w, h, p)));
            let mut pressure = vec![0.0f32; w * h];
            for _ in 0..ITERATIONS {
                pressure = accelerate!(create(w * h, |p| jacobi(
                    &pressure, &div, w, h, 1.0, 4.0, p
                )));
            }
            u = accelerate!(create(w * h, |p| subtract_gradient(
                &u, &pressure, w, h, 1, 0, p
            )));
            v = accelerate!(create(w * h, |p| subtract_gradient(
                &v, &pressure, w, h, 0, 1, p
            )));
        }
        (u, v)
    }

    fn check(&self, got: &(Vec<f32>, Vec<f32>), want: &(Vec<f32>, Vec<f32>)) -> Result<(), String> {
        // The same f32 operations in the same order in every form (no sum is regrouped:
        // the CPU backend's results are identical); the tolerance leaves room for a
        // backend that contracts `a * b + c` into a fused multiply-add. Velocities are
        // about 0.5 in size (4 at most) after four steps, judged absolutely below 1.
        close(&got.0, &want.0, 1e-4, 1.0)?;
        close(&got.1, &want.1, 1e-4, 1.0)
    }
}
