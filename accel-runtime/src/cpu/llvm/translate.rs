//! A site's Cranelift functions as one LLVM module, in LLVM's textual IR: the code
//! generator's decisions (gangs, masks, loops, checks) are made once, in the Cranelift IR
//! it builds, and this emits the same operations for LLVM. Values keep their Cranelift
//! numbers (`%v7`), blocks theirs (`%b3`), and block parameters become `phi`s.
//!
//! Every operation means what it means in Cranelift: shift amounts wrap, comparisons give
//! `0`/`1` bytes or all-ones lanes, float operations are the same IEEE operations in the
//! same order (no fast-math flags, so LLVM contracts nothing into FMA), and loads and
//! stores claim no alignment (Cranelift's `aligned` flag, which the code generator sets on
//! loads of columns and rows, promises only what x86's unaligned instructions need; with
//! AVX an unaligned access costs nothing). An operation it does not
//! know is an error naming it: the site then keeps its Cranelift code.

use cranelift_codegen::ir::{
    self, ArgumentExtension, Block, BlockArg, ExternalName, Function, Inst, InstructionData,
    Opcode, Value,
};
use std::collections::HashMap;
use std::fmt::Write;

/// A result, or why a function could not be translated.
pub(super) type R<T> = Result<T, String>;

/// What a called function is: one of the module's own (`@f<id>`) or a helper of the
/// runtime, called by its name (`@accel_par`): the module holds no address of this
/// process, so its object code can be kept on disk and loaded by another (see `load`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::cpu) enum Callee {
    Defined,
    Helper(&'static str),
}

/// The module of `functions` (each with its Cranelift function id), every function given
/// `attributes` (the host's CPU and features); `callee` says what a referenced function
/// id is.
pub(super) fn module(
    functions: &[(u32, &Function)],
    callee: &dyn Fn(u32) -> Option<Callee>,
    attributes: &str,
) -> R<String> {
    let mut out = String::new();
    let mut declared = Declarations::default();
    for &(id, func) in functions {
        let mut t = Translator {
            f: func,
            callee,
            body: String::new(),
            temps: 0,
            edges: HashMap::new(),
            label: String::new(),
            trailer: String::new(),
            declared: &mut declared,
        };
        out.push_str(&t.function(id)?);
        out.push('\n');
    }
    for d in &declared.0 {
        out.push_str(d);
        out.push('\n');
    }
    let _ = writeln!(out, "attributes #0 = {{ nounwind {attributes} }}");
    Ok(out)
}

/// The intrinsics a module calls, each declared once.
#[derive(Default)]
pub(super) struct Declarations(Vec<String>);

impl Declarations {
    fn add(&mut self, declaration: String) {
        if !self.0.contains(&declaration) {
            self.0.push(declaration);
        }
    }
}

/// The translation of one function.
pub(super) struct Translator<'a> {
    pub(super) f: &'a Function,
    callee: &'a dyn Fn(u32) -> Option<Callee>,
    /// The current block's instructions.
    pub(super) body: String,
    temps: usize,
    /// Each block's incoming edges: the label they leave from and the values they pass.
    edges: HashMap<Block, Vec<(String, Vec<Value>)>>,
    /// The label of the code being emitted (a block, or a block's continuation after a
    /// conditional trap).
    label: String,
    /// Blocks emitted after the current block's terminator (see [`Self::edge_block`]).
    trailer: String,
    declared: &'a mut Declarations,
}

/// LLVM's name of a Cranelift type.
pub(super) fn ty(t: ir::Type) -> R<String> {
    if t.is_vector() {
        return Ok(format!("<{} x {}>", t.lane_count(), ty(t.lane_type())?));
    }
    Ok(match t {
        ir::types::I8 => "i8".into(),
        ir::types::I16 => "i16".into(),
        ir::types::I32 => "i32".into(),
        ir::types::I64 => "i64".into(),
        ir::types::I128 => "i128".into(),
        ir::types::F32 => "float".into(),
        ir::types::F64 => "double".into(),
        other => return Err(format!("the LLVM tier has no type for {other}")),
    })
}

/// A type's part of an overloaded intrinsic's name (`i32`, `f64`, `v4f32`).
pub(super) fn mangle(t: ir::Type) -> String {
    let scalar = |s: ir::Type| {
        if s.is_float() {
            format!("f{}", s.bits())
        } else {
            format!("i{}", s.bits())
        }
    };
    if t.is_vector() {
        format!("v{}{}", t.lane_count(), scalar(t.lane_type()))
    } else {
        scalar(t)
    }
}

