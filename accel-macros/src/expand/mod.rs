//! What each macro expands to.

mod derive;
mod function;
mod rust_form;

pub use derive::derive;
pub use function::function;

use crate::lower::{loc, Lowerer};
use accel_ir::SiteDef;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// What `accelerate!`-like macros produce.
#[derive(Clone, Copy, PartialEq)]
pub enum SiteKind {
    /// Run the expression; panic on a failure.
    Run,
    /// Run the expression; a failure is an `Err`.
    Try,
    /// Return the site's description.
    Describe,
}

/// The IR as the JSON a description embeds.
fn to_json<T: serde::Serialize>(ir: &T) -> Result<String, TokenStream> {
    serde_json::to_string(ir).map_err(|e| {
        syn::Error::new(
            Span::call_site(),
            format!("accel: could not serialize the IR: {e}"),
        )
        .to_compile_error()
    })
}

fn errors_to_tokens(errors: Vec<syn::Error>) -> TokenStream {
    errors.into_iter().map(|e| e.to_compile_error()).collect()
}

/// Where a description is built: at a site, or inside the companion module of a function
/// (one module deeper, so paths the user wrote relative to the module need one more `super`).
#[derive(Clone, Copy, PartialEq)]
enum Scope {
    Site,
    Companion,
}

/// The `callees` and `ops` fields of a description, and the fallback modules that make a
/// call of a function without `#[accel]` an error that says so (see `use_glob`).
fn desc_parts(l: &Lowerer, scope: Scope) -> (TokenStream, TokenStream, TokenStream) {
    let mut fallbacks = TokenStream::new();
    let mut callees = Vec::new();
    for (written, path) in &l.callees {
        if let Some(ident) = path.get_ident() {
            let ident = syn::Ident::new(&ident.to_string(), Span::call_site());
            fallbacks.extend(quote! {
                #[allow(non_camel_case_types, non_snake_case, dead_code, unused_imports)]
                mod #ident {
                    pub use ::accel_runtime::__private::NOT_ACCEL as DESC;
                    pub struct Marker;
                }
            });
        }
        // The path without generic arguments, keeping the user's spans for errors.
        let span = path.span();
        let leading = path.leading_colon;
        let mut segs: Vec<syn::Ident> = path.segments.iter().map(|s| s.ident.clone()).collect();
        if scope == Scope::Companion {
            match segs.first().map(|s| s.to_string()).as_deref() {
                Some("self") => segs[0] = syn::Ident::new("super", segs[0].span()),
                Some("super") => segs.insert(0, syn::Ident::new("super", span)),
                _ => {}
            }
        }
        callees.push(quote_spanned! {span=>
            (#written, ::accel_runtime::__private::callee::<#leading #(#segs::)* Marker>(&#leading #(#segs::)* DESC))
        });
    }
    let ops = l.ops.iter().map(|(op, at)| {
        let (name, imperative, line, column) = (op.name(), op.is_imperative(), at.line, at.column);
        quote! { ::accel_runtime::__private::OpUse { op: #name, imperative: #imperative, line: #line, column: #column } }
    });
    (
        fallbacks,
        quote! { &[#(#callees),*] },
        quote! { &[#(#ops),*] },
    )
}

/// Wraps the description expression `desc` so that single-name callees resolve to the
/// companion modules of `#[accel]` functions when they exist, and to local fallback modules
/// (whose `Marker` implements no `AccelFn`, so the error says to add `#[accel]`) otherwise:
/// the glob import of the enclosing module (`module`: `self`, or `super` from inside a
/// companion) in the inner block outranks the outer block's items.
fn use_glob(fallbacks: TokenStream, module: TokenStream, desc: TokenStream) -> TokenStream {
    quote! {{
        #fallbacks
        {
            #[allow(unused_imports)]
            use #module::*;
            #desc
        }
    }}
}

/// `accelerate!(EXPR)` and `describe!(EXPR)`.
pub fn site(input: TokenStream, kind: SiteKind) -> TokenStream {
    let expr: syn::Expr = match syn::parse2(input) {
        Ok(e) => e,
        Err(e) => return e.to_compile_error(),
    };
    let mut l = Lowerer::new(None);
    let body = l.expr(&expr);
    if !l.errors.is_empty() {
        let errors = errors_to_tokens(std::mem::take(&mut l.errors));
        // A value of the site's type that does not diverge: `unreachable!()` would make
        // rustc warn that the code after the site is unreachable.
        return quote! {{ #errors ::accel_runtime::__private::rejected() }};
    }
    let resolved = accel_ir::passes::resolve::resolve_site(&body);
    let def = SiteDef {
        file: String::new(),
        loc: loc(Span::call_site()),
        captures: resolved.captures.clone(),
        body,
    };
    let ir = match to_json(&def) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let (fallbacks, callees, ops) = desc_parts(&l, Scope::Site);
    let records = crate::records::record_list(&crate::records::in_site(&expr));
    let desc = use_glob(
        fallbacks,
        quote!(self),
        quote! {
            &::accel_runtime::__private::SiteDesc {
                file: ::core::file!(),
                line: ::core::line!(),
                column: ::core::column!() - 1,
                ir: #ir,
                callees: #callees,
                ops: #ops,
                records: #records,
            }
        },
    );
    let (lent, inspect) = capture_entries(&expr, &resolved.captures, &l.in_place_targets);
    let sequential = rust_form::expr(&expr);
    let tail = match kind {
        SiteKind::Run | SiteKind::Try => {
            let result = quote! {
                // The captures are borrowed to plan and marshal; only the sequential path (run
                // after their last use) may move them.
                #(#lent)*
                let __accel_captures: &[(&str, &dyn ::accel_runtime::__private::Inspect)] = &[#(#inspect),*];
                match ::accel_runtime::__private::plan(__ACCEL_SITE, __accel_captures) {
                    ::core::result::Result::Ok(__accel_plan @ ::accel_runtime::__private::Plan::Compiled(..)) => {
                        ::accel_runtime::__private::run_compiled(__ACCEL_SITE, __accel_plan, __accel_captures)
                    }
                    ::core::result::Result::Ok(::accel_runtime::__private::Plan::Sequential) => {
                        match ::accel_runtime::__private::inspect(__ACCEL_SITE, __accel_captures) {
                            ::core::result::Result::Ok(__accel_inspected) => {
                                ::accel_runtime::__private::run_site(__ACCEL_SITE, __accel_inspected, || #sequential)
                            }
                            ::core::result::Result::Err(__accel_error) => ::core::result::Result::Err(__accel_error),
                        }
                    }
                    ::core::result::Result::Err(__accel_error) => ::core::result::Result::Err(__accel_error),
                }
            };
            if kind == SiteKind::Try {
                result
            } else {
                quote! {
                    let __accel_result = { #result };
                    ::accel_runtime::__private::value_or_panic(__accel_result)
                }
            }
        }
        SiteKind::Describe => quote! {
            // The captures are checked (accel types) as at a running site.
            #(#lent)*
            let _ = (#(#inspect,)*);
            __ACCEL_SITE
        },
    };
    quote! {{
        const __ACCEL_SITE: &'static ::accel_runtime::__private::SiteDesc = #desc;
        const _: () = ::accel_runtime::__private::check_site(__ACCEL_SITE);
        #tail
    }}
}

/// For every captured local, the `capture("v", &v)` entry through which debug mode
/// inspects it, spanned at its first use so that a capture of a type accelerated code
/// cannot use is a compile error pointing at it. A sequence the site writes in place is
/// first lent (`let __accel_lent_v = MutSeq::new(&mut v[..]);`, the statements returned
/// first) and captured as that loan.
fn capture_entries(
    expr: &syn::Expr,
    captures: &[String],
    in_place: &[String],
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut first_use = std::collections::HashMap::new();
    find_idents(expr.to_token_stream(), &mut first_use);
    let mut lent = Vec::new();
    let entries = captures
        .iter()
        .map(|name| {
            let ident = first_use
                .get(name)
                .cloned()
                .unwrap_or_else(|| syn::Ident::new(name, Span::call_site()));
            if in_place.contains(name) {
                let loan = syn::Ident::new(&format!("__accel_lent_{name}"), ident.span());
                lent.push(quote_spanned! {ident.span()=>
                    let #loan = ::accel_runtime::__private::MutSeq::new(&mut #ident[..]);
                });
                quote_spanned! {ident.span()=> ::accel_runtime::__private::capture_mut(#name, &#loan) }
            } else {
                quote_spanned! {ident.span()=> ::accel_runtime::__private::capture(#name, &#ident) }
            }
        })
        .collect();
    (lent, entries)
}

fn find_idents(tokens: TokenStream, out: &mut std::collections::HashMap<String, syn::Ident>) {
    for tt in tokens {
        match tt {
            proc_macro2::TokenTree::Ident(i) => {
                out.entry(i.to_string()).or_insert(i);
            }
            proc_macro2::TokenTree::Group(g) => find_idents(g.stream(), out),
            _ => {}
        }
    }
}
