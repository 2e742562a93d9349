//! A fourth-order Runge-Kutta solver for N Furuta pendulums (a rotary arm with a pendulum
//! at its tip; four states: arm angle and pendulum angle and their rates; viscous damping
//! on both joints), each instance with its own pendulum damping, M steps. The user
//! supplies the derivative as an `#[accel]` function; `parallel_loop` runs the instances
//! in parallel and writes the pendulum angle of every step into an N x M trace tensor.
//! The result is checked against a sequential reference; the time of each mode is printed.
//!
//! `cargo run --release -p accel-examples --bin ode [-- --small]`

use crate::{measure, Report};
use accel_runtime::prelude::*;

const G: f64 = 9.81;
/// Arm inertia, pendulum mass, arm length, pendulum centre of mass, pendulum inertia.
const J_ARM: f64 = 0.0025;
const MASS: f64 = 0.024;
const R_ARM: f64 = 0.085;
const L_PEND: f64 = 0.065;
const J_PEND: f64 = 0.000033;
/// Arm damping.
const B_ARM: f64 = 0.0004;

/// The Furuta pendulum's derivative at state `s = [θ, φ, θ̇, φ̇]` with pendulum damping
/// `b_pend`: the two coupled equations of motion solved for θ̈ and φ̈.
#[accel]
fn furuta(s: [f64; 4], b_pend: f64) -> [f64; 4] {
    let (phi, dth, dphi) = (s[1], s[2], s[3]);
    let (sp, cp) = phi.sin_cos();
    let a11 = J_ARM + MASS * R_ARM * R_ARM + MASS * L_PEND * L_PEND * sp * sp;
    let a12 = MASS * R_ARM * L_PEND * cp;
    let a22 = J_PEND + MASS * L_PEND * L_PEND;
    let r1 = -B_ARM * dth - 2.0 * MASS * L_PEND * L_PEND * sp * cp * dth * dphi
        + MASS * R_ARM * L_PEND * sp * dphi * dphi;
    let r2 = -b_pend * dphi + MASS * L_PEND * L_PEND * sp * cp * dth * dth + MASS * G * L_PEND * sp;
    let det = a11 * a22 - a12 * a12;
    [
        dth,
        dphi,
        (r1 * a22 - a12 * r2) / det,
        (a11 * r2 - a12 * r1) / det,
    ]
}

/// One RK4 step of size `dt`.
#[accel]
fn rk4_step(s: [f64; 4], dt: f64, b_pend: f64) -> [f64; 4] {
    let k1 = furuta(s, b_pend);
    let k2 = furuta(
        [
            s[0] + 0.5 * dt * k1[0],
            s[1] + 0.5 * dt * k1[1],
            s[2] + 0.5 * dt * k1[2],
            s[3] + 0.5 * dt * k1[3],
        ],
        b_pend,
    );
    let k3 = furuta(
        [
            s[0] + 0.5 * dt * k2[0],
            s[1] + 0.5 * dt * k2[1],
            s[2] + 0.5 * dt * k2[2],
            s[3] + 0.5 * dt * k2[3],
        ],
        b_pend,
    );
    let k4 = furuta(
        [
            s[0] + dt * k3[0],
            s[1] + dt * k3[1],
            s[2] + dt * k3[2],
            s[3] + dt * k3[3],
        ],
        b_pend,
    );
    let w = dt / 6.0;
    [
        s[0] + w * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]),
        s[1] + w * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1]),
        s[2] + w * (k1[2] + 2.0 * k2[2] + 2.0 * k3[2] + k4[2]),
        s[3] + w * (k1[3] + 2.0 * k2[3] + 2.0 * k3[3] + k4[3]),
    ]
}

/// The pendulum damping of instance `i` of `n`: the parameter varied per instance.
#[accel]
fn damping(i: usize, n: usize) -> f64 {
    0.00002 + 0.0002 * i as f64 / n as f64
}

/// Simulates `n` instances for `m` steps; returns the N x M trace of pendulum angles.
fn simulate(n: usize, m: usize, dt: f64) -> Tensor<f64> {
    let trace = Tensor::<f64>::zeros(&[n, m]);
    accelerate!(parallel_loop(n, |i| {
        let b_pend = damping(i, n);
        let mut s = [0.0, 0.3, 0.0, 0.0];
        for k in 0..m {
            s = rk4_step(s, dt, b_pend);
            trace.set([i, k], s[1]);
        }
    }));
    trace
}

/// The same computation, sequentially, as plain Rust (the reference).
fn reference(n: usize, m: usize, dt: f64) -> Vec<f64> {
    let mut out = vec![0.0; n * m];
    for i in 0..n {
        let b = damping(i, n);
        let mut s = [0.0, 0.3, 0.0, 0.0];
        for k in 0..m {
            s = rk4_step(s, dt, b);
            out[i * m + k] = s[1];
        }
    }
    out
}

/// Runs the simulation in every available mode (N = 20000, or 64 when small; M = 1000),
/// each checked against the sequential reference; returns a header line and the report.
pub fn run(small: bool) -> (String, Report) {
    let (n, m, dt) = (if small { 64 } else { 20_000 }, 1000, 0.001);
    let report = measure(
        "ode (RK4)",
        format!("{n} pendulums x {m} steps"),
        || reference(n, m, dt),
        || simulate(n, m, dt).to_vec(),
        |_, trace, expected| {
            let worst = trace
                .iter()
                .zip(expected)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            if worst >= 1e-9 {
                return Err(format!("the trace differs from the reference by {worst}"));
            }
            // Damping makes the swing decay, more so for the more damped instances.
            let amplitude = |i: usize| {
                trace[i * m + m - 200..i * m + m]
                    .iter()
                    .fold(0.0f64, |a, b| a.max(b.abs()))
            };
            if amplitude(n - 1) >= amplitude(0) {
                return Err("the more damped pendulum swings more".into());
            }
            Ok(())
        },
    );
    (format!("ode: {n} pendulums x {m} steps"), report)
}
