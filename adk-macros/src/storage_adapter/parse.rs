//! Reads `storage_adapter!`'s tokens into [`Input`] without judging them.
//!
//! Parsing keeps whatever it could read: a struct whose callback list has a syntax error is still
//! returned, so the expansion can emit it and uses of the type do not cascade into more errors.

use proc_macro2::TokenStream;
use syn::parse::{ParseStream, Parser};
use syn::{Expr, ExprClosure, Ident, Item, Token, braced, token};

/// Everything `storage_adapter!` was given.
pub(crate) struct Input {
    /// The item written before the `impl` list; `None` when it could not be parsed.
    pub(crate) item: Option<Item>,
    /// The `impl { .. }` list; `None` when it is missing or did not parse.
    pub(crate) list: Option<CallbackList>,
    /// Syntax errors, reported as they are.
    pub(crate) syntax_errors: Vec<syn::Error>,
}

/// `impl { name: callback, .., ..noop }`.
pub(crate) struct CallbackList {
    pub(crate) impl_token: Token![impl],
    pub(crate) entries: Vec<Entry>,
    /// The `..name` baseline that ends the list, if any.
    pub(crate) rest: Option<Rest>,
    /// `false` when a syntax error stopped the parse part-way: absent names may then be written
    /// after the error, so they are not reported missing.
    pub(crate) complete: bool,
}

/// `name: callback`.
pub(crate) struct Entry {
    pub(crate) name: Ident,
    pub(crate) callback: CallbackExpr,
}

/// The three ways to give a callback.
pub(crate) enum CallbackExpr {
    /// `self.method`: an inherent method of the adapter, called with `&self` first.
    Method { expr: Expr, method: Ident },
    /// `|ctx, value| async move { .. }` or an async closure.
    Closure(Box<ExprClosure>),
    /// Any other expression, typically the path of an `async fn`.
    Function(Expr),
}

impl CallbackExpr {
    fn classify(expr: Expr) -> Self {
        match expr {
            Expr::Closure(closure) => Self::Closure(Box::new(closure)),
            Expr::Field(ref field) if field.attrs.is_empty() && is_self(&field.base) => {
                match &field.member {
                    syn::Member::Named(method) => {
                        let method = method.clone();
                        Self::Method { expr, method }
                    }
                    syn::Member::Unnamed(_) => Self::Function(expr),
                }
            }
            other => Self::Function(other),
        }
    }
}

fn is_self(expr: &Expr) -> bool {
    matches!(expr, Expr::Path(path) if path.attrs.is_empty() && path.qself.is_none() && path.path.is_ident("self"))
}

/// `..noop` (or a misspelling of it).
pub(crate) struct Rest {
    pub(crate) name: Ident,
}

/// Parses the macro input, keeping every part that could be read.
pub(crate) fn parse(tokens: TokenStream) -> Input {
    let mut input = Input {
        item: None,
        list: None,
        syntax_errors: Vec::new(),
    };
    let parser = |stream: ParseStream<'_>| {
        read_input(stream, &mut input);
        // Whatever could not be read has been reported; swallow it so syn adds no error of its own.
        stream.parse::<TokenStream>()
    };
    if let Err(error) = parser.parse2(tokens) {
        input.syntax_errors.push(error);
    }
    input
}

fn read_input(stream: ParseStream<'_>, input: &mut Input) {
    match stream.parse::<Item>() {
        Ok(item) => input.item = Some(item),
        Err(error) => {
            input.syntax_errors.push(error);
            return;
        }
    }
    if stream.is_empty() {
        return;
    }
    if !stream.peek(Token![impl]) {
        input.syntax_errors.push(syn::Error::new(
            stream.span(),
            "expected `impl { .. }` listing the adapter's callbacks after the struct",
        ));
        return;
    }
    match read_list(stream) {
        Ok((list, error)) => {
            input.list = Some(list);
            input.syntax_errors.extend(error);
        }
        Err(error) => {
            input.syntax_errors.push(error);
            return;
        }
    }
    if !stream.is_empty() {
        input.syntax_errors.push(syn::Error::new(
            stream.span(),
            "unexpected tokens after the `impl { .. }` block; storage_adapter! takes one struct and one callback list",
        ));
    }
}

/// Reads `impl { .. }`. An error inside the braces still returns the entries read before it.
fn read_list(stream: ParseStream<'_>) -> syn::Result<(CallbackList, Option<syn::Error>)> {
    let impl_token: Token![impl] = stream.parse()?;
    if !stream.peek(token::Brace) {
        return Err(syn::Error::new(
            stream.span(),
            "write `impl { .. }` with no trait or type name: storage_adapter! implements `adk::storage::StorageAdapter` for the struct above",
        ));
    }
    let content;
    braced!(content in stream);
    let mut list = CallbackList {
        impl_token,
        entries: Vec::new(),
        rest: None,
        complete: true,
    };
    let error = read_entries(&content, &mut list).err();
    if error.is_some() {
        list.complete = false;
        // Skip the rest of the braces: the error says what is wrong there.
        let _ = content.parse::<TokenStream>();
    }
    Ok((list, error))
}

