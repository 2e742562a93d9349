//! Column reads packed per block: in a blocked loop (see `blocked`), a read down a
//! column of another matrix (`b[k * m + j]`, `k` the loop's variable, `j` the element's
//! column `p % m`) is the same for every row of a tile. Each block of iterations copies
//! what the tile's gangs read of it (the block's rows, the gang's columns) into a buffer
//! of its own on the stack, row after row, and the gangs read the buffer: one cache line
//! after the other, where the matrix's rows a power of two long put every line of a
//! column in one set of the first-level cache (its 8 ways then held 8 iterations' lines,
//! so blocks were cut to 8 iterations; SGEMM at 1024 ran at half the speed of 1000).
//!
//! The copy reads the matrix only where every read of the block is in bounds, tested
//! once per tile; a tile where it is not runs as scalar code, which reports the first
//! failure as the unpacked code would. The gangs load the same numbers and compute the
//! same elements, bit for bit.

use super::super::cx::*;
use super::aliases::{dealias, expand_lets, Aliases};
use super::state::PackedLoad;
use super::{Part, G};
use accel_ir::{BinOp, Expr, ScalarType, Stmt, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types as ct, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
};

/// The most column reads of a loop packed (each a buffer of a block's iterations by a
/// gang's lanes: 16 KiB at 32 lanes of `f64`).
const MAX_PACKED: usize = 2;

/// A read down a column in a blocked loop's body: `seq[index]`, `index` being `var *
/// stride + p % d` (`d` the rows' divisor) once the element's aliases and prefix are
/// read through.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ColumnRead {
    /// The sequence's name as the body writes it.
    seq: String,
    /// The name it stands for outside the element (through the element's aliases).
    source: String,
    /// As the body writes it.
    index: Expr,
    /// An expression of values from outside the element.
    stride: Expr,
}

/// The column reads of a blocked loop (`body` the loop's, `var` its variable, `prefix`
/// the element's `let`s before it) in a walk of rows of `divisor`, at most
/// [`MAX_PACKED`]. `outer` tells values from outside the element.
pub(super) fn column_reads(
    body: &Expr,
    var: &str,
    prefix: &[Stmt],
    (param, divisor): (&str, &Expr),
    aliases: &Aliases,
    outer: &dyn Fn(&Expr) -> bool,
) -> Vec<ColumnRead> {
    let mut out: Vec<ColumnRead> = Vec::new();
    body.walk(&mut |e| {
        let Expr::Index(base, index) = e else {
            return;
        };
        let Expr::Var(seq) = &**base else {
            return;
        };
        let source = dealias(base, aliases);
        if !outer(&source) || out.len() == MAX_PACKED {
            return;
        }
        let Expr::Var(source) = source else {
            return;
        };
        let resolved = expand_lets(index, prefix, aliases);
        if let Some(stride) = stride_of(&resolved, var, param, divisor, outer) {
            let read = ColumnRead {
                seq: seq.clone(),
                source,
                index: (**index).clone(),
                stride,
            };
            if !out.contains(&read) {
                out.push(read);
            }
        }
    });
    out
}

/// `stride` when `index` is `var * stride + param % divisor` (either operand order).
fn stride_of(
    index: &Expr,
    var: &str,
    param: &str,
    divisor: &Expr,
    outer: &dyn Fn(&Expr) -> bool,
) -> Option<Expr> {
    let Expr::Binary(BinOp::Add, a, b) = index else {
        return None;
    };
    let is_var = |e: &Expr, name: &str| matches!(e, Expr::Var(v) if v == name);
    for (scaled, column) in [(a, b), (b, a)] {
        let Expr::Binary(BinOp::Rem, p, d) = &**column else {
            continue;
        };
        if !is_var(p, param) || **d != *divisor {
            continue;
        }
        let Expr::Binary(BinOp::Mul, x, y) = &**scaled else {
            continue;
        };
        for (v, stride) in [(x, y), (y, x)] {
            if is_var(v, var) && outer(stride) {
                return Some((**stride).clone());
            }
        }
    }
    None
}

/// A column read's buffer in a kernel: the sequence's length and memory, the stride, and
/// the buffer's address.
#[derive(Clone, Debug)]
pub(super) struct PackBuf {
    read: ColumnRead,
    elem: ScalarType,
    len: Value,
    memory: Value,
    stride: Value,
    buffer: Value,
}

