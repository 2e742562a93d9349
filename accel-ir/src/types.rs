//! Types of accelerated code.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;

/// A scalar element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScalarType {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `usize`.
    Usize,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `bool`.
    Bool,
}

impl ScalarType {
    /// Every scalar type, in declaration order.
    pub const ALL: [ScalarType; 12] = [
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::Usize,
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::Bool,
    ];

    /// The Rust spelling of the type (`"f32"`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::Usize => "usize",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::Bool => "bool",
        }
    }

    /// Parses a Rust scalar type name.
    pub fn from_name(name: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether the type is `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }

    /// Whether the type is a signed integer.
    pub fn is_signed_int(self) -> bool {
        matches!(
            self,
            ScalarType::I8 | ScalarType::I16 | ScalarType::I32 | ScalarType::I64
        )
    }

    /// Whether the type is an integer narrower than 32 bits (`i8 i16 u8 u16`). Every
    /// backend computes these in 32-bit registers, as C's integer promotion does, and
    /// wraps each result back to the type's width.
    pub fn is_small_int(self) -> bool {
        matches!(
            self,
            ScalarType::I8 | ScalarType::I16 | ScalarType::U8 | ScalarType::U16
        )
    }

    /// The width of a value in bits (`bool`: 8, its width in memory).
    ///
    /// ```
    /// use accel_ir::ScalarType;
    /// assert_eq!(ScalarType::U16.bits(), 16);
    /// assert_eq!(ScalarType::Usize.bits(), 64);
    /// ```
    pub fn bits(self) -> u32 {
        match self {
            ScalarType::I8 | ScalarType::U8 | ScalarType::Bool => 8,
            ScalarType::I16 | ScalarType::U16 => 16,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 32,
            ScalarType::I64 | ScalarType::U64 | ScalarType::Usize | ScalarType::F64 => 64,
        }
    }

    /// The least and greatest values of an integer type (none for floats and `bool`).
    ///
    /// ```
    /// use accel_ir::ScalarType;
    /// assert_eq!(ScalarType::I8.int_range(), Some((-128, 127)));
    /// assert_eq!(ScalarType::U16.int_range(), Some((0, 65535)));
    /// ```
    pub fn int_range(self) -> Option<(i128, i128)> {
        if self.is_float() || self == ScalarType::Bool {
            return None;
        }
        let bits = self.bits();
        Some(if self.is_signed_int() {
            (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        } else {
            (0, (1 << bits) - 1)
        })
    }

    /// The unsigned integer type of the same width (`abs_diff`'s result); other types
    /// are their own.
    ///
    /// ```
    /// use accel_ir::ScalarType;
    /// assert_eq!(ScalarType::I8.unsigned(), ScalarType::U8);
    /// assert_eq!(ScalarType::F32.unsigned(), ScalarType::F32);
    /// ```
    pub fn unsigned(self) -> ScalarType {
        match self {
            ScalarType::I8 => ScalarType::U8,
            ScalarType::I16 => ScalarType::U16,
            ScalarType::I32 => ScalarType::U32,
            ScalarType::I64 => ScalarType::U64,
            other => other,
        }
    }

    /// The width of a value in bytes.
    pub fn bytes(self) -> u32 {
        self.bits() / 8
    }

    /// `v`, the value of an integer of this type held in 64 bits (its low bits are the
    /// value), wrapped to the type's width and extended as its signedness says: what a
    /// 64-bit computation of the type's operation gives once truncated.
    ///
    /// ```
    /// use accel_ir::ScalarType;
    /// assert_eq!(ScalarType::U8.wrap(300), 44);
    /// assert_eq!(ScalarType::I8.wrap(200), (-56i64) as u64);
    /// ```
    pub fn wrap(self, v: u64) -> u64 {
        let bits = self.bits();
        if bits == 64 || self.is_float() || self == ScalarType::Bool {
            return v;
        }
        let shift = 64 - bits;
        if self.is_signed_int() {
            (((v << shift) as i64) >> shift) as u64
        } else {
            (v << shift) >> shift
        }
    }
}

/// The type of a value in accelerated code.
///
/// `Seq` covers every sequence argument form (`Vec<T>`, `&Vec<T>`, `&[T]`): they differ in
/// ownership only, which accelerated code never observes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Type {
    /// A scalar.
    Scalar(ScalarType),
    /// `()`.
    Unit,
    /// A tuple.
    Tuple(Vec<Type>),
    /// `[T; N]`.
    Array(Box<Type>, usize),
    /// An immutable sequence.
    Seq(Box<Type>),
    /// A mutable n-dimensional tensor handle of the given element type.
    Tensor(Box<Type>),
    /// A `#[derive(Accel)]` record: its name and its fields in declaration order.
    Record(String, Vec<(String, Type)>),
    /// A named record whose fields are not known at this point (a type written in a
    /// signature; the runtime fills in the fields from the `Accel` impl).
    Named(String),
    /// A function type (parameters of user functions that take a function).
    Fn(Vec<Type>, Box<Type>),
    /// A type left for inference.
    Infer,
}

