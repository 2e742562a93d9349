//! The types generated programs use, and what the generator knows about a value of each.

/// A scalar type: accel's own.
pub use accel_ir::ScalarType as S;

/// Every integer type, and every number type (the 64- and 32-bit ones first: choices
/// that are lowered while reducing a failing program move towards them).
#[rustfmt::skip]
pub const INTS: [S; 9] = [S::I64, S::I32, S::U32, S::U64, S::Usize, S::U8, S::I16, S::I8, S::U16];
#[rustfmt::skip]
pub const NUMBERS: [S; 11] = [
    S::I64, S::F64, S::I32, S::F32, S::U32, S::U64, S::Usize, S::U8, S::I16, S::I8, S::U16,
];

/// What the generator asks of a scalar type beyond what accel-ir's gives.
pub trait ScalarKind {
    fn is_int(&self) -> bool;
    fn signed(&self) -> bool;
}

impl ScalarKind for S {
    fn is_int(&self) -> bool {
        !self.is_float() && *self != S::Bool
    }
    fn signed(&self) -> bool {
        self.is_signed_int()
    }
}

/// The records every generated crate declares (`#[derive(Accel)]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rec {
    /// `Pt { x: f64, n: i64 }`
    Pt,
    /// `Px { a: f32, k: u32, on: bool }`
    Px,
}

impl Rec {
    pub fn name(self) -> &'static str {
        match self {
            Rec::Pt => "Pt",
            Rec::Px => "Px",
        }
    }
    pub fn fields(self) -> &'static [(&'static str, S)] {
        match self {
            Rec::Pt => &[("x", S::F64), ("n", S::I64)],
            Rec::Px => &[("a", S::F32), ("k", S::U32), ("on", S::Bool)],
        }
    }
}

/// Declarations of the records, for the generated crate (the regression tests `include!`
/// the same file).
pub const RECORDS: &str = include_str!("../../harness/records.rs");

/// A type: scalars, pairs of scalars, records and sequences of them.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    S(S),
    Pair(S, S),
    Rec(Rec),
    Seq(Box<Ty>),
}

impl Ty {
    pub fn seq(elem: Ty) -> Ty {
        Ty::Seq(Box::new(elem))
    }
    pub fn rust(&self) -> String {
        match self {
            Ty::S(s) => s.name().to_string(),
            Ty::Pair(a, b) => format!("({}, {})", a.name(), b.name()),
            Ty::Rec(r) => r.name().to_string(),
            Ty::Seq(e) => format!("Vec<{}>", e.rust()),
        }
    }
    /// The fields of an element (a scalar is its own single field `""`).
    pub fn fields(&self) -> Vec<(String, S)> {
        match self {
            Ty::S(s) => vec![(String::new(), *s)],
            Ty::Pair(a, b) => vec![(".0".into(), *a), (".1".into(), *b)],
            Ty::Rec(r) => r
                .fields()
                .iter()
                .map(|(n, s)| (format!(".{n}"), *s))
                .collect(),
            Ty::Seq(_) => vec![],
        }
    }
}

/// What the generator knows of a float value, so that results compare exactly where they
/// must: `det` values are bitwise the same in every backend (IEEE-rounded operations on
/// such values), `exact` ones are small multiples of 1/4 that sums of up to 4096 of them
/// represent exactly (so a parallel sum equals the sequential one), and `mag` bounds the
/// magnitude (so a reordered sum's rounding stays inside the comparison's tolerance).
/// Integers and booleans are always `det` and `exact`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Props {
    pub det: bool,
    pub exact: bool,
    pub mag: f64,
}

impl Props {
    pub const EXACT: Props = Props {
        det: true,
        exact: true,
        mag: 64.0,
    };
    pub fn join(self, other: Props) -> Props {
        Props {
            det: self.det && other.det,
            exact: self.exact && other.exact,
            mag: self.mag.max(other.mag),
        }
    }
}

/// A generated expression.
#[derive(Clone, Debug)]
pub struct E {
    pub code: String,
    pub props: Props,
}

impl E {
    pub fn new(code: impl Into<String>, props: Props) -> E {
        E {
            code: code.into(),
            props,
        }
    }
}

/// A variable in scope, with what is known of its (element) values.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub ty: Ty,
    pub props: Props,
    /// Bound inside a closure (an element, an index, a row, a local of an element's code),
    /// as opposed to captured by the site or bound at its top level.
    pub local: bool,
}

impl Var {
    /// A variable bound inside a closure.
    pub fn local(name: impl Into<String>, ty: Ty, props: Props) -> Var {
        Var {
            name: name.into(),
            ty,
            props,
            local: true,
        }
    }
    /// A variable of the site: captured, or bound at its top level.
    pub fn site(name: impl Into<String>, ty: Ty, props: Props) -> Var {
        Var {
            name: name.into(),
            ty,
            props,
            local: false,
        }
    }
}

/// Whether code in `env` runs once per element (inside a closure).
pub fn in_element(env: &[Var]) -> bool {
    env.iter().any(|v| v.local)
}