impl FnCx<'_, '_> {
    /// Buffers of `1 << block_shift` rows of a gang's lanes for `reads` of flat
    /// sequences of 32- or 64-bit numbers (others are read as they are).
    pub(super) fn pack_buffers(
        &mut self,
        reads: &[ColumnRead],
        block_shift: i64,
    ) -> R<Vec<PackBuf>> {
        let mut out = Vec::new();
        for read in reads {
            let v = self.expr(&Expr::Var(read.source.clone()))?;
            let elem = match &v.ty {
                Type::Seq(e) => match **e {
                    Type::Scalar(s) if s != ScalarType::Bool && !s.is_small_int() => s,
                    _ => continue,
                },
                _ => continue,
            };
            let stride = self.expr(&read.stride)?;
            if v.w.len() != 2 || stride.ty != Type::Scalar(ScalarType::Usize) {
                continue;
            }
            let bytes = (self.lanes() as u32 * elem.bytes()) << block_shift;
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes,
                4,
            ));
            let buffer = self.b.ins().stack_addr(ct::I64, slot, 0);
            out.push(PackBuf {
                read: read.clone(),
                elem,
                len: v.w[0],
                memory: v.w[1],
                stride: stride.w[0],
                buffer,
            });
        }
        Ok(out)
    }

    /// Whether every packed read of iterations `low..high` at columns `j0..j0 +
    /// lanes` is in bounds (so the copies may read it all): `(high - 1) * stride + j0 +
    /// lanes <= len`, computed without overflow.
    pub(super) fn packs_fit(
        &mut self,
        packs: &[PackBuf],
        j0: Value,
        low: Value,
        high: Value,
    ) -> Value {
        let width = self.lanes() as i64;
        let empty = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, high, low);
        let mut fit = self.b.ins().iconst(ct::I8, 1);
        let end = self.b.ins().iadd_imm_s(j0, width);
        let last = self.b.ins().iadd_imm_s(high, -1);
        let one = self.iconst(1);
        for p in packs {
            let columns = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, p.len, end);
            let room = self.b.ins().isub(p.len, end);
            let flat = self.b.ins().icmp_imm_u(IntCC::Equal, p.stride, 0);
            let divisor = self.b.ins().select(flat, one, p.stride);
            let rows = self.b.ins().udiv(room, divisor);
            let rows_in = self
                .b
                .ins()
                .icmp(IntCC::UnsignedLessThanOrEqual, last, rows);
            let rows_in = self.b.ins().bor(rows_in, flat);
            let this = self.b.ins().band(columns, rows_in);
            fit = self.b.ins().band(fit, this);
        }
        self.b.ins().bor(fit, empty)
    }

    /// Copies the packed reads of the block `k0..k1` (within the tile's `low..high`) at
    /// columns `j0..j0 + lanes` into their buffers, and makes the gangs' reads of them
    /// read there (until [`Self::unpack`]).
    pub(super) fn pack_block(
        &mut self,
        packs: &[PackBuf],
        var: &str,
        j0: Value,
        (k0, k1): (Value, Value),
        (low, high): (Value, Value),
    ) -> R<()> {
        let width = self.lanes() as i64;
        let from = self.b.ins().umax(k0, low);
        let to = self.b.ins().umin(k1, high);
        let read = MemFlagsData::trusted().with_readonly();
        for p in packs {
            let vector_bytes = self.lane_vectors(p.elem).0.bytes() as i32;
            self.counted_loop(from, to, ScalarType::Usize, |f, k| {
                let row = f.b.ins().imul(k, p.stride);
                let first = f.b.ins().iadd(row, j0);
                let Part::Var(lanes) = f.consecutive_loads(p.memory, p.elem, read, first) else {
                    unreachable!("loads give vectors")
                };
                let row = f.b.ins().isub(k, k0);
                let row = f.b.ins().imul_imm_s(row, width);
                let to = f.scaled(row, p.elem);
                let to = f.b.ins().iadd(p.buffer, to);
                for (q, v) in lanes.into_iter().enumerate() {
                    f.b.ins()
                        .store(MemFlagsData::trusted(), v, to, vector_bytes * q as i32);
                }
                Ok(())
            })?;
            self.packed.push(PackedLoad {
                seq: p.read.seq.clone(),
                index: p.read.index.clone(),
                var: var.to_string(),
                elem: p.elem,
                buffer: p.buffer,
                first: k0,
            });
        }
        Ok(())
    }

    /// Ends a block's packed reads.
    pub(super) fn unpack(&mut self) {
        self.packed.clear();
    }

    /// `base[i]` from its block's buffer, when it is a packed read: the gang's lanes are
    /// the buffer's row of the loop's iteration.
    pub(super) fn packed_load(&mut self, base: &Expr, i: &Expr) -> R<Option<G>> {
        let Expr::Var(seq) = base else {
            return Ok(None);
        };
        let Some(p) = self
            .packed
            .iter()
            .find(|p| &p.seq == seq && &p.index == i)
            .cloned()
        else {
            return Ok(None);
        };
        let k = self.expr(&Expr::Var(p.var.clone()))?;
        let row = self.b.ins().isub(k.w[0], p.first);
        let width = self.lanes() as i64;
        let first = self.b.ins().imul_imm_s(row, width);
        // Movable, so that Cranelift places each load at its use, as an operand of its
        // arithmetic (else its SGEMM at 1000 ran 12-20% slower than reading the matrix):
        // the buffer is written only before a block's gangs run, and the address depends
        // on the iteration, so no load can move across those writes.
        let flags = MemFlagsData::trusted().with_readonly().with_can_move();
        let lanes = self.consecutive_loads(p.buffer, p.elem, flags, first);
        Ok(Some(G {
            ty: Type::Scalar(p.elem),
            w: vec![lanes],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{Lit, Pat};

    fn var(x: &str) -> Expr {
        Expr::Var(x.to_string())
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    fn outer(e: &Expr) -> bool {
        matches!(e, Expr::Var(v) if v == "n" || v == "b" || v == "a") || matches!(e, Expr::Lit(_))
    }

    fn let_(name: &str, init: Expr) -> Stmt {
        Stmt::Let {
            pat: Pat::Bind {
                name: name.to_string(),
                mutable: false,
            },
            ty: Type::Infer,
            init: Some(init),
        }
    }

    #[test]
    fn a_matrix_products_column_read_is_found_through_the_prefix() {
        // let i = p / n; let j = p % n; .. acc += a[i * n + k] * b[k * n + j]
        let prefix = vec![
            let_("i", bin(BinOp::Div, var("p"), var("n"))),
            let_("j", bin(BinOp::Rem, var("p"), var("n"))),
        ];
        let row = Expr::Index(
            Box::new(var("a")),
            Box::new(bin(
                BinOp::Add,
                bin(BinOp::Mul, var("i"), var("n")),
                var("k"),
            )),
        );
        let column_index = bin(BinOp::Add, bin(BinOp::Mul, var("k"), var("n")), var("j"));
        let column = Expr::Index(Box::new(var("b")), Box::new(column_index.clone()));
        let body = bin(BinOp::Mul, row, column);
        let reads = column_reads(
            &body,
            "k",
            &prefix,
            ("p", &var("n")),
            &Aliases::new(),
            &outer,
        );
        assert_eq!(
            reads,
            vec![ColumnRead {
                seq: "b".to_string(),
                source: "b".to_string(),
                index: column_index,
                stride: var("n"),
            }]
        );
    }

    #[test]
    fn reads_that_depend_on_the_row_or_another_divisor_are_not_column_reads() {
        let prefix = vec![let_("i", bin(BinOp::Div, var("p"), var("n")))];
        // b[k * n + i]: the row's, not the column's.
        let by_row = Expr::Index(
            Box::new(var("b")),
            Box::new(bin(
                BinOp::Add,
                bin(BinOp::Mul, var("k"), var("n")),
                var("i"),
            )),
        );
        // b[k * n + p % 3]: another divisor.
        let other = Expr::Index(
            Box::new(var("b")),
            Box::new(bin(
                BinOp::Add,
                bin(BinOp::Mul, var("k"), var("n")),
                bin(
                    BinOp::Rem,
                    var("p"),
                    Expr::Lit(Lit::Int(3, Some(ScalarType::Usize))),
                ),
            )),
        );
        // b[k * i + p % n]: a stride from the element.
        let stride_in = Expr::Index(
            Box::new(var("b")),
            Box::new(bin(
                BinOp::Add,
                bin(BinOp::Mul, var("k"), var("i")),
                bin(BinOp::Rem, var("p"), var("n")),
            )),
        );
        for body in [by_row, other, stride_in] {
            let reads = column_reads(
                &body,
                "k",
                &prefix,
                ("p", &var("n")),
                &Aliases::new(),
                &outer,
            );
            assert_eq!(reads, vec![], "{body:?}");
        }
    }
}
