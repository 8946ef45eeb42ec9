//! `stash_key!` and `stash_keys!`: typed stash keys whose dot-paths are checked while the user's
//! crate compiles.
//!
//! `parse` reads the tokens, `validate` applies the stash's path rules and the group's collision
//! rules, `expand` writes `::adk::StashKey` constructors. Errors from every phase are gathered in
//! one [`Errors`] collector, so a user sees all the problems of their keys in one build.

mod expand;
mod parse;
mod validate;

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// Every mistake found in one macro call, reported together so a user fixes them all in one
/// build instead of one per build.
///
/// It holds `syn::Error`s rather than `darling::Error`s because a `syn::Error` built from tokens
/// remembers their first and last span: the caret then covers `concat!("a", ".b")` whole,
/// where a single span would underline only `concat`.
#[derive(Default)]
pub(crate) struct Errors(Vec<syn::Error>);

impl Errors {
    /// Records `message`, underlining `tokens` from their first token to their last.
    pub(crate) fn at(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.0.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records `message` at one span, for places that are not a parsed node.
    pub(crate) fn at_span(&mut self, span: Span, message: impl Display) {
        self.0.push(syn::Error::new(span, message));
    }

    /// Records an error syn produced while parsing; it already points at the bad token.
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.0.push(error);
    }

    /// The `compile_error!` invocations for every recorded mistake, or `None` if there were none.
    pub(crate) fn into_compile_errors(self) -> Option<TokenStream> {
        if self.0.is_empty() {
            return None;
        }
        Some(self.0.iter().map(syn::Error::to_compile_error).collect())
    }

    #[cfg(test)]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }
}

/// Expands `stash_key!("my-org.count" => u32)` into a `const`-usable `::adk::StashKey<u32>`.
pub(crate) fn stash_key(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let key = parse::single_key(input, &mut errors);
    let literal = key.path.as_ref().and_then(|path| {
        let usage = format!(
            "stash_key!(\"my-org.count\" => {})",
            key.value_type
                .as_ref()
                .map_or_else(|| "u32".to_owned(), parse::display_tokens)
        );
        validate::check_path(path, &usage, &mut errors).or_else(|| path.literal())
    });
    if let Some(value_type) = &key.value_type {
        validate::check_value_type(value_type, &mut errors);
    }
    let errors = errors.into_compile_errors();
    expand::single_key(key.value_type.as_ref(), literal, errors)
}

