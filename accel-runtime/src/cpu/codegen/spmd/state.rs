//! The state of code generation for a gang, kept in the function context while an
//! element is generated for lanes (apart from the rest of the SPMD code, which builds on
//! the function context).

use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::Value;
use cranelift_frontend::Variable;
use std::collections::{HashMap, HashSet};

/// Code generation of an element (or a gang's) at an index (an error: why it failed).
pub(in crate::cpu::codegen) type ElementFn<'a, F> =
    dyn FnMut(&mut F, Value) -> Result<(), String> + 'a;

/// The prefix of errors that make a kernel fall back to scalar code.
const NOT_SPMD: &str = "not SPMD: ";

/// Why an element cannot run as SPMD code (the kernel then runs scalar code).
pub(in crate::cpu::codegen) fn not_spmd(what: impl std::fmt::Display) -> String {
    format!("{NOT_SPMD}{what}")
}

/// Where a varying variable's word is kept.
#[derive(Clone, Debug)]
pub(in crate::cpu::codegen) enum Slot {
    /// A word the same in every lane.
    Uni(Variable),
    /// The base of a `Part::Seq` word (the gang's index), and whether it is aligned.
    Seq(Variable, bool),
    /// Its vectors.
    Var(Vec<Variable>),
    /// A descending index's first lane (see `Part::Rev`).
    Rev(Variable),
    /// A clamped index's words (see `Part::Clamp`): base, bounds, offset.
    Clamp([Variable; 4], bool),
    /// A strided word's first lane and stride (see `Part::Strided`).
    Strided(Variable, Variable),
}

/// A gang loop that walks its range row by row for the divisors `d` of the index in
/// its element (`let i = p / d; let j = p % d;`, a 2-D `create` over `m * d` elements;
/// `p / (n * n)`, `p / n % n` and `p % n` of a 3-D one): no gang straddles a multiple of
/// any `d`, so in every gang each `p / d` is one number and each `p % d` consecutive.
#[derive(Clone, Debug)]
pub(in crate::cpu::codegen) struct RowWalk {
    /// The index variable.
    pub(in crate::cpu::codegen) param: String,
    /// The divisors.
    pub(in crate::cpu::codegen) divisors: Vec<Divisor>,
    /// The element's aliases, which the divisors and the index are read through.
    pub(in crate::cpu::codegen) aliases: super::aliases::Aliases,
    /// Divisions the same in every gang of a row (`p / n % n`, a 3-D index's middle
    /// coordinate), with the variable holding each: a walk row by row computes them once
    /// per row instead of once per gang (see `walks`).
    pub(in crate::cpu::codegen) values: Vec<RowValue>,
}

/// One of a [`RowWalk`]'s values.
#[derive(Clone, Debug)]
pub(in crate::cpu::codegen) struct RowValue {
    /// The division as the element writes it (`j % n`, `j` bound in the element).
    pub(in crate::cpu::codegen) expr: accel_ir::Expr,
    /// The same through the element's aliases (`p / n % n`): what a row's start computes.
    pub(in crate::cpu::codegen) dealiased: accel_ir::Expr,
    /// This row's value.
    pub(in crate::cpu::codegen) var: Variable,
}

/// Whether dividing by `d` cannot fail in a walk of rows of `divisors`: `d` is a non-zero
/// literal or one of the divisors (a zero one runs no gang).
pub(in crate::cpu::codegen) fn never_zero(d: &accel_ir::Expr, divisors: &[Divisor]) -> bool {
    d.literal_usize().is_some_and(|c| c != 0) || divisors.iter().any(|x| x.expr == *d)
}

/// One divisor of a [`RowWalk`].
#[derive(Clone, Debug)]
pub(in crate::cpu::codegen) struct Divisor {
    /// The divisor, an expression of values bound outside the element.
    pub(in crate::cpu::codegen) expr: accel_ir::Expr,
    /// Its value, computed before the loop.
    pub(in crate::cpu::codegen) value: Value,
    /// The row being walked: `p / d`.
    pub(in crate::cpu::codegen) row: Variable,
    /// Where it starts: `(p / d) * d`.
    pub(in crate::cpu::codegen) row_start: Variable,
}

