//! What the host program launches: one [`Launch`] per top-level parallel operation, with
//! the kind of kernels it runs (each kind's kernels and launch are in `ops`).

use accel_ir::{Expr, Type};

/// What a launch does, and the host expressions it needs.
#[derive(Debug, Clone)]
pub enum LaunchKind {
    /// `create`: writes `n` elements of `elem` into new columns (kernel `NAME`).
    Map {
        /// The element type.
        elem: Type,
    },
    /// `create` of rows of `elem` (each element a `create` itself): kernel `NAME_len`
    /// writes each row's length, `NAME` checks they are all the first's and writes the
    /// rows packed (a regular nested result).
    Rows {
        /// The rows' element type.
        elem: Type,
    },
    /// `create(n, |c| reduce(op, ne, create(m, g)))` with `m` the same for every `c`
    /// (a host expression): kernel `NAME` is the plain map (one thread per segment), for
    /// many segments; `NAME_part` and `NAME_final` reduce each segment with many blocks,
    /// for few long ones (k-means' per-cluster sums). The host picks at run time.
    SegReduce {
        /// The reductions' element type.
        elem: Type,
        /// Whether the operator is a primitive commutative one.
        commutative: bool,
        /// The segments' length, a host expression.
        m: Expr,
    },
    /// `parallel_loop` (kernel `NAME`).
    Loop,
    /// `reduce_by_index` or `scatter` over `n` values into `m` bins (a host expression)
    /// of `elem`: kernels `NAME_init` (the initial bins) and `NAME` (the values), and
    /// `NAME_shared` (through a sub-histogram per block) when `shared`.
    Histogram {
        /// The element type.
        elem: Type,
        /// The number of bins, a host expression.
        m: Expr,
        /// Whether the update takes a lock per bin (which the host allocates).
        locked: bool,
        /// Whether there is a shared-memory kernel, used when the bins fit.
        shared: bool,
    },
    /// `filter` (kernels `NAME_flags`, `NAME_offsets`, `NAME_write`).
    Filter {
        /// The element type.
        elem: Type,
    },
    /// `reduce` (kernels `NAME_part` and `NAME_final`); `commutative` selects the
    /// grid-stride partial kernel.
    Reduce {
        /// The element type.
        elem: Type,
        /// Whether the operator is a primitive commutative one.
        commutative: bool,
    },
    /// Inclusive `scan` (kernels `NAME_part`, `NAME_carry`, `NAME_final`).
    Scan {
        /// The element type.
        elem: Type,
    },
    /// `reduce` over rows of `elem` with a row as neutral element (the host variable `ne`,
    /// whose length is every row's): kernels `NAME_part` (each thread folds a contiguous
    /// chunk into its row of the totals) and `NAME_final` (one block folds the totals).
    RowReduce {
        /// The rows' element type.
        elem: Type,
        /// The host variable holding the neutral row.
        ne: String,
    },
    /// Inclusive `scan` over rows: `NAME_part` as for `RowReduce`, `NAME_carry` (one block:
    /// the carry into each thread's chunk), `NAME_final` (each chunk rescanned in place).
    RowScan {
        /// The rows' element type.
        elem: Type,
        /// The host variable holding the neutral row.
        ne: String,
    },
}

/// One top-level parallel operation.
#[derive(Debug, Clone)]
pub struct Launch {
    /// What it does.
    pub kind: LaunchKind,
    /// The kernel name (or its prefix).
    pub kernel: String,
    /// The names of its kernels, in the order they are loaded.
    pub kernels: Vec<String>,
    /// Its size, as a host expression.
    pub n: Expr,
    /// The host variables its kernels read, in parameter order.
    pub free: Vec<(String, Type)>,
}

/// The host-level name of launch `k`.
pub fn launch_name(k: usize) -> String {
    format!("accel::launch#{k}")
}

impl Launch {
    /// The kernels of this launch, by name.
    pub fn kernel_names(&self) -> Vec<String> {
        self.kernels.clone()
    }
}
