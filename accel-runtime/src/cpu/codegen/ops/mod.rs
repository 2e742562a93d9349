//! The parallel operations on the CPU, one module each, behind [`Operations`]: at the host
//! function's top level an operation launches a kernel over chunks of its index space on
//! all cores (the plumbing is [`super::kernel`]); nested inside an element it is a
//! sequential loop. Producers (`map`, `map2`, `create`) are delayed arrays: their
//! consumers compute an element where they need it ([`FnCx::input_element`]).

mod filter;
mod flatten;
mod map;
mod parallel_loop;
mod reduce;
mod reduce_by_index;
mod scan;
mod scatter;

use super::cx::*;
use crate::backend::failure::FailureKind;
use accel_ir::ops::{
    Create, Filter, Flatten, Map, Map2, Operations, ParallelLoop, Reduce, ReduceByIndex, Scan,
    Scatter,
};
use accel_ir::{Expr, Pat, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::Variable;
pub(super) use map::Producer;

impl Operations for FnCx<'_, '_> {
    type Out = R<V>;

    fn map(&mut self, op: Map<'_>) -> R<V> {
        self.producer(Producer::Map(op))
    }

    fn map2(&mut self, op: Map2<'_>) -> R<V> {
        self.producer(Producer::Map2(op))
    }

    fn create(&mut self, op: Create<'_>) -> R<V> {
        self.producer(Producer::Create(op))
    }

    fn reduce(&mut self, op: Reduce<'_>) -> R<V> {
        if self.host {
            self.launch_reduce(op)
        } else {
            self.nested_reduce(op)
        }
    }

    fn scan(&mut self, op: Scan<'_>) -> R<V> {
        if self.host {
            self.launch_scan(op)
        } else {
            self.nested_scan(op)
        }
    }

    fn flatten(&mut self, op: Flatten<'_>) -> R<V> {
        self.flattened(op)
    }

    fn parallel_loop(&mut self, op: ParallelLoop<'_>) -> R<V> {
        if self.host {
            self.launch_loop(op)
        } else {
            self.nested_loop(op)
        }
    }

    fn reduce_by_index(&mut self, op: ReduceByIndex<'_>) -> R<V> {
        if self.host {
            self.launch_reduce_by_index(op)
        } else {
            self.nested_reduce_by_index(op)
        }
    }

    fn filter(&mut self, op: Filter<'_>) -> R<V> {
        if self.host {
            self.launch_filter(op)
        } else {
            self.nested_filter(op)
        }
    }

    fn scatter(&mut self, op: Scatter<'_>) -> R<V> {
        if self.host {
            self.launch_scatter(op)
        } else {
            self.nested_scatter(op)
        }
    }
}

impl FnCx<'_, '_> {
    /// The number of values of a `reduce_by_index` or `scatter`: the length of `is`,
    /// failing with `kind` when `vs` has another.
    pub(super) fn value_count(&mut self, is: &Expr, vs: &Expr, kind: FailureKind) -> R<Value> {
        let (n, _) = self.input_shape(is)?;
        let (values, _) = self.input_shape(vs)?;
        let differ = self.b.ins().icmp(IntCC::NotEqual, n, values);
        self.fail_if(differ, kind, n, values);
        Ok(n)
    }

    /// Value `k` of `vs` given to `update` with its index `is[k]` when that is below `m`
    /// (a branch, which real data predicts). The value is computed either way, as the
    /// reference computes `vs` whole: its failures are reported.
    pub(super) fn at_index_below(
        &mut self,
        is: &Expr,
        vs: &Expr,
        m: Value,
        k: Value,
        update: impl FnOnce(&mut Self, Value, V) -> R<()>,
    ) -> R<()> {
        let i = self.input_element(is, k)?.w[0];
        let v = self.input_element(vs, k)?;
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, i, m);
        let yes = self.b.create_block();
        let skip = self.b.create_block();
        let after = self.b.create_block();
        // Skipping is rare: its block goes to the end of the function, so that the update
        // falls through from the test and into the next value with no taken branch.
        self.b.set_cold_block(skip);
        self.b.ins().brif(inside, yes, &[], skip, &[]);
        self.b.switch_to_block(yes);
        update(self, i, v)?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(skip);
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        Ok(())
    }

    /// The length and element type of a sequence input: a delayed array's, or a manifest
    /// one's (remembered for [`Self::input_element`]).
    pub(super) fn input_shape(&mut self, e: &Expr) -> R<(Value, Type)> {
        if let Some(p) = Producer::of(e) {
            return self.producer_shape(p);
        }
        if let Some((x, n)) = repeated(e) {
            let n = self.expr(n)?.w[0];
            return Ok((n, self.type_of(x)?));
        }
        let v = self.expr(e)?;
        match &v.ty {
            Type::Seq(elem) => {
                let elem = (**elem).clone();
                // Remember the manifest value for element access.
                self.manifest(e, v.clone());
                Ok((v.w[0], elem))
            }
            Type::Array(elem, n) => {
                let (elem, n) = ((**elem).clone(), *n as i64);
                self.manifest(e, v.clone());
                Ok((self.iconst(n), elem))
            }
            t => Err(format!("a sequence was expected, found {t}")),
        }
    }

    /// Element `i` of a sequence input, fusing a delayed producer.
    pub(super) fn input_element(&mut self, e: &Expr, i: Value) -> R<V> {
        if let Some(p) = Producer::of(e) {
            return self.element(p, i);
        }
        if let Some((x, _)) = repeated(e) {
            return self.expr(x);
        }
        let v = self.manifested(e)?;
        match &v.ty {
            Type::Seq(elem) => {
                let w = self.load_elem(elem, &v.w[1..], i)?;
                Ok(V {
                    ty: (**elem).clone(),
                    w,
                })
            }
            _ => self.index(&v, i),
        }
    }

    /// Values `lo..hi` given to `update` in order, [`UNROLL`] per loop iteration (one loop
    /// branch for all) with the memory of the sequences `inputs` read asked for ahead, then
    /// the rest one by one: for loops of random updates (histograms, scatters), which keep
    /// the core from reading far ahead while the hardware prefetchers stop at page ends.
    pub(super) fn each_value_prefetched(
        &mut self,
        lo: Value,
        hi: Value,
        inputs: &[&Expr],
        mut update: impl FnMut(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let len = self.b.ins().isub(hi, lo);
        let groups = self.b.ins().udiv_imm_u(len, UNROLL);
        self.each(groups, |f, g| {
            let first = f.b.ins().imul_imm_u(g, UNROLL);
            let first = f.b.ins().iadd(lo, first);
            f.prefetch_inputs(inputs, first)?;
            for k in 0..UNROLL {
                let i = f.b.ins().iadd_imm_s(first, k);
                update(f, i)?;
            }
            Ok(())
        })?;
        let done = self.b.ins().imul_imm_u(groups, UNROLL);
        let rest = self.b.ins().iadd(lo, done);
        self.counted_loop(rest, hi, ScalarType::Usize, update)
    }

    /// Asks for the memory `PREFETCH_BYTES` past element `i` of each named sequence that
    /// reading element `i` of `inputs` reads there ([`read_in_order`]): for loops whose
    /// reads the hardware prefetchers do not keep up with.
    pub(super) fn prefetch_inputs(&mut self, inputs: &[&Expr], i: Value) -> R<()> {
        for e in read_in_order(inputs) {
            // A name bound inside a `create`'s body has no value here.
            if matches!(e, Expr::Var(name) if !self.vars.contains_key(name)) {
                continue;
            }
            let v = self.manifested(e)?;
            if let Type::Seq(elem) = &v.ty {
                self.prefetch_elem(elem, &v.w[1..], i, UNROLL)?;
            }
        }
        Ok(())
    }

    /// Binds the value of a manifest input, computed once for [`Self::input_shape`].
    fn manifest(&mut self, e: &Expr, v: V) {
        let key = self.manifest_name(e);
        self.bind_var(&key, v);
    }

    /// The value of a manifest input: the one bound by [`Self::manifest`], else computed.
    fn manifested(&mut self, e: &Expr) -> R<V> {
        let key = self.manifest_name(e);
        if self.vars.contains_key(&key) {
            self.var(&key)
        } else {
            self.expr(e)
        }
    }

    /// The variable name of the manifest input `e`: numbered in the order inputs are
    /// first seen, never by address, so that the same program makes the same code in
    /// every process (see `llvm`'s disk cache).
    fn manifest_name(&mut self, e: &Expr) -> String {
        let seen = self.g.manifests.len();
        let k = *self
            .g
            .manifests
            .entry(e as *const Expr as usize)
            .or_insert(seen);
        format!("manifest#{k}")
    }

    /// One step of a fold: the accumulator in `accs` (of type `t`) combined by the
    /// operator `op` with element `i` of the input `xs`; returns the new value.
    pub(super) fn fold_step(
        &mut self,
        op: &Expr,
        xs: &Expr,
        t: &Type,
        accs: &[Variable],
        i: Value,
    ) -> R<V> {
        let x = self.input_element(xs, i)?;
        let a = self.use_vars(t, accs);
        let r = self.apply(op, vec![a, x])?;
        self.def_vars(accs, &r);
        Ok(r)
    }

    /// One iteration `i` of a `parallel_loop` body `f`.
    pub(in crate::cpu::codegen) fn iteration(&mut self, f: &Expr, i: Value) -> R<()> {
        let usize_ty = Type::Scalar(ScalarType::Usize);
        self.apply(
            f,
            vec![V {
                ty: usize_ty,
                w: vec![i],
            }],
        )
        .map(|_| ())
    }

    /// A counted loop over `0..n` (the nested form of every operation).
    pub(super) fn each(&mut self, n: Value, body: impl FnMut(&mut Self, Value) -> R<()>) -> R<()> {
        let zero = self.iconst(0);
        self.counted_loop(zero, n, ScalarType::Usize, body)
    }
}

/// Values per iteration of [`FnCx::each_value_prefetched`]'s loop.
const UNROLL: i64 = 8;

/// The named sequences that reading element `i` of each of `inputs` reads at `i` (the
/// inputs themselves, a `map`'s or `map2`'s, those a `create`'s body indexes by its
/// index), each once. A `vec![x; n]` reads no memory.
fn read_in_order<'e>(inputs: &[&'e Expr]) -> Vec<&'e Expr> {
    fn streams<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
        match Producer::of(e) {
            Some(Producer::Map(m)) => streams(m.xs, out),
            Some(Producer::Map2(m)) => {
                streams(m.xs, out);
                streams(m.ys, out)
            }
            Some(Producer::Create(c)) => {
                // A named sequence indexed by the element's index.
                let Expr::Lambda { params, body } = c.f else {
                    return;
                };
                let [(Pat::Bind { name, .. }, _)] = params.as_slice() else {
                    return;
                };
                body.walk(&mut |e| {
                    if let Expr::Index(seq, i) = e {
                        if matches!(**i, Expr::Var(ref v) if v == name) {
                            streams(seq, out)
                        }
                    }
                });
            }
            None => {
                if matches!(e, Expr::Var(_)) && !out.contains(&e) {
                    out.push(e)
                }
            }
        }
    }
    let mut named = Vec::new();
    for e in inputs {
        streams(e, &mut named);
    }
    named
}

