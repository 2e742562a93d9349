//! The types accelerated code accepts: their IR types, and what debug mode needs of their
//! values (printing, tolerant comparison, structural checks).

use crate::backend::abi::{advise_huge_pages, take_column, Marshal, ScalarWord, Unmarshal};
use crate::structure::{CheckCtx, ValuePath};
use accel_ir::{ScalarType, Type};

mod columns;
pub(crate) mod in_place;
pub(crate) mod rows;

pub use columns::marshal_part;

/// A Rust type that accelerated code can take, return and capture. Implemented for the
/// scalars `i8 i16 i32 i64 u8 u16 u32 u64 usize f32 f64 bool`, tuples, `[T; N]`,
/// sequences (`Vec<T>`, `&[T]`), [`Tensor`](crate::Tensor), and structs with
/// `#[derive(Accel)]`.
///
/// ```
/// use accel_runtime::prelude::*;
/// #[derive(Accel, Clone, Copy)]
/// struct Body { pos: [f32; 3], mass: f32 }
/// assert_eq!(<Vec<Body>>::accel_type().to_string(), "[Body { pos: [f32; 3], mass: f32 }]");
/// let mut s = String::new();
/// Body { pos: [1.0, 2.0, 3.0], mass: 0.5 }.write_value(&mut s);
/// assert_eq!(s, "Body { pos: [1.0, 2.0, 3.0], mass: 0.5 }");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used in accelerated code",
    label = "not an accel type",
    note = "accelerated code handles i8 i16 i32 i64 u8 u16 u32 u64 usize f32 f64 bool, tuples, [T; N], sequences \
            (Vec<T>, &[T]), Tensor<T> and structs with #[derive(Accel)]; to pass an #[accel] function \
            to another function, wrap it in a closure: `|x| f(x)`"
)]
pub trait Accel: Send + Sync {
    /// Whether values may hold sequences or tensors, which [`check`](Accel::check) inspects.
    #[doc(hidden)]
    const NESTED: bool;

    /// The IR type of values of this type.
    fn accel_type() -> Type;

    /// Writes the value as Rust would print it, for debug-mode messages.
    fn write_value(&self, out: &mut String);

    /// Whether `self` equals `other`: exactly for integers and booleans; for floats within
    /// a relative tolerance (1e-4 for `f32`, 1e-9 for `f64`) of the largest magnitude among
    /// the two and the corresponding parts of `inputs`, so that rounding alone is not a
    /// difference.
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool;

    /// Checks the value's structure: nested sequences are regular, tensors are within the
    /// rank bound (and are remembered, to name them in messages).
    #[doc(hidden)]
    fn check(&self, _path: &ValuePath<'_>, _ctx: &mut CheckCtx) -> Result<(), String> {
        Ok(())
    }

    /// The length, when the value is a sequence.
    #[doc(hidden)]
    fn seq_len(&self) -> Option<usize> {
        None
    }

    /// How many elements the value sizes a site's work by: a sequence's length, an
    /// integer's value (a `create(n, ..)`'s size), a tensor's elements; 0 for other values.
    /// The default mode's choice of device keeps calls of different sizes apart by it
    /// (see `dispatch::device_choice`).
    #[doc(hidden)]
    fn size_hint(&self) -> usize {
        self.seq_len().unwrap_or(0)
    }

    /// Whether a site returning this type takes a sequence result in rows (see
    /// `layout::row_leaves`): a `Vec`'s, which reads them.
    #[doc(hidden)]
    fn takes_rows() -> bool
    where
        Self: Sized,
    {
        false
    }

    /// Appends the byte offset in Rust's layout of each of the value's scalars, in the
    /// order of its columns, the value being at `at`; `false` where the type cannot say
    /// (then its rows are read scalar by scalar, see `rows`).
    #[doc(hidden)]
    fn leaf_offsets(_at: usize, _out: &mut Vec<usize>) -> bool
    where
        Self: Sized,
    {
        false
    }

