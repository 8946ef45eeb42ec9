//! Checks the parsed attribute and function against the middleware contract. Collects every
//! problem it finds, each spanned at the user's token and saying the fix; emits no code.

use proc_macro2::Span;
use quote::ToTokens;

use super::parse::{self, Arguments, MiddlewareFn, WrittenName};

/// The five pipelines, as the attribute names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pipeline {
    TurnInput,
    TurnOutput,
    DispatchInput,
    DispatchOutput,
    ToolExecution,
}

/// Which context a pipeline's middleware receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    Turn,
    Dispatch,
    Tool,
}

impl Pipeline {
    pub(crate) const ALL: [Self; 5] = [
        Self::TurnInput,
        Self::TurnOutput,
        Self::DispatchInput,
        Self::DispatchOutput,
        Self::ToolExecution,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::TurnInput => "turn_input",
            Self::TurnOutput => "turn_output",
            Self::DispatchInput => "dispatch_input",
            Self::DispatchOutput => "dispatch_output",
            Self::ToolExecution => "tool_execution",
        }
    }

    /// The marker type in `adk::pipeline`.
    pub(crate) fn marker(self) -> &'static str {
        match self {
            Self::TurnInput => "TurnInput",
            Self::TurnOutput => "TurnOutput",
            Self::DispatchInput => "DispatchInput",
            Self::DispatchOutput => "DispatchOutput",
            Self::ToolExecution => "ToolExecution",
        }
    }

    pub(crate) fn scope(self) -> Scope {
        match self {
            Self::TurnInput | Self::TurnOutput => Scope::Turn,
            Self::DispatchInput | Self::DispatchOutput => Scope::Dispatch,
            Self::ToolExecution => Scope::Tool,
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|pipeline| pipeline.name() == name)
    }
}

impl Scope {
    pub(crate) fn context(self) -> &'static str {
        match self {
            Self::Turn => "TurnContext",
            Self::Dispatch => "DispatchContext",
            Self::Tool => "ToolContext",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Turn => "turn-scoped",
            Self::Dispatch => "dispatch-scoped",
            Self::Tool => "tool-scoped",
        }
    }

    fn pipelines(self) -> &'static str {
        match self {
            Self::Turn => "`turn_input` or `turn_output`",
            Self::Dispatch => "`dispatch_input` or `dispatch_output`",
            Self::Tool => "`tool_execution`",
        }
    }

    fn of_context(context: &str) -> Option<Self> {
        match context {
            "TurnContext" => Some(Self::Turn),
            "DispatchContext" => Some(Self::Dispatch),
            "ToolContext" => Some(Self::Tool),
            _ => None,
        }
    }
}

const CHOICES: &str =
    "`turn_input`, `turn_output`, `dispatch_input`, `dispatch_output` or `tool_execution`";

/// The problems found so far. Validation keeps going after a problem so one build shows them all.
#[derive(Default)]
pub(crate) struct Problems {
    errors: Vec<syn::Error>,
}

