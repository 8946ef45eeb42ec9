//! Checks a parsed `storage_adapter!` input against the 29 callbacks and decides what each
//! generated method calls. Every mistake is collected, each spanned at the user's token; nothing
//! here emits code.

use quote::ToTokens;
use syn::Item;

use super::parse::{CallbackExpr, Input};
use super::{CALLBACKS, CONDUIT_READS, Callback};

/// What the impl's method for one callback calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The entry at this index of the callback list.
    Entry(usize),
    /// `NoopStorage`: the callback was not listed under `..noop`, or its entry was rejected (the
    /// fallback keeps the type usable while the error is fixed).
    Noop,
}

/// The outcome of validation.
pub(crate) struct Checked {
    /// One source per callback, in [`CALLBACKS`] order.
    pub(crate) sources: Vec<Source>,
    /// Whether to emit the `StorageAdapter` impl at all (not for an item that is not a struct).
    pub(crate) emit_impl: bool,
    pub(crate) errors: Vec<syn::Error>,
}

pub(crate) fn validate(input: &Input) -> Checked {
    let mut errors = input.syntax_errors.clone();
    let mut sources: Vec<Option<Source>> = vec![None; CALLBACKS.len()];

    let emit_impl = match &input.item {
        Some(Item::Struct(_)) => true,
        Some(other) => {
            errors.push(not_a_struct(other));
            false
        }
        None => false,
    };

    let Some(list) = &input.list else {
        if let (Some(Item::Struct(item)), true) = (&input.item, input.syntax_errors.is_empty()) {
            errors.push(syn::Error::new(
                item.ident.span(),
                format!(
                    "`{}` has no callback list; after the struct, add `impl {{ fetch_messages: .., store_message: .., ..noop }}` naming its callbacks",
                    item.ident
                ),
            ));
        }
        return Checked {
            sources: fill_with_noop(sources),
            emit_impl,
            errors,
        };
    };

    let mut first_entry_for: Vec<Option<usize>> = vec![None; CALLBACKS.len()];
    for (index, entry) in list.entries.iter().enumerate() {
        let name = entry.name.to_string();
        let Some(position) = CALLBACKS.iter().position(|callback| callback.name == name) else {
            errors.push(syn::Error::new(
                entry.name.span(),
                unknown_callback_message(&name),
            ));
            continue;
        };
        if let Some(first) = first_entry_for[position] {
            errors.push(syn::Error::new(
                entry.name.span(),
                format!("`{name}` is listed twice; keep one of the two entries"),
            ));
            errors.push(syn::Error::new(
                list.entries[first].name.span(),
                format!("`{name}` is first listed here"),
            ));
            continue;
        }
        first_entry_for[position] = Some(index);
        let callback = &CALLBACKS[position];
        if let CallbackExpr::Closure(closure) = &entry.callback
            && closure.inputs.len() != callback.arity()
        {
            errors.push(closure_arity_error(callback, closure));
            // Filled with the no-op below so the rest of the impl still type-checks.
            sources[position] = Some(Source::Noop);
            continue;
        }
        sources[position] = Some(Source::Entry(index));
    }

    if let Some(rest) = &list.rest
        && rest.name != "noop"
    {
        errors.push(syn::Error::new(
            rest.name.span(),
            format!(
                "unknown baseline `..{}`; the only baseline is `..noop`, which fills every callback not listed with the no-op baseline",
                rest.name
            ),
        ));
    }

    let missing: Vec<&str> = CALLBACKS
        .iter()
        .zip(&sources)
        .filter(|(_, source)| source.is_none())
        .map(|(callback, _)| callback.name)
        .collect();
    if list.rest.is_none() && list.complete && !missing.is_empty() {
        errors.push(syn::Error::new(
            list.impl_token.span,
            missing_message(&missing),
        ));
    }

    if list.rest.is_some() {
        for (conduit, read) in CONDUIT_READS {
            let position = |name: &str| CALLBACKS.iter().position(|callback| callback.name == name);
            // Only an accepted entry speaks for its bytes (a rejected one is reported already),
            // and only a name absent from the list leaves its partner to the no-op.
            let accepted = |name: &str| match position(name).and_then(|at| sources[at]) {
                Some(Source::Entry(index)) => Some(&list.entries[index]),
                _ => None,
            };
            let absent =
                |name: &str| position(name).is_some_and(|at| first_entry_for[at].is_none());
            let (listed, missing) = match (accepted(conduit), accepted(read)) {
                (Some(listed), None) if absent(read) => (listed, read),
                (None, Some(listed)) if absent(conduit) => (listed, conduit),
                _ => continue,
            };
            errors.push(syn::Error::new(
                listed.name.span(),
                unpaired_conduit_message(&listed.name.to_string(), missing, conduit, read),
            ));
        }
    }

    Checked {
        sources: fill_with_noop(sources),
        emit_impl,
        errors,
    }
}

