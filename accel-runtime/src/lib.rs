//! Expression acceleration for Rust.
//!
//! Mark one expression with [`accelerate!`] and it runs as a parallel program; mark the
//! functions it calls with [`#[accel]`](accel). Everything the expression needs (the
//! functions it reaches, transitively, and the locals it captures) is extracted at compile
//! time, and what no backend can run is rejected at compile time with a span.
//!
//! ```
//! use accel_runtime::prelude::*;
//!
//! #[accel]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! fn main() {
//!     let v: Vec<i64> = (1..=1000).collect();
//!     assert_eq!(accelerate!(reduce(add, 0, &v)), 500_500);
//!     let c = 3.0f32;
//!     let ys: Vec<f32> = accelerate!(map(|x| c * x, &[1.0f32, 2.0]));
//!     assert_eq!(ys, vec![3.0, 6.0]);
//! }
//! ```
//!
//! # What accelerated code may use
//!
//! - **Parallel operations**: [`map`], [`map2`], [`reduce`], [`scan`], [`filter`],
//!   [`create`], [`flatten`], [`scatter`], [`reduce_by_index`] (a histogram), and
//!   [`parallel_loop`] writing [`Tensor`]s. Iterator chains spell the same operations:
//!   `xs.par_iter().zip(&ys).map(|(x, y)| x * y).sum::<f32>()` (std's `iter` too; `map zip
//!   enumerate filter`, then `sum product fold reduce count all any collect`).
//! - **Types**: `i8 i16 i32 i64 u8 u16 u32 u64 usize f32 f64 bool`, tuples, `[T; N]`,
//!   structs with `#[derive(Accel)]`, sequences (`Vec<T>`, `&[T]`, nested `Vec<Vec<T>>`) and
//!   tensors. Byte literals are `u8`; text goes in as bytes.
//! - **Code**: `let`, blocks, `if`, `match`, `for` and `while` loops over mutable locals,
//!   closures, arithmetic and the usual number methods, calls of `#[accel]` functions.
//!   Anything else (I/O, `String`, heap types, trait objects, recursion, calls of other
//!   functions) is a compile error at the offending code that says what to write instead.
//!
//! # Modes, features, errors
//!
//! `ACCEL_MODE` selects how sites run (see [`Mode`]): `debug` (sequential Rust with every
//! assumption checked), `cpu` (compiled, all cores), `cuda` (the GPU, feature `cuda`), or,
//! unset, the best available. A site the chosen backend cannot compile falls back (the GPU
//! to the CPU, the CPU to sequential code) and says so once on stderr; [`site_stats`] tells
//! what ran each site. `ACCEL_LOG=1` prints what each site did. The feature `ndarray` makes
//! `ndarray` arrays accel values (the `arrays` module).
//!
//! [`accelerate!`] panics when a site fails (an index out of bounds, a division by zero),
//! naming the site; [`try_accelerate!`] returns the same failures as [`AccelError`] values.
//!
//! The user guide (getting started, the full contract, a cookbook, performance) is the
//! mdBook in the repository's `book/` directory.

#![warn(missing_docs)]

extern crate self as accel_runtime;

// The layers, lowest first; imports point down only (tests/architecture.rs checks it).
// Collectives between the ranks that hold distributed sequences.
pub mod comm;
// The backend contract: layout, marshaling, failures, caches, dumps, the traits.
mod backend;
// The record of the sites that ran (ACCEL_RECORD), for build-time kernels.
pub mod record;
// What a site returns when it fails.
mod error;
// The backends.
mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
// Values and their sequential semantics (the debug path) and debug-mode checks.
mod accel_type;
mod chains;
mod checks;
mod ops;
mod report;
mod seq;
mod structure;
mod tensor;
// Distributed sequences (over the values and their operations).
mod dist;
// ndarray arrays as values, results and tensors.
#[cfg(feature = "ndarray")]
pub mod arrays;
// Sites: their descriptions and compile-time checks, program assembly, the front end.
mod assembly;
mod frontend;
mod site;
// Build-time kernels: a site record to an embedded bundle of PTX.
#[cfg(feature = "cuda")]
pub mod build;
// Modes and dispatch, and the record of what ran each site.
mod mode;
// Which devices run sites, and one site split across several.
mod devices;
mod dispatch;
mod stats;

#[doc(hidden)]
pub mod __private;

pub use accel_ir as ir;

