//! Blocked loops: an element that folds a long loop into an accumulator (a matrix
//! product's `let mut acc = 0.0; for k in 0..n { acc += a[i * n + k] * b[k * m + j] }`),
//! in a 2-D `create` walking rows, runs tile by tile with its loop cut into blocks of
//! iterations: for a tile of up to [`TILE_ROWS`] rows by one gang's columns, every gang
//! first computes its accumulator's start, then each block of iterations (64, fewer
//! for rows whose columns share cache sets: `block_shift`) runs for every gang of the
//! tile in turn (the accumulators kept in a buffer on the stack),
//! then every gang finishes its element. What a block's iterations read down a column of
//! another matrix (`b[k * m + j]`, a few cache lines) is then read once per tile instead
//! of once per gang, whatever the rows' length (a walk over a whole column of a matrix
//! whose rows are a power of two long meets few cache sets and evicts itself).
//!
//! A 1-D `create` whose loop walks down columns (atax's `let mut acc = 0.0; for i in 0..m
//! { acc += a[i * n + j] * t[i] }`, `j` the index) runs so too, its tiles up to
//! [`LINE_TILE_GANGS`] consecutive gangs of a chunk and its blocks 8 iterations: gang
//! after gang, each iteration reads a few cache lines a whole row apart from the last,
//! a pattern the hardware prefetchers cannot follow; a tile's block reads 8 rows, each
//! along the tile's columns, as streams they can.
//!
//! Each gang still runs its own iterations in order from the same start, so its element
//! is the one the unblocked loop computes, bit for bit; the gangs are independent.

