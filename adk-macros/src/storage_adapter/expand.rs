//! Writes the struct and its `StorageAdapter` impl from a validated input.
//!
//! Each method hands the user's callback to a checker trait in `adk::storage::callback`
//! (`StoreMessageCallback::call(callback, ctx, message)`). The call is spanned at the user's
//! callback, so a wrong signature is reported there in the checker trait's words, and the method's
//! `+ Send` return type is spanned there too, so a future that is not `Send` is blamed on it.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{Item, Pat, PatType, Type};

use super::parse::{CallbackExpr, Entry, Input};
use super::validate::{Checked, Source};
use super::{CALLBACKS, Callback};

/// The lifetime of `ctx` in methods whose callback is a closure: the closure's parameters are
/// annotated with it, so its future may borrow `ctx` (a closure annotated `&StorageContext` would be
/// higher-ranked, and an `async move` block borrowing from it would not compile).
const CONTEXT_LIFETIME: &str = "'__adk_ctx";

pub(crate) fn expand(input: &Input, checked: &Checked) -> TokenStream {
    let errors = checked.errors.iter().map(syn::Error::to_compile_error);
    let item = &input.item;
    let adapter_impl = match (&input.item, checked.emit_impl) {
        (Some(Item::Struct(item)), true) => {
            let entries = input
                .list
                .as_ref()
                .map_or(&[][..], |list| &list.entries[..]);
            adapter_impl(item, entries, &checked.sources)
        }
        _ => TokenStream::new(),
    };
    quote! {
        #item
        #(#errors)*
        #adapter_impl
    }
}