/// Expands `stash_keys! { pub COUNT: "my-org.count" => u32, .. }` into one `const` per key.
pub(crate) fn stash_keys(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let items = parse::key_group(input, &mut errors);
    let valid = validate::check_group(&items, &mut errors);
    let errors = errors.into_compile_errors();
    // With any error in the group nothing is declared: the crate does not compile anyway, and a
    // value-type assertion would only add to the errors already shown.
    let declarable: Vec<bool> = valid
        .iter()
        .map(|valid| *valid && errors.is_none())
        .collect();
    expand::key_group(&items, &declarable, errors)
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn group(input: TokenStream) -> (Vec<String>, Vec<String>) {
        let mut errors = Errors::default();
        let items = parse::key_group(input, &mut errors);
        validate::check_group(&items, &mut errors);
        let names = items.iter().map(|item| item.name.to_string()).collect();
        (names, errors.messages())
    }

    fn single(input: TokenStream) -> (bool, Vec<String>) {
        let mut errors = Errors::default();
        let key = parse::single_key(input, &mut errors);
        if let Some(path) = &key.path {
            validate::check_path(path, "stash_key!(\"my-org.count\" => u32)", &mut errors);
        }
        (key.value_type.is_some(), errors.messages())
    }

    #[test]
    fn a_valid_key_asserts_its_type_registers_itself_and_ends_in_the_constructor() {
        let expansion = stash_key(quote!("my-org.count" => Vec<String>));
        let block = syn::parse2::<syn::Block>(expansion).expect("the expansion is a block");
        let text = quote!(#block).to_string();
        assert!(
            text.contains("assert_stash_value :: < Vec < String > > ()"),
            "{text}"
        );
        assert!(text.contains("inventory :: submit !"), "{text}");
        assert!(text.contains("path : \"my-org.count\""), "{text}");
        assert!(
            text.ends_with(":: __from_checked_literal (\"my-org.count\") }"),
            "{text}"
        );
    }

    #[test]
    fn a_borrowed_value_type_is_refused_with_the_owned_type() {
        let mut errors = Errors::default();
        validate::check_value_type(&syn::parse_quote!(&'static str), &mut errors);
        validate::check_value_type(&syn::parse_quote!(&[u8]), &mut errors);
        let messages = errors.messages();
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(
            messages[0].contains("store `String` instead of `&'static str`"),
            "{messages:#?}"
        );
        assert!(
            messages[1].contains("store `Vec<u8>` instead of `&[u8]`"),
            "{messages:#?}"
        );
    }

    #[test]
    fn a_rejected_key_still_expands_to_a_key_of_its_type() {
        let expansion = stash_key(quote!("count" => u32)).to_string();
        assert!(expansion.contains("compile_error"), "{expansion}");
        let key = quote!(::adk::StashKey::<u32>::__from_checked_literal("count")).to_string();
        assert!(expansion.ends_with(&format!("{key} }}")), "{expansion}");
    }

    #[test]
    fn a_group_keeps_docs_attributes_and_visibility() {
        let expansion = stash_keys(quote! {
            /// Docs.
            #[allow(dead_code)]
            pub(crate) COUNT: "my-org.count" => u32,
        });
        let text = expansion.to_string();
        let expected = quote! {
            /// Docs.
            #[allow(dead_code)]
            pub(crate) const COUNT: ::adk::StashKey<u32> =
        };
        assert!(text.starts_with(&expected.to_string()), "{text}");
        assert!(text.contains("inventory :: submit !"), "{text}");
    }

    #[test]
    fn a_valid_key_has_no_errors() {
        assert_eq!(
            single(quote!("my-org.count" => Vec<String>)),
            (true, Vec::new())
        );
    }

    #[test]
    fn a_trailing_comma_is_accepted_but_a_second_key_is_not() {
        assert_eq!(single(quote!("my-org.count" => u32,)), (true, Vec::new()));
        let (_, messages) = single(quote!("my-org.count" => u32, "my-org.total" => u32));
        assert_eq!(messages.len(), 1);
        assert!(messages[0].contains("use `stash_keys!`"));
    }

    #[test]
    fn a_missing_type_and_a_bad_path_are_both_reported() {
        let (has_type, messages) = single(quote!("count"));
        assert!(!has_type);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].starts_with("missing the type"));
        assert!(messages[1].contains("has no namespace"));
    }

    #[test]
    fn a_wrong_separator_still_yields_the_type_for_the_expansion() {
        let (has_type, messages) = single(quote!("my-org.names", Vec<String>));
        assert!(has_type);
        assert_eq!(
            messages,
            [
                "expected `=>` between the stash path and the type stored under it: \
              `stash_key!(\"my-org.names\" => Vec<String>)`"
            ]
        );
    }

    #[test]
    fn a_non_literal_path_says_it_must_be_a_literal() {
        let (_, messages) = single(quote!(concat!("my-org", ".count") => u32));
        assert_eq!(messages.len(), 1);
        assert!(messages[0].starts_with("the stash path must be a string literal"));
    }

    #[test]
    fn a_malformed_key_does_not_hide_the_keys_after_it() {
        let (names, messages) = group(quote! {
            BROKEN: "my-org.broken" HashMap<String, u32>,
            pub NEXT: "my-org.next" => u8,
        });
        assert_eq!(names, ["NEXT"]);
        assert_eq!(messages.len(), 1, "{messages:#?}");
    }

    #[test]
    fn keys_separated_by_semicolons_are_all_read() {
        let (names, messages) = group(quote! {
            A: "my-org.a" => u32;
            B: "my-org.b" => u8;
        });
        assert_eq!(names, ["A", "B"]);
        assert_eq!(
            messages,
            [
                "separate keys with `,`, not `;`",
                "separate keys with `,`, not `;`"
            ]
        );
    }

    #[test]
    fn garbage_after_a_type_is_reported_once_and_the_next_key_still_read() {
        let (names, messages) = group(quote! {
            A: "my-org.a" => u32 extra tokens,
            B: "my-org.b" => u8,
        });
        assert_eq!(names, ["A", "B"]);
        assert_eq!(messages.len(), 1, "{messages:#?}");
    }

    #[test]
    fn every_bad_key_of_a_group_is_reported_and_still_declared() {
        let (names, messages) = group(quote! {
            COUNT: "count" => u32,
            RETRIES: "my-org.gpt-4.1" => u32,
            POLICY: "my-org.policy" => String,
        });
        assert_eq!(names, ["COUNT", "RETRIES", "POLICY"]);
        assert_eq!(messages.len(), 2, "{messages:#?}");
    }

    #[test]
    fn collisions_name_both_keys() {
        let (_, messages) = group(quote! {
            POLICY: "my-org.policy" => String,
            MODE: "my-org.policy.mode" => String,
            AGAIN: "my-org.policy.mode" => String,
        });
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].contains("`MODE` already uses it"));
        assert!(messages[0].contains("`AGAIN`"));
        assert!(messages[1].contains("`POLICY`") && messages[1].contains("`MODE`"));
    }

    #[test]
    fn an_equals_sign_instead_of_a_colon_is_reported_and_the_key_still_declared() {
        let (names, messages) =
            group(quote!(COUNT = "my-org.count" => u32, NEXT "my-org.next" => u8));
        assert_eq!(names, ["COUNT", "NEXT"]);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].starts_with("expected `:` after `COUNT`"));
        assert!(messages[1].starts_with("expected `:` after `NEXT`"));
    }

    #[test]
    fn const_written_by_the_user_is_reported_and_the_key_still_declared() {
        let (names, messages) = group(quote!(pub const COUNT: "my-org.count" => u32));
        assert_eq!(names, ["COUNT"]);
        assert_eq!(messages.len(), 1);
        assert!(messages[0].starts_with("remove `const`"));
    }
}