/// The state of code generation for a gang.
pub(in crate::cpu::codegen) struct Gang {
    /// The variables that differ between lanes.
    pub(in crate::cpu::codegen) varying: HashSet<String>,
    /// Their values (uniform variables live in the function context, as in scalar code).
    pub(in crate::cpu::codegen) vars: HashMap<String, (Type, Vec<Slot>)>,
    /// The lanes running here (a [`Mask`]); `None` when all of them do.
    pub(in crate::cpu::codegen) mask: Option<Mask>,
    /// A zeroed stack slot's address: where masked-off lanes of a gather load from.
    pub(in crate::cpu::codegen) dummy: Option<Value>,
    /// Masks narrowed from comparisons of 64-bit lanes, with the comparisons' own masks
    /// (two vectors): blends of 64-bit words use those, defined where the mask is.
    pub(in crate::cpu::codegen) wide_masks: HashMap<Value, Vec<Value>>,
    /// Set when the gang loop walks rows (see [`RowWalk`]).
    pub(in crate::cpu::codegen) rows: Option<RowWalk>,
    /// How many groups the gang has.
    pub(in crate::cpu::codegen) groups: usize,
    /// The lanes of each group (see `Gen::group_lanes`).
    pub(in crate::cpu::codegen) group: usize,
    /// The mask each varying variable was bound under, when some lanes were not running:
    /// assigned under that same mask, its other lanes need not keep their values (they
    /// are never read: the variable's scope is that code), so no blend.
    pub(in crate::cpu::codegen) bound_under: HashMap<String, Mask>,
    /// Whether the row's [`RowWalk::values`] hold this row's values (a walk row by row
    /// sets them at each row's start).
    pub(in crate::cpu::codegen) row_values_set: bool,
    /// An `if` condition (by address) known to hold in every lane (`true`) or in none
    /// (`false`) of the gangs being generated: a run of gangs between a stencil's
    /// borders (see `walks::run_gang_span`) takes its arm without testing it.
    pub(in crate::cpu::codegen) settled: Option<(usize, bool)>,
    /// The element's outermost block, by its statements' address: a loop there runs once
    /// per element, inside no other loop.
    pub(in crate::cpu::codegen) root_block: usize,
    /// Variables that the next varying loop, one of the outermost block's, assigns and
    /// nothing after it reads (see `free_running`).
    pub(in crate::cpu::codegen) pending_free: HashSet<String>,
    /// While such a loop's body runs: its lanes' mask and those variables. A lane that left
    /// the loop may go on computing them, since no code reads its values again (the
    /// loop's test and body run only for live lanes, whose values are exact), so their
    /// assignments directly in the body blend no mask: Mandelbrot's `x` and `y`.
    pub(in crate::cpu::codegen) free_running: Option<(Mask, HashSet<String>)>,
    /// How many loops whose steps differ between lanes enclose the code being generated.
    pub(in crate::cpu::codegen) varying_loops: usize,
}

/// Which lanes of a gang run: one vector of 32-bit lanes (`I32X4` for four lanes) per
/// group, each lane all ones or all zeros.
pub(in crate::cpu::codegen) type Mask = Vec<Value>;

/// A read down a column while a blocked loop's block runs (see `packed`): where its
/// iterations' lanes are.
#[derive(Clone, Debug)]
pub(in crate::cpu::codegen) struct PackedLoad {
    pub(in crate::cpu::codegen) seq: String,
    pub(in crate::cpu::codegen) index: Expr,
    pub(in crate::cpu::codegen) var: String,
    pub(in crate::cpu::codegen) elem: ScalarType,
    /// The buffer: a row of the gang's lanes for each iteration of the block.
    pub(in crate::cpu::codegen) buffer: Value,
    /// The block's first iteration.
    pub(in crate::cpu::codegen) first: Value,
}