/// `vec![x; n]` whose `x` costs nothing to compute again (a literal, a constant, a
/// variable, or a tuple or record of them), as `(x, n)`: an input whose elements are `x`,
/// read without making the sequence (a histogram's `vec![0; bins]`).
fn repeated(e: &Expr) -> Option<(&Expr, &Expr)> {
    fn free(x: &Expr) -> bool {
        match x {
            Expr::Lit(_) | Expr::Const(_) | Expr::Var(_) => true,
            Expr::Tuple(xs) => xs.iter().all(free),
            Expr::Record { fields, .. } => fields.iter().all(|(_, x)| free(x)),
            _ => false,
        }
    }
    match e {
        Expr::SeqRepeat(x, n) if free(x) => Some((x, n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{BinOp, ParOp};

    #[test]
    fn the_sequences_read_in_order_are_named_inputs_and_those_of_maps_once_each() {
        let (xs, ys, f) = (Expr::var("xs"), Expr::var("ys"), Expr::var("f"));
        let map = Expr::par(ParOp::Map, vec![f.clone(), xs.clone()]);
        let map2 = Expr::par(ParOp::Map2, vec![f.clone(), map.clone(), ys.clone()]);
        let create = Expr::par(ParOp::Create, vec![Expr::var("n"), f.clone()]);
        // `create(n, |i| zs[i] + xs[i / 2] + zs[i])`: zs is read at the element's index.
        let bin = |op, a: Expr, b: Expr| Expr::Binary(op, Box::new(a), Box::new(b));
        let at = |seq: &str, i: Expr| Expr::Index(Box::new(Expr::var(seq)), Box::new(i));
        let i = Expr::var("i");
        let halves = at("xs", bin(BinOp::Div, i.clone(), Expr::var("two")));
        let body = bin(
            BinOp::Add,
            bin(BinOp::Add, at("zs", i.clone()), halves),
            at("zs", i),
        );
        let param = Pat::Bind {
            name: "i".into(),
            mutable: false,
        };
        let lambda = Expr::Lambda {
            params: vec![(param, Type::Scalar(ScalarType::Usize))],
            body: Box::new(body),
        };
        let indexing = Expr::par(ParOp::Create, vec![Expr::var("n"), lambda]);
        let repeat = Expr::SeqRepeat(Box::new(Expr::var("zero")), Box::new(Expr::var("n")));
        let names = |inputs: &[&Expr]| -> Vec<String> {
            read_in_order(inputs)
                .iter()
                .map(|e| e.to_string())
                .collect()
        };
        assert_eq!(names(&[&xs, &map]), ["xs"]);
        assert_eq!(names(&[&map2]), ["xs", "ys"]);
        assert_eq!(names(&[&ys, &map2]), ["ys", "xs"]);
        assert!(names(&[&create, &repeat]).is_empty());
        assert_eq!(names(&[&indexing, &ys]), ["zs", "ys"]);
    }
}
