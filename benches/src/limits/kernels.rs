//! The hand-written kernels of `limits`: each workload as a performance engineer writes it
//! for this machine, in the widest vectors it has (AVX-512, else AVX2 with FMA), split
//! over the cores by rayon. The drivers here split the work and are the same for every
//! instruction set; each set's module writes the chunks ([`Chunks`]). Outputs are fresh
//! vectors backed by huge pages (as accel backs its results: one page fault per 2 MiB
//! instead of per 4 KiB); those larger than the cache are written with aligned
//! non-temporal stores, which skip the read for ownership.
//!
//! Every kernel is reached through a token ([`Avx512`], [`Avx2`]) that exists only where
//! its instruction set was detected: that is what makes calling the `#[target_feature]`
//! functions sound.

pub use super::avx2::Avx2;
pub use super::avx512::Avx512;
use accel_examples::classic::black_scholes_option;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// The unit every chunk but the last is a multiple of, in `f32`s: a cache line, so that
/// every chunk of an output starts on one (its head split off) and a chunk of any
/// instruction set's vectors is whole vectors.
const LINE: usize = 16;

/// One instruction set's kernels, each over the chunk a driver gives it. Only a token of
/// a detected instruction set implements it.
pub trait Chunks: Copy + Send + Sync {
    /// Bodies of one N-body block ([`Chunks::n_body_block`]).
    fn body_block(self) -> usize;
    /// The sum of `xs`.
    fn sum_chunk(self, xs: &[f32]) -> f32;
    /// The dot product of `xs` and `ys` (as long).
    fn dot_chunk(self, xs: &[f32], ys: &[f32]) -> f32;
    /// `a * x + y` for each pair into `out` (as long, starting on a cache line), with
    /// non-temporal stores if `stream`.
    fn saxpy_chunk(
        self,
        a: f32,
        xs: &[f32],
        ys: &[f32],
        out: &mut [MaybeUninit<f32>],
        stream: bool,
    );
    /// Black-Scholes' call and put prices of each option into `out` (as long, starting
    /// on a cache line), with non-temporal stores if `stream`.
    fn black_scholes_chunk(
        self,
        options: (&[f32], &[f32], &[f32]),
        out: &mut [MaybeUninit<(f32, f32)>],
        stream: bool,
    );
    /// The escape times of one row of pixels at the columns `cx`.
    fn mandelbrot_row(self, cx: &[f64], cy: f64, out: &mut [MaybeUninit<u32>]);
    /// The x accelerations of bodies `i0..i0 + out.len()` (a whole block) from all of
    /// `[px, py, pz, pm]`: exactly as the reference computes them if `exact`.
    fn n_body_block(self, exact: bool, i0: usize, bodies: [&[f32]; 4], out: &mut [f32]);
}

/// Implements [`Chunks`] for the token `$token` of the module that invokes it: each method
/// calls that module's `#[target_feature]` function of the same name (`sum_chunk`, ..,
/// `n_body_block`, its const parameter chosen from the flag), and an N-body block holds
/// `$body_block` bodies.
macro_rules! chunks_of_this_module {
    ($token:ty, $body_block:expr) => {
        // SAFETY (every method): a token exists only where its `detect` found the
        // instruction set that its module's `#[target_feature]` functions enable.
        impl $crate::kernels::Chunks for $token {
            fn body_block(self) -> usize {
                $body_block
            }

            fn sum_chunk(self, xs: &[f32]) -> f32 {
                // SAFETY: see the impl.
                unsafe { sum_chunk(xs) }
            }

            fn dot_chunk(self, xs: &[f32], ys: &[f32]) -> f32 {
                // SAFETY: see the impl.
                unsafe { dot_chunk(xs, ys) }
            }

            fn saxpy_chunk(
                self,
                a: f32,
                xs: &[f32],
                ys: &[f32],
                out: &mut [::std::mem::MaybeUninit<f32>],
                stream: bool,
            ) {
                // SAFETY: see the impl.
                unsafe {
                    if stream {
                        saxpy_chunk::<true>(a, xs, ys, out)
                    } else {
                        saxpy_chunk::<false>(a, xs, ys, out)
                    }
                }
            }

            fn black_scholes_chunk(
                self,
                (price, strike, years): (&[f32], &[f32], &[f32]),
                out: &mut [::std::mem::MaybeUninit<(f32, f32)>],
                stream: bool,
            ) {
                // SAFETY: see the impl.
                unsafe {
                    if stream {
                        black_scholes_chunk::<true>(price, strike, years, out)
                    } else {
                        black_scholes_chunk::<false>(price, strike, years, out)
                    }
                }
            }

            fn mandelbrot_row(self, cx: &[f64], cy: f64, out: &mut [::std::mem::MaybeUninit<u32>]) {
                // SAFETY: see the impl.
                unsafe { mandelbrot_row(cx, cy, out) }
            }

            fn n_body_block(self, exact: bool, i0: usize, bodies: [&[f32]; 4], out: &mut [f32]) {
                let [px, py, pz, pm] = bodies;
                // SAFETY: see the impl.
                unsafe {
                    if exact {
                        n_body_block::<true>(i0, px, py, pz, pm, out)
                    } else {
                        n_body_block::<false>(i0, px, py, pz, pm, out)
                    }
                }
            }
        }
    };
}
pub(super) use chunks_of_this_module;