    /// The ranks the value is spread over, when it is a distributed sequence (which only a
    /// distributed site runs).
    #[doc(hidden)]
    fn distributed_over(&self) -> Option<std::sync::Arc<dyn crate::comm::Communicator>> {
        None
    }

    /// For a sequence whose elements compiled code can read where they lie (see
    /// `in_place`): the bytes from one element to the next, and each scalar's offset in
    /// an element; 0 and none for any other value.
    #[doc(hidden)]
    fn row_layout(&self) -> (usize, Vec<usize>) {
        (0, Vec::new())
    }

    /// A copy of the value (tensors: another handle to the same memory).
    #[doc(hidden)]
    fn clone_value(&self) -> Self
    where
        Self: Sized;

    /// Appends the value's words for compiled code (see `cpu::abi`).
    #[doc(hidden)]
    fn marshal<'a>(&'a self, m: &mut Marshal<'a>);

    /// Appends the columns of a sequence of values (structure of arrays).
    #[doc(hidden)]
    fn marshal_columns<'m>(xs: &[Self], m: &mut Marshal<'m>)
    where
        Self: Sized + 'm;

    /// Reads a value from compiled code's words.
    #[doc(hidden)]
    fn unmarshal(u: &mut Unmarshal<'_>) -> Result<Self, String>
    where
        Self: Sized;

    /// Reads `len` values from columns.
    #[doc(hidden)]
    fn unmarshal_columns(len: usize, u: &mut Unmarshal<'_>) -> Result<Vec<Self>, String>
    where
        Self: Sized;
}

/// Values at least this many are assembled from their columns in parallel.
const PARALLEL_ASSEMBLY: usize = 1 << 15;

/// Assembles `len` values, `part(k)` building value `k` from the `k`-th element of each of
/// its parts' columns (structure of arrays back to Rust's layout). Long results are built
/// in parallel, in place: a result of millions of tuples is otherwise a single-threaded
/// pass as slow as the kernel that computed it.
pub fn assemble<T: Send>(len: usize, part: impl Fn(usize) -> T + Sync) -> Vec<T> {
    use rayon::prelude::*;
    if len < PARALLEL_ASSEMBLY {
        (0..len).map(part).collect()
    } else {
        let mut out = Vec::with_capacity(len);
        advise_huge_pages(out.as_mut_ptr() as *mut u8, len * std::mem::size_of::<T>());
        (0..len)
            .into_par_iter()
            .with_min_len(PARALLEL_ASSEMBLY / 4)
            .map(&part)
            .collect_into_vec(&mut out);
        out
    }
}

/// The error for columns shorter than the result (a bug in a backend, reported rather
/// than read past).
pub fn short_column() -> String {
    "a result column shorter than its sequence".to_string()
}

macro_rules! int {
    ($($t:ty => $s:ident),*) => {$(
        impl Accel for $t {
            const NESTED: bool = false;
            fn accel_type() -> Type {
                Type::Scalar(ScalarType::$s)
            }
            fn write_value(&self, out: &mut String) {
                out.push_str(&self.to_string());
            }
            fn close_to(&self, other: &Self, _: &[&Self]) -> bool {
                self == other
            }
            fn size_hint(&self) -> usize {
                usize::try_from(*self).unwrap_or(0)
            }
            scalar_abi!();
        }
    )*};
}

/// The compiled-code methods of scalar types: one word; columns by pointer, never copied.
macro_rules! scalar_abi {
    () => {
        fn clone_value(&self) -> Self {
            *self
        }
        fn leaf_offsets(at: usize, out: &mut Vec<usize>) -> bool {
            out.push(at);
            true
        }
        fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
            m.push(self.to_word());
            m.bytes += std::mem::size_of::<Self>();
        }
        fn marshal_columns<'m>(xs: &[Self], m: &mut Marshal<'m>)
        where
            Self: 'm,
        {
            m.push(xs.as_ptr() as u64);
            m.bytes += std::mem::size_of_val(xs);
        }
        fn unmarshal(u: &mut Unmarshal<'_>) -> Result<Self, String> {
            Ok(Self::from_word(u.word()?))
        }
        fn unmarshal_columns(len: usize, u: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
            take_column::<Self>(u, len)
        }
    };
}

