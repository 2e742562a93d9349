//! Tensors in the host program between launches: made (`Tensor::zeros`,
//! `Tensor::from_vec`, `t.to_vec()`: device memory cleared or copied on the device, in the
//! words of a captured tensor, see `backend::abi`, so the kernels read them alike) and
//! read or written one element at a time (`t.get(..)`, `t.set(..)`). Their failures are
//! the CPU's (`cpu::codegen`), in the same words.

use super::Run;
use crate::backend::abi::MAX_RANK;
use crate::backend::failure::{Failure, FailureKind};
use crate::backend::layout::size_of;
use crate::cuda::host::scalar::{normalize, HostVal};
use accel_ir::{ScalarType, Type};

type R<T> = Result<T, String>;

impl Run<'_, '_> {
    /// `Tensor::zeros(shape)` of `elem`s (the type its `let` gives the tensor).
    pub(crate) fn tensor_zeros(&mut self, elem: &Type, shape: &HostVal) -> R<HostVal> {
        let s = tensor_scalar(elem)?;
        let dims = self.dims(shape)?;
        let count = element_count(&dims)?;
        let bytes = bytes_of(count, s)?;
        let p = self.alloc(bytes)?;
        self.session.fill_zero(p, bytes)?;
        Ok(tensor(elem, p, &dims))
    }

    /// `Tensor::from_vec(v, shape)`: a copy of `v`, which must fill the shape.
    pub(crate) fn tensor_from_vec(&mut self, v: &HostVal, shape: &HostVal) -> R<HostVal> {
        let Type::Seq(elem) = &v.ty else {
            return Err(format!("`Tensor::from_vec` of a {}", v.ty));
        };
        let s = tensor_scalar(elem)?;
        let dims = self.dims(shape)?;
        let count = element_count(&dims)?;
        if v.w[0] != count {
            return Err(Failure::new(FailureKind::TensorFill, v.w[0], count).describe());
        }
        let bytes = bytes_of(count, s)?;
        let p = self.alloc(bytes)?;
        self.session.copy_on_device(p, v.w[1], bytes)?;
        Ok(tensor(elem, p, &dims))
    }

    /// `t.to_vec()`: the view's elements in row-major order, copied.
    pub(crate) fn tensor_to_vec(&mut self, t: &HostVal) -> R<HostVal> {
        let Type::Tensor(elem) = &t.ty else {
            return Err(format!("`.to_vec()` of a {}", t.ty));
        };
        let s = tensor_scalar(elem)?;
        let count = t.w[2..2 + MAX_RANK].iter().product::<u64>();
        let bytes = bytes_of(count, s)?;
        let p = self.alloc(bytes)?;
        self.session.copy_on_device(p, t.w[0], bytes)?;
        Ok(HostVal {
            ty: Type::Seq(elem.clone()),
            w: vec![count, p],
        })
    }

    /// `t.get(index)` (`value` none) or `t.set(index, value)`: one element read back from
    /// the device or written to it, the rank and every coordinate checked.
    pub(crate) fn tensor_element(
        &mut self,
        t: &HostVal,
        index: &HostVal,
        value: Option<&HostVal>,
    ) -> R<HostVal> {
        let Type::Tensor(elem) = &t.ty else {
            return Err(format!("an element of a {}", t.ty));
        };
        let s = tensor_scalar(elem)?;
        let (coords, rank) = (index.w.len() as u64, t.w[1]);
        if coords != rank {
            return Err(Failure::new(FailureKind::Rank, coords, rank).describe());
        }
        let mut flat = 0u64;
        for (k, &i) in index.w.iter().enumerate() {
            let dim = t.w[2 + k];
            if i >= dim {
                return Err(Failure::new(FailureKind::Index, i, dim).describe());
            }
            flat = flat * dim + i;
        }
        let size = size_of(s);
        let at = t.w[0] + flat * size as u64;
        match value {
            Some(v) => {
                self.session.write(at, &v.w[0].to_le_bytes()[..size])?;
                self.bytes_in += size;
                Ok(HostVal {
                    ty: Type::Unit,
                    w: vec![],
                })
            }
            None => {
                let mut bytes = [0u8; 8];
                self.session.download(at, &mut bytes[..size])?;
                self.bytes_out += size;
                Ok(HostVal {
                    ty: Type::Scalar(s),
                    w: vec![normalize(s, u64::from_le_bytes(bytes))],
                })
            }
        }
    }

    /// A shape's dimensions: an array's words, or a sequence's elements read back (at
    /// most `MAX_RANK` of them).
    fn dims(&mut self, shape: &HostVal) -> R<Vec<u64>> {
        match &shape.ty {
            Type::Array(_, k) if *k > MAX_RANK => {
                Err(Failure::new(FailureKind::TensorRank, *k as u64, MAX_RANK as u64).describe())
            }
            Type::Array(..) => Ok(shape.w.clone()),
            Type::Seq(_) => {
                let rank = shape.w[0];
                if rank > MAX_RANK as u64 {
                    let most = MAX_RANK as u64;
                    return Err(Failure::new(FailureKind::TensorRank, rank, most).describe());
                }
                let mut bytes = vec![0u8; 8 * rank as usize];
                self.session.download(shape.w[1], &mut bytes)?;
                self.bytes_out += bytes.len();
                Ok(bytes
                    .chunks_exact(8)
                    .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                    .collect())
            }
            t => Err(format!("a tensor's shape of type {t}")),
        }
    }
}

/// The product of the dimensions; past 64 bits, the CPU's failure.
fn element_count(dims: &[u64]) -> R<u64> {
    dims.iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| Failure::new(FailureKind::Alloc, u64::MAX, 0).describe())
}

/// The bytes of `count` elements of `s`; past `isize::MAX`, the CPU's failure.
fn bytes_of(count: u64, s: ScalarType) -> R<usize> {
    count
        .checked_mul(size_of(s) as u64)
        .filter(|&b| b <= isize::MAX as u64)
        .map(|b| b as usize)
        .ok_or_else(|| Failure::new(FailureKind::Alloc, u64::MAX, count).describe())
}

/// The scalar type of a tensor's elements.
fn tensor_scalar(elem: &Type) -> R<ScalarType> {
    match elem {
        Type::Scalar(s) => Ok(*s),
        t => Err(format!("a tensor of {t}")),
    }
}

/// The words of a whole tensor at `p` of dimensions `dims` (1 past the rank).
fn tensor(elem: &Type, p: u64, dims: &[u64]) -> HostVal {
    let mut w = vec![p, dims.len() as u64];
    w.extend((0..MAX_RANK).map(|k| dims.get(k).copied().unwrap_or(1)));
    HostVal {
        ty: Type::Tensor(Box::new(elem.clone())),
        w,
    }
}
