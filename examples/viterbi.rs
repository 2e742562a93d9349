//! The Viterbi case study (see `src/viterbi.rs`): both versions in every available mode,
//! checked against the sequential reference.
//!
//! `cargo run --release -p accel-examples --bin viterbi [-- --small]`

fn main() {
    let small = std::env::args().any(|a| a == "--small");
    let (header, reports) = accel_examples::viterbi::run(small);
    println!("{header}");
    for r in reports {
        println!("{}", r.line());
    }
}
