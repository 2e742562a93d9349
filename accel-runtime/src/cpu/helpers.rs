//! What compiled code calls back into, each helper with its signature, in one table: the
//! pool's launches, allocation and failure reports ([`super::pool`]), and the math
//! functions Cranelift has no instruction for (Rust's own, so results match debug mode).

use super::pool::{
    accel_alloc, accel_alloc_host, accel_alloc_rows, accel_alloc_zeroed, accel_chunk_size,
    accel_chunks, accel_copy, accel_fail, accel_host_mark, accel_host_owns, accel_par,
    accel_recycle, accel_site_word, accel_threads,
};
use accel_ir::ScalarType;
use cranelift_codegen::ir::types as ct;
use cranelift_codegen::ir::Type as CType;

/// A function compiled code may call: the name it is imported as, its address, its
/// parameters and result.
pub struct Helper {
    pub name: &'static str,
    pub address: *const u8,
    pub params: Vec<CType>,
    pub result: Option<CType>,
}

/// Every helper, in the order code generation declares them.
pub fn helpers() -> Vec<Helper> {
    let h = |name, address, params: &[CType], result| Helper {
        name,
        address,
        params: params.to_vec(),
        result,
    };
    let i64_ = ct::I64;
    let mut out = vec![
        h(
            "accel_chunks",
            accel_chunks as *const u8,
            &[i64_; 2],
            Some(i64_),
        ),
        h(
            "accel_chunk_size",
            accel_chunk_size as *const u8,
            &[i64_; 2],
            Some(i64_),
        ),
        h(
            "accel_par",
            accel_par as *const u8,
            &[i64_; 8],
            Some(ct::I32),
        ),
        h(
            "accel_alloc",
            accel_alloc as *const u8,
            &[i64_; 3],
            Some(i64_),
        ),
        h(
            "accel_fail",
            accel_fail as *const u8,
            &[i64_, ct::I32, i64_, i64_],
            None,
        ),
        h(
            "accel_alloc_host",
            accel_alloc_host as *const u8,
            &[i64_; 4],
            Some(i64_),
        ),
        h(
            "accel_alloc_rows",
            accel_alloc_rows as *const u8,
            &[i64_; 4],
            Some(i64_),
        ),
        h(
            "accel_host_owns",
            accel_host_owns as *const u8,
            &[i64_; 3],
            Some(i64_),
        ),
        h(
            "accel_site_word",
            accel_site_word as *const u8,
            &[i64_; 2],
            Some(i64_),
        ),
        h(
            "accel_host_mark",
            accel_host_mark as *const u8,
            &[i64_],
            Some(i64_),
        ),
        h(
            "accel_recycle",
            accel_recycle as *const u8,
            &[i64_; 4],
            None,
        ),
        h("accel_copy", accel_copy as *const u8, &[i64_; 3], None),
        h(
            "accel_alloc_zeroed",
            accel_alloc_zeroed as *const u8,
            &[i64_; 4],
            Some(i64_),
        ),
        h("accel_threads", accel_threads as *const u8, &[], Some(i64_)),
        h("accel_prefetch", accel_prefetch as *const u8, &[i64_], None),
        h(
            "accel_sin_cos_f32",
            accel_sin_cos_f32 as *const u8,
            &[ct::F32, i64_],
            None,
        ),
        h(
            "accel_sin_cos_f64",
            accel_sin_cos_f64 as *const u8,
            &[ct::F64, i64_],
            None,
        ),
    ];
    out.extend(math_helpers());
    out
}

/// The math functions' helpers (`ACCEL_EXACT_MATH` and functions without a polynomial).
fn math_helpers() -> Vec<Helper> {
    let mut out = Vec::new();
    macro_rules! math {
        ($($f32:ident, $f64:ident: $arity:ident),* $(,)?) => {$(
            out.push(math_helper(stringify!($f32), $f32 as *const u8, ct::F32, Arity::$arity));
            out.push(math_helper(stringify!($f64), $f64 as *const u8, ct::F64, Arity::$arity));
        )*};
    }
    math!(
        accel_exp_f32, accel_exp_f64: Unary,
        accel_exp2_f32, accel_exp2_f64: Unary,
        accel_ln_f32, accel_ln_f64: Unary,
        accel_log2_f32, accel_log2_f64: Unary,
        accel_log10_f32, accel_log10_f64: Unary,
        accel_sin_f32, accel_sin_f64: Unary,
        accel_cos_f32, accel_cos_f64: Unary,
        accel_tan_f32, accel_tan_f64: Unary,
        accel_asin_f32, accel_asin_f64: Unary,
        accel_acos_f32, accel_acos_f64: Unary,
        accel_atan_f32, accel_atan_f64: Unary,
        accel_sinh_f32, accel_sinh_f64: Unary,
        accel_cosh_f32, accel_cosh_f64: Unary,
        accel_tanh_f32, accel_tanh_f64: Unary,
        accel_asinh_f32, accel_asinh_f64: Unary,
        accel_acosh_f32, accel_acosh_f64: Unary,
        accel_atanh_f32, accel_atanh_f64: Unary,
        accel_cbrt_f32, accel_cbrt_f64: Unary,
        accel_round_f32, accel_round_f64: Unary,
        accel_powf_f32, accel_powf_f64: Binary,
        accel_atan2_f32, accel_atan2_f64: Binary,
        accel_hypot_f32, accel_hypot_f64: Binary,
        accel_log_f32, accel_log_f64: Binary,
        accel_rem_f32, accel_rem_f64: Binary,
        accel_rem_euclid_f32, accel_rem_euclid_f64: Binary,
        accel_div_euclid_f32, accel_div_euclid_f64: Binary,
        accel_powi_f32, accel_powi_f64: PowI,
    );
    out
}

