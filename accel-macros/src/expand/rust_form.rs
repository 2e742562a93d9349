//! The Rust that debug mode (and the sequential fallback) runs for accelerated code: the
//! code as written, with iterator chains read as std's sequential iterators. `par_iter`
//! (and `iter`) becomes `ChainSource::chain_iter` (std's `iter` for the sequences a chain may start
//! from) and `into_par_iter` `chain_into_iter` (`into_iter`), so no rayon import is needed;
//! `fold(ne, op)` and rayon's `reduce(|| ne, op)` become calls that check the assumptions
//! their compiled forms make (`accel_runtime::__private::chain_fold`, `chain_reduce`).

use proc_macro2::Span;
use quote::quote_spanned;
use syn::visit_mut::{self, VisitMut};

/// `e` as debug mode runs it.
pub fn expr(e: &syn::Expr) -> syn::Expr {
    let mut e = e.clone();
    Sequential.visit_expr_mut(&mut e);
    e
}

/// A function body as debug mode runs it.
pub fn block(b: &syn::Block) -> syn::Block {
    let mut b = b.clone();
    Sequential.visit_block_mut(&mut b);
    b
}

struct Sequential;

impl VisitMut for Sequential {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        visit_mut::visit_expr_mut(self, e);
        let syn::Expr::MethodCall(m) = e else { return };
        let name = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let span = m.method.span();
        match (name.as_str(), args.as_slice()) {
            ("par_iter" | "iter", []) => {
                let recv = &m.receiver;
                *e = call(
                    span,
                    quote_spanned!(span=> ::accel_runtime::__private::ChainSource::chain_iter(&(#recv))),
                );
            }
            (
                "par_iter_mut"
                | "par_chunks_mut"
                | "par_chunks_exact_mut"
                | "par_windows"
                | "par_chunks"
                | "par_chunks_exact",
                _,
            ) => {
                // rayon's in-place forms, as std's: the same items in order.
                let std_name = name.trim_start_matches("par_");
                m.method = syn::Ident::new(std_name, span);
            }
            ("into_par_iter", []) => {
                // `(a..b)` needs no parentheses as an argument (a lint would say so).
                let recv = match &*m.receiver {
                    syn::Expr::Paren(p) => &p.expr,
                    r => r,
                };
                *e = call(
                    span,
                    quote_spanned!(span=> ::accel_runtime::__private::chain_into_iter(#recv)),
                );
            }
            ("fold", [ne, op]) => {
                let recv = &m.receiver;
                *e = call(
                    span,
                    quote_spanned!(span=> ::accel_runtime::__private::chain_fold(#recv, #ne, #op)),
                );
            }
            ("reduce", [syn::Expr::Closure(identity), op]) if identity.inputs.is_empty() => {
                let recv = &m.receiver;
                *e = call(
                    span,
                    quote_spanned!(span=> ::accel_runtime::__private::chain_reduce(#recv, #identity, #op)),
                );
            }
            _ => {}
        }
    }
}

fn call(span: Span, tokens: proc_macro2::TokenStream) -> syn::Expr {
    syn::parse2(tokens).unwrap_or_else(|e| {
        let e = syn::Error::new(span, format!("accel: {e}")).to_compile_error();
        syn::Expr::Verbatim(e)
    })
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    fn rewritten(src: &str) -> String {
        let e: syn::Expr = syn::parse_str(src).expect("an expression");
        super::expr(&e).to_token_stream().to_string()
    }

    #[test]
    fn parallel_sources_read_as_sequential_ones() {
        assert_eq!(
            rewritten("xs.par_iter().zip(&ys).map(|(x, y)| x * y).sum::<f32>()"),
            ":: accel_runtime :: __private :: ChainSource :: chain_iter (& (xs)) . zip (& ys) . map (| (x , y) | x * y) . sum :: < f32 > ()"
        );
        assert_eq!(
            rewritten("(0..n).into_par_iter().count()"),
            ":: accel_runtime :: __private :: chain_into_iter (0 .. n) . count ()"
        );
    }

    #[test]
    fn folds_and_reductions_check_their_assumptions() {
        assert_eq!(
            rewritten("xs.iter().fold(0, |a, x| a + x)"),
            ":: accel_runtime :: __private :: chain_fold (:: accel_runtime :: __private :: ChainSource :: chain_iter (& (xs)) , 0 , | a , x | a + x)"
        );
        assert_eq!(
            rewritten("xs.par_iter().map(|x| x * 2).reduce(|| 0, |a, b| a + b)"),
            ":: accel_runtime :: __private :: chain_reduce (:: accel_runtime :: __private :: ChainSource :: chain_iter (& (xs)) . map (| x | x * 2) , | | 0 , | a , b | a + b)"
        );
        // Other methods named alike are left alone.
        assert_eq!(rewritten("a.reduce(b)"), "a . reduce (b)");
    }
}
