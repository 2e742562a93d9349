//! CUDA C generation for a typed, fused site.
//!
//! Every parallel operation at the site's top level (outside every closure) becomes one or
//! more kernels; what lies between them (scalar arithmetic, `let`s, tuples of results) is
//! the *host program*: the site's body with each such operation replaced by a launch
//! (`accel::launch#k`, see `host_lower`), which [`crate::cuda::host`] evaluates.
//! Parallel operations nested in a closure run as sequential loops inside the enclosing
//! kernel.
//!
//! Values follow the backend contract's word layout ([`crate::backend::layout`]), with
//! device pointers for columns: a kernel's parameters are the words of the host values it
//! reads, each an `unsigned long long`, so the host passes them without knowing their
//! types; then the kernel's own parameters, declared once per kernel
//! (`kernel::KernelParams`).
//!
//! Reductions with a primitive commutative operator (`+`, `*`, `min`, `max` on scalars)
//! read coalesced with a grid-stride loop and combine in a shared-memory tree; every other
//! reduction and every scan keeps the order of the elements (associativity is all the API
//! promises): each block owns a contiguous chunk, each thread a contiguous part of it, and
//! the trees combine neighbours left to right. Scans take three kernels: block totals, the
//! carries into each block, and the final pass. Reductions and scans over rows keep each
//! thread's running row in device memory (one chunk per thread, one block to combine);
//! a `create` of equally long reductions may run as a segmented reduction (many blocks
//! per segment) when there are few segments. Each kind of launch is one module of
//! `ops`, with its kernels, their parameters, its launch and its nested form.
//!
//! The host program also runs `for`/`while` loops over mutable variables between
//! launches; the data stays on the device from one iteration to the next.
//!
//! Nothing traps: indices are bounds-checked, integer division is checked, casts saturate
//! like Rust's `as`; the first failure is recorded in an error word the host reads, and
//! the failing thread goes on with a zero (the run's results are then discarded). Floats
//! follow CUDA's math functions; `a * b + c` rounds twice as in Rust (no fused
//! multiply-add unless `ACCEL_CUDA_FMAD=1`, see `nvrtc::fmad`).

mod control;
mod expr;
pub(crate) mod host_lower;
pub(crate) mod kernel;
pub mod launch;
mod memory;
mod methods;
mod num;
pub(crate) mod ops;
mod prelude;
mod tensors;
mod values;

use crate::backend::FrontEnd;
use accel_ir::{Expr, Type};
use host_lower::Gen;
use kernel::R;
use launch::Launch;
use std::collections::HashMap;

pub use kernel::{columns, words, BLOCK};
pub use launch::LaunchKind;

/// A site lowered for the GPU.
#[derive(Debug)]
pub struct Program {
    /// The CUDA C of every kernel.
    pub source: String,
    /// The site's body with every top-level parallel operation replaced by a launch.
    pub host: Expr,
    /// The launches, in the order the host program's calls name them.
    pub launches: Vec<Launch>,
    /// The captured values' names, in marshaling order.
    pub captures: Vec<String>,
    /// Their types.
    pub capture_types: Vec<Type>,
}

