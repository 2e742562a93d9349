//! The structure of captured and returned values that debug mode checks: where a value
//! sits inside another (for messages), the tensors a value holds, the tensor rank bound.

use crate::report::violation;
use std::fmt;
use std::sync::OnceLock;

/// Where a value sits inside a captured or returned value, for messages (`xss[3]`,
/// `state.0`). Built on the stack; formatted only when something is wrong.
pub enum ValuePath<'a> {
    /// A named value.
    Root(&'a str),
    /// A field (or tuple element) of a value.
    Field(&'a ValuePath<'a>, &'a str),
    /// An element of a sequence.
    Index(&'a ValuePath<'a>, usize),
}

impl<'a> ValuePath<'a> {
    /// A named value.
    pub fn root(name: &'a str) -> Self {
        ValuePath::Root(name)
    }

    /// A field (or tuple element) of this value.
    pub fn field(&'a self, name: &'a str) -> ValuePath<'a> {
        ValuePath::Field(self, name)
    }

    /// An element of this sequence.
    pub fn index(&'a self, i: usize) -> ValuePath<'a> {
        ValuePath::Index(self, i)
    }
}

impl fmt::Display for ValuePath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValuePath::Root(n) => f.write_str(n),
            ValuePath::Field(p, n) => write!(f, "{p}.{n}"),
            ValuePath::Index(p, i) => write!(f, "{p}[{i}]"),
        }
    }
}

/// A tensor view found in a captured value: how messages name its elements.
#[derive(Clone, Debug)]
pub struct TensorName {
    pub(crate) name: String,
    pub(crate) buffer: usize,
    pub(crate) offset: usize,
    pub(crate) shape: Vec<usize>,
}

/// What structural checks of values collect.
pub struct CheckCtx {
    max_rank: usize,
    pub(crate) tensors: Vec<TensorName>,
}

impl CheckCtx {
    /// A context with the given tensor rank bound.
    pub fn new(max_rank: usize) -> Self {
        CheckCtx {
            max_rank,
            tensors: Vec::new(),
        }
    }

    /// Checks a tensor view's rank and remembers its name.
    pub fn tensor(
        &mut self,
        path: &ValuePath<'_>,
        buffer: usize,
        offset: usize,
        shape: &[usize],
    ) -> Result<(), String> {
        if shape.len() > self.max_rank {
            return Err(rank_message(&path.to_string(), shape, self.max_rank));
        }
        self.tensors.push(TensorName {
            name: path.to_string(),
            buffer,
            offset,
            shape: shape.to_vec(),
        });
        Ok(())
    }
}

pub(crate) fn rank_message(name: &str, shape: &[usize], max: usize) -> String {
    format!(
        "{name} has rank {} (shape {shape:?}), above the tensor rank bound {max} (set ACCEL_MAX_TENSOR_RANK to raise it)",
        shape.len()
    )
}

/// The tensor rank bound: `ACCEL_MAX_TENSOR_RANK`, 3 when unset.
pub fn max_tensor_rank() -> usize {
    static MAX: OnceLock<Result<usize, String>> = OnceLock::new();
    let max = MAX.get_or_init(|| match std::env::var("ACCEL_MAX_TENSOR_RANK") {
        Err(_) => Ok(3),
        Ok(v) => v.parse::<usize>().ok().filter(|&n| n >= 1).ok_or_else(|| {
            format!("ACCEL_MAX_TENSOR_RANK={v:?} is not a rank: give a whole number of at least 1")
        }),
    });
    max.clone().unwrap_or_else(|e| violation("accelerate!", &e))
}
