//! Writes the `StateKey` constructor and the spanned serde-data assertion on the user's type.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::parse::ParsedKey;

/// The key's expression. With errors it is still a `StateKey` of the user's type (or of an
/// inferred one), so the macro's errors are shown alone, not followed by type mismatches.
pub(super) fn key(
    parsed: &ParsedKey,
    marker: Option<&'static str>,
    errors: TokenStream,
) -> TokenStream {
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
    let constructor = match (marker, &parsed.policy, errors.is_empty()) {
        (Some(marker), Some(policy), true) if marker != "Refuse" => {
            let marker_ident = syn::Ident::new(marker, policy.name.span());
            // Spanned at the policy, so a value type the merge does not support is reported
            // there, with the policy trait's message naming the fix.
            let merge = match &policy.function {
                Some(function) => quote_spanned! {function.span()=>
                    {
                        const __ADK_MERGE: fn(::core::option::Option<#value_type>, #value_type) -> #value_type = #function;
                        |stored, operand| ::core::result::Result::Ok(__ADK_MERGE(stored, operand))
                    }
                },
                None => {
                    let function =
                        syn::Ident::new(&format!("__{}", policy.name), policy.name.span());
                    quote_spanned! {policy.name.span()=>
                        ::adk::state::contention::#function::<#value_type>
                    }
                }
            };
            quote! {
                ::adk::state::StateKey::<#value_type, ::adk::state::contention::#marker_ident>::__with_policy(#literal, #merge)
            }
        }
        // An error was reported: a key of any policy, so no type mismatch follows it.
        (_, Some(_), false) => quote!(::adk::state::StateKey::<#value_type, _>::__after_error()),
        _ => quote!(::adk::state::StateKey::<#value_type>::__from_checked_literal(#literal)),
    };
    quote!({
        #errors
        #assertion
        #constructor
    })
}
