//! Rust types (syn) to IR types, rejecting the types accelerated code cannot use.

use accel_ir::{ScalarType, Type};
use syn::spanned::Spanned;

/// What accelerated code says of strings and characters, and what to write instead.
pub const NO_STRINGS: &str = "strings and characters (`String`, `&str`, `char`) are not supported in accelerated code: pass text as bytes (`text.as_bytes()`, a `&[u8]`) and write characters as byte literals (`b'a'`, a `u8`)";

/// What accelerated code says of a heap type other than sequences, with what to write
/// instead.
pub fn heap_type_message(name: &str) -> String {
    let instead = match name {
        "HashMap" | "BTreeMap" => "count or sum by key with `reduce_by_index(bins, op, ne, keys, values)` over small integer keys (`keys: Vec<usize>`), or keep sorted keys and values in two sequences",
        "HashSet" | "BTreeSet" => "mark members in a sequence of flags indexed by key (`scatter(vec![false; n], &keys, map(|_| true, &keys))`)",
        "Box" | "Rc" | "Arc" => "pass the value itself (accelerated code copies values and reads sequences in place)",
        _ => "use sequences (`Vec<T>`, `&[T]`) and `Tensor<T>`, the heap types accelerated code has",
    };
    format!("`{name}` is a heap type, which accelerated code does not support: {instead}")
}

/// Heap types other than sequences, which accelerated code rejects.
pub const HEAP_TYPES: &[&str] = &[
    "Box",
    "Rc",
    "Arc",
    "RefCell",
    "Cell",
    "Mutex",
    "HashMap",
    "HashSet",
    "BTreeMap",
    "BTreeSet",
    "VecDeque",
    "LinkedList",
    "BinaryHeap",
];

/// Translates a type. `fn_generics` are the generic parameters bounded by `Fn` traits.
pub fn lower_type(ty: &syn::Type, fn_generics: &[String]) -> syn::Result<Type> {
    match ty {
        syn::Type::Paren(p) => lower_type(&p.elem, fn_generics),
        syn::Type::Group(g) => lower_type(&g.elem, fn_generics),
        syn::Type::Reference(r) => lower_type(&r.elem, fn_generics),
        syn::Type::Slice(s) => Ok(Type::Seq(Box::new(lower_type(&s.elem, fn_generics)?))),
        syn::Type::Array(a) => {
            let elem = lower_type(&a.elem, fn_generics)?;
            match &a.len {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => Ok(Type::Array(Box::new(elem), n.base10_parse()?)),
                // A const generic or a named constant: the runtime learns the length from the values.
                _ => Ok(Type::Array(Box::new(elem), 0)),
            }
        }
        syn::Type::Tuple(t) if t.elems.is_empty() => Ok(Type::Unit),
        syn::Type::Tuple(t) => Ok(Type::Tuple(t.elems.iter().map(|e| lower_type(e, fn_generics)).collect::<syn::Result<_>>()?)),
        syn::Type::Infer(_) => Ok(Type::Infer),
        syn::Type::BareFn(f) => {
            let params = f.inputs.iter().map(|a| lower_type(&a.ty, fn_generics)).collect::<syn::Result<_>>()?;
            Ok(Type::Fn(params, Box::new(return_type(&f.output, fn_generics)?)))
        }
        syn::Type::ImplTrait(it) => match fn_bound(it.bounds.iter()) {
            Some(args) => fn_type_of(args, fn_generics),
            None => Err(syn::Error::new(ty.span(), "`impl Trait` types are not supported in accelerated code, except `impl Fn(..) -> ..`")),
        },
        syn::Type::TraitObject(_) => Err(syn::Error::new(
            ty.span(),
            "trait objects (`dyn Trait`) are not supported in accelerated code: use a concrete type, or `impl Fn(..)` for functions",
        )),
        syn::Type::Ptr(_) => Err(syn::Error::new(ty.span(), "raw pointers are not supported in accelerated code (no `unsafe`)")),
        syn::Type::Never(_) => Err(syn::Error::new(ty.span(), "the never type `!` is not supported in accelerated code")),
        syn::Type::Path(p) => lower_path_type(p, fn_generics),
        _ => Err(syn::Error::new(ty.span(), "this type is not supported in accelerated code")),
    }
}