/// A conduit listed without its read (or the other way round) under `..noop`.
fn unpaired_conduit_message(listed: &str, missing: &str, conduit: &str, read: &str) -> String {
    let signature = CALLBACKS
        .iter()
        .find(|callback| callback.name == missing)
        .map(|callback| {
            format!(
                "`async fn {missing}{} -> Result<{}, StorageError>`",
                callback.parameter_list(),
                callback.output.display()
            )
        })
        .unwrap_or_default();
    format!(
        "`{listed}` is listed but `{missing}` is not, so `..noop` would fill `{missing}` with the \
         no-op store, and bytes `{conduit}` writes would never read back through `{read}`; list \
         `{missing}` too, over the same bytes: {signature}"
    )
}

fn fill_with_noop(sources: Vec<Option<Source>>) -> Vec<Source> {
    sources
        .into_iter()
        .map(|source| source.unwrap_or(Source::Noop))
        .collect()
}

fn not_a_struct(item: &Item) -> syn::Error {
    let found = match item {
        Item::Enum(_) => "an enum",
        Item::Fn(_) => "a function",
        Item::Impl(_) => "an impl block",
        Item::Trait(_) => "a trait",
        Item::Union(_) => "a union",
        Item::Type(_) => "a type alias",
        Item::Mod(_) => "a module",
        _ => "an item that is not a struct",
    };
    syn::Error::new_spanned(
        first_tokens(item),
        format!(
            "storage_adapter! expects a struct (`pub struct MyStore {{ .. }}` or `pub struct MyStore;`), found {found}"
        ),
    )
}

/// An item's keyword and name (a function's signature), so the caret is short.
fn first_tokens(item: &Item) -> proc_macro2::TokenStream {
    let mut tokens = proc_macro2::TokenStream::new();
    match item {
        Item::Enum(item) => {
            item.enum_token.to_tokens(&mut tokens);
            item.ident.to_tokens(&mut tokens);
        }
        Item::Fn(item) => item.sig.to_tokens(&mut tokens),
        Item::Union(item) => {
            item.union_token.to_tokens(&mut tokens);
            item.ident.to_tokens(&mut tokens);
        }
        Item::Trait(item) => {
            item.trait_token.to_tokens(&mut tokens);
            item.ident.to_tokens(&mut tokens);
        }
        other => other.to_tokens(&mut tokens),
    }
    tokens
}

/// The name a user probably meant: the same words spelt differently (`storeMessage`,
/// `store_message_callback`), or the closest name by Jaro-Winkler similarity.
pub(crate) fn suggestion(name: &str) -> Option<&'static str> {
    fn normalized(name: &str) -> String {
        let lower = name.to_ascii_lowercase().replace('_', "");
        lower
            .strip_suffix("callback")
            .map(str::to_owned)
            .unwrap_or(lower)
    }
    let wanted = normalized(name);
    if let Some(callback) = CALLBACKS
        .iter()
        .find(|callback| normalized(callback.name) == wanted)
    {
        return Some(callback.name);
    }
    CALLBACKS
        .iter()
        .map(|callback| (strsim::jaro_winkler(name, callback.name), callback.name))
        .filter(|(similarity, _)| *similarity >= 0.85)
        .max_by(|left, right| left.0.total_cmp(&right.0))
        .map(|(_, name)| name)
}

pub(crate) fn unknown_callback_message(name: &str) -> String {
    match suggestion(name) {
        Some(suggested) => format!(
            "`{name}` is not a storage callback; did you mean `{suggested}`? The callbacks are the 29 methods of `adk::storage::StorageAdapter`"
        ),
        None => {
            let all: Vec<&str> = CALLBACKS.iter().map(|callback| callback.name).collect();
            format!(
                "`{name}` is not a storage callback; the callbacks are the 29 methods of `adk::storage::StorageAdapter`: {}",
                all.join(", ")
            )
        }
    }
}

