//! Reads `"scope:name" => Type`, recording a spanned error for each part that is missing.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream, Parser};
use syn::{Ident, LitStr, Path, Token, Type};

const USAGE: &str = "`state_key!` takes a key and the type stored under it, and optionally its \
                     contention policy: `state_key!(\"user:theme\" => String)`, \
                     `state_key!(\"app:visits\" => u64, on_conflict = add)`";

/// What the user wrote; `None` for a part that could not be read.
pub(super) struct ParsedKey {
    pub(super) key: Option<LitStr>,
    pub(super) value_type: Option<Type>,
    pub(super) policy: Option<ParsedPolicy>,
}

/// `on_conflict = name` or `on_conflict = merge(path)`, as written.
pub(super) struct ParsedPolicy {
    pub(super) name: Ident,
    pub(super) function: Option<Path>,
}

pub(super) fn key(input: TokenStream, errors: &mut Vec<syn::Error>) -> ParsedKey {
    let parser = |stream: ParseStream<'_>| Ok(read(stream, errors));
    parser.parse2(input).unwrap_or(ParsedKey {
        key: None,
        value_type: None,
        policy: None,
    })
}

fn read(stream: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> ParsedKey {
    let mut parsed = ParsedKey {
        key: None,
        value_type: None,
        policy: None,
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
        let _comma = stream.parse::<Token![,]>();
    }
    if stream.peek(Ident) {
        parsed.policy = policy(stream, errors);
        if stream.peek(Token![,]) {
            let _trailing_comma = stream.parse::<Token![,]>();
        }
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

const POLICY_USAGE: &str = "write `on_conflict = refuse`, `last_writer_wins`, `add`, `union`, \
                            `max` or `merge(your_fn)`";

fn policy(stream: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> Option<ParsedPolicy> {
    let label: Ident = stream.parse().ok()?;
    if label != "on_conflict" {
        errors.push(syn::Error::new(
            label.span(),
            format!(
                "unknown option `{label}`; the only option is the contention policy: {POLICY_USAGE}"
            ),
        ));
        let _ = stream.parse::<TokenStream>();
        return None;
    }
    if stream.parse::<Token![=]>().is_err() {
        errors.push(syn::Error::new(
            stream.span(),
            format!("expected `=` after `on_conflict`; {POLICY_USAGE}"),
        ));
        let _ = stream.parse::<TokenStream>();
        return None;
    }
    let Ok(name) = stream.parse::<Ident>() else {
        errors.push(syn::Error::new(
            stream.span(),
            format!("expected the policy's name; {POLICY_USAGE}"),
        ));
        let _ = stream.parse::<TokenStream>();
        return None;
    };
    let mut function = None;
    if stream.peek(syn::token::Paren) {
        let group = stream.parse::<proc_macro2::Group>().ok()?;
        match syn::parse2::<Path>(group.stream()) {
            Ok(path) => function = Some(path),
            _ => {
                errors.push(syn::Error::new(
                    name.span(),
                    format!("`{name}(..)` takes the path of a function; {POLICY_USAGE}"),
                ));
                return None;
            }
        }
    }
    Some(ParsedPolicy { name, function })
}