/// The arguments of a math function after the number it is called on.
#[derive(Clone, Copy)]
enum Arity {
    Unary,
    Binary,
    PowI,
}

fn math_helper(name: &'static str, address: *const u8, t: CType, arity: Arity) -> Helper {
    let params = match arity {
        Arity::Unary => vec![t],
        Arity::Binary => vec![t, t],
        Arity::PowI => vec![t, ct::I32],
    };
    Helper {
        name,
        address,
        params,
        result: Some(t),
    }
}

/// The name of the helper that computes `method` on `s` (`accel_exp_f32`), if there is
/// one.
pub fn math_name(method: &str, s: ScalarType) -> Option<&'static str> {
    let suffix = if s == ScalarType::F32 { "f32" } else { "f64" };
    let full = format!("accel_{method}_{suffix}");
    helpers()
        .into_iter()
        .map(|h| h.name)
        .find(|n| *n == full && !n.starts_with("accel_sin_cos"))
}

macro_rules! math1 {
    ($($name:ident: $t:ty => $f:ident),* $(,)?) => {$(
        pub extern "C" fn $name(x: $t) -> $t {
            x.$f()
        }
    )*};
}
macro_rules! math2 {
    ($($name:ident: $t:ty => $f:ident),* $(,)?) => {$(
        pub extern "C" fn $name(x: $t, y: $t) -> $t {
            x.$f(y)
        }
    )*};
}

math1!(
    accel_exp_f32: f32 => exp, accel_exp_f64: f64 => exp,
    accel_exp2_f32: f32 => exp2, accel_exp2_f64: f64 => exp2,
    accel_ln_f32: f32 => ln, accel_ln_f64: f64 => ln,
    accel_log2_f32: f32 => log2, accel_log2_f64: f64 => log2,
    accel_log10_f32: f32 => log10, accel_log10_f64: f64 => log10,
    accel_sin_f32: f32 => sin, accel_sin_f64: f64 => sin,
    accel_cos_f32: f32 => cos, accel_cos_f64: f64 => cos,
    accel_tan_f32: f32 => tan, accel_tan_f64: f64 => tan,
    accel_asin_f32: f32 => asin, accel_asin_f64: f64 => asin,
    accel_acos_f32: f32 => acos, accel_acos_f64: f64 => acos,
    accel_atan_f32: f32 => atan, accel_atan_f64: f64 => atan,
    accel_sinh_f32: f32 => sinh, accel_sinh_f64: f64 => sinh,
    accel_cosh_f32: f32 => cosh, accel_cosh_f64: f64 => cosh,
    accel_tanh_f32: f32 => tanh, accel_tanh_f64: f64 => tanh,
    accel_asinh_f32: f32 => asinh, accel_asinh_f64: f64 => asinh,
    accel_acosh_f32: f32 => acosh, accel_acosh_f64: f64 => acosh,
    accel_atanh_f32: f32 => atanh, accel_atanh_f64: f64 => atanh,
    accel_cbrt_f32: f32 => cbrt, accel_cbrt_f64: f64 => cbrt,
    accel_round_f32: f32 => round, accel_round_f64: f64 => round,
);
math2!(
    accel_powf_f32: f32 => powf, accel_powf_f64: f64 => powf,
    accel_atan2_f32: f32 => atan2, accel_atan2_f64: f64 => atan2,
    accel_hypot_f32: f32 => hypot, accel_hypot_f64: f64 => hypot,
    accel_log_f32: f32 => log, accel_log_f64: f64 => log,
    accel_rem_f32: f32 => rem_euclid_plain, accel_rem_f64: f64 => rem_euclid_plain,
    accel_rem_euclid_f32: f32 => rem_euclid, accel_rem_euclid_f64: f64 => rem_euclid,
    accel_div_euclid_f32: f32 => div_euclid, accel_div_euclid_f64: f64 => div_euclid,
);

/// Float `%` as Rust defines it (the remainder with the dividend's sign).
trait PlainRem {
    fn rem_euclid_plain(self, y: Self) -> Self;
}
impl PlainRem for f32 {
    fn rem_euclid_plain(self, y: f32) -> f32 {
        self % y
    }
}
impl PlainRem for f64 {
    fn rem_euclid_plain(self, y: f64) -> f64 {
        self % y
    }
}

/// Asks the cache for the line holding `address` (Cranelift has no prefetch instruction).
/// Any address will do: a prefetch never faults, so compiled code may point past the end
/// of a sequence. Does nothing on targets without a stable prefetch intrinsic.
pub extern "C" fn accel_prefetch(address: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `prefetcht0` is a hint that reads nothing and never faults, whatever the
        // address; SSE, which it needs, is part of x86_64.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// `x.sin_cos()`, written to `out[0]` and `out[1]` (one combined evaluation).
pub extern "C" fn accel_sin_cos_f64(x: f64, out: *mut f64) {
    let (s, c) = x.sin_cos();
    // SAFETY: compiled code passes a stack slot of two f64.
    unsafe {
        *out = s;
        *out.add(1) = c;
    }
}

/// `x.sin_cos()` for `f32`.
pub extern "C" fn accel_sin_cos_f32(x: f32, out: *mut f32) {
    let (s, c) = x.sin_cos();
    // SAFETY: compiled code passes a stack slot of two f32.
    unsafe {
        *out = s;
        *out.add(1) = c;
    }
}

/// `x.powi(n)` for `f32`.
pub extern "C" fn accel_powi_f32(x: f32, n: i32) -> f32 {
    x.powi(n)
}
/// `x.powi(n)` for `f64`.
pub extern "C" fn accel_powi_f64(x: f64, n: i32) -> f64 {
    x.powi(n)
}