int!(
    i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    usize => Usize, bool => Bool
);

macro_rules! float {
    ($($t:ty => $s:ident, $tol:expr),*) => {$(
        impl Accel for $t {
            const NESTED: bool = false;
            fn accel_type() -> Type {
                Type::Scalar(ScalarType::$s)
            }
            fn write_value(&self, out: &mut String) {
                out.push_str(&format!("{self:?}"));
            }
            fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
                if self == other || (self.is_nan() && other.is_nan()) {
                    return true;
                }
                let scale = inputs.iter().fold(self.abs().max(other.abs()), |m, x| m.max(x.abs()));
                (self - other).abs() <= $tol * scale
            }
            scalar_abi!();
        }
    )*};
}
float!(f32 => F32, 1e-4, f64 => F64, 1e-9);

impl Accel for () {
    const NESTED: bool = false;
    fn accel_type() -> Type {
        Type::Unit
    }
    fn write_value(&self, out: &mut String) {
        out.push_str("()");
    }
    fn close_to(&self, _: &Self, _: &[&Self]) -> bool {
        true
    }
    fn clone_value(&self) -> Self {}
    fn marshal<'a>(&'a self, _: &mut Marshal<'a>) {}
    fn marshal_columns<'m>(_: &[Self], _: &mut Marshal<'m>)
    where
        Self: 'm,
    {
    }
    fn unmarshal(_: &mut Unmarshal<'_>) -> Result<Self, String> {
        Ok(())
    }
    fn unmarshal_columns(len: usize, _: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
        Ok(vec![(); len])
    }
}

macro_rules! tuple {
    ($($n:ident $i:tt),+) => {
        impl<$($n: Accel),+> Accel for ($($n,)+) {
            const NESTED: bool = $($n::NESTED)||+;
            fn accel_type() -> Type {
                Type::Tuple(vec![$($n::accel_type()),+])
            }
            fn write_value(&self, out: &mut String) {
                out.push('(');
                $(
                    if $i > 0 {
                        out.push_str(", ");
                    }
                    self.$i.write_value(out);
                )+
                out.push(')');
            }
            fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
                $(self.$i.close_to(&other.$i, &inputs.iter().map(|x| &x.$i).collect::<Vec<_>>()))&&+
            }
            fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
                $(
                    if $n::NESTED {
                        self.$i.check(&path.field(stringify!($i)), ctx)?;
                    }
                )+
                Ok(())
            }
            fn clone_value(&self) -> Self {
                ($(self.$i.clone_value(),)+)
            }
            fn leaf_offsets(at: usize, out: &mut Vec<usize>) -> bool {
                $($n::leaf_offsets(at + std::mem::offset_of!(Self, $i), out))&&+
            }
            fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
                $(self.$i.marshal(m);)+
            }
            fn marshal_columns<'m>(xs: &[Self], m: &mut Marshal<'m>)
        where
            Self: 'm,
        {
                $(marshal_part(xs, |x| x.$i.clone_value(), m);)+
            }
            fn unmarshal(u: &mut Unmarshal<'_>) -> Result<Self, String> {
                Ok(($($n::unmarshal(u)?,)+))
            }
            #[allow(non_snake_case)]
            fn unmarshal_columns(len: usize, u: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
                $(let $n = $n::unmarshal_columns(len, u)?;)+
                if $($n.len() < len)||+ {
                    return Err(short_column());
                }
                if Self::NESTED {
                    // Sequences move out of their columns rather than being copied.
                    $(let mut $n = $n.into_iter();)+
                    let mut out = Vec::with_capacity(len);
                    while let ($(Some($n),)+) = ($($n.next(),)+) {
                        out.push(($($n,)+));
                    }
                    Ok(out)
                } else {
                    Ok(assemble(len, |k| ($($n[k].clone_value(),)+)))
                }
            }
        }
    };
}
tuple!(A 0);
tuple!(A 0, B 1);
tuple!(A 0, B 1, C 2);
tuple!(A 0, B 1, C 2, D 3);
tuple!(A 0, B 1, C 2, D 3, E 4);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// Elementwise helpers shared by arrays, vectors and slices.
pub(crate) fn write_elems<T: Accel>(xs: &[T], out: &mut String) {
    out.push('[');
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        x.write_value(out);
    }
    out.push(']');
}