pub(crate) fn missing_message(missing: &[&str]) -> String {
    let names: Vec<String> = missing.iter().map(|name| format!("`{name}`")).collect();
    let count = missing.len();
    let noun = if count == 1 { "callback" } else { "callbacks" };
    format!(
        "missing {count} storage {noun}: {}; add them, or end the list with `..noop` to fill the rest with the no-op baseline (no-ops must be explicit)",
        names.join(", ")
    )
}

fn closure_arity_error(callback: &Callback, closure: &syn::ExprClosure) -> syn::Error {
    let expected = callback.arity();
    let found = closure.inputs.len();
    let (or1, inputs, or2) = (&closure.or1_token, &closure.inputs, &closure.or2_token);
    let parameters = if expected == 1 {
        "parameter"
    } else {
        "parameters"
    };
    syn::Error::new_spanned(
        quote::quote!(#or1 #inputs #or2),
        format!(
            "`{}` takes {expected} {parameters} `{}`, but this closure takes {found}; name unused ones `_`",
            callback.name,
            callback.parameter_list()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse;
    use super::*;
    use proc_macro2::TokenStream;
    use quote::{format_ident, quote};

    fn check(tokens: TokenStream) -> Checked {
        validate(&parse(tokens))
    }

    fn messages(checked: &Checked) -> Vec<String> {
        checked.errors.iter().map(ToString::to_string).collect()
    }

    /// `name: callback_name,` for every callback except `skip`.
    fn every_callback_except(skip: &[&str]) -> TokenStream {
        let entries = CALLBACKS
            .iter()
            .filter(|callback| !skip.contains(&callback.name))
            .map(|callback| {
                let name = format_ident!("{}", callback.name);
                quote!(#name: #name,)
            });
        quote!(#(#entries)*)
    }

    #[test]
    fn a_conduit_listed_without_its_read_is_rejected_at_the_conduit() {
        let checked = check(quote!(struct Store; impl { store_media_bytes: keep, ..noop }));
        assert_eq!(
            messages(&checked),
            [
                "`store_media_bytes` is listed but `read_media_bytes` is not, so `..noop` would fill `read_media_bytes` with the no-op store, and bytes `store_media_bytes` writes would never read back through `read_media_bytes`; list `read_media_bytes` too, over the same bytes: `async fn read_media_bytes(ctx: &StorageContext, id: String) -> Result<Option<MediaReader>, StorageError>`"
            ]
        );
        let read_alone = check(quote!(struct Store; impl { read_retrievable_bytes: find, ..noop }));
        assert_eq!(messages(&read_alone).len(), 1);
        assert!(messages(&read_alone)[0].starts_with(
            "`read_retrievable_bytes` is listed but `store_retrievable_bytes` is not"
        ));
        let paired = check(quote!(struct Store; impl {
            store_media_bytes: keep, read_media_bytes: find, ..noop
        }));
        assert!(paired.errors.is_empty(), "{:?}", messages(&paired));
    }

    #[test]
    fn a_list_naming_all_29_callbacks_needs_no_baseline() {
        let entries = every_callback_except(&[]);
        let checked = check(quote!(struct Store; impl { #entries }));
        assert!(checked.errors.is_empty(), "{:?}", messages(&checked));
        assert!(checked.emit_impl);
        let expected: Vec<Source> = (0..29).map(Source::Entry).collect();
        assert_eq!(checked.sources, expected);
    }

    #[test]
    fn callbacks_not_listed_before_noop_come_from_the_baseline() {
        let checked = check(quote!(struct Store; impl { store_message: store, ..noop }));
        assert!(checked.errors.is_empty(), "{:?}", messages(&checked));
        let store_message = CALLBACKS
            .iter()
            .position(|callback| callback.name == "store_message");
        for (position, source) in checked.sources.iter().enumerate() {
            let expected = if Some(position) == store_message {
                Source::Entry(0)
            } else {
                Source::Noop
            };
            assert_eq!(*source, expected, "{}", CALLBACKS[position].name);
        }
    }

    #[test]
    fn missing_callbacks_are_all_named_in_one_error_that_suggests_noop() {
        let entries =
            every_callback_except(&["fetch_thoughts", "delete_memory", "store_media_bytes"]);
        let checked = check(quote!(struct Store; impl { #entries }));
        assert_eq!(
            messages(&checked),
            [
                "missing 3 storage callbacks: `fetch_thoughts`, `delete_memory`, `store_media_bytes`; add them, or end the list with `..noop` to fill the rest with the no-op baseline (no-ops must be explicit)"
            ]
        );
        assert!(
            checked.emit_impl,
            "the impl is still emitted, with no-ops for the missing ones"
        );
    }

    #[test]
    fn an_empty_list_reports_all_29_missing() {
        let checked = check(quote!(struct Store; impl {}));
        let messages = messages(&checked);
        assert_eq!(messages.len(), 1);
        assert!(messages[0].starts_with("missing 29 storage callbacks: `fetch_memories`, "));
    }

    #[test]
    fn an_unknown_name_suggests_the_closest_callback() {
        let checked = check(quote!(struct Store; impl { store_mesage: store, ..noop }));
        assert_eq!(
            messages(&checked),
            [
                "`store_mesage` is not a storage callback; did you mean `store_message`? The callbacks are the 29 methods of `adk::storage::StorageAdapter`"
            ]
        );
    }

    #[test]
    fn names_in_the_typescript_spelling_are_recognised() {
        assert_eq!(suggestion("storeMessageCallback"), Some("store_message"));
        assert_eq!(suggestion("fetchToolCalls"), Some("fetch_tool_calls"));
        assert_eq!(suggestion("store_messages"), Some("store_message"));
        assert_eq!(suggestion("launch_rockets"), None);
    }

    #[test]
    fn an_unknown_name_without_a_close_match_lists_every_callback() {
        let message = unknown_callback_message("launch_rockets");
        for callback in &CALLBACKS {
            assert!(
                message.contains(callback.name),
                "{} missing from {message}",
                callback.name
            );
        }
    }

    #[test]
    fn a_callback_listed_twice_is_reported_at_both_entries() {
        let checked =
            check(quote!(struct Store; impl { store_message: a, store_message: b, ..noop }));
        assert_eq!(
            messages(&checked),
            [
                "`store_message` is listed twice; keep one of the two entries",
                "`store_message` is first listed here"
            ]
        );
    }

    #[test]
    fn a_closure_with_the_wrong_arity_names_the_expected_parameters() {
        let checked = check(
            quote!(struct Store; impl { store_media_bytes: |ctx, id| async move { Ok(()) }, ..noop }),
        );
        assert_eq!(
            messages(&checked),
            [
                "`store_media_bytes` takes 3 parameters `(ctx: &StorageContext, id: String, bytes: ConduitBytes)`, but this closure takes 2; name unused ones `_`"
            ]
        );
        assert!(
            checked.sources.iter().all(|source| *source == Source::Noop),
            "the rejected closure falls back to the no-op"
        );
    }

    #[test]
    fn a_closure_with_the_right_arity_is_accepted() {
        let checked =
            check(quote!(struct Store; impl { fetch_messages: |_| async { Ok(vec![]) }, ..noop }));
        assert!(checked.errors.is_empty(), "{:?}", messages(&checked));
    }

    #[test]
    fn a_baseline_other_than_noop_is_rejected() {
        let checked = check(quote!(struct Store; impl { ..default }));
        assert_eq!(
            messages(&checked),
            [
                "unknown baseline `..default`; the only baseline is `..noop`, which fills every callback not listed with the no-op baseline"
            ]
        );
    }

    #[test]
    fn a_missing_list_is_reported_at_the_struct_name() {
        let checked = check(quote!(
            pub struct Store {
                pool: u32,
            }
        ));
        let messages = messages(&checked);
        assert_eq!(messages.len(), 1);
        assert!(
            messages[0].starts_with("`Store` has no callback list; after the struct, add `impl {")
        );
        assert!(checked.emit_impl);
    }

    #[test]
    fn an_enum_is_rejected_and_gets_no_impl() {
        let checked = check(quote!(enum Store { A } impl { ..noop }));
        assert_eq!(
            messages(&checked),
            [
                "storage_adapter! expects a struct (`pub struct MyStore { .. }` or `pub struct MyStore;`), found an enum"
            ]
        );
        assert!(!checked.emit_impl);
    }

    #[test]
    fn independent_mistakes_are_all_reported_in_one_pass() {
        let checked = check(quote!(struct Store; impl {
            store_mesage: a,
            delete_message: |ctx| async { Ok(()) },
            fetch_messages: b,
            fetch_messages: c,
            ..nop
        }));
        assert_eq!(checked.errors.len(), 5, "{:?}", messages(&checked));
    }
}
