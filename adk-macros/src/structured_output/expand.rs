//! Writes the `::adk::openai` impls and the spanned `StrictSchema` assertions. With errors the
//! impls are still written, so the macro's errors are shown alone, not followed by "trait not
//! implemented" where the type is used.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::parse::Parsed;
use super::validate::Checked;

pub(super) fn item(parsed: &Parsed, checked: &Checked, errors: TokenStream) -> TokenStream {
    let ident = &parsed.ident;
    let (impl_generics, type_generics, where_clause) = parsed.generics.split_for_impl();
    let name = &checked.name;
    let reply = checked.is_reply.then(|| {
        quote! {
            impl #impl_generics ::adk::openai::StructuredOutput for #ident #type_generics
            #where_clause
            {
                const NAME: &'static str = #name;
            }
        }
    });
    // Spanned at the field's type, so a type strict mode refuses is reported where it was
    // written, with `StrictSchema`'s message.
    let assertions = checked.assertions.iter().map(|ty| {
        quote_spanned! {ty.span()=>
            const _: fn() = ::adk::openai::__assert_strict::<#ty>;
        }
    });
    let assertions = if parsed.generics.params.is_empty() {
        quote!(#(#assertions)*)
    } else {
        TokenStream::new()
    };
    quote! {
        #errors
        impl #impl_generics ::adk::openai::StrictSchema for #ident #type_generics #where_clause {}
        #reply
        #assertions
    }
}