fn close_elems<T: Accel>(xs: &[T], ys: &[T], inputs: &[&[T]]) -> bool {
    xs.len() == ys.len()
        && xs.iter().zip(ys).enumerate().all(|(i, (x, y))| {
            let parts: Vec<&T> = inputs.iter().filter_map(|s| s.get(i)).collect();
            x.close_to(y, &parts)
        })
}

/// Checks the elements; for sequences of sequences, also that all rows have one length.
fn check_elems<T: Accel>(xs: &[T], path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
    if !T::NESTED {
        return Ok(());
    }
    let width = xs.first().and_then(Accel::seq_len);
    for (i, x) in xs.iter().enumerate() {
        if let (Some(w), Some(len)) = (width, x.seq_len()) {
            if len != w {
                return Err(format!(
                    "{path} is irregular: row 0 has {w} elements, row {i} has {len}"
                ));
            }
        }
        x.check(&path.index(i), ctx)?;
    }
    Ok(())
}

impl<T: Accel, const N: usize> Accel for [T; N] {
    const NESTED: bool = T::NESTED;
    fn accel_type() -> Type {
        Type::Array(Box::new(T::accel_type()), N)
    }
    fn write_value(&self, out: &mut String) {
        write_elems(self, out)
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        close_elems(
            self,
            other,
            &inputs.iter().map(|x| &x[..]).collect::<Vec<_>>(),
        )
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        check_elems(self, path, ctx)
    }
    fn clone_value(&self) -> Self {
        std::array::from_fn(|k| self[k].clone_value())
    }
    fn leaf_offsets(at: usize, out: &mut Vec<usize>) -> bool {
        (0..N).all(|k| T::leaf_offsets(at + k * std::mem::size_of::<T>(), out))
    }
    fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
        self.iter().for_each(|x| x.marshal(m));
    }
    fn marshal_columns<'m>(xs: &[Self], m: &mut Marshal<'m>)
    where
        Self: 'm,
    {
        for k in 0..N {
            marshal_part(xs, |x| x[k].clone_value(), m);
        }
    }
    fn unmarshal(u: &mut Unmarshal<'_>) -> Result<Self, String> {
        let parts = (0..N)
            .map(|_| T::unmarshal(u))
            .collect::<Result<Vec<T>, String>>()?;
        parts
            .try_into()
            .map_err(|_| "an array of the wrong length".to_string())
    }
    fn unmarshal_columns(len: usize, u: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
        let columns = (0..N)
            .map(|_| T::unmarshal_columns(len, u))
            .collect::<Result<Vec<_>, String>>()?;
        if columns.iter().any(|c| c.len() < len) {
            return Err(short_column());
        }
        if !T::NESTED {
            return Ok(assemble(len, |k| {
                std::array::from_fn(|j| columns[j][k].clone_value())
            }));
        }
        let mut columns: Vec<_> = columns.into_iter().map(Vec::into_iter).collect();
        (0..len)
            .map(|_| {
                let parts = columns
                    .iter_mut()
                    .map(|c| c.next().ok_or("a short column"))
                    .collect::<Result<Vec<T>, _>>()?;
                parts
                    .try_into()
                    .map_err(|_| "an array of the wrong length".to_string())
            })
            .collect()
    }
}

