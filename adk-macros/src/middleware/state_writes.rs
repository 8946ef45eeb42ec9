//! The session-state writes a middleware's body makes, found in its tokens, so the runner can
//! refuse a middleware that writes state only a session store keeps when it is built without
//! one (issue 32, "wiring, not silence").
//!
//! The scan finds call shapes, the compiler judges what they name:
//!
//! - `.update_middleware_state::<T>(..)`, `.try_update_middleware_state::<T, E>(..)`, the same
//!   with a typed closure (`|breaker: &mut Breaker| ..`), and
//!   `.middleware_states_mut().update::<T>(..)` / `.try_update::<T, _>(..)`: the type `T`;
//! - `.set(KEY, ..)`, `.merge(KEY, ..)`, `.add(KEY, ..)`, `.set_state(KEY, ..)`,
//!   `.merge_state(KEY, ..)` with a constant's path (its last segment in upper case): the key,
//!   when the constant is a `StateKey` (a `&str` constant there is some other type's `set`);
//! - `.state_mut().set_value(..)` and `.set_state_value(..)` with a string literal or a
//!   constant's path (a `StateKey` or a `&'static str`): the key.
//!
//! What was found is emitted as one hidden fn next to the body, which hands each key or type to
//! a probe (`adk::__private::state_writes`): a value that is not a state key, or a type that is
//! not middleware state, records nothing and adds no error. A body with no such write emits
//! nothing.
//!
//! The emitted fn names the paths outside the body, so a path is used only when it means there
//! what it means in the body: a name the body declares itself (`let`, `const`, `static`, `use`,
//! an item, a `for` binding) is skipped, a write inside an `unsafe` block is skipped (it may
//! name a `static mut`), and a body with a `#[cfg(..)]` inside is not scanned at all (a write
//! under a `cfg` may name a constant that does not exist). What is skipped, and
//! every write the scan cannot see (through a helper fn, a local binding, a key chosen at run
//! time), is still refused by the turn that makes it (`E_STATE_NO_SESSION_STORE`).

use std::collections::BTreeSet;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::quote;

/// The writes found, in the order first found, without repeats.
#[derive(Default)]
pub(crate) struct Found {
    /// Paths to constants passed as keys, each with whether a `&'static str` constant counts
    /// (the string-key methods) or only a `StateKey` (the typed ones).
    keys: Vec<(TokenStream, bool)>,
    /// Keys written as string literals, outside `temp:`.
    literals: Vec<String>,
    /// Types updated as middleware state.
    types: Vec<TokenStream>,
    seen: BTreeSet<String>,
}

