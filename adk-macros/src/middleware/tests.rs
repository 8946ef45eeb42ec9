//! The middleware contract as the macro enforces it, checked without a compiler run: each test
//! feeds an attribute and a function and reads the problems reported.

use proc_macro2::TokenStream;
use quote::quote;

use super::parse::MiddlewareFn;
use super::placement::Placement;
use super::validate::{Pipeline, suggestion};
use super::{check, expand};

mod fast_path;

/// The messages validation reports for `#[middleware(arguments)] function`.
fn problems(arguments: TokenStream, function: TokenStream) -> Vec<String> {
    let function = MiddlewareFn::parse(function).expect("test input is a function");
    check(arguments, &function)
        .problems
        .into_errors()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn turn_middleware(body: TokenStream) -> TokenStream {
    quote! {
        async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
            #body
        }
    }
}

fn documented_body() -> TokenStream {
    quote! {
        let _ = next.run(ctx).await;
        Ok(())
    }
}

fn assert_one_problem_containing(found: &[String], expected: &[&str]) {
    assert_eq!(found.len(), 1, "expected one problem, got {found:#?}");
    for fragment in expected {
        assert!(
            found[0].contains(fragment),
            "{:?} does not contain {fragment:?}",
            found[0]
        );
    }
}

#[test]
fn the_documented_shape_passes_on_each_pipeline() {
    for pipeline in Pipeline::ALL {
        let name = quote::format_ident!("{}", pipeline.name());
        let context = quote::format_ident!("{}", pipeline.scope().context());
        let found = problems(
            quote!(pipeline = #name),
            quote! {
                async fn middleware(ctx: &mut #context, next: Next<'_, #context>) -> Result<(), BoxError> {
                    let _ = next.run(ctx).await;
                    Ok(())
                }
            },
        );
        assert!(found.is_empty(), "{}: {found:#?}", pipeline.name());
    }
}

#[test]
fn a_list_of_one_scope_passes() {
    let found = problems(
        quote!(pipeline = [dispatch_input, dispatch_output]),
        quote! {
            async fn count(ctx: &mut adk::DispatchContext, next: adk::pipeline::Next<'_, adk::DispatchContext>) -> Result<(), MyError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn a_misspelt_pipeline_gets_the_closest_name_and_the_list() {
    let found = problems(
        quote!(pipeline = turn_inptu),
        turn_middleware(documented_body()),
    );
    assert_one_problem_containing(
        &found,
        &[
            "unknown pipeline `turn_inptu`",
            "did you mean `turn_input`?",
            "`dispatch_input`, `dispatch_output` or `tool_execution`",
        ],
    );
}

fn tool_middleware(body: TokenStream) -> TokenStream {
    quote! {
        async fn cap_refunds(ctx: &mut ToolContext, next: Next<'_, ToolContext>) -> Result<(), BoxError> {
            #body
        }
    }
}

#[test]
fn a_tool_middleware_settles_a_path_by_refusing_or_answering_on_its_own_context() {
    let settled = problems(
        quote!(pipeline = tool_execution),
        tool_middleware(quote! {
            if ctx.args()["amount"].as_u64() > Some(100) {
                ctx.refuse("too much");
                return Ok(());
            }
            if ctx.tool_name() == "ping" {
                ctx.respond("pong");
                return Ok(());
            }
            let _ = next.run(ctx).await;
            Ok(())
        }),
    );
    assert!(settled.is_empty(), "{settled:#?}");

    // `refuse` on another value settles nothing: the path falls through, and the message
    // names the tool pipeline's way to refuse.
    let unsettled = problems(
        quote!(pipeline = tool_execution),
        tool_middleware(quote! {
            if ctx.args()["amount"].as_u64() > Some(100) {
                policy.refuse("too much");
                return Ok(());
            }
            let _ = next.run(ctx).await;
            Ok(())
        }),
    );
    assert_one_problem_containing(
        &unsettled,
        &[
            "the call is neither refused nor answered",
            "call `ctx.refuse(reason)` (or answer with `ctx.respond(output)`)",
        ],
    );
}

#[test]
fn suggestions_cover_misspellings_and_marker_type_names() {
    assert_eq!(suggestion("dispach_output"), Some(Pipeline::DispatchOutput));
    assert_eq!(suggestion("TurnOutput"), Some(Pipeline::TurnOutput));
    assert_eq!(
        suggestion("adk::pipeline::DispatchInput"),
        Some(Pipeline::DispatchInput)
    );
    assert_eq!(suggestion("logging"), None);
}

#[test]
fn a_name_far_from_every_pipeline_gets_the_list_without_a_guess() {
    let found = problems(
        quote!(pipeline = logging),
        turn_middleware(documented_body()),
    );
    assert_one_problem_containing(&found, &["unknown pipeline `logging`; write one of"]);
    assert!(!found[0].contains("did you mean"));
}

#[test]
fn a_missing_pipeline_shows_the_choices_and_the_syntax() {
    let found = problems(quote!(), turn_middleware(documented_body()));
    assert_one_problem_containing(
        &found,
        &[
            "`#[middleware(pipeline = turn_input)]`",
            "`dispatch_output`",
            "[dispatch_input, dispatch_output]",
        ],
    );
}

#[test]
fn a_misspelt_argument_key_is_reported_with_a_suggestion() {
    let found = problems(
        quote!(pipline = turn_input),
        turn_middleware(documented_body()),
    );
    assert_one_problem_containing(&found, &["`pipline`", "Did you mean `pipeline`?"]);
}

#[test]
fn pipelines_of_two_scopes_are_rejected() {
    let found = problems(
        quote!(pipeline = [turn_input, dispatch_input]),
        turn_middleware(documented_body()),
    );
    assert_one_problem_containing(
        &found,
        &["`dispatch_input` is dispatch-scoped but `turn_input` is turn-scoped"],
    );
}

#[test]
fn a_pipeline_listed_twice_is_rejected() {
    let found = problems(
        quote!(pipeline = [turn_input, turn_input]),
        turn_middleware(documented_body()),
    );
    assert_one_problem_containing(&found, &["`turn_input` is listed twice"]);
}

#[test]
fn an_empty_pipeline_list_is_rejected() {
    let found = problems(quote!(pipeline = []), turn_middleware(documented_body()));
    assert_one_problem_containing(&found, &["the pipeline list is empty"]);
}

#[test]
fn independent_mistakes_are_all_reported_at_once() {
    let found = problems(
        quote!(pipeline = turn_inptu),
        quote! {
            fn load_history(next: Next<'_, TurnContext>, ctx: &mut TurnContext) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("unknown pipeline"));
    assert!(found[1].contains("must be an `async fn`"));
    assert!(found[2].contains("the context comes first"));
}

#[test]
fn a_plain_fn_must_become_async() {
    let found = problems(
        quote!(pipeline = turn_input),
        quote! {
            fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
                drop(next.run(ctx));
                Ok(())
            }
        },
    );
    assert!(found[0].contains("add `async` before `fn`"), "{found:#?}");
}

#[test]
fn wrong_parameter_lists_state_the_expected_signature() {
    let expected = "`async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), E>`";
    let one = problems(
        quote!(pipeline = turn_input),
        quote!(
            async fn load_history(ctx: &mut TurnContext) -> Result<(), BoxError> {
                Ok(())
            }
        ),
    );
    assert_one_problem_containing(&one, &["`next` is missing", expected]);

    let three = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>, limit: usize) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert_one_problem_containing(&three, &["only the context and `next`", expected]);

    let none = problems(
        quote!(pipeline = turn_input),
        quote!(
            async fn load_history() -> Result<(), BoxError> {
                Ok(())
            }
        ),
    );
    assert_one_problem_containing(&none, &["take two parameters", expected]);
}

#[test]
fn swapped_parameters_are_named_as_such() {
    let found = problems(
        quote!(pipeline = dispatch_output),
        quote! {
            async fn inspect(next: Next<'_, DispatchContext>, ctx: &mut DispatchContext) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert_one_problem_containing(
        &found,
        &[
            "the context comes first",
            "`(ctx: &mut DispatchContext, next: Next<'_, DispatchContext>)`",
        ],
    );
}

#[test]
fn a_context_of_the_other_scope_is_reported_once() {
    let found = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(ctx: &mut adk::DispatchContext, next: Next<'_, adk::DispatchContext>) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert_one_problem_containing(
        &found,
        &[
            "`turn_input` middleware receive `TurnContext`, not `DispatchContext`",
            "`dispatch_input` or `dispatch_output`",
        ],
    );
}

#[test]
fn a_next_of_the_other_scope_is_reported() {
    let found = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(ctx: &mut TurnContext, next: Next<'_, DispatchContext>) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert_one_problem_containing(&found, &["not `DispatchContext`"]);
}

#[test]
fn the_context_must_be_borrowed_mutably() {
    for context in [quote!(&TurnContext), quote!(TurnContext)] {
        let found = problems(
            quote!(pipeline = turn_input),
            quote! {
                async fn load_history(ctx: #context, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
                    let _ = next.run(ctx).await;
                    Ok(())
                }
            },
        );
        assert_one_problem_containing(&found, &["write `ctx: &mut TurnContext`"]);
    }
}

#[test]
fn type_parameters_and_self_are_rejected_but_lifetimes_are_not() {
    let generic = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history<T>(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert_one_problem_containing(&generic, &["cannot be generic"]);

    let method = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(&self, ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert!(
        method[0].contains("not a method; remove `self`"),
        "{method:#?}"
    );

    let lifetimes = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history<'a>(ctx: &'a mut TurnContext, next: Next<'a, TurnContext>) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert!(lifetimes.is_empty(), "{lifetimes:#?}");
}

#[test]
fn the_return_type_must_be_a_unit_result() {
    let missing = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) {
                let _ = next.run(ctx).await;
            }
        },
    );
    assert_one_problem_containing(&missing, &["must return `Result<(), E>`", "Ok(())"]);

    let bare_error = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> adk::pipeline::BoxError {
                let _ = next.run(ctx).await;
                "no".into()
            }
        },
    );
    assert_one_problem_containing(&bare_error, &["not a bare error"]);

    let value = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<String, BoxError> {
                let _ = next.run(ctx).await;
                Ok(String::new())
            }
        },
    );
    assert_one_problem_containing(&value, &["succeed with `()`"]);

    // An alias cannot be judged by its name; the type system checks it in the expansion.
    let alias = problems(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Outcome {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
    );
    assert!(alias.is_empty(), "{alias:#?}");
}

#[test]
fn an_unused_next_is_a_short_circuit() {
    let found = problems(
        quote!(pipeline = turn_input),
        turn_middleware(quote!(Ok(()))),
    );
    assert_one_problem_containing(
        &found,
        &[
            "`next` is never run",
            "short-circuits the `turn_input` pipeline",
            "E_PIPELINE_SHORT_CIRCUITED",
            "`next.run(ctx).await`",
            "`ctx.abort(reason)`",
            "`_next`",
        ],
    );
}

#[test]
fn an_underscore_next_opts_out_of_the_short_circuit_check() {
    for pattern in [quote!(_next), quote!(_)] {
        let found = problems(
            quote!(pipeline = turn_input),
            quote! {
                async fn refuse(ctx: &mut TurnContext, #pattern: Next<'_, TurnContext>) -> Result<(), BoxError> {
                    ctx.abort("read-only");
                    Ok(())
                }
            },
        );
        assert!(found.is_empty(), "{found:#?}");
    }
}

#[test]
fn a_next_mentioned_only_inside_a_macro_counts_as_used() {
    let found = problems(
        quote!(pipeline = turn_input),
        turn_middleware(quote! {
            tokio::select! { _ = next.run(ctx) => {} }
            Ok(())
        }),
    );
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn a_run_call_that_is_not_awaited_is_reported() {
    let statement = problems(
        quote!(pipeline = turn_input),
        turn_middleware(quote! {
            next.run(ctx);
            Ok(())
        }),
    );
    assert_one_problem_containing(
        &statement,
        &["does nothing until it is awaited", "add `.await`"],
    );

    let bound = problems(
        quote!(pipeline = turn_input),
        turn_middleware(quote! {
            let pending: _ = next.run(ctx);
            drop(pending);
            Ok(())
        }),
    );
    assert_one_problem_containing(&bound, &["add `.await`"]);

    let wildcard = problems(
        quote!(pipeline = turn_input),
        turn_middleware(quote! {
            let _ = next.run(ctx);
            Ok(())
        }),
    );
    assert_one_problem_containing(
        &wildcard,
        &["the rest of the `turn_input` pipeline never runs"],
    );
}

#[test]
fn a_run_future_handed_on_is_trusted_to_be_awaited() {
    let bodies = [
        quote! { let _ = tokio::time::timeout(limit, next.run(ctx)).await; Ok(()) },
        quote! { let _ = next.run(ctx).boxed().await; Ok(()) },
        quote! { let future = next.run(ctx); let _ = tokio::time::timeout(limit, future).await; Ok(()) },
    ];
    for body in bodies {
        let found = problems(quote!(pipeline = turn_input), turn_middleware(body.clone()));
        assert!(found.is_empty(), "{body}: {found:#?}");
    }
}

#[test]
fn awaited_run_calls_pass_in_every_position() {
    let bodies = [
        quote! { let outcome = next.run(ctx).await; let _ = outcome; Ok(()) },
        quote! { let future = next.run(ctx); let _ = future.await; Ok(()) },
        quote! { match (next.run(ctx)).await { _ => Ok(()) } },
        quote! { if ctx.is_aborted() { return Err("aborted".into()); } return next.run(ctx).await.is_completed().then_some(()).ok_or("failed".into()); },
        quote! { let _ = async move { next.run(ctx).await }.await; Ok(()) },
    ];
    for body in bodies {
        let found = problems(quote!(pipeline = turn_input), turn_middleware(body.clone()));
        assert!(found.is_empty(), "{body}: {found:#?}");
    }
}

#[test]
fn a_valid_function_expands_to_a_fn_of_its_name_and_one_fits_impl_per_pipeline() {
    let output = expand(
        quote!(pipeline = [dispatch_input, dispatch_output]),
        quote! {
            /// Counts iterations.
            pub async fn count(ctx: &mut DispatchContext, next: Next<'_, DispatchContext>) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
        &Placement::Free,
    )
    .to_string();
    // The fn of the user's name with its doc comment, the hidden type in its own module, and the
    // one direct call (for the first pipeline's context) are written by
    // `adk::__middleware_struct!`.
    let struct_invocation = output
        .split(":: adk :: __middleware_struct ! (")
        .nth(1)
        .and_then(|after| after.split(") ;").next())
        .unwrap_or_else(|| panic!("no __middleware_struct! call in {output}"));
    assert!(struct_invocation.contains("Counts iterations."), "{output}");
    assert!(
        struct_invocation
            .ends_with("pub count , __adk_middleware_count , DispatchInput , DispatchContext"),
        "{output}"
    );
    assert_eq!(
        output.matches("__middleware_struct !").count(),
        1,
        "{output}"
    );
    for marker in ["DispatchInput", "DispatchOutput"] {
        assert!(
            output.contains(&format!(
                "impl :: adk :: __private :: middleware :: Fits < :: adk :: pipeline :: {marker} > for __adk_middleware_count :: count"
            )),
            "{output}"
        );
    }
    assert!(!output.contains("compile_error"), "{output}");
}

#[test]
fn an_invalid_function_still_expands_to_its_struct_and_body() {
    let output = expand(
        quote!(pipeline = turn_inptu),
        turn_middleware(documented_body()),
        &Placement::Free,
    )
    .to_string();
    assert!(output.contains("compile_error"), "{output}");
    assert!(
        output.contains(
            "__middleware_struct ! ([] [] load_history , __adk_middleware_load_history , TurnInput , TurnContext)"
        ),
        "{output}"
    );
    assert!(
        output.contains("impl __adk_middleware_load_history :: load_history"),
        "{output}"
    );
    // The pipeline is unknown: every pipeline gets an impl, so the registration stays quiet
    // whichever one the user meant.
    for marker in ["TurnInput", "TurnOutput", "DispatchInput", "DispatchOutput"] {
        assert!(
            output.contains(&format!("Fits < :: adk :: pipeline :: {marker} >")),
            "{output}"
        );
    }
}

#[test]
fn a_known_pipeline_keeps_its_impl_after_a_signature_error() {
    let output = expand(
        quote!(pipeline = turn_input),
        turn_middleware(quote!(Ok(()))),
        &Placement::Free,
    )
    .to_string();
    assert!(output.contains("compile_error"), "{output}");
    assert!(
        output.contains("Fits < :: adk :: pipeline :: TurnInput >"),
        "{output}"
    );
}

/// The problems reported for a `turn_input` middleware with `body`.
fn body_problems(body: TokenStream) -> Vec<String> {
    problems(quote!(pipeline = turn_input), turn_middleware(body))
}

#[test]
fn a_method_named_next_is_not_a_use_of_the_next_parameter() {
    let found = body_problems(quote! {
        let first = [1, 2].iter().next();
        let _ = first;
        Ok(())
    });
    assert_one_problem_containing(&found, &["`next` is never run"]);
}

#[test]
fn dropping_next_is_not_running_it() {
    for body in [
        quote! { drop(next); Ok(()) },
        quote! { let _ = next; Ok(()) },
        quote! { std::mem::drop(next); Ok(()) },
    ] {
        let found = body_problems(body.clone());
        assert_one_problem_containing(&found, &["`next` is never run"]);
    }
}

#[test]
fn a_shadowing_binding_named_next_is_another_value() {
    let found = body_problems(quote! {
        let next = 3;
        let _ = next;
        Ok(())
    });
    assert_one_problem_containing(&found, &["`next` is never run"]);

    let outer_still_runs = body_problems(quote! {
        {
            let next = [1].iter().next();
            let _ = next;
        }
        let _ = next.run(ctx).await;
        Ok(())
    });
    assert!(outer_still_runs.is_empty(), "{outer_still_runs:#?}");
}

#[test]
fn a_chain_run_on_one_branch_only_is_reported_at_the_other_branch() {
    for body in [
        quote! { if cached(ctx) { let _ = next.run(ctx).await; } Ok(()) },
        quote! { if cached(ctx) { let _ = next.run(ctx).await; } else { tracing::info!("skipped"); } Ok(()) },
        quote! { if cached(ctx) { return Ok(()); } let _ = next.run(ctx).await; Ok(()) },
        quote! { match 1 { 1 => { let _ = next.run(ctx).await; } _ => {} } Ok(()) },
        quote! { for _ in 0..1 { let _ = next.run(ctx).await; break; } Ok(()) },
    ] {
        let found = body_problems(body.clone());
        assert_one_problem_containing(
            &found,
            &[
                "on this path `next` is not run",
                "`ctx.abort(reason)`",
                "return an `Err`",
            ],
        );
    }
}

#[test]
fn other_paths_may_abort_or_fail_instead_of_running_the_chain() {
    for body in [
        quote! { if cached(ctx) { ctx.abort("no"); return Ok(()); } let _ = next.run(ctx).await; Ok(()) },
        quote! { if ctx.is_aborted() { return Ok(()); } let _ = next.run(ctx).await; Ok(()) },
        quote! { if !ctx.is_aborted() { let _ = next.run(ctx).await; } Ok(()) },
        quote! { if ctx.is_aborted() { return Err("no".into()); } let _ = next.run(ctx).await; Ok(()) },
        quote! { if ctx.is_aborted() { Err("no")?; } let _ = next.run(ctx).await; Ok(()) },
        quote! { if ctx.is_aborted() { Err("no".into()) } else { let _ = next.run(ctx).await; Ok(()) } },
        quote! { let Some(_) = ctx.stash_get() else { return Err("missing".into()) }; let _ = next.run(ctx).await; Ok(()) },
        quote! { match 1 { 1 => { let _ = next.run(ctx).await; Ok(()) } _ => panic!("no") } },
        quote! { loop { let _ = next.run(ctx).await; break; } Ok(()) },
        quote! { helper(ctx, next).await },
    ] {
        let found = body_problems(body.clone());
        assert!(found.is_empty(), "{body}: {found:#?}");
    }
}

#[test]
fn a_thrown_away_future_is_reported_however_it_is_thrown_away() {
    for body in [
        quote! { _ = next.run(ctx); Ok(()) },
        quote! { drop(next.run(ctx)); Ok(()) },
        quote! { let stored = next.run(ctx); Ok(()) },
        quote! { let stored = next.run(ctx); let _ = stored; Ok(()) },
        quote! { let renamed = next; renamed.run(ctx); Ok(()) },
    ] {
        let found = body_problems(body.clone());
        assert_one_problem_containing(&found, &["does nothing until it is awaited"]);
    }
}

#[test]
fn a_body_that_does_not_parse_is_left_to_rustc() {
    let output = expand(
        quote!(pipeline = turn_input),
        turn_middleware(quote! { let x = ; Ok(()) }),
        &Placement::Free,
    )
    .to_string();
    assert!(!output.contains("compile_error"), "{output}");
    assert!(
        output.contains(
            "Fits < :: adk :: pipeline :: TurnInput > for __adk_middleware_load_history :: load_history"
        ),
        "{output}"
    );
}

#[test]
fn inside_an_impl_block_only_our_error_and_the_fn_itself_are_emitted() {
    let output = expand(
        quote!(pipeline = turn_input),
        turn_middleware(documented_body()),
        &Placement::Impl("Agent".to_owned()),
    )
    .to_string();
    assert_eq!(output.matches("compile_error").count(), 1, "{output}");
    assert!(output.contains("not in `impl Agent`"), "{output}");
    assert!(!output.contains("__middleware_struct"), "{output}");
    assert!(output.contains("async fn load_history"), "{output}");
}

#[test]
fn only_a_context_written_as_an_alias_goes_through_the_same_context_check() {
    let by_name = expand(
        quote!(pipeline = turn_input),
        turn_middleware(documented_body()),
        &Placement::Free,
    )
    .to_string();
    assert!(!by_name.contains("SameContext"), "{by_name}");
    let through_alias = expand(
        quote!(pipeline = turn_input),
        quote! {
            async fn load_history(ctx: &mut Ctx, next: Next<'_, Ctx>) -> Result<(), BoxError> {
                let _ = next.run(ctx).await;
                Ok(())
            }
        },
        &Placement::Free,
    )
    .to_string();
    assert!(through_alias.contains("SameContext"), "{through_alias}");
}

#[test]
fn a_single_pipeline_name_reads_the_same_as_darlings_general_parse() {
    for tokens in [
        quote!(pipeline = turn_input),
        quote!(pipeline = dispatch_inptu),
        quote!(pipeline = r#turn_output),
    ] {
        let direct = super::parse::arguments(tokens.clone()).expect("parses");
        let items = darling::ast::NestedMeta::parse_meta_list(tokens.clone()).expect("parses");
        let general =
            <super::parse::Arguments as darling::FromMeta>::from_list(&items).expect("parses");
        let names = |arguments: &super::parse::Arguments| {
            let list = arguments.pipeline.as_ref().expect("a pipeline was written");
            list.names
                .iter()
                .map(|name| (name.text.clone(), name.quoted))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&direct), names(&general), "{tokens}");
    }
}

#[test]
fn a_holder_of_next_that_is_never_run_is_reported_where_it_is_made() {
    for body in [
        // A closure that is never called.
        quote! { let run = move || next.run(ctx); Ok(()) },
        // `bool::then` makes the future and drops it.
        quote! { cached(ctx).then(|| next.run(ctx)); Ok(()) },
        // An async block that is never awaited.
        quote! { let rest = async move { next.run(ctx).await }; Ok(()) },
        quote! { async move { let _ = next.run(ctx).await; }; Ok(()) },
        // A helper that takes `next`, whose result is never awaited.
        quote! { helper(next); Ok(()) },
        quote! { let _ = helper(ctx, next); Ok(()) },
    ] {
        let found = body_problems(body.clone());
        assert_one_problem_containing(&found, &["`next` is moved in here", "never run"]);
    }
}

#[test]
fn a_holder_of_next_that_is_run_settles_its_path() {
    for body in [
        quote! { let run = move || next.run(ctx); let _ = run().await; Ok(()) },
        quote! { let _ = (move || next.run(ctx))().await; Ok(()) },
        quote! { let rest = async move { next.run(ctx).await }; let _ = rest.await; Ok(()) },
        quote! { if let Some(rest) = cached(ctx).then(|| next.run(ctx)) { let _ = rest.await; } Ok(()) },
        quote! { let _ = tokio::time::timeout(limit, next.run(ctx)).await?; Ok(()) },
        quote! { let outcome = helper(ctx, next).await; let _ = outcome; Ok(()) },
        quote! { return helper(ctx, next).await; },
        quote! { helper(ctx, next).await },
    ] {
        let found = body_problems(body.clone());
        assert!(found.is_empty(), "{body}: {found:#?}");
    }
}