/// The records a program knows, by name: their fields in declaration order.
pub type Records = HashMap<String, Vec<(String, Type)>>;

impl Type {
    /// Whether values of this type are functions.
    pub fn is_fn(&self) -> bool {
        matches!(self, Type::Fn(..))
    }

    /// The parts of a tuple, record or array type, in order (none for other types).
    ///
    /// ```
    /// use accel_ir::{ScalarType, Type};
    /// let t = Type::Array(Box::new(Type::Scalar(ScalarType::F32)), 2);
    /// assert_eq!(t.parts(), vec![Type::Scalar(ScalarType::F32); 2]);
    /// ```
    pub fn parts(&self) -> Vec<Type> {
        match self {
            Type::Tuple(ts) => ts.clone(),
            Type::Record(_, fs) => fs.iter().map(|(_, t)| t.clone()).collect(),
            Type::Array(e, n) => vec![(**e).clone(); *n],
            _ => vec![],
        }
    }

    /// The type of field `f` (a record field, or a tuple or array element by position) and
    /// its offset in the flat list of words of a value of this type, where a value of type
    /// `u` has `word_count(u)` words (each backend counts its own words).
    pub fn field_offset(
        &self,
        f: &str,
        word_count: impl Fn(&Type) -> Result<usize, String>,
    ) -> Result<(Type, usize), String> {
        let named: Vec<(String, Type)> = match self {
            Type::Record(_, fs) => fs.clone(),
            Type::Tuple(_) | Type::Array(..) => self
                .parts()
                .into_iter()
                .enumerate()
                .map(|(k, t)| (k.to_string(), t))
                .collect(),
            t => return Err(format!("`.{f}` of a value of type {t}")),
        };
        let mut off = 0;
        for (name, ft) in named {
            if name == f {
                return Ok((ft, off));
            }
            off += word_count(&ft)?;
        }
        Err(format!("no field `{f}` in {self}"))
    }

    /// The type of field `f` (a record field, or a tuple or array element by position).
    pub fn field_type(&self, f: &str) -> Result<Type, String> {
        self.field_offset(f, |_| Ok(0)).map(|(t, _)| t)
    }

    /// Adds the records that appear in this type to `out`.
    pub fn learn_records(&self, out: &mut Records) {
        match self {
            Type::Record(n, fs) => {
                out.insert(n.clone(), fs.clone());
                fs.iter().for_each(|(_, t)| t.learn_records(out));
            }
            Type::Tuple(ts) => ts.iter().for_each(|t| t.learn_records(out)),
            Type::Array(t, _) | Type::Seq(t) | Type::Tensor(t) => t.learn_records(out),
            _ => {}
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(s) => f.write_str(s.name()),
            Type::Unit => f.write_str("()"),
            Type::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                if ts.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            Type::Array(t, n) => write!(f, "[{t}; {n}]"),
            Type::Seq(t) => write!(f, "[{t}]"),
            Type::Tensor(t) => write!(f, "Tensor<{t}>"),
            Type::Record(name, fields) => {
                write!(f, "{name} {{")?;
                for (i, (n, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, " {n}: {t}")?;
                }
                f.write_str(" }")
            }
            Type::Named(name) => f.write_str(name),
            Type::Fn(ps, r) => {
                f.write_str("fn(")?;
                for (i, t) in ps.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ") -> {r}")
            }
            Type::Infer => f.write_str("_"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_types_as_rust_like_text() {
        let t = Type::Tuple(vec![
            Type::Seq(Box::new(Type::Scalar(ScalarType::F32))),
            Type::Array(Box::new(Type::Scalar(ScalarType::I64)), 3),
        ]);
        assert_eq!(t.to_string(), "([f32], [i64; 3])");
        assert_eq!(Type::Tuple(vec![Type::Unit]).to_string(), "((),)");
        assert_eq!(
            Type::Fn(vec![Type::Scalar(ScalarType::Usize)], Box::new(Type::Unit)).to_string(),
            "fn(usize) -> ()"
        );
    }

    #[test]
    fn scalar_names_round_trip() {
        for s in ScalarType::ALL {
            assert_eq!(ScalarType::from_name(s.name()), Some(s));
        }
        assert_eq!(ScalarType::from_name("String"), None);
    }
}
