//! Reads the attribute arguments and the annotated function into a model; judges nothing.

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;

/// `#[middleware(pipeline = ...)]`, as written. Unknown and repeated keys are darling's errors.
#[derive(Debug, FromMeta)]
pub(crate) struct Arguments {
    /// `None` when the user left the key out; validation says how to write it.
    pub(crate) pipeline: Option<PipelineList>,
}

/// The value of `pipeline = ...`: one name, or a bracketed list of names.
#[derive(Debug)]
pub(crate) struct PipelineList {
    pub(crate) names: Vec<WrittenName>,
    /// The whole value, for errors about the list itself (an empty list).
    pub(crate) span: Span,
}

/// A pipeline name as the user wrote it, with its span so errors can point at it.
#[derive(Debug, Clone)]
pub(crate) struct WrittenName {
    pub(crate) text: String,
    pub(crate) span: Span,
    /// True when the name was a string literal (`pipeline = "turn_input"`).
    pub(crate) quoted: bool,
}

impl FromMeta for PipelineList {
    fn from_expr(expr: &syn::Expr) -> darling::Result<Self> {
        let names = match expr {
            syn::Expr::Array(array) => {
                let mut errors = darling::Error::accumulator();
                let names = array
                    .elems
                    .iter()
                    .filter_map(|element| errors.handle(written_name(element)))
                    .collect();
                errors.finish_with(names)?
            }
            // Invisible groups appear when the attribute comes out of a `macro_rules!`.
            syn::Expr::Group(group) => return Self::from_expr(&group.expr),
            single => vec![written_name(single)?],
        };
        Ok(Self {
            names,
            span: expr.span(),
        })
    }
}

fn written_name(expr: &syn::Expr) -> darling::Result<WrittenName> {
    match expr {
        syn::Expr::Path(path) if path.qself.is_none() => {
            // A path such as `adk::pipeline::TurnInput` is judged by its last segment; validation
            // suggests the snake_case name for it.
            let Some(last) = path.path.segments.last() else {
                return Err(not_a_name(expr));
            };
            Ok(WrittenName {
                text: if path.path.segments.len() == 1 {
                    last.ident.to_string()
                } else {
                    path_text(&path.path)
                },
                span: path.span(),
                quoted: false,
            })
        }
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(literal),
            ..
        }) => Ok(WrittenName {
            text: literal.value(),
            span: literal.span(),
            quoted: true,
        }),
        syn::Expr::Group(group) => written_name(&group.expr),
        _ => Err(not_a_name(expr)),
    }
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn not_a_name(expr: &syn::Expr) -> darling::Error {
    darling::Error::custom(
        "expected a pipeline name; write one of `turn_input`, `turn_output`, `dispatch_input`, \
         `dispatch_output`, `tool_execution`, or a list of them such as \
         `[dispatch_input, dispatch_output]`",
    )
    .with_span(expr)
}

/// Parses the tokens between the attribute's parentheses.
pub(crate) fn arguments(tokens: TokenStream) -> darling::Result<Arguments> {
    if let Some(arguments) = one_pipeline_name(&tokens) {
        return Ok(arguments);
    }
    let items = NestedMeta::parse_meta_list(tokens)?;
    Arguments::from_list(&items)
}

/// `pipeline = turn_input`, read directly: what almost every use writes, and darling's general
/// parse costs the unoptimised proc macro several times more. Anything else goes to darling.
fn one_pipeline_name(tokens: &TokenStream) -> Option<Arguments> {
    use proc_macro2::TokenTree;
    let mut trees = tokens.clone().into_iter();
    let (
        Some(TokenTree::Ident(key)),
        Some(TokenTree::Punct(equals)),
        Some(TokenTree::Ident(name)),
        None,
    ) = (trees.next(), trees.next(), trees.next(), trees.next())
    else {
        return None;
    };
    if key != "pipeline" || equals.as_char() != '=' {
        return None;
    }
    let span = name.span();
    Some(Arguments {
        pipeline: Some(PipelineList {
            names: vec![WrittenName {
                text: name.to_string(),
                span,
                quoted: false,
            }],
            span,
        }),
    })
}

