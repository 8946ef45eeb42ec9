//! Reads the derive input as written: the item's kind, its fields with their types, and every
//! key of the serde, schemars and validator attributes on the container and on each field, so
//! `validate` can point at the token that breaks strict mode.

use darling::FromDeriveInput;
use darling::util::SpannedValue;
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Attribute, DeriveInput, Generics, Ident, Token, Type};

/// `#[structured_output(..)]`, read by darling (unknown keys come back with a suggestion).
#[derive(FromDeriveInput)]
#[darling(attributes(structured_output))]
struct Options {
    /// The `json_schema.name` to send instead of the type's name in snake case.
    #[darling(default)]
    name: Option<SpannedValue<String>>,
}

/// One key of a serde / schemars / validator attribute: `default` in `#[serde(default)]`,
/// `range` in `#[schemars(range(min = 1))]`.
pub(super) struct Key {
    /// `serde`, `schemars`, `validate` or `garde`.
    pub(super) attribute: String,
    pub(super) name: String,
    pub(super) span: Span,
}

pub(super) struct Field {
    /// `None` in a tuple struct.
    pub(super) ident: Option<Ident>,
    pub(super) ty: Type,
    pub(super) keys: Vec<Key>,
    pub(super) span: Span,
}

pub(super) enum Kind {
    /// A struct with named fields (a tuple or unit struct is `Unnamed`).
    Struct(Vec<Field>),
    /// A struct without named fields, with the span to point at.
    Unnamed(Span),
    /// An enum: each variant with the span of its data, when it has some.
    Enum(Vec<(Ident, Option<Span>)>),
    Union(Span),
}

pub(super) struct Parsed {
    pub(super) ident: Ident,
    pub(super) generics: Generics,
    pub(super) kind: Kind,
    pub(super) name: Option<SpannedValue<String>>,
    pub(super) container_keys: Vec<Key>,
}

pub(super) fn item(input: &DeriveInput, errors: &mut Vec<syn::Error>) -> Parsed {
    let name = match Options::from_derive_input(input) {
        Ok(options) => options.name,
        Err(error) => {
            errors.push(syn::Error::new(error.span(), error.to_string()));
            None
        }
    };
    let kind = match &input.data {
        syn::Data::Struct(data) => match &data.fields {
            syn::Fields::Named(fields) => Kind::Struct(
                fields
                    .named
                    .iter()
                    .map(|field| Field {
                        ident: field.ident.clone(),
                        ty: field.ty.clone(),
                        keys: keys(&field.attrs, errors),
                        span: field.span(),
                    })
                    .collect(),
            ),
            other => Kind::Unnamed(if other.is_empty() {
                input.ident.span()
            } else {
                other.span()
            }),
        },
        syn::Data::Enum(data) => Kind::Enum(
            data.variants
                .iter()
                .map(|variant| {
                    let data = (!variant.fields.is_empty()).then(|| variant.fields.span());
                    (variant.ident.clone(), data)
                })
                .collect(),
        ),
        syn::Data::Union(data) => Kind::Union(data.union_token.span()),
    };
    Parsed {
        ident: input.ident.clone(),
        generics: input.generics.clone(),
        kind,
        name,
        container_keys: keys(&input.attrs, errors),
    }
}

/// The keys of the serde / schemars / validator attributes among `attributes`.
fn keys(attributes: &[Attribute], errors: &mut Vec<syn::Error>) -> Vec<Key> {
    let mut found = Vec::new();
    for attribute in attributes {
        let Some(which) = ["serde", "schemars", "validate", "garde"]
            .into_iter()
            .find(|name| attribute.path().is_ident(name))
        else {
            continue;
        };
        if !matches!(attribute.meta, syn::Meta::List(_)) {
            continue;
        }
        let read = attribute.parse_nested_meta(|meta| {
            let name = meta
                .path
                .segments
                .iter()
                .map(|segment| segment.ident.to_string())
                .collect::<Vec<_>>()
                .join("::");
            found.push(Key {
                attribute: which.to_owned(),
                name,
                span: meta.path.span(),
            });
            // The value is not judged, only skipped: `= expr` or `( .. )`.
            if meta.input.peek(Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            }
            Ok(())
        });
        // serde reports malformed serde attributes itself; say nothing twice.
        if let Err(error) = read
            && which != "serde"
        {
            errors.push(error);
        }
    }
    found
}