fn read_entries(content: ParseStream<'_>, list: &mut CallbackList) -> syn::Result<()> {
    while !content.is_empty() {
        if content.peek(Token![..]) {
            content.parse::<Token![..]>()?;
            let name: Ident = content.parse()?;
            list.rest = Some(Rest { name });
            if content.peek(Token![,]) {
                content.parse::<Token![,]>()?;
            }
            if !content.is_empty() {
                return Err(syn::Error::new(
                    content.span(),
                    "`..noop` must end the list; move the callbacks after it above it",
                ));
            }
            break;
        }
        let name: Ident = content.parse()?;
        content.parse::<Token![:]>()?;
        let expr: Expr = content.parse()?;
        list.entries.push(Entry {
            name,
            callback: CallbackExpr::classify(expr),
        });
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn only_list(input: &Input) -> &CallbackList {
        assert!(
            input.syntax_errors.is_empty(),
            "unexpected syntax errors: {:?}",
            input.syntax_errors
        );
        input.list.as_ref().expect("the input has a callback list")
    }

    #[test]
    fn each_callback_form_is_classified_by_its_shape() {
        let input = parse(quote! {
            pub struct Store { pool: u32 }
            impl {
                fetch_messages: self.fetch_messages,
                store_message: store_message_in_log,
                delete_message: |ctx, id| async move { Ok(()) },
                mutate_message: crate::log::mutate,
            }
        });
        let list = only_list(&input);
        let shapes: Vec<&str> = list
            .entries
            .iter()
            .map(|entry| match &entry.callback {
                CallbackExpr::Method { method, .. } => {
                    assert_eq!(method, "fetch_messages");
                    "method"
                }
                CallbackExpr::Closure(_) => "closure",
                CallbackExpr::Function(_) => "function",
            })
            .collect();
        assert_eq!(shapes, ["method", "function", "closure", "function"]);
        assert!(list.rest.is_none());
        assert!(list.complete);
    }

    #[test]
    fn a_field_of_something_other_than_self_is_a_plain_expression() {
        let input = parse(quote! {
            struct Store;
            impl { fetch_messages: other.fetch_messages, store_message: self.0 }
        });
        let list = only_list(&input);
        assert!(
            list.entries
                .iter()
                .all(|entry| matches!(entry.callback, CallbackExpr::Function(_)))
        );
    }

    #[test]
    fn the_noop_baseline_ends_the_list_with_or_without_a_trailing_comma() {
        for tokens in [
            quote!(struct Store; impl { fetch_messages: fetch, ..noop }),
            quote!(struct Store; impl { fetch_messages: fetch, ..noop, }),
            quote!(struct Store; impl { ..noop }),
        ] {
            let input = parse(tokens);
            let list = only_list(&input);
            assert_eq!(
                list.rest
                    .as_ref()
                    .map(|rest| rest.name.to_string())
                    .as_deref(),
                Some("noop")
            );
        }
    }

    #[test]
    fn a_missing_list_leaves_the_struct_parsed() {
        let input = parse(quote!(
            pub struct Store;
        ));
        assert!(input.syntax_errors.is_empty());
        assert!(matches!(input.item, Some(Item::Struct(_))));
        assert!(input.list.is_none());
    }

    #[test]
    fn entries_after_the_noop_baseline_are_a_syntax_error_that_keeps_earlier_entries() {
        let input = parse(
            quote!(struct Store; impl { fetch_messages: fetch, ..noop, store_message: store }),
        );
        assert_eq!(input.syntax_errors.len(), 1);
        assert!(
            input.syntax_errors[0]
                .to_string()
                .contains("`..noop` must end the list")
        );
        let list = input
            .list
            .as_ref()
            .expect("the list before the error is kept");
        assert_eq!(list.entries.len(), 1);
        assert!(
            !list.complete,
            "names after a syntax error must not be reported missing"
        );
    }

    #[test]
    fn an_impl_with_a_trait_or_type_name_is_rejected_with_the_expected_form() {
        let input = parse(quote!(struct Store; impl StorageAdapter { ..noop }));
        assert!(matches!(input.item, Some(Item::Struct(_))));
        assert_eq!(input.syntax_errors.len(), 1);
        assert!(
            input.syntax_errors[0]
                .to_string()
                .contains("write `impl { .. }` with no trait or type name")
        );
    }

    #[test]
    fn tokens_after_the_list_are_rejected() {
        let input = parse(quote!(struct Store; impl { ..noop } struct Other;));
        assert_eq!(input.syntax_errors.len(), 1);
        assert!(
            input.syntax_errors[0]
                .to_string()
                .contains("unexpected tokens after the `impl { .. }` block")
        );
    }

    #[test]
    fn something_other_than_impl_after_the_struct_is_rejected() {
        let input = parse(quote!(struct Store; fetch_messages: fetch));
        assert_eq!(input.syntax_errors.len(), 1);
        assert!(
            input.syntax_errors[0]
                .to_string()
                .contains("expected `impl { .. }`")
        );
    }
}
