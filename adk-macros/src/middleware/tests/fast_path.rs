//! The token-level fast path and the full analysis agree: the fast path only ever passes a body
//! the full analysis passes too, and both follow the parameters' own names.

use proc_macro2::TokenStream;
use quote::quote;

use super::{assert_one_problem_containing, body_problems, documented_body, problems};

/// What the full analysis says of `body`, skipping the token-level fast path: true when it
/// reports nothing.
fn fully_analysed_passes(body: &TokenStream) -> bool {
    let block: syn::Block = syn::parse2(quote!({ #body })).expect("test body parses");
    let found = super::super::next_use::analyse(
        Some(&quote::format_ident!("ctx")),
        &quote::format_ident!("next"),
        &block,
    );
    found.ever_run && found.unsettled.is_empty() && found.thrown_away.is_empty()
}

fn plainly_settled(body: &TokenStream) -> bool {
    super::super::next_use::plainly_settled(
        Some(&quote::format_ident!("ctx")),
        &quote::format_ident!("next"),
        body.clone(),
    )
}

#[test]
fn the_token_level_look_settles_the_common_shapes_without_parsing() {
    for body in [
        documented_body(),
        quote! { next.run(ctx).await?; Ok(()) },
        quote! { next.run(ctx).await },
        quote! { return next.run(ctx).await; },
        quote! { let outcome = next.run(ctx).await; outcome },
        quote! { let mut outcome = next.run(ctx).await; outcome = Ok(()); outcome },
        quote! { if ctx.is_aborted() { return Ok(()); } let _ = next.run(ctx).await; Ok(()) },
        quote! {
            let history = load(ctx).await?;
            ctx.stash.set(&HISTORY, history)?;
            next.run(ctx).await.map_err(|error| error.to_string())?;
            if ctx.is_aborted() { return Ok(()); }
            Ok(())
        },
    ] {
        assert!(plainly_settled(&body), "{body}");
        assert!(fully_analysed_passes(&body), "{body}");
    }
}

#[test]
fn the_token_level_look_never_passes_a_body_the_full_analysis_rejects() {
    // Every body in this file, and shapes that sit one token away from the fast path's.
    let bodies = [
        documented_body(),
        quote! { Ok(()) },
        quote! { let first = [1, 2].iter().next(); let _ = first; Ok(()) },
        quote! { drop(next); Ok(()) },
        quote! { let _ = next; Ok(()) },
        quote! { let next = 3; let _ = next; Ok(()) },
        quote! { { let next = [1].iter().next(); let _ = next; } let _ = next.run(ctx).await; Ok(()) },
        quote! { if cached(ctx) { let _ = next.run(ctx).await; } Ok(()) },
        quote! { if cached(ctx) { return Ok(()); } let _ = next.run(ctx).await; Ok(()) },
        quote! { if cached(ctx) { return Ok(()) } next.run(ctx).await },
        quote! { if ctx.is_aborted() { return Ok(()); } else { return Ok(()); } next.run(ctx).await },
        quote! { if !ctx.is_aborted() { return Ok(()); } next.run(ctx).await },
        quote! { if a { } else if ctx.is_aborted() { return Ok(()) } next.run(ctx).await },
        quote! { let Some(x) = found else { return Ok(()) }; next.run(ctx).await },
        quote! { let _ = next.run({ return Ok(()) }).await; Ok(()) },
        quote! { let _ = next.run(ctx); Ok(()) },
        quote! { next.run(ctx); Ok(()) },
        quote! { _ = next.run(ctx); Ok(()) },
        quote! { drop(next.run(ctx)); Ok(()) },
        quote! { let stored = next.run(ctx); Ok(()) },
        quote! { let renamed = next; renamed.run(ctx); Ok(()) },
        quote! { let _ = next.run(ctx).await; let _ = next.run(ctx); Ok(()) },
        quote! { flag && next.run(ctx).await.is_ok(); Ok(()) },
        quote! { let _ = flag || next.run(ctx).await.is_ok(); Ok(()) },
        quote! { cached(ctx) || return Ok(()); next.run(ctx).await },
        quote! { let check = || { return 1; }; next.run(ctx).await },
        quote! { 'skip: { if cached(ctx) { break 'skip; } return Ok(()); } next.run(ctx).await },
        quote! { loop { if cached(ctx) { return Ok(()); } break; } next.run(ctx).await },
        quote! { match 1 { 1 => { let _ = next.run(ctx).await; } _ => {} } Ok(()) },
        quote! { for _ in 0..1 { let _ = next.run(ctx).await; break; } Ok(()) },
        quote! { while cached(ctx) { let _ = next.run(ctx).await; } Ok(()) },
        quote! { tokio::select! { _ = next.run(ctx) => {} } Ok(()) },
        quote! { let _ = tokio::time::timeout(limit, next.run(ctx)).await; Ok(()) },
        quote! { match (next.run(ctx)).await { _ => Ok(()) } },
        quote! { let _ = async move { next.run(ctx).await }.await; Ok(()) },
        quote! { if ctx.is_aborted() { Err("no".into()) } else { let _ = next.run(ctx).await; Ok(()) } },
        quote! { let x: u8 = next.run(ctx).await; Ok(()) },
        quote! { x += next.run(ctx).await; Ok(()) },
        quote! { helper(ctx, next).await },
        quote! { if cached(ctx) { tokio::spawn(refresh()).abort(); return Ok(()); } next.run(ctx).await },
        quote! { if handle.is_aborted() { return Ok(()); } next.run(ctx).await },
        quote! { let ctx = other; if ctx.is_aborted() { return Ok(()); } next.run(ctx).await },
    ];
    for body in bodies {
        if plainly_settled(&body) {
            assert!(fully_analysed_passes(&body), "the fast path passed {body}");
        }
    }
}

#[test]
fn a_body_the_token_level_look_cannot_settle_still_gets_the_full_analysis() {
    // Each passes the rule, but only the full analysis can tell.
    for body in [
        quote! { let check = || { return 1; }; next.run(ctx).await },
        quote! { if a { } else if ctx.is_aborted() { return Ok(()) } next.run(ctx).await },
        quote! { match (next.run(ctx)).await { _ => Ok(()) } },
    ] {
        assert!(!plainly_settled(&body), "{body}");
        assert!(body_problems(body.clone()).is_empty(), "{body}");
    }
    // And one the full analysis rejects, one token away from the fast path's shape.
    let found = body_problems(quote! { let _ = next.run({ return Ok(()) }).await; Ok(()) });
    assert_one_problem_containing(&found, &["on this path `next` is not run"]);
}

#[test]
fn the_token_level_look_follows_the_parameters_own_name() {
    let renamed = |body: TokenStream| {
        problems(
            quote!(pipeline = turn_input),
            quote! {
                async fn load_history(ctx: &mut TurnContext, rest: Next<'_, TurnContext>) -> Result<(), BoxError> {
                    #body
                }
            },
        )
    };
    let runs_its_own = renamed(quote! { rest.run(ctx).await?; Ok(()) });
    assert!(runs_its_own.is_empty(), "{runs_its_own:#?}");
    let runs_a_stranger = renamed(quote! { next.run(ctx).await?; Ok(()) });
    assert_one_problem_containing(&runs_a_stranger, &["`rest` is never run"]);
}

#[test]
fn only_the_contexts_own_abort_settles_a_path_in_both_looks() {
    // `abort` and `is_aborted` on any other value say nothing about the turn; neither look may
    // take them for the context's.
    for body in [
        quote! { if cached(ctx) { tokio::spawn(refresh()).abort(); return Ok(()); } next.run(ctx).await },
        quote! { if cached(ctx) { handle.abort(); return Ok(()); } next.run(ctx).await },
        quote! { if handle.is_aborted() { return Ok(()); } next.run(ctx).await },
        quote! { let ctx = other; if ctx.is_aborted() { return Ok(()); } next.run(ctx).await },
        quote! { if cached(ctx) { let ctx = other(); ctx.abort("no"); return Ok(()); } next.run(ctx).await },
    ] {
        assert!(!plainly_settled(&body), "the fast path passed {body}");
        assert!(
            !fully_analysed_passes(&body),
            "the full analysis passed {body}"
        );
    }
    // The context's own, through its own name.
    for body in [
        quote! { if cached(ctx) { ctx.abort("no"); return Ok(()); } next.run(ctx).await },
        quote! { if cached(ctx) { (*ctx).abort("no"); return Ok(()); } next.run(ctx).await },
        quote! { if ctx.is_aborted() { return Ok(()); } next.run(ctx).await },
    ] {
        assert!(
            fully_analysed_passes(&body),
            "the full analysis rejected {body}"
        );
    }
}

#[test]
fn the_contexts_abort_is_followed_by_the_contexts_own_name() {
    let renamed = |body: TokenStream| {
        problems(
            quote!(pipeline = turn_input),
            quote! {
                async fn load_history(turn: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
                    #body
                }
            },
        )
    };
    let aborts_its_own = renamed(quote! {
        if cached(turn) { turn.abort("cached"); return Ok(()); }
        next.run(turn).await
    });
    assert!(aborts_its_own.is_empty(), "{aborts_its_own:#?}");
    let exempt_by_its_own = renamed(quote! {
        if turn.is_aborted() { return Ok(()); }
        next.run(turn).await
    });
    assert!(exempt_by_its_own.is_empty(), "{exempt_by_its_own:#?}");
    let a_strangers = renamed(quote! {
        if cached(turn) { ctx.abort("cached"); return Ok(()); }
        next.run(turn).await
    });
    assert_one_problem_containing(&a_strangers, &["call `turn.abort(reason)`"]);
}

#[test]
fn an_abort_on_another_value_is_reported_at_the_call_with_the_fix() {
    let found = body_problems(quote! {
        if cached(ctx) {
            tokio::spawn(refresh()).abort();
            return Ok(());
        }
        next.run(ctx).await
    });
    assert_one_problem_containing(
        &found,
        &[
            "this `abort` is not called on the middleware's context",
            "on this path `next` is not run",
            "E_PIPELINE_SHORT_CIRCUITED",
            "call `ctx.abort(reason)` on the context parameter itself",
        ],
    );
    // After the chain ran, aborting a task is nobody's business but the middleware's.
    let after_the_chain = body_problems(quote! {
        let outcome = next.run(ctx).await;
        tokio::spawn(refresh()).abort();
        outcome
    });
    assert!(after_the_chain.is_empty(), "{after_the_chain:#?}");
}
