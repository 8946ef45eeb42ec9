//! Middleware that passes state sideways through the stash, with typed keys.
//!
//! The caller hands the question to the turn (`RawTurnContext::user_message`); a
//! `dispatch_input` middleware counts model iterations against a budget the caller seeds into
//! the stash, and refuses the dispatch (a nack) once it is spent; a `dispatch_output` middleware reports what each iteration left.
//! The same question runs twice: with a budget of 2 the model calls its tool and answers; with a
//! budget of 1 the dispatch is refused before the answer.
//!
//! ```sh
//! cargo run --example custom_middleware
//! ```

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::ScriptedModel;
use adk::pipeline::{BoxError, Next};
use adk::primitives::{Message, Tool};
use adk::runner::TurnStatus;
use adk::storage::NoopStorage;

adk::stash_keys! {
    /// How many model iterations the dispatch may spend, seeded by the caller.
    pub BUDGET_LIMIT: "example.budget.limit" => u32,
    /// How many it has spent so far, kept by `count_iterations`.
    pub BUDGET_USED: "example.budget.used" => u32,
}

/// Spends one unit of budget per model iteration; refuses the dispatch once it is spent.
#[adk::middleware(pipeline = dispatch_input)]
pub async fn count_iterations(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    // The typed keys make a wrong type a compile error: `ctx.stash.set(BUDGET_USED, "one")` does
    // not build.
    let limit = ctx.stash.get(BUDGET_LIMIT)?.unwrap_or(1);
    let used = ctx.stash.get(BUDGET_USED)?.unwrap_or(0);
    if used >= limit {
        ctx.nack(format!(
            "budget spent: {used} of {limit} model iterations used"
        ))?;
    } else {
        ctx.stash.set(BUDGET_USED, used + 1)?;
    }
    let _ = next.run(ctx).await;
    Ok(())
}

/// Reports, after each iteration the model finished without answering, what it has spent.
#[adk::middleware(pipeline = dispatch_output)]
pub async fn report_spending(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    let used = ctx.stash.get(BUDGET_USED)?.unwrap_or(0);
    println!("  iteration {} done, budget used: {used}", ctx.iteration());
    let _ = next.run(ctx).await;
    Ok(())
}

fn calculator() -> Result<Tool, BoxError> {
    Ok(Tool::builder("calculator")
        .description("Adds two and two.")
        .handler(|_args: serde_json::Value, _invocation| async { Ok("2 + 2 = 4") })
        .build()?)
}

/// Runs the question with each budget and returns one line per turn: how it ended.
pub async fn run() -> Result<Vec<String>, BoxError> {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::new())
        .tool(calculator()?)
        .dispatch_input(count_iterations)
        .dispatch_output(report_spending)
        .build();

    let mut results = Vec::new();
    for limit in [2, 1] {
        println!("budget {limit}:");
        let raw = RawTurnContext::new("budget-example", "You are terse.")
            .user_message("What is 2 + 2?")
            .stash(serde_json::json!({ "example": { "budget": { "limit": limit } } }));
        let outcome = runner.run(raw).await?;
        let line = match &outcome.status {
            TurnStatus::Completed => {
                let answer = outcome
                    .reply()
                    .and_then(Message::content)
                    .map(|content| content.render())
                    .unwrap_or_default();
                format!("budget {limit}: answered \"{answer}\"")
            }
            // The error says "the dispatch was nacked"; its cause is the reason given to `nack`.
            TurnStatus::Failed(error) => match error.cause() {
                Some(reason) => format!("budget {limit}: refused: {reason}"),
                None => format!("budget {limit}: failed: {error}"),
            },
            TurnStatus::Aborted(reason) => format!("budget {limit}: aborted: {reason}"),
            TurnStatus::DispatchAborted(reason) => {
                format!("budget {limit}: no answer, the dispatch was aborted: {reason}")
            }
        };
        println!("  {line}");
        results.push(line);
    }
    Ok(results)
}

fn main() -> Result<(), BoxError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run())?;
    Ok(())
}
