//! `#[accel]` on a free function: the function unchanged, and beside it a companion
//! module (named like the function, so importing one imports both) holding its
//! description: its IR and the facts the compile-time checks of the sites that reach it
//! need.

use super::{desc_parts, errors_to_tokens, to_json, use_glob, Scope};
use crate::lower::{loc, Lowerer};
use crate::ty::{fn_bound, fn_type_of, lower_type, return_type};
use accel_ir::{FnDef, Loc, Param, Type};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// `#[accel]` on a free function.
pub fn function(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new_spanned(
                &item,
                "#[accel] goes on free functions (`fn name(..) -> T { .. }`)",
            )
            .to_compile_error();
            return quote! { #e #item };
        }
    };
    let mut errors = Vec::new();
    if !attr.is_empty() {
        errors.push(syn::Error::new_spanned(
            &attr,
            "#[accel] takes no arguments",
        ));
    }
    let sig = &func.sig;
    if let Some(syn::FnArg::Receiver(r)) = sig.inputs.first() {
        // A companion module cannot go inside an `impl`: report this alone.
        let e = syn::Error::new_spanned(r, "methods cannot be #[accel] yet: make it a free function that takes the value as a parameter")
            .to_compile_error();
        return quote! { #e #func };
    }
    signature_errors(sig, &mut errors);
    let fn_generics = fn_generics(sig);
    let name = sig.ident.to_string();
    let mut l = Lowerer::new(Some(name.clone()));
    let (params, ret, type_checks) = lower_signature(sig, &fn_generics, &mut l, &mut errors);
    let body = l.block(&func.block);
    errors.append(&mut l.errors);
    if !errors.is_empty() {
        // Keep the function and a companion so that callers report no further errors.
        let errors = errors_to_tokens(errors);
        let companion = companion(
            &func,
            quote! {
                ::accel_runtime::__private::FnDesc {
                    name: #name, path: "", file: "", line: 0, ir: "", callees: &[], ops: &[], higher_order: false, consts: &[], records: &[],
                }
            },
        );
        return quote! { #errors #func #companion };
    }
    let def = FnDef {
        name: name.clone(),
        params,
        ret,
        body,
        file: String::new(),
        loc: loc(sig.ident.span()),
    };
    let desc = match description(&def, &l, &crate::records::in_function(&func)) {
        Ok(d) => d,
        Err(e) => return e,
    };
    // Parameter and result types must be accel types; generic signatures are checked
    // where they are instantiated instead.
    let checks = if sig.generics.params.is_empty() {
        let asserts = type_checks.iter().map(|t| {
            quote_spanned! {t.span()=> ::accel_runtime::__private::assert_accel_type::<#t>(); }
        });
        quote! { const _: fn() = || { #(#asserts)* }; }
    } else {
        TokenStream::new()
    };
    let companion = companion(&func, desc);
    // The function as Rust runs it: iterator chains read sequentially (`rust_form`).
    let func = syn::ItemFn {
        block: Box::new(super::rust_form::block(&func.block)),
        ..func.clone()
    };
    quote! {
        #func
        #companion
        #checks
    }
}

/// The companion module of `func`, holding its description `desc`.
fn companion(func: &syn::ItemFn, desc: TokenStream) -> TokenStream {
    let vis = &func.vis;
    let ident = &func.sig.ident;
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, dead_code)]
        #vis mod #ident {
            pub static DESC: ::accel_runtime::__private::FnDesc = #desc;
            pub struct Marker;
            #[diagnostic::do_not_recommend]
            impl ::accel_runtime::__private::AccelFn for Marker {}
        }
    }
}

/// What no `#[accel]` function may be: `async`, `unsafe`, `const`, variadic.
fn signature_errors(sig: &syn::Signature, errors: &mut Vec<syn::Error>) {
    for (present, what) in [
        (
            sig.asyncness.map(|t| t.span()),
            "`async fn` is not supported in accelerated code",
        ),
        (
            sig.unsafety.map(|t| t.span()),
            "`unsafe fn` is not allowed in accelerated code",
        ),
        (
            sig.constness.map(|t| t.span()),
            "`const fn` cannot be #[accel]: remove `const`",
        ),
        (
            sig.variadic.as_ref().map(|v| v.span()),
            "variadic functions are not supported",
        ),
    ] {
        if let Some(span) = present {
            errors.push(syn::Error::new(span, what));
        }
    }
}