/// Registers the kernels `build.rs` generated from the site record
/// ([`build::kernels`]) and embedded in the binary: call it once, at the start of `main`
/// (and of tests that run sites), before any site runs. Sites found in the bundle run on
/// the GPU without NVRTC; the others compile at run time, and `ACCEL_LOG` says why they
/// missed (not recorded, or recorded before their program changed).
///
/// ```ignore
/// fn main() {
///     accel_runtime::embed_kernels!();
///     let v: Vec<f32> = (0..1000).map(|i| i as f32).collect();
///     let total: f32 = accelerate!(reduce(|a, b| a + b, 0.0, &v));
/// }
/// ```
#[cfg(feature = "cuda")]
#[macro_export]
macro_rules! embed_kernels {
    () => {
        $crate::cuda::bundle::register(::core::include_str!(::core::concat!(
            ::core::env!("OUT_DIR"),
            "/accel-kernels.json"
        )))
    };
}
/// Makes a free function callable from accelerated code (and from ordinary code: it stays
/// the same function).
///
/// ```
/// use accel_runtime::prelude::*;
///
/// #[accel]
/// fn clamp01(x: f64) -> f64 {
///     if x < 0.0 { 0.0 } else if x > 1.0 { 1.0 } else { x }
/// }
///
/// fn main() {
///     let xs = vec![-0.5, 0.25, 3.0];
///     assert_eq!(accelerate!(map(clamp01, &xs)), vec![0.0, 0.25, 1.0]);
///     assert_eq!(clamp01(2.0), 1.0);
/// }
/// ```
#[doc(inline)]
pub use accel_macros::accel;
/// Runs the marked expression as a parallel program on the mode's backend; a failure
/// (an index out of bounds, a division by zero, …) is a panic naming the site.
///
/// ```
/// use accel_runtime::prelude::*;
/// let v: Vec<i64> = (1..=100).collect();
/// let squares: Vec<i64> = accelerate!(map(|x| x * x, &v));
/// assert_eq!(accelerate!(reduce(|a, b| a + b, 0, &squares)), 338_350);
/// // Iterator chains spell the same operations.
/// let evens = accelerate!(v.par_iter().filter(|x| *x % 2 == 0).count());
/// assert_eq!(evens, 50);
/// ```
#[doc(inline)]
pub use accel_macros::accelerate;
/// The site [`accelerate!`] would run, described instead of run: its extracted program,
/// captures and the functions it reaches.
///
/// ```
/// use accel_runtime::prelude::*;
/// let v = vec![1.0f32, 2.0];
/// let site = describe!(map(|x| x * 2.0, &v));
/// let program = site.program().unwrap();
/// assert_eq!(program.site.captures, ["v"]);
/// assert!(site.location().starts_with("accel-runtime/src/lib.rs:"));
/// ```
#[doc(inline)]
pub use accel_macros::describe;
/// Runs the marked expression like [`accelerate!`], returning every failure as an
/// [`AccelError`] value.
///
/// ```
/// use accel_runtime::{prelude::*, ErrorKind};
/// let v = vec![1i64, 2, 3];
/// let at = vec![0usize, 7];
/// let e = try_accelerate!(map(|i| v[i], &at)).unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::IndexOutOfBounds);
/// assert!(e.site().starts_with("accel-runtime/src/lib.rs:"));
/// assert_eq!(try_accelerate!(map(|i| v[i], &[2usize])), Ok(vec![3]));
/// ```
#[doc(inline)]
pub use accel_macros::try_accelerate;
pub use accel_macros::Accel;
pub use accel_type::Accel;
pub use cpu::pool::num_threads;
pub use devices::{with_devices, Device};
pub use dispatch::mode;
pub use dist::DistVec;
pub use error::{AccelError, ErrorKind};
pub use mode::{with_mode, Mode, ModeError};
pub use ops::{
    create, filter, flatten, map, map2, parallel_loop, reduce, reduce_by_index, scan, scatter,
};
pub use seq::Seq;
pub use site::SiteDesc;
#[doc(hidden)]
pub use site::{FnDesc, OpUse};
pub use stats::{site_stats, RanOn, SiteStats};
pub use structure::max_tensor_rank;
pub use tensor::Tensor;

/// Everything a user of accelerated code needs: `use accel_runtime::prelude::*;`.
pub mod prelude {
    // `crate::mode` would name the private module `mode` too.
    pub use crate::dispatch::mode;
    pub use crate::{
        accel, accelerate, create, describe, filter, flatten, map, map2, parallel_loop, reduce,
        reduce_by_index, scan, scatter, try_accelerate, with_devices, with_mode, Accel, AccelError,
        Device, Mode, Seq, Tensor,
    };
}
