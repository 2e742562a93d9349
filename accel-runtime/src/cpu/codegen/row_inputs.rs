//! Captured sequences of tuples, arrays or records read where they lie (see
//! `accel_type::in_place`): element `i`'s scalar `k` is `stride * i` bytes past the
//! capture's column word `k` (its address in the first element), so no columns are built
//! for a call. Only a capture the program reads as `xs[i]` (or a neighbour `xs[i + 1]`,
//! `xs[i - 1]`) at the index of the parallel operation around the read, in an element
//! without loops (`create(xs.len(), |i| .. xs[i] ..)`, what iterator chains and `map`
//! fuse to), and as `xs.len()`, is read so: a gang's lanes are then consecutive elements,
//! whose scalars it loads as whole vectors and deinterleaves (`spmd::rows_in_place`); any
//! other use keeps columns.

use super::cx::*;
use crate::backend::layout::{flat_columns, RowLayout};
use accel_ir::{BinOp, Expr, Pat, Type};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};

/// Whether the program `body` reads the capture `name` only as `name[i]`, `i` the index
/// of the parallel operation whose element (with no loop) holds the read, and as
/// `name.len()`.
pub(in crate::cpu) fn readable_in_place(body: &Expr, name: &str) -> bool {
    let is_name = |e: &Expr| matches!(e, Expr::Var(v) if v == name);
    let mut uses = 0;
    body.walk(&mut |e| uses += usize::from(is_name(e)));
    let mut fitting = 0;
    body.walk(&mut |e| match e {
        Expr::Method { recv, method, .. } if method == "len" && is_name(recv) => fitting += 1,
        Expr::Par { args, .. } => {
            for a in args {
                let Expr::Lambda { params, body } = a else {
                    continue;
                };
                let [(Pat::Bind { name: i, .. }, _)] = &params[..] else {
                    continue;
                };
                let mut looped = false;
                body.walk(&mut |x| looped |= matches!(x, Expr::For { .. } | Expr::While { .. }));
                if looped {
                    continue;
                }
                body.walk(&mut |x| {
                    if let Expr::Index(b, j) = x {
                        if is_name(b) && at_or_beside(j, i) {
                            fitting += 1;
                        }
                    }
                });
            }
        }
        _ => {}
    });
    // A read counted for two operations' indices (one nested in the other, the same
    // name) makes more fitting uses than uses: then columns.
    uses > 0 && fitting == uses
}

/// Whether the index `j` is `i`, or `i` plus or minus a literal (a stencil's neighbour):
/// consecutive lanes at a gang's index.
fn at_or_beside(j: &Expr, i: &str) -> bool {
    let is_i = |e: &Expr| matches!(e, Expr::Var(v) if v == i);
    let literal = |e: &Expr| e.literal_usize().is_some();
    match j {
        Expr::Binary(BinOp::Add, a, b) => (is_i(a) && literal(b)) || (literal(a) && is_i(b)),
        Expr::Binary(BinOp::Sub, a, b) => is_i(a) && literal(b),
        j => is_i(j),
    }
}

impl FnCx<'_, '_> {
    /// How the capture `base` names lies where it is read in place.
    pub(super) fn row_input(&self, base: &Expr) -> Option<RowLayout> {
        match base {
            Expr::Var(name) => self.g.row_inputs.get(name).cloned(),
            _ => None,
        }
    }

    /// Element `i` of a sequence of `elem` read in place (its scalars' addresses in the
    /// first element `cols`, rows `stride` bytes apart); `movable` where `i` is in bounds.
    pub(super) fn row_in_place(
        &mut self,
        elem: &Type,
        cols: &[Value],
        i: Value,
        stride: i64,
        movable: bool,
    ) -> R<Vec<Value>> {
        let leaves = flat_columns(elem).map_err(unsupported)?;
        let at = self.b.ins().imul_imm_s(i, stride);
        let flags = match movable {
            true => MemFlagsData::trusted().with_readonly().with_can_move(),
            false => MemFlagsData::trusted().with_readonly(),
        };
        Ok(leaves
            .iter()
            .zip(cols)
            .map(|(s, &col)| {
                let addr = self.b.ins().iadd(col, at);
                self.b.ins().load(clif(*s), flags, addr, 0)
            })
            .collect())
    }
}