/// Sequence words shared by `Vec<T>` and `[T]`: the length, then the columns.
fn marshal_seq<'m, T: Accel + 'm>(xs: &[T], m: &mut Marshal<'m>) {
    m.push(xs.len() as u64);
    if std::mem::take(&mut m.in_place) {
        // The compiled code reads the elements where they are: each scalar's address in
        // the first element, a row's stride apart (see `in_place`).
        let (stride, offsets) = in_place::layout::<T>();
        if stride > 0 {
            let base = xs.as_ptr() as u64;
            offsets.iter().for_each(|&o| m.push(base + o as u64));
            m.bytes += std::mem::size_of_val(xs);
            in_place::MARSHALED.set(in_place::MARSHALED.get() + 1);
            return;
        }
        m.fail("a sequence marshaled in place whose elements cannot be (a bug in accel)".into());
    }
    T::marshal_columns(xs, m);
}

/// The columns of a sequence of sequences: the inner length, then the flat elements'
/// columns (the sequence must be regular).
fn marshal_nested<'m, T: Accel + 'm>(rows: &[Vec<T>], m: &mut Marshal<'m>) {
    let width = rows.first().map_or(0, Vec::len);
    if let Some(i) = rows.iter().position(|r| r.len() != width) {
        m.fail(format!(
            "an irregular nested sequence: row 0 has {width} elements, row {i} has {}",
            rows[i].len()
        ));
        return;
    }
    m.push(width as u64);
    let flat: Vec<T> = rows
        .iter()
        .flat_map(|r| r.iter().map(Accel::clone_value))
        .collect();
    T::marshal_columns(&flat, m);
    m.keep.push(Box::new(flat));
}

fn unmarshal_nested<T: Accel>(len: usize, u: &mut Unmarshal<'_>) -> Result<Vec<Vec<T>>, String> {
    let width = u.word()? as usize;
    let total = len.checked_mul(width).ok_or("a nested result too large")?;
    let mut flat = T::unmarshal_columns(total, u)?.into_iter();
    Ok((0..len)
        .map(|_| flat.by_ref().take(width).collect())
        .collect())
}

impl<T: Accel> Accel for Vec<T> {
    const NESTED: bool = true;
    fn accel_type() -> Type {
        Type::Seq(Box::new(T::accel_type()))
    }
    fn write_value(&self, out: &mut String) {
        write_elems(self, out)
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        close_elems(
            self,
            other,
            &inputs.iter().map(|x| &x[..]).collect::<Vec<_>>(),
        )
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        check_elems(self, path, ctx)
    }
    fn seq_len(&self) -> Option<usize> {
        Some(self.len())
    }
    fn clone_value(&self) -> Self {
        self.iter().map(Accel::clone_value).collect()
    }
    fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
        marshal_seq(self, m)
    }
    fn row_layout(&self) -> (usize, Vec<usize>) {
        in_place::layout::<T>()
    }
    fn marshal_columns<'m>(xs: &[Self], m: &mut Marshal<'m>)
    where
        Self: 'm,
    {
        marshal_nested(xs, m)
    }
    fn takes_rows() -> bool {
        true
    }
    fn unmarshal(u: &mut Unmarshal<'_>) -> Result<Self, String> {
        let len = u.word()? as usize;
        if std::mem::take(&mut u.rows) {
            return rows::take_rows(len, u);
        }
        T::unmarshal_columns(len, u)
    }
    fn unmarshal_columns(len: usize, u: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
        unmarshal_nested(len, u)
    }
}