impl Problems {
    fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// Spans the whole of `tokens`, so the caret underlines every token of it.
    fn spanning(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    /// darling's own errors (unknown or repeated keys, a value of the wrong form), each
    /// completed with the argument syntax so the fix is on the same line.
    pub(crate) fn add_argument_errors(&mut self, error: darling::Error) {
        for single in error {
            let text = single.to_string();
            let separator = if text.ends_with(['?', '.']) {
                " "
            } else {
                "; "
            };
            self.errors.push(syn::Error::new(
                single.span(),
                format!(
                    "{text}{separator}`#[middleware]` takes one argument, written \
                     `pipeline = turn_input` or `pipeline = [dispatch_input, dispatch_output]`"
                ),
            ));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub(crate) fn into_errors(self) -> Vec<syn::Error> {
        self.errors
    }
}

/// The pipelines the middleware is implemented for, all of one scope. `None` when the argument
/// is missing or wrong (and a problem was recorded).
pub(crate) fn pipelines(arguments: &Arguments, problems: &mut Problems) -> Option<Vec<Pipeline>> {
    let Some(list) = &arguments.pipeline else {
        problems.at(
            Span::call_site(),
            format!(
                "`#[middleware]` needs the pipeline it runs in; write \
                 `#[middleware(pipeline = turn_input)]` with one of {CHOICES}, or a list of one \
                 scope such as `pipeline = [dispatch_input, dispatch_output]`"
            ),
        );
        return None;
    };
    if list.names.is_empty() {
        problems.at(
            list.span,
            format!("the pipeline list is empty; name at least one of {CHOICES}"),
        );
        return None;
    }
    let mut found: Vec<(Pipeline, &WrittenName)> = Vec::new();
    let mut complete = true;
    for written in &list.names {
        let Some(pipeline) = pipeline_named(written, problems) else {
            complete = false;
            continue;
        };
        if found.iter().any(|(seen, _)| *seen == pipeline) {
            problems.at(
                written.span,
                format!(
                    "pipeline `{}` is listed twice; remove this one",
                    pipeline.name()
                ),
            );
            continue;
        }
        if let Some((first, _)) = found.first()
            && first.scope() != pipeline.scope()
        {
            problems.at(
                written.span,
                format!(
                    "`{}` is {} but `{}` is {}, and one middleware fn takes one context; list \
                     only {} pipelines here and write a second middleware for the others",
                    pipeline.name(),
                    pipeline.scope().describe(),
                    first.name(),
                    first.scope().describe(),
                    first.scope().describe(),
                ),
            );
            complete = false;
            continue;
        }
        found.push((pipeline, written));
    }
    complete.then(|| found.into_iter().map(|(pipeline, _)| pipeline).collect())
}

fn pipeline_named(written: &WrittenName, problems: &mut Problems) -> Option<Pipeline> {
    if let Some(pipeline) = Pipeline::from_name(&written.text) {
        if written.quoted {
            problems.at(
                written.span,
                format!(
                    "write the pipeline name without quotes: `pipeline = {}`",
                    pipeline.name()
                ),
            );
            return None;
        }
        return Some(pipeline);
    }
    let message = match suggestion(&written.text) {
        Some(pipeline) => format!(
            "unknown pipeline `{}`; did you mean `{}`? The pipelines are {CHOICES}",
            written.text,
            pipeline.name()
        ),
        None => format!(
            "unknown pipeline `{}`; write one of {CHOICES}",
            written.text
        ),
    };
    problems.at(written.span, message);
    None
}

/// The pipeline a misspelt or differently-cased name most likely meant.
pub(crate) fn suggestion(written: &str) -> Option<Pipeline> {
    // `TurnInput` and `adk::pipeline::TurnInput` name the marker type; match them ignoring case
    // and underscores before falling back to edit distance.
    let last = written.rsplit("::").next().unwrap_or(written);
    let normalized: String = last
        .chars()
        .filter(|character| *character != '_')
        .flat_map(char::to_lowercase)
        .collect();
    if let Some(pipeline) = Pipeline::ALL
        .into_iter()
        .find(|pipeline| pipeline.name().replace('_', "") == normalized)
    {
        return Some(pipeline);
    }
    Pipeline::ALL
        .into_iter()
        .map(|pipeline| (pipeline, strsim::jaro_winkler(last, pipeline.name())))
        .filter(|(_, similarity)| *similarity > 0.8)
        .max_by(|(_, left), (_, right)| left.total_cmp(right))
        .map(|(pipeline, _)| pipeline)
}

/// The types the expansion needs from a signature that passed every check.
pub(crate) struct Signature<'a> {
    /// `T` in the user's `ctx: &mut T`.
    pub(crate) context: &'a syn::Type,
    /// The user's return type, `Result<(), E>` or an alias of it.
    pub(crate) output: &'a syn::Type,
}

/// The signature the pipeline expects, for messages.
fn expected_signature(name: &syn::Ident, scope: Option<Scope>) -> String {
    match scope {
        Some(scope) => format!(
            "`async fn {name}(ctx: &mut {context}, next: Next<'_, {context}>) -> Result<(), E>`",
            context = scope.context()
        ),
        None => format!(
            "`async fn {name}(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), E>` \
             (`DispatchContext` for dispatch pipelines, `ToolContext` for `tool_execution`)"
        ),
    }
}

fn expected_parameters(scope: Option<Scope>) -> String {
    let context = scope.map_or("TurnContext", Scope::context);
    format!("`(ctx: &mut {context}, next: Next<'_, {context}>)`")
}

fn pipeline_label(pipelines: Option<&[Pipeline]>) -> String {
    match pipelines {
        Some([single]) => format!("`{}` middleware", single.name()),
        Some(many) if !many.is_empty() => format!("{} middleware", many[0].scope().describe()),
        _ => "middleware".to_owned(),
    }
}

/// Checks the function's shape. `pipelines` is `None` when the attribute was wrong; the
/// signature is then checked against either scope.
pub(crate) fn signature<'a>(
    function: &'a MiddlewareFn,
    pipelines: Option<&[Pipeline]>,
    problems: &mut Problems,
) -> Option<Signature<'a>> {
    let sig = &function.sig;
    let scope = pipelines
        .and_then(|list| list.first())
        .map(|first| first.scope());
    let label = pipeline_label(pipelines);
    let before = problems.errors.len();

