//! The translation's meaning of Cranelift operations, checked on small functions built
//! here and compiled by LLVM: edges the code generator rarely makes (a branch to one
//! block twice), and the operations whose LLVM counterpart means something else unless
//! translated with care (shift amounts, saturating conversions and narrows, masks).

use super::translate::Callee;
use crate::cpu::test_function::function;
use cranelift_codegen::ir::{
    condcodes::{FloatCC, IntCC},
    types, AbiParam, ExtFuncData, ExternalName, Function, InstBuilder, Signature, UserExternalName,
};
use cranelift_codegen::isa::CallConv;

/// `func` compiled by LLVM (with `helper`, named `add_seven`, as function 1), or `None`
/// where LLVM is absent. The disk cache is left alone: these compiles are what is tested.
fn compiled(func: Function, helper: Option<u64>) -> Option<u64> {
    if let Err(why) = super::available() {
        eprintln!("[accel tests] SKIPPED: the LLVM tier's translation: {why}");
        return None;
    }
    let callee = |id: u32| match (id, helper) {
        (0, _) => Some(Callee::Defined),
        (1, Some(_)) => Some(Callee::Helper("add_seven")),
        _ => None,
    };
    let address = |name: &str| (name == "add_seven").then_some(helper).flatten();
    let code = crate::backend::disk_cache::with_disk_cache(false, || {
        super::compile(&[(0, func)], &callee, &address, super::OnMiss::Compile)
    });
    Some(code.expect("LLVM compiles it").expect("compiled").addresses[0])
}

/// `f(x, y)` of a compiled `fn(i64, i64) -> i64`.
fn call2(address: u64, x: i64, y: i64) -> i64 {
    // SAFETY: `address` is a function compiled by LLVM from a Cranelift function of this
    // signature (SystemV), alive for the process.
    let f =
        unsafe { std::mem::transmute::<usize, extern "C" fn(i64, i64) -> i64>(address as usize) };
    f(x, y)
}

#[test]
fn shift_amounts_wrap_at_the_width() {
    let shl = function(&[types::I64, types::I64], types::I64, |b, a| {
        b.ins().ishl(a[0], a[1])
    });
    let sshr = function(&[types::I64, types::I64], types::I64, |b, a| {
        b.ins().sshr(a[0], a[1])
    });
    let rotl = function(&[types::I64, types::I64], types::I64, |b, a| {
        b.ins().rotl(a[0], a[1])
    });
    let (Some(shl), Some(sshr), Some(rotl)) = (
        compiled(shl, None),
        compiled(sshr, None),
        compiled(rotl, None),
    ) else {
        return;
    };
    assert_eq!(call2(shl, 1, 65), 2);
    assert_eq!(call2(shl, 3, -1), i64::MIN);
    assert_eq!(call2(sshr, -64, 66), -16);
    assert_eq!(call2(rotl, i64::MIN | 1, 129), 3);
}

#[test]
fn a_branch_to_one_block_twice_passes_each_edges_arguments() {
    let f = function(&[types::I64, types::I64], types::I64, |b, a| {
        let join = b.create_block();
        let v = b.append_block_param(join, types::I64);
        let (ten, twenty) = (
            b.ins().iconst(types::I64, 10),
            b.ins().iconst(types::I64, 20),
        );
        b.ins()
            .brif(a[0], join, &[ten.into()], join, &[twenty.into()]);
        b.switch_to_block(join);
        b.ins().iadd(v, a[1])
    });
    let Some(f) = compiled(f, None) else { return };
    assert_eq!(call2(f, 1, 1), 11);
    assert_eq!(call2(f, 0, 1), 21);
}

