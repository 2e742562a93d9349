//! The parallel operations seen by name: a view of each operation's arguments
//! ([`Reduce`]`{ op, ne, xs }` rather than `args[0..3]`), and [`Operations`], the trait
//! through which a backend lowers them: one method per operation, so that a backend that
//! forgets one does not compile (Accelerate-LLVM's `Skeleton` class).
//!
//! ```
//! use accel_ir::ops::{OpView, Reduce};
//! use accel_ir::{Expr, ParOp};
//! let args = vec![Expr::fn_ref("add"), Expr::int(0), Expr::var("v")];
//! let Ok(OpView::Reduce(Reduce { ne, xs, .. })) = ParOp::Reduce.view(&args) else {
//!     panic!("a reduce");
//! };
//! assert_eq!((ne.to_string(), xs.to_string()), ("0".to_string(), "v".to_string()));
//! ```

use crate::expr::{Expr, ParOp, Pat};
use crate::passes::IrError;

/// `map(f, xs)`.
#[derive(Clone, Copy, Debug)]
pub struct Map<'a> {
    /// The function applied to each element.
    pub f: &'a Expr,
    /// The sequence.
    pub xs: &'a Expr,
}

/// `map2(f, xs, ys)`.
#[derive(Clone, Copy, Debug)]
pub struct Map2<'a> {
    /// The function applied to each pair of elements.
    pub f: &'a Expr,
    /// The first sequence.
    pub xs: &'a Expr,
    /// The second sequence (of the same length).
    pub ys: &'a Expr,
}

/// `reduce(op, ne, xs)`.
#[derive(Clone, Copy, Debug)]
pub struct Reduce<'a> {
    /// The associative operator.
    pub op: &'a Expr,
    /// Its neutral element.
    pub ne: &'a Expr,
    /// The sequence.
    pub xs: &'a Expr,
}

/// `scan(op, ne, xs)`.
#[derive(Clone, Copy, Debug)]
pub struct Scan<'a> {
    /// The associative operator.
    pub op: &'a Expr,
    /// Its neutral element.
    pub ne: &'a Expr,
    /// The sequence.
    pub xs: &'a Expr,
}

/// `flatten(xss)`.
#[derive(Clone, Copy, Debug)]
pub struct Flatten<'a> {
    /// The regular sequence of sequences.
    pub xss: &'a Expr,
}

/// `create(n, f)`.
#[derive(Clone, Copy, Debug)]
pub struct Create<'a> {
    /// The length.
    pub n: &'a Expr,
    /// The function from an index to an element.
    pub f: &'a Expr,
}

/// `parallel_loop(n, f)`.
#[derive(Clone, Copy, Debug)]
pub struct ParallelLoop<'a> {
    /// The iteration count.
    pub n: &'a Expr,
    /// The body, called with each iteration's index.
    pub f: &'a Expr,
}

/// `reduce_by_index(dest, op, ne, is, vs)`.
#[derive(Clone, Copy, Debug)]
pub struct ReduceByIndex<'a> {
    /// The initial bins.
    pub dest: &'a Expr,
    /// The associative and commutative operator.
    pub op: &'a Expr,
    /// Its neutral element.
    pub ne: &'a Expr,
    /// The bin of each value (`usize`; past the end: skipped).
    pub is: &'a Expr,
    /// The values.
    pub vs: &'a Expr,
}

/// `filter(p, xs)`.
#[derive(Clone, Copy, Debug)]
pub struct Filter<'a> {
    /// The predicate.
    pub p: &'a Expr,
    /// The sequence.
    pub xs: &'a Expr,
}

/// `scatter(dest, is, vs)`.
#[derive(Clone, Copy, Debug)]
pub struct Scatter<'a> {
    /// The sequence written into (a copy of it is the result).
    pub dest: &'a Expr,
    /// Where each value goes (`usize`; past the end: skipped).
    pub is: &'a Expr,
    /// The values.
    pub vs: &'a Expr,
}

