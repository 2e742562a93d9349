//! Sequences in memory: indexing (bounds checked; out of bounds reads nothing), views,
//! columns, and sequences made inside a kernel, in the thread's arena.

use super::kernel::*;
use crate::backend::abi::MAX_RANK;
use crate::backend::layout::{is_flat, Word};
use crate::cuda::c::*;
use accel_ir::{Expr, Type};

impl KernelGen<'_> {
    /// `b[i]` (`t.shape()[k]` reads one of the tensor's words).
    pub(super) fn index_expr(&mut self, b: &Expr, i: &Expr) -> R<V> {
        if let Expr::Method { recv, method, .. } = b {
            if method == "shape" && matches!(self.type_of(recv)?, Type::Tensor(_)) {
                let t = self.expr(recv)?;
                // `t.shape()[k]`: one of the tensor's words, no sequence made.
                let k = self.expr(i)?.w[0].clone();
                let rank = &t.w[1];
                self.line(&format!(
                    "if ({k} >= {rank}) accel_fail(err, {FAIL_INDEX}, {k}, {rank});"
                ));
                let mut d = "0ULL".to_string();
                for j in (0..MAX_RANK).rev() {
                    d = format!("({k} == {j} ? {} : {d})", t.w[2 + j]);
                }
                return Ok(usize_v(self.let_("ull", "dim", &d)));
            }
        }
        let v = self.expr(b)?;
        let i = self.expr(i)?;
        self.index(&v, &i.w[0])
    }

    /// `&xs[lo..hi]`: a view, bounds checked (an empty one when not).
    pub(super) fn slice(&mut self, seq: &Expr, lo: &Expr, hi: &Expr) -> R<V> {
        let v = self.expr(seq)?;
        let lo = self.expr(lo)?.w[0].clone();
        let hi = self.expr(hi)?.w[0].clone();
        let Type::Seq(elem) = &v.ty else {
            return Err(unsupported(format!("slicing {}", v.ty)));
        };
        let ok = self.let_(
            "bool",
            "slice_ok",
            &format!("({lo} <= {hi} && {hi} <= {})", v.w[0]),
        );
        self.line(&format!(
            "if (!{ok}) accel_fail(err, {FAIL_SLICE}, {lo}, {hi});"
        ));
        let len = self.let_("ull", "slice_len", &format!("{ok} ? {hi} - {lo} : 0"));
        let start = self.let_("ull", "slice_lo", &format!("{ok} ? {lo} : 0"));
        let cols = self.offset_columns(elem, &v.w[1..], &start)?;
        Ok(V {
            ty: v.ty.clone(),
            w: [vec![len], cols].concat(),
        })
    }

    /// `vec![a, b]` in the thread's arena.
    pub(super) fn seq_literal(&mut self, es: &[Expr]) -> R<V> {
        let vs = es.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
        let elem = vs[0].ty.clone();
        let (n, cols) = self.arena_columns(&elem, &format!("{}ULL", vs.len()))?;
        for (k, v) in vs.iter().enumerate() {
            self.line(&format!("if ({k}ULL < {n}) {{"));
            self.store_columns(v, &cols, &format!("{k}"));
            self.line("}");
        }
        Ok(V {
            ty: Type::Seq(Box::new(elem)),
            w: [vec![n], cols].concat(),
        })
    }

    /// `vec![x; n]` in the thread's arena.
    pub(super) fn seq_repeat(&mut self, x: &Expr, count: &Expr) -> R<V> {
        let v = self.expr(x)?;
        let v = self.copy(&v, "fill")?;
        let count = self.expr(count)?.w[0].clone();
        let (n, cols) = self.arena_columns(&v.ty, &count)?;
        let j = self.fresh("j");
        self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
        self.store_columns(&v, &cols, &j);
        self.line("}");
        Ok(V {
            ty: Type::Seq(Box::new(v.ty.clone())),
            w: [vec![n], cols].concat(),
        })
    }

    pub(super) fn assign(&mut self, target: &Expr, v: &V) -> R<()> {
        match target {
            Expr::Var(_) | Expr::Field(..) => {
                let place = self.expr(target)?;
                self.assign_words(&place, v);
                Ok(())
            }
            Expr::Index(b, i) => {
                let place = self.expr(b)?;
                let Type::Array(elem, n) = &place.ty else {
                    return Err(unsupported(crate::backend::SEQUENCE_ELEMENT_ASSIGNED));
                };
                let i = self.expr(i)?.w[0].clone();
                let k = words(elem)?.len();
                self.line(&format!(
                    "if ({i} >= {n}) accel_fail(err, {FAIL_INDEX}, {i}, {n});"
                ));
                for j in 0..*n {
                    self.line(&format!("if ({i} == {j}) {{"));
                    self.depth += 1;
                    for (o, x) in place.w[j * k..(j + 1) * k].iter().zip(&v.w) {
                        self.line(&format!("{o} = {x};"));
                    }
                    self.depth -= 1;
                    self.line("}");
                }
                Ok(())
            }
            _ => Err(unsupported("this assignment target")),
        }
    }

    /// Columns `cols` of a sequence of `elem`, advanced by `k` elements.
    pub(super) fn offset_columns(
        &mut self,
        elem: &Type,
        cols: &[String],
        k: &str,
    ) -> R<Vec<String>> {
        match elem {
            Type::Scalar(_) => Ok(vec![format!("({} + {k})", cols[0])]),
            Type::Unit => Ok(vec![]),
            Type::Tuple(_) | Type::Record(..) | Type::Array(..) => {
                let parts = elem.parts();
                let mut out = Vec::new();
                let mut at = 0;
                for p in parts {
                    let n = columns(&p)?.len();
                    out.extend(self.offset_columns(&p, &cols[at..at + n], k)?);
                    at += n;
                }
                Ok(out)
            }
            Type::Seq(inner) => {
                let scaled = format!("({k}) * {}", cols[0]);
                let rest = self.offset_columns(inner, &cols[1..], &scaled)?;
                Ok([vec![cols[0].clone()], rest].concat())
            }
            t => Err(unsupported(format!("sequences of {t}"))),
        }
    }

    /// Element `i` of a sequence or array value (bounds-checked).
    pub(super) fn index(&mut self, v: &V, i: &str) -> R<V> {
        match &v.ty {
            Type::Seq(elem) => {
                let ok = self.let_("bool", "in_bounds", &format!("{i} < {}", v.w[0]));
                self.line(&format!(
                    "if (!{ok}) accel_fail(err, {FAIL_INDEX}, {i}, {});",
                    v.w[0]
                ));
                let at = self.let_("ull", "at", &format!("{ok} ? {i} : 0"));
                self.element(elem, &v.w[1..], &at, &ok)
            }
            Type::Array(elem, n) => {
                let k = words(elem)?.len();
                self.line(&format!(
                    "if ({i} >= {n}) accel_fail(err, {FAIL_INDEX}, {i}, {n});"
                ));
                let mut w = Vec::new();
                for j in 0..k {
                    // A chain of selects: arrays live in registers.
                    let mut x = v.w[j].clone();
                    for m in (1..*n).rev() {
                        x = format!("({i} == {m} ? {} : {x})", v.w[m * k + j]);
                    }
                    let kinds = words(elem)?;
                    w.push(self.let_(&word_cty(kinds[j]), "elem", &x));
                }
                Ok(V {
                    ty: (**elem).clone(),
                    w,
                })
            }
            t => Err(unsupported(format!("indexing {t}"))),
        }
    }

    /// The element at `at` of columns `cols` of a sequence of `elem`; `ok` says whether the
    /// index was in bounds (reads are skipped when not).
    pub(super) fn element(&mut self, elem: &Type, cols: &[String], at: &str, ok: &str) -> R<V> {
        match elem {
            Type::Scalar(s) => {
                let x = self.let_(
                    cty(*s),
                    "elem",
                    &format!("{ok} ? {}[{at}] : ({})0", cols[0], cty(*s)),
                );
                Ok(V::scalar(*s, x))
            }
            Type::Unit => Ok(V::unit()),
            Type::Tuple(_) | Type::Record(..) | Type::Array(..) => {
                let parts = elem.parts();
                let mut w = Vec::new();
                let mut k = 0;
                for p in parts {
                    let n = columns(&p)?.len();
                    w.extend(self.element(&p, &cols[k..k + n], at, ok)?.w);
                    k += n;
                }
                Ok(V {
                    ty: elem.clone(),
                    w,
                })
            }
            Type::Seq(inner) => {
                let len = self.let_("ull", "row_len", &format!("{ok} ? {} : 0", cols[0]));
                let scaled = format!("({at}) * {}", cols[0]);
                let rest = self.offset_columns(inner, &cols[1..], &scaled)?;
                Ok(V {
                    ty: elem.clone(),
                    w: [vec![len], rest].concat(),
                })
            }
            t => Err(unsupported(format!("sequences of {t}"))),
        }
    }

    /// `n` elements of `elem`, element `j` computed by `element`, written into new columns
    /// in the thread's arena. Flat elements are stored as computed; rows (sequences of
    /// flat elements) are copied into columns allocated once row 0 has fixed their length,
    /// every later row checked against it (a sequence of sequences is regular).
    pub(super) fn arena_sequence(
        &mut self,
        elem: &Type,
        n: &str,
        mut element: impl FnMut(&mut Self, &str) -> R<V>,
    ) -> R<V> {
        let j = self.fresh("j");
        let Type::Seq(row) = elem else {
            let (n, cols) = self.arena_columns(elem, n)?;
            self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
            self.depth += 1;
            let v = element(self, &j)?;
            self.store_columns(&v, &cols, &j);
            self.depth -= 1;
            self.line("}");
            return Ok(V {
                ty: Type::Seq(Box::new(elem.clone())),
                w: [vec![n], cols].concat(),
            });
        };
        if !is_flat(row) {
            return Err(unsupported(format!(
                "a sequence of {elem} made inside a parallel operation"
            )));
        }
        let n = self.let_("ull", "len", n);
        let width = self.let_("ull", "row_len", "0");
        // Each column and its C type, allocated at row 0.
        let mut cols = Vec::new();
        for c in columns(row)? {
            let Word::Ptr(s) = c else {
                return Err("a column that is not a pointer".into());
            };
            let ty = cty(s);
            cols.push((self.let_(&format!("{ty}*"), "col", "nullptr"), ty));
        }
        self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
        self.depth += 1;
        let v = element(self, &j)?;
        let len = self.let_("ull", "row_len", &v.w[0]);
        self.line(&format!("if ({j} == 0) {{"));
        self.line(&format!("    {width} = {len};"));
        for (col, ty) in &cols {
            self.line(&format!(
                "    {col} = ({ty}*)accel_arena_alloc(&arena, {n} * {width} * sizeof({ty}), err);"
            ));
            self.line(&format!("    if ({col} == nullptr) {{ {n} = 0; break; }}"));
        }
        self.line(&format!(
            "}} else if ({len} != {width}) accel_fail(err, {FAIL_IRREGULAR}, {width}, {len});"
        ));
        let q = self.fresh("q");
        self.line(&format!(
            "for (ull {q} = 0; {q} < {width} && {q} < {len}; {q}++) {{"
        ));
        for ((col, _), src) in cols.iter().zip(&v.w[1..]) {
            self.line(&format!("    {col}[{j} * {width} + {q}] = ({src})[{q}];"));
        }
        self.line("}");
        self.depth -= 1;
        self.line("}");
        Ok(V {
            ty: Type::Seq(Box::new(elem.clone())),
            w: [
                vec![n, width],
                cols.into_iter().map(|(col, _)| col).collect(),
            ]
            .concat(),
        })
    }

    /// Columns for `n` elements of `elem` in the thread's arena: the length (0 when out of
    /// memory, which is recorded as a failure) and the column pointers.
    pub(super) fn arena_columns(&mut self, elem: &Type, n: &str) -> R<(String, Vec<String>)> {
        if !is_flat(elem) {
            return Err(unsupported(format!(
                "a sequence of {elem} made inside a parallel operation"
            )));
        }
        let n = self.let_("ull", "len", n);
        let mut cols = Vec::new();
        for c in columns(elem)? {
            let Word::Ptr(s) = c else {
                return Err("a column that is not a pointer".into());
            };
            let ty = cty(s);
            cols.push(self.let_(
                &format!("{ty}*"),
                "col",
                &format!("({ty}*)accel_arena_alloc(&arena, {n} * sizeof({ty}), err)"),
            ));
        }
        for c in &cols {
            self.line(&format!("if ({c} == nullptr) {n} = 0;"));
        }
        Ok((n, cols))
    }
}
