//! Records in accelerated code: particles as a `#[derive(Accel)]` struct, a step function
//! that maps them, and a reduction that finds their centre of mass.
//!
//! `cargo run -p accel-examples --bin particles`

use accel_runtime::prelude::*;

#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Particle {
    pos: [f64; 2],
    vel: [f64; 2],
    mass: f64,
}

#[accel]
fn step(p: Particle, dt: f64, gravity: f64) -> Particle {
    let vy = p.vel[1] - gravity * dt;
    let mut y = p.pos[1] + vy * dt;
    let mut vel_y = vy;
    if y < 0.0 {
        // Bounce off the floor, losing a fifth of the speed.
        y = -y;
        vel_y = -vy * 0.8;
    }
    Particle {
        pos: [p.pos[0] + p.vel[0] * dt, y],
        vel: [p.vel[0], vel_y],
        mass: p.mass,
    }
}

#[accel]
fn centre_of_mass(ps: &[Particle]) -> (f64, f64) {
    let (mx, my, m) = reduce(
        |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2),
        (0.0, 0.0, 0.0),
        map(|p| (p.pos[0] * p.mass, p.pos[1] * p.mass, p.mass), ps),
    );
    (mx / m, my / m)
}

fn main() {
    let mut ps: Vec<Particle> = (0..1000)
        .map(|i| Particle {
            pos: [i as f64, 10.0],
            vel: [1.0, 0.0],
            mass: 1.0 + (i % 3) as f64,
        })
        .collect();
    let (dt, g) = (0.01, 9.81);
    for _ in 0..200 {
        ps = accelerate!(map(|p| step(p, dt, g), &ps));
    }
    let (cx, cy) = accelerate!(centre_of_mass(&ps));
    // Every particle moved 2.0 to the right and fell, bounced once, and stays above the floor.
    let expected_x =
        ps.iter().map(|p| p.pos[0] * p.mass).sum::<f64>() / ps.iter().map(|p| p.mass).sum::<f64>();
    assert!((cx - expected_x).abs() < 1e-9);
    assert!(ps.iter().all(|p| p.pos[1] >= 0.0 && p.pos[1] <= 10.0));
    assert!((ps[0].pos[0] - 2.0).abs() < 1e-9);
    println!("centre of mass after 200 steps: ({cx:.3}, {cy:.3})");
}
