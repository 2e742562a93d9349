//! Sequences in memory: columns of elements (structure of arrays), indexing and bounds
//! checks, allocation in the run's arena, packing produced rows (checked regular).

use super::cx::*;
use crate::backend::failure::FailureKind;
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types as ct, InstBuilder, InstructionData, MemFlagsData, Opcode, StackSlotData, StackSlotKind,
    Value, ValueDef,
};
use cranelift_frontend::FunctionBuilder;

impl FnCx<'_, '_> {
    /// `base[i]`: an array element at a literal index is its words; an index proven in
    /// bounds (the index of a producer over the sequence, a loop versioned on it) loads
    /// without a check; any other is checked.
    pub(super) fn index_expr(&mut self, base: &Expr, i: &Expr) -> R<V> {
        let whole = Expr::Index(Box::new(base.clone()), Box::new(i.clone()));
        if let Some((addr, t)) = self.local_place(&whole)? {
            // An element of a local array in memory: one element's words.
            return self.load_local_array(&t, addr);
        }
        let v = self.expr(base)?;
        let iv = self.expr(i)?;
        if let (Type::Array(_, n), Some(k)) = (&v.ty, i.literal_usize()) {
            let len = self.iconst(*n as i64);
            let at = self.iconst(k as i64);
            let oob = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, at, len);
            self.fail_if(oob, FailureKind::Index, at, len);
            return field(&v, &k.to_string());
        }
        if let (Expr::Var(s), Type::Seq(elem)) = (base, &v.ty) {
            let by_var =
                matches!(i, Expr::Var(j) if self.safe.iter().any(|(a, b)| a == s && b == j));
            let by_affine = self.safe_affine.iter().any(|(a, x)| a == s && x == i);
            if let Some(row) = self.row_input(base) {
                let proven = by_var || by_affine;
                if !proven {
                    let len = v.w[0];
                    let oob = self
                        .b
                        .ins()
                        .icmp(IntCC::UnsignedGreaterThanOrEqual, iv.w[0], len);
                    self.fail_if(oob, FailureKind::Index, iv.w[0], len);
                }
                let w = self.row_in_place(elem, &v.w[1..], iv.w[0], row.stride, proven)?;
                return Ok(V {
                    ty: (**elem).clone(),
                    w,
                });
            }
            if by_var || by_affine {
                // In bounds by construction: no check, and a load Cranelift may move.
                self.movable_loads = true;
                let w = self.load_elem(elem, &v.w[1..], iv.w[0]);
                self.movable_loads = false;
                return Ok(V {
                    ty: (**elem).clone(),
                    w: w?,
                });
            }
        }
        self.index(&v, iv.w[0])
    }

    /// `vec![a, b, c]`.
    pub(super) fn seq_literal(&mut self, es: &[Expr]) -> R<V> {
        let elem = match es.first() {
            Some(x) => self.type_of(x)?,
            None => return Err(unsupported("an empty `vec![]`")),
        };
        let n = self.iconst(es.len() as i64);
        let cols = self.alloc_columns(&elem, n)?;
        for (k, x) in es.iter().enumerate() {
            let v = self.expr(x)?;
            let i = self.iconst(k as i64);
            self.store_elem(&elem, &cols, i, &v.w)?;
        }
        let cols = self.finish_columns(&elem, n, cols)?;
        Ok(V {
            ty: Type::Seq(Box::new(elem)),
            w: [vec![n], cols].concat(),
        })
    }

    /// `vec![x; n]`.
    pub(super) fn seq_repeat(&mut self, x: &Expr, n: &Expr) -> R<V> {
        let v = self.expr(x)?;
        let n = self.expr(n)?.w[0];
        let cols = self.alloc_columns(&v.ty, n)?;
        let zero = self.iconst(0);
        let elem = v.ty.clone();
        let words = v.w.clone();
        self.counted_loop(zero, n, ScalarType::Usize, |f, i| {
            f.store_elem(&elem, &cols, i, &words)
        })?;
        let cols = self.finish_columns(&elem, n, cols)?;
        Ok(V {
            ty: Type::Seq(Box::new(v.ty)),
            w: [vec![n], cols].concat(),
        })
    }

    /// `&xs[lo..hi]`: a view (the columns advanced by `lo`), bounds checked.
    pub(super) fn slice(&mut self, seq: &Expr, lo: &Expr, hi: &Expr) -> R<V> {
        let v = self.expr(seq)?;
        let lo = self.expr(lo)?.w[0];
        let hi = self.expr(hi)?.w[0];
        let len = v.w[0];
        let backwards = self.b.ins().icmp(IntCC::UnsignedGreaterThan, lo, hi);
        let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, hi, len);
        let bad = self.b.ins().bor(backwards, past);
        self.fail_if(bad, FailureKind::Slice, lo, hi);
        let Type::Seq(elem) = &v.ty else {
            return Err("slicing a value that is not a sequence".into());
        };
        let cols = self.offset_columns(elem, &v.w[1..], lo)?;
        let n = self.b.ins().isub(hi, lo);
        Ok(V {
            ty: v.ty.clone(),
            w: [vec![n], cols].concat(),
        })
    }

    /// `xs[i]` for a sequence or an array value.
    pub(super) fn index(&mut self, v: &V, i: Value) -> R<V> {
        match &v.ty {
            Type::Seq(elem) => {
                let len = v.w[0];
                let oob = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, len);
                self.fail_if(oob, FailureKind::Index, i, len);
                let w = self.load_elem(elem, &v.w[1..], i)?;
                Ok(V {
                    ty: (**elem).clone(),
                    w,
                })
            }
            Type::Array(elem, n) => {
                let n = *n;
                let per = words(elem)?.len();
                let len = self.iconst(n as i64);
                let oob = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, len);
                self.fail_if(oob, FailureKind::Index, i, len);
                // Spill the array and load the element at the computed index.
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    (8 * v.w.len().max(1)) as u32,
                    3,
                ));
                let base = self.b.ins().stack_addr(ct::I64, slot, 0);
                for (k, w) in v.w.iter().enumerate() {
                    self.store(*w, base, 8 * k as i32);
                }
                let stride = self.b.ins().imul_imm_s(i, (8 * per) as i64);
                let at = self.b.ins().iadd(base, stride);
                let tys = words(elem)?;
                let w = tys
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| self.load(t, at, 8 * k as i32))
                    .collect();
                Ok(V {
                    ty: (**elem).clone(),
                    w,
                })
            }
            t => Err(format!("indexing a value of type {t}")),
        }
    }

    /// Asks for the cache lines of elements `i..i + run` of columns `cols` ahead of their
    /// use: each scalar column's element `PREFETCH_BYTES` past `i`'s (rows are not
    /// followed). A column whose `run` elements fill less than a cache line asks only when
    /// the run starts a line's worth of elements. Columns of 1- and 2-byte elements ask
    /// for nothing: a line of them lasts 32 or 64 values, and the hardware prefetchers keep
    /// up (a byte histogram ran 10% faster without the calls, one per 64 bytes).
    pub(super) fn prefetch_elem(
        &mut self,
        elem: &Type,
        cols: &[Value],
        i: Value,
        run: i64,
    ) -> R<()> {
        match elem {
            Type::Scalar(s) if s.bytes() < 4 => Ok(()),
            Type::Scalar(s) => {
                let per_line = CACHE_LINE / i64::from(s.bytes());
                let skip = (per_line > run).then(|| {
                    let within = self.b.ins().band_imm_u(i, per_line - 1);
                    let starts = self
                        .b
                        .ins()
                        .icmp_imm_u(IntCC::UnsignedLessThan, within, run);
                    let (ask, done) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(starts, ask, &[], done, &[]);
                    self.b.switch_to_block(ask);
                    done
                });
                let (at, offset) = element_address(&mut self.b, cols[0], i, *s);
                let ahead = self
                    .b
                    .ins()
                    .iadd_imm_s(at, i64::from(offset) + PREFETCH_BYTES);
                self.helper("accel_prefetch", &[ahead]);
                if let Some(done) = skip {
                    self.b.ins().jump(done, &[]);
                    self.b.switch_to_block(done);
                }
                Ok(())
            }
            Type::Seq(_) => Ok(()),
            t => {
                for (p, c) in split_columns(t, cols)? {
                    self.prefetch_elem(&p, c, i, run)?;
                }
                Ok(())
            }
        }
    }

    /// The words of element `i` of columns `cols` of element type `elem`.
    pub(super) fn load_elem(&mut self, elem: &Type, cols: &[Value], i: Value) -> R<Vec<Value>> {
        match elem {
            Type::Scalar(s) => {
                let (addr, offset) = element_address(&mut self.b, cols[0], i, *s);
                if self.movable_loads {
                    // Sequences never change during a run, and this element is in bounds.
                    let flags = MemFlagsData::trusted().with_readonly().with_can_move();
                    return Ok(vec![self.b.ins().load(clif(*s), flags, addr, offset)]);
                }
                Ok(vec![self.load(clif(*s), addr, offset)])
            }
            // Element `i` of a sequence of sequences is the sub-sequence at `i`.
            Type::Seq(_) => self.offset_columns(elem, cols, i),
            t => {
                let mut out = Vec::new();
                for (p, c) in split_columns(t, cols)? {
                    out.extend(self.load_elem(&p, c, i)?);
                }
                Ok(out)
            }
        }
    }

    /// Columns advanced by `k` elements.
    pub(super) fn offset_columns(
        &mut self,
        elem: &Type,
        cols: &[Value],
        k: Value,
    ) -> R<Vec<Value>> {
        match elem {
            Type::Scalar(s) => {
                let off = self.scaled(k, *s);
                Ok(vec![self.b.ins().iadd(cols[0], off)])
            }
            Type::Seq(u) => {
                let inner = cols[0];
                let kk = self.b.ins().imul(k, inner);
                let sub = self.offset_columns(u, &cols[1..], kk)?;
                Ok([vec![inner], sub].concat())
            }
            t => {
                let mut out = Vec::new();
                for (p, c) in split_columns(t, cols)? {
                    out.extend(self.offset_columns(&p, c, k)?);
                }
                Ok(out)
            }
        }
    }

    pub(super) fn store_elem(
        &mut self,
        elem: &Type,
        cols: &[Value],
        i: Value,
        w: &[Value],
    ) -> R<()> {
        match elem {
            Type::Scalar(s) => {
                let (addr, offset) = element_address(&mut self.b, cols[0], i, *s);
                self.store(w[0], addr, offset);
                Ok(())
            }
            // A row: its length and its columns' pointers into the jagged columns.
            Type::Seq(_) => {
                for (k, word) in w.iter().enumerate() {
                    let off = self.b.ins().ishl_imm_u(i, 3);
                    let addr = self.b.ins().iadd(cols[k], off);
                    self.store(*word, addr, 0);
                }
                Ok(())
            }
            t => {
                let mut at = 0;
                for (p, c) in split_columns(t, cols)? {
                    let nw = words(&p)?.len();
                    self.store_elem(&p, c, i, &w[at..at + nw])?;
                    at += nw;
                }
                Ok(())
            }
        }
    }

    /// The final columns of `n` produced elements: the columns themselves, or for rows (a
    /// sequence of sequences) the common row length and the rows packed into flat columns,
    /// after checking that all rows have one length.
    pub(super) fn finish_columns(
        &mut self,
        elem: &Type,
        n: Value,
        cols: Vec<Value>,
    ) -> R<Vec<Value>> {
        let Type::Seq(u) = elem else { return Ok(cols) };
        let leaves = scalar_leaves(u)?;
        let lens = cols[0];
        let inner = self.b.declare_var(ct::I64);
        let zero = self.iconst(0);
        self.b.def_var(inner, zero);
        let some = self.b.create_block();
        let after = self.b.create_block();
        let empty = self.b.ins().icmp_imm_s(IntCC::Equal, n, 0);
        self.b.ins().brif(empty, after, &[], some, &[]);
        self.b.switch_to_block(some);
        let first = self.load(ct::I64, lens, 0);
        self.b.def_var(inner, first);
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        let width = self.b.use_var(inner);
        let one = self.iconst(1);
        self.counted_loop(one, n, ScalarType::Usize, |f, i| {
            let off = f.b.ins().ishl_imm_u(i, 3);
            let addr = f.b.ins().iadd(lens, off);
            let len = f.load(ct::I64, addr, 0);
            let differ = f.b.ins().icmp(IntCC::NotEqual, len, width);
            f.fail_if(differ, FailureKind::Irregular, width, len);
            Ok(())
        })?;
        let total = self.b.ins().imul(n, width);
        let mut flat = Vec::new();
        for (k, s) in leaves.iter().enumerate() {
            let dst = self.alloc_columns(&Type::Scalar(*s), total)?[0];
            let row_bytes = self.scaled(width, *s);
            let rows = cols[1 + k];
            let zero = self.iconst(0);
            self.counted_loop(zero, n, ScalarType::Usize, |f, i| {
                let off = f.b.ins().ishl_imm_u(i, 3);
                let addr = f.b.ins().iadd(rows, off);
                let src = f.load(ct::I64, addr, 0);
                let at = f.b.ins().imul(i, row_bytes);
                let to = f.b.ins().iadd(dst, at);
                f.helper("accel_copy", &[to, src, row_bytes]);
                Ok(())
            })?;
            flat.push(dst);
        }
        Ok([vec![width], flat].concat())
    }

    /// `bytes` bytes aligned to `align`, a failure reported: in the site function each
    /// allocation of its own (results adopt it, loops recycle it), in kernels from the
    /// run's arena.
    pub(super) fn alloc_bytes(&mut self, bytes: Value, align: Value) -> Value {
        let whole = self.iconst(0);
        self.alloc_touching(bytes, align, whole)
    }

    /// [`Self::alloc_bytes`] for memory the code writes in scattered parts where `sparse`
    /// (0 or 1, known when the code runs) is 1 (see `Touch`; kernels' arena allocations
    /// are written whole).
    fn alloc_touching(&mut self, bytes: Value, align: Value, sparse: Value) -> Value {
        let ctx = self.ctx;
        if self.host {
            self.allocated("accel_alloc_host", &[ctx, bytes, align, sparse], bytes)
        } else {
            self.allocated("accel_alloc", &[ctx, bytes, align], bytes)
        }
    }

    /// The address the allocation helper `helper` gives for `bytes` bytes, a failure
    /// reported where it is null.
    pub(super) fn allocated(
        &mut self,
        helper: &'static str,
        args: &[Value],
        bytes: Value,
    ) -> Value {
        let p = self.helper(helper, args)[0];
        let null = self.b.ins().icmp_imm_s(IntCC::Equal, p, 0);
        self.fail_if(null, FailureKind::Alloc, bytes, bytes);
        p
    }

    /// Memory for `n` elements of `elem` in rows of [`Gen::out_row_bytes`] bytes (see
    /// `layout::row_leaves`), as the address of each scalar's first element: the
    /// columns' pointers, a row apart.
    pub(super) fn alloc_rows(&mut self, elem: &Type, n: Value) -> R<Vec<Value>> {
        let leaves = scalar_leaves(elem)?;
        let (Some(row), Some(&first)) = (self.g.out_row_bytes, leaves.first()) else {
            return Err("rows of an element with no scalars (a bug in accel)".into());
        };
        let bytes = self.bytes_of(n, row);
        let align = self.iconst(size_of(first));
        let row_bytes = self.iconst(row);
        let ctx = self.ctx;
        let p = self.allocated("accel_alloc_rows", &[ctx, bytes, align, row_bytes], bytes);
        let mut at = 0;
        Ok(leaves
            .iter()
            .map(|&s| {
                let col = self.b.ins().iadd_imm_s(p, at);
                at += size_of(s);
                col
            })
            .collect())
    }

    /// Stores element `i`'s words `w` into the output of the kernel being generated: in
    /// rows where it writes them (see [`Gen::out_row_bytes`]), else into its columns.
    pub(super) fn store_output(
        &mut self,
        elem: &Type,
        cols: &[Value],
        i: Value,
        w: &[Value],
    ) -> R<()> {
        let Some(row) = self.g.out_row_bytes else {
            return self.store_elem(elem, cols, i, w);
        };
        if cols.len() != w.len() {
            return Err(format!(
                "rows of {elem} with {} words (a bug in accel)",
                w.len()
            ));
        }
        let off = self.b.ins().imul_imm_s(i, row);
        for (&col, &word) in cols.iter().zip(w) {
            let addr = self.b.ins().iadd(col, off);
            self.store(word, addr, 0);
        }
        Ok(())
    }

    /// The bytes of `n` elements of `size` bytes each, a failure reported where they pass
    /// `isize::MAX` (the most Rust allocates): a product that wrapped would allocate too
    /// little for the elements written (`create(1 << 62, ..)` of `f32`s asked for 4 bytes).
    pub(super) fn bytes_of(&mut self, n: Value, size: i64) -> Value {
        let too_many = self.b.ins().icmp_imm_u(
            IntCC::UnsignedGreaterThan,
            n,
            isize::MAX as i64 / size.max(1),
        );
        let unknown = self.iconst(-1);
        self.fail_if(too_many, FailureKind::Alloc, unknown, n);
        self.b.ins().imul_imm_s(n, size)
    }

    pub(super) fn alloc_columns(&mut self, elem: &Type, n: Value) -> R<Vec<Value>> {
        let whole = self.iconst(0);
        self.alloc_columns_touching(elem, n, whole)
    }

    /// [`Self::alloc_columns`] for columns the code writes in scattered parts where
    /// `sparse` is 1.
    pub(super) fn alloc_columns_touching(
        &mut self,
        elem: &Type,
        n: Value,
        sparse: Value,
    ) -> R<Vec<Value>> {
        match elem {
            Type::Scalar(s) => {
                let bytes = self.bytes_of(n, size_of(*s));
                let align = self.iconst(size_of(*s));
                Ok(vec![self.alloc_touching(bytes, align, sparse)])
            }
            // Rows are made one by one: their lengths and column pointers first ("jagged"
            // columns); `finish_columns` checks regularity and packs them.
            Type::Seq(u) => {
                let leaves = scalar_leaves(u)?;
                let bytes = self.bytes_of(n, 8);
                let eight = self.iconst(8);
                let mut out = Vec::new();
                for _ in 0..=leaves.len() {
                    out.push(self.alloc_touching(bytes, eight, sparse));
                }
                Ok(out)
            }
            t => {
                let ps = parts(t).ok_or_else(|| unsupported(format!("sequences of {t}")))?;
                let mut out = Vec::new();
                for p in &ps {
                    out.extend(self.alloc_columns_touching(p, n, sparse)?);
                }
                Ok(out)
            }
        }
    }
}