impl Found {
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.literals.is_empty() && self.types.is_empty()
    }

    fn first_time(&mut self, kind: &str, tokens: &TokenStream) -> bool {
        self.seen.insert(format!("{kind} {tokens}"))
    }

    /// The body of the hidden fn that records the writes into `writes`.
    pub(crate) fn recorder(&self) -> TokenStream {
        let writes = syn::Ident::new("writes", proc_macro2::Span::call_site());
        let keys = self.keys.iter().map(|(key, string)| {
            let probe = if *string {
                quote!(StrKeyProbe)
            } else {
                quote!(KeyProbe)
            };
            quote!((&::adk::__private::state_writes::#probe(&#key)).__adk_record(#writes);)
        });
        let literals = self
            .literals
            .iter()
            .map(|literal| quote!(#writes.key(#literal);));
        let types = self.types.iter().map(|ty| {
            quote!((&::adk::__private::state_writes::StateProbe::<#ty>::new()).__adk_record(#writes);)
        });
        quote! {
            #[doc(hidden)]
            #[allow(clippy::needless_borrow, clippy::needless_borrows_for_generic_args)]
            fn __adk_state_writes(#writes: &mut ::adk::pipeline::StateWrites) {
                #[allow(unused_imports)]
                use ::adk::__private::state_writes::{
                    IsMiddlewareState as _, IsStateKey as _, NotMiddlewareState as _,
                    NotStateKey as _,
                };
                #(#keys)*
                #(#literals)*
                #(#types)*
            }
        }
    }
}

/// The writes in `body`, the fn's braced body (see the module docs).
pub(crate) fn scan(body: &proc_macro2::Group) -> Found {
    let mut found = Found::default();
    let tokens = body.stream();
    let mut locals = BTreeSet::new();
    if !declared_names(tokens.clone(), &mut locals) {
        return found;
    }
    find_writes(tokens, &locals, &mut found);
    found
}

/// Collects the names the body declares into `names`; false when the body has a `#[cfg]` or
/// `#[cfg_attr]` inside.
fn declared_names(stream: TokenStream, names: &mut BTreeSet<String>) -> bool {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut index = 0;
    while index < tokens.len() {
        match &tokens[index] {
            TokenTree::Punct(punct) if punct.as_char() == '#' => {
                if let Some(TokenTree::Group(attribute)) = tokens.get(index + 1)
                    && let Some(TokenTree::Ident(name)) = attribute.stream().into_iter().next()
                    && (name == "cfg" || name == "cfg_attr")
                {
                    return false;
                }
            }
            TokenTree::Group(group) if !declared_names(group.stream(), names) => return false,
            TokenTree::Ident(keyword) => {
                let keyword = keyword.to_string();
                match keyword.as_str() {
                    // Everything up to the end of the pattern or the use tree.
                    "let" | "use" | "for" => {
                        let end = (index + 1..tokens.len())
                            .find(|&at| ends_binding(&tokens[at], &tokens[at - 1], &keyword))
                            .unwrap_or(tokens.len());
                        for token in &tokens[index + 1..end] {
                            every_ident(token, names);
                        }
                    }
                    "const" | "static" | "fn" | "struct" | "enum" | "type" | "union" | "trait"
                    | "mod" => {
                        if let Some(TokenTree::Ident(name)) = tokens[index + 1..]
                            .iter()
                            .find(|token| !matches!(token, TokenTree::Ident(word) if word == "mut"))
                        {
                            names.insert(name.to_string());
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        index += 1;
    }
    true
}

/// Whether `token` (after `previous`) ends what `keyword` binds.
fn ends_binding(token: &TokenTree, previous: &TokenTree, keyword: &str) -> bool {
    let joint_colon = |token: &TokenTree| {
        matches!(token, TokenTree::Punct(punct)
            if punct.as_char() == ':' && punct.spacing() == proc_macro2::Spacing::Joint)
    };
    match (token, keyword) {
        (TokenTree::Ident(word), "for") => word == "in",
        // The pattern ends at its type (`let x: T`), its value or the statement's end; a `:`
        // of a path's `::` is joint to the other.
        (TokenTree::Punct(punct), "let") => {
            matches!(punct.as_char(), '=' | ';')
                || (punct.as_char() == ':' && !joint_colon(token) && !joint_colon(previous))
        }
        (TokenTree::Punct(punct), _) => punct.as_char() == ';',
        _ => false,
    }
}

fn every_ident(token: &TokenTree, names: &mut BTreeSet<String>) {
    match token {
        TokenTree::Ident(name) => {
            names.insert(name.to_string());
        }
        TokenTree::Group(group) => {
            for token in group.stream() {
                every_ident(&token, names);
            }
        }
        _ => {}
    }
}

const TYPED_KEY_WRITES: &[&str] = &["set", "merge", "add", "set_state", "merge_state"];
const STATE_UPDATES: &[&str] = &["update_middleware_state", "try_update_middleware_state"];

fn find_writes(stream: TokenStream, locals: &BTreeSet<String>, found: &mut Found) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for (index, token) in tokens.iter().enumerate() {
        let method = match token {
            TokenTree::Group(group) => {
                // An `unsafe` block may name a `static mut`, which the record (outside the
                // block) could not borrow: its writes are left to the turn.
                let in_unsafe = index > 0
                    && matches!(&tokens[index - 1], TokenTree::Ident(word) if word == "unsafe");
                if !in_unsafe {
                    find_writes(group.stream(), locals, found);
                }
                continue;
            }
            TokenTree::Ident(method) if index > 0 && is_punct(&tokens[index - 1], '.') => {
                method.to_string()
            }
            _ => continue,
        };
        let after = &tokens[index + 1..];
        let receiver_is = |name: &str| called_on(&tokens[..index - 1], name);
        let updates_state = STATE_UPDATES.contains(&method.as_str())
            || (matches!(method.as_str(), "update" | "try_update")
                && receiver_is("middleware_states_mut"));
        if updates_state {
            if let Some(ty) = turbofish_type(after).or_else(|| closure_type(after))
                && usable(&ty, locals)
                && found.first_time("type", &ty)
            {
                found.types.push(ty);
            }
            continue;
        }
        let string_key =
            method == "set_state_value" || (method == "set_value" && receiver_is("state_mut"));
        if !string_key && !TYPED_KEY_WRITES.contains(&method.as_str()) {
            continue;
        }
        let Some(argument) = first_argument(after) else {
            continue;
        };
        if string_key && let Some(literal) = string_literal(&argument) {
            if !literal.starts_with("temp:") && found.first_time("literal", &argument) {
                found.literals.push(literal);
            }
            continue;
        }
        if constant_path(&argument)
            && usable(&argument, locals)
            && found.first_time("key", &argument)
        {
            found.keys.push((argument, string_key));
        }
    }
}

fn is_punct(token: &TokenTree, char: char) -> bool {
    matches!(token, TokenTree::Punct(punct) if punct.as_char() == char)
}

/// Whether `before` ends with `.name()` (the receiver of the method after it).
fn called_on(before: &[TokenTree], name: &str) -> bool {
    match before {
        [
            ..,
            TokenTree::Punct(dot),
            TokenTree::Ident(method),
            TokenTree::Group(arguments),
        ] => {
            dot.as_char() == '.'
                && method == name
                && arguments.delimiter() == Delimiter::Parenthesis
                && arguments.stream().is_empty()
        }
        _ => false,
    }
}

/// The first type of `::<T, ..>` at the start of `after`.
fn turbofish_type(after: &[TokenTree]) -> Option<TokenStream> {
    let [first, second, open, rest @ ..] = after else {
        return None;
    };
    if !(is_punct(first, ':') && is_punct(second, ':') && is_punct(open, '<')) {
        return None;
    }
    let mut depth = 0usize;
    let mut ty = TokenStream::new();
    for token in rest {
        match token {
            TokenTree::Punct(punct) if punct.as_char() == '<' => depth += 1,
            TokenTree::Punct(punct) if punct.as_char() == '>' => {
                if depth == 0 {
                    return non_empty(ty);
                }
                depth -= 1;
            }
            TokenTree::Punct(punct) if punct.as_char() == ',' && depth == 0 => {
                return non_empty(ty);
            }
            // `->` in a fn pointer type: not a type the scan reads.
            TokenTree::Punct(punct) if punct.as_char() == '-' => return None,
            _ => {}
        }
        ty.extend([token.clone()]);
    }
    None
}

/// `T` in `(|name: &mut T| ..)` at the start of `after`.
fn closure_type(after: &[TokenTree]) -> Option<TokenStream> {
    let Some(TokenTree::Group(arguments)) = after.first() else {
        return None;
    };
    let tokens: Vec<TokenTree> = arguments.stream().into_iter().collect();
    let mut rest = tokens.as_slice();
    rest = match rest {
        [pipe, rest @ ..] if is_punct(pipe, '|') => rest,
        _ => return None,
    };
    if let [TokenTree::Ident(word), more @ ..] = rest
        && word == "mut"
    {
        rest = more;
    }
    rest = match rest {
        [name, colon, rest @ ..] if matches!(name, TokenTree::Ident(_)) || is_punct(name, '_') => {
            if !is_punct(colon, ':') {
                return None;
            }
            rest
        }
        _ => return None,
    };
    rest = match rest {
        [and, TokenTree::Ident(word), rest @ ..] if is_punct(and, '&') && word == "mut" => rest,
        _ => return None,
    };
    let end = rest.iter().position(|token| is_punct(token, '|'))?;
    if rest[..end].iter().any(|token| is_punct(token, ',')) {
        return None;
    }
    non_empty(rest[..end].iter().cloned().collect())
}

fn non_empty(tokens: TokenStream) -> Option<TokenStream> {
    (!tokens.is_empty()).then_some(tokens)
}

/// The tokens of the first argument of the call group at the start of `after`.
fn first_argument(after: &[TokenTree]) -> Option<TokenStream> {
    let Some(TokenTree::Group(arguments)) = after.first() else {
        return None;
    };
    if arguments.delimiter() != Delimiter::Parenthesis {
        return None;
    }
    let argument: TokenStream = arguments
        .stream()
        .into_iter()
        .take_while(|token| !is_punct(token, ','))
        .collect();
    non_empty(argument)
}

fn string_literal(argument: &TokenStream) -> Option<String> {
    let literal: syn::LitStr = syn::parse2(argument.clone()).ok()?;
    Some(literal.value())
}

/// `KEY`, `keys::THEME`, `crate::keys::THEME`, `::app::THEME`: idents joined by `::`, the last
/// one a constant's name (upper case, digits and underscores, at least one letter).
fn constant_path(argument: &TokenStream) -> bool {
    let tokens: Vec<TokenTree> = argument.clone().into_iter().collect();
    let Some(TokenTree::Ident(last)) = tokens.last() else {
        return false;
    };
    let name = last.to_string();
    let constant = name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    constant
        && tokens
            .iter()
            .all(|token| matches!(token, TokenTree::Ident(_)) || is_punct(token, ':'))
}

/// Whether `tokens` mean outside the body what they mean in it: no name the body declares,
/// nothing that only means something inside the fn (`Self`, `_`, `impl`, a lifetime).
fn usable(tokens: &TokenStream, locals: &BTreeSet<String>) -> bool {
    tokens.clone().into_iter().all(|token| match token {
        TokenTree::Ident(name) => {
            let name = name.to_string();
            !locals.contains(&name) && !matches!(name.as_str(), "Self" | "self" | "_" | "impl")
        }
        TokenTree::Punct(punct) => !matches!(punct.as_char(), '_' | '\''),
        TokenTree::Group(group) => usable(&group.stream(), locals),
        TokenTree::Literal(_) => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(body: &str) -> Vec<String> {
        let body: TokenStream = body.parse().expect("tokens");
        let found = scan(&proc_macro2::Group::new(Delimiter::Brace, body));
        let mut all: Vec<String> = found
            .keys
            .iter()
            .map(|(key, string)| format!("{}key {key}", if *string { "string " } else { "" }))
            .collect();
        all.extend(
            found
                .literals
                .iter()
                .map(|literal| format!("literal {literal}")),
        );
        all.extend(found.types.iter().map(|ty| format!("type {ty}")));
        all
    }

    #[test]
    fn typed_writes_and_state_updates_are_found_once_each() {
        assert_eq!(
            found(
                "{ ctx.state_mut().set(THEME, x)?; ctx.state_mut().set(THEME, y)?; \
                 ctx.state_mut().add(keys::VISITS, 1)?; \
                 ctx.update_middleware_state::<Breaker>(|b| b.n += 1)?; \
                 ctx.try_update_middleware_state::<Plan, BoxError>(|p| Ok(()))?; \
                 ctx.update_middleware_state(|b: &mut crate::Budget| b.n += 1)?; \
                 ctx.middleware_states_mut().update::<Steps>(|s| ())?; }"
            ),
            [
                "key THEME",
                "key keys :: VISITS",
                "type Breaker",
                "type Plan",
                "type crate :: Budget",
                "type Steps",
            ]
        );
    }

    #[test]
    fn string_keys_count_only_on_the_state_and_outside_temp() {
        assert_eq!(
            found(
                "{ ctx.state_mut().set_value(\"user:theme\", v)?; \
                 ctx.state_mut().set_value(\"temp:x\", v)?; \
                 other.set_value(\"user:ignored\", v); \
                 invocation.set_state_value(\"app:motd\", v)?; \
                 ctx.state_mut().set_value(keys::NAME, v)?; }"
            ),
            [
                "string key keys :: NAME",
                "literal user:theme",
                "literal app:motd"
            ]
        );
    }

    #[test]
    fn names_the_body_declares_and_reads_are_not_writes() {
        assert!(
            found(
                "{ const LOCAL: K = k(); use keys::THEME; let MINE = 1; struct Mine; \
                 ctx.state_mut().set(LOCAL, 1)?; ctx.state_mut().set(THEME, 1)?; \
                 ctx.state_mut().set(MINE, 1)?; ctx.update_middleware_state::<Mine>(|m| ())?; \
                 ctx.state_mut().set(key, 1)?; ctx.state().get(THEME2)?; \
                 let _ = ctx.middleware_state::<Breaker>(); }"
            )
            .is_empty()
        );
    }

    #[test]
    fn writes_inside_an_unsafe_block_are_left_to_the_turn() {
        assert_eq!(
            found(
                "{ unsafe { ctx.state_mut().set(GLOBAL, 1)?; } ctx.state_mut().set(THEME, 1)?; }"
            ),
            ["key THEME"]
        );
    }

    #[test]
    fn a_body_with_a_cfg_inside_is_not_scanned() {
        assert!(found("{ #[cfg(feature = \"x\")] ctx.state_mut().set(THEME, 1)?; }").is_empty());
    }
}
