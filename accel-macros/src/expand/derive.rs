//! `#[derive(Accel)]` on a struct with named fields: a record, usable as an argument, a
//! result and an element of sequences (structure of arrays when marshaled).

use super::errors_to_tokens;
use crate::ty::lower_type;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

/// `#[derive(Accel)]`.
pub fn derive(input: TokenStream) -> TokenStream {
    let item: syn::DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    match record_fields(&item) {
        Ok(fields) => accel_impl(&item, fields),
        Err(e) => e,
    }
}

/// The fields of a record: a struct with named fields of accel types; otherwise the
/// errors.
fn record_fields(
    item: &syn::DeriveInput,
) -> Result<&Punctuated<syn::Field, syn::token::Comma>, TokenStream> {
    let fields = match &item.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(f),
            ..
        }) => &f.named,
        syn::Data::Struct(_) => {
            return Err(syn::Error::new_spanned(
                &item.ident,
                "#[derive(Accel)] needs a struct with named fields (records have field names)",
            )
            .to_compile_error())
        }
        _ => {
            return Err(syn::Error::new_spanned(
                &item.ident,
                "#[derive(Accel)] supports structs with named fields only (no enums or unions)",
            )
            .to_compile_error())
        }
    };
    let mut errors = Vec::new();
    for f in fields {
        if let Err(e) = lower_type(&f.ty, &[]) {
            errors.push(e);
        }
    }
    if !errors.is_empty() {
        return Err(errors_to_tokens(errors));
    }
    Ok(fields)
}

/// The `Accel` impl of a record.
fn accel_impl(
    item: &syn::DeriveInput,
    fields: &Punctuated<syn::Field, syn::token::Comma>,
) -> TokenStream {
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
    // The generated code's own locals (one column per field) carry a prefix, so that no
    // field name (`k`, `len`, `u`, `out`) can shadow them.
    let columns: Vec<syn::Ident> = idents
        .iter()
        .map(|i| quote::format_ident!("__accel_column_{}", i))
        .collect();
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

            fn leaf_offsets(at: usize, out: &mut ::std::vec::Vec<usize>) -> bool {
                true #(&& <#types as ::accel_runtime::Accel>::leaf_offsets(at + ::std::mem::offset_of!(Self, #idents), out))*
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
                __accel_len: usize,
                __accel_u: &mut ::accel_runtime::__private::Unmarshal<'_>,
            ) -> ::std::result::Result<::std::vec::Vec<Self>, ::std::string::String> {
                #(let #columns = <#types as ::accel_runtime::Accel>::unmarshal_columns(__accel_len, __accel_u)?;)*
                if false #(|| #columns.len() < __accel_len)* {
                    return ::std::result::Result::Err(::accel_runtime::__private::short_column());
                }
                if !<Self as ::accel_runtime::Accel>::NESTED {
                    return ::std::result::Result::Ok(::accel_runtime::__private::assemble(__accel_len, |__accel_k| Self {
                        #(#idents: ::accel_runtime::Accel::clone_value(&#columns[__accel_k])),*
                    }));
                }
                // Sequences move out of their columns rather than being copied.
                #(let mut #columns = #columns.into_iter();)*
                let mut __accel_out = ::std::vec::Vec::with_capacity(__accel_len);
                while let (#(::std::option::Option::Some(#idents),)*) = (#(#columns.next(),)*) {
                    __accel_out.push(Self { #(#idents),* });
                }
                ::std::result::Result::Ok(__accel_out)
            }
        }
    }
}
