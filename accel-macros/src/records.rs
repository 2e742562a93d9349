//! The record types accelerated code names (in struct literals and patterns, and in type
//! annotations and signatures), so that the runtime knows their fields even when no value
//! of them is captured or returned: a site may build a record and pass it to a helper.

use proc_macro2::TokenStream;
use quote::{quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::ty::lower_type;
use accel_ir::Type;

/// The paths of the record types a site names, each once, as written.
pub fn in_site(e: &syn::Expr) -> Vec<syn::Path> {
    let mut finder = Finder::default();
    finder.visit_expr(e);
    finder.found
}

/// The paths of the record types an `#[accel]` function names (in its signature and
/// body), each once, as written; its type parameters name none.
pub fn in_function(f: &syn::ItemFn) -> Vec<syn::Path> {
    let generics = f
        .sig
        .generics
        .type_params()
        .map(|t| t.ident.to_string())
        .collect();
    let mut finder = Finder {
        generics,
        found: Vec::new(),
    };
    finder.visit_item_fn(f);
    finder.found
}

/// The description's `records` field: each record's type, through its `Accel` impl.
pub fn record_list(paths: &[syn::Path]) -> TokenStream {
    let entries = paths.iter().map(|p| {
        quote_spanned! {p.span()=> ::accel_runtime::__private::record_type::<#p> }
    });
    quote::quote! { &[#(#entries),*] }
}

/// Rust's primitive types that accelerated code does not handle (the others lower to
/// scalars): they name no record, and their use is reported where it is checked.
const PRIMITIVES: [&str; 10] = [
    "u8", "u16", "u128", "i8", "i16", "i128", "isize", "f16", "f128", "char",
];

/// Collects record paths while visiting code.
#[derive(Default)]
struct Finder {
    generics: Vec<String>,
    found: Vec<syn::Path>,
}

impl Finder {
    fn note(&mut self, path: &syn::Path) {
        let generic = path
            .get_ident()
            .is_some_and(|i| self.generics.contains(&i.to_string()));
        let text = path.to_token_stream().to_string();
        if !generic
            && !self
                .found
                .iter()
                .any(|p| p.to_token_stream().to_string() == text)
        {
            self.found.push(path.clone());
        }
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
        if s.qself.is_none() {
            self.note(&s.path);
        }
        syn::visit::visit_expr_struct(self, s);
    }

    fn visit_pat_struct(&mut self, s: &'ast syn::PatStruct) {
        if s.qself.is_none() {
            self.note(&s.path);
        }
        syn::visit::visit_pat_struct(self, s);
    }

    fn visit_type_path(&mut self, t: &'ast syn::TypePath) {
        let ty = syn::Type::Path(t.clone());
        let primitive = t
            .path
            .get_ident()
            .is_some_and(|i| PRIMITIVES.contains(&&*i.to_string()));
        if let (false, Ok(Type::Named(_))) = (primitive, lower_type(&ty, &self.generics)) {
            self.note(&t.path);
        }
        syn::visit::visit_type_path(self, t);
    }

    // Items nested in a body are not accelerated code.
    fn visit_item(&mut self, _: &'ast syn::Item) {}

    // A macro's tokens are not parsed; accelerated code rejects macros anyway.
    fn visit_macro(&mut self, _: &'ast syn::Macro) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(paths: &[syn::Path]) -> Vec<String> {
        paths
            .iter()
            .map(|p| p.to_token_stream().to_string().replace(' ', ""))
            .collect()
    }

    #[test]
    fn literals_patterns_and_annotations_name_records_once() {
        let e: syn::Expr = syn::parse_quote! {
            map(|a: geo::Pt| { let q = Px { k: 1, on: true }; let Px { k, .. } = q; let v: Vec<Grid> = f(a); k }, &xs)
        };
        let found = in_site(&e);
        assert_eq!(names(&found), ["geo::Pt", "Px", "Grid"]);
    }

    #[test]
    fn scalars_sequences_and_generics_are_not_records() {
        let item: syn::ItemFn = syn::parse_quote! {
            fn f<Elem>(xs: &[f32], t: Tensor<i64>, e: Elem, g: T) -> (u8, Vec<bool>) { (0, vec![]) }
        };
        let found = in_function(&item);
        assert!(found.is_empty(), "{:?}", names(&found));
    }
}
