//! Tensors made inside kernel code (`Tensor::zeros`, `Tensor::from_vec`) and copied into
//! sequences there (`t.to_vec()`): memory from the thread's arena, freed after the
//! element as sequences made there are. The failures are the CPU's (`cpu::codegen`), in
//! the same words; where one happens the tensor has no elements, so that no access
//! reaches memory it does not have.

use super::kernel::*;
use crate::backend::abi::MAX_RANK;
use crate::backend::failure::FailureKind;
use crate::cuda::c::*;
use accel_ir::{Expr, ScalarType, Type};

const FAIL_ALLOC: u32 = FailureKind::Alloc.code();
const FAIL_TENSOR_FILL: u32 = FailureKind::TensorFill.code();
const FAIL_TENSOR_RANK: u32 = FailureKind::TensorRank.code();

/// A tensor being made: its rank and dimensions (variables, 1 past the rank), and its
/// element count.
struct Shape {
    rank: String,
    dims: Vec<String>,
    count: String,
}

impl KernelGen<'_> {
    /// `Tensor::zeros(shape)` of `elem`s (the type its `let` gives the tensor).
    pub(super) fn tensor_zeros(&mut self, elem: &Type, shape: &Expr) -> R<V> {
        let s = tensor_scalar(elem)?;
        let shape = self.expr(shape)?;
        let shape = self.shape(&shape)?;
        let p = self.tensor_memory(s, &shape);
        let (ty, count) = (cty(s), &shape.count);
        self.line(&format!(
            "for (ull k = 0; k < {count}; k++) {p}[k] = ({ty})0;"
        ));
        Ok(tensor(elem, p, &shape))
    }

    /// `Tensor::from_vec(v, shape)`: a copy of `v`, which must fill the shape.
    pub(super) fn tensor_from_vec(&mut self, v: &Expr, shape: &Expr) -> R<V> {
        let seq = self.expr(v)?;
        let Type::Seq(elem) = &seq.ty else {
            return Err(format!("`Tensor::from_vec` of a {}", seq.ty));
        };
        let s = tensor_scalar(elem)?;
        let shape = self.expr(shape)?;
        let shape = self.shape(&shape)?;
        let (len, count) = (&seq.w[0], shape.count.clone());
        self.line(&format!(
            "if ({len} != {count}) {{ accel_fail(err, {FAIL_TENSOR_FILL}, {len}, {count}); {}; }}",
            self.emptied(&shape)
        ));
        let p = self.tensor_memory(s, &shape);
        self.line(&format!(
            "for (ull k = 0; k < {count}; k++) {p}[k] = {}[k];",
            seq.w[1]
        ));
        Ok(tensor(elem, p, &shape))
    }

    /// `t.to_vec()`: the view's elements in row-major order, copied.
    pub(super) fn tensor_to_vec(&mut self, t: &V) -> R<V> {
        let Type::Tensor(elem) = &t.ty else {
            return Err(format!("`.to_vec()` of a {}", t.ty));
        };
        tensor_scalar(elem)?;
        let count = (0..MAX_RANK)
            .map(|k| t.w[2 + k].clone())
            .collect::<Vec<_>>()
            .join(" * ");
        let (n, cols) = self.arena_columns(elem, &count)?;
        self.line(&format!(
            "for (ull k = 0; k < {n}; k++) {}[k] = {}[k];",
            cols[0], t.w[0]
        ));
        Ok(V {
            ty: Type::Seq(elem.clone()),
            w: [vec![n], cols].concat(),
        })
    }

    /// A shape's rank, dimensions and element count: of an array of `usize`s (its rank
    /// known here) or a sequence of them (its rank checked as the kernel runs); a count
    /// past 64 bits fails as an allocation too large, and the tensor is empty.
    fn shape(&mut self, shape: &V) -> R<Shape> {
        let (rank, dims): (String, Vec<String>) = match &shape.ty {
            Type::Array(_, k) if *k > MAX_RANK => {
                return Err(unsupported(format!(
                    "tensors of rank {k} (compiled code holds rank {MAX_RANK} at most)"
                )))
            }
            Type::Array(..) => {
                let dims = (0..MAX_RANK)
                    .map(|k| {
                        let d = shape.w.get(k).cloned().unwrap_or_else(|| "1".into());
                        self.let_("ull", "dim", &d)
                    })
                    .collect();
                (self.let_("ull", "rank", &shape.w.len().to_string()), dims)
            }
            Type::Seq(_) => {
                let (len, at) = (&shape.w[0], &shape.w[1]);
                let rank = self.let_("ull", "rank", len);
                let dims = (0..MAX_RANK)
                    .map(|k| self.let_("ull", "dim", &format!("{rank} > {k} ? {at}[{k}] : 1")))
                    .collect();
                (rank, dims)
            }
            t => return Err(format!("a tensor's shape of type {t}")),
        };
        let count = self.let_("ull", "count", &dims[0]);
        let wrapped = self.let_("bool", "wrapped", "false");
        for d in &dims[1..] {
            self.line(&format!(
                "if ({d} != 0 && {count} > ~0ULL / {d}) {wrapped} = true; {count} *= {d};"
            ));
        }
        let shape = Shape { rank, dims, count };
        let (rank, empty) = (&shape.rank, self.emptied(&shape));
        self.line(&format!(
            "if ({rank} > {MAX_RANK}) {{ accel_fail(err, {FAIL_TENSOR_RANK}, {rank}, {MAX_RANK}); {empty}; }}"
        ));
        self.line(&format!(
            "else if ({wrapped}) {{ accel_fail(err, {FAIL_ALLOC}, ~0ULL, 0); {empty}; }}"
        ));
        Ok(shape)
    }

    /// Memory for the shape's elements of `s` from the arena, or none: then the shape is
    /// emptied (a failure is recorded).
    fn tensor_memory(&mut self, s: ScalarType, shape: &Shape) -> String {
        let (ty, count) = (cty(s), &shape.count);
        let size = crate::backend::layout::size_of(s);
        let most = isize::MAX as u64 / size as u64;
        self.line(&format!(
            "if ({count} > {most}ULL) {{ accel_fail(err, {FAIL_ALLOC}, ~0ULL, {count}); {}; }}",
            self.emptied(shape)
        ));
        let p = self.let_(
            &format!("{ty}*"),
            "tensor",
            &format!("({ty}*)accel_arena_alloc(&arena, {count} * sizeof({ty}), err)"),
        );
        self.line(&format!(
            "if ({p} == nullptr) {{ {}; }}",
            self.emptied(shape)
        ));
        p
    }

    /// C statements that make the shape empty: no elements, and a rank no index has, so
    /// that every access fails (after the failure recorded first) without reading.
    fn emptied(&self, shape: &Shape) -> String {
        format!(
            "{} = 0; {} = 0; {} = {}",
            shape.count,
            shape.dims[0],
            shape.rank,
            MAX_RANK + 1
        )
    }
}

/// The scalar type of a tensor's elements.
fn tensor_scalar(elem: &Type) -> R<ScalarType> {
    match elem {
        Type::Scalar(s) => Ok(*s),
        _ => Err(unsupported("tensors of compound elements")),
    }
}

/// The words of a whole tensor at `p` of `shape`.
fn tensor(elem: &Type, p: String, shape: &Shape) -> V {
    V {
        ty: Type::Tensor(Box::new(elem.clone())),
        w: [vec![p, shape.rank.clone()], shape.dims.clone()].concat(),
    }
}
