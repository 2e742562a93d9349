//! The neural-network case study: a 64-64-10 fully connected network (ReLU, softmax
//! cross-entropy, minibatch SGD) trained on scikit-learn's handwritten digits, shipped in
//! `examples/data/digits.csv`. Training runs in every available mode and as plain
//! sequential Rust; each mode's losses, weights and test accuracy are checked against the
//! sequential reference, and the time per epoch is reported.
//!
//! `cargo run --release -p accel-examples --bin nn [-- --small] [--epochs N] [--train N]`

use accel_examples::nn::{self, Net};
use accel_examples::{in_mode, modes};
use std::time::Instant;

const BATCH: usize = 32;
const RATE: f32 = 0.1;

/// Trains epoch by epoch; returns the losses and the median time of an epoch (ms), the
/// first (compiling) epoch excluded when there are more.
fn run(epochs: usize, train_epoch: &mut dyn FnMut() -> f32) -> (Vec<f32>, f64) {
    let mut losses = Vec::new();
    let mut times = Vec::new();
    for _ in 0..epochs {
        let start = Instant::now();
        losses.push(train_epoch());
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    if times.len() > 1 {
        times.remove(0);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    (losses, times[times.len() / 2])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let small = args.iter().any(|a| a == "--small");
    let number = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(|v| {
                v.parse::<usize>()
                    .unwrap_or_else(|_| panic!("{flag} takes a number"))
            })
    };
    let epochs = number("--epochs").unwrap_or(if small { 3 } else { 30 });
    let (mut train, test) = nn::digits();
    if let Some(n) = number("--train") {
        train = train.batch(0, n.min(train.len()));
    }
    let mut reference = Net::new(7);
    let (ref_losses, ref_ms) = run(epochs, &mut || {
        nn::reference::train(&mut reference, &train, 1, BATCH, RATE)[0]
    });
    let ref_accuracy = nn::reference::accuracy(&reference, &test);
    println!(
        "nn: {} training / {} test images, 64-{}-10, batch {BATCH}, {epochs} epochs",
        train.len(),
        test.len(),
        nn::HIDDEN
    );
    for mode in modes() {
        let mut net = Net::new(7);
        let (losses, ms) = run(epochs, &mut || {
            in_mode(mode, || nn::train(&mut net, &train, 1, BATCH, RATE)[0])
        });
        let accuracy = in_mode(mode, || nn::accuracy(&net, &test));
        // Parallel reductions may group sums differently (the CPU backend does not in
        // this network: its sums are sequential loops inside each element), and the GPU's
        // exp differs in the last bits: a loose tolerance on the losses and weights.
        for (e, (l, r)) in losses.iter().zip(&ref_losses).enumerate() {
            assert!(
                (l - r).abs() <= 1e-3 * r.abs().max(1.0),
                "{mode}: epoch {e} loss {l} but the reference has {r}"
            );
        }
        let worst = net
            .w1
            .iter()
            .chain(&net.w2)
            .zip(reference.w1.iter().chain(&reference.w2))
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            worst < 1e-2,
            "{mode}: weights differ from the reference by {worst}"
        );
        assert!(
            (accuracy - ref_accuracy).abs() <= 0.01,
            "{mode}: accuracy {accuracy} but the reference has {ref_accuracy}"
        );
        println!(
            "nn: mode {mode}: {ms:.1} ms per epoch; final loss {:.4}; test accuracy {:.1}%; max weight difference {worst:.1e}",
            losses[epochs - 1],
            accuracy * 100.0
        );
    }
    println!(
        "nn: sequential reference: {ref_ms:.1} ms per epoch; final loss {:.4}; test accuracy {:.1}%",
        ref_losses[epochs - 1],
        ref_accuracy * 100.0
    );
    if !small && number("--train").is_none() {
        assert!(ref_accuracy > 0.9, "the network should learn the digits");
    }
}