use super::super::cx::*;
use super::super::kernel::ScalarKernel;
use super::aliases::{dealias, Aliases};
use super::packed::{column_reads, ColumnRead, PackBuf};
use super::state::RowWalk;
use super::walks::GangSpan;
use super::{not_spmd, Part, G};
use accel_ir::{BinOp, Expr, Pat, ScalarType, Stmt, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types as ct, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::Variable;

/// Storing a gang's element at its index: the end of a blocked element.
pub(in crate::cpu::codegen) type StoreFn<'a, F> = dyn FnMut(&mut F, Value, &G) -> R<()> + 'a;

/// The most rows of a tile.
pub(super) const TILE_ROWS: i64 = 32;

/// The most iterations of a block, as a power of two.
const BLOCK_SHIFT: i64 = 6;

/// The most gangs of a tile of a 1-D element that walks down columns (a tile's
/// accumulators, 16 KiB at 32 lanes of `f64`, stay in the first-level cache).
const LINE_TILE_GANGS: i64 = 64;

/// `log2` of the iterations of a block of such a tile: 8 rows read at once, each along
/// the tile's columns. A walk down 1900 rows of 2100 `f64` (atax's `A^T t`, 2 threads,
/// AMD EPYC, AVX2) took 4.1 ms gang by gang and 1.6 ms in blocks of 8 rows over each
/// thread's half of the columns (1.7 in blocks of 4, 2.6 of 16; rayon's fold of rows
/// 1.7).
const LINE_BLOCK_SHIFT: i64 = 3;

/// Bytes between addresses that share a set of the first-level data cache: 64 sets of
/// 64-byte lines on Intel's cores since Sandy Bridge and AMD's Zen (32 KiB of 8 ways, or
/// 48 KiB of 12).
const SET_SPAN: i64 = 4096;

/// An element of the blocked shape: `{ prefix; let mut acc = init; for var in lo..hi {
/// body } tail; result }`.
#[derive(Clone, Debug)]
pub(super) struct BlockedLoop {
    prefix: Vec<Stmt>,
    acc: String,
    /// The accumulator's type as its `let` declares it (`Type::Infer` when it does not).
    acc_ty: Type,
    init: Expr,
    var: String,
    lo: Expr,
    hi: Expr,
    body: Expr,
    tail: Vec<Stmt>,
    result: Option<Expr>,
    /// The reads down columns of other matrices that a 2-D tile's blocks pack (see
    /// `packed`).
    pub(super) reads: Vec<ColumnRead>,
}

/// The element `body` as a blocked loop, when it has that shape: its statements before
/// the accumulator cheap `let`s (computed again in each phase), the loop's bounds the
/// same for every gang of a row (reading only `param / d` and values from outside, as
/// `row_uniform` says), its body assigning nothing but the accumulator.
pub(super) fn blocked_loop(
    body: &Expr,
    aliases: &Aliases,
    row_uniform: &dyn Fn(&Expr, &[Stmt]) -> bool,
) -> Option<BlockedLoop> {
    let (stmts, result) = flatten(body);
    let result = result.as_ref();
    let at = stmts
        .iter()
        .position(|s| matches!(s, Stmt::Expr(Expr::For { .. })))?;
    let Stmt::Expr(Expr::For { var, lo, hi, body }) = &stmts[at] else {
        return None;
    };
    let Some(Stmt::Let {
        pat: Pat::Bind {
            name: acc,
            mutable: true,
        },
        ty: acc_ty,
        init: Some(init),
    }) = at.checked_sub(1).map(|k| &stmts[k])
    else {
        return None;
    };
    let prefix = stmts[..at - 1].to_vec();
    let cheap = |e: &Expr| {
        let mut ok = true;
        e.walk(&mut |x| {
            ok &= !matches!(
                x,
                Expr::For { .. } | Expr::While { .. } | Expr::Par { .. } | Expr::Assign { .. }
            )
        });
        ok
    };
    let prefix_ok = prefix.iter().all(|s| match s {
        Stmt::Let {
            pat: Pat::Bind { mutable: false, .. },
            init: Some(x),
            ..
        } => cheap(x),
        _ => false,
    });
    // The loop assigns the accumulator only (its own `let`s aside).
    let mut assigns_other = false;
    body.walk(&mut |x| {
        if let Expr::Assign { target, .. } = x {
            assigns_other |= !matches!(&**target, Expr::Var(v) if v == acc);
        }
    });
    let tail = stmts[at + 1..].to_vec();
    let tail_ok = tail.iter().all(|s| match s {
        Stmt::Let { init: Some(x), .. } => cheap(x),
        _ => false,
    }) && result.is_none_or(&cheap);
    let bounds_ok =
        row_uniform(&dealias(lo, aliases), &prefix) && row_uniform(&dealias(hi, aliases), &prefix);
    (prefix_ok && !assigns_other && tail_ok && bounds_ok && cheap(init)).then(|| BlockedLoop {
        prefix,
        acc: acc.clone(),
        acc_ty: acc_ty.clone(),
        init: init.clone(),
        var: var.clone(),
        lo: (**lo).clone(),
        hi: (**hi).clone(),
        body: (**body).clone(),
        tail,
        result: result.cloned(),
        reads: Vec::new(),
    })
}

/// `bl` with the reads down columns its 2-D tiles pack (see `packed`), in a walk of rows
/// of `divisor` by the element's index `param`.
pub(super) fn with_column_reads(
    mut bl: BlockedLoop,
    (param, divisor): (&str, &Expr),
    aliases: &Aliases,
    outer: &dyn Fn(&Expr) -> bool,
) -> BlockedLoop {
    bl.reads = column_reads(
        &bl.body,
        &bl.var,
        &bl.prefix,
        (param, divisor),
        aliases,
        outer,
    );
    bl
}

/// Whether the loop of `bl` walks down columns: its body reads a sequence at the loop's
/// variable times a stride plus the element's index `param` (`a[i * n + j]` for `i` in
/// `0..m`, `j` the index): each iteration a row further, the gang's lanes along the row.
pub(super) fn column_walk(bl: &BlockedLoop, param: &str, aliases: &Aliases) -> bool {
    let mut found = false;
    bl.body.walk(&mut |x| {
        if let Expr::Index(_, index) = x {
            let index = dealias(index, aliases);
            found |= super::scaled_by(&index, &bl.var)
                && super::mentions(&index, param)
                && !super::scaled_by(&index, param);
        }
    });
    found
}

/// A block's statements and result with blocks in result position opened, and an
/// inlined function's `{ ..; let r = { body }; r }` read as `{ ..; body }` (binders are
/// unique in a site, so nothing is shadowed).
fn flatten(body: &Expr) -> (Vec<Stmt>, Option<Expr>) {
    let Expr::Block { stmts, result } = body else {
        return (vec![], Some(body.clone()));
    };
    let mut out = stmts.clone();
    let Some(result) = result.as_deref() else {
        return (out, None);
    };
    if let (
        Expr::Var(r),
        Some(Stmt::Let {
            pat: Pat::Bind { name, .. },
            init: Some(inner @ Expr::Block { .. }),
            ..
        }),
    ) = (result, stmts.last())
    {
        if name == r {
            out.pop();
            let (more, result) = flatten(inner);
            out.extend(more);
            return (out, result);
        }
    }
    let (more, result) = flatten(result);
    out.extend(more);
    (out, result)
}

impl FnCx<'_, '_> {
    /// The gangs of `lo..hi` (rows of one divisor) for a blocked element: tiles of up to
    /// [`TILE_ROWS`] rows by a gang's columns, each in three phases (see the module
    /// documentation); a row's columns fewer than a gang run as scalar code.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk_blocked(
        &mut self,
        rows: &RowWalk,
        index: Variable,
        (lo, hi): (Value, Value),
        bl: &BlockedLoop,
        store: &mut StoreFn<'_, Self>,
        scalar: ScalarKernel,
    ) -> R<()> {
        let div = &rows.divisors[0];
        let d = div.value;
        let width = self.lanes() as i64;
        let exit = self.b.create_block();
        let run = self.b.create_block();
        let empty = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, lo, hi);
        self.b.ins().brif(empty, exit, &[], run, &[]);
        self.b.switch_to_block(run);
        let first_row = self.b.ins().udiv(lo, d);
        let last = self.b.ins().iadd_imm_s(hi, -1);
        let last_row = self.b.ins().udiv(last, d);
        let rows_end = self.b.ins().iadd_imm_s(last_row, 1);
        let blocks = self.b.ins().iadd_imm_s(d, width - 1);
        let blocks = self.b.ins().udiv_imm_u(blocks, width);
        let (acc_ty, accs, bounds, gang_bytes) = self.tile_slots(bl, TILE_ROWS as u32)?;
        let packs = self.pack_buffers(&bl.reads, BLOCK_SHIFT)?;
        if !packs.is_empty() {
            self.g.shapes.push("packed columns");
        }
        let group = self.b.declare_var(ct::I64);
        self.b.def_var(group, first_row);
        let (head, group_block) = (self.b.create_block(), self.b.create_block());
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let g0 = self.b.use_var(group);
        let done = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, g0, rows_end);
        self.b.ins().brif(done, exit, &[], group_block, &[]);
        self.b.switch_to_block(group_block);
        let g1 = self.b.ins().iadd_imm_s(g0, TILE_ROWS);
        let g1 = self.b.ins().umin(g1, rows_end);
        let zero = self.iconst(0);
        // Packed reads are contiguous whatever the rows' length: whole blocks.
        let block_shift = if packs.is_empty() {
            self.block_shift(d, &acc_ty)
        } else {
            self.iconst(BLOCK_SHIFT)
        };
        let tile = Tile {
            d,
            lo,
            hi,
            rows: (g0, g1),
            packs: packs.clone(),
            at: Phases {
                index,
                accs,
                bounds,
                gang_bytes,
                block_shift,
            },
        };
        self.counted_loop(zero, blocks, ScalarType::Usize, |f, t| {
            f.tile_phases(rows, &tile, t, bl, &acc_ty, store, scalar)
        })?;
        self.b.def_var(group, g1);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// The stack slots of a tile of up to `gangs` gangs: their accumulators (of the type
    /// returned, `bl`'s accumulator's) and their loop bounds, with a gang's bytes of
    /// accumulators.
    fn tile_slots(&mut self, bl: &BlockedLoop, gangs: u32) -> R<(Type, Value, Value, i64)> {
        let acc_ty = self.acc_type(bl)?;
        let words = self.acc_vectors(&acc_ty)?;
        let gang_bytes: u32 = words.iter().map(|t| t.bytes()).sum();
        let acc_slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            gang_bytes * gangs,
            4,
        ));
        let bounds_slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            16 * gangs,
            3,
        ));
        let accs = self.b.ins().stack_addr(ct::I64, acc_slot, 0);
        let bounds = self.b.ins().stack_addr(ct::I64, bounds_slot, 0);
        Ok((acc_ty, accs, bounds, i64::from(gang_bytes)))
    }

    /// The gangs of `span` (a 1-D element that walks down columns, see [`column_walk`])
    /// in tiles of up to [`LINE_TILE_GANGS`] consecutive gangs, each in three phases
    /// (see [`Self::phases`]) with blocks of [`1 << LINE_BLOCK_SHIFT`](LINE_BLOCK_SHIFT)
    /// iterations: a block reads that many rows of the matrix, each along the whole
    /// tile's columns.
    pub(super) fn walk_blocked_line(
        &mut self,
        index: Variable,
        span: &GangSpan,
        shift: i64,
        bl: &BlockedLoop,
        store: &mut StoreFn<'_, Self>,
    ) -> R<()> {
        let (acc_ty, accs, bounds, gang_bytes) = self.tile_slots(bl, LINE_TILE_GANGS as u32)?;
        let at = Phases {
            index,
            accs,
            bounds,
            gang_bytes,
            block_shift: self.iconst(LINE_BLOCK_SHIFT),
        };
        let count = span.count();
        let tiles = self.b.ins().iadd_imm_s(count, LINE_TILE_GANGS - 1);
        let tiles = self.b.ins().udiv_imm_u(tiles, LINE_TILE_GANGS);
        let zero = self.iconst(0);
        self.counted_loop(zero, tiles, ScalarType::Usize, |f, t| {
            let g0 = f.b.ins().imul_imm_s(t, LINE_TILE_GANGS);
            let g1 = f.b.ins().iadd_imm_s(g0, LINE_TILE_GANGS);
            let g1 = f.b.ins().umin(g1, count);
            f.phases(&at, bl, &acc_ty, store, None, &mut |f, each| {
                f.counted_loop(g0, g1, ScalarType::Usize, |f, j| {
                    let base = f.span_gang(span, shift, j);
                    f.b.def_var(index, base);
                    let slot = f.b.ins().isub(j, g0);
                    each(f, slot)
                })
            })
        })
    }

    /// One 2-D tile's three phases (see [`Self::phases`]) for the column block `t`, then
    /// its rows' columns fewer than a gang.
    #[allow(clippy::too_many_arguments)]
    fn tile_phases(
        &mut self,
        rows: &RowWalk,
        tile: &Tile,
        t: Value,
        bl: &BlockedLoop,
        acc_ty: &Type,
        store: &mut StoreFn<'_, Self>,
        scalar: ScalarKernel,
    ) -> R<()> {
        let width = self.lanes() as i64;
        let j0 = self.b.ins().imul_imm_s(t, width);
        // Where a packed read is out of bounds, the tile's gangs run as scalar code.
        let pack = Pack {
            packs: &tile.packs,
            j0,
            scalar: &mut |f: &mut Self| f.tile_scalar(tile, j0, scalar, true),
        };
        let pack = (!tile.packs.is_empty()).then_some(pack);
        self.phases(&tile.at, bl, acc_ty, store, pack, &mut |f, each| {
            f.tile_gangs(rows, tile, j0, each)
        })?;
        self.tile_scalar(tile, j0, scalar, false)
    }

    /// The three phases of a tile's gangs (`gangs` runs a function for each): each
    /// gang's start (its accumulator's initial value and its loop's bounds), each block
    /// of iterations for every gang in turn, each gang's end (its element stored). With
    /// `pack`, each block first copies its column reads into their buffers, where they
    /// are all in bounds, and else the tile's gangs run as scalar code.
    fn phases(
        &mut self,
        at: &Phases,
        bl: &BlockedLoop,
        acc_ty: &Type,
        store: &mut StoreFn<'_, Self>,
        pack: Option<Pack<'_, Self>>,
        gangs: &mut Gangs<'_, Self>,
    ) -> R<()> {
        // Phase 1: each gang's start, and the tile's widest loop range.
        let low = self.b.declare_var(ct::I64);
        let high = self.b.declare_var(ct::I64);
        let (max, zero) = (self.iconst(-1), self.iconst(0));
        self.b.def_var(low, max);
        self.b.def_var(high, zero);
        gangs(self, &mut |f, slot| {
            f.prefix(bl)?;
            let acc = f.gexpr(&bl.init)?;
            f.store_acc(at, slot, acc_ty, &acc)?;
            let (from, to) = f.loop_bounds(bl)?;
            let bound = f.bound_at(at, slot);
            f.store(from, bound, 0);
            f.store(to, bound, 8);
            let l = f.b.use_var(low);
            let l = f.b.ins().umin(l, from);
            f.b.def_var(low, l);
            let h = f.b.use_var(high);
            let h = f.b.ins().umax(h, to);
            f.b.def_var(high, h);
            Ok(())
        })?;
        // Phase 2: each block of iterations, for every gang in turn.
        let from = self.b.use_var(low);
        let to = self.b.use_var(high);
        let after = match pack {
            Some(Pack { packs, j0, scalar }) => {
                let fit = self.packs_fit(packs, j0, from, to);
                let (packed, unpacked, after) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(fit, packed, &[], unpacked, &[]);
                self.b.switch_to_block(unpacked);
                scalar(self)?;
                self.b.ins().jump(after, &[]);
                self.b.switch_to_block(packed);
                Some((after, packs, j0))
            }
            None => None,
        };
        let some = self.b.ins().icmp(IntCC::UnsignedGreaterThan, to, from);
        let diff = self.b.ins().isub(to, from);
        let none = self.iconst(0);
        let span = self.b.ins().select(some, diff, none);
        let one = self.iconst(1);
        let block = self.b.ins().ishl(one, at.block_shift);
        let nblocks = self.b.ins().iadd(span, block);
        let nblocks = self.b.ins().iadd_imm_s(nblocks, -1);
        let nblocks = self.b.ins().ushr(nblocks, at.block_shift);
        let z = self.iconst(0);
        self.counted_loop(z, nblocks, ScalarType::Usize, |f, kb| {
            let k0 = f.b.ins().ishl(kb, at.block_shift);
            let k0 = f.b.ins().iadd(from, k0);
            let k1 = f.b.ins().iadd(k0, block);
            if let Some((_, packs, j0)) = after {
                f.pack_block(packs, &bl.var, j0, (k0, k1), (from, to))?;
            }
            gangs(f, &mut |f, slot| {
                f.prefix(bl)?;
                let bound = f.bound_at(at, slot);
                let (lo, hi) = (f.load(ct::I64, bound, 0), f.load(ct::I64, bound, 8));
                let lo = f.b.ins().umax(lo, k0);
                let hi = f.b.ins().umin(hi, k1);
                let acc = f.load_acc(at, slot, acc_ty)?;
                f.gbind(&mutable(&bl.acc), acc)?;
                f.gfor_range(&bl.var, lo, hi, ScalarType::Usize, &bl.body)?;
                let acc = f.gvar(&bl.acc)?;
                f.store_acc(at, slot, acc_ty, &acc)
            })?;
            f.unpack();
            Ok(())
        })?;
        // Phase 3: each gang's end.
        gangs(self, &mut |f, slot| {
            f.prefix(bl)?;
            let acc = f.load_acc(at, slot, acc_ty)?;
            f.gbind(&mutable(&bl.acc), acc)?;
            let g = f.gblock(&bl.tail, bl.result.as_ref())?;
            let base = f.b.use_var(at.index);
            store(f, base, &g)
        })?;
        if let Some((after, _, _)) = after {
            self.b.ins().jump(after, &[]);
            self.b.switch_to_block(after);
        }
        Ok(())
    }

    /// `log2` of a block's iterations for rows of `d` elements of the accumulator's type
    /// `acc_ty`: 64 iterations, fewer where a block's reads down a column (`b[k * d + j]`,
    /// one line per iteration) would share first-level cache sets. Rows a multiple of
    /// [`SET_SPAN`] bytes long put every line in one set, whose 8 ways then hold only 8
    /// iterations' lines: SGEMM at 1024 ran 2x faster in blocks of 8 on 2 cores (AMD EPYC),
    /// while GEMM's rows of 1100 `f64` need blocks of 64 (blocks of 8 ran it 1.4x slower).
    fn block_shift(&mut self, d: Value, acc_ty: &Type) -> Value {
        let bytes = match acc_ty {
            Type::Scalar(s) => i64::from(s.bytes()),
            _ => 8,
        };
        let row_bytes = self.b.ins().imul_imm_s(d, bytes);
        // Rows a multiple of SET_SPAN / 2^e bytes long spread a column's lines over 2^e
        // sets: 8 iterations a set.
        let span = self.iconst(SET_SPAN);
        let capped = self.b.ins().bor(row_bytes, span);
        let zeros = self.b.ins().ctz(capped);
        let nine = self.iconst(SET_SPAN.trailing_zeros() as i64 - 3);
        let shared = self.b.ins().umax(zeros, nine);
        let shared = self.b.ins().isub(shared, nine);
        let full = self.iconst(BLOCK_SHIFT);
        self.b.ins().isub(full, shared)
    }

    /// Runs `each` for the whole gangs of column block `j0..j0 + width` in the tile's rows
    /// (its slot given), the gang state set for each.
    fn tile_gangs(
        &mut self,
        rows: &RowWalk,
        tile: &Tile,
        j0: Value,
        each: &mut dyn FnMut(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let div = &rows.divisors[0];
        self.counted_loop(tile.rows.0, tile.rows.1, ScalarType::Usize, |f, i| {
            let (from, to, start) = f.row_columns(tile, i, j0);
            let whole = f.b.ins().isub(to, from);
            let width = f.lanes() as i64;
            let is_gang = f.b.ins().icmp_imm_u(IntCC::Equal, whole, width);
            let (gang, next) = (f.b.create_block(), f.b.create_block());
            f.b.ins().brif(is_gang, gang, &[], next, &[]);
            f.b.switch_to_block(gang);
            let base = f.b.ins().iadd(start, from);
            f.b.def_var(div.row, i);
            f.b.def_var(div.row_start, start);
            f.b.def_var(tile.at.index, base);
            let slot = f.b.ins().isub(i, tile.rows.0);
            each(f, slot)?;
            f.b.ins().jump(next, &[]);
            f.b.switch_to_block(next);
            Ok(())
        })
    }

    /// The columns of row `i` in the tile's range within block `j0..j0 + width`, as
    /// `(from, to, row start)`, `from <= to`.
    fn row_columns(&mut self, tile: &Tile, i: Value, j0: Value) -> (Value, Value, Value) {
        let width = self.lanes() as i64;
        let zero = self.iconst(0);
        let start = self.b.ins().imul(i, tile.d);
        let into = self.b.ins().isub(tile.lo, start);
        let before = self.b.ins().icmp(IntCC::UnsignedLessThan, tile.lo, start);
        let c0 = self.b.ins().select(before, zero, into);
        let c1 = self.b.ins().isub(tile.hi, start);
        let c1 = self.b.ins().umin(c1, tile.d);
        let j1 = self.b.ins().iadd_imm_s(j0, width);
        let j1 = self.b.ins().umin(j1, tile.d);
        let from = self.b.ins().umax(c0, j0);
        let to = self.b.ins().umin(c1, j1);
        let to = self.b.ins().umax(to, from);
        (from, to, start)
    }

    /// The columns of block `j0` in the tile's rows that are fewer than a gang (`gangs`:
    /// a gang's), as scalar code: the launch's scalar kernel's.
    fn tile_scalar(&mut self, tile: &Tile, j0: Value, scalar: ScalarKernel, gangs: bool) -> R<()> {
        self.counted_loop(tile.rows.0, tile.rows.1, ScalarType::Usize, |f, i| {
            let (from, to, start) = f.row_columns(tile, i, j0);
            let whole = f.b.ins().isub(to, from);
            let width = f.lanes() as i64;
            let cc = if gangs { IntCC::Equal } else { IntCC::NotEqual };
            let partial = f.b.ins().icmp_imm_u(cc, whole, width);
            let (rest, next) = (f.b.create_block(), f.b.create_block());
            f.b.ins().brif(partial, rest, &[], next, &[]);
            f.b.switch_to_block(rest);
            let p0 = f.b.ins().iadd(start, from);
            let p1 = f.b.ins().iadd(start, to);
            f.call_scalar(scalar, p0, p1);
            f.b.ins().jump(next, &[]);
            f.b.switch_to_block(next);
            Ok(())
        })
    }

    /// The prefix's `let`s for the gang.
    fn prefix(&mut self, bl: &BlockedLoop) -> R<()> {
        for st in &bl.prefix {
            if let Stmt::Let {
                pat, init: Some(x), ..
            } = st
            {
                let g = self.gexpr(x)?;
                self.gbind(pat, g)?;
            }
        }
        Ok(())
    }

    /// The loop's bounds for the gang (after the prefix): one value each.
    fn loop_bounds(&mut self, bl: &BlockedLoop) -> R<(Value, Value)> {
        let lo = self.gexpr(&bl.lo)?;
        let hi = self.gexpr(&bl.hi)?;
        match (&lo.w[0], &hi.w[0], &lo.ty) {
            (Part::Uni(a), Part::Uni(b), Type::Scalar(ScalarType::Usize)) => Ok((*a, *b)),
            _ => Err(not_spmd("a blocked loop whose bounds differ between lanes")),
        }
    }

    /// The type of the accumulator (its initial value's).
    fn acc_type(&mut self, bl: &BlockedLoop) -> R<Type> {
        // Its declared type: its initial value may read the prefix's names (`let mut acc
        // = w[i]`), not bound where the tile's slots are made.
        match &bl.acc_ty {
            Type::Infer => self.type_of(&bl.init),
            t => Ok(t.clone()),
        }
    }

    /// The vector types of an accumulator of type `t` for the gang.
    fn acc_vectors(&mut self, t: &Type) -> R<Vec<CType>> {
        let mut out = Vec::new();
        for s in Self::word_scalars(t)? {
            let (vt, n) = self.lane_vectors(s);
            out.extend(std::iter::repeat_n(vt, n));
        }
        Ok(out)
    }

    fn bound_at(&mut self, at: &Phases, slot: Value) -> Value {
        let off = self.b.ins().imul_imm_s(slot, 16);
        self.b.ins().iadd(at.bounds, off)
    }

    fn acc_at(&mut self, at: &Phases, slot: Value) -> Value {
        let off = self.b.ins().imul_imm_s(slot, at.gang_bytes);
        self.b.ins().iadd(at.accs, off)
    }

    fn store_acc(&mut self, phases: &Phases, slot: Value, t: &Type, acc: &G) -> R<()> {
        let g = self.materialize(acc)?;
        let at = self.acc_at(phases, slot);
        let mut k = 0i32;
        let _ = t;
        // Every vector is a group's 32-bit lanes wide (one of 64-bit lanes, half a group).
        let vector_bytes = 4 * self.group() as i32;
        for p in &g.w {
            let Part::Var(vs) = p else {
                unreachable!("materialized")
            };
            for &v in vs {
                self.b
                    .ins()
                    .store(MemFlagsData::trusted(), v, at, vector_bytes * k);
                k += 1;
            }
        }
        Ok(())
    }

    fn load_acc(&mut self, phases: &Phases, slot: Value, t: &Type) -> R<G> {
        let at = self.acc_at(phases, slot);
        let mut k = 0i32;
        let mut w = Vec::new();
        for s in Self::word_scalars(t)? {
            let (vt, n) = self.lane_vectors(s);
            let vector_bytes = vt.bytes() as i32;
            let vs = (0..n)
                .map(|_| {
                    let at_k = vector_bytes * k;
                    let v = self.b.ins().load(vt, MemFlagsData::trusted(), at, at_k);
                    k += 1;
                    v
                })
                .collect();
            w.push(Part::Var(vs));
        }
        Ok(G { ty: t.clone(), w })
    }
}

