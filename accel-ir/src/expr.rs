//! Expressions, statements and patterns.

use crate::types::{ScalarType, Type};
use serde::{Deserialize, Serialize};

/// A position in the source file of the item that holds the code (1-based line, 0-based
/// column, as rustc's spans count them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc {
    /// 1-based line.
    pub line: u32,
    /// 0-based column.
    pub column: u32,
}

/// A literal. Integers keep their magnitude (negation is a [`UnOp::Neg`]) and their suffix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Lit {
    /// An integer's magnitude, with its suffix type if written or inferred.
    Int(u64, Option<ScalarType>),
    /// A float, with its suffix type if written or inferred.
    Float(f64, Option<ScalarType>),
    /// `true` or `false`.
    Bool(bool),
}

/// The parallel operations of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ParOp {
    /// `map(f, xs)`.
    Map,
    /// `map2(f, xs, ys)`.
    Map2,
    /// `reduce(op, ne, xs)`.
    Reduce,
    /// `scan(op, ne, xs)`.
    Scan,
    /// `flatten(xss)`.
    Flatten,
    /// `create(n, f)`.
    Create,
    /// `parallel_loop(n, f)`.
    ParallelLoop,
    /// `reduce_by_index(dest, op, ne, is, vs)`: a histogram.
    ReduceByIndex,
    /// `filter(p, xs)`: the elements for which `p` holds, in order.
    Filter,
    /// `scatter(dest, is, vs)`: `dest` with `vs[k]` written at `is[k]`.
    Scatter,
}

impl ParOp {
    /// Every operation.
    pub const ALL: [ParOp; 10] = [
        ParOp::Map,
        ParOp::Map2,
        ParOp::Reduce,
        ParOp::Scan,
        ParOp::Flatten,
        ParOp::Create,
        ParOp::ParallelLoop,
        ParOp::ReduceByIndex,
        ParOp::Filter,
        ParOp::Scatter,
    ];

    /// The name users write.
    pub fn name(self) -> &'static str {
        match self {
            ParOp::Map => "map",
            ParOp::Map2 => "map2",
            ParOp::Reduce => "reduce",
            ParOp::Scan => "scan",
            ParOp::Flatten => "flatten",
            ParOp::Create => "create",
            ParOp::ParallelLoop => "parallel_loop",
            ParOp::ReduceByIndex => "reduce_by_index",
            ParOp::Filter => "filter",
            ParOp::Scatter => "scatter",
        }
    }

    /// Looks an operation up by the name users write.
    pub fn from_name(name: &str) -> Option<ParOp> {
        ParOp::ALL.into_iter().find(|op| op.name() == name)
    }

    /// How many arguments the operation takes.
    pub fn arity(self) -> usize {
        match self {
            ParOp::Flatten => 1,
            ParOp::Map | ParOp::Create | ParOp::ParallelLoop | ParOp::Filter => 2,
            ParOp::Map2 | ParOp::Reduce | ParOp::Scan | ParOp::Scatter => 3,
            ParOp::ReduceByIndex => 5,
        }
    }

    /// The index of the argument that is a function (`None` for `flatten`).
    pub fn fn_arg(self) -> Option<usize> {
        match self {
            ParOp::Flatten | ParOp::Scatter => None,
            ParOp::Create | ParOp::ParallelLoop | ParOp::ReduceByIndex => Some(1),
            _ => Some(0),
        }
    }

    /// Whether the operation belongs to the imperative (CUDA-style) backend rather than the
    /// functional (Futhark-style) one.
    pub fn is_imperative(self) -> bool {
        self == ParOp::ParallelLoop
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnOp {
    /// `-x`.
    Neg,
    /// `!x`.
    Not,
}

/// Binary operators. Compound assignments are desugared into [`Expr::Assign`] of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Rem,
    /// `&&` (short-circuit).
    And,
    /// `||` (short-circuit).
    Or,
    /// `&`.
    BitAnd,
    /// `|`.
    BitOr,
    /// `^`.
    BitXor,
    /// `<<`.
    Shl,
    /// `>>`.
    Shr,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl BinOp {
    /// The operator as written in Rust.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }
}

/// A pattern of `let`, closure parameters and `match` arms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Pat {
    /// `_`.
    Wild,
    /// A name (`x`, `mut x`).
    Bind {
        /// The name bound.
        name: String,
        /// Whether it is `mut`.
        mutable: bool,
    },
    /// `(p, q)`.
    Tuple(Vec<Pat>),
    /// A record pattern; `rest` is true for `..`.
    Record {
        /// The record's name.
        name: String,
        /// The fields matched, by name.
        fields: Vec<(String, Pat)>,
        /// Whether `..` ends it.
        rest: bool,
    },
    /// A literal, possibly negated.
    Lit {
        /// Whether the literal is negated (`-1`).
        negative: bool,
        /// The literal.
        lit: Lit,
    },
    /// A named constant (`i32::MIN`), as a range bound.
    Const(String),
    /// `lo..=hi` (inclusive) or `lo..hi`.
    Range {
        /// The lower bound.
        lo: Box<Pat>,
        /// The upper bound.
        hi: Box<Pat>,
        /// Whether the upper bound is included (`..=`).
        inclusive: bool,
    },
    /// `p | q`.
    Or(Vec<Pat>),
}

