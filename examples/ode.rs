//! The ODE case study (see `src/ode.rs`): RK4 for N Furuta pendulums in every available
//! mode, checked against the sequential reference.
//!
//! `cargo run --release -p accel-examples --bin ode [-- --small]`

fn main() {
    let small = std::env::args().any(|a| a == "--small");
    let (header, report) = accel_examples::ode::run(small);
    println!("{header}");
    println!("{}", report.line());
}
