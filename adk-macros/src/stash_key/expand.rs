//! Writes the code for checked keys. Reports no user errors itself: it receives them already
//! rendered and places them so that only they are shown, not errors that follow from them.

use proc_macro2::TokenStream;
use quote::quote;
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

/// `stash_key!`'s expression. With errors it is still a `StashKey` of the user's type (or of an
/// inferred type when none was written), so `const K: StashKey<u32> = stash_key!(..)` shows the
/// macro's error alone instead of a type mismatch as well.
pub(crate) fn single_key(
    value_type: Option<&Type>,
    path: Option<&LitStr>,
    errors: Option<TokenStream>,
) -> TokenStream {
    let key = constructor(value_type, path);
    match errors {
        None => key,
        Some(errors) => quote!({
            #errors
            #key
        }),
    }
}

/// `stash_keys!`'s items: one `const` per key that parsed, valid or not, so that code using a
/// rejected key reports nothing beyond the rejection, followed by the errors.
pub(crate) fn key_group(items: &[KeyItem], errors: Option<TokenStream>) -> TokenStream {
    let consts = items.iter().map(|item| {
        let KeyItem {
            attributes,
            visibility,
            name,
            path,
            value_type,
        } = item;
        let key = constructor(Some(value_type), path.literal());
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