/// The bytes of a cache line.
const CACHE_LINE: i64 = 64;

/// How far ahead of a loop's reads [`FnCx::prefetch_elem`] asks for a sequence's memory:
/// two 4 KiB pages, far enough for the line to arrive before its element is used by loops
/// whose random writes keep the core from running ahead (a histogram's fold: 2x faster on
/// one core with it, where hardware prefetchers stop at each page's end).
const PREFETCH_BYTES: i64 = 8192;

/// The address of element `i` of a column of `s`, as a base and a constant offset. An
/// index `x + k` or `x - k` with a constant `k` (an unrolled loop's, a stencil's
/// `xs[i + 1]`) puts `k` in the offset, so that neighbouring elements share one base and
/// each access is one instruction with no address arithmetic of its own (the same address
/// modulo 2^64).
pub(super) fn element_address(
    b: &mut FunctionBuilder,
    col: Value,
    i: Value,
    s: ScalarType,
) -> (Value, i32) {
    let dfg = &b.func.dfg;
    let constant = |v: Value| match dfg.value_def(v) {
        ValueDef::Result(inst, _) => match dfg.insts[inst] {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } => Some(imm.bits()),
            _ => None,
        },
        _ => None,
    };
    let split = match dfg.value_def(i) {
        ValueDef::Result(inst, _) => match dfg.insts[inst] {
            InstructionData::Binary {
                opcode: Opcode::Iadd,
                args: [x, k],
            } => constant(k)
                .map(|k| (x, k))
                .or_else(|| constant(x).map(|x_k| (k, x_k))),
            InstructionData::Binary {
                opcode: Opcode::Isub,
                args: [x, k],
            } => constant(k).and_then(|k| Some((x, k.checked_neg()?))),
            _ => None,
        },
        _ => None,
    };
    let offset = |(x, k): (Value, i64)| Some((x, i32::try_from(k.checked_mul(size_of(s))?).ok()?));
    let (index, offset) = split.and_then(offset).unwrap_or((i, 0));
    let scaled = scale(b, index, s);
    (b.ins().iadd(col, scaled), offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_function::function;

    /// For an index that `index` makes from a parameter `x`: the offset `element_address`
    /// gives, and whether its base is the column plus `x` scaled (rather than the index).
    fn address(s: ScalarType, index: impl Fn(&mut FunctionBuilder, Value) -> Value) -> (i32, bool) {
        let mut found = None;
        function(&[ct::I64, ct::I64], ct::I64, |b, a| {
            let (col, x) = (a[0], a[1]);
            let i = index(b, x);
            let (base, offset) = element_address(b, col, i, s);
            let dfg = &b.func.dfg;
            let ValueDef::Result(add, _) = dfg.value_def(base) else {
                panic!("the base is not computed")
            };
            let [c, scaled] = dfg.inst_args(add) else {
                panic!("the base is not a sum")
            };
            assert_eq!(*c, col);
            let ValueDef::Result(shift, _) = dfg.value_def(*scaled) else {
                panic!("the scaled index is not computed")
            };
            found = Some((offset, dfg.inst_args(shift)[0] == x));
            base
        });
        found.expect("the function was built")
    }

    #[test]
    fn a_constant_added_to_an_index_becomes_the_offset() {
        assert_eq!(
            address(ScalarType::U32, |b, x| b.ins().iadd_imm_s(x, 3)),
            (12, true)
        );
        assert_eq!(
            address(ScalarType::F64, |b, x| b.ins().iadd_imm_s(x, -1)),
            (-8, true)
        );
        let swapped = |b: &mut FunctionBuilder, x| {
            let k = b.ins().iconst(ct::I64, 5);
            b.ins().iadd(k, x)
        };
        assert_eq!(address(ScalarType::I32, swapped), (20, true));
        let before = |b: &mut FunctionBuilder, x| {
            let k = b.ins().iconst(ct::I64, 2);
            b.ins().isub(x, k)
        };
        assert_eq!(address(ScalarType::F32, before), (-8, true));
    }

    #[test]
    fn other_indices_keep_a_zero_offset() {
        // An index that is not a sum with a constant is scaled whole.
        assert_eq!(address(ScalarType::I64, |_, x| x), (0, true));
        let product = |b: &mut FunctionBuilder, x| b.ins().imul_imm_s(x, 3);
        assert_eq!(address(ScalarType::I64, product), (0, false));
        // An offset that does not fit in 32 bits stays in the index.
        let far = |b: &mut FunctionBuilder, x| b.ins().iadd_imm_s(x, 1 << 30);
        assert_eq!(address(ScalarType::F32, far), (0, false));
    }
}
