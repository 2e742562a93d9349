//! A fully connected network trained on handwritten digits: 64 inputs (8x8 images) ->
//! 64 hidden units (ReLU) -> 10 classes (softmax), cross-entropy loss, minibatch SGD.
//! Every step of training (forward pass, loss gradient, backward pass, update) is an
//! `accelerate!` site over flat row-major arrays; nested reductions (dot products over a
//! row) run inside each element's computation.
//!
//! The data set is scikit-learn's copy of the UCI "Optical Recognition of Handwritten
//! Digits" test set (1797 images), exported once into `examples/data/digits.csv` and
//! compiled into the program: nothing is downloaded at run time.

use accel_runtime::prelude::*;

pub const INPUTS: usize = 64;
pub const HIDDEN: usize = 64;
pub const CLASSES: usize = 10;

/// Images (pixels scaled to 0..1, row-major, `INPUTS` per image) and their labels.
pub struct Data {
    pub x: Vec<f32>,
    pub y: Vec<usize>,
}

impl Data {
    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Images `lo..hi` (a minibatch).
    pub fn batch(&self, lo: usize, hi: usize) -> Data {
        Data {
            x: self.x[lo * INPUTS..hi * INPUTS].to_vec(),
            y: self.y[lo..hi].to_vec(),
        }
    }
}

/// The digits, split deterministically: every fifth image is for testing.
pub fn digits() -> (Data, Data) {
    let text = include_str!("../data/digits.csv");
    let mut train = Data {
        x: Vec::new(),
        y: Vec::new(),
    };
    let mut test = Data {
        x: Vec::new(),
        y: Vec::new(),
    };
    for (k, line) in text.lines().enumerate() {
        let values: Vec<u32> = line
            .split(',')
            .map(|v| v.trim().parse().expect("digits.csv holds integers"))
            .collect();
        assert_eq!(values.len(), INPUTS + 1, "line {k} of digits.csv");
        let set = if k % 5 == 4 { &mut test } else { &mut train };
        set.x
            .extend(values[..INPUTS].iter().map(|&p| p as f32 / 16.0));
        set.y.push(values[INPUTS] as usize);
    }
    (train, test)
}

/// The network's parameters.
#[derive(Clone, Debug)]
pub struct Net {
    /// `HIDDEN` x `INPUTS`.
    pub w1: Vec<f32>,
    pub b1: Vec<f32>,
    /// `CLASSES` x `HIDDEN`.
    pub w2: Vec<f32>,
    pub b2: Vec<f32>,
}

impl Net {
    /// He-initialised weights from a fixed seed (xorshift), zero biases.
    pub fn new(seed: u64) -> Net {
        let mut state = seed.max(1);
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
        };
        let mut layer = |rows: usize, cols: usize| -> Vec<f32> {
            let scale = (6.0 / cols as f32).sqrt();
            (0..rows * cols).map(|_| uniform() * scale).collect()
        };
        Net {
            w1: layer(HIDDEN, INPUTS),
            b1: vec![0.0; HIDDEN],
            w2: layer(CLASSES, HIDDEN),
            b2: vec![0.0; CLASSES],
        }
    }
}

/// The hidden layer's activations for a batch: `ReLU(W1 x + b1)`, `HIDDEN` per image.
pub fn hidden(net: &Net, x: &[f32]) -> Vec<f32> {
    let (w1, b1) = (&net.w1, &net.b1);
    let images = x.len() / INPUTS;
    accelerate!(create(images * HIDDEN, |k| {
        let (s, h) = (k / HIDDEN, k % HIDDEN);
        let z = reduce(
            |a, b| a + b,
            0.0,
            create(INPUTS, |j| w1[h * INPUTS + j] * x[s * INPUTS + j]),
        );
        (z + b1[h]).max(0.0)
    }))
}

