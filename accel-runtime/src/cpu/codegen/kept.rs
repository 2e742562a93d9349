//! The state of loop-carried store-to-load forwarding (see `forwarding`), apart from
//! the code that generates it so that the function context can hold it.

use accel_ir::Expr;
use cranelift_codegen::ir::Value;
use cranelift_frontend::Variable;

/// A tensor whose element `[lead.., var]` each step of a loop sets and the next reads at
/// `[lead.., var - 1]`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Carried {
    pub(super) tensor: String,
    pub(super) lead: Vec<Expr>,
}

/// The state of a loop's forwarding while its body is generated.
pub(super) struct Forwarding {
    pub(super) var: String,
    /// Each carried tensor with the variables of the value set by the step before and by
    /// this step.
    pub(super) kept: Vec<(Carried, Variable, Variable)>,
    /// Whether the step before set the kept values (false on the first step, and on every
    /// step when the tensors' memory may overlap).
    pub(super) have: Variable,
    /// Whether the tensors' memory was found disjoint before the loop.
    pub(super) disjoint: Value,
}