/// The annotated function. The signature is parsed; the body is kept as the user's tokens so a
/// syntax error inside it is left for rustc to report once, while the struct and its impls are
/// still emitted (what an IDE shows while the user is typing).
pub(crate) struct MiddlewareFn {
    pub(crate) attrs: Vec<syn::Attribute>,
    pub(crate) vis: syn::Visibility,
    pub(crate) sig: syn::Signature,
    /// The braced body, exactly as written.
    pub(crate) body: proc_macro2::Group,
}

impl syn::parse::Parse for MiddlewareFn {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(syn::Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig: syn::Signature = input.parse()?;
        let body = match input.parse::<proc_macro2::TokenTree>() {
            Ok(proc_macro2::TokenTree::Group(group))
                if group.delimiter() == proc_macro2::Delimiter::Brace =>
            {
                group
            }
            _ => {
                return Err(syn::Error::new(
                    sig.ident.span(),
                    "expected a function with a body",
                ));
            }
        };
        Ok(Self {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl MiddlewareFn {
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        // The body is split off before syn sees the tokens: syn copies every token it is given,
        // nested groups included, into its own buffer, so handing it the whole fn makes the
        // parse grow with the body, which nothing here reads as syntax.
        let mut trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        let body = match trees.pop() {
            Some(proc_macro2::TokenTree::Group(group))
                if group.delimiter() == proc_macro2::Delimiter::Brace =>
            {
                group
            }
            // No braced body last (`fn f();`): the full parse says what is wrong.
            last => {
                trees.extend(last);
                return syn::parse2(trees.into_iter().collect());
            }
        };
        let (attrs, vis, sig) = syn::parse::Parser::parse2(
            |input: syn::parse::ParseStream<'_>| {
                Ok((
                    input.call(syn::Attribute::parse_outer)?,
                    input.parse::<syn::Visibility>()?,
                    input.parse::<syn::Signature>()?,
                ))
            },
            trees.into_iter().collect(),
        )?;
        Ok(Self {
            attrs,
            vis,
            sig,
            body,
        })
    }

    /// The body as a block, when it parses. Parsed only when asked: the `next` checks need it
    /// for bodies their token-level look cannot settle, and nothing else does.
    pub(crate) fn block(&self) -> Option<syn::Block> {
        syn::parse2(quote::ToTokens::into_token_stream(self.body.clone())).ok()
    }

    pub(crate) fn name(&self) -> &syn::Ident {
        &self.sig.ident
    }

    /// Doc comments travel to the generated struct; the other attributes stay on the function.
    pub(crate) fn doc_attributes(&self) -> impl Iterator<Item = &syn::Attribute> {
        self.attrs
            .iter()
            .filter(|attribute| attribute.path().is_ident("doc"))
    }

    pub(crate) fn other_attributes(&self) -> impl Iterator<Item = &syn::Attribute> {
        self.attrs
            .iter()
            .filter(|attribute| !attribute.path().is_ident("doc"))
    }

    /// `#[cfg]` must also gate the struct and impls, or they would outlive a disabled function.
    pub(crate) fn cfg_attributes(&self) -> impl Iterator<Item = &syn::Attribute> {
        self.attrs
            .iter()
            .filter(|attribute| attribute.path().is_ident("cfg"))
    }
}

/// The last segment's identifier of a path type, looking through parentheses and groups:
/// `adk::TurnContext` gives `TurnContext`.
pub(crate) fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        syn::Type::Paren(inner) => last_segment(&inner.elem),
        syn::Type::Group(inner) => last_segment(&inner.elem),
        _ => None,
    }
}

/// The type arguments of a path segment: `Next<'_, TurnContext>` gives `[TurnContext]`.
pub(crate) fn type_arguments(segment: &syn::PathSegment) -> Vec<&syn::Type> {
    match &segment.arguments {
        syn::PathArguments::AngleBracketed(arguments) => arguments
            .args
            .iter()
            .filter_map(|argument| match argument {
                syn::GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
