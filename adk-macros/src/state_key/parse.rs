//! Reads `"scope:name" => Type`, recording a spanned error for each part that is missing.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream, Parser};
use syn::{LitStr, Token, Type};

const USAGE: &str = "`state_key!` takes a key and the type stored under it: \
                     `state_key!(\"user:theme\" => String)`";

/// What the user wrote; `None` for a part that could not be read.
pub(super) struct ParsedKey {
    pub(super) key: Option<LitStr>,
    pub(super) value_type: Option<Type>,
}

pub(super) fn key(input: TokenStream, errors: &mut Vec<syn::Error>) -> ParsedKey {
    let parser = |stream: ParseStream<'_>| Ok(read(stream, errors));
    parser.parse2(input).unwrap_or(ParsedKey {
        key: None,
        value_type: None,
    })
}

fn read(stream: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> ParsedKey {
    let mut parsed = ParsedKey {
        key: None,
        value_type: None,
    };
    if stream.is_empty() {
        errors.push(syn::Error::new(Span::call_site(), USAGE));
        return parsed;
    }
    match stream.parse::<LitStr>() {
        Ok(literal) => parsed.key = Some(literal),
        Err(error) => {
            errors.push(syn::Error::new(
                error.span(),
                format!("expected the key as a string literal; {USAGE}"),
            ));
            let _ = stream.parse::<TokenStream>();
            return parsed;
        }
    }
    if stream.parse::<Token![=>]>().is_err() {
        errors.push(syn::Error::new(
            stream.span(),
            format!("expected `=>` and the type stored under the key; {USAGE}"),
        ));
        let _ = stream.parse::<TokenStream>();
        return parsed;
    }
    match Type::parse(stream) {
        Ok(value_type) => parsed.value_type = Some(value_type),
        Err(error) => {
            errors.push(syn::Error::new(
                error.span(),
                format!("expected the type stored under the key; {USAGE}"),
            ));
            let _ = stream.parse::<TokenStream>();
            return parsed;
        }
    }
    if stream.peek(Token![,]) {
        let _trailing_comma = stream.parse::<Token![,]>();
    }
    if !stream.is_empty() {
        errors.push(syn::Error::new(
            stream.span(),
            format!("unexpected tokens after the type; {USAGE}"),
        ));
        let _ = stream.parse::<TokenStream>();
    }
    parsed
}
