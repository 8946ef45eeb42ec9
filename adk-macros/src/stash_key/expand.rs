//! Writes the code for checked keys. Reports no user errors itself: it receives them already
//! rendered and places them so that only they are shown, not errors that follow from them.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{LitStr, Type};

use super::parse::KeyItem;

/// The constructor call for one key. `path` is `None` when the user's path is not a literal;
/// the key then gets an empty path, which is never used because the crate does not compile.
fn constructor(value_type: Option<&Type>, path: Option<&LitStr>) -> TokenStream {
    let value_type = match value_type {
        Some(value_type) => quote!(#value_type),
        None => quote!(_),
    };
    let path = match path {
        Some(literal) => quote!(#literal),
        None => quote!(""),
    };
    quote!(::adk::StashKey::<#value_type>::__from_checked_literal(#path))
}

/// A key that passed every check: its type is asserted to be stash data (spanned at the type,
/// so a wrong one is reported there), and it is registered program-wide so
/// `adk::declarations::check` can compare it with the keys declared elsewhere. `at` places the
/// recorded line.
fn declared_key(value_type: &Type, path: &LitStr, at: Span) -> TokenStream {
    let location = quote_spanned!(at=> file: ::core::file!(), line: ::core::line!());
    let key = constructor(Some(value_type), Some(path));
    // `stash_key!("a.b" => _)` takes its type from where it is used, which the declaration
    // cannot name: the type is checked through the key, and the key is collected with
    // `INFERRED_TYPE`, so its path is still checked against the others.
    let (assertion, type_name, key) = if let Type::Infer(_) = value_type {
        (
            TokenStream::new(),
            quote!(::adk::declarations::inferred_type),
            quote!(::adk::__private::stash::checked_key(#key)),
        )
    } else {
        (
            quote_spanned! {value_type.span()=>
                ::adk::__private::stash::assert_stash_value::<#value_type>();
            },
            quote!(::core::any::type_name::<#value_type>),
            key,
        )
    };
    quote!({
        #assertion
        ::adk::__private::inventory::submit! {
            ::adk::declarations::Declaration {
                kind: ::adk::declarations::DeclarationKind::STASH_KEY,
                path: #path,
                type_name: #type_name,
                #location,
            }
        }
        #key
    })
}

/// `stash_key!`'s expression. With errors it is still a `StashKey` of the user's type (or of an
/// inferred type when none was written), so `const K: StashKey<u32> = stash_key!(..)` shows the
/// macro's error alone instead of a type mismatch as well.
pub(crate) fn single_key(
    value_type: Option<&Type>,
    path: Option<&LitStr>,
    errors: Option<TokenStream>,
) -> TokenStream {
    match (errors, value_type, path) {
        (None, Some(value_type), Some(path)) => declared_key(value_type, path, Span::call_site()),
        (errors, value_type, path) => {
            let key = constructor(value_type, path);
            quote!({
                #errors
                #key
            })
        }
    }
}

/// `stash_keys!`'s items: one `const` per key that parsed, valid or not, so that code using a
/// rejected key reports nothing beyond the rejection, followed by the errors.
pub(crate) fn key_group(
    items: &[KeyItem],
    declarable: &[bool],
    errors: Option<TokenStream>,
) -> TokenStream {
    let consts = items.iter().zip(declarable).map(|(item, declarable)| {
        let KeyItem {
            attributes,
            visibility,
            name,
            path,
            value_type,
        } = item;
        let key = match path.literal() {
            Some(literal) if *declarable => declared_key(value_type, literal, name.span()),
            literal => constructor(Some(value_type), literal),
        };
        quote! {
            #(#attributes)*
            #visibility const #name: ::adk::StashKey<#value_type> = #key;
        }
    });
    quote! {
        #(#consts)*
        #errors
    }
}
