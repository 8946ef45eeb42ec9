//! `#[middleware(pipeline = ...)]`: an `async fn` becomes a unit struct implementing
//! `adk::pipeline::Middleware` for the pipelines it names.
//!
//! `parse` reads the attribute and the function, `validate` collects every mistake with the
//! span of the user's token, `expand` writes the code. On any mistake the user's function and
//! struct are still emitted, so the only errors are ours and those inside the user's body.

mod expand;
mod next_use;
mod parse;
mod validate;

#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;
use quote::quote;

/// Expands `#[middleware(arguments)] item`.
pub(crate) fn expand(arguments: TokenStream, item: TokenStream) -> TokenStream {
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
    let checked = check(arguments, &function);
    match checked {
        Checked {
            pipelines: Some(pipelines),
            signature: Some(signature),
            problems,
        } if problems.is_empty() => expand::middleware(&function, &pipelines, &signature),
        Checked {
            pipelines,
            problems,
            ..
        } => expand::fallback(&function, pipelines.as_deref(), problems.into_errors()),
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
