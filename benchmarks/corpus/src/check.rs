//! Comparisons of a form's result with the sequential one.

/// Equal results (integers, sorted keys, counts).
pub fn exact<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("lengths differ: {} vs {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => Err(format!(
            "element {i} is {:?} but the sequential form gives {:?}",
            got[i], want[i]
        )),
        None => Ok(()),
    }
}

/// One equal value.
pub fn same<T: PartialEq + std::fmt::Debug>(got: &T, want: &T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{got:?}, but the sequential form gives {want:?}"))
    }
}

/// Float results within `tol` relative to the larger of the value and `floor` (sums that
/// parallel forms group differently round differently; `floor` is the magnitude below
/// which an error is judged absolutely, about the size of the terms summed).
pub fn close<T: Copy + Into<f64> + std::fmt::Debug>(
    got: &[T],
    want: &[T],
    tol: f64,
    floor: f64,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("lengths differ: {} vs {}", got.len(), want.len()));
    }
    for (i, (&a, &b)) in got.iter().zip(want).enumerate() {
        let (x, y): (f64, f64) = (a.into(), b.into());
        let ok = (x - y).abs() <= tol * y.abs().max(floor) || (x.is_nan() && y.is_nan());
        if !ok {
            return Err(format!(
                "element {i} is {a:?} but the sequential form gives {b:?} (tolerance {tol:e})"
            ));
        }
    }
    Ok(())
}
