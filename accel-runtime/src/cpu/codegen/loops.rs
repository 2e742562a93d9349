//! Sequential loops: counted loops and `for` loops, versioned so that one test before the
//! loop replaces a bounds check per access inside it (see [`super::proofs`]).

use super::cx::*;
use super::forwarding::{carried_tensors, tensors_set};
use super::proofs::Proofs;
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;

impl FnCx<'_, '_> {
    /// `for var in lo..hi { body }`.
    pub(super) fn for_expr(&mut self, var: &str, lo: &Expr, hi: &Expr, body: &Expr) -> R<V> {
        let lo = self.expr(lo)?;
        let hi = self.expr(hi)?;
        let s = self.scalar(&lo)?;
        let (mut lo, hi) = (lo.w[0], hi.w[0]);
        if s == ScalarType::Usize && self.inner_loop_on_lanes(var, body) {
            lo = self.gang_inner_loop(var, body, (lo, hi))?;
        }
        let recycling = self.start_recycling(body);
        self.for_loop_recycling(var, lo, hi, s, body, recycling.as_ref())?;
        Ok(V::unit())
    }

    /// `while cond { body }`.
    pub(super) fn while_loop(&mut self, cond: &Expr, body: &Expr) -> R<V> {
        let recycling = self.start_recycling(body);
        let head = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let c = self.expr(cond)?;
        self.loop_test(c.w[0], body_block, exit);
        self.b.switch_to_block(body_block);
        self.expr(body)?;
        if let Some(r) = &recycling {
            self.recycle(r)?;
        }
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(V::unit())
    }

    /// Before a loop of the site function whose steps allocate (launches, sequence
    /// literals): the mark of its allocations and the variables bound before it, for
    /// [`Self::recycle`] at the end of each step.
    fn start_recycling(&mut self, body: &Expr) -> Option<Recycling> {
        let mut allocates = false;
        body.walk(&mut |e| {
            allocates |= matches!(e, Expr::Par { .. } | Expr::Seq(_) | Expr::SeqRepeat(..))
                || matches!(e, Expr::Assoc { ty, .. } if ty == "Tensor")
                || matches!(e, Expr::Method { method, .. } if method == "to_vec")
        });
        if !self.host || !allocates {
            return None;
        }
        let ctx = self.ctx;
        let mark = self.helper("accel_host_mark", &[ctx])[0];
        let mut outer: Vec<String> = self.vars.keys().cloned().collect();
        outer.sort();
        Some(Recycling { mark, outer })
    }

    /// At the end of a loop's step in the site function: what the loop allocated that no
    /// variable bound before it points into any more goes back for reuse (a new `y` made
    /// from the old at every step reuses the memory of the `y` before).
    pub(super) fn recycle(&mut self, r: &Recycling) -> R<()> {
        let mut live = Vec::new();
        for name in &r.outer {
            if self.mem_arrays.contains_key(name) {
                continue;
            }
            let v = self.var(name)?;
            let kinds = crate::backend::layout::words(&v.ty).map_err(unsupported)?;
            for (w, kind) in v.w.iter().zip(kinds) {
                if let crate::backend::layout::Word::Ptr(_) = kind {
                    live.push(*w);
                }
            }
        }
        let slot = self
            .b
            .create_sized_stack_slot(cranelift_codegen::ir::StackSlotData::new(
                cranelift_codegen::ir::StackSlotKind::ExplicitSlot,
                (8 * live.len().max(1)) as u32,
                3,
            ));
        let addr = self
            .b
            .ins()
            .stack_addr(cranelift_codegen::ir::types::I64, slot, 0);
        for (k, &w) in live.iter().enumerate() {
            self.store(w, addr, 8 * k as i32);
        }
        let count = self.iconst(live.len() as i64);
        let ctx = self.ctx;
        self.helper("accel_recycle", &[ctx, r.mark, addr, count]);
        Ok(())
    }

    /// A loop header's branch: into `body` while `go` (nonzero), else to `exit` (see
    /// [`loop_test`]).
    pub(super) fn loop_test(&mut self, go: Value, body: Block, exit: Block) {
        loop_test(&mut self.b, go, body, exit);
    }

