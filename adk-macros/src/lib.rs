//! Procedural macros for [adk](https://docs.rs/adk). Depend on `adk` and use them from there:
//! their expansions name `::adk` paths.
//!
//! Each macro is split the same way: `parse` reads tokens into a model, `validate` checks the
//! model and collects every error with the span of the user's token, `expand` writes the code.

#![forbid(unsafe_code)]

use proc_macro::TokenStream;

mod middleware;
mod middleware_state;
mod stash_key;
mod state_key;
mod storage_adapter;
mod structured_output;

/// Declares a typed stash key; see `adk::stash_key!`.
#[proc_macro]
pub fn stash_key(input: TokenStream) -> TokenStream {
    stash_key::stash_key(input.into()).into()
}

/// Declares a group of typed stash keys; see `adk::stash_keys!`.
#[proc_macro]
pub fn stash_keys(input: TokenStream) -> TokenStream {
    stash_key::stash_keys(input.into()).into()
}

/// Declares a typed, scoped session-state key; see `adk::state_key!`.
#[proc_macro]
pub fn state_key(input: TokenStream) -> TokenStream {
    state_key::state_key(input.into()).into()
}

/// Declares a storage adapter from a struct and a list of callbacks; see `adk::storage_adapter!`.
#[proc_macro]
pub fn storage_adapter(input: TokenStream) -> TokenStream {
    storage_adapter::expand(input.into()).into()
}

/// Turns an `async fn(ctx, next) -> Result<(), E>` into middleware for the pipelines it names;
/// see `adk::middleware`.
#[proc_macro_attribute]
pub fn middleware(arguments: TokenStream, item: TokenStream) -> TokenStream {
    let placement = middleware::placement::of_call_site();
    middleware::expand(arguments.into(), item.into(), &placement).into()
}

/// Makes a struct typed middleware state; see `adk::middleware_state`.
#[proc_macro_derive(MiddlewareState, attributes(middleware_state))]
pub fn derive_middleware_state(input: TokenStream) -> TokenStream {
    middleware_state::derive(input.into()).into()
}

/// Makes a struct a reply shape for OpenAI's strict structured outputs, checked against strict
/// mode's subset at compile time; see `adk::openai::StructuredOutput`.
#[proc_macro_derive(StructuredOutput, attributes(structured_output))]
pub fn derive_structured_output(input: TokenStream) -> TokenStream {
    structured_output::derive(input.into()).into()
}
