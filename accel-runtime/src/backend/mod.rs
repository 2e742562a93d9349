//! The backend contract: what the dispatcher hands a backend (a site's front-end result
//! and its captured values, marshaled) and what a backend hands back (compiled code that
//! runs), with the facts every backend shares: the word layout and marshaling ([`abi`],
//! [`layout`]), failure kinds ([`failure`]), the compile cache ([`cache`]), dumps
//! ([`dump`]) and the log switch ([`log`]).
//!
//! Imports point one way: `accel_ir` ← this contract ← the backends ← the dispatcher. A
//! backend never calls back up into site assembly or dispatch.

pub mod abi;
pub mod cache;
pub mod disk_cache;
pub mod dump;
pub mod failure;
pub mod layout;
pub mod log;
pub mod scoped;
pub mod trace;

/// Why a backend does not compile an assignment to an element of a sequence, with what to
/// write instead (every backend says the same).
pub const SEQUENCE_ELEMENT_ASSIGNED: &str =
    "assigning to an element of a sequence (sequences are values in accelerated code): \
     build a new one with `create` or `map`, keep the data in a local array `[T; N]`, or \
     write a `Tensor` in a `parallel_loop`";

use abi::{Arena, Marshal};
use accel_ir::{Expr, Type};
use std::sync::Arc;

/// A site as backends know it: its identity (for caches) and its place in the source (for
/// messages and dump file names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SiteKey {
    /// Unique per site in the process.
    pub id: usize,
    pub file: &'static str,
    pub line: u32,
    /// 0-based, as rustc counts.
    pub column: u32,
}

impl SiteKey {
    /// `src/main.rs:12:5`.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.column + 1)
    }
}

/// The front end's result for one site and one combination of captured and result types:
/// the site's program inlined, typed from those types and fused. Every backend compiles
/// from it; the dispatcher computes it once.
#[derive(Debug)]
pub struct FrontEnd {
    /// The fused body: one expression, no calls, every binder typed.
    pub fused: Expr,
    /// The captured values (the functions' constants included) with their types, in the
    /// order they are marshaled.
    pub captures: Vec<(String, Type)>,
    pub result: Type,
    /// The hash of the site's assembled program (`crate::record::program_hash`), which
    /// embedded kernels are matched against.
    pub program_hash: String,
}

/// The front end of the site being compiled, run on first use (a backend whose cache
/// holds the site never asks for it).
pub type FrontEndFn<'a> = &'a dyn Fn() -> Result<Arc<FrontEnd>, String>;

/// A site's captured values as a backend sees them when it compiles.
pub struct Captures<'a> {
    /// Names, in marshaling order (a function's constant is `path::NAME`).
    pub names: &'a [&'a str],
    pub types: &'a [Type],
    /// The word of scalar capture `k` (`None` for other values), read on demand: a backend
    /// may compile values in.
    pub scalar: &'a dyn Fn(usize) -> Option<u64>,
    /// Capture `k`'s stride and its scalars' offsets in an element where its elements may
    /// be read in place (see `accel_type::in_place`), else 0 and none (always for the
    /// programs derived for devices and ranks, whose captures are marshaled as columns);
    /// read on demand, when a backend compiles.
    pub row_layout: &'a dyn Fn(usize) -> (usize, Vec<usize>),
}

/// A backend: compiles sites for one mode.
pub trait Backend: Sync {
    /// The mode's name (`cpu`, `cuda`), as logs and messages say it.
    fn name(&self) -> &'static str;

    /// Whether the backend can run here, or why not.
    fn available(&self) -> Result<(), String>;

    /// The site compiled for these captured values and result type (compiled on first
    /// use, then cached), and whether it came from the cache. With `rows`, the caller
    /// reads a sequence result of flat elements in rows where the code writes it so
    /// ([`Run::rows`], `layout::row_leaves`): a `Vec` returned to the user; the programs
    /// fission derives read columns.
    fn compiled(
        &self,
        site: SiteKey,
        captures: &Captures<'_>,
        result: &Type,
        rows: bool,
        front: FrontEndFn<'_>,
    ) -> (Result<Arc<dyn CompiledSite>, String>, bool);

    /// Whether the code this backend compiles for `site` depends on the captures' types
    /// alone, never on their values: then a thread may reuse it for later calls with
    /// captures of the same types without asking again (see `dispatch`).
    fn code_depends_on_types_alone(&self, _site: SiteKey, _captures: &Captures<'_>) -> bool {
        false
    }

    /// Called after another backend compiled a site for the first time: a chance to check
    /// what this backend would make of it (the CUDA kernel checks without a GPU).
    fn check_other(&self, _site: SiteKey, _types: &[Type], _result: &Type, _front: FrontEndFn<'_>) {
    }
}

/// A site compiled by a backend.
pub trait CompiledSite: Send + Sync {
    /// What was made, for `ACCEL_LOG`: "1 parallel kernel(s)".
    fn summary(&self) -> String;

    /// How long compiling took, in milliseconds.
    fn compile_ms(&self) -> f64;

    /// Runs the site on its marshaled captured values.
    fn run(&self, captures: &Marshal<'_>) -> Result<Run, String>;

    /// Which captures, in marshaling order, the code reads in place (marshaled with
    /// [`Marshal::in_place`]); none by default.
    fn inputs_in_place(&self) -> &[bool] {
        &[]
    }
}

/// What one run of a compiled site gives back.
pub struct Run {
    /// The result's words (see [`layout`]).
    pub words: Vec<u64>,
    /// The memory the result's columns point into.
    pub arena: Arena,
    /// Whether a sequence result is in rows (see `layout::row_leaves`), as a site's caller
    /// may ask ([`Backend::compiled`]'s `rows`).
    pub rows: bool,
    /// What the run moved, for `ACCEL_LOG`: "4000 bytes in, 0 of them copied to marshal".
    pub report: String,
}