impl<T: Accel> Accel for [T] {
    const NESTED: bool = true;
    fn accel_type() -> Type {
        Type::Seq(Box::new(T::accel_type()))
    }
    fn write_value(&self, out: &mut String) {
        write_elems(self, out)
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        close_elems(self, other, inputs)
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        check_elems(self, path, ctx)
    }
    fn seq_len(&self) -> Option<usize> {
        Some(self.len())
    }
    fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
        marshal_seq(self, m)
    }
    fn row_layout(&self) -> (usize, Vec<usize>) {
        in_place::layout::<T>()
    }
}

impl<T: Accel + ?Sized> Accel for &T {
    const NESTED: bool = T::NESTED;
    fn accel_type() -> Type {
        T::accel_type()
    }
    fn write_value(&self, out: &mut String) {
        (**self).write_value(out)
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        (**self).close_to(other, &inputs.iter().map(|x| &***x).collect::<Vec<_>>())
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        (**self).check(path, ctx)
    }
    fn seq_len(&self) -> Option<usize> {
        (**self).seq_len()
    }
    fn size_hint(&self) -> usize {
        (**self).size_hint()
    }
    fn clone_value(&self) -> Self {
        self
    }
    fn distributed_over(&self) -> Option<std::sync::Arc<dyn crate::comm::Communicator>> {
        (**self).distributed_over()
    }
    fn row_layout(&self) -> (usize, Vec<usize>) {
        (**self).row_layout()
    }
    fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
        (**self).marshal(m)
    }
    fn marshal_columns<'m>(_: &[Self], m: &mut Marshal<'m>)
    where
        Self: 'm,
    {
        m.fail("sequences of references are not supported by the compiled backends".into());
    }
    fn unmarshal(_: &mut Unmarshal<'_>) -> Result<Self, String> {
        Err("a reference cannot be a result of compiled code".into())
    }
    fn unmarshal_columns(_: usize, _: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
        Err("a reference cannot be a result of compiled code".into())
    }
}

/// A captured value as the runtime sees it: every accel type.
pub trait Inspect {
    /// Checks the value, named `name` (debug mode).
    fn inspect(&self, name: &str, ctx: &mut CheckCtx) -> Result<(), String>;
    /// The value's IR type.
    fn ir_type(&self) -> accel_ir::Type;
    /// A key for [`Inspect::ir_type`] that costs nothing to compute: the address of the
    /// function that makes the type. Equal keys mean equal types (functions the linker
    /// merged have the same code, so make the same type); one type may have several keys,
    /// which costs a lookup its shortcut, never a wrong answer.
    fn type_key(&self) -> usize;
    /// Appends the value's words for compiled code.
    fn marshal_into<'a>(&'a self, m: &mut Marshal<'a>);
    /// The ranks the value is spread over, when it is a distributed sequence.
    fn distributed_over(&self) -> Option<std::sync::Arc<dyn crate::comm::Communicator>> {
        None
    }
    /// See [`Accel::row_layout`].
    fn row_layout(&self) -> (usize, Vec<usize>) {
        (0, Vec::new())
    }
    /// See [`Accel::size_hint`].
    fn size_hint(&self) -> usize {
        0
    }
}

impl std::fmt::Debug for dyn Inspect + Sync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<a value of type {}>", self.ir_type())
    }
}

