//! Reads the derive input as written: the item's kind and generics, and every
//! `#[middleware_state(name)]` / `#[middleware_state(name = value)]` option in order, so
//! `validate` can point at each token.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{DeriveInput, Expr, Generics, Ident, Token};

/// What kind of item the derive is on; only a struct is accepted.
pub(super) enum ItemKind {
    Struct,
    /// An enum or union, with the span of its keyword.
    Other(&'static str, Span),
}

/// One option as written: its name and, after `=`, its value.
pub(super) struct RawOption {
    pub(super) name: Ident,
    pub(super) value: Option<Expr>,
}

/// The derive input, read.
pub(super) struct ParsedState {
    pub(super) ident: Ident,
    pub(super) kind: ItemKind,
    pub(super) generics: Generics,
    pub(super) options: Vec<RawOption>,
}

pub(super) fn item(input: &DeriveInput, errors: &mut Vec<syn::Error>) -> ParsedState {
    let kind = match &input.data {
        syn::Data::Struct(_) => ItemKind::Struct,
        syn::Data::Enum(data) => ItemKind::Other("an enum", data.enum_token.span()),
        syn::Data::Union(data) => ItemKind::Other("a union", data.union_token.span()),
    };
    let mut options = Vec::new();
    for attribute in &input.attrs {
        if !attribute.path().is_ident("middleware_state") {
            continue;
        }
        if matches!(attribute.meta, syn::Meta::Path(_)) {
            // `#[middleware_state]` alone says nothing; the defaults need no attribute.
            errors.push(syn::Error::new(
                attribute.span(),
                "`#[middleware_state]` without options changes nothing: remove it, or give \
                 options such as `#[middleware_state(persistent, scope = session)]`",
            ));
            continue;
        }
        let read = attribute.parse_nested_meta(|meta| {
            let Some(name) = meta.path.get_ident().cloned() else {
                return Err(meta.error(
                    "expected an option name such as `persistent`, `scope`, `version` or `key`",
                ));
            };
            let value = if meta.input.peek(Token![=]) {
                Some(meta.value()?.parse::<Expr>()?)
            } else {
                None
            };
            options.push(RawOption { name, value });
            Ok(())
        });
        if let Err(error) = read {
            errors.push(error);
        }
    }
    ParsedState {
        ident: input.ident.clone(),
        kind,
        generics: input.generics.clone(),
        options,
    }
}