    /// `for i in lo..hi { body(i) }` (its header branches as [`Self::loop_test`] does).
    pub(super) fn counted_loop(
        &mut self,
        lo: Value,
        hi: Value,
        s: ScalarType,
        mut body: impl FnMut(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let t = clif(s);
        let i = self.b.declare_var(t);
        self.b.def_var(i, lo);
        let head = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let iv = self.b.use_var(i);
        let cc = if signed(s) {
            IntCC::SignedGreaterThanOrEqual
        } else {
            IntCC::UnsignedGreaterThanOrEqual
        };
        let done = self.b.ins().icmp(cc, iv, hi);
        // Exit first, as `loop_test` explains.
        self.b.ins().brif(done, exit, &[], body_block, &[]);
        self.b.switch_to_block(body_block);
        body(self, iv)?;
        let iv = self.b.use_var(i);
        let next = self.b.ins().iadd_imm_s(iv, 1);
        self.b.def_var(i, next);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// `for var in lo..hi { body }`, versioned: when every sequence the body indexes by the
    /// loop variable is at least `hi` long, one test up front replaces a check per access.
    /// `for var in lo..hi { body }`, versioned: when every sequence the body indexes by the
    /// loop variable is at least `hi` long, one test up front replaces a check per access;
    /// each step ended by [`Self::recycle`] when `recycling`.
    fn for_loop_recycling(
        &mut self,
        var: &str,
        lo: Value,
        hi: Value,
        s: ScalarType,
        body: &Expr,
        recycling: Option<&Recycling>,
    ) -> R<()> {
        // Values stored by one step and read by the next stay in registers (scalar code:
        // a gang's lanes run steps side by side).
        let carried = match self.gang {
            None => carried_tensors(var, body, &|x| {
                matches!(self.vars.get(x), Some((Type::Tensor(_), _)))
            }),
            Some(_) => vec![],
        };
        let written = match carried.is_empty() {
            true => vec![],
            false => tensors_set(body),
        };
        let run = |f: &mut Self| {
            if !carried.is_empty() {
                f.begin_forwarding(var, &carried, &written)?;
            }
            let r = f.counted_loop(lo, hi, s, |f, i| {
                f.bind_var(
                    var,
                    V {
                        ty: Type::Scalar(s),
                        w: vec![i],
                    },
                );
                f.expr(body)?;
                if !carried.is_empty() {
                    f.end_forwarding_step();
                }
                match recycling {
                    Some(r) => f.recycle(r),
                    None => Ok(()),
                }
            });
            if !carried.is_empty() {
                f.forwarding.pop();
            }
            r
        };
        if s != ScalarType::Usize {
            return run(self);
        }
        let proofs = Proofs {
            indexed: self.indexed_by(body, var),
            tensors: self.tensor_accesses(body, var),
            affine: self.affine_loads(body, var),
            ..Proofs::default()
        };
        self.versioned(&proofs, var, lo, hi, run)
    }
}

/// What a loop of the site function recycles at each step's end (see
/// [`FnCx::recycle`]).
pub(super) struct Recycling {
    /// The mark of the site function's allocations before the loop.
    mark: Value,
    /// The variables bound before the loop, whose values stay.
    outer: Vec<String>,
}

/// A loop header's branch: into `body` while `go` (nonzero), else to `exit`.
///
/// The exit is the branch's first target on purpose. Cranelift 0.135 elaborates a block's
/// dominator-tree children in an order that puts the first target last, and its
/// elaborator forgets a loop once it visits a block outside it; with the exit visited
/// before the body, nothing in the body was hoisted out of the loop (no loop-invariant
/// code motion at all: the Viterbi kernels ran 1.5x slower). The test below holds
/// Cranelift to it.
pub(super) fn loop_test(b: &mut FunctionBuilder, go: Value, body: Block, exit: Block) {
    let stop = b.ins().icmp_imm_s(IntCC::Equal, go, 0);
    b.ins().brif(stop, exit, &[], body, &[]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_function::function;
    use cranelift_codegen::ir::{types, Opcode};
    use cranelift_codegen::{settings, settings::Configurable, Context};

    /// `for i in 0..n { acc += a * b }` with the header's branch made by `test`, compiled
    /// at `opt_level=speed`: whether `a * b` was hoisted out of the loop.
    fn hoists(test: impl Fn(&mut FunctionBuilder, Value, Block, Block)) -> bool {
        let mut loop_body = None;
        let func = function(&[types::I64; 3], types::I64, |b, a| {
            let (n, x, y) = (a[0], a[1], a[2]);
            let (head, body, exit) = (b.create_block(), b.create_block(), b.create_block());
            loop_body = Some(body);
            let i = b.append_block_param(head, types::I64);
            let acc = b.append_block_param(head, types::I64);
            let zero = b.ins().iconst(types::I64, 0);
            b.ins().jump(head, &[zero.into(), zero.into()]);
            b.switch_to_block(head);
            let go = b.ins().icmp(IntCC::UnsignedLessThan, i, n);
            test(b, go, body, exit);
            b.switch_to_block(body);
            let product = b.ins().imul(x, y);
            let sum = b.ins().iadd(acc, product);
            let next = b.ins().iadd_imm_s(i, 1);
            b.ins().jump(head, &[next.into(), sum.into()]);
            b.switch_to_block(exit);
            acc
        });
        let mut flags = settings::builder();
        flags.set("opt_level", "speed").unwrap();
        let isa = cranelift_native::builder()
            .unwrap()
            .finish(settings::Flags::new(flags))
            .unwrap();
        let mut ctx = Context::for_function(func);
        ctx.compile(&*isa, &mut Default::default()).unwrap();
        let f = &ctx.func;
        let imul_block = f
            .layout
            .blocks()
            .find(|&blk| {
                f.layout
                    .block_insts(blk)
                    .any(|inst| f.dfg.insts[inst].opcode() == Opcode::Imul)
            })
            .unwrap();
        Some(imul_block) != loop_body
    }

    #[test]
    fn loop_invariant_code_is_hoisted_out_of_our_loops() {
        assert!(hoists(loop_test));
    }

    #[test]
    fn cranelift_still_loses_it_when_the_body_is_the_first_target() {
        // If Cranelift fixes its elaborator this fails, and `loop_test` may branch either
        // way.
        let body_first = |b: &mut FunctionBuilder, go: Value, body: Block, exit: Block| {
            b.ins().brif(go, body, &[], exit, &[]);
        };
        assert!(!hoists(body_first));
    }
}