fn adapter_impl(item: &syn::ItemStruct, entries: &[Entry], sources: &[Source]) -> TokenStream {
    let name = &item.ident;
    let (impl_generics, type_generics, where_clause) = item.generics.split_for_impl();
    let adapter = Adapter {
        name: name.clone(),
        self_type: quote!(#name #type_generics),
        impl_generics: quote!(#impl_generics),
        where_clause: quote!(#where_clause),
    };
    let mut helpers = Vec::new();
    // Written by `adk::__storage_noop!`, from their names: rustc expands it far faster than
    // this crate, built unoptimised, builds the same tokens.
    let mut noop = Vec::new();
    let methods: Vec<TokenStream> = CALLBACKS
        .iter()
        .zip(sources)
        .filter_map(|(callback, source)| {
            let entry = match source {
                Source::Entry(index) => entries.get(*index),
                Source::Noop => None,
            };
            let Some(entry) = entry else {
                noop.push(Ident::new(callback.name, Span::call_site()));
                return None;
            };
            if let CallbackExpr::Method {
                expr,
                method: inherent,
            } = &entry.callback
            {
                let (helper, helper_name) =
                    method_helper(&adapter, callback, entry, expr, inherent);
                helpers.push(helper);
                Some(method(
                    callback,
                    Body::Helper(&helper_name),
                    entry.name.span(),
                ))
            } else {
                Some(method(callback, Body::Entry(entry), entry.name.span()))
            }
        })
        .collect();
    let noop = (!noop.is_empty()).then(|| quote!(::adk::__storage_noop!(#(#noop)*);));
    let Adapter {
        self_type,
        impl_generics,
        where_clause,
        ..
    } = adapter;
    quote! {
        const _: () = {
            #(#helpers)*

            #[automatically_derived]
            impl #impl_generics ::adk::storage::StorageAdapter for #self_type #where_clause {
                #(#methods)*
                #noop
            }
        };
    }
}

/// The adapter type as generated code names it.
struct Adapter {
    /// `ChatStore`.
    name: Ident,
    /// `ChatStore<T>`.
    self_type: TokenStream,
    impl_generics: TokenStream,
    where_clause: TokenStream,
}

enum Body<'a> {
    /// A function or closure entry, called through its `<Name>Callback` checker.
    Entry(&'a Entry),
    /// A `self.method` entry, called through the free function of that name.
    Helper(&'a Ident),
}

/// One `StorageAdapter` method for a callback the user gave. `span` is the entry's name: a
/// future that is not `Send` is reported there (a closure's own span would underline only its
/// first token on stable).
fn method(callback: &Callback, body: Body<'_>, span: Span) -> TokenStream {
    let name = Ident::new(callback.name, Span::call_site());
    // Mixed-site: the user's closures cannot capture these by accident.
    let context = Ident::new("ctx", Span::mixed_site());
    let arguments = arguments(callback);
    let argument_types = callback.params.iter().map(|(_, value)| value.path());
    let output = callback.output.path();
    let returns = quote_spanned! {span=>
        impl ::core::future::Future<
            Output = ::core::result::Result<#output, ::adk::storage::StorageError>,
        > + ::core::marker::Send
    };
    let is_closure = matches!(
        &body,
        Body::Entry(Entry {
            callback: CallbackExpr::Closure(_),
            ..
        })
    );
    let (generics, context_type) = if is_closure {
        let lifetime = syn::Lifetime::new(CONTEXT_LIFETIME, Span::call_site());
        (
            quote!(<#lifetime>),
            quote!(&#lifetime ::adk::storage::StorageContext),
        )
    } else {
        (TokenStream::new(), quote!(&::adk::storage::StorageContext))
    };
    let call = match body {
        Body::Helper(helper) => quote!(#helper(self, #context #(, #arguments)*)),
        Body::Entry(entry) => call_entry(callback, entry, &context, &arguments),
    };
    // Spanned at the entry's name: a future that is not `Send` is reported there first in
    // `SendCallbackFuture`'s words (with the fix), then by rustc at `returns` (with the value).
    // The future is bound to a name spanned there too, so the caret is under the name alone.
    let future = Ident::new("__adk_future", span);
    let call = quote_spanned! {span=> {
        let #future = #call;
        ::adk::storage::callback::send(#future)
    }};
    quote! {
        fn #name #generics (
            &self,
            #context: #context_type
            #(, #arguments: #argument_types)*
        ) -> #returns {
            #call
        }
    }
}

/// The parameters after `ctx`, named as the docs name them.
fn arguments(callback: &Callback) -> Vec<Ident> {
    callback
        .params
        .iter()
        .map(|(parameter, _)| Ident::new(parameter, Span::mixed_site()))
        .collect()
}

/// A free function that calls the adapter's inherent method for `name: self.method`.
///
/// It is a free function, not code inside the `StorageAdapter` impl, because inside a trait impl
/// the trait's own methods are in scope: there, `Self::fetch_messages` would resolve to the method
/// being generated whenever the adapter has no inherent `fetch_messages`, and call itself. Here it
/// resolves to the inherent method when there is one; otherwise, when the name is a callback's, to
/// the placeholder of the guard trait declared in the helper's body, which the `<Name>Exists`
/// check reports as "`ChatStore` has no method `delete_message`". If the user imported
/// `StorageAdapter`, the name is ambiguous between the guard and the trait's method (E0034);
/// rustc then names the guard, so it is named to say what is wrong:
/// `ChatStore_has_no_method_delete_message`. Either way the build fails instead of recursing at
/// run time. (A trait in scope cannot be hidden from an inner block, and the inherent method and
/// the trait's have the same receiver, so no lookup can put the guard between them.)
fn method_helper(
    adapter: &Adapter,
    callback: &Callback,
    entry: &Entry,
    expr: &syn::Expr,
    inherent: &Ident,
) -> (TokenStream, Ident) {
    let helper = format_ident!("__adk_{}", callback.name, span = Span::mixed_site());
    let Adapter {
        self_type,
        impl_generics,
        where_clause,
        ..
    } = adapter;
    let adapter_type = self_type;
    let state = Ident::new("state", Span::mixed_site());
    let context = Ident::new("ctx", Span::mixed_site());
    let arguments = arguments(callback);
    let argument_types = callback.params.iter().map(|(_, value)| value.path());
    let output = callback.output.path();
    let name_span = entry.name.span();
    let checker = format_ident!("{}Method", callback.camel_case(), span = name_span);
    let self_span = match expr {
        syn::Expr::Field(field) => syn::spanned::Spanned::span(&field.base),
        _ => name_span,
    };
    // Spanned at the user's `self`, so the caret covers `self.method`.
    let self_type = respan(self_type.clone(), self_span);
    let method_path = quote_spanned!(self_span=> <#self_type>::#inherent);
    let guard = CALLBACKS
        .iter()
        .find(|known| inherent == known.name)
        .map(|known| {
            let guard = format_ident!("{}_has_no_method_{}", adapter.name, inherent);
            let exists = format_ident!("{}Exists", known.camel_case());
            let exists_check = quote_spanned! {self_span=>
                <_ as ::adk::storage::callback::#exists<#adapter_type>>::exists(#method_path);
            };
            // Spanned at the user's `self.method`: an E0034 note shows the guard there rather
            // than the whole macro call.
            let guard_items = quote_spanned! {self_span=>
                // Unused whenever the adapter has the method, which is the point.
                #[allow(non_camel_case_types, dead_code)]
                trait #guard {
                    #[allow(non_upper_case_globals)]
                    const #inherent: ::adk::storage::callback::NoSuchMethod<Self> =
                        ::adk::storage::callback::NoSuchMethod::PLACEHOLDER;
                }
                impl<T: ?Sized> #guard for T {}
            };
            quote! {
                #guard_items
                #exists_check
            }
        });
    let call = quote_spanned! {name_span=>
        ::adk::storage::callback::#checker::call(#method_path, #state, #context #(, #arguments)*)
    };
    let tokens = quote! {
        fn #helper #impl_generics (
            #state: &#adapter_type,
            #context: &::adk::storage::StorageContext
            #(, #arguments: #argument_types)*
        ) -> impl ::core::future::Future<
            Output = ::core::result::Result<#output, ::adk::storage::StorageError>,
        > #where_clause {
            #guard
            #call
        }
    };
    (tokens, helper)
}

/// Calls a function or closure entry through its checker traits.
///
/// A closure goes through `<Name>Callback`, whose `AsyncFnOnce` bound also gives the closure's
/// `Ok(..)` its error type. A path to a fn is checked in three steps, each with its own message
/// at the user's path: its parameters (`<Name>Parameters`), that it returns a future
/// (`CallbackFuture`), and what the future resolves to (`<Name>Output`). rustc shortens long
/// types in a user's crate (`Output = ...`); naming the part that is wrong keeps the message
/// readable there.
fn call_entry(
    callback: &Callback,
    entry: &Entry,
    context: &Ident,
    arguments: &[Ident],
) -> TokenStream {
    // Spanned at the entry's name: rustc's "required by a bound introduced by this call" then
    // underlines the name, and our message underlines the callback.
    let name_span = entry.name.span();
    let closure = match &entry.callback {
        CallbackExpr::Closure(closure) => annotate_closure(callback, closure),
        CallbackExpr::Function(expr) | CallbackExpr::Method { expr, .. } => {
            let camel = callback.camel_case();
            let parameters = format_ident!("{}Parameters", camel, span = name_span);
            let output = format_ident!("{}Output", camel);
            let future = format_ident!("{}Future", camel);
            let expr_span = syn::spanned::Spanned::span(expr);
            // Each step is its own statement so each error has the callback under its caret
            // and the entry's name as "required by a bound introduced by this call".
            let returned = Ident::new("returned", Span::mixed_site().located_at(expr_span));
            let call = quote_spanned! {name_span=>
                ::adk::storage::callback::#parameters::call(#expr, #context #(, #arguments)*)
            };
            let into_future = quote_spanned! {name_span=>
                ::adk::storage::callback::CallbackFuture::into_callback_future
            };
            let into_output = quote_spanned! {expr_span=>
                <_ as ::adk::storage::callback::#output>::into_output
            };
            return quote! {{
                let #returned = #call;
                ::adk::storage::callback::#future::new(#into_future(#returned), #into_output)
            }};
        }
    };
    let checker = format_ident!("{}Callback", callback.camel_case(), span = name_span);
    quote_spanned! {name_span=>
        ::adk::storage::callback::#checker::call(#closure, #context #(, #arguments)*)
    }
}

/// Makes the closure `move`, and gives every closure parameter its type, and `ctx` the method's
/// context lifetime: the checker
/// trait cannot lend the closure its expected signature the way a plain `Fn` bound would.
/// Parameters the user typed keep their type, so a wrong one is reported by the checker.
fn annotate_closure(callback: &Callback, closure: &syn::ExprClosure) -> syn::ExprClosure {
    let lifetime = syn::Lifetime::new(CONTEXT_LIFETIME, Span::call_site());
    let mut closure = closure.clone();
    // The closure is built inside the generated method, where the only thing it can capture from
    // its surroundings is `self` (a reference): moving it in lets the future borrow the adapter.
    if closure.capture.is_none() {
        // Spanned like the closure's first token, so the closure's span (shown in messages as
        // `{closure@file:line:col}`) stays the user's.
        let first = closure
            .asyncness
            .map_or(closure.or1_token.span, |asyncness| asyncness.span);
        closure.capture = Some(syn::Token![move](first));
    }
    let expected = std::iter::once(quote!(&#lifetime ::adk::storage::StorageContext))
        .chain(callback.params.iter().map(|(_, value)| value.path()));
    closure.inputs = closure
        .inputs
        .into_pairs()
        .zip(expected)
        .enumerate()
        .map(|(position, (pair, expected))| {
            let (pattern, comma) = pair.into_tuple();
            let pattern = match pattern {
                Pat::Type(mut typed) => {
                    if position == 0
                        && let Type::Reference(reference) = typed.ty.as_mut()
                        && reference.lifetime.is_none()
                    {
                        reference.lifetime = Some(lifetime.clone());
                    }
                    Pat::Type(typed)
                }
                untyped => Pat::Type(PatType {
                    attrs: Vec::new(),
                    pat: Box::new(untyped),
                    colon_token: Default::default(),
                    ty: Box::new(Type::Verbatim(expected)),
                }),
            };
            syn::punctuated::Pair::new(pattern, comma)
        })
        .collect();
    closure
}

/// `tokens` with every span set to `span`, so an error about the whole path lands on the user's token.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut respanned =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                respanned.set_span(span);
                token = proc_macro2::TokenTree::Group(respanned);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::super::CALLBACKS;

    fn expanded(tokens: proc_macro2::TokenStream) -> String {
        super::super::expand(tokens).to_string()
    }

    #[test]
    fn every_callback_is_written_once_or_handed_to_storage_noop_once() {
        let output = expanded(
            quote!(pub struct Store; impl { fetch_messages: self.fetch_messages, ..noop }),
        );
        let handed_to_noop = output
            .split(":: adk :: __storage_noop ! (")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .expect("the no-op callbacks are handed to __storage_noop!");
        for callback in &CALLBACKS {
            let written = output.matches(&format!("fn {} (", callback.name)).count();
            let handed = handed_to_noop
                .split_whitespace()
                .filter(|name| *name == callback.name)
                .count();
            let expected_written = usize::from(callback.name == "fetch_messages");
            assert_eq!(
                (written, handed),
                (expected_written, 1 - expected_written),
                "{}",
                callback.name
            );
        }
    }

    #[test]
    fn the_struct_and_a_no_op_impl_are_emitted_next_to_the_errors() {
        let output = expanded(quote!(
            /// Kept.
            #[derive(Clone)]
            pub struct Store { pool: u32 }
            impl { store_mesage: store }
        ));
        assert!(output.contains("pub struct Store"), "{output}");
        assert!(output.contains("derive (Clone)"), "{output}");
        assert!(output.contains("compile_error"), "{output}");
        assert!(
            output.contains(":: adk :: storage :: StorageAdapter for Store"),
            "{output}"
        );
    }

    #[test]
    fn an_item_that_is_not_a_struct_is_emitted_without_an_impl() {
        let output = expanded(quote!(enum Store { A } impl { ..noop }));
        assert!(output.contains("enum Store"), "{output}");
        assert!(!output.contains("StorageAdapter for"), "{output}");
    }

    #[test]
    fn untyped_closure_parameters_get_the_callbacks_types_and_the_closure_moves() {
        let output = expanded(
            quote!(struct Store; impl { store_message: |ctx, message| async { Ok(()) }, ..noop }),
        );
        assert!(output.contains("move | ctx : & '__adk_ctx :: adk :: storage :: StorageContext , message : :: adk :: storage :: callback :: Message |"), "{output}");
    }

    #[test]
    fn a_method_entry_is_called_through_a_guarded_free_function() {
        let output =
            expanded(quote!(struct Store; impl { fetch_messages: self.fetch_messages, ..noop }));
        assert!(
            output.contains("trait Store_has_no_method_fetch_messages { # [allow (non_upper_case_globals)] const fetch_messages : :: adk :: storage :: callback :: NoSuchMethod < Self > ="),
            "{output}"
        );
        assert!(
            output.contains("FetchMessagesMethod :: call (< Store > :: fetch_messages"),
            "{output}"
        );
    }
}
