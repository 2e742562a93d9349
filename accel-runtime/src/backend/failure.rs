//! How compiled code fails: every backend reports the same kinds (by their codes, at the
//! ABI), with two words of detail, and the runtime describes them the same way.

/// What went wrong in compiled code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FailureKind {
    /// An index out of bounds: `a` the index, `b` the length.
    Index = 1,
    /// An integer division by zero.
    DivZero = 2,
    /// `MIN / -1`.
    DivOverflow = 3,
    /// An allocation of `a` bytes failed (`a` = `u64::MAX`: `b` elements whose size passes
    /// `isize::MAX` bytes, or with `b` = 0 a tensor's shape whose product passes 64 bits).
    Alloc = 4,
    /// A tensor index of `a` coordinates into a tensor of rank `b`.
    Rank = 5,
    /// Slice bounds `a..b` out of range.
    Slice = 6,
    /// `map2` inputs of lengths `a` and `b`.
    Lengths = 7,
    /// Rows of lengths `a` (row 0) and `b` in a produced sequence of sequences.
    Irregular = 8,
    /// A row operator that changed the row length from `a` to `b`.
    RowLength = 9,
    /// `reduce_by_index` with `a` indices and `b` values.
    HistogramLengths = 10,
    /// `scatter` with `a` indices and `b` values.
    ScatterLengths = 11,
    /// `x.clamp(min, max)` with `min > max` (or, for floats, a NaN bound): Rust's
    /// assertion.
    ClampBounds = 12,
    /// `chunks(k)` (`a` = 0) or `windows(k)` (`a` = 1) with `k == 0`: Rust's assertion.
    ZeroSize = 13,
    /// `Tensor::from_vec` of `a` elements for a shape of `b` elements.
    TensorFill = 14,
    /// A tensor of rank `a` created where compiled code holds rank `b` at most.
    TensorRank = 15,
    /// A `match` found no arm (Rust's exhaustiveness check makes this unreachable).
    NoArm = 99,
}

impl FailureKind {
    /// Every kind.
    pub const ALL: [FailureKind; 16] = [
        FailureKind::Index,
        FailureKind::DivZero,
        FailureKind::DivOverflow,
        FailureKind::Alloc,
        FailureKind::Rank,
        FailureKind::Slice,
        FailureKind::Lengths,
        FailureKind::Irregular,
        FailureKind::RowLength,
        FailureKind::HistogramLengths,
        FailureKind::ScatterLengths,
        FailureKind::ClampBounds,
        FailureKind::ZeroSize,
        FailureKind::TensorFill,
        FailureKind::TensorRank,
        FailureKind::NoArm,
    ];

    /// The code compiled code reports the kind by.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The kind a code stands for.
    pub fn from_code(code: u32) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// The first failure a compiled run reported: its kind's code and two words of detail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Failure {
    /// The kind's code ([`FailureKind::code`]).
    pub code: u32,
    /// The first detail word.
    pub a: u64,
    /// The second detail word.
    pub b: u64,
}

impl Failure {
    /// A failure of a known kind.
    pub fn new(kind: FailureKind, a: u64, b: u64) -> Failure {
        Failure {
            code: kind.code(),
            a,
            b,
        }
    }

    /// What went wrong, in words.
    ///
    /// ```
    /// use accel_runtime::__private::failure::{Failure, FailureKind};
    /// assert_eq!(
    ///     Failure::new(FailureKind::Index, 7, 3).describe(),
    ///     "index out of bounds: the len is 3 but the index is 7"
    /// );
    /// ```
    pub fn describe(&self) -> String {
        let (a, b) = (self.a, self.b);
        match FailureKind::from_code(self.code) {
            Some(FailureKind::Index) => {
                format!("index out of bounds: the len is {b} but the index is {a}")
            }
            Some(FailureKind::DivZero) => "attempt to divide by zero".into(),
            Some(FailureKind::DivOverflow) => "attempt to divide with overflow".into(),
            // A tensor's shape whose product passes 64 bits (see the CPU's `tensors`; no
            // count of zero elements passes `isize::MAX` bytes).
            Some(FailureKind::Alloc) if a == u64::MAX && b == 0 => {
                "could not allocate a tensor: its shape has more elements than memory can hold"
                    .into()
            }
            // An element count whose bytes pass `isize::MAX` (see the CPU's `bytes_of`).
            Some(FailureKind::Alloc) if a == u64::MAX => format!(
                "could not allocate {b} elements: their size passes isize::MAX bytes"
            ),
            Some(FailureKind::Alloc) => format!("could not allocate {a} bytes"),
            Some(FailureKind::Rank) => {
                format!("a tensor index has {a} coordinates, but the tensor has rank {b}")
            }
            Some(FailureKind::Slice) => format!("slice bounds {a}..{b} are out of range"),
            Some(FailureKind::Lengths) => format!("map2 lengths differ: {a} vs {b}"),
            Some(FailureKind::Irregular) => format!(
                "a produced sequence of sequences is irregular: row 0 has {a} elements, another row {b}"
            ),
            Some(FailureKind::RowLength) => format!(
                "a reduce or scan over rows changed the row length: the neutral element has {a} elements, a combined row {b}"
            ),
            Some(FailureKind::HistogramLengths) => {
                format!("reduce_by_index lengths differ: {a} indices vs {b} values")
            }
            Some(FailureKind::ScatterLengths) => {
                format!("scatter lengths differ: {a} indices vs {b} values")
            }
            Some(FailureKind::ClampBounds) => {
                "`clamp` called with min > max, or a NaN bound".into()
            }
            // Rust's words (`slice::chunks`, `slice::windows`).
            Some(FailureKind::ZeroSize) if a == 1 => "window size must be non-zero".into(),
            Some(FailureKind::ZeroSize) => "chunk size must be non-zero".into(),
            // The words of `Tensor::from_vec`'s own check (`tensor.rs`).
            Some(FailureKind::TensorFill) => format!(
                "Tensor::from_vec: {a} elements do not fill a shape of {b} elements"
            ),
            Some(FailureKind::TensorRank) => format!(
                "a tensor created here has rank {a}, above the rank compiled code holds ({b})"
            ),
            Some(FailureKind::NoArm) | None => {
                format!("compiled code failed (kind {})", self.code)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_codes_are_described() {
        for k in FailureKind::ALL {
            assert_eq!(FailureKind::from_code(k.code()), Some(k));
        }
        assert_eq!(
            Failure {
                code: 42,
                a: 0,
                b: 0
            }
            .describe(),
            "compiled code failed (kind 42)"
        );
    }
}
