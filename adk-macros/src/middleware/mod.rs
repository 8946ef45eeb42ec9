//! `#[middleware(pipeline = ...)]`: an `async fn` stays a fn of its name, which is
//! `adk::pipeline::Middleware` for the pipelines it names (through a hidden type that carries
//! its body and says which pipelines it fits).
//!
//! `parse` reads the attribute and the function, `validate` collects every mistake with the
//! span of the user's token, `expand` writes the code. On any mistake the user's function and
//! the fn of its name are still emitted, so the only errors are ours and those inside the user's body.

mod expand;
mod next_use;
mod parse;
pub(crate) mod placement;
mod state_writes;
mod validate;

#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;
use quote::quote;

use placement::Placement;

/// Expands `#[middleware(arguments)] item`, written at `placement`.
pub(crate) fn expand(
    arguments: TokenStream,
    item: TokenStream,
    placement: &Placement,
) -> TokenStream {
    let function = match parse::MiddlewareFn::parse(item.clone()) {
        Ok(function) => function,
        Err(error) => {
            let error = syn::Error::new(
                error.span(),
                format!("`#[middleware]` goes on an `async fn`: {error}"),
            )
            .to_compile_error();
            return quote!(#error #item);
        }
    };
    if let Some(error) = placement_error(&function, placement) {
        // Nothing else is emitted: a struct cannot go in the block, and the fn as written
        // keeps the rest of the block compiling.
        let error = error.to_compile_error();
        return quote!(#error #item);
    }
    let checked = check(arguments, &function);
    match checked {
        Checked {
            pipelines: Some(pipelines),
            signature: Some(signature),
            problems,
        } if problems.is_empty() => expand::middleware(&function, &pipelines, &signature),
        Checked { problems, .. } => expand::fallback(&function, problems.into_errors()),
    }
}

/// What validation learnt: the parts that passed, and every problem found.
struct Checked<'a> {
    pipelines: Option<Vec<validate::Pipeline>>,
    signature: Option<validate::Signature<'a>>,
    problems: validate::Problems,
}

fn check(arguments: TokenStream, function: &parse::MiddlewareFn) -> Checked<'_> {
    let mut problems = validate::Problems::default();
    let pipelines = match parse::arguments(arguments) {
        Ok(arguments) => validate::pipelines(&arguments, &mut problems),
        Err(error) => {
            problems.add_argument_errors(error);
            None
        }
    };
    // The signature and body are checked even when the attribute is wrong, so one build
    // reports every mistake.
    let signature = validate::signature(function, pipelines.as_deref(), &mut problems);
    validate::body(function, pipelines.as_deref(), &mut problems);
    Checked {
        pipelines,
        signature,
        problems,
    }
}

/// Our error for an associated fn, with the fix: the module and impls `#[middleware]` writes next
/// to the fn cannot live in an `impl` or `trait` block.
fn placement_error(function: &parse::MiddlewareFn, placement: &Placement) -> Option<syn::Error> {
    let name = function.name();
    let is_method = function
        .sig
        .inputs
        .iter()
        .any(|input| matches!(input, syn::FnArg::Receiver(_)));
    if is_method {
        // `self` gets its own error from validation, which says to remove it.
        return None;
    }
    let (block, kind) = match placement {
        Placement::Free => return None,
        Placement::Impl(header) => (format!("impl {header}"), "an `impl`"),
        Placement::Trait(header) => (format!("trait {header}"), "a `trait`"),
    };
    Some(syn::Error::new(
        proc_macro2::Span::call_site(),
        format!(
            "`#[middleware]` goes on a free `async fn`, not in `{block}`: it writes a \
             module and impls next to `{name}`, which {kind} block cannot hold; move `{name}` out of the block into the \
             module and register it as `{name}` (to give a middleware state, implement \
             `adk::pipeline::Middleware` for your type by hand)"
        ),
    ))
}
