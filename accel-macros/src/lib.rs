//! The proc-macros of accel. Users get them through `accel_runtime::prelude`.
//!
//! - `accelerate!(EXPR)`: lowers `EXPR` to IR, checks it, and expands to the site's
//!   description (IR, captures, the functions it calls), compile-time checks over it, and a
//!   call that runs it; `try_accelerate!(EXPR)` is the same site returning a `Result`.
//! - `#[accel]`: keeps the function as it is and generates beside it a companion type of
//!   the same name whose `AccelFn::DESC` describes it (IR, callees, parallel operations).
//! - `#[derive(Accel)]`: makes a struct with named fields a record.
//!
//! Every rejection is a `syn::Error` with the span of the offending code; nothing panics.

#![warn(missing_docs)]

mod expand;
mod lower;
mod records;
mod ty;

use proc_macro::TokenStream;

/// (Defined in `accel-macros`; use it through `accel_runtime`.)
#[proc_macro]
pub fn accelerate(input: TokenStream) -> TokenStream {
    expand::site(input.into(), expand::SiteKind::Run).into()
}

/// (Defined in `accel-macros`; use it through `accel_runtime`.)
#[proc_macro]
pub fn try_accelerate(input: TokenStream) -> TokenStream {
    expand::site(input.into(), expand::SiteKind::Try).into()
}

/// (Defined in `accel-macros`; use it through `accel_runtime`.)
#[proc_macro]
pub fn describe(input: TokenStream) -> TokenStream {
    expand::site(input.into(), expand::SiteKind::Describe).into()
}

/// (Defined in `accel-macros`; use it through `accel_runtime`.)
#[proc_macro_attribute]
pub fn accel(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::function(attr.into(), item.into()).into()
}

/// Makes a struct with named fields of accel types a record usable in accelerated code.
#[proc_macro_derive(Accel)]
pub fn derive_accel(input: TokenStream) -> TokenStream {
    expand::derive(input.into()).into()
}