    if sig.asyncness.is_none() {
        problems.at(
            sig.fn_token.span,
            format!("{label} must be an `async fn`; add `async` before `fn`"),
        );
    }
    if let Some(constness) = &sig.constness {
        problems.at(
            constness.span,
            "middleware cannot be a `const fn`; remove `const`",
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        problems.at(
            unsafety.span,
            "middleware cannot be an `unsafe fn`: the pipeline calls it with no safety contract; \
             remove `unsafe` and use an `unsafe` block inside the body",
        );
    }
    if let Some(abi) = &sig.abi {
        problems.spanning(
            abi,
            "middleware cannot declare an ABI; remove the `extern` qualifier",
        );
    }
    if let Some(variadic) = &sig.variadic {
        problems.spanning(variadic, "middleware cannot be variadic; remove `...`");
    }
    let type_parameters: Vec<&syn::GenericParam> = sig
        .generics
        .params
        .iter()
        .filter(|parameter| !matches!(parameter, syn::GenericParam::Lifetime(_)))
        .collect();
    if let Some(first) = type_parameters.first() {
        problems.spanning(
            first,
            format!(
                "middleware cannot be generic: `#[middleware]` turns `{}` into a single unit \
                 struct value; remove the type parameters and name concrete types",
                sig.ident
            ),
        );
    }
    for input in &sig.inputs {
        if let syn::FnArg::Receiver(receiver) = input {
            problems.spanning(
                receiver,
                "middleware made with `#[middleware]` is a free `async fn`, not a method; remove \
                 `self`, or implement `adk::pipeline::Middleware` for your type by hand to carry state",
            );
        }
    }
    let parameters: Vec<&syn::PatType> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Typed(typed) => Some(typed),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    let context = parameters_in_order(function, &parameters, scope, &label, problems);
    let output = output(sig, problems);

    if problems.errors.len() > before {
        return None;
    }
    Some(Signature {
        context: context?,
        output: output?,
    })
}

fn parameters_in_order<'a>(
    function: &MiddlewareFn,
    parameters: &[&'a syn::PatType],
    scope: Option<Scope>,
    label: &str,
    problems: &mut Problems,
) -> Option<&'a syn::Type> {
    let name = function.name();
    let expected = expected_signature(name, scope);
    match parameters {
        [] => {
            problems.at(
                name.span(),
                format!("{label} take two parameters, the context and `next`; write {expected}"),
            );
            None
        }
        [only] => {
            let missing = if is_next(&only.ty) {
                "the context"
            } else {
                "`next`"
            };
            problems.spanning(
                only,
                format!(
                    "{label} take two parameters, the context and `next`, but {missing} is \
                     missing; write {expected}"
                ),
            );
            None
        }
        [context, next] => {
            if is_next(&context.ty) && !is_next(&next.ty) {
                problems.spanning(
                    quote::quote!(#context, #next),
                    format!(
                        "the context comes first and `next` second; write {}",
                        expected_parameters(scope)
                    ),
                );
                return None;
            }
            let reported = problems.errors.len();
            let context_type = context_parameter(context, scope, label, problems);
            // One report per mistake: a wrong context written twice is reported at the first.
            let context_reported = problems.errors.len() > reported;
            next_parameter(next, scope, label, !context_reported, problems);
            context_type
        }
        [_, _, extra, ..] => {
            problems.spanning(
                extra,
                format!(
                    "{label} take only the context and `next`; remove this parameter and read \
                     what it carried from the context: {expected}"
                ),
            );
            None
        }
    }
}

fn is_next(ty: &syn::Type) -> bool {
    parse::last_segment(ty).is_some_and(|segment| segment.ident == "Next")
}

fn context_parameter<'a>(
    parameter: &'a syn::PatType,
    scope: Option<Scope>,
    label: &str,
    problems: &mut Problems,
) -> Option<&'a syn::Type> {
    let expected_context = scope.map_or("TurnContext", Scope::context);
    let syn::Type::Reference(reference) = &*parameter.ty else {
        problems.spanning(
            &parameter.ty,
            format!("{label} borrow the context mutably; write `ctx: &mut {expected_context}`"),
        );
        return None;
    };
    if reference.mutability.is_none() {
        problems.spanning(
            &parameter.ty,
            format!(
                "{label} borrow the context mutably, so `&` is not enough; write \
                 `ctx: &mut {expected_context}`"
            ),
        );
        return None;
    }
    check_context_type(&reference.elem, scope, label, problems);
    Some(&reference.elem)
}

