//! What the macros' expansions use. Not part of the API: names here may change at any time.

pub use crate::site::{check_site, FnDesc, OpUse, SiteDesc};
pub use accel_ir::{ScalarType, Type};

use crate::accel_type::Accel;

/// Implemented by the companion type `#[accel]` generates beside each function (a type
/// with the function's name, so that importing the function imports it too).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an #[accel] function, but accelerated code calls it",
    label = "called from accelerated code",
    note = "add #[accel] to the definition of `{Self}` (a module-level fn) so accelerated code can call it"
)]
pub trait AccelFn {
    const DESC: &'static FnDesc;
}

/// Checks at compile time that a captured local has an accel type.
pub fn assert_capture<T: Accel + ?Sized>(_: &T) {}

/// Checks at compile time that a parameter or result type of an `#[accel]` fn is an accel type.
pub fn assert_accel_type<T: Accel + ?Sized>() {}

/// Runs a site; `sequential` is the expression as plain Rust.
pub fn run_site<R>(site: &'static SiteDesc, sequential: impl FnOnce() -> R) -> R {
    crate::site::run(site, sequential)
}
