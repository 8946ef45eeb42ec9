//! The shapes of syntax the analysis in `next_use` recognises: how branches join, which
//! expressions leave with an error, which calls drop their argument, and the names a pattern
//! binds.

use proc_macro2::TokenStream;

use super::Flow;

/// Joins the paths of branches into the path after them.
pub(super) fn merge(branches: Vec<(Option<Flow>, TokenStream)>) -> Option<Flow> {
    let any_handled = branches
        .iter()
        .any(|(flow, _)| !matches!(flow, Some(Flow::Open(_))));
    let any_settled = branches
        .iter()
        .any(|(flow, _)| matches!(flow, Some(Flow::Settled)));
    let mut open = branches
        .into_iter()
        .filter_map(|(flow, tokens)| match flow {
            Some(Flow::Open(witness)) => Some((witness, tokens)),
            _ => None,
        });
    match open.next() {
        Some((witness, tokens)) => Some(Flow::Open(if any_handled {
            witness.or(Some(tokens))
        } else {
            witness
        })),
        // Every branch settled or left; when none falls through, nothing follows.
        None => any_settled.then_some(Flow::Settled),
    }
}

/// `Err(..)`, `return Err(..)`, `Err(..)?`, `bail!(..)`: a path that fails rather than
/// short-circuits.
pub(super) fn is_error_exit(expr: &syn::Expr) -> bool {
    match expr {
        syn::Expr::Call(call) => matches!(&*call.func, syn::Expr::Path(path)
            if path.path.segments.last().is_some_and(|segment| segment.ident == "Err")),
        syn::Expr::Paren(inner) => is_error_exit(&inner.expr),
        syn::Expr::Group(inner) => is_error_exit(&inner.expr),
        syn::Expr::Try(tried) => is_error_exit(&tried.expr),
        syn::Expr::Return(returned) => returned.expr.as_deref().is_some_and(is_error_exit),
        syn::Expr::Macro(mac) => mac
            .mac
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "bail"),
        syn::Expr::Block(block) => matches!(block.block.stmts.last(),
            Some(syn::Stmt::Expr(tail, None)) if is_error_exit(tail)),
        _ => false,
    }
}

pub(super) fn is_drop(function: &syn::Expr) -> bool {
    let syn::Expr::Path(path) = function else {
        return false;
    };
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    matches!(
        segments.iter().map(String::as_str).collect::<Vec<_>>()[..],
        ["drop"] | ["mem", "drop" | "forget"] | ["std" | "core", "mem", "drop" | "forget"]
    )
}

pub(super) fn pattern_names(pattern: &syn::Pat, names: &mut Vec<String>) {
    match pattern {
        syn::Pat::Ident(binding) => {
            names.push(binding.ident.to_string());
            if let Some((_, sub)) = &binding.subpat {
                pattern_names(sub, names);
            }
        }
        syn::Pat::Tuple(tuple) => tuple.elems.iter().for_each(|p| pattern_names(p, names)),
        syn::Pat::TupleStruct(tuple) => tuple.elems.iter().for_each(|p| pattern_names(p, names)),
        syn::Pat::Struct(fields) => fields
            .fields
            .iter()
            .for_each(|field| pattern_names(&field.pat, names)),
        syn::Pat::Slice(slice) => slice.elems.iter().for_each(|p| pattern_names(p, names)),
        syn::Pat::Reference(inner) => pattern_names(&inner.pat, names),
        syn::Pat::Type(inner) => pattern_names(&inner.pat, names),
        syn::Pat::Paren(inner) => pattern_names(&inner.pat, names),
        syn::Pat::Or(or) => {
            if let Some(first) = or.cases.first() {
                pattern_names(first, names);
            }
        }
        _ => {}
    }
}