/// The return type of a signature.
pub fn return_type(out: &syn::ReturnType, fn_generics: &[String]) -> syn::Result<Type> {
    match out {
        syn::ReturnType::Default => Ok(Type::Unit),
        syn::ReturnType::Type(_, t) => lower_type(t, fn_generics),
    }
}

fn lower_path_type(p: &syn::TypePath, fn_generics: &[String]) -> syn::Result<Type> {
    if p.qself.is_some() {
        return Err(syn::Error::new(
            p.span(),
            "qualified paths (`<T as Trait>::X`) are not supported in accelerated code",
        ));
    }
    let last = p
        .path
        .segments
        .last()
        .ok_or_else(|| syn::Error::new(p.span(), "empty type path"))?;
    let name = last.ident.to_string();
    if let Some(s) = ScalarType::from_name(&name) {
        return Ok(Type::Scalar(s));
    }
    let arg = || -> syn::Result<Type> {
        match &last.arguments {
            syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                Some(syn::GenericArgument::Type(t)) => lower_type(t, fn_generics),
                _ => Err(syn::Error::new(
                    last.span(),
                    format!("`{name}` needs an element type"),
                )),
            },
            _ => Err(syn::Error::new(
                last.span(),
                format!("`{name}` needs an element type"),
            )),
        }
    };
    match name.as_str() {
        "Vec" => Ok(Type::Seq(Box::new(arg()?))),
        "Tensor" => Ok(Type::Tensor(Box::new(arg()?))),
        "String" | "str" | "char" => Err(syn::Error::new(
            p.span(),
            NO_STRINGS,
        )),
        "Option" | "Result" => Err(syn::Error::new(
            p.span(),
            format!("`{name}` is not supported in accelerated code: use a flag or a sentinel value in a record or tuple"),
        )),
        "Self" => Err(syn::Error::new(p.span(), "`Self` is not supported in accelerated code: name the type")),
        n if HEAP_TYPES.contains(&n) => Err(syn::Error::new(p.span(), heap_type_message(n))),
        n if fn_generics.iter().any(|g| g == n) => Ok(Type::Fn(vec![], Box::new(Type::Infer))),
        n if p.path.segments.len() == 1 && n.len() == 1 => Ok(Type::Infer), // a generic parameter `T`
        n => Ok(Type::Named(n.to_string())),
    }
}

/// The arguments of an `Fn`/`FnMut`/`FnOnce` bound among `bounds`, if any.
pub fn fn_bound<'a>(
    bounds: impl Iterator<Item = &'a syn::TypeParamBound>,
) -> Option<&'a syn::PathSegment> {
    for b in bounds {
        if let syn::TypeParamBound::Trait(t) = b {
            if let Some(seg) = t.path.segments.last() {
                if matches!(seg.ident.to_string().as_str(), "Fn" | "FnMut" | "FnOnce") {
                    return Some(seg);
                }
            }
        }
    }
    None
}

/// The IR type of the function type named by a bound such as `Fn(f32) -> f32`.
pub fn fn_type_of(seg: &syn::PathSegment, fn_generics: &[String]) -> syn::Result<Type> {
    match &seg.arguments {
        syn::PathArguments::Parenthesized(p) => {
            let params = p
                .inputs
                .iter()
                .map(|t| lower_type(t, fn_generics))
                .collect::<syn::Result<_>>()?;
            Ok(Type::Fn(
                params,
                Box::new(return_type(&p.output, fn_generics)?),
            ))
        }
        _ => Ok(Type::Fn(vec![], Box::new(Type::Infer))),
    }
}