/// One parallel operation with its arguments named.
#[derive(Clone, Copy, Debug)]
pub enum OpView<'a> {
    /// `map`.
    Map(Map<'a>),
    /// `map2`.
    Map2(Map2<'a>),
    /// `reduce`.
    Reduce(Reduce<'a>),
    /// `scan`.
    Scan(Scan<'a>),
    /// `flatten`.
    Flatten(Flatten<'a>),
    /// `create`.
    Create(Create<'a>),
    /// `parallel_loop`.
    ParallelLoop(ParallelLoop<'a>),
    /// `reduce_by_index`.
    ReduceByIndex(ReduceByIndex<'a>),
    /// `filter`.
    Filter(Filter<'a>),
    /// `scatter`.
    Scatter(Scatter<'a>),
}

impl ParOp {
    /// The operation applied to `args`, with its arguments named; an error when `args`
    /// does not have the operation's arity.
    pub fn view(self, args: &[Expr]) -> Result<OpView<'_>, IrError> {
        if args.len() != self.arity() {
            return Err(IrError::Type {
                message: format!(
                    "`{}` takes {} argument(s), but {} were given",
                    self.name(),
                    self.arity(),
                    args.len()
                ),
            });
        }
        let a = |k: usize| &args[k];
        Ok(match self {
            ParOp::Map => OpView::Map(Map { f: a(0), xs: a(1) }),
            ParOp::Map2 => OpView::Map2(Map2 {
                f: a(0),
                xs: a(1),
                ys: a(2),
            }),
            ParOp::Reduce => OpView::Reduce(Reduce {
                op: a(0),
                ne: a(1),
                xs: a(2),
            }),
            ParOp::Scan => OpView::Scan(Scan {
                op: a(0),
                ne: a(1),
                xs: a(2),
            }),
            ParOp::Flatten => OpView::Flatten(Flatten { xss: a(0) }),
            ParOp::Create => OpView::Create(Create { n: a(0), f: a(1) }),
            ParOp::ParallelLoop => OpView::ParallelLoop(ParallelLoop { n: a(0), f: a(1) }),
            ParOp::ReduceByIndex => OpView::ReduceByIndex(ReduceByIndex {
                dest: a(0),
                op: a(1),
                ne: a(2),
                is: a(3),
                vs: a(4),
            }),
            ParOp::Filter => OpView::Filter(Filter { p: a(0), xs: a(1) }),
            ParOp::Scatter => OpView::Scatter(Scatter {
                dest: a(0),
                is: a(1),
                vs: a(2),
            }),
        })
    }
}

impl<'a> OpView<'a> {
    /// Hands the operation to the backend method that lowers it.
    pub fn lower<O: Operations + ?Sized>(self, o: &mut O) -> O::Out {
        match self {
            OpView::Map(v) => o.map(v),
            OpView::Map2(v) => o.map2(v),
            OpView::Reduce(v) => o.reduce(v),
            OpView::Scan(v) => o.scan(v),
            OpView::Flatten(v) => o.flatten(v),
            OpView::Create(v) => o.create(v),
            OpView::ParallelLoop(v) => o.parallel_loop(v),
            OpView::ReduceByIndex(v) => o.reduce_by_index(v),
            OpView::Filter(v) => o.filter(v),
            OpView::Scatter(v) => o.scatter(v),
        }
    }
}

/// What a backend does with each parallel operation. There is no default method: adding
/// an operation to [`ParOp`] makes every backend that does not lower it fail to compile.
pub trait Operations {
    /// What lowering an operation gives (a value being generated, an error).
    type Out;
    /// Lowers `map(f, xs)`.
    fn map(&mut self, op: Map<'_>) -> Self::Out;
    /// Lowers `map2(f, xs, ys)`.
    fn map2(&mut self, op: Map2<'_>) -> Self::Out;
    /// Lowers `reduce(op, ne, xs)`.
    fn reduce(&mut self, op: Reduce<'_>) -> Self::Out;
    /// Lowers `scan(op, ne, xs)`.
    fn scan(&mut self, op: Scan<'_>) -> Self::Out;
    /// Lowers `flatten(xss)`.
    fn flatten(&mut self, op: Flatten<'_>) -> Self::Out;
    /// Lowers `create(n, f)`.
    fn create(&mut self, op: Create<'_>) -> Self::Out;
    /// Lowers `parallel_loop(n, f)`.
    fn parallel_loop(&mut self, op: ParallelLoop<'_>) -> Self::Out;
    /// Lowers `reduce_by_index(dest, op, ne, is, vs)`.
    fn reduce_by_index(&mut self, op: ReduceByIndex<'_>) -> Self::Out;
    /// Lowers `filter(p, xs)`.
    fn filter(&mut self, op: Filter<'_>) -> Self::Out;
    /// Lowers `scatter(dest, is, vs)`.
    fn scatter(&mut self, op: Scatter<'_>) -> Self::Out;
}

/// A delayed array `create(n, |p| body)` whose parameter is a plain name (what fusion makes
/// of every producer): its length, parameter and element body.
pub fn delayed(e: &Expr) -> Option<(&Expr, &str, &Expr)> {
    let Expr::Par {
        op: ParOp::Create,
        args,
        ..
    } = e
    else {
        return None;
    };
    let (p, body) = one_param(args.get(1)?)?;
    Some((&args[0], p, body))
}

/// A closure of one parameter that is a plain name (`|i| body`): its name and body.
pub fn one_param(f: &Expr) -> Option<(&str, &Expr)> {
    match f {
        Expr::Lambda { params, body } => match &params[..] {
            [(Pat::Bind { name, .. }, _)] => Some((name, body)),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ScalarType, Type};

    struct Names;

    impl Operations for Names {
        type Out = String;
        fn map(&mut self, op: Map<'_>) -> String {
            format!("map {} over {}", op.f, op.xs)
        }
        fn map2(&mut self, op: Map2<'_>) -> String {
            format!("map2 {} over {} {}", op.f, op.xs, op.ys)
        }
        fn reduce(&mut self, op: Reduce<'_>) -> String {
            format!("reduce {} from {} over {}", op.op, op.ne, op.xs)
        }
        fn scan(&mut self, op: Scan<'_>) -> String {
            format!("scan {} from {} over {}", op.op, op.ne, op.xs)
        }
        fn flatten(&mut self, op: Flatten<'_>) -> String {
            format!("flatten {}", op.xss)
        }
        fn create(&mut self, op: Create<'_>) -> String {
            format!("create {} by {}", op.n, op.f)
        }
        fn parallel_loop(&mut self, op: ParallelLoop<'_>) -> String {
            format!("loop {} by {}", op.n, op.f)
        }
        fn reduce_by_index(&mut self, op: ReduceByIndex<'_>) -> String {
            format!(
                "histogram {} with {} from {} at {} of {}",
                op.dest, op.op, op.ne, op.is, op.vs
            )
        }
        fn filter(&mut self, op: Filter<'_>) -> String {
            format!("keep {} of {}", op.xs, op.p)
        }
        fn scatter(&mut self, op: Scatter<'_>) -> String {
            format!("write {} at {} into {}", op.vs, op.is, op.dest)
        }
    }

    #[test]
    fn views_name_the_arguments_and_reach_the_backend_method() {
        let args = [Expr::fn_ref("add"), Expr::int(0), Expr::var("v")];
        let view = ParOp::Scan.view(&args).unwrap();
        assert_eq!(view.lower(&mut Names), "scan add from 0 over v");
        let args = [Expr::var("n"), Expr::fn_ref("f")];
        assert_eq!(
            ParOp::ParallelLoop.view(&args).unwrap().lower(&mut Names),
            "loop n by f"
        );
        let args = [
            Expr::var("bins"),
            Expr::fn_ref("add"),
            Expr::int(0),
            Expr::var("is"),
            Expr::var("vs"),
        ];
        assert_eq!(
            ParOp::ReduceByIndex.view(&args).unwrap().lower(&mut Names),
            "histogram bins with add from 0 at is of vs"
        );
        assert_eq!(
            ParOp::Filter.view(&args[3..5]).unwrap().lower(&mut Names),
            "keep vs of is"
        );
        assert_eq!(
            ParOp::Scatter.view(&args[2..5]).unwrap().lower(&mut Names),
            "write vs at is into 0"
        );
        let e = ParOp::Map.view(&args[..1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "type error in accelerated code: `map` takes 2 argument(s), but 1 were given"
        );
    }

    #[test]
    fn delayed_arrays_show_their_parameter_and_body() {
        let lam = Expr::Lambda {
            params: vec![(Pat::bind("i"), Type::Scalar(ScalarType::Usize))],
            body: Box::new(Expr::var("i")),
        };
        let e = Expr::par(ParOp::Create, vec![Expr::var("n"), lam]);
        let (n, p, body) = delayed(&e).unwrap();
        assert_eq!(
            (n.to_string(), p, body.to_string()),
            ("n".into(), "i", "i".into())
        );
        assert!(delayed(&Expr::var("xs")).is_none());
    }
}
