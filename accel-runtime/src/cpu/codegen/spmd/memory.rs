//! Memory per lane: loads of sequence elements (contiguous at the gang's index, else
//! gathered lane by lane; checked in the running lanes unless proven), tensor `get` and
//! `set` at coordinates per lane (stores only in the running lanes), the gang's element
//! stored into its output columns, and failures naming the first failing lane.

use super::super::cx::*;
use super::{not_spmd, Mask, Part, G};
use crate::backend::failure::FailureKind;
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types as ct, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
};

impl FnCx<'_, '_> {
    /// `base[i]` for the gang.
    pub(super) fn gindex(&mut self, base: &Expr, i: &Expr) -> R<G> {
        if self.varies(base) {
            if let Expr::Index(rows, row) = base {
                if !self.varies(rows) {
                    return self.gindex_rows(rows, row, i);
                }
            }
            let b = self.gexpr(base)?;
            if let (Type::Array(..), Some(k)) = (&b.ty, i.literal_usize()) {
                return super::expr::gfield(&b, &k.to_string());
            }
            let idx = self.gexpr(i)?;
            return self.gindex_lanes_seq(&b, &idx.w[0]);
        }
        if let Some(g) = self.packed_load(base, i)? {
            return Ok(g);
        }
        let v = self.expr(base)?;
        let idx = self.gexpr(i)?;
        let Type::Seq(elem) = &v.ty else {
            return Err(not_spmd(format!("indexing a {} per lane", v.ty)));
        };
        if let Type::Seq(_) = &**elem {
            return self.grow(&v, &idx.w[0]);
        }
        let proven = match (base, i) {
            (Expr::Var(s), Expr::Var(j)) => self.safe.iter().any(|(a, b)| a == s && b == j),
            (Expr::Var(s), _) => self.safe_affine.iter().any(|(a, x)| a == s && x == i),
            _ => false,
        };
        let elem = (**elem).clone();
        let len = v.w[0];
        if let Some(row) = self.row_input(base) {
            if !proven {
                self.check_lanes_below(&idx.w[0], len, FailureKind::Index)?;
            }
            return self.gang_rows_in_place(&elem, &v.w[1..], &idx.w[0], len, &row, proven);
        }
        let masked = self.gang.as_ref().is_some_and(|g| g.mask.is_some());
        let inside = match (&idx.w[0], masked, proven) {
            (Part::Seq(first, _), true, false) => Some(self.range_inside(*first, len)),
            (Part::Strided(first, stride), true, false) => {
                Some(self.strided_inside(*first, *stride, len))
            }
            _ => None,
        };
        if let Some(inside) = inside {
            // Under a mask (a stencil's `if` at the borders): where the whole gang's range
            // is inside the sequence, loads with no check (lanes not running read
            // elements that are there); elsewhere each running lane checked and gathered.
            let cols = v.w[1..].to_vec();
            let seq = idx.w[0].clone();
            return self.either_g(
                inside,
                |f| {
                    let outer = f.gang.as_mut().and_then(|g| g.mask.take());
                    let g = f.load_lanes(&elem, &cols, &seq, None, false);
                    if let Some(gang) = f.gang.as_mut() {
                        gang.mask = outer;
                    }
                    g
                },
                |f| {
                    f.check_lanes_below(&seq, len, FailureKind::Index)?;
                    f.load_lanes(&elem, &cols, &seq, None, false)
                },
            );
        }
        if let (Part::Clamp(c), false, false) = (&idx.w[0], masked, proven) {
            // A clamped index (a stencil's clamped border): one test whether the clamp
            // binds a lane, then consecutive lanes checked at once and loaded as vectors,
            // else each lane's index checked and gathered (the check and the load share
            // the test and the lanes' indices).
            let unbound = self.clamp_unbound(c);
            let (cols, clamped) = (v.w[1..].to_vec(), idx.w[0].clone());
            let first = self.b.ins().iadd(c.base, c.off);
            return self.either_g(
                unbound,
                |f| {
                    let seq = Part::Seq(first, false);
                    f.check_lanes_below(&seq, len, FailureKind::Index)?;
                    f.load_lanes(&elem, &cols, &seq, Some(len), false)
                },
                |f| {
                    let lanes = Part::Var(f.vectors(&clamped, ScalarType::Usize));
                    f.check_lanes_below(&lanes, len, FailureKind::Index)?;
                    f.load_lanes(&elem, &cols, &lanes, Some(len), false)
                },
            );
        }
        if !proven {
            self.check_lanes_below(&idx.w[0], len, FailureKind::Index)?;
        }
        self.load_lanes(&elem, &v.w[1..], &idx.w[0], Some(len), proven)
    }

