//! Writes the `StateKey` constructor and the spanned serde-data assertion on the user's type.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::parse::ParsedKey;

/// The key's expression. With errors it is still a `StateKey` of the user's type (or of an
/// inferred one), so the macro's errors are shown alone, not followed by type mismatches.
pub(super) fn key(parsed: &ParsedKey, errors: TokenStream) -> TokenStream {
    let value_type = match &parsed.value_type {
        Some(value_type) => quote!(#value_type),
        None => quote!(_),
    };
    let literal = match (&parsed.key, errors.is_empty()) {
        (Some(literal), true) => quote!(#literal),
        _ => quote!(""),
    };
    // Spanned at the type, so a type that is not serde data is reported where it was written,
    // with `StateValue`'s message.
    let assertion = parsed.value_type.as_ref().map(|value_type| {
        quote_spanned! {value_type.span()=>
            const _: fn() = ::adk::state::__assert_state_value::<#value_type>;
        }
    });
    quote!({
        #errors
        #assertion
        ::adk::state::StateKey::<#value_type>::__from_checked_literal(#literal)
    })
}