/// The widest instruction set this CPU has that the limits are written for.
#[derive(Clone, Copy)]
pub enum Isa {
    Avx512(Avx512),
    Avx2(Avx2),
}

impl Isa {
    /// AVX-512F where the CPU has it, else AVX2 with FMA, else none.
    pub fn detect() -> Option<Isa> {
        Avx512::detect()
            .map(Isa::Avx512)
            .or_else(|| Avx2::detect().map(Isa::Avx2))
    }

    /// The instruction set's name, as the report shows it.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512(_) => "AVX-512",
            Isa::Avx2(_) => "AVX2",
        }
    }
}

/// Each method runs the detected set's kernel.
impl Chunks for Isa {
    fn body_block(self) -> usize {
        match self {
            Isa::Avx512(k) => k.body_block(),
            Isa::Avx2(k) => k.body_block(),
        }
    }

    fn sum_chunk(self, xs: &[f32]) -> f32 {
        match self {
            Isa::Avx512(k) => k.sum_chunk(xs),
            Isa::Avx2(k) => k.sum_chunk(xs),
        }
    }

    fn dot_chunk(self, xs: &[f32], ys: &[f32]) -> f32 {
        match self {
            Isa::Avx512(k) => k.dot_chunk(xs, ys),
            Isa::Avx2(k) => k.dot_chunk(xs, ys),
        }
    }

    fn saxpy_chunk(
        self,
        a: f32,
        xs: &[f32],
        ys: &[f32],
        out: &mut [MaybeUninit<f32>],
        stream: bool,
    ) {
        match self {
            Isa::Avx512(k) => k.saxpy_chunk(a, xs, ys, out, stream),
            Isa::Avx2(k) => k.saxpy_chunk(a, xs, ys, out, stream),
        }
    }

    fn black_scholes_chunk(
        self,
        options: (&[f32], &[f32], &[f32]),
        out: &mut [MaybeUninit<(f32, f32)>],
        stream: bool,
    ) {
        match self {
            Isa::Avx512(k) => k.black_scholes_chunk(options, out, stream),
            Isa::Avx2(k) => k.black_scholes_chunk(options, out, stream),
        }
    }

    fn mandelbrot_row(self, cx: &[f64], cy: f64, out: &mut [MaybeUninit<u32>]) {
        match self {
            Isa::Avx512(k) => k.mandelbrot_row(cx, cy, out),
            Isa::Avx2(k) => k.mandelbrot_row(cx, cy, out),
        }
    }

    fn n_body_block(self, exact: bool, i0: usize, bodies: [&[f32]; 4], out: &mut [f32]) {
        match self {
            Isa::Avx512(k) => k.n_body_block(exact, i0, bodies, out),
            Isa::Avx2(k) => k.n_body_block(exact, i0, bodies, out),
        }
    }
}

// Options are written as pairs of floats: the tuple must be laid out as `[call, put]`.
const _: () = assert!(
    std::mem::size_of::<(f32, f32)>() == 8
        && std::mem::offset_of!((f32, f32), 0) == 0
        && std::mem::offset_of!((f32, f32), 1) == 4
);

