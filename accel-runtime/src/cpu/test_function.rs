//! Cranelift functions built by the CPU backend's unit tests (of its passes and of the
//! LLVM tier's translation).

use cranelift_codegen::ir::UserFuncName;
use cranelift_codegen::ir::{types::Type, AbiParam, Function, InstBuilder, Signature, Value};
use cranelift_codegen::isa::CallConv;
use cranelift_codegen::settings;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};

/// A function of `params` returning `ret`, built by `body` from the parameters: it gives
/// the value returned from the block it ends in. Every block is sealed at the end, as
/// the code generator seals them.
pub(in crate::cpu) fn function(
    params: &[Type],
    ret: Type,
    body: impl FnOnce(&mut FunctionBuilder, &[Value]) -> Value,
) -> Function {
    let mut sig = Signature::new(CallConv::SystemV);
    sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
    sig.returns.push(AbiParam::new(ret));
    let mut func = Function::with_name_signature(UserFuncName::default(), sig);
    let mut fbc = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fbc);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry).to_vec();
    let r = body(&mut b, &args);
    b.ins().return_(&[r]);
    b.seal_all_blocks();
    let isa = cranelift_native::builder()
        .expect("a Cranelift backend for this host")
        .finish(settings::Flags::new(settings::builder()))
        .expect("host flags");
    b.finalize(isa.frontend_config());
    func
}