/// The output layer's logits for a batch: `W2 h + b2`, `CLASSES` per image.
pub fn logits(net: &Net, hid: &[f32]) -> Vec<f32> {
    let (w2, b2) = (&net.w2, &net.b2);
    let images = hid.len() / HIDDEN;
    accelerate!(create(images * CLASSES, |k| {
        let (s, o) = (k / CLASSES, k % CLASSES);
        reduce(
            |a, b| a + b,
            0.0,
            create(HIDDEN, |h| w2[o * HIDDEN + h] * hid[s * HIDDEN + h]),
        ) + b2[o]
    }))
}

/// The gradient of the mean cross-entropy loss with respect to the logits:
/// `(softmax(z) - onehot(y)) / batch`.
pub fn loss_gradient(z: &[f32], y: &[usize]) -> Vec<f32> {
    let images = y.len();
    let scale = 1.0 / images as f32;
    accelerate!(create(images * CLASSES, |k| {
        let (s, o) = (k / CLASSES, k % CLASSES);
        let m = reduce(
            |a, b| a.max(b),
            f32::MIN,
            create(CLASSES, |c| z[s * CLASSES + c]),
        );
        let total = reduce(
            |a, b| a + b,
            0.0,
            create(CLASSES, |c| (z[s * CLASSES + c] - m).exp()),
        );
        let p = (z[k] - m).exp() / total;
        let target = if y[s] == o { 1.0 } else { 0.0 };
        (p - target) * scale
    }))
}

/// The mean cross-entropy loss of a batch.
pub fn loss(z: &[f32], y: &[usize]) -> f32 {
    let images = y.len();
    let sum = accelerate!(reduce(
        |a, b| a + b,
        0.0,
        create(images, |s| {
            let m = reduce(
                |a, b| a.max(b),
                f32::MIN,
                create(CLASSES, |c| z[s * CLASSES + c]),
            );
            let total = reduce(
                |a, b| a + b,
                0.0,
                create(CLASSES, |c| (z[s * CLASSES + c] - m).exp()),
            );
            m + total.ln() - z[s * CLASSES + y[s]]
        })
    ));
    sum / images as f32
}

/// How many images of a batch the network classifies correctly (the largest logit).
pub fn correct(z: &[f32], y: &[usize]) -> usize {
    let images = y.len();
    accelerate!(reduce(
        |a, b| a + b,
        0usize,
        create(images, |s| {
            let best = reduce(
                |a: (f32, usize), b: (f32, usize)| if b.0 > a.0 { b } else { a },
                (f32::MIN, 0usize),
                create(CLASSES, |c| (z[s * CLASSES + c], c)),
            );
            if best.1 == y[s] {
                1usize
            } else {
                0usize
            }
        })
    ))
}

/// One SGD step on a batch; returns the batch's loss before the step.
pub fn step(net: &mut Net, batch: &Data, rate: f32) -> f32 {
    let (x, y) = (&batch.x, &batch.y);
    let hid = hidden(net, x);
    let z = logits(net, &hid);
    let before = loss(&z, y);
    let dz = loss_gradient(&z, y);
    let images = y.len();
    let w2 = &net.w2;
    // Backward: output layer.
    let gw2: Vec<f32> = accelerate!(create(CLASSES * HIDDEN, |k| {
        let (o, h) = (k / HIDDEN, k % HIDDEN);
        reduce(
            |a, b| a + b,
            0.0,
            create(images, |s| dz[s * CLASSES + o] * hid[s * HIDDEN + h]),
        )
    }));
    let gb2: Vec<f32> = accelerate!(create(CLASSES, |o| reduce(
        |a, b| a + b,
        0.0,
        create(images, |s| dz[s * CLASSES + o])
    )));
    // Hidden layer: the gradient flows through ReLU where the unit was active.
    let dh: Vec<f32> = accelerate!(create(images * HIDDEN, |k| {
        let (s, h) = (k / HIDDEN, k % HIDDEN);
        if hid[k] > 0.0 {
            reduce(
                |a, b| a + b,
                0.0,
                create(CLASSES, |o| w2[o * HIDDEN + h] * dz[s * CLASSES + o]),
            )
        } else {
            0.0
        }
    }));
    let gw1: Vec<f32> = accelerate!(create(HIDDEN * INPUTS, |k| {
        let (h, j) = (k / INPUTS, k % INPUTS);
        reduce(
            |a, b| a + b,
            0.0,
            create(images, |s| dh[s * HIDDEN + h] * x[s * INPUTS + j]),
        )
    }));
    let gb1: Vec<f32> = accelerate!(create(HIDDEN, |h| reduce(
        |a, b| a + b,
        0.0,
        create(images, |s| dh[s * HIDDEN + h])
    )));
    // Update.
    let update =
        |w: &Vec<f32>, g: &Vec<f32>| -> Vec<f32> { accelerate!(map2(|w, g| w - rate * g, w, g)) };
    net.w1 = update(&net.w1, &gw1);
    net.b1 = update(&net.b1, &gb1);
    net.w2 = update(&net.w2, &gw2);
    net.b2 = update(&net.b2, &gb2);
    before
}