/// The generic parameters bounded by `Fn` traits: function-typed.
fn fn_generics(sig: &syn::Signature) -> Vec<String> {
    let mut fn_generics = Vec::new();
    for p in &sig.generics.params {
        if let syn::GenericParam::Type(t) = p {
            if fn_bound(t.bounds.iter()).is_some() {
                fn_generics.push(t.ident.to_string());
            }
        }
    }
    if let Some(w) = &sig.generics.where_clause {
        for pred in &w.predicates {
            if let syn::WherePredicate::Type(t) = pred {
                if fn_bound(t.bounds.iter()).is_some() {
                    fn_generics.push(t.bounded_ty.to_token_stream().to_string());
                }
            }
        }
    }
    fn_generics
}

/// The parameters (patterns and types) and result type, and the types to check as accel
/// types.
fn lower_signature<'s>(
    sig: &'s syn::Signature,
    fn_generics: &[String],
    l: &mut Lowerer,
    errors: &mut Vec<syn::Error>,
) -> (Vec<Param>, Type, Vec<&'s syn::Type>) {
    let mut params = Vec::new();
    let mut type_checks = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(_) => {}
            syn::FnArg::Typed(pt) => {
                let ty = lower_type(&pt.ty, fn_generics).or_else(|e| {
                    // `impl Fn(..)` in argument position and generic Fn parameters.
                    match &*pt.ty {
                        syn::Type::ImplTrait(it) => fn_bound(it.bounds.iter())
                            .map(|s| fn_type_of(s, fn_generics))
                            .unwrap_or(Err(e)),
                        _ => Err(e),
                    }
                });
                let ty = match ty {
                    Ok(t) => t,
                    Err(e) => {
                        errors.push(e);
                        Type::Infer
                    }
                };
                if !ty.is_fn() {
                    type_checks.push(&*pt.ty);
                }
                params.push(Param {
                    pat: l.param(&pt.pat),
                    ty,
                });
            }
        }
    }
    let ret = match return_type(&sig.output, fn_generics) {
        Ok(t) => t,
        Err(e) => {
            errors.push(e);
            Type::Infer
        }
    };
    if let syn::ReturnType::Type(_, t) = &sig.output {
        if !ret.is_fn() {
            type_checks.push(t);
        }
    }
    (params, ret, type_checks)
}

/// The function's description: its IR, callees, operations and constants.
fn description(
    def: &FnDef,
    l: &Lowerer,
    records: &[syn::Path],
) -> Result<TokenStream, TokenStream> {
    let name = &def.name;
    let higher_order = def.ret.is_fn() || def.params.iter().any(|p| p.ty.is_fn());
    let at: Loc = def.loc;
    let ir = to_json(def)?;
    // Constants the body names, as references to their values (resolved through the glob
    // import of the parent module, like callees).
    let consts = {
        let entries = l.consts.iter().map(|c| {
            let text = c.to_string();
            quote_spanned! {c.span()=> (#text, ::accel_runtime::__private::const_value(&#c)) }
        });
        quote! { &[#(#entries),*] }
    };
    let records = crate::records::record_list(records);
    let (fallbacks, callees, ops) = desc_parts(l, Scope::Companion);
    let line = at.line;
    Ok(use_glob(
        fallbacks,
        quote!(super),
        quote! {
            ::accel_runtime::__private::FnDesc {
                name: #name,
                path: ::core::module_path!(),
                file: ::core::file!(),
                line: #line,
                ir: #ir,
                callees: #callees,
                ops: #ops,
                higher_order: #higher_order,
                consts: #consts,
                records: #records,
            }
        },
    ))
}
