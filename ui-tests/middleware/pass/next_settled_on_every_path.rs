//! Every path that returns `Ok` runs the chain, aborts, or hands `next` on; the other paths
//! return an error. A `next` shadowed inside a block does not hide the parameter's use.
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, Next, Stack, TurnInput};

#[adk::middleware(pipeline = turn_input)]
async fn guard(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    if ctx.is_aborted() {
        return Err("aborted before the guard".into());
    }
    {
        let next = ["a", "b"].iter().next();
        let _ = next;
    }
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn refuse_or_run(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    if matches!(ctx.stash.get_ref("my-org.refuse"), Ok(Some(_))) {
        ctx.abort("refused");
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn fail_or_run(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    match ctx.is_aborted() {
        true => Err("aborted".into()),
        false => {
            let _ = next.run(ctx).await;
            Ok(())
        }
    }
}

async fn shared_step(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn handed_on(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    shared_step(ctx, next).await
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(guard);
    stack.push(refuse_or_run);
    stack.push(fail_or_run);
    stack.push(handed_on);
    assert_eq!(stack.len(), 4);
}
