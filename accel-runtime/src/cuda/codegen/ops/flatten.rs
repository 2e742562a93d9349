//! `flatten`: a regular sequence of rows is already flat columns; only the length
//! changes (on the host, inside kernels, and in the host program's values alike).

use super::super::host_lower::Gen;
use super::super::kernel::*;
use crate::cuda::host::scalar::HostVal;
use accel_ir::ops::Flatten;
use accel_ir::{Expr, ParOp, Type};

impl Gen {
    /// A top-level `flatten`: no kernel.
    pub(super) fn flatten_on_host(&mut self, f: Flatten<'_>) -> R<Expr> {
        let inner = self.host(f.xss)?;
        Ok(Expr::par(ParOp::Flatten, vec![inner]))
    }
}

impl KernelGen<'_> {
    /// A `flatten` inside a kernel.
    pub(super) fn nested_flatten(&mut self, f: Flatten<'_>) -> R<V> {
        let v = self.expr(f.xss)?;
        let Type::Seq(row) = &v.ty else {
            return Err(unsupported(format!("flatten of {}", v.ty)));
        };
        let Type::Seq(_) = **row else {
            return Err(unsupported(format!("flatten of {}", v.ty)));
        };
        let len = self.let_("ull", "flat_len", &format!("{} * {}", v.w[0], v.w[1]));
        Ok(V {
            ty: (**row).clone(),
            w: [vec![len], v.w[2..].to_vec()].concat(),
        })
    }
}

/// `flatten` of a host value (a sequence of rows in device memory).
pub(crate) fn flattened(v: HostVal) -> R<HostVal> {
    let Type::Seq(row) = &v.ty else {
        return Err(format!("flatten of {}", v.ty));
    };
    let Type::Seq(_) = **row else {
        return Err(format!("flatten of {}", v.ty));
    };
    Ok(HostVal {
        ty: (**row).clone(),
        w: [vec![v.w[0] * v.w[1]], v.w[2..].to_vec()].concat(),
    })
}