    /// `fast` where `cond` holds, else `slow`: two ways to compute one gang value (every
    /// word as vectors, of the same types), joined.
    pub(super) fn either_g(
        &mut self,
        cond: Value,
        fast: impl FnOnce(&mut Self) -> R<G>,
        slow: impl FnOnce(&mut Self) -> R<G>,
    ) -> R<G> {
        let (fast_block, slow_block, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().brif(cond, fast_block, &[], slow_block, &[]);
        self.b.switch_to_block(fast_block);
        let f = fast(self)?;
        let f = self.materialize(&f)?;
        let words = |g: &G| -> Vec<Value> {
            g.w.iter()
                .flat_map(|p| match p {
                    Part::Var(vs) => vs.clone(),
                    _ => unreachable!("materialized"),
                })
                .collect()
        };
        let fv = words(&f);
        for &v in &fv {
            let t = self.b.func.dfg.value_type(v);
            self.b.append_block_param(join, t);
        }
        let args: Vec<cranelift_codegen::ir::BlockArg> = fv.iter().map(|&v| v.into()).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(slow_block);
        let sl = slow(self)?;
        let sl = self.materialize(&sl)?;
        let args: Vec<cranelift_codegen::ir::BlockArg> =
            words(&sl).iter().map(|&v| v.into()).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(join);
        let params = self.b.block_params(join).to_vec();
        let mut at = 0;
        let w =
            f.w.iter()
                .map(|p| {
                    let n = match p {
                        Part::Var(vs) => vs.len(),
                        _ => unreachable!("materialized"),
                    };
                    at += n;
                    Part::Var(params[at - n..at].to_vec())
                })
                .collect();
        Ok(G { ty: f.ty, w })
    }

    /// The largest lane of `e` (an index, unsigned): what a loop versioned on loads at
    /// an offset per lane checks.
    pub(in crate::cpu::codegen) fn largest_lane(&mut self, e: &Expr) -> R<Value> {
        let g = self.gexpr(e)?;
        let s = Self::g_scalar(&g)?;
        Ok(match &g.w[0] {
            Part::Uni(x) => *x,
            Part::Seq(base, _) => {
                // A wrapped last lane would look small: then `base` itself (huge) is what
                // fails the check.
                let lanes = self.lanes() as i64;
                let last = self.b.ins().iadd_imm_s(*base, lanes - 1);
                self.b.ins().umax(*base, last)
            }
            p => {
                let mut m = self.lane_of(p, s, 0);
                for k in 1..self.lanes() {
                    let x = self.lane_of(p, s, k);
                    m = self.b.ins().umax(m, x);
                }
                m
            }
        })
    }

    /// Whether every lane of `e` (an index) is below the uniform `dim` (an `I8`): what a
    /// loop versioned on a tensor access at coordinates per lane checks.
    pub(in crate::cpu::codegen) fn lanes_below(&mut self, e: &Expr, dim: Value) -> R<Value> {
        let g = self.gexpr(e)?;
        let s = Self::g_scalar(&g)?;
        let inside = self.gcompare(IntCC::SignedLessThan, s, &g.w[0], &Part::Uni(dim));
        Ok(self.all_lanes_set(&inside))
    }

    /// `rows[row][i]` with `rows` a sequence of sequences the same for every lane: the
    /// element at `row * width + i` of its flat columns, both indices checked.
    fn gindex_rows(&mut self, rows: &Expr, row: &Expr, i: &Expr) -> R<G> {
        let v = self.expr(rows)?;
        let Type::Seq(inner) = &v.ty else {
            return Err(not_spmd(format!("indexing a {} per lane", v.ty)));
        };
        let Type::Seq(elem) = &**inner else {
            return Err(not_spmd(format!("indexing a {} per lane", inner)));
        };
        let elem = (**elem).clone();
        let (len, width) = (v.w[0], v.w[1]);
        let r = self.gexpr(row)?;
        self.check_lanes_below(&r.w[0], len, FailureKind::Index)?;
        let c = self.gexpr(i)?;
        self.check_lanes_below(&c.w[0], width, FailureKind::Index)?;
        // Row `row` starts at `row * width` of the flat columns.
        let at = self.flat_index(r.w[0].clone(), width, &c.w[0], ScalarType::Usize);
        let flat_len = self.b.ins().imul(len, width);
        self.load_lanes(&elem, &v.w[2..], &at, Some(flat_len), false)
    }

    /// The elements at lanes `i` of columns `cols` (of element type `elem`, `len` long
    /// when known), in bounds: vector loads where `i` is the gang's index, else one load
    /// per lane (lanes not running load from a scratch slot). `proven`: in bounds
    /// wherever the load is, so it may move (out of a loop).
    pub(super) fn load_lanes(
        &mut self,
        elem: &Type,
        cols: &[Value],
        i: &Part,
        len: Option<Value>,
        proven: bool,
    ) -> R<G> {
        let ss = Self::number_words(elem)?;
        if ss.len() != cols.len() {
            return Err(not_spmd(format!("elements of type {elem} per lane")));
        }
        let mut w = Vec::new();
        for (&col, s) in cols.iter().zip(ss) {
            w.push(self.load_column(col, s, i, len, proven));
        }
        Ok(G {
            ty: elem.clone(),
            w,
        })
    }

    /// The lanes `i` of one column of numbers `s` (`len` long when known); `movable` when
    /// they are in bounds wherever the load is (sequences do not change during a run).
    pub(super) fn load_column(
        &mut self,
        col: Value,
        s: ScalarType,
        i: &Part,
        len: Option<Value>,
        movable: bool,
    ) -> Part {
        let flags = MemFlagsData::trusted().with_readonly();
        let flags = if movable {
            flags.with_can_move()
        } else {
            flags
        };
        let masked = self.gang.as_ref().is_some_and(|g| g.mask.is_some());
        match i {
            Part::Uni(x) => {
                let off = self.scaled(*x, s);
                let addr = self.b.ins().iadd(col, off);
                Part::Uni(self.b.ins().load(clif(s), flags, addr, 0))
            }
            // Consecutive lanes all running, or proven in bounds for every lane (running
            // or not): vector loads.
            Part::Seq(base, _) if s != ScalarType::Bool && (!masked || movable) => {
                self.consecutive_loads(col, s, flags, *base)
            }
            // Under a mask, lanes not running may be past the end: vector loads when the
            // whole gang's range is inside the column (a stencil's interior), else gathers.
            Part::Seq(base, aligned) if s != ScalarType::Bool && len.is_some() => {
                let inside = self.range_inside(*base, len.expect("checked"));
                let base = *base;
                let unmasked = Part::Seq(base, *aligned);
                self.either(
                    inside,
                    |f| {
                        let outer = f.gang.as_mut().and_then(|g| g.mask.take());
                        let v = f.load_column(col, s, &unmasked, None, movable);
                        if let Some(g) = f.gang.as_mut() {
                            g.mask = outer;
                        }
                        v
                    },
                    |f| f.gather_at(col, s, flags, &Part::Seq(base, false)),
                )
            }
            // Descending lanes, all running or proven: the vector loads of the lanes in
            // ascending order, reversed.
            Part::Rev(top) if s != ScalarType::Bool && (!masked || movable) => {
                let width = self.lanes() as i64;
                let first = self.b.ins().iadd_imm_s(*top, 1 - width);
                let outer = self.gang.as_mut().and_then(|g| g.mask.take());
                let up = self.load_column(col, s, &Part::Seq(first, false), None, movable);
                if let Some(g) = self.gang.as_mut() {
                    g.mask = outer;
                }
                let Part::Var(up) = up else {
                    unreachable!("loads give vectors")
                };
                // Each vector's lanes in reverse, as 32-bit lanes (a 64-bit lane's two
                // halves keep their order).
                let n = self.group() as u8;
                let pick: Vec<u8> = match self.lane_vector(s).1 {
                    1 => (0..n).rev().collect(),
                    _ => (0..n / 2).rev().flat_map(|e| [2 * e, 2 * e + 1]).collect(),
                };
                Part::Var(
                    up.iter()
                        .rev()
                        .map(|&v| self.shuffle32(v, v, &pick))
                        .collect(),
                )
            }
            // A strided walk, all running or proven: one load per lane, each address the
            // last plus the stride.
            Part::Strided(first, stride) if s != ScalarType::Bool && (!masked || movable) => {
                let (first, stride) = (*first, *stride);
                let start = self.scaled(first, s);
                let step = self.scaled(stride, s);
                let outer = self.gang.as_mut().and_then(|g| g.mask.take());
                let mut at = self.b.ins().iadd(col, start);
                let loaded = self.gather(s, flags, |f, k| {
                    if k > 0 {
                        at = f.b.ins().iadd(at, step);
                    }
                    at
                });
                if let Some(g) = self.gang.as_mut() {
                    g.mask = outer;
                }
                loaded
            }
            // A clamped index: consecutive where the clamp binds no lane.
            Part::Clamp(c) => {
                let unbound = self.clamp_unbound(c);
                let first = self.b.ins().iadd(c.base, c.off);
                self.either(
                    unbound,
                    |f| f.load_column(col, s, &Part::Seq(first, false), len, movable),
                    |f| {
                        let lanes = Part::Var(f.vectors(i, ScalarType::Usize));
                        f.load_column(col, s, &lanes, len, movable)
                    },
                )
            }
            _ => self.gather_at(col, s, flags, i),
        }
    }

    /// The lanes `i` of one column, one load per lane.
    fn gather_at(&mut self, col: Value, s: ScalarType, flags: MemFlagsData, i: &Part) -> Part {
        self.gather(s, flags, |f, k| {
            let x = f.lane_of(i, ScalarType::Usize, k);
            let off = f.scaled(x, s);
            f.b.ins().iadd(col, off)
        })
    }

    /// `fast` where `cond` holds, else `slow`: two ways to compute one word (vectors of
    /// the same types), joined.
    pub(super) fn either(
        &mut self,
        cond: Value,
        fast: impl FnOnce(&mut Self) -> Part,
        slow: impl FnOnce(&mut Self) -> Part,
    ) -> Part {
        let (fast_block, slow_block, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().brif(cond, fast_block, &[], slow_block, &[]);
        self.b.switch_to_block(fast_block);
        let Part::Var(f) = fast(self) else {
            unreachable!("either's ways give vectors")
        };
        for &v in &f {
            let t = self.b.func.dfg.value_type(v);
            self.b.append_block_param(join, t);
        }
        let args: Vec<cranelift_codegen::ir::BlockArg> = f.iter().map(|&v| v.into()).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(slow_block);
        let Part::Var(sl) = slow(self) else {
            unreachable!("either's ways give vectors")
        };
        let args: Vec<cranelift_codegen::ir::BlockArg> = sl.iter().map(|&v| v.into()).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(join);
        Part::Var(self.b.block_params(join).to_vec())
    }

    /// One element of numbers `s` per lane, lane `k`'s at `address(k)`; lanes not running
    /// load from the scratch slot.
    pub(super) fn gather(
        &mut self,
        s: ScalarType,
        flags: MemFlagsData,
        mut address: impl FnMut(&mut Self, usize) -> Value,
    ) -> Part {
        let mask = self.gang.as_ref().and_then(|g| g.mask.clone());
        let mut lanes = Vec::with_capacity(self.lanes());
        for k in 0..self.lanes() {
            let mut addr = address(self, k);
            if let Some(m) = &mask {
                addr = self.lane_address(m, k, addr);
            }
            let v = self.b.ins().load(clif(s), flags, addr, 0);
            lanes.push(if s == ScalarType::Bool {
                self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0)
            } else {
                v
            });
        }
        self.part_of_lanes(s, &lanes)
    }

    /// Stores lane `k` of word `v` (numbers `s`) at `address(k)`, in the running lanes.
    fn scatter(
        &mut self,
        s: ScalarType,
        v: &Part,
        mut address: impl FnMut(&mut Self, usize) -> Value,
    ) {
        let mask = self.gang.as_ref().and_then(|g| g.mask.clone());
        for k in 0..self.lanes() {
            let mut addr = address(self, k);
            if let Some(m) = &mask {
                addr = self.lane_address(m, k, addr);
            }
            let lane = self.lane_of(v, s, k);
            self.store(lane, addr, 0);
        }
    }

    /// `addr` if lane `k` of mask `m` runs, else a scratch slot's address.
    pub(super) fn lane_address(&mut self, m: &Mask, k: usize, addr: Value) -> Value {
        let dummy = self.dummy_address();
        let on = self.mask_lane(m, k);
        self.b.ins().select(on, addr, dummy)
    }

    /// The address of the gang's 16-byte scratch slot.
    fn dummy_address(&mut self) -> Value {
        match self.gang.as_ref().and_then(|g| g.dummy) {
            Some(d) => d,
            None => {
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    16,
                    4,
                ));
                self.b.ins().stack_addr(ct::I64, slot, 0)
            }
        }
    }

    /// The vectors of a gang's consecutive elements of column `col` from index `base`,
    /// addressed from the index with a constant shift in the offset: a stencil's `a[p -
    /// 1]`, `a[p]` and `a[p + 1]` share one base, so that a vector two of them need
    /// (`a[p + 1]`'s first is `a[p - 1]`'s second) is loaded once (17 loads per 16-lane
    /// `f64` gang of a 3-point stencil instead of 24).
    pub(super) fn consecutive_loads(
        &mut self,
        col: Value,
        s: ScalarType,
        flags: MemFlagsData,
        base: Value,
    ) -> Part {
        let (t, n) = self.lane_vectors(s);
        let (addr, shift) = super::super::memory::element_address(&mut self.b, col, base, s);
        let group_bytes = (self.group() as u32 * s.bytes()) as i32;
        let vector_bytes = t.bytes() as i32;
        Part::Var(
            (0..n)
                .map(|k| {
                    if s.is_small_int() {
                        let at = shift + group_bytes * k as i32;
                        self.load_small_group(s, flags, addr, at)
                    } else {
                        self.b
                            .ins()
                            .load(t, flags, addr, shift + vector_bytes * k as i32)
                    }
                })
                .collect(),
        )
    }

    /// A tensor method with arguments per lane: `get` gathers, `set` stores in the running
    /// lanes.
    pub(super) fn gtensor(&mut self, recv: &Expr, t: &G, method: &str, args: &[Expr]) -> R<G> {
        let Type::Tensor(elem) = &t.ty else {
            unreachable!("a tensor")
        };
        let Type::Scalar(s) = **elem else {
            return Err(unsupported("tensors of compound elements"));
        };
        if !matches!(method, "get" | "set") {
            return Err(not_spmd(format!("`.{method}()` of a tensor per lane")));
        }
        let tw: Vec<Value> =
            t.w.iter()
                .map(|p| match p {
                    Part::Uni(x) => Ok(*x),
                    _ => Err(not_spmd("a tensor that differs between lanes")),
                })
                .collect::<R<_>>()?;
        let Some(Expr::Array(coords)) = args.first() else {
            return Err(not_spmd("a tensor index that is not an array literal"));
        };
        if coords.len() > crate::backend::abi::MAX_RANK {
            return Err(not_spmd(
                "a tensor index of more coordinates than a tensor's rank",
            ));
        }
        let proven = match recv {
            Expr::Var(name) => self
                .safe_tensors
                .iter()
                .any(|(u, c)| u == name && c == coords),
            _ => false,
        };
        let usize_ = ScalarType::Usize;
        if !proven {
            let wrong_rank = self
                .b
                .ins()
                .icmp_imm_s(IntCC::NotEqual, tw[1], coords.len() as i64);
            let c = self.iconst(coords.len() as i64);
            self.fail_if(wrong_rank, FailureKind::Rank, c, tw[1]);
        }
        let mut flat = Part::Uni(self.iconst(0));
        // Lane `l`'s flat index `first + l * stride`, while the coordinates after the
        // gang's index are one value (`t.get([s, i])` in a loop over `i`): scalar address
        // arithmetic instead of 64-bit vector multiplications.
        let mut strided: Option<(Value, Value)> = None;
        for (k, c) in coords.iter().enumerate() {
            let ci = self.gexpr(c)?;
            let dim = tw[2 + k];
            if !proven {
                self.check_lanes_below(&ci.w[0], dim, FailureKind::Index)?;
            }
            strided = match (strided, &flat, &ci.w[0]) {
                (Some((first, stride)), _, Part::Uni(x)) => {
                    let m = self.b.ins().imul(first, dim);
                    let stride = self.b.ins().imul(stride, dim);
                    Some((self.b.ins().iadd(m, *x), stride))
                }
                (None, Part::Seq(base, _), Part::Uni(x)) => {
                    let m = self.b.ins().imul(*base, dim);
                    Some((self.b.ins().iadd(m, *x), dim))
                }
                (Some((first, stride)), _, other) => {
                    let lanes: Vec<Value> = (0..self.lanes() as i64)
                        .map(|l| {
                            let at = self.b.ins().imul_imm_s(stride, l);
                            self.b.ins().iadd(first, at)
                        })
                        .collect();
                    let lanes = self.part_of_lanes(usize_, &lanes);
                    flat = self.flat_index(lanes, dim, other, usize_);
                    None
                }
                (None, _, other) => {
                    flat = self.flat_index(flat, dim, other, usize_);
                    None
                }
            };
        }
        let data = tw[0];
        let value = match method {
            "set" => Some(self.gexpr(&args[1])?),
            _ => None,
        };
        if let Some((first, stride)) = strided {
            return self.strided_access(data, s, first, stride, value.as_ref());
        }
        if let Some(v) = value {
            self.store_lanes(data, s, &flat, &v.w[0]);
            return Ok(G::unit());
        }
        let v = self.load_column(data, s, &flat, None, false);
        Ok(G {
            ty: Type::Scalar(s),
            w: vec![v],
        })
    }

    /// Loads (or, given `value`, stores in the running lanes) the elements `first + l *
    /// stride` of column `data`, one lane `l` at a time.
    fn strided_access(
        &mut self,
        data: Value,
        s: ScalarType,
        first: Value,
        stride: Value,
        value: Option<&G>,
    ) -> R<G> {
        let first = self.scaled(first, s);
        let step = self.scaled(stride, s);
        let base = self.b.ins().iadd(data, first);
        let address = |f: &mut Self, k: usize| {
            let at = f.b.ins().imul_imm_s(step, k as i64);
            f.b.ins().iadd(base, at)
        };
        Ok(match value {
            Some(v) => {
                self.scatter(s, &v.w[0], address);
                G::unit()
            }
            None => G {
                ty: Type::Scalar(s),
                w: vec![self.gather(s, MemFlagsData::trusted(), address)],
            },
        })
    }

    /// `flat * dim + c` per lane (the gang's index kept consecutive where it can).
    fn flat_index(&mut self, flat: Part, dim: Value, c: &Part, s: ScalarType) -> Part {
        match (&flat, c) {
            (Part::Uni(f), Part::Uni(x)) => {
                let m = self.b.ins().imul(*f, dim);
                Part::Uni(self.b.ins().iadd(m, *x))
            }
            (Part::Uni(f), Part::Seq(x, aligned)) => {
                let m = self.b.ins().imul(*f, dim);
                let zero = self.iconst_value(*f) == Some(0);
                Part::Seq(self.b.ins().iadd(m, *x), *aligned && zero)
            }
            _ => {
                let fv = self.vectors(&flat, s);
                let cv = self.vectors(c, s);
                let wt = self.half_vector(ct::I64);
                let d = self.b.ins().splat(wt, dim);
                Part::Var(
                    fv.iter()
                        .zip(&cv)
                        .map(|(&f, &x)| {
                            let m = self.b.ins().imul(f, d);
                            self.b.ins().iadd(m, x)
                        })
                        .collect(),
                )
            }
        }
    }

    /// The gang's element `g` (scalars `ss`) stored from index `base` of an output in
    /// rows of `row` bytes (see `Gen::out_row_bytes`; `cols` the address of each scalar
    /// in the first row): each vector of lanes of the scalars interleaved into whole
    /// vectors of rows, or lane by lane in the running lanes under a mask.
    fn store_gang_rows(&mut self, ss: &[ScalarType], cols: &[Value], base: Value, g: &G, row: i64) {
        let at = Part::Seq(base, true);
        if self.gang.as_ref().is_some_and(|g| g.mask.is_some()) {
            for ((&col, &s), p) in cols.iter().zip(ss).zip(&g.w) {
                self.scatter(s, p, |f, k| {
                    let x = f.lane_of(&at, ScalarType::Usize, k);
                    let off = f.b.ins().imul_imm_s(x, row);
                    f.b.ins().iadd(col, off)
                });
            }
            return;
        }
        let columns: Vec<Vec<Value>> = ss
            .iter()
            .zip(&g.w)
            .map(|(&s, p)| self.vectors(p, s))
            .collect();
        let off = self.b.ins().imul_imm_s(base, row);
        let addr = self.b.ins().iadd(cols[0], off);
        let lane_bytes = size_of(ss[0]) as usize;
        for q in 0..columns[0].len() {
            let parts: Vec<Value> = columns.iter().map(|c| c[q]).collect();
            let vector_bytes = self.b.func.dfg.value_type(parts[0]).bytes() as usize;
            for t in 0..parts.len() {
                let v = self.interleaved(&parts, t, vector_bytes / lane_bytes, lane_bytes);
                let at = (q * parts.len() + t) * vector_bytes;
                self.b
                    .ins()
                    .store(MemFlagsData::trusted(), v, addr, at as i32);
            }
        }
    }

    /// Vector `t` of the rows that the vectors `parts` make (one per scalar of a row, `m`
    /// lanes of `lane_bytes` each, in order): its lane `p` is scalar `(t * m + p) % k` of
    /// row `(t * m + p) / k`, `k` scalars to a row. Built by shuffles of two vectors, one
    /// scalar's lanes at a time.
    fn interleaved(&mut self, parts: &[Value], t: usize, m: usize, lane_bytes: usize) -> Value {
        let k = parts.len();
        // The scalar and the row of each lane.
        let source: Vec<(usize, u8)> = (0..m)
            .map(|p| ((t * m + p) % k, ((t * m + p) / k % m) as u8))
            .collect();
        let used: Vec<usize> = (0..k)
            .filter(|&j| source.iter().any(|&(s, _)| s == j))
            .collect();
        let (first, rest) = used.split_first().expect("a vector has lanes");
        let second = rest.first().copied().unwrap_or(*first);
        let m8 = m as u8;
        let pick: Vec<u8> = source
            .iter()
            .map(|&(s, l)| {
                if s == second && s != *first {
                    m8 + l
                } else {
                    l
                }
            })
            .collect();
        let mut acc = self.shuffle_lanes(parts[*first], parts[second], &pick, lane_bytes as u8);
        for &j in rest.iter().skip(1) {
            let pick: Vec<u8> = source
                .iter()
                .enumerate()
                .map(|(p, &(s, l))| if s == j { m8 + l } else { p as u8 })
                .collect();
            acc = self.shuffle_lanes(acc, parts[j], &pick, lane_bytes as u8);
        }
        acc
    }

    /// Stores word `v` (numbers `s`) at lanes `i` of column `col`, in the running lanes.
    pub(super) fn store_lanes(&mut self, col: Value, s: ScalarType, i: &Part, v: &Part) {
        let masked = self.gang.as_ref().is_some_and(|g| g.mask.is_some());
        if let (Part::Seq(base, _), false, false) = (i, masked, s == ScalarType::Bool) {
            let vs = self.vectors(v, s);
            let off = self.scaled(*base, s);
            let addr = self.b.ins().iadd(col, off);
            let group_bytes = (self.group() as u32 * s.bytes()) as i32;
            for (k, x) in vs.iter().enumerate() {
                if s.is_small_int() {
                    self.store_small_group(s, *x, addr, group_bytes * k as i32);
                } else {
                    let vector_bytes = self.b.func.dfg.value_type(*x).bytes() as i32;
                    self.b
                        .ins()
                        .store(MemFlagsData::trusted(), *x, addr, vector_bytes * k as i32);
                }
            }
            return;
        }
        self.scatter(s, v, |f, k| {
            let x = f.lane_of(i, ScalarType::Usize, k);
            let off = f.scaled(x, s);
            f.b.ins().iadd(col, off)
        });
    }

    /// The gang's element `g` (of type `elem`) stored at its index `base` of the output
    /// columns.
    pub(super) fn store_gang(&mut self, elem: &Type, cols: &[Value], base: Value, g: &G) -> R<()> {
        let ss = Self::number_words(elem)?;
        if ss.len() != cols.len() {
            return Err(not_spmd(format!("results of type {elem} per lane")));
        }
        if let Some(row) = self.g.out_row_bytes {
            self.store_gang_rows(&ss, cols, base, g, row);
            return Ok(());
        }
        let at = Part::Seq(base, true);
        for ((&col, s), p) in cols.iter().zip(ss).zip(&g.w) {
            self.store_lanes(col, s, &at, p);
        }
        Ok(())
    }
}
