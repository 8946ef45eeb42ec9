//! Writes the `MiddlewareState` impl and the key's program-wide declaration. The checks the
//! compiler makes on the user's type (serde data when persistent, `Default`, `Clone`) are
//! spanned at the user's tokens, so their messages (in adk's words, through
//! `#[diagnostic::on_unimplemented]`) point at the struct or at `persistent`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::parse::ParsedState;
use super::validate::{Options, Scope};

pub(super) fn state(parsed: &ParsedState, options: &Options) -> TokenStream {
    let ident = &parsed.ident;
    let span = ident.span();
    let key = match &options.key {
        Some(key) => quote!(#key),
        None => quote!(::core::concat!(
            ::core::module_path!(),
            "::",
            ::core::stringify!(#ident)
        )),
    };
    let version = options.version.unwrap_or(1);
    let (persistence, codec) = match options.persistent {
        Some(persistent) => {
            let scope = match options.scope.unwrap_or(Scope::Thread) {
                Scope::Session => quote!(::adk::middleware_state::StateScope::Session),
                Scope::Thread => quote!(::adk::middleware_state::StateScope::Thread),
            };
            (
                quote!(::adk::middleware_state::Persistence::Persistent(#scope)),
                // At `persistent`: that option is why the type must be serde data.
                quote_spanned! {persistent=>
                    ::core::option::Option::Some(::adk::__private::middleware_state::codec::<#ident>())
                },
            )
        }
        None => (
            quote!(::adk::middleware_state::Persistence::Transient),
            quote!(::core::option::Option::None),
        ),
    };
    let default_on_mismatch = options.default_on_mismatch;
    // Only the function path carries the user's span: `from_version`, `json` and `self` keep the
    // macro's own, so they resolve even when the struct comes from a `macro_rules!` expansion.
    let migrate = match &options.migrate {
        Some(path) => {
            let function = quote_spanned! {path.segments.last().map_or(span, |segment| segment.ident.span())=>
                #path
            };
            quote! {
                ::core::option::Option::Some(::adk::__private::middleware_state::migrate(
                    ::core::marker::PhantomData::<Self>, #function, from_version, json,
                ))
            }
        }
        None => quote!({
            let _ = (from_version, json);
            ::core::option::Option::None
        }),
    };
    let default = quote_spanned! {span=>
        <#ident as ::adk::__private::middleware_state::StateDefault>::make()
    };
    let duplicate = quote_spanned! {span=>
        ::adk::__private::middleware_state::duplicate::<#ident>()
    };
    let clone = quote!((#duplicate)(self));
    quote! {
        impl ::adk::middleware_state::MiddlewareState for #ident {
            const KEY: &'static str = #key;
            const VERSION: u32 = #version;
            const PERSISTENCE: ::adk::middleware_state::Persistence = #persistence;
            const DEFAULT_ON_MISMATCH: bool = #default_on_mismatch;
            #[doc(hidden)]
            const __CODEC: ::core::option::Option<::adk::__private::middleware_state::Codec<Self>> =
                #codec;

            #[doc(hidden)]
            fn __default() -> Self {
                #default
            }

            #[doc(hidden)]
            fn __clone(&self) -> Self {
                #clone
            }

            #[doc(hidden)]
            fn __migrate(
                from_version: u32,
                json: ::adk::__private::middleware_state::Json,
            ) -> ::core::option::Option<
                ::core::result::Result<Self, ::adk::__private::middleware_state::BoxError>,
            > {
                #migrate
            }
        }

        ::adk::__private::inventory::submit! {
            ::adk::declarations::Declaration {
                kind: ::adk::declarations::DeclarationKind::MIDDLEWARE_STATE,
                path: <#ident as ::adk::middleware_state::MiddlewareState>::KEY,
                type_name: ::core::any::type_name::<#ident>,
                file: ::core::file!(),
                line: ::core::line!(),
            }
        }

        ::adk::__private::inventory::submit! {
            ::adk::__private::middleware_state::Registration::of::<#ident>()
        }
    }
}

/// What a rejected derive writes beside its errors: a bare `MiddlewareState` impl, with no
/// assertions and no declaration, so every use of the type still type-checks and the derive's
/// error is the only one the user reads (without it each use adds "`X` is not middleware
/// state"). The crate does not build, so nothing ever calls its functions. A generic type's
/// impl assumes the trait's `Send + Sync + 'static` rather than reporting it again.
pub(super) fn rejected(parsed: &ParsedState, options: &Options) -> TokenStream {
    let ident = &parsed.ident;
    let mut generics = parsed.generics.clone();
    if !generics.params.is_empty() {
        let (_, type_generics, _) = parsed.generics.split_for_impl();
        generics
            .make_where_clause()
            .predicates
            .push(syn::parse_quote!(#ident #type_generics: ::core::marker::Send + ::core::marker::Sync + 'static));
    }
    let (impl_generics, type_generics, where_clause) = generics.split_for_impl();
    let key = match &options.key {
        Some(key) => quote!(#key),
        None => quote!(::core::concat!(
            ::core::module_path!(),
            "::",
            ::core::stringify!(#ident)
        )),
    };
    let version = options.version.unwrap_or(1);
    let never = quote!(::core::unreachable!(
        "`#[derive(MiddlewareState)]` was rejected, so this crate does not build"
    ));
    quote! {
        impl #impl_generics ::adk::middleware_state::MiddlewareState for #ident #type_generics #where_clause {
            const KEY: &'static str = #key;
            const VERSION: u32 = #version;
            const PERSISTENCE: ::adk::middleware_state::Persistence =
                ::adk::middleware_state::Persistence::Transient;
            const DEFAULT_ON_MISMATCH: bool = false;
            #[doc(hidden)]
            const __CODEC: ::core::option::Option<::adk::__private::middleware_state::Codec<Self>> =
                ::core::option::Option::None;

            #[doc(hidden)]
            fn __default() -> Self {
                #never
            }

            #[doc(hidden)]
            fn __clone(&self) -> Self {
                #never
            }

            #[doc(hidden)]
            fn __migrate(
                _: u32,
                _: ::adk::__private::middleware_state::Json,
            ) -> ::core::option::Option<
                ::core::result::Result<Self, ::adk::__private::middleware_state::BoxError>,
            > {
                ::core::option::Option::None
            }
        }
    }
}
