//! Reads the tokens of `stash_key!` and `stash_keys!` into a model that keeps every user token,
//! so validation can point at the exact place of each mistake.
//!
//! Parsing never stops at the first syntax mistake when it can still read on: it records the
//! error, keeps whatever it already understood (a key whose type is missing still has its path
//! checked) and, inside `stash_keys!`, skips to the next key.

use proc_macro2::{Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::discouraged::Speculative;
use syn::parse::{ParseStream, Parser};
use syn::{Attribute, Expr, ExprLit, Ident, Lit, LitStr, Token, Type, Visibility};

use super::Errors;

/// Where a key's path came from: the string literal the macro can check, or anything else
/// (a `const` name, a `concat!`, a number), which it cannot read at expansion time.
pub(crate) enum PathSource {
    Literal(LitStr),
    NotAStringLiteral(Expr),
}

impl ToTokens for PathSource {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            Self::Literal(literal) => literal.to_tokens(tokens),
            Self::NotAStringLiteral(expression) => expression.to_tokens(tokens),
        }
    }
}

impl PathSource {
    fn parse(stream: ParseStream<'_>) -> syn::Result<Self> {
        let expression: Expr = stream.parse()?;
        Ok(match expression {
            Expr::Lit(ExprLit {
                lit: Lit::Str(literal),
                attrs,
            }) if attrs.is_empty() => Self::Literal(literal),
            other => Self::NotAStringLiteral(other),
        })
    }

    pub(crate) fn literal(&self) -> Option<&LitStr> {
        match self {
            Self::Literal(literal) => Some(literal),
            Self::NotAStringLiteral(_) => None,
        }
    }

    /// The path as the user should have written it, for examples inside error messages.
    pub(crate) fn example_path(&self) -> String {
        match self {
            Self::Literal(literal) if !literal.value().is_empty() => literal.value(),
            _ => "my-org.count".to_owned(),
        }
    }
}

/// The input of `stash_key!("my-org.count" => u32)`. Either half may be missing when the user
/// made a mistake; the errors describing it are in the `Errors` passed to [`single_key`].
pub(crate) struct SingleKey {
    pub(crate) path: Option<PathSource>,
    pub(crate) value_type: Option<Type>,
}

/// One line of `stash_keys!`: `/// docs #[attr] pub COUNT: "my-org.count" => u32`.
pub(crate) struct KeyItem {
    pub(crate) attributes: Vec<Attribute>,
    pub(crate) visibility: Visibility,
    pub(crate) name: Ident,
    pub(crate) path: PathSource,
    pub(crate) value_type: Type,
}

/// Reads `stash_key!`'s input, recording syntax mistakes in `errors`.
pub(crate) fn single_key(input: TokenStream, errors: &mut Errors) -> SingleKey {
    let parser = |stream: ParseStream<'_>| Ok(read_single_key(stream, errors));
    match parser.parse2(input) {
        Ok(key) => key,
        Err(error) => {
            errors.push(error);
            SingleKey {
                path: None,
                value_type: None,
            }
        }
    }
}

fn read_single_key(stream: ParseStream<'_>, errors: &mut Errors) -> SingleKey {
    let mut key = SingleKey {
        path: None,
        value_type: None,
    };
    if stream.is_empty() {
        errors.at_span(
            Span::call_site(),
            "`stash_key!` needs a stash path and the type stored under it: \
             `stash_key!(\"my-org.count\" => u32)`",
        );
        return key;
    }
    let path = match PathSource::parse(stream) {
        Ok(path) => path,
        Err(error) => {
            errors.push(error);
            discard_rest(stream);
            return key;
        }
    };
    let example = format!("stash_key!(\"{}\" => {{type}})", path.example_path());
    key.value_type = read_arrow_and_type(stream, &path, &example, false, errors);
    key.path = Some(path);
    if key.value_type.is_some() && stream.peek(Token![,]) && stream.peek2(syn::parse::End) {
        // A trailing comma, as `macro_rules!` macros accept.
        let _trailing_comma = stream.parse::<Token![,]>();
    }
    if key.value_type.is_some() && !stream.is_empty() {
        let unexpected: TokenStream = discard_rest(stream);
        errors.at(
            unexpected,
            "unexpected tokens after the type; `stash_key!` declares one key, \
                 use `stash_keys!` to declare several",
        );
    }
    discard_rest(stream);
    key
}