impl<T: Accel> Inspect for T {
    fn inspect(&self, name: &str, ctx: &mut CheckCtx) -> Result<(), String> {
        if T::NESTED {
            self.check(&ValuePath::root(name), ctx)
        } else {
            Ok(())
        }
    }
    fn ir_type(&self) -> accel_ir::Type {
        T::accel_type()
    }
    fn type_key(&self) -> usize {
        T::accel_type as fn() -> accel_ir::Type as usize
    }
    fn marshal_into<'a>(&'a self, m: &mut Marshal<'a>) {
        self.marshal(m)
    }
    fn distributed_over(&self) -> Option<std::sync::Arc<dyn crate::comm::Communicator>> {
        Accel::distributed_over(self)
    }
    fn row_layout(&self) -> (usize, Vec<usize>) {
        Accel::row_layout(self)
    }
    fn size_hint(&self) -> usize {
        Accel::size_hint(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_forms_share_one_ir_type() {
        let seq = Type::Seq(Box::new(Type::Scalar(ScalarType::F32)));
        assert_eq!(<Vec<f32>>::accel_type(), seq);
        assert_eq!(<&Vec<f32>>::accel_type(), seq);
        assert_eq!(<&[f32]>::accel_type(), seq);
        assert_eq!(
            <(Vec<Vec<i64>>, [bool; 2], u32)>::accel_type().to_string(),
            "([[i64]], [bool; 2], u32)"
        );
    }

    #[test]
    fn values_print_like_rust() {
        let mut s = String::new();
        (1i32, vec![0.5f64, 2.0], [true, false]).write_value(&mut s);
        assert_eq!(s, "(1, [0.5, 2.0], [true, false])");
    }

    #[test]
    fn floats_compare_within_a_tolerance_scaled_by_the_inputs() {
        assert!(1.0f32.close_to(&1.00001, &[]));
        assert!(!1.0f32.close_to(&1.001, &[]));
        // Cancellation: (1e8 + -1e8) + 1 versus 1e8 + (-1e8 + 1) differ by 1, tiny next to 1e8.
        assert!(1.0f32.close_to(&0.0, &[&1e8, &-1e8, &1.0]));
        assert!(f64::NAN.close_to(&f64::NAN, &[]));
        assert!(!3i64.close_to(&4, &[&1_000_000]));
        assert!(vec![(1.0f64, 2u32)].close_to(&vec![(1.0 + 1e-12, 2)], &[]));
        assert!(!vec![1.0f64].close_to(&vec![1.0, 2.0], &[]));
    }

    /// Marshals a value and reads it back from the same words (copying from the inputs).
    fn round_trip<T: Accel>(v: &T) -> T {
        let mut m = Marshal::default();
        v.marshal(&mut m);
        assert_eq!(m.error, None);
        let mut arena = crate::backend::abi::Arena::default();
        let mut u = Unmarshal {
            words: &m.words,
            at: 0,
            arena: &mut arena,
            rows: false,
        };
        let back = T::unmarshal(&mut u).unwrap();
        assert_eq!(u.at, m.words.len());
        back
    }

    #[test]
    fn values_round_trip_through_the_compiled_abi() {
        let v = (
            3i32,
            vec![(1.5f32, [1u64, 2]), (2.5, [3, 4])],
            vec![vec![1.0f64, 2.0], vec![3.0, 4.0]],
            true,
        );
        assert_eq!(round_trip(&v), v);
        let empty: Vec<Vec<usize>> = vec![];
        assert_eq!(round_trip(&empty), empty);
        // Scalar slices are passed by pointer: the words hold the length and the address.
        let xs = vec![1.0f32, 2.0];
        let mut m = Marshal::default();
        xs.marshal(&mut m);
        assert_eq!(m.words, vec![2, xs.as_ptr() as u64]);
        // Irregular nesting cannot be marshaled.
        let irregular = vec![vec![1i32], vec![]];
        let mut m = Marshal::default();
        irregular.marshal(&mut m);
        assert_eq!(
            m.error.as_deref(),
            Some("an irregular nested sequence: row 0 has 1 elements, row 1 has 0")
        );
    }

    #[test]
    fn irregular_nesting_is_found_with_its_path() {
        let mut ctx = CheckCtx::new(3);
        let xss = vec![vec![vec![1, 2], vec![3, 4]], vec![vec![5, 6], vec![7]]];
        let err = xss.check(&ValuePath::root("xss"), &mut ctx).unwrap_err();
        assert_eq!(
            err,
            "xss[1] is irregular: row 0 has 2 elements, row 1 has 1"
        );
        assert!(vec![vec![1.0f32; 3]; 4]
            .check(&ValuePath::root("ok"), &mut ctx)
            .is_ok());
    }
}
