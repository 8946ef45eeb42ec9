//! `stash_key!` and `stash_keys!`. PLACEHOLDER — issue 2.

use proc_macro2::TokenStream;

pub fn stash_key(input: TokenStream) -> TokenStream {
    let _ = input;
    quote::quote!(compile_error!("stash_key! is not built yet"))
}

pub fn stash_keys(input: TokenStream) -> TokenStream {
    let _ = input;
    quote::quote!(compile_error!("stash_keys! is not built yet"))
}
