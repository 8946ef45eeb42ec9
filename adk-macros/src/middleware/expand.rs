//! Writes the fn that keeps the user's name, the hidden type that carries the user's function
//! (moved, untouched) and one `Fits` impl per pipeline. Reports no user errors: those were all found by `validate`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::parse::MiddlewareFn;
use super::validate::{Pipeline, Signature};

/// The hidden module under which the type carrying the body lives: `__adk_middleware_<name>`.
/// The type keeps the fn's own name (errors say "`load_history` is not middleware for ..."),
/// but sits in its own module, so it takes no name in the user's module: a type or a module of
/// the fn's name there keeps working, as it does next to a plain fn.
pub(crate) fn body_module(function: &MiddlewareFn) -> syn::Ident {
    let name = function.name();
    let plain = syn::ext::IdentExt::unraw(name);
    format_ident!(
        "__adk_middleware_{}",
        plain,
        span = proc_macro2::Span::call_site()
    )
}

/// The body's type, as a path from the user's module.
fn body_type(function: &MiddlewareFn) -> TokenStream {
    let module = body_module(function);
    let name = function.name();
    quote!(#module::#name)
}

/// The fn that keeps the function's name (`builder.turn_input(load_history)` passes it, and
/// `load_history(ctx, next)` calls it), the hidden type that carries the body, and the direct
/// call for `first`'s context. All come from `adk::__middleware_struct!`: rustc expands one
/// small `macro_rules!` call for less than this crate, built unoptimised, spends writing them.
fn named_fn(function: &MiddlewareFn, first: Pipeline) -> TokenStream {
    let name = function.name();
    let module = body_module(function);
    let visibility = &function.vis;
    let docs = function.doc_attributes();
    let cfgs = function.cfg_attributes();
    let first_marker = format_ident!("{}", first.marker());
    let scope_context = format_ident!("{}", first.scope().context());
    quote! {
        ::adk::__middleware_struct!(
            [#(#docs)*] [#(#cfgs)*] #visibility #name, #module, #first_marker, #scope_context
        );
    }
}

/// The user's function, kept as an associated function of the body's type under its own name so its
/// body, spans, attributes and lints stay exactly as written.
fn body_function(function: &MiddlewareFn, extra_attributes: TokenStream) -> TokenStream {
    let body_type = body_type(function);
    let attributes = function.other_attributes();
    let cfgs = function.cfg_attributes();
    let signature = &function.sig;
    let block = &function.body;
    quote! {
        #(#cfgs)*
        impl #body_type {
            #(#attributes)*
            #extra_attributes
            #[doc(hidden)]
            #signature #block
        }
    }
}

fn marker(pipeline: Pipeline) -> TokenStream {
    let marker = format_ident!("{}", pipeline.marker());
    quote!(::adk::pipeline::#marker)
}

/// The expansion for a function that passed validation.
pub(crate) fn middleware(
    function: &MiddlewareFn,
    pipelines: &[Pipeline],
    signature: &Signature<'_>,
) -> TokenStream {
    let name = function.name();
    let body_type = body_type(function);
    let cfgs: Vec<_> = function.cfg_attributes().collect();
    let context = signature.context;
    let output = signature.output;
    // The generated `ctx` and `next`, named with the call site's hygiene also inside the
    // `quote_spanned!` below: tokens spanned at a name that came out of a `macro_rules!` would
    // otherwise look them up in that macro's hygiene, where they do not exist ("cannot find
    // value `ctx`").
    let ctx = syn::Ident::new("ctx", proc_macro2::Span::call_site());
    let next = syn::Ident::new("next", proc_macro2::Span::call_site());
    // Every pipeline the fn is declared for has the same scope (validated), so one context.
    let first = pipelines.first().copied().unwrap_or(Pipeline::ALL[0]);
    let scope_context = format_ident!("{}", first.scope().context());
    // Written as the pipeline's own context (`TurnContext`, `adk::DispatchContext`), the type
    // was already checked by name in `validate`: `place` passes `ctx` and `next` straight on.
    // Anything else (an alias) goes through `SameContext`, which reports a wrong one under the
    // user's type. Fewer obligations per use keep `cargo check` close to hand-written code.
    let written_context = super::parse::last_segment(context)
        .filter(|segment| segment.arguments.is_none())
        .map(|segment| segment.ident.to_string());
    // Spanned at the return type: a result that is not a middleware result fails `Fits::run`'s
    // `Output: MiddlewareResult` there, and a body whose future is not `Send`, already reported
    // by `place` at the fn's name, is explained there by rustc. The future is the body's own,
    // its output the user's result (the walk boxes its error): one future per middleware for
    // `cargo check`. The walk boxes the future once, in its step for the middleware.
    let future = quote_spanned! {output.span()=>
        impl ::core::future::Future<Output = #output> + ::core::marker::Send + 'a
    };
    // Spanned at the function name too, as the call the future comes from.
    let place = if written_context.as_deref() == Some(first.scope().context()) {
        quote_spanned! {name.span()=>
            ::adk::__private::middleware::place(#body_type::#name, #ctx, #next)
        }
    } else {
        // Spanned at the user's context type: an alias of the wrong context fails here, with
        // `SameContext`'s message under the user's type.
        let first_marker = marker(first);
        let cast_context = quote_spanned! {context.span()=>
            <#context as ::adk::__private::middleware::SameContext<::adk::#scope_context, #first_marker>>::cast(#ctx)
        };
        let cast_next = quote_spanned! {context.span()=>
            <#context as ::adk::__private::middleware::SameContext<::adk::#scope_context, #first_marker>>::cast_next(#next)
        };
        quote_spanned! {name.span()=>
            ::adk::__private::middleware::place(#body_type::#name, #cast_context, #cast_next)
        }
    };
    let body_function = body_function(function, TokenStream::new());
    // One hidden fn next to the body, and a line per pipeline impl, only for a body that
    // writes state the scan can name (see `state_writes`).
    let found = super::state_writes::scan(&function.body);
    let (recorder, state_hook) = if found.is_empty() {
        (TokenStream::new(), TokenStream::new())
    } else {
        let recorder = found.recorder();
        (
            quote! {
                #(#cfgs)*
                impl #body_type {
                    #recorder
                }
            },
            quote! {
                fn state_writes(writes: &mut ::adk::pipeline::StateWrites) {
                    Self::__adk_state_writes(writes);
                }
            },
        )
    };
    // Each pipeline's impl hands the body's future to the walk itself: no trait of ours sits
    // between the walk and the body, and each impl is what a hand-written one would be. The
    // impl headers are written here, so a middleware registered on the wrong pipeline is
    // reported at the user's attribute; their methods come from `adk::__middleware_methods!`,
    // because rustc expands a `macro_rules!` much faster than this crate, built unoptimised as
    // cargo builds proc macros, builds the same tokens on every `cargo check`. (Markers and
    // contexts are passed as bare names, and paths written inline, for the same reason: each
    // token stream spliced into another costs this crate more than many single tokens.)
    let pipeline_impls = pipelines.iter().map(|pipeline| {
        let marker = format_ident!("{}", pipeline.marker());
        quote! {
            #(#cfgs)*
            #[automatically_derived]
            impl ::adk::__private::middleware::Fits<::adk::pipeline::#marker> for #body_type {
                ::adk::__middleware_methods!(#scope_context, #future, |#ctx, #next| #place);
                #state_hook
            }
        }
    });
    let named_fn = named_fn(function, first);
    quote! {
        #named_fn
        #body_function
        #recorder
        #(#pipeline_impls)*
    }
}

/// The expansion next to compile errors: the fn and its hidden type, so uses of the name
/// resolve, and the user's function, so errors inside its body are still reported. A non-async function is made
/// async here (and loses `const` and `extern`) so its `.await`s do not add errors to the one
/// already reported.
///
/// The `Fits` impls are emitted too, for every pipeline, and the direct call, so registering
/// the middleware or calling it reports nothing more; their bodies never run
/// because the crate does not compile.
pub(crate) fn fallback(function: &MiddlewareFn, errors: Vec<syn::Error>) -> TokenStream {
    let errors = errors.into_iter().map(|error| error.to_compile_error());
    let is_method = function
        .sig
        .inputs
        .iter()
        .any(|input| matches!(input, syn::FnArg::Receiver(_)));
    if is_method {
        // A method sits inside an `impl` block, where a module cannot be declared: leave it as
        // it was.
        let MiddlewareFn {
            attrs,
            vis,
            sig,
            body,
            ..
        } = function;
        return quote!(#(#errors)* #(#attrs)* #vis #sig #body);
    }
    let mut function_for_body = MiddlewareFn {
        attrs: function.attrs.clone(),
        vis: function.vis.clone(),
        sig: function.sig.clone(),
        body: function.body.clone(),
    };
    let signature = &mut function_for_body.sig;
    if signature.asyncness.is_none() {
        signature.asyncness = Some(syn::Token![async](signature.fn_token.span));
    }
    // `const` and `extern` cannot be combined with `async`; both were already reported.
    signature.constness = None;
    signature.abi = None;
    let body_type = body_type(function);
    let cfgs: Vec<_> = function.cfg_attributes().collect();
    // Every pipeline gets an impl, so registering the middleware adds nothing to the error
    // already reported (an unknown pipeline, a context of the other scope, a bad signature),
    // whichever pipeline the user meant. The direct call follows the context the fn is
    // written for, so a direct call (`load_history(ctx, next)`) stays quiet too.
    let written_context = function.sig.inputs.first().and_then(|input| {
        let syn::FnArg::Typed(typed) = input else {
            return None;
        };
        let context = match &*typed.ty {
            syn::Type::Reference(reference) => &*reference.elem,
            other => other,
        };
        super::parse::last_segment(context).map(|segment| segment.ident.to_string())
    });
    let callable_as = Pipeline::ALL
        .into_iter()
        .find(|pipeline| Some(pipeline.scope().context()) == written_context.as_deref())
        .unwrap_or(Pipeline::ALL[0]);
    let named_fn = named_fn(function, callable_as);
    let body_function = body_function(
        &function_for_body,
        quote!(#[allow(dead_code, unused_variables, clippy::all)]),
    );
    let impls = Pipeline::ALL.iter().map(|pipeline| {
        let marker = marker(*pipeline);
        quote! {
            #(#cfgs)*
            #[automatically_derived]
            impl ::adk::__private::middleware::Fits<#marker> for #body_type {
                fn run<'a>(
                    _: &'a mut <#marker as ::adk::pipeline::Pipeline>::Context,
                    _: ::adk::pipeline::Next<'a, <#marker as ::adk::pipeline::Pipeline>::Context>,
                ) -> impl ::core::future::Future<Output = ::core::result::Result<(), ::adk::pipeline::BoxError>> + ::core::marker::Send + 'a {
                    async { ::core::unreachable!("`#[middleware]` reported a compile error for this function") }
                }
            }
        }
    });
    quote! {
        #(#errors)*
        #named_fn
        #body_function
        #(#impls)*
    }
}