impl Pat {
    /// A plain immutable binding.
    pub fn bind(name: &str) -> Pat {
        Pat::Bind {
            name: name.to_string(),
            mutable: false,
        }
    }

    /// The names this pattern binds, in order.
    pub fn bound_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.collect_names(&mut names);
        names
    }

    fn collect_names(&self, out: &mut Vec<String>) {
        match self {
            Pat::Bind { name, .. } => out.push(name.clone()),
            Pat::Tuple(ps) => ps.iter().for_each(|p| p.collect_names(out)),
            Pat::Record { fields, .. } => fields.iter().for_each(|(_, p)| p.collect_names(out)),
            // Alternatives bind the same names; the first one lists them.
            Pat::Or(ps) => {
                if let Some(p) = ps.first() {
                    p.collect_names(out)
                }
            }
            Pat::Wild | Pat::Lit { .. } | Pat::Const(_) | Pat::Range { .. } => {}
        }
    }
}

/// A statement of a block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Stmt {
    /// `let pat: ty = init;`.
    Let {
        /// The pattern bound.
        pat: Pat,
        /// Its type (`Type::Infer` until inferred).
        ty: Type,
        /// The value (none for `let x;`).
        init: Option<Expr>,
    },
    /// An expression evaluated for its effect.
    Expr(Expr),
}

/// One arm of a `match`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchArm {
    /// The pattern.
    pub pat: Pat,
    /// The `if` guard, if any.
    pub guard: Option<Expr>,
    /// The arm's value.
    pub body: Expr,
}

