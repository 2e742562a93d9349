//! Expressions, statements and patterns.

use crate::types::{ScalarType, Type};
use serde::{Deserialize, Serialize};

/// A position in the source file of the item that holds the code (1-based line, 0-based
/// column, as rustc's spans count them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc {
    pub line: u32,
    pub column: u32,
}

/// A literal. Integers keep their magnitude (negation is a [`UnOp::Neg`]) and their suffix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Lit {
    Int(u64, Option<ScalarType>),
    Float(f64, Option<ScalarType>),
    Bool(bool),
}

/// The parallel operations of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ParOp {
    Map,
    Map2,
    Reduce,
    Scan,
    Flatten,
    Create,
    ParallelLoop,
}

impl ParOp {
    /// Every operation.
    pub const ALL: [ParOp; 7] = [
        ParOp::Map,
        ParOp::Map2,
        ParOp::Reduce,
        ParOp::Scan,
        ParOp::Flatten,
        ParOp::Create,
        ParOp::ParallelLoop,
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
            ParOp::Map | ParOp::Create | ParOp::ParallelLoop => 2,
            ParOp::Map2 | ParOp::Reduce | ParOp::Scan => 3,
        }
    }

    /// The index of the argument that is a function (`None` for `flatten`).
    pub fn fn_arg(self) -> Option<usize> {
        match self {
            ParOp::Flatten => None,
            ParOp::Create | ParOp::ParallelLoop => Some(1),
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
    Neg,
    Not,
}

/// Binary operators. Compound assignments are desugared into [`Expr::Assign`] of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
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
    Wild,
    Bind {
        name: String,
        mutable: bool,
    },
    Tuple(Vec<Pat>),
    /// A record pattern; `rest` is true for `..`.
    Record {
        name: String,
        fields: Vec<(String, Pat)>,
        rest: bool,
    },
    /// A literal, possibly negated.
    Lit {
        negative: bool,
        lit: Lit,
    },
    /// A named constant (`i32::MIN`), as a range bound.
    Const(String),
    /// `lo..=hi` (inclusive) or `lo..hi`.
    Range {
        lo: Box<Pat>,
        hi: Box<Pat>,
        inclusive: bool,
    },
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
    Let {
        pat: Pat,
        ty: Type,
        init: Option<Expr>,
    },
    Expr(Expr),
}

/// One arm of a `match`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchArm {
    pub pat: Pat,
    pub guard: Option<Expr>,
    pub body: Expr,
}

/// An expression. References and dereferences of the source are dropped: ownership is a
/// marshaling concern, never visible to accelerated code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    Lit(Lit),
    /// A local variable (a parameter, a `let`, or a captured local of the site).
    Var(String),
    /// An `#[accel]` function used as a value (for example `add` in `reduce(add, 0, &v)`).
    FnRef(String),
    /// A Rust constant: `f32::MAX`, `std::f64::consts::PI`, a user `const N`.
    Const(String),
    /// A tuple; the empty tuple is `()`.
    Tuple(Vec<Expr>),
    Array(Vec<Expr>),
    /// `[value; count]`.
    ArrayRepeat(Box<Expr>, Box<Expr>),
    /// A sequence literal, `vec![a, b, c]`.
    Seq(Vec<Expr>),
    /// `vec![value; count]`.
    SeqRepeat(Box<Expr>, Box<Expr>),
    /// The elements `lo..hi` of a sequence, `&xs[lo..hi]` (a view, no copy).
    Slice {
        seq: Box<Expr>,
        lo: Box<Expr>,
        hi: Box<Expr>,
    },
    Record {
        name: String,
        fields: Vec<(String, Expr)>,
    },
    /// Field access; tuple fields are named `0`, `1`, ….
    Field(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, Type),
    /// A call of an `#[accel]` function.
    Call {
        func: String,
        args: Vec<Expr>,
        loc: Loc,
    },
    /// A call of a function value (a parameter of a function that takes a function).
    Apply {
        func: Box<Expr>,
        args: Vec<Expr>,
    },
    /// A parallel operation.
    Par {
        op: ParOp,
        args: Vec<Expr>,
        loc: Loc,
    },
    /// A method of the supported set (`x.sqrt()`, `xs.len()`, `t.get(i)`, `t.set(i, v)`, …).
    Method {
        recv: Box<Expr>,
        method: String,
        args: Vec<Expr>,
    },
    /// An associated function of the supported set (`Tensor::zeros(s)`, `f32::max(a, b)`).
    Assoc {
        ty: String,
        func: String,
        args: Vec<Expr>,
    },
    Lambda {
        params: Vec<(Pat, Type)>,
        body: Box<Expr>,
    },
    /// A lifted closure: the function `func` partially applied to the captured values
    /// `env` (the paper's lambda lifting turns every `Lambda` into one of these).
    Closure {
        func: String,
        env: Vec<Expr>,
    },
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        els: Option<Box<Expr>>,
    },
    Match {
        scrutinee: Box<Expr>,
        arms: Vec<MatchArm>,
    },
    Block {
        stmts: Vec<Stmt>,
        result: Option<Box<Expr>>,
    },
    /// Assignment to a mutable local, or to a field or element of one.
    Assign {
        target: Box<Expr>,
        value: Box<Expr>,
    },
    /// `for var in lo..hi { body }` (sequential).
    For {
        var: String,
        lo: Box<Expr>,
        hi: Box<Expr>,
        body: Box<Expr>,
    },
    While {
        cond: Box<Expr>,
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
}