impl Isa {
    /// The sum of `xs`.
    pub fn sum(self, xs: &[f32]) -> f32 {
        // Scalar up to the first cache line, so that every vector load stays in one line.
        let head = xs.as_ptr().align_offset(64).min(xs.len());
        let (h, body) = xs.split_at(head);
        let chunk = stream_chunk(body.len());
        let body: f32 = body.par_chunks(chunk).map(|c| self.sum_chunk(c)).sum();
        h.iter().sum::<f32>() + body
    }

    /// The dot product of `xs` and `ys` (as long).
    pub fn dot(self, xs: &[f32], ys: &[f32]) -> f32 {
        assert_eq!(xs.len(), ys.len());
        let head = xs.as_ptr().align_offset(64).min(xs.len());
        let chunk = stream_chunk(xs.len() - head);
        let body: f32 = xs[head..]
            .par_chunks(chunk)
            .zip(ys[head..].par_chunks(chunk))
            .map(|(x, y)| self.dot_chunk(x, y))
            .sum();
        let h: f32 = xs[..head].iter().zip(&ys[..head]).map(|(x, y)| x * y).sum();
        h + body
    }

    /// `a * x + y` for each pair, into a new vector.
    pub fn saxpy(self, a: f32, xs: &[f32], ys: &[f32]) -> Vec<f32> {
        let n = xs.len();
        let mut out = fresh(n);
        self.saxpy_into(a, xs, ys, &mut out.spare_capacity_mut()[..n]);
        // SAFETY: `saxpy_into` wrote all `n` elements.
        unsafe { out.set_len(n) };
        out
    }

    /// `a * x + y` for each pair, written into `out` (as long): every element is written.
    pub fn saxpy_into(self, a: f32, xs: &[f32], ys: &[f32], out: &mut [MaybeUninit<f32>]) {
        let n = out.len();
        assert!(xs.len() == n && ys.len() == n);
        // Scalar up to the first cache line of the output, so that the rest is written
        // with aligned (non-temporal, for large outputs) stores.
        let head = out.as_ptr().align_offset(64).min(n);
        let (oh, ob) = out.split_at_mut(head);
        for ((o, &x), &y) in oh.iter_mut().zip(xs).zip(ys) {
            o.write(a * x + y);
        }
        let chunk = stream_chunk(n - head);
        ob.par_chunks_mut(chunk)
            .zip(xs[head..].par_chunks(chunk))
            .zip(ys[head..].par_chunks(chunk))
            // Each chunk of `ob` starts on a cache line (the head was split off and `chunk`
            // is a multiple of a line).
            .for_each(|((o, x), y)| self.saxpy_chunk(a, x, y, o, streams(4 * n)));
    }

    /// The call and put prices of each option, as `black_scholes_option` computes them.
    pub fn black_scholes(self, price: &[f32], strike: &[f32], years: &[f32]) -> Vec<(f32, f32)> {
        let n = price.len();
        let mut out = fresh(n);
        self.black_scholes_into(price, strike, years, &mut out.spare_capacity_mut()[..n]);
        // SAFETY: `black_scholes_into` wrote all `n` elements.
        unsafe { out.set_len(n) };
        out
    }

    /// The call and put prices of each option, written into `out` (as long): every
    /// element is written.
    pub fn black_scholes_into(
        self,
        price: &[f32],
        strike: &[f32],
        years: &[f32],
        out: &mut [MaybeUninit<(f32, f32)>],
    ) {
        let n = out.len();
        assert!(price.len() == n && strike.len() == n && years.len() == n);
        let head = out.as_ptr().align_offset(64).min(n);
        let (oh, ob) = out.split_at_mut(head);
        for (i, o) in oh.iter_mut().enumerate() {
            o.write(black_scholes_option(price[i], strike[i], years[i]));
        }
        // Compute-bound: chunks a few times more than the threads, for balance.
        let chunk = (n - head)
            .div_ceil(8 * rayon::current_num_threads())
            .clamp(LINE, 1 << 14)
            .next_multiple_of(2 * LINE);
        ob.par_chunks_mut(chunk)
            .zip(price[head..].par_chunks(chunk))
            .zip(strike[head..].par_chunks(chunk))
            .zip(years[head..].par_chunks(chunk))
            // Each chunk starts on a cache line, as in `saxpy_into`.
            .for_each(|(((o, p), s), y)| self.black_scholes_chunk((p, s, y), o, streams(8 * n)));
    }