/// A mutable binding of `name`.
fn mutable(name: &str) -> Pat {
    Pat::Bind {
        name: name.to_string(),
        mutable: true,
    }
}

/// A 2-D tile: its rows of `d` elements within the range `lo..hi`, and its phases'
/// values.
struct Tile {
    d: Value,
    lo: Value,
    hi: Value,
    rows: (Value, Value),
    packs: Vec<PackBuf>,
    at: Phases,
}

/// A tile's packed reads (see `packed`): their buffers, the tile's first column, and
/// the tile's gangs as scalar code (where a read is out of bounds).
struct Pack<'a, F> {
    packs: &'a [PackBuf],
    j0: Value,
    scalar: &'a mut dyn FnMut(&mut F) -> R<()>,
}

/// The values the three phases of a tile's gangs share: where the gang's index is kept,
/// the gangs' accumulators and loop bounds on the stack (a slot per gang), and `log2` of
/// the iterations of a block.
struct Phases {
    index: Variable,
    accs: Value,
    bounds: Value,
    gang_bytes: i64,
    block_shift: Value,
}

/// Runs the given function for each gang of a tile, the gang's state and index set,
/// with the gang's slot.
type Gangs<'a, F> = dyn FnMut(&mut F, &mut dyn FnMut(&mut F, Value) -> R<()>) -> R<()> + 'a;