/// Trains for `epochs` over `train` in batches of `batch`; returns the mean loss of each
/// epoch.
pub fn train(net: &mut Net, train: &Data, epochs: usize, batch: usize, rate: f32) -> Vec<f32> {
    train_with(step, net, train, epochs, batch, rate)
}

/// The training loop around one kind of step (accelerated, or the reference).
fn train_with(
    step: fn(&mut Net, &Data, f32) -> f32,
    net: &mut Net,
    train: &Data,
    epochs: usize,
    batch: usize,
    rate: f32,
) -> Vec<f32> {
    let mut losses = Vec::new();
    for _ in 0..epochs {
        let mut total = 0.0;
        let mut batches = 0;
        for lo in (0..train.len()).step_by(batch) {
            let hi = (lo + batch).min(train.len());
            total += step(net, &train.batch(lo, hi), rate);
            batches += 1;
        }
        losses.push(total / batches as f32);
    }
    losses
}

/// The fraction of `data` the network classifies correctly.
pub fn accuracy(net: &Net, data: &Data) -> f32 {
    let z = logits(net, &hidden(net, &data.x));
    correct(&z, &data.y) as f32 / data.len() as f32
}

/// The same training as plain sequential Rust: the reference every mode is checked
/// against.
pub mod reference {
    use super::{Data, Net, CLASSES, HIDDEN, INPUTS};

    fn forward(net: &Net, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let images = x.len() / INPUTS;
        let mut hid = vec![0.0f32; images * HIDDEN];
        for s in 0..images {
            for h in 0..HIDDEN {
                let mut z = 0.0f32;
                for j in 0..INPUTS {
                    z += net.w1[h * INPUTS + j] * x[s * INPUTS + j];
                }
                hid[s * HIDDEN + h] = (z + net.b1[h]).max(0.0);
            }
        }
        let mut out = vec![0.0f32; images * CLASSES];
        for s in 0..images {
            for o in 0..CLASSES {
                let mut z = 0.0f32;
                for h in 0..HIDDEN {
                    z += net.w2[o * HIDDEN + h] * hid[s * HIDDEN + h];
                }
                out[s * CLASSES + o] = z + net.b2[o];
            }
        }
        (hid, out)
    }

