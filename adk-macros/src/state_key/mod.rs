//! `state_key!`: typed session-state keys whose scope prefix and name are checked while the
//! user's crate compiles.
//!
//! `parse` reads `"scope:name" => Type` and an optional `on_conflict = policy`, `validate`
//! applies the scope rules to the literal and checks the policy's name, and `expand` writes the
//! `::adk::state::StateKey` constructor with spanned assertions that the type is serde data and
//! supports the policy's merge. Every mistake found is reported in one build.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

/// Expands `state_key!("user:theme" => String)` into a `const`-usable
/// `::adk::state::StateKey<String>`.
pub(crate) fn state_key(input: TokenStream) -> TokenStream {
    let mut errors = Vec::new();
    let parsed = parse::key(input, &mut errors);
    if let Some(literal) = &parsed.key {
        validate::check_key(literal, &mut errors);
    }
    let marker = parsed
        .policy
        .as_ref()
        .and_then(|policy| validate::check_policy(policy, &mut errors));
    let errors: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
    expand::key(&parsed, marker, errors)
}
