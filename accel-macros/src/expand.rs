//! What each macro expands to.

use crate::lower::{loc, Lowerer};
use crate::ty::{fn_bound, fn_type_of, lower_type, return_type};
use accel_ir::{FnDef, Loc, Param, SiteDef, Type};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// What `accelerate!`-like macros produce.
#[derive(Clone, Copy, PartialEq)]
pub enum SiteKind {
    /// Run the expression.
    Run,
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
        return quote! {{ #errors ::core::unreachable!() }};
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
            }
        },
    );
    let inspect = capture_entries(&expr, &resolved.captures);
    let tail = match kind {
        SiteKind::Run => quote! {
            // The captures are borrowed to plan and marshal; only the sequential path (run
            // after their last use) may move them.
            let __accel_captures: &[(&str, &dyn ::accel_runtime::__private::Inspect)] = &[#(#inspect),*];
            match ::accel_runtime::__private::plan(__ACCEL_SITE, __accel_captures) {
                __accel_plan @ ::accel_runtime::__private::Plan::Compiled(..) => {
                    ::accel_runtime::__private::run_compiled(__ACCEL_SITE, __accel_plan, __accel_captures)
                }
                ::accel_runtime::__private::Plan::Sequential => {
                    let __accel_inspected = ::accel_runtime::__private::inspect(__ACCEL_SITE, __accel_captures);
                    ::accel_runtime::__private::run_site(__ACCEL_SITE, __accel_inspected, || #expr)
                }
            }
        },
        SiteKind::Describe => quote! {
            // The captures are checked (accel types) as at a running site.
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
/// cannot use is a compile error pointing at it.
fn capture_entries(expr: &syn::Expr, captures: &[String]) -> Vec<TokenStream> {
    let mut first_use = std::collections::HashMap::new();
    find_idents(expr.to_token_stream(), &mut first_use);
    captures
        .iter()
        .map(|name| {
            let ident = first_use
                .get(name)
                .cloned()
                .unwrap_or_else(|| syn::Ident::new(name, Span::call_site()));
            quote_spanned! {ident.span()=> ::accel_runtime::__private::capture(#name, &#ident) }
        })
        .collect()
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

    // Generic parameters bounded by Fn traits are function-typed.
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

    let name = sig.ident.to_string();
    let mut l = Lowerer::new(Some(name.clone()));
    let mut params = Vec::new();
    let mut type_checks = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(_) => {}
            syn::FnArg::Typed(pt) => {
                let ty = lower_type(&pt.ty, &fn_generics).or_else(|e| {
                    // `impl Fn(..)` in argument position and generic Fn parameters.
                    match &*pt.ty {
                        syn::Type::ImplTrait(it) => fn_bound(it.bounds.iter())
                            .map(|s| fn_type_of(s, &fn_generics))
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
    let ret = match return_type(&sig.output, &fn_generics) {
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
    let body = l.block(&func.block);
    errors.append(&mut l.errors);

    let vis = &func.vis;
    let ident = &sig.ident;
    // The companion module: same name as the function, so importing one imports both.
    let companion = |desc: TokenStream| {
        quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types, non_snake_case, dead_code)]
            #vis mod #ident {
                pub static DESC: ::accel_runtime::__private::FnDesc = #desc;
                pub struct Marker;
                impl ::accel_runtime::__private::AccelFn for Marker {}
            }
        }
    };
    if !errors.is_empty() {
        // Keep the function and a companion so that callers report no further errors.
        let errors = errors_to_tokens(errors);
        let companion = companion(quote! {
            ::accel_runtime::__private::FnDesc {
                name: #name, path: "", file: "", line: 0, ir: "", callees: &[], ops: &[], higher_order: false, consts: &[],
            }
        });
        return quote! { #errors #func #companion };
    }

    let higher_order = ret.is_fn() || params.iter().any(|p| p.ty.is_fn());
    let at: Loc = loc(sig.ident.span());
    let def = FnDef {
        name: name.clone(),
        params,
        ret,
        body,
        file: String::new(),
        loc: at,
    };
    let ir = match to_json(&def) {
        Ok(s) => s,
        Err(e) => return e,
    };
    // Constants the body names, as references to their values (resolved through the glob
    // import of the parent module, like callees).
    let consts = {
        let entries = l.consts.iter().map(|c| {
            let text = c.to_string();
            quote_spanned! {c.span()=> (#text, ::accel_runtime::__private::const_value(&#c)) }
        });
        quote! { &[#(#entries),*] }
    };
    let (fallbacks, callees, ops) = desc_parts(&l, Scope::Companion);
    let line = at.line;
    let desc = use_glob(
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
            }
        },
    );
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
    let companion = companion(desc);
    quote! {
        #func
        #companion
        #checks
    }
}

/// `#[derive(Accel)]`.
pub fn derive(input: TokenStream) -> TokenStream {
    let item: syn::DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let fields = match &item.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(f),
            ..
        }) => &f.named,
        syn::Data::Struct(_) => {
            return syn::Error::new_spanned(
                &item.ident,
                "#[derive(Accel)] needs a struct with named fields (records have field names)",
            )
            .to_compile_error()
        }
        _ => {
            return syn::Error::new_spanned(
                &item.ident,
                "#[derive(Accel)] supports structs with named fields only (no enums or unions)",
            )
            .to_compile_error()
        }
    };
    let mut errors = Vec::new();
    for f in fields {
        if let Err(e) = lower_type(&f.ty, &[]) {
            errors.push(e);
        }
    }
    if !errors.is_empty() {
        return errors_to_tokens(errors);
    }
    let name = &item.ident;
    let name_str = name.to_string();
    let mut generics = item.generics.clone();
    for p in generics.type_params_mut() {
        p.bounds.push(syn::parse_quote!(::accel_runtime::Accel));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let field_names: Vec<String> = fields
        .iter()
        .map(|f| f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default())
        .collect();
    let idents: Vec<&syn::Ident> = fields.iter().filter_map(|f| f.ident.as_ref()).collect();
    let types: Vec<&syn::Type> = fields.iter().map(|f| &f.ty).collect();
    let entries = fields.iter().zip(&field_names).map(|(f, field)| {
        let ty = &f.ty;
        quote_spanned! {ty.span()=> (#field.to_string(), <#ty as ::accel_runtime::Accel>::accel_type()) }
    });
    let prefixes = field_names.iter().enumerate().map(|(i, n)| {
        if i == 0 {
            format!("{name_str} {{ {n}: ")
        } else {
            format!(", {n}: ")
        }
    });
    quote! {
        impl #impl_generics ::accel_runtime::Accel for #name #ty_generics #where_clause {
            const NESTED: bool = false #(|| <#types as ::accel_runtime::Accel>::NESTED)*;

            fn accel_type() -> ::accel_runtime::__private::Type {
                ::accel_runtime::__private::Type::Record(#name_str.to_string(), ::std::vec![#(#entries),*])
            }

            fn write_value(&self, out: &mut ::std::string::String) {
                #(
                    out.push_str(#prefixes);
                    ::accel_runtime::Accel::write_value(&self.#idents, out);
                )*
                out.push_str(" }");
            }

            fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
                true #(&& ::accel_runtime::Accel::close_to(
                    &self.#idents,
                    &other.#idents,
                    &inputs.iter().map(|x| &x.#idents).collect::<::std::vec::Vec<_>>(),
                ))*
            }

            fn check(
                &self,
                path: &::accel_runtime::__private::ValuePath<'_>,
                ctx: &mut ::accel_runtime::__private::CheckCtx,
            ) -> ::std::result::Result<(), ::std::string::String> {
                #(
                    if <#types as ::accel_runtime::Accel>::NESTED {
                        ::accel_runtime::Accel::check(&self.#idents, &path.field(#field_names), ctx)?;
                    }
                )*
                ::std::result::Result::Ok(())
            }

            fn clone_value(&self) -> Self {
                Self { #(#idents: ::accel_runtime::Accel::clone_value(&self.#idents)),* }
            }

            fn marshal<'a>(&'a self, m: &mut ::accel_runtime::__private::Marshal<'a>) {
                #(::accel_runtime::Accel::marshal(&self.#idents, m);)*
            }

            fn marshal_columns<'m>(xs: &[Self], m: &mut ::accel_runtime::__private::Marshal<'m>)
            where
                Self: 'm,
            {
                #(::accel_runtime::__private::marshal_part(xs, |x| ::accel_runtime::Accel::clone_value(&x.#idents), m);)*
            }

            fn unmarshal(
                u: &mut ::accel_runtime::__private::Unmarshal<'_>,
            ) -> ::std::result::Result<Self, ::std::string::String> {
                ::std::result::Result::Ok(Self { #(#idents: <#types as ::accel_runtime::Accel>::unmarshal(u)?),* })
            }

            fn unmarshal_columns(
                len: usize,
                u: &mut ::accel_runtime::__private::Unmarshal<'_>,
            ) -> ::std::result::Result<::std::vec::Vec<Self>, ::std::string::String> {
                #(let mut #idents = <#types as ::accel_runtime::Accel>::unmarshal_columns(len, u)?.into_iter();)*
                (0..len)
                    .map(|_| ::std::result::Result::Ok(Self {
                        #(#idents: #idents.next().ok_or_else(|| ::std::string::String::from("a short column"))?),*
                    }))
                    .collect()
            }
        }
    }
}