    /// The escape times of a `w` x `h` view, as `escape_time` computes them.
    pub fn mandelbrot(self, w: usize, h: usize) -> Vec<u32> {
        // The same operations as `escape_time`'s, once per column instead of per pixel.
        let cx: Vec<f64> = (0..w).map(|c| c as f64 / w as f64 * 3.0 - 2.0).collect();
        let mut out = fresh(w * h);
        out.spare_capacity_mut()[..w * h]
            .par_chunks_mut(w)
            .enumerate()
            .for_each(|(row, o)| {
                let cy = row as f64 / h as f64 * 2.0 - 1.0;
                self.mandelbrot_row(&cx, cy, o)
            });
        // SAFETY: every row was written whole.
        unsafe { out.set_len(w * h) };
        out
    }

    /// The x accelerations of each body (softened, all pairs).
    pub fn n_body(self, px: &[f32], py: &[f32], pz: &[f32], pm: &[f32]) -> Vec<f32> {
        self.n_body_with(false, [px, py, pz, pm])
    }

    /// [`Isa::n_body`] computing exactly what the reference computes (a square root
    /// and a division per pair, every operation rounded as written): accel's contract.
    pub fn n_body_exact(self, px: &[f32], py: &[f32], pz: &[f32], pm: &[f32]) -> Vec<f32> {
        self.n_body_with(true, [px, py, pz, pm])
    }

    fn n_body_with(self, exact: bool, bodies: [&[f32]; 4]) -> Vec<f32> {
        let [px, py, pz, pm] = bodies;
        let n = px.len();
        assert!(py.len() == n && pz.len() == n && pm.len() == n);
        let block = self.body_block();
        let mut out = vec![0.0f32; n];
        out.par_chunks_mut(block).enumerate().for_each(|(b, o)| {
            let i0 = b * block;
            if o.len() == block {
                self.n_body_block(exact, i0, bodies, o)
            } else {
                for (k, o) in o.iter_mut().enumerate() {
                    *o = super::n_body_x(i0 + k, px, py, pz, pm);
                }
            }
        });
        out
    }

    /// Reads `xs` as fast as the cores can (the sum, for something to do with the data):
    /// the machine's read bandwidth.
    pub fn read(self, xs: &[f32]) -> f32 {
        self.sum(xs)
    }
}

/// Elements per rayon task of the streaming kernels: at most 256 KiB of `f32` (accel's
/// 256 chunks of a launch of this suite's size), and at least four tasks per thread; a
/// multiple of 128 so that every task starts on a cache line.
fn stream_chunk(n: usize) -> usize {
    n.div_ceil(4 * rayon::current_num_threads())
        .clamp(LINE, 1 << 16)
        .next_multiple_of(8 * LINE)
}

/// An empty vector with room for `n` elements, its pages huge where the system allows.
fn fresh<T>(n: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge_pages(v.as_mut_ptr().cast(), n * std::mem::size_of::<T>());
    v
}

/// Asks the kernel to back the whole 2 MiB pages inside a large, untouched allocation with
/// transparent huge pages (a hint: where refused or off, nothing changes).
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize).saturating_add(bytes) / HUGE * HUGE;
    if bytes >= 2 * HUGE && end > start {
        // SAFETY: [start, end) lies inside the caller's live allocation; MADV_HUGEPAGE
        // changes how its pages are backed, never their contents or the mapping.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// Whether an output of `bytes` is written with non-temporal stores: where it would not
/// fit in the last-level cache (32 MiB here, shared by the cores, and the inputs need
/// room too) its lines would only be read for ownership to be evicted again; smaller ones
/// are read again sooner from the cache.
fn streams(bytes: usize) -> bool {
    bytes > 16 << 20
}

/// `escape_time` of one pixel, from its coordinates.
pub(super) fn escape_time(cx: f64, cy: f64) -> u32 {
    let (mut x, mut y) = (0.0f64, 0.0f64);
    let mut i = 0u32;
    while i < 256 && x * x + y * y <= 4.0 {
        let t = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = t;
        i += 1;
    }
    i
}