impl Translator<'_> {
    /// The function's text: its allocas, then each block with its `phi`s.
    fn function(&mut self, id: u32) -> R<String> {
        let f = self.f;
        let entry = f.layout.entry_block().ok_or("a function without blocks")?;
        let (ret, params) = self.signature(&f.signature, f.dfg.block_params(entry))?;
        let mut text = format!("define {ret} @f{id}({params}) #0 {{\nentry:\n");
        for (slot, data) in f.sized_stack_slots.iter() {
            let _ = writeln!(
                text,
                "  %ss{} = alloca [{} x i8], align {}",
                slot.as_u32(),
                data.size.max(1),
                1u64 << data.align_shift.min(12)
            );
        }
        let _ = writeln!(text, "  br label %b{}", entry.as_u32());
        // Bodies first: the edges into a block are known once every branch is emitted.
        let mut bodies = Vec::new();
        for block in f.layout.blocks() {
            self.body.clear();
            self.label = format!("b{}", block.as_u32());
            for inst in f.layout.block_insts(block) {
                self.inst(inst)
                    .map_err(|e| format!("{e} (in `{}`)", f.dfg.display_inst(inst)))?;
            }
            let trailer = std::mem::take(&mut self.trailer);
            self.body.push_str(&trailer);
            bodies.push((block, std::mem::take(&mut self.body)));
        }
        for (block, body) in bodies {
            let _ = writeln!(text, "b{}:", block.as_u32());
            if block != entry {
                text.push_str(&self.phis(block)?);
            }
            text.push_str(&body);
        }
        text.push_str("}\n");
        Ok(text)
    }

    /// `block`'s parameters as `phi`s of its incoming edges (`freeze poison` in a block
    /// nothing branches to).
    fn phis(&self, block: Block) -> R<String> {
        let mut text = String::new();
        let edges = self.edges.get(&block).map_or(&[][..], |e| &e[..]);
        for (k, &param) in self.f.dfg.block_params(block).iter().enumerate() {
            let t = ty(self.f.dfg.value_type(param))?;
            if edges.is_empty() {
                let _ = writeln!(text, "  {} = freeze {t} poison", self.v(param));
                continue;
            }
            let incoming: Vec<String> = edges
                .iter()
                .map(|(from, args)| format!("[ {}, %{from} ]", self.v(args[k])))
                .collect();
            let _ = writeln!(
                text,
                "  {} = phi {t} {}",
                self.v(param),
                incoming.join(", ")
            );
        }
        Ok(text)
    }

    /// A value's name, through aliases.
    pub(super) fn v(&self, x: Value) -> String {
        format!("%v{}", self.f.dfg.resolve_aliases(x).as_u32())
    }

    /// A value's type.
    pub(super) fn t(&self, x: Value) -> ir::Type {
        self.f.dfg.value_type(x)
    }

    /// `type %name` of a value.
    pub(super) fn typed(&self, x: Value) -> R<String> {
        Ok(format!("{} {}", ty(self.t(x))?, self.v(x)))
    }

    /// A fresh temporary's name.
    pub(super) fn temp(&mut self) -> String {
        self.temps += 1;
        format!("%t{}", self.temps)
    }

    /// Appends an instruction line.
    pub(super) fn line(&mut self, s: &str) {
        self.body.push_str("  ");
        self.body.push_str(s);
        self.body.push('\n');
    }

    /// Emits `rhs` into a fresh temporary and names it.
    pub(super) fn emit(&mut self, rhs: &str) -> String {
        let t = self.temp();
        self.line(&format!("{t} = {rhs}"));
        t
    }

    /// Declares an intrinsic the module calls.
    pub(super) fn declare(&mut self, declaration: String) {
        self.declared.add(declaration);
    }

    /// The `i1` "is nonzero" of an integer scalar.
    pub(super) fn truthy(&mut self, x: Value) -> R<String> {
        let tx = self.typed(x)?;
        Ok(self.emit(&format!("icmp ne {tx}, 0")))
    }

    /// The instruction's first result.
    pub(super) fn result(&self, inst: Inst) -> R<Value> {
        self.f
            .dfg
            .inst_results(inst)
            .first()
            .copied()
            .ok_or_else(|| "an instruction without a result".to_string())
    }

    /// Defines `inst`'s result as `rhs`.
    pub(super) fn define(&mut self, inst: Inst, rhs: &str) -> R<()> {
        let r = self.result(inst)?;
        let name = self.v(r);
        self.line(&format!("{name} = {rhs}"));
        Ok(())
    }

    fn inst(&mut self, inst: Inst) -> R<()> {
        let data = self.f.dfg.insts[inst];
        let args: Vec<Value> = self.f.dfg.inst_args(inst).to_vec();
        match data {
            InstructionData::Jump { destination, .. } => {
                let target = self.edge(destination)?;
                self.line(&format!("br label %{target}"));
            }
            InstructionData::Brif { arg, blocks, .. } => {
                let c = self.truthy(arg)?;
                let (a, b) = (blocks[0], blocks[1]);
                let same = a.block(&self.f.dfg.value_lists) == b.block(&self.f.dfg.value_lists);
                let (then, other) = if same {
                    // One block twice, with different arguments: LLVM's `phi` tells
                    // edges apart by the block they leave, so each leaves its own.
                    (self.edge_block(a)?, self.edge_block(b)?)
                } else {
                    (self.edge(a)?, self.edge(b)?)
                };
                self.line(&format!("br i1 {c}, label %{then}, label %{other}"));
            }
            InstructionData::MultiAry {
                opcode: Opcode::Return,
                ..
            } => match args.as_slice() {
                [] => self.line("ret void"),
                [x] => {
                    let tx = self.typed(*x)?;
                    self.line(&format!("ret {tx}"));
                }
                _ => return Err("several results".into()),
            },
            InstructionData::Trap { .. } => {
                self.declare("declare void @llvm.trap()".into());
                self.line("call void @llvm.trap()");
                self.line("unreachable");
            }
            InstructionData::CondTrap { opcode, arg, .. } => {
                let tx = self.typed(arg)?;
                let cc = if opcode == Opcode::Trapz { "eq" } else { "ne" };
                let c = self.emit(&format!("icmp {cc} {tx}, 0"));
                let n = self.temps;
                self.declare("declare void @llvm.trap()".into());
                self.line(&format!("br i1 {c}, label %trap{n}, label %cont{n}"));
                self.body.push_str(&format!(
                    "trap{n}:\n  call void @llvm.trap()\n  unreachable\ncont{n}:\n"
                ));
                self.label = format!("cont{n}");
            }
            InstructionData::Call { func_ref, .. } => self.call(inst, func_ref, &args)?,
            InstructionData::FuncAddr { func_ref, .. } => {
                let target = self.callee_name(func_ref)?;
                self.define(inst, &format!("ptrtoint ptr {target} to i64"))?;
            }
            InstructionData::StackAddr {
                stack_slot, offset, ..
            } => {
                let off: i64 = offset.into();
                let p = self.emit(&format!(
                    "getelementptr i8, ptr %ss{}, i64 {off}",
                    stack_slot.as_u32()
                ));
                self.define(inst, &format!("ptrtoint ptr {p} to i64"))?;
            }
            InstructionData::Load {
                opcode,
                arg,
                offset,
                ..
            } => self.load(inst, opcode, arg, offset.into())?,
            InstructionData::Store {
                opcode,
                args: [x, p],
                offset,
                ..
            } => self.store(opcode, x, p, offset.into())?,
            InstructionData::NullAry {
                opcode: Opcode::Nop | Opcode::Debugtrap,
            } => {}
            _ => self.operation(inst, data, &args)?,
        }
        Ok(())
    }

    /// The label a branch to `call` leaves from (the current one), recording its
    /// arguments for the target's `phi`s.
    fn edge(&mut self, call: ir::BlockCall) -> R<String> {
        let target = call.block(&self.f.dfg.value_lists);
        let args = self.block_args(call)?;
        let from = self.label.clone();
        self.edges.entry(target).or_default().push((from, args));
        Ok(format!("b{}", target.as_u32()))
    }

    /// A block of its own that jumps to `call`'s target: the label to branch to.
    fn edge_block(&mut self, call: ir::BlockCall) -> R<String> {
        let target = call.block(&self.f.dfg.value_lists);
        let args = self.block_args(call)?;
        self.temps += 1;
        let label = format!("edge{}", self.temps);
        self.edges
            .entry(target)
            .or_default()
            .push((label.clone(), args));
        // Emitted after the current block's terminator, as a block of its own.
        self.trailer
            .push_str(&format!("{label}:\n  br label %b{}\n", target.as_u32()));
        Ok(label)
    }

    fn block_args(&self, call: ir::BlockCall) -> R<Vec<Value>> {
        call.args(&self.f.dfg.value_lists)
            .map(|a| match a {
                BlockArg::Value(v) => Ok(v),
                other => Err(format!("a branch argument {other:?}")),
            })
            .collect()
    }

    fn func_id(&self, func_ref: ir::FuncRef) -> R<u32> {
        match &self.f.dfg.ext_funcs[func_ref].name {
            ExternalName::User(name) => Ok(self.f.params.user_named_funcs()[*name].index),
            other => Err(format!("a call of {other:?}")),
        }
    }

    /// The global name of a referenced function: `@f<id>`, or a helper's name, declared
    /// with its signature.
    fn callee_name(&mut self, func_ref: ir::FuncRef) -> R<String> {
        let id = self.func_id(func_ref)?;
        match (self.callee)(id).ok_or_else(|| format!("a call of unknown function {id}"))? {
            Callee::Defined => Ok(format!("@f{id}")),
            Callee::Helper(name) => {
                let ext = &self.f.dfg.ext_funcs[func_ref];
                let sig = &self.f.dfg.signatures[ext.signature];
                let ret = return_type(sig)?;
                let params = sig
                    .params
                    .iter()
                    .map(|p| Ok(format!("{}{}", ty(p.value_type)?, ext_param(p.extension))))
                    .collect::<R<Vec<_>>>()?;
                self.declare(format!("declare {ret} @{name}({})", params.join(", ")));
                Ok(format!("@{name}"))
            }
        }
    }

    fn call(&mut self, inst: Inst, func_ref: ir::FuncRef, args: &[Value]) -> R<()> {
        let ext = &self.f.dfg.ext_funcs[func_ref];
        let (ret, params) = self.signature(&self.f.dfg.signatures[ext.signature], args)?;
        let callee = self.callee_name(func_ref)?;
        let call = format!("call {ret} {callee}({params})");
        match self.f.dfg.inst_results(inst).first() {
            Some(&r) => {
                let name = self.v(r);
                self.line(&format!("{name} = {call}"));
            }
            None => self.line(&call),
        }
        Ok(())
    }

    /// A definition's or call's result type and its parameters `values`, as `sig`
    /// types and extends them.
    fn signature(&self, sig: &ir::Signature, values: &[Value]) -> R<(String, String)> {
        let ret = return_type(sig)?;
        let params = values
            .iter()
            .zip(&sig.params)
            .map(|(&v, p)| {
                Ok(format!(
                    "{}{} {}",
                    ty(p.value_type)?,
                    ext_param(p.extension),
                    self.v(v)
                ))
            })
            .collect::<R<Vec<_>>>()?;
        Ok((ret, params.join(", ")))
    }

    /// The `ptr` at `p + offset`.
    fn address(&mut self, p: Value, offset: i64) -> R<String> {
        let base = self.emit(&format!("inttoptr i64 {} to ptr", self.v(p)));
        Ok(if offset == 0 {
            base
        } else {
            self.emit(&format!("getelementptr i8, ptr {base}, i64 {offset}"))
        })
    }

    fn load(&mut self, inst: Inst, opcode: Opcode, p: Value, offset: i64) -> R<()> {
        let rt = self.t(self.result(inst)?);
        let narrow = match opcode {
            Opcode::Load => None,
            Opcode::Uload8 | Opcode::Sload8 => Some(ir::types::I8),
            Opcode::Uload16 | Opcode::Sload16 => Some(ir::types::I16),
            Opcode::Uload32 | Opcode::Sload32 => Some(ir::types::I32),
            other => return Err(format!("the load {other}")),
        };
        let at = self.address(p, offset)?;
        let mem = narrow.unwrap_or(rt);
        let load = format!("load {}, ptr {at}, align 1", ty(mem)?);
        match narrow {
            None => self.define(inst, &load),
            Some(n) => {
                let x = self.emit(&load);
                let extend = match opcode {
                    Opcode::Sload8 | Opcode::Sload16 | Opcode::Sload32 => "sext",
                    _ => "zext",
                };
                self.define(inst, &format!("{extend} {} {x} to {}", ty(n)?, ty(rt)?))
            }
        }
    }

    fn store(&mut self, opcode: Opcode, x: Value, p: Value, offset: i64) -> R<()> {
        let narrow = match opcode {
            Opcode::Store => None,
            Opcode::Istore8 => Some(ir::types::I8),
            Opcode::Istore16 => Some(ir::types::I16),
            Opcode::Istore32 => Some(ir::types::I32),
            other => return Err(format!("the store {other}")),
        };
        let at = self.address(p, offset)?;
        let value = match narrow {
            None => self.typed(x)?,
            Some(n) => {
                let tx = self.typed(x)?;
                let v = self.emit(&format!("trunc {tx} to {}", ty(n)?));
                format!("{} {v}", ty(n)?)
            }
        };
        self.line(&format!("store {value}, ptr {at}, align 1"));
        Ok(())
    }
}

/// A result's extension attribute (`zeroext `, `signext `).
/// The LLVM return type of `sig`, with its extension (`signext i8`), or `void`.
fn return_type(sig: &ir::Signature) -> R<String> {
    match sig.returns.as_slice() {
        [] => Ok("void".into()),
        [p] => Ok(format!("{}{}", extension(p.extension), ty(p.value_type)?)),
        _ => Err("a function with several results".into()),
    }
}

fn extension(e: ArgumentExtension) -> &'static str {
    match e {
        ArgumentExtension::None => "",
        ArgumentExtension::Uext => "zeroext ",
        ArgumentExtension::Sext => "signext ",
    }
}

/// A parameter's extension attribute (` zeroext`, ` signext`).
fn ext_param(e: ArgumentExtension) -> &'static str {
    match e {
        ArgumentExtension::None => "",
        ArgumentExtension::Uext => " zeroext",
        ArgumentExtension::Sext => " signext",
    }
}