/// An expression. References and dereferences of the source are dropped: ownership is a
/// marshaling concern, never visible to accelerated code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// A literal.
    Lit(Lit),
    /// A local variable (a parameter, a `let`, or a captured local of the site).
    Var(String),
    /// An `#[accel]` function used as a value (for example `add` in `reduce(add, 0, &v)`).
    FnRef(String),
    /// A Rust constant: `f32::MAX`, `std::f64::consts::PI`, a user `const N`.
    Const(String),
    /// A tuple; the empty tuple is `()`.
    Tuple(Vec<Expr>),
    /// `[a, b, c]`.
    Array(Vec<Expr>),
    /// `[value; count]`.
    ArrayRepeat(Box<Expr>, Box<Expr>),
    /// A sequence literal, `vec![a, b, c]`.
    Seq(Vec<Expr>),
    /// `vec![value; count]`.
    SeqRepeat(Box<Expr>, Box<Expr>),
    /// The elements `lo..hi` of a sequence, `&xs[lo..hi]` (a view, no copy).
    Slice {
        /// The sequence.
        seq: Box<Expr>,
        /// The first index.
        lo: Box<Expr>,
        /// The end index (excluded).
        hi: Box<Expr>,
    },
    /// `Name { field: value, .. }`.
    Record {
        /// The record's name.
        name: String,
        /// The fields' values, as written.
        fields: Vec<(String, Expr)>,
    },
    /// Field access; tuple fields are named `0`, `1`, ….
    Field(Box<Expr>, String),
    /// `xs[i]`.
    Index(Box<Expr>, Box<Expr>),
    /// A unary operator.
    Unary(UnOp, Box<Expr>),
    /// A binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `x as T`.
    Cast(Box<Expr>, Type),
    /// A call of an `#[accel]` function.
    Call {
        /// The function's unique name.
        func: String,
        /// The arguments.
        args: Vec<Expr>,
        /// Where the call is.
        loc: Loc,
    },
    /// A call of a function value (a parameter of a function that takes a function).
    Apply {
        /// The function value.
        func: Box<Expr>,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// A parallel operation.
    Par {
        /// The operation.
        op: ParOp,
        /// Its arguments (see [`crate::ops`] for their names).
        args: Vec<Expr>,
        /// Where it is.
        loc: Loc,
    },
    /// A method of the supported set (`x.sqrt()`, `xs.len()`, `t.get(i)`, `t.set(i, v)`, …).
    Method {
        /// The receiver.
        recv: Box<Expr>,
        /// The method's name.
        method: String,
        /// The arguments after the receiver.
        args: Vec<Expr>,
    },
    /// An associated function of the supported set (`Tensor::zeros(s)`, `f32::max(a, b)`).
    Assoc {
        /// The type named (`f32`, `Tensor`).
        ty: String,
        /// The function's name.
        func: String,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// A closure `|params| body`.
    Lambda {
        /// Its parameters with their types.
        params: Vec<(Pat, Type)>,
        /// Its body.
        body: Box<Expr>,
    },
    /// A lifted closure: the function `func` partially applied to the captured values
    /// `env` (the paper's lambda lifting turns every `Lambda` into one of these).
    Closure {
        /// The lifted function.
        func: String,
        /// The captured values.
        env: Vec<Expr>,
    },
    /// `if cond { then } else { els }`.
    If {
        /// The condition.
        cond: Box<Expr>,
        /// The value when it holds.
        then: Box<Expr>,
        /// The value otherwise (none: `()`).
        els: Option<Box<Expr>>,
    },
    /// `match scrutinee { arms }`.
    Match {
        /// The value matched.
        scrutinee: Box<Expr>,
        /// The arms, in order.
        arms: Vec<MatchArm>,
    },
    /// `{ stmts; result }`.
    Block {
        /// The statements.
        stmts: Vec<Stmt>,
        /// The value (none: `()`).
        result: Option<Box<Expr>>,
    },
    /// Assignment to a mutable local, or to a field or element of one.
    Assign {
        /// The place assigned.
        target: Box<Expr>,
        /// The value.
        value: Box<Expr>,
    },
    /// `for var in lo..hi { body }` (sequential).
    For {
        /// The loop variable.
        var: String,
        /// The first value.
        lo: Box<Expr>,
        /// The end (excluded).
        hi: Box<Expr>,
        /// The body.
        body: Box<Expr>,
    },
    /// `while cond { body }`.
    While {
        /// The condition.
        cond: Box<Expr>,
        /// The body.
        body: Box<Expr>,
    },
}

impl Expr {
    /// A variable reference.
    pub fn var(name: &str) -> Expr {
        Expr::Var(name.to_string())
    }

    /// A function reference.
    pub fn fn_ref(name: &str) -> Expr {
        Expr::FnRef(name.to_string())
    }

    /// `xs.len()`, as the front end writes it and the backends read it.
    pub fn len_of(xs: Expr) -> Expr {
        Expr::Method {
            recv: Box::new(xs),
            method: "len".into(),
            args: vec![],
        }
    }

    /// An unsuffixed integer literal.
    pub fn int(value: u64) -> Expr {
        Expr::Lit(Lit::Int(value, None))
    }

    /// The value of an integer literal, when it fits a `usize` (a length written as a
    /// literal).
    pub fn literal_usize(&self) -> Option<usize> {
        match self {
            Expr::Lit(Lit::Int(v, _)) => usize::try_from(*v).ok(),
            _ => None,
        }
    }

    /// A parallel operation at an unknown location.
    pub fn par(op: ParOp, args: Vec<Expr>) -> Expr {
        Expr::Par {
            op,
            args,
            loc: Loc::default(),
        }
    }

    /// `f` applied to `args`: a lambda becomes a block binding its parameters to the
    /// arguments (beta reduction); any other function value an [`Expr::Apply`].
    pub fn applied(f: &Expr, args: Vec<Expr>) -> Expr {
        match f {
            Expr::Lambda { params, body } => Expr::Block {
                stmts: params
                    .iter()
                    .cloned()
                    .zip(args)
                    .map(|((pat, ty), init)| Stmt::Let {
                        pat,
                        ty,
                        init: Some(init),
                    })
                    .collect(),
                result: Some(body.clone()),
            },
            other => Expr::Apply {
                func: Box::new(other.clone()),
                args,
            },
        }
    }

    /// Calls `f` on every direct subexpression, in evaluation order.
    pub fn for_each_child<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        match self {
            Expr::Lit(_) | Expr::Var(_) | Expr::FnRef(_) | Expr::Const(_) => {}
            Expr::Tuple(es) | Expr::Array(es) | Expr::Seq(es) => es.iter().for_each(f),
            Expr::Slice { seq, lo, hi } => {
                f(seq);
                f(lo);
                f(hi)
            }
            Expr::Call { args, .. }
            | Expr::Par { args, .. }
            | Expr::Assoc { args, .. }
            | Expr::Closure { env: args, .. } => args.iter().for_each(f),
            Expr::ArrayRepeat(a, b)
            | Expr::SeqRepeat(a, b)
            | Expr::Index(a, b)
            | Expr::Binary(_, a, b) => {
                f(a);
                f(b)
            }
            Expr::Record { fields, .. } => fields.iter().for_each(|(_, e)| f(e)),
            Expr::Field(e, _) | Expr::Unary(_, e) | Expr::Cast(e, _) => f(e),
            Expr::Method { recv, args, .. } => {
                f(recv);
                args.iter().for_each(f)
            }
            Expr::Apply { func, args } => {
                f(func);
                args.iter().for_each(f)
            }
            Expr::Lambda { body, .. } => f(body),
            Expr::If { cond, then, els } => {
                f(cond);
                f(then);
                if let Some(e) = els {
                    f(e)
                }
            }
            Expr::Match { scrutinee, arms } => {
                f(scrutinee);
                for arm in arms {
                    if let Some(g) = &arm.guard {
                        f(g)
                    }
                    f(&arm.body)
                }
            }
            Expr::Block { stmts, result } => {
                for s in stmts {
                    match s {
                        Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => f(e),
                        Stmt::Let { init: None, .. } => {}
                    }
                }
                if let Some(r) = result {
                    f(r)
                }
            }
            Expr::Assign { target, value } => {
                f(target);
                f(value)
            }
            Expr::For { lo, hi, body, .. } => {
                f(lo);
                f(hi);
                f(body)
            }
            Expr::While { cond, body } => {
                f(cond);
                f(body)
            }
        }
    }

    /// Calls `f` on every direct subexpression, mutably.
    pub fn for_each_child_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        match self {
            Expr::Lit(_) | Expr::Var(_) | Expr::FnRef(_) | Expr::Const(_) => {}
            Expr::Tuple(es) | Expr::Array(es) | Expr::Seq(es) => es.iter_mut().for_each(f),
            Expr::Slice { seq, lo, hi } => {
                f(seq);
                f(lo);
                f(hi)
            }
            Expr::Call { args, .. }
            | Expr::Par { args, .. }
            | Expr::Assoc { args, .. }
            | Expr::Closure { env: args, .. } => args.iter_mut().for_each(f),
            Expr::ArrayRepeat(a, b)
            | Expr::SeqRepeat(a, b)
            | Expr::Index(a, b)
            | Expr::Binary(_, a, b) => {
                f(a);
                f(b)
            }
            Expr::Record { fields, .. } => fields.iter_mut().for_each(|(_, e)| f(e)),
            Expr::Field(e, _) | Expr::Unary(_, e) | Expr::Cast(e, _) => f(e),
            Expr::Method { recv, args, .. } => {
                f(recv);
                args.iter_mut().for_each(f)
            }
            Expr::Apply { func, args } => {
                f(func);
                args.iter_mut().for_each(f)
            }
            Expr::Lambda { body, .. } => f(body),
            Expr::If { cond, then, els } => {
                f(cond);
                f(then);
                if let Some(e) = els {
                    f(e)
                }
            }
            Expr::Match { scrutinee, arms } => {
                f(scrutinee);
                for arm in arms {
                    if let Some(g) = &mut arm.guard {
                        f(g)
                    }
                    f(&mut arm.body)
                }
            }
            Expr::Block { stmts, result } => {
                for s in stmts {
                    match s {
                        Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => f(e),
                        Stmt::Let { init: None, .. } => {}
                    }
                }
                if let Some(r) = result {
                    f(r)
                }
            }
            Expr::Assign { target, value } => {
                f(target);
                f(value)
            }
            Expr::For { lo, hi, body, .. } => {
                f(lo);
                f(hi);
                f(body)
            }
            Expr::While { cond, body } => {
                f(cond);
                f(body)
            }
        }
    }

    /// Calls `f` on this expression and every expression inside it, parents first.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        self.for_each_child(&mut |c| c.walk(f));
    }

    /// Whether this expression binds `name` anywhere inside it: a `let`, a closure's
    /// parameter, a `for` loop's variable or a `match` arm's pattern (where a reference
    /// to `name` would mean that binding, not an outer one).
    pub fn binds(&self, name: &str) -> bool {
        self.bound_inside().iter().any(|n| n == name)
    }

    /// Every name this expression binds inside it (see [`Expr::binds`]).
    pub fn bound_inside(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.walk(&mut |x| match x {
            Expr::Block { stmts, .. } => {
                for st in stmts {
                    if let Stmt::Let { pat, .. } = st {
                        names.extend(pat.bound_names());
                    }
                }
            }
            Expr::Lambda { params, .. } => {
                for (p, _) in params {
                    names.extend(p.bound_names());
                }
            }
            Expr::For { var, .. } => names.push(var.clone()),
            Expr::Match { arms, .. } => {
                for arm in arms {
                    names.extend(arm.pat.bound_names());
                }
            }
            _ => {}
        });
        names
    }

    /// The variable an assignment to this target changes: `x` of `x`, `x.0` or `x[i].f`
    /// (`None` for a target that is not rooted at a variable).
    pub fn assigned_root(&self) -> Option<&str> {
        let mut root = self;
        while let Expr::Field(b, _) | Expr::Index(b, _) = root {
            root = b;
        }
        match root {
            Expr::Var(x) => Some(x),
            _ => None,
        }
    }
}