/// The syntactic scope check: a context named `TurnContext` or `DispatchContext` must match the
/// pipeline. Aliases pass here and are checked by the type system in the expansion.
fn check_context_type(ty: &syn::Type, scope: Option<Scope>, label: &str, problems: &mut Problems) {
    let (Some(scope), Some(segment)) = (scope, parse::last_segment(ty)) else {
        return;
    };
    let written = segment.ident.to_string();
    if let Some(written_scope) = Scope::of_context(&written)
        && written_scope != scope
    {
        problems.spanning(
            ty,
            format!(
                "{label} receive `{}`, not `{written}`; change this type to `{}`, or register the \
                 middleware on {} instead",
                scope.context(),
                scope.context(),
                written_scope.pipelines(),
            ),
        );
    }
}

fn next_parameter(
    parameter: &syn::PatType,
    scope: Option<Scope>,
    label: &str,
    check_context: bool,
    problems: &mut Problems,
) {
    let expected_context = scope.map_or("TurnContext", Scope::context);
    let Some(segment) =
        parse::last_segment(&parameter.ty).filter(|segment| segment.ident == "Next")
    else {
        problems.spanning(
            &parameter.ty,
            format!(
                "the second parameter of {label} is the rest of the pipeline; write \
                 `next: Next<'_, {expected_context}>`"
            ),
        );
        return;
    };
    if check_context && let Some(context) = parse::type_arguments(segment).first() {
        check_context_type(context, scope, label, problems);
    }
}

fn output<'a>(sig: &'a syn::Signature, problems: &mut Problems) -> Option<&'a syn::Type> {
    let syn::ReturnType::Type(_, ty) = &sig.output else {
        problems.at(
            sig.ident.span(),
            format!(
                "middleware `{}` must return `Result<(), E>` so a failure reaches the pipeline; \
                 add `-> Result<(), adk::pipeline::BoxError>` (or your own error type) and end \
                 the body with `Ok(())`",
                sig.ident
            ),
        );
        return None;
    };
    let Some(segment) = parse::last_segment(ty) else {
        return Some(ty);
    };
    let bare_error = segment.ident == "BoxError"
        || segment.ident == "Error"
        || (segment.ident == "Box" && ty.to_token_stream().to_string().contains("Error"));
    if bare_error {
        problems.spanning(
            ty,
            "middleware return `Result<(), E>`, not a bare error; write \
             `-> Result<(), BoxError>` and return failures as `Err(..)`",
        );
        return None;
    }
    if segment.ident == "Result"
        && let Some(success) = parse::type_arguments(segment).first()
        && !matches!(success, syn::Type::Tuple(tuple) if tuple.elems.is_empty())
    {
        problems.spanning(
            success,
            "middleware succeed with `()`: results travel in the context, not the return value; \
             write `Result<(), E>` and store the value in `ctx.stash`",
        );
        return None;
    }
    Some(ty)
}