    /// One SGD step; returns the batch's loss before it.
    pub fn step(net: &mut Net, batch: &Data, rate: f32) -> f32 {
        let (x, y) = (&batch.x, &batch.y);
        let images = y.len();
        let (hid, z) = forward(net, x);
        let mut dz = vec![0.0f32; images * CLASSES];
        let mut loss = 0.0f32;
        for s in 0..images {
            let row = &z[s * CLASSES..(s + 1) * CLASSES];
            let m = row.iter().fold(f32::MIN, |a, &b| a.max(b));
            let total: f32 = row.iter().map(|v| (v - m).exp()).sum();
            loss += m + total.ln() - row[y[s]];
            for o in 0..CLASSES {
                let p = (row[o] - m).exp() / total;
                let target = if y[s] == o { 1.0 } else { 0.0 };
                dz[s * CLASSES + o] = (p - target) * (1.0 / images as f32);
            }
        }
        let mut gw2 = vec![0.0f32; CLASSES * HIDDEN];
        let mut gb2 = vec![0.0f32; CLASSES];
        for o in 0..CLASSES {
            for h in 0..HIDDEN {
                let mut g = 0.0f32;
                for s in 0..images {
                    g += dz[s * CLASSES + o] * hid[s * HIDDEN + h];
                }
                gw2[o * HIDDEN + h] = g;
            }
            gb2[o] = (0..images).map(|s| dz[s * CLASSES + o]).sum();
        }
        let mut dh = vec![0.0f32; images * HIDDEN];
        for s in 0..images {
            for h in 0..HIDDEN {
                if hid[s * HIDDEN + h] > 0.0 {
                    let mut g = 0.0f32;
                    for o in 0..CLASSES {
                        g += net.w2[o * HIDDEN + h] * dz[s * CLASSES + o];
                    }
                    dh[s * HIDDEN + h] = g;
                }
            }
        }
        let mut gw1 = vec![0.0f32; HIDDEN * INPUTS];
        let mut gb1 = vec![0.0f32; HIDDEN];
        for h in 0..HIDDEN {
            for j in 0..INPUTS {
                let mut g = 0.0f32;
                for s in 0..images {
                    g += dh[s * HIDDEN + h] * x[s * INPUTS + j];
                }
                gw1[h * INPUTS + j] = g;
            }
            gb1[h] = (0..images).map(|s| dh[s * HIDDEN + h]).sum();
        }
        let update = |w: &mut Vec<f32>, g: &[f32]| {
            for (w, g) in w.iter_mut().zip(g) {
                *w -= rate * g;
            }
        };
        update(&mut net.w1, &gw1);
        update(&mut net.b1, &gb1);
        update(&mut net.w2, &gw2);
        update(&mut net.b2, &gb2);
        loss / images as f32
    }

    /// Trains like [`super::train`].
    pub fn train(net: &mut Net, train: &Data, epochs: usize, batch: usize, rate: f32) -> Vec<f32> {
        super::train_with(step, net, train, epochs, batch, rate)
    }

    /// Like [`super::accuracy`].
    pub fn accuracy(net: &Net, data: &Data) -> f32 {
        let (_, z) = forward(net, &data.x);
        let right = (0..data.len())
            .filter(|&s| {
                let row = &z[s * CLASSES..(s + 1) * CLASSES];
                let best = (0..CLASSES).fold(0, |b, c| if row[c] > row[b] { c } else { b });
                best == data.y[s]
            })
            .count();
        right as f32 / data.len() as f32
    }
}

/// Training (`BATCH` 32, rate 0.1; 30 epochs, or 3 when small) in every available mode, as
/// one report for the suite: each mode's losses and test accuracy checked against the
/// sequential reference.
pub fn report(small: bool) -> crate::Report {
    let epochs = if small { 3 } else { 30 };
    let (train_set, test) = digits();
    let (batch, rate) = (32, 0.1);
    crate::measure(
        "nn (digits)",
        format!("{} images, {epochs} epochs", train_set.len()),
        || {
            let mut net = Net::new(7);
            let losses = reference::train(&mut net, &train_set, epochs, batch, rate);
            (losses, reference::accuracy(&net, &test))
        },
        || {
            let mut net = Net::new(7);
            let losses = train(&mut net, &train_set, epochs, batch, rate);
            (losses, accuracy(&net, &test))
        },
        |_, got, want| {
            for (e, (l, r)) in got.0.iter().zip(&want.0).enumerate() {
                if (l - r).abs() > 1e-3 * r.abs().max(1.0) {
                    return Err(format!("epoch {e}: loss {l} but the reference has {r}"));
                }
            }
            if (got.1 - want.1).abs() > 0.01 {
                return Err(format!(
                    "test accuracy {} but the reference has {}",
                    got.1, want.1
                ));
            }
            Ok(())
        },
    )
}
