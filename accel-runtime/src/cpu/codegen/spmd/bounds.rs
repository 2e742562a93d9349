//! Bounds per lane: whether a gang's indices (consecutive, strided) all lie inside a
//! sequence, and the checks that fail naming the first running lane out of bounds
//! (consecutive and descending lanes and clamped indices tested by their ends, others
//! lane by lane).

use super::super::cx::*;
use super::{Mask, Part};
use crate::backend::failure::FailureKind;
use accel_ir::ScalarType;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};

impl FnCx<'_, '_> {
    /// Whether every lane of `first + lane * stride` is below `len` without wrapping (an
    /// `I8`): the steps to the last lane do not overflow, and the last lane is below.
    pub(super) fn strided_inside(&mut self, first: Value, stride: Value, len: Value) -> Value {
        let steps = self.lanes() as i64 - 1;
        let small = self.b.ins().icmp_imm_u(
            IntCC::UnsignedLessThanOrEqual,
            stride,
            (u64::MAX / steps as u64) as i64,
        );
        let span = self.b.ins().imul_imm_s(stride, steps);
        let last = self.b.ins().iadd(first, span);
        let no_wrap = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, last, first);
        let below = self.b.ins().icmp(IntCC::UnsignedLessThan, last, len);
        let ok = self.b.ins().band(small, no_wrap);
        self.b.ins().band(ok, below)
    }

    /// Whether lanes `first..first + width` are all below `len` (an `I8`).
    pub(super) fn range_inside(&mut self, first: Value, len: Value) -> Value {
        let width = self.lanes() as i64;
        let room = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, width);
        let last_start = self.b.ins().iadd_imm_s(len, -width);
        let fits = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, first, last_start);
        self.b.ins().band(room, fits)
    }

    /// Fails (naming the first failing running lane) unless every running lane's index
    /// `i` is below the uniform `len`.
    pub(super) fn check_lanes_below(&mut self, i: &Part, len: Value, kind: FailureKind) -> R<()> {
        let s = ScalarType::Usize;
        if let Part::Uni(x) = i {
            let oob = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, *x, len);
            self.fail_if(oob, kind, *x, len);
            return Ok(());
        }
        let masked = self.gang.as_ref().is_some_and(|g| g.mask.is_some());
        if let (Part::Seq(base, _), false) = (i, masked) {
            // Consecutive lanes: all below `len` when `len - base` is at least the width
            // (and `base < len`); the first failing lane's index is `max(base, len)`.
            let (base, len) = (*base, len);
            let past = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, base, len);
            let room = self.b.ins().isub(len, base);
            let lanes = self.lanes() as i64;
            let short = self
                .b
                .ins()
                .icmp_imm_u(IntCC::UnsignedLessThan, room, lanes);
            let bad = self.b.ins().bor(past, short);
            let first = self.b.ins().umax(base, len);
            self.fail_if(bad, kind, first, len);
            return Ok(());
        }
        if let (Part::Strided(first, stride), false) = (i, masked) {
            // A walk that stays below `len` from its first lane to its last; otherwise
            // each lane is checked.
            let ok = self.strided_inside(*first, *stride, len);
            return self.check_each_lane_unless(ok, i, len, kind);
        }
        if let (Part::Rev(top), false) = (i, masked) {
            // Descending lanes: all below `len` when the first is, and the last does not
            // wrap (`top >= width - 1`); otherwise each lane is checked.
            let lanes = self.lanes() as i64;
            let below = self.b.ins().icmp(IntCC::UnsignedLessThan, *top, len);
            let no_wrap =
                self.b
                    .ins()
                    .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, *top, lanes - 1);
            let ok = self.b.ins().band(below, no_wrap);
            return self.check_each_lane_unless(ok, i, len, kind);
        }
        if let (Part::Clamp(c), false) = (i, masked) {
            // Consecutive where the clamp binds no lane: the test of consecutive lanes.
            let unbound = self.clamp_unbound(c);
            let (fast, slow, join) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            self.b.ins().brif(unbound, fast, &[], slow, &[]);
            self.b.switch_to_block(fast);
            let first = self.b.ins().iadd(c.base, c.off);
            self.check_lanes_below(&Part::Seq(first, false), len, kind)?;
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(slow);
            let lanes = Part::Var(self.vectors(i, s));
            self.check_lanes_below(&lanes, len, kind)?;
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(join);
            return Ok(());
        }
        let lenp = Part::Uni(len);
        let oob = self.gcompare(IntCC::SignedGreaterThanOrEqual, s, i, &lenp);
        self.fail_lanes(oob, kind, (i, s), (&lenp, s));
        Ok(())
    }

    /// Where `ok` (an `I8`) does not hold, fails (as [`Self::check_lanes_below`]) unless
    /// each of `i`'s lanes is below `len`, testing them one by one.
    fn check_each_lane_unless(
        &mut self,
        ok: Value,
        i: &Part,
        len: Value,
        kind: FailureKind,
    ) -> R<()> {
        let (slow, join) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(ok, join, &[], slow, &[]);
        self.b.switch_to_block(slow);
        let each = Part::Var(self.vectors(i, ScalarType::Usize));
        self.check_lanes_below(&each, len, kind)?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(())
    }

    /// Reports a failure when a running lane of `bad` is set, with the first such lane's
    /// values of `a` and `b`.
    pub(super) fn fail_lanes(
        &mut self,
        bad: Mask,
        kind: FailureKind,
        a: (&Part, ScalarType),
        b: (&Part, ScalarType),
    ) {
        let bad = self.and_active(bad);
        let any = self.any_lane(&bad);
        // One report block per kind and shape of values, shared by every check that has
        // them (as scalar checks share theirs, see `FnCx::report`); the values travel
        // as its parameters.
        let shape = |f: &Self, (p, s): (&Part, ScalarType)| -> String {
            let kind = match p {
                Part::Uni(_) => "u".to_string(),
                Part::Seq(_, aligned) => format!("s{aligned}"),
                Part::Rev(_) => "r".to_string(),
                Part::Strided(..) => "t".to_string(),
                Part::Clamp(c) => format!("c{}", c.signed),
                Part::Var(vs) => format!("v{}", vs.len()),
            };
            let types: Vec<String> = part_values(p)
                .iter()
                .map(|&v| f.b.func.dfg.value_type(v).to_string())
                .collect();
            format!("{kind}{s:?}{types:?}")
        };
        let key = format!("{}|{}|{}", kind.code(), shape(self, a), shape(self, b));
        let mut args = bad.clone();
        args.extend(part_values(a.0));
        args.extend(part_values(b.0));
        let ok = self.b.create_block();
        let existing = self.gang_reports.get(&key).copied();
        let report = existing.unwrap_or_else(|| {
            let report = self.b.create_block();
            self.b.set_cold_block(report);
            for &v in &args {
                let t = self.b.func.dfg.value_type(v);
                self.b.append_block_param(report, t);
            }
            self.gang_reports.insert(key, report);
            report
        });
        let block_args: Vec<cranelift_codegen::ir::BlockArg> =
            args.iter().map(|&v| v.into()).collect();
        self.b.ins().brif(any, report, &block_args, ok, &[]);
        if existing.is_none() {
            self.b.switch_to_block(report);
            let params = self.b.block_params(report).to_vec();
            let groups = bad.len();
            let bad: Mask = params[..groups].to_vec();
            let na = part_values(a.0).len();
            let pa = with_values(a.0, &params[groups..groups + na]);
            let pb = with_values(b.0, &params[groups + na..]);
            let bits = self.mask_bits(&bad);
            let first = self.b.ins().ctz(bits);
            let lanes = self.lanes();
            let mut picked = Vec::new();
            for (p, s) in [(&pa, a.1), (&pb, b.1)] {
                let mut v = self.lane_of(p, s, lanes - 1);
                for k in (0..lanes - 1).rev() {
                    let here = self.b.ins().icmp_imm_s(IntCC::Equal, first, k as i64);
                    let x = self.lane_of(p, s, k);
                    v = self.b.ins().select(here, x, v);
                }
                picked.push(self.widen(v, s));
            }
            let kind = self.b.ins().iconst(ct::I32, i64::from(kind.code()));
            let ctx = self.ctx;
            self.helper("accel_fail", &[ctx, kind, picked[0], picked[1]]);
            let fail = self.fail;
            self.b.ins().jump(fail, &[]);
        }
        self.b.switch_to_block(ok);
    }
}

/// The SSA values a part is made of.
fn part_values(p: &Part) -> Vec<Value> {
    match p {
        Part::Uni(x) | Part::Seq(x, _) | Part::Rev(x) => vec![*x],
        Part::Var(vs) => vs.clone(),
        Part::Clamp(c) => vec![c.base, c.lo, c.hi, c.off],
        Part::Strided(base, stride) => vec![*base, *stride],
    }
}

/// A part of the same shape as `p` made of `values` (see [`part_values`]).
fn with_values(p: &Part, values: &[Value]) -> Part {
    match p {
        Part::Uni(_) => Part::Uni(values[0]),
        Part::Seq(_, aligned) => Part::Seq(values[0], *aligned),
        Part::Rev(_) => Part::Rev(values[0]),
        Part::Strided(..) => Part::Strided(values[0], values[1]),
        Part::Var(_) => Part::Var(values.to_vec()),
        Part::Clamp(c) => Part::Clamp(super::Clamp {
            base: values[0],
            lo: values[1],
            hi: values[2],
            off: values[3],
            signed: c.signed,
        }),
    }
}