/// Checks how the body uses `next`; the rule is in [`super::next_use`]. A body that does not
/// parse is left to rustc, which reports the syntax error on its own.
pub(crate) fn body(
    function: &MiddlewareFn,
    pipelines: Option<&[Pipeline]>,
    problems: &mut Problems,
) {
    let Some((next, pattern)) = next_binding(function) else {
        return;
    };
    let context = context_binding(function, &next);
    if super::next_use::plainly_settled(context.as_ref(), &next, function.body.stream()) {
        return;
    }
    let Some(block) = function.block() else {
        return;
    };
    let found = super::next_use::analyse(context.as_ref(), &next, &block);
    let pipeline_text = match pipelines {
        Some([single]) => format!("the `{}` pipeline", single.name()),
        _ => "its pipeline".to_owned(),
    };
    // A tool middleware settles its call; the others abort.
    let (refuse, unsettled) = match pipelines {
        Some([Pipeline::ToolExecution]) => (
            "`ctx.refuse(reason)` (or answer with `ctx.respond(output)`)",
            "the call is neither refused nor answered",
        ),
        _ => ("`ctx.abort(reason)`", "the turn is not aborted"),
    };
    if !found.thrown_away.is_empty() {
        // One report per mistake: a thrown-away future also leaves its path unsettled.
        for (call, holder) in found.thrown_away {
            let message = if holder {
                format!(
                    "`{next}` is moved in here, but what this makes is never run: it is not \
                     awaited, returned or handed on, so the rest of {pipeline_text} never runs; \
                     `.await` it (call a closure and `.await` what it returns), or run the chain \
                     directly with `{next}.run(ctx).await` (`cond.then(|| {next}.run(ctx))` \
                     makes a future that is dropped unrun)"
                )
            } else {
                format!(
                    "`{next}.run(..)` returns a future that does nothing until it is awaited, so \
                     the rest of {pipeline_text} never runs; add `.await`: \
                     `{next}.run(ctx).await`"
                )
            };
            problems.spanning(call, message);
        }
        return;
    }
    if next.to_string().starts_with('_') {
        return;
    }
    if !found.ever_run {
        problems.spanning(
            pattern,
            format!(
                "`{next}` is never run, so this middleware short-circuits {pipeline_text} on \
                 every run (reported as E_PIPELINE_SHORT_CIRCUITED); call \
                 `{next}.run(ctx).await`, or, to refuse on purpose, call {refuse} and \
                 name the parameter `_{next}`"
            ),
        );
        return;
    }
    if !found.unsettled.is_empty() && !found.foreign_aborts.is_empty() {
        // The likely cause of the unsettled path: one report per mistake, at the call.
        let context = context.map_or_else(|| "ctx".to_owned(), |context| context.to_string());
        for call in found.foreign_aborts {
            problems.spanning(
                call,
                format!(
                    "this `abort` is not called on the middleware's context, so it does not \
                     abort the turn, and on this path `{next}` is not run: the middleware \
                     short-circuits {pipeline_text} (E_PIPELINE_SHORT_CIRCUITED); to refuse on \
                     purpose call `{context}.abort(reason)` on the context parameter itself, \
                     otherwise run `{next}.run({context}).await` on this path too, or return an \
                     `Err`"
                ),
            );
        }
        return;
    }
    for witness in found.unsettled {
        let message = format!(
            "on this path `{next}` is not run, {unsettled} and no error is returned, \
             so the middleware short-circuits {pipeline_text} here (E_PIPELINE_SHORT_CIRCUITED); \
             run `{next}.run(ctx).await` on this path too, call {refuse} to refuse on \
             purpose, or return an `Err`"
        );
        match witness {
            Some(tokens) => problems.spanning(tokens, message),
            None => problems.spanning(pattern, message),
        }
    }
}

/// The identifier bound to the context parameter (the typed parameter that is not `next`), if
/// it is a plain name: only `abort` and `is_aborted` called on that name speak for the turn.
fn context_binding(function: &MiddlewareFn, next: &syn::Ident) -> Option<syn::Ident> {
    function.sig.inputs.iter().find_map(|input| match input {
        syn::FnArg::Typed(typed) => match &*typed.pat {
            syn::Pat::Ident(binding) if binding.ident != *next => Some(binding.ident.clone()),
            _ => None,
        },
        syn::FnArg::Receiver(_) => None,
    })
}

/// The identifier bound to the `next` parameter, and its pattern for spans.
fn next_binding(function: &MiddlewareFn) -> Option<(syn::Ident, &syn::Pat)> {
    let typed: Vec<&syn::PatType> = function
        .sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Typed(typed) => Some(typed),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    let parameter = typed
        .iter()
        .find(|parameter| is_next(&parameter.ty))
        .or_else(|| typed.get(1))?;
    match &*parameter.pat {
        syn::Pat::Ident(binding) => Some((binding.ident.clone(), &parameter.pat)),
        // `_` opts out like `_next`: there is nothing to call `run` on.
        _ => None,
    }
}
