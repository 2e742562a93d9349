//! Removal of trivial block parameters: a parameter whose every incoming value is one
//! other value or the parameter itself (Braun et al., "Simple and Efficient Construction
//! of SSA Form", 2013, section 3.1).
//!
//! Cranelift's frontend leaves them when an inner loop's header is resolved against an
//! outer block that is not sealed yet (this code generator seals at the end), and
//! Cranelift's own pass removes only parameters equal to a value that is not a parameter.
//! A loop-invariant value then travels as a parameter through every loop around it, which
//! keeps Cranelift's loop-invariant code motion from hoisting anything computed from it
//! (address arithmetic in the Viterbi inner loop was recomputed on every iteration).

use cranelift_codegen::ir::{Block, BlockArg, Function, Inst, Value};
use std::collections::HashMap;

/// Removes trivial block parameters until none is left, rewriting their uses to the value
/// they always hold.
pub(super) fn remove_trivial_block_params(func: &mut Function) {
    let Some(entry) = func.layout.entry_block() else {
        return;
    };
    loop {
        let incoming = incoming_edges(func);
        let mut changed = false;
        let blocks: Vec<Block> = func.layout.blocks().filter(|&b| b != entry).collect();
        for block in blocks {
            let Some(edges) = incoming.get(&block) else {
                continue;
            };
            let params = func.dfg.block_params(block).to_vec();
            for (k, &param) in params.iter().enumerate().rev() {
                if let Some(value) = only_other_value(func, edges, k, param) {
                    for &(inst, dest) in edges {
                        let dfg = &mut func.dfg;
                        let dests = dfg.insts[inst].branch_destination_mut(
                            &mut dfg.jump_tables,
                            &mut dfg.exception_tables,
                        );
                        dests[dest].remove(k, &mut dfg.value_lists);
                    }
                    func.dfg.remove_block_param(param);
                    func.dfg.change_to_alias(param, value);
                    changed = true;
                }
            }
        }
        if !changed {
            return;
        }
    }
}

/// Each block's incoming edges: the branch instruction and which of its destinations.
fn incoming_edges(func: &Function) -> HashMap<Block, Vec<(Inst, usize)>> {
    let mut incoming: HashMap<Block, Vec<(Inst, usize)>> = HashMap::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            let dests = func.dfg.insts[inst]
                .branch_destination(&func.dfg.jump_tables, &func.dfg.exception_tables);
            for (k, dest) in dests.iter().enumerate() {
                incoming
                    .entry(dest.block(&func.dfg.value_lists))
                    .or_default()
                    .push((inst, k));
            }
        }
    }
    incoming
}

/// The one value other than `param` that the edges pass as the block's parameter `k`, if
/// there is exactly one.
fn only_other_value(
    func: &Function,
    edges: &[(Inst, usize)],
    k: usize,
    param: Value,
) -> Option<Value> {
    let mut other: Option<Value> = None;
    for &(inst, dest) in edges {
        let dests = func.dfg.insts[inst]
            .branch_destination(&func.dfg.jump_tables, &func.dfg.exception_tables);
        let BlockArg::Value(v) = dests[dest].args(&func.dfg.value_lists).nth(k)? else {
            return None;
        };
        let v = func.dfg.resolve_aliases(v);
        if v == param || other == Some(v) {
            continue;
        }
        if other.is_some() {
            return None;
        }
        other = Some(v);
    }
    other
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_function::function;
    use cranelift_codegen::ir::{types, InstBuilder};
    use cranelift_codegen::settings;

    /// Two nested loops with a value defined before both, sealed at the end as the code
    /// generator does: the frontend leaves a parameter for it in the inner header.
    fn nested_loops() -> Function {
        function(&[types::I64], types::I64, |b, a| {
            let n = a[0];
            let invariant = b.declare_var(types::I64);
            let acc = b.declare_var(types::I64);
            let i = b.declare_var(types::I64);
            let j = b.declare_var(types::I64);
            b.def_var(invariant, n);
            let zero = b.ins().iconst(types::I64, 0);
            b.def_var(acc, zero);
            b.def_var(i, zero);
            let (outer, outer_body, inner, inner_body, inner_exit, done) = (
                b.create_block(),
                b.create_block(),
                b.create_block(),
                b.create_block(),
                b.create_block(),
                b.create_block(),
            );
            b.ins().jump(outer, &[]);
            b.switch_to_block(outer);
            let iv = b.use_var(i);
            b.ins().brif(iv, outer_body, &[], done, &[]);
            b.switch_to_block(outer_body);
            b.def_var(j, zero);
            b.ins().jump(inner, &[]);
            b.switch_to_block(inner);
            let jv = b.use_var(j);
            b.ins().brif(jv, inner_body, &[], inner_exit, &[]);
            b.switch_to_block(inner_body);
            let inv = b.use_var(invariant);
            let av = b.use_var(acc);
            let sum = b.ins().iadd(av, inv);
            b.def_var(acc, sum);
            let jv = b.use_var(j);
            let next = b.ins().iadd_imm_s(jv, -1);
            b.def_var(j, next);
            b.ins().jump(inner, &[]);
            b.switch_to_block(inner_exit);
            let iv = b.use_var(i);
            let next = b.ins().iadd_imm_s(iv, -1);
            b.def_var(i, next);
            b.ins().jump(outer, &[]);
            b.switch_to_block(done);
            b.use_var(acc)
        })
    }

    #[test]
    fn the_invariant_value_reaches_the_inner_loop_directly() {
        let mut func = nested_loops();
        let params = |f: &Function| -> usize {
            f.layout
                .blocks()
                .skip(1)
                .map(|b| f.dfg.block_params(b).len())
                .sum()
        };
        let before = params(&func);
        remove_trivial_block_params(&mut func);
        func.dfg.resolve_all_aliases();
        // What varies is left: `i` and `acc` in the outer header, `j` and `acc` in the inner.
        assert_eq!(params(&func), 4, "before: {before}\n{}", func.display());
        assert!(before > 4, "{}", func.display());
        let n = func.dfg.block_params(func.layout.entry_block().unwrap())[0];
        let uses_n = func.layout.blocks().any(|b| {
            func.layout.block_insts(b).any(|inst| {
                func.dfg.insts[inst].opcode() == cranelift_codegen::ir::Opcode::Iadd
                    && func.dfg.inst_args(inst).contains(&n)
            })
        });
        assert!(uses_n, "{}", func.display());
        cranelift_codegen::verify_function(&func, &settings::Flags::new(settings::builder()))
            .unwrap();
    }
}