#[test]
fn loops_carry_block_parameters() {
    // The sum of 0..n, counting down.
    let f = function(&[types::I64, types::I64], types::I64, |b, a| {
        let head = b.create_block();
        let (n, sum) = (
            b.append_block_param(head, types::I64),
            b.append_block_param(head, types::I64),
        );
        let exit = b.create_block();
        let out = b.append_block_param(exit, types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        b.ins().jump(head, &[a[0].into(), zero.into()]);
        b.switch_to_block(head);
        let body = b.create_block();
        b.ins().brif(n, body, &[], exit, &[sum.into()]);
        b.switch_to_block(body);
        let n1 = b.ins().iadd_imm_s(n, -1);
        let s1 = b.ins().iadd(sum, n1);
        b.ins().jump(head, &[n1.into(), s1.into()]);
        b.switch_to_block(exit);
        out
    });
    let Some(f) = compiled(f, None) else { return };
    assert_eq!(call2(f, 10, 0), 45);
    assert_eq!(call2(f, 0, 0), 0);
}

#[test]
fn conversions_saturate_and_comparisons_give_bytes() {
    // (x as f64 / y as f64) as i64, saturating (NaN -> 0), plus 100 if it is unordered.
    let f = function(&[types::I64, types::I64], types::I64, |b, a| {
        let (x, y) = (
            b.ins().fcvt_from_sint(types::F64, a[0]),
            b.ins().fcvt_from_sint(types::F64, a[1]),
        );
        let q = b.ins().fdiv(x, y);
        let big = b.ins().f64const(1e300);
        let q = b.ins().fmul(q, big);
        let n = b.ins().fcvt_to_sint_sat(types::I64, q);
        let nan = b.ins().fcmp(FloatCC::Unordered, q, q);
        let nan = b.ins().uextend(types::I64, nan);
        let hundred = b.ins().imul_imm_s(nan, 100);
        b.ins().iadd(n, hundred)
    });
    let Some(f) = compiled(f, None) else { return };
    assert_eq!(call2(f, 1, 2), i64::MAX);
    assert_eq!(call2(f, -1, 2), i64::MIN);
    assert_eq!(call2(f, 0, 0), 100);
    assert_eq!(call2(f, 0, 5), 0);
}

#[test]
fn lanes_narrow_with_saturation_and_masks_give_their_high_bits() {
    // Lanes x, y, -x, 70000 narrowed to i16 with saturation, summed as i64, plus the
    // high-bit mask of `lanes < 0` shifted left by 32.
    let f = function(&[types::I64, types::I64], types::I64, |b, a| {
        let (x, y) = (
            b.ins().ireduce(types::I32, a[0]),
            b.ins().ireduce(types::I32, a[1]),
        );
        let v = b.ins().splat(types::I32X4, x);
        let v = b.ins().insertlane(v, y, 1);
        let minus = b.ins().ineg(x);
        let v = b.ins().insertlane(v, minus, 2);
        let big = b.ins().iconst(types::I32, 70000);
        let v = b.ins().insertlane(v, big, 3);
        let narrow = b.ins().snarrow(v, v);
        let mut sum = b.ins().iconst(types::I64, 0);
        for lane in 0..4 {
            let l = b.ins().extractlane(narrow, lane);
            let l = b.ins().sextend(types::I64, l);
            sum = b.ins().iadd(sum, l);
        }
        let zero = b.ins().iconst(types::I32, 0);
        let zero = b.ins().splat(types::I32X4, zero);
        let negative = b.ins().icmp(IntCC::SignedLessThan, v, zero);
        let bits = b.ins().vhigh_bits(types::I64, negative);
        let bits = b.ins().ishl_imm_u(bits, 32);
        b.ins().iadd(sum, bits)
    });
    let Some(f) = compiled(f, None) else { return };
    // 5 + (-40000 -> -32768) + (-5) + (70000 -> 32767); lane 1 and 2 negative: 0b0110.
    assert_eq!(
        call2(f, 5, -40000),
        (5 - 32768 - 5 + 32767) + (0b0110 << 32)
    );
}

/// A helper, called by its name.
extern "C" fn add_seven(x: i64) -> i64 {
    x + 7
}

#[test]
fn helpers_are_called_by_name() {
    let f = function(&[types::I64, types::I64], types::I64, |b, a| {
        let mut sig = Signature::new(CallConv::SystemV);
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(types::I64));
        let signature = b.import_signature(sig);
        let name = b
            .func
            .declare_imported_user_function(UserExternalName::new(0, 1));
        let helper = b.import_function(ExtFuncData {
            name: ExternalName::User(name),
            signature,
            colocated: false,
            patchable: false,
        });
        let call = b.ins().call(helper, &[a[0]]);
        let r = b.inst_results(call)[0];
        b.ins().imul(r, a[1])
    });
    let Some(f) = compiled(
        f,
        Some(add_seven as extern "C" fn(i64) -> i64 as usize as u64),
    ) else {
        return;
    };
    assert_eq!(call2(f, 3, 4), 40);
}