/// Lowers a typed, fused site (the front end's result).
pub fn generate(front: &FrontEnd) -> R<Program> {
    let (body, captures, result) = (&front.fused, &front.captures, &front.result);
    let mut records = HashMap::new();
    for (_, t) in captures {
        t.learn_records(&mut records);
    }
    result.learn_records(&mut records);
    let mut g = Gen {
        source: prelude::prelude(),
        launches: Vec::new(),
        records,
        host_scope: captures.iter().cloned().collect(),
        named: 0,
    };
    let host = g.host(body)?;
    Ok(Program {
        source: g.source,
        host,
        launches: g.launches,
        captures: captures.iter().map(|(n, _)| n.clone()).collect(),
        capture_types: captures.iter().map(|(_, t)| t.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::abi::MAX_RANK;
    use crate::backend::layout::Word;
    use accel_ir::{BinOp, Expr, Lit, ParOp, Pat, ScalarType, Stmt};

    fn lowered(body: &Expr, captures: &[(String, Type)], result: &Type) -> R<Program> {
        generate(&FrontEnd {
            fused: body.clone(),
            captures: captures.to_vec(),
            result: result.clone(),
            program_hash: String::new(),
        })
    }

    fn lam(params: &[&str], body: Expr) -> Expr {
        Expr::Lambda {
            params: params.iter().map(|p| (Pat::bind(p), Type::Infer)).collect(),
            body: Box::new(body),
        }
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    #[test]
    fn values_have_the_cpu_backends_word_layout() {
        let f32s = Type::Seq(Box::new(Type::Scalar(ScalarType::F32)));
        assert_eq!(
            words(&f32s).unwrap(),
            vec![Word::Scalar(ScalarType::Usize), Word::Ptr(ScalarType::F32)]
        );
        let rows = Type::Seq(Box::new(Type::Seq(Box::new(Type::Tuple(vec![
            Type::Scalar(ScalarType::I32),
            Type::Scalar(ScalarType::Bool),
        ])))));
        assert_eq!(
            words(&rows).unwrap(),
            vec![
                Word::Scalar(ScalarType::Usize),
                Word::Scalar(ScalarType::Usize),
                Word::Ptr(ScalarType::I32),
                Word::Ptr(ScalarType::Bool)
            ]
        );
        let t = Type::Tensor(Box::new(Type::Scalar(ScalarType::F64)));
        assert_eq!(words(&t).unwrap().len(), 2 + MAX_RANK);
    }

    #[test]
    fn top_level_operations_become_launches_and_the_rest_stays_on_the_host() {
        // let s = reduce(+, 0.0, xs); s * 2.0
        let f32_ = Type::Scalar(ScalarType::F32);
        let xs = Type::Seq(Box::new(f32_.clone()));
        let mut op = lam(&["a", "b"], bin(BinOp::Add, Expr::var("a"), Expr::var("b")));
        if let Expr::Lambda { params, .. } = &mut op {
            for p in params.iter_mut() {
                p.1 = f32_.clone();
            }
        }
        let two = Expr::Lit(Lit::Float(2.0, Some(ScalarType::F32)));
        let zero = Expr::Lit(Lit::Float(0.0, Some(ScalarType::F32)));
        let body = Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind("s"),
                ty: f32_.clone(),
                init: Some(Expr::par(ParOp::Reduce, vec![op, zero, Expr::var("xs")])),
            }],
            result: Some(Box::new(bin(BinOp::Mul, Expr::var("s"), two))),
        };
        let p = lowered(&body, &[("xs".into(), xs.clone())], &f32_).unwrap();
        assert_eq!(p.launches.len(), 1);
        assert_eq!(
            p.launches[0].kernel_names(),
            vec!["accel_k0_part", "accel_k0_final"]
        );
        assert_eq!(p.launches[0].free, vec![("xs".to_string(), xs)]);
        assert!(matches!(
            p.launches[0].kind,
            LaunchKind::Reduce {
                commutative: true,
                ..
            }
        ));
        let Expr::Block { stmts, .. } = &p.host else {
            panic!("a block")
        };
        let Stmt::Let {
            init: Some(Expr::Call { func, .. }),
            ..
        } = &stmts[0]
        else {
            panic!("a launch: {:?}", p.host)
        };
        assert_eq!(func, "accel::launch#0");
        assert!(p.source.contains("extern \"C\" __global__ void accel_k0_part(ull p0, ull p1, ull n, ull chunk, ull partials, ull err_word)"));
    }

    #[test]
    fn what_is_not_supported_yet_is_named() {
        // A result nested three levels deep.
        let usize_ = Type::Scalar(ScalarType::Usize);
        let seq = |t: &Type| Type::Seq(Box::new(t.clone()));
        let n = || Expr::Lit(Lit::Int(2, Some(ScalarType::Usize)));
        let typed = |name: &str, body: Expr| {
            let mut f = lam(&[name], body);
            if let Expr::Lambda { params, .. } = &mut f {
                params[0].1 = Type::Scalar(ScalarType::Usize);
            }
            f
        };
        let inner = Expr::par(ParOp::Create, vec![n(), typed("k", Expr::var("k"))]);
        let middle = Expr::par(ParOp::Create, vec![n(), typed("j", inner)]);
        let body = Expr::par(ParOp::Create, vec![n(), typed("i", middle)]);
        let result = seq(&seq(&seq(&usize_)));
        assert_eq!(
            lowered(&body, &[], &result).unwrap_err(),
            "the cuda backend cannot compile a parallel operation producing a sequence of [[usize]] yet"
        );
    }
}