#[cfg(test)]
mod binding_tests {
    use super::*;

    #[test]
    fn binds_finds_every_kind_of_binding_and_no_mere_use() {
        let uses = Expr::Binary(
            BinOp::Add,
            Box::new(Expr::var("x")),
            Box::new(Expr::var("y")),
        );
        assert!(!uses.binds("x"));
        let in_let = Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::Tuple(vec![Pat::bind("a"), Pat::bind("x")]),
                ty: Type::Infer,
                init: Some(Expr::var("y")),
            }],
            result: Some(Box::new(uses.clone())),
        };
        assert!(in_let.binds("x") && !in_let.binds("y"));
        let in_closure = Expr::Lambda {
            params: vec![(Pat::bind("x"), Type::Infer)],
            body: Box::new(uses.clone()),
        };
        assert!(in_closure.binds("x") && !in_closure.binds("y"));
        // Nested inside another expression.
        let nested = Expr::Tuple(vec![Expr::var("z"), in_closure]);
        assert!(nested.binds("x") && !nested.binds("z"));
    }

    #[test]
    fn an_assignment_target_is_rooted_at_its_variable() {
        let element = Expr::Index(
            Box::new(Expr::Field(Box::new(Expr::var("a")), "0".into())),
            Box::new(Expr::var("k")),
        );
        let field = Expr::Field(Box::new(element), "f".into());
        assert_eq!(field.assigned_root(), Some("a"));
        assert_eq!(Expr::var("x").assigned_root(), Some("x"));
        let call = Expr::Index(
            Box::new(Expr::Tuple(vec![Expr::var("x")])),
            Box::new(Expr::var("k")),
        );
        assert_eq!(call.assigned_root(), None);
    }
}