/// Reads `=> Type` after a path. On a mistake it records an error whose message shows
/// `example` (with `{type}` standing for the type) and returns the type only if it could still
/// be read, so the expansion can stay typed.
fn read_arrow_and_type(
    stream: ParseStream<'_>,
    path: &PathSource,
    example: &str,
    in_group: bool,
    errors: &mut Errors,
) -> Option<Type> {
    let end_of_key =
        |stream: ParseStream<'_>| stream.is_empty() || in_group && stream.peek(Token![,]);
    if !stream.peek(Token![=>]) {
        if end_of_key(stream) {
            errors.at(
                path,
                format!(
                    "missing the type stored under this stash path; add `=>` and the type: `{}`",
                    example.replace("{type}", "u32")
                ),
            );
            return None;
        }
        // A wrong separator such as `,`, `:` or `->`: read the type after it so the example
        // in the message is the user's own line, corrected.
        let separator = stream.span();
        let value_type = type_after_wrong_separator(stream, &end_of_key);
        let shown_type = value_type
            .as_ref()
            .map_or_else(|| "u32".to_owned(), display_tokens);
        errors.at_span(
            separator,
            format!(
                "expected `=>` between the stash path and the type stored under it: `{}`",
                example.replace("{type}", &shown_type)
            ),
        );
        return value_type;
    }
    let arrow: Token![=>] = match stream.parse() {
        Ok(arrow) => arrow,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    if end_of_key(stream) {
        errors.at(
            arrow,
            format!(
                "missing the type after `=>`; write the type of the value stored under this \
                 path, for example `{}`",
                example.replace("{type}", "u32")
            ),
        );
        return None;
    }
    match stream.parse::<Type>() {
        Ok(value_type) => Some(value_type),
        Err(error) => {
            errors.push(error);
            None
        }
    }
}

/// Tries `<separator> Type` where the separator is one punctuation (`,` `:` `=`) or `->`.
/// Consumes the tokens only when a whole type follows.
fn type_after_wrong_separator(
    stream: ParseStream<'_>,
    end_of_key: &dyn Fn(ParseStream<'_>) -> bool,
) -> Option<Type> {
    let fork = stream.fork();
    let first = match fork.parse::<TokenTree>().ok()? {
        TokenTree::Punct(punct) => punct,
        _ => return None,
    };
    if first.spacing() == Spacing::Joint {
        let _second: TokenTree = fork.parse().ok()?;
    }
    let value_type: Type = fork.parse().ok()?;
    if !end_of_key(&fork) {
        return None;
    }
    stream.advance_to(&fork);
    Some(value_type)
}

fn discard_rest(stream: ParseStream<'_>) -> TokenStream {
    stream.parse::<TokenStream>().unwrap_or_default()
}

/// Reads `stash_keys!`'s input. A key with a syntax mistake is reported and skipped; the keys
/// around it are still returned so their consts exist and uses of them raise no extra errors.
pub(crate) fn key_group(input: TokenStream, errors: &mut Errors) -> Vec<KeyItem> {
    let parser = |stream: ParseStream<'_>| {
        let mut items = Vec::new();
        while !stream.is_empty() {
            match read_key_item(stream, errors) {
                Some(item) => items.push(item),
                None => skip_to_next_item(stream),
            }
            if stream.is_empty() {
                break;
            }
            if stream.peek(Token![,]) {
                let _comma: Token![,] = stream.parse()?;
            } else if stream.peek(Token![;]) {
                // Written like a list of items; the next key is still read.
                let semicolon: Token![;] = stream.parse()?;
                errors.at(semicolon, "separate keys with `,`, not `;`");
            } else {
                let unexpected = stream.span();
                errors.at_span(
                    unexpected,
                    "expected `,` after the key's type, before the next key",
                );
                skip_to_next_item(stream);
                if stream.peek(Token![,]) {
                    let _comma: Token![,] = stream.parse()?;
                }
            }
        }
        Ok(items)
    };
    match parser.parse2(input) {
        Ok(items) => items,
        Err(error) => {
            errors.push(error);
            Vec::new()
        }
    }
}

fn read_key_item(stream: ParseStream<'_>, errors: &mut Errors) -> Option<KeyItem> {
    let attributes = match stream.call(Attribute::parse_outer) {
        Ok(attributes) => attributes,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let visibility: Visibility = match stream.parse() {
        Ok(visibility) => visibility,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    if stream.peek(Token![const]) || stream.peek(Token![static]) {
        // Reported, then skipped: the rest of the key is still read so its const exists.
        let keyword: TokenTree = stream.parse().ok()?;
        errors.at(
            &keyword,
            format!(
                "remove `{keyword}`: `stash_keys!` writes the `const` itself; declare each key \
                 as `NAME: \"my-org.count\" => u32`"
            ),
        );
    }
    let name: Ident = match stream.parse() {
        Ok(name) => name,
        Err(_) => {
            let unexpected = stream.span();
            errors.at_span(
                unexpected,
                "expected the key's name; declare each key as \
                     `NAME: \"my-org.count\" => u32`",
            );
            return None;
        }
    };
    // A missing `:` is reported once the rest of the key is read, so the message can show the
    // user's own path and type in the corrected line.
    let mut missing_colon_at: Option<TokenStream> = None;
    if stream.peek(Token![:]) {
        let _colon: Token![:] = stream.parse().ok()?;
    } else if stream.peek(Token![=]) && !stream.peek(Token![=>]) {
        // `NAME = "path" => Type` reads like an assignment.
        let equals: Token![=] = stream.parse().ok()?;
        missing_colon_at = Some(equals.to_token_stream());
    } else if stream.peek(syn::Lit) {
        missing_colon_at = Some(name.to_token_stream());
    } else {
        let unexpected = if stream.is_empty() {
            name.span()
        } else {
            stream.span()
        };
        errors.at_span(
            unexpected,
            format!(
                "expected `:` after `{name}`; declare the key as `{name}: \"my-org.count\" => u32`"
            ),
        );
        return None;
    }
    if stream.is_empty() || stream.peek(Token![,]) {
        errors.at(
            &name,
            format!(
                "missing the stash path of `{name}`; declare the key as \
                 `{name}: \"my-org.count\" => u32`"
            ),
        );
        return None;
    }
    let path = match PathSource::parse(stream) {
        Ok(path) => path,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let example = format!("{name}: {} => {{type}}", display_tokens(&path));
    let value_type = read_arrow_and_type(stream, &path, &example, true, errors);
    if let Some(tokens) = missing_colon_at {
        let shown_type = value_type
            .as_ref()
            .map_or_else(|| "u32".to_owned(), display_tokens);
        errors.at(
            tokens,
            format!(
                "expected `:` after `{name}`; declare the key as `{}`",
                example.replace("{type}", &shown_type)
            ),
        );
    }
    Some(KeyItem {
        attributes,
        visibility,
        name,
        path,
        value_type: value_type?,
    })
}

/// Skips the rest of a malformed key up to the comma that ends it. Commas inside a type's
/// `<...>` do not count; commas inside brackets are hidden in their token group already.
fn skip_to_next_item(stream: ParseStream<'_>) {
    let _ = stream.step(|cursor| {
        let mut rest = *cursor;
        let mut angle_depth = 0_usize;
        // `->` and `=>` end in `>` without closing a generic list.
        let mut previous_joint_arrow_start = false;
        while let Some((token, next)) = rest.token_tree() {
            if let TokenTree::Punct(punct) = &token {
                match punct.as_char() {
                    ',' if angle_depth == 0 => return Ok(((), rest)),
                    '<' => angle_depth += 1,
                    '>' if !previous_joint_arrow_start => {
                        angle_depth = angle_depth.saturating_sub(1);
                    }
                    _ => {}
                }
                previous_joint_arrow_start =
                    matches!(punct.as_char(), '-' | '=') && punct.spacing() == Spacing::Joint;
            } else {
                previous_joint_arrow_start = false;
            }
            rest = next;
        }
        Ok(((), rest))
    });
}

/// Tokens as a user would write them (`Vec<String>`, not `Vec < String >`), for messages.
pub(crate) fn display_tokens(tokens: &impl quote::ToTokens) -> String {
    let spaced = tokens.to_token_stream().to_string();
    let mut shown = String::with_capacity(spaced.len());
    let mut characters = spaced.chars().peekable();
    while let Some(character) = characters.next() {
        let next = characters.peek().copied();
        let previous = shown.chars().last();
        let drop_space = character == ' '
            && (matches!(next, Some('<' | '>' | ',' | ')' | ']' | ':'))
                || matches!(previous, Some('<' | '(' | '[' | '&' | ':')));
        if !drop_space {
            shown.push(character);
        }
    }
    shown
}