/// Whether `e` is the same for every gang of a row: reads only values from outside the
/// element, literals, and names the prefix binds to such values or, given the rows'
/// `divisor` `d`, to `param / d` (without one, a 1-D range is one row).
pub(super) fn row_uniform(
    e: &Expr,
    prefix: &[Stmt],
    param: &str,
    divisor: Option<&Expr>,
    outer: &dyn Fn(&Expr) -> bool,
    aliases: &Aliases,
) -> bool {
    let bound = |name: &str| -> Option<&Expr> {
        prefix.iter().find_map(|s| match s {
            Stmt::Let {
                pat: Pat::Bind { name: n, .. },
                init: Some(x),
                ..
            } if n == name => Some(x),
            _ => None,
        })
    };
    let mut ok = true;
    e.walk(&mut |x| match x {
        Expr::Var(v) => {
            if outer(x) {
                return;
            }
            match bound(v).map(|init| dealias(init, aliases)) {
                Some(Expr::Binary(BinOp::Div, a, d))
                    if matches!(&*a, Expr::Var(p) if p == param) && Some(&*d) == divisor => {}
                Some(init) => ok &= row_uniform(&init, prefix, param, divisor, outer, aliases),
                None => ok = false,
            }
        }
        Expr::Lit(_) | Expr::Const(_) | Expr::Binary(..) | Expr::Cast(..) => {}
        Expr::Method { method, .. } if method == "len" => {}
        _ => ok = false,
    });
    ok
}
