//! The `tool_execution` pipeline's run: the handler as the pipeline's last step, and how a walk
//! over a [`ToolContext`] becomes the call's result.

use std::sync::Arc;

use crate::context::{ToolCallOutcome, ToolContext};
use crate::pipeline::{
    BoxError, BoxFuture, Downstream, Middleware, Next, Pipeline, Stack, ToolExecution,
};
use crate::primitives::ToolOutput;

use super::ToolExecutionError;

/// The tool pipeline's last step: runs the tool's handler unless a middleware settled the call
/// first. Registered after the user's middleware when the runner is built.
struct RunHandler;

impl Middleware<ToolExecution> for RunHandler {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut ToolContext,
        next: Next<'a, ToolContext>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            ctx.run_handler().await;
            // The end of the pipeline: nothing runs after the handler.
            let _ = next.run(ctx).await;
            Ok(())
        })
    }

    fn name(&self) -> &'static str {
        "the tool's handler"
    }
}

/// The runner's tool pipeline: the middleware registered with `tool_execution`, then the
/// handler. `None` without middleware, so a call runs its handler directly, as before the
/// pipeline existed.
pub(crate) fn tool_pipeline(
    mut middleware: Stack<ToolExecution>,
) -> Option<Arc<Stack<ToolExecution>>> {
    if middleware.is_empty() {
        return None;
    }
    middleware.push(RunHandler);
    Some(Arc::new(middleware))
}

/// Walks `pipeline` over `ctx` and turns how it ended into the call's result.
pub(super) async fn run_tool_pipeline(
    pipeline: &Stack<ToolExecution>,
    mut ctx: ToolContext,
) -> Result<ToolOutput, ToolExecutionError> {
    let run = pipeline.run(&mut ctx).await;
    let tool = ctx.tool_name().to_owned();
    let call_id = ctx.call_id().to_owned();
    let (failure, outcome) = ctx.into_parts();
    if let Some(source) = failure {
        return Err(ToolExecutionError::Pipeline {
            tool,
            call_id,
            source,
        });
    }
    if run.outcome == Downstream::ShortCircuited {
        return Err(ToolExecutionError::Pipeline {
            tool,
            call_id,
            source: super::short_circuited(ToolExecution::NAME, run.short_circuited_by),
        });
    }
    match outcome {
        Some(ToolCallOutcome::Output(output)) => Ok(output),
        Some(ToolCallOutcome::Refused(reason)) => Err(ToolExecutionError::Refused {
            tool,
            call_id,
            reason,
        }),
        Some(ToolCallOutcome::Failed(source)) => Err(ToolExecutionError::Downstream {
            tool,
            call_id,
            source,
        }),
        Some(ToolCallOutcome::Panicked(source)) => Err(ToolExecutionError::Panicked {
            tool,
            call_id,
            source,
        }),
        // Nothing settled the call and the handler did not run: the dispatch (or the turn) was
        // aborted first.
        None => Err(ToolExecutionError::Aborted { tool, call_id }),
    }
}
