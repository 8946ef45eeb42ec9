//! The dispatch loop: the executor (the model call) run in iterations between the
//! `dispatch_input` and `dispatch_output` pipelines until it is acknowledged, refused or
//! aborted.
//!
//! Per iteration: `IterationStart`, `dispatch_input`, the executor, `dispatch_output`, the
//! write-queue flush into the turn, `IterationEnd`. An ack or nack from the executor skips that
//! iteration's output pipeline and its `IterationEnd`; an ack or nack inside a pipeline lets that
//! pipeline finish, then the loop exits. The loop is bounded (see
//! [`DEFAULT_MAX_ITERATIONS`]): a runaway executor ends as nack with
//! `E_DISPATCH_ITERATION_LIMIT_EXCEEDED` instead of spinning forever.

mod executor;
mod genai;
mod helpers;
mod resume;
mod scripted;
mod scripted_rules;
mod tool_pipeline;
mod tools;

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

pub use executor::{Executor, ExecutorFn, executor_fn};
#[cfg(feature = "otel")]
pub(crate) use genai::set_capture_content;
pub use helpers::{ReportError, ToolCallUpdate};
pub use scripted::{ScriptedModel, ScriptedModelError, Step};
pub use scripted_rules::{Rule, RuleCondition};
pub(crate) use tool_pipeline::tool_pipeline;
pub use tools::ToolExecutionError;

use crate::context::{AbortReason, DispatchContext, Signal, TurnContext};
use crate::events::{DispatchStatus, ErrorCode, Event, TurnError};
use crate::pipeline::{
    DispatchInput, DispatchOutput, Downstream, Panicked, PipelineContext, PipelineRun, Stack,
};

/// The iteration bound a runner uses unless `TurnRunnerBuilder::max_iterations` says otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 128;

/// How a dispatch ended.
#[derive(Clone, Debug)]
pub struct DispatchReport {
    /// Ack, nack or aborted.
    pub status: DispatchStatus,
    /// The error that ended a nacked dispatch.
    pub error: Option<TurnError>,
    /// How many iterations ran: each one that began (emitted
    /// [`IterationStart`](crate::events::Event::IterationStart)), including the one that acked,
    /// nacked, failed or was aborted. A dispatch whose executor acks at once reports 1.
    pub iterations: u32,
    /// Why an aborted dispatch was aborted.
    pub abort_reason: Option<AbortReason>,
    /// Failures after the first in the pipeline walk that ended the dispatch (post-steps of
    /// upstream middleware that failed too), in the order they happened. Each is reported as
    /// its own error event after [`error`](Self::error); `error` stays the turn's outcome.
    pub later_errors: Vec<TurnError>,
}

pub(crate) struct DispatchPlan<'a> {
    pub(crate) input: &'a Stack<DispatchInput>,
    pub(crate) output: &'a Stack<DispatchOutput>,
    pub(crate) executor: &'a dyn Executor,
    pub(crate) max_iterations: u32,
}

/// Runs one dispatch of `turn`, flushing completed iterations' writes into it.
pub(crate) async fn run_dispatch(turn: &mut TurnContext, plan: DispatchPlan<'_>) -> DispatchReport {
    // Inline in this future, not boxed: at about 1 KB the box cost a malloc, a free and a copy
    // into it, more than the larger future costs where it moves (both measured per turn). Kept
    // small for that (see the size test in `context::dispatch`).
    let mut ctx = DispatchContext::seeded_from(turn);
    let resume = turn.resume.take();
    // Unobserved lifecycle events are not built, and neither the clock nor the ids are read for
    // them (the dispatch id is made on first use). The bus is reached through the context at
    // each event rather than cloned for the dispatch: a clone and its drop are two locked
    // instructions a turn, each slower than the rest of what it saves.
    let observed = ctx
        .shared
        .events
        .then_observed(|| (turn.turn_id().clone(), ctx.shared_id()));
    let dispatch_started = observed.as_ref().map(|_| ctx.shared.now());
    if let (Some((turn_id, dispatch_id)), Some((started_at, _))) = (&observed, dispatch_started) {
        ctx.shared.events.emit(Event::DispatchStart {
            turn_id: turn_id.clone(),
            dispatch_id: dispatch_id.clone(),
            started_at,
        });
    }

    // A resumed turn goes on counting where the interrupted one stopped: its answers keep
    // their ids (`{dispatch}-{iteration}`), and the bound holds for the turn as a whole.
    let mut completed_iterations = resume.as_ref().map_or(0, |point| point.first_iteration);
    // Counted as the events count them: every iteration that began, the ending one included.
    let mut started_iterations = 0;
    // Instructions are rendered from state once, before the first iteration: the model never
    // sees a `{placeholder}` whose key is missing.
    let mut dispatch_error: Option<TurnError> = match ctx.render_instructions() {
        // Boxed, and only when there is something to spool: the spooling future is larger than
        // the rest of the dispatch, and inline it would be copied with every turn's future.
        // (An empty collection is asked first: its iterator is an out-of-line call.)
        Ok(())
            if !ctx.retrievables.is_empty()
                && ctx
                    .retrievables
                    .iter()
                    .any(|retrievable| retrievable.spoolable_text().is_some()) =>
        {
            Box::pin(spool_preloaded(&mut ctx)).await.err()
        }
        Ok(()) => None,
        Err(error) => Some(
            TurnError::new(
                ErrorCode::StateTemplateKeyMissing,
                "the instructions could not be rendered from state",
            )
            .with_source(error),
        ),
    };
    if let Some(point) = resume
        && dispatch_error.is_none()
        && !point.unanswered.is_empty()
    {
        // The calls run as part of the answer that made them.
        ctx.iteration = point.first_iteration.saturating_sub(1);
        dispatch_error = Box::pin(resume::settle_unanswered(&mut ctx, point.unanswered))
            .await
            .err();
    }
    while dispatch_error.is_none() && !ctx.is_aborted() && !ctx.is_signalled() {
        if completed_iterations >= plan.max_iterations {
            dispatch_error = Some(TurnError::new(
                ErrorCode::IterationLimitExceeded,
                format!(
                    "the dispatch ran {} iterations without an ack or nack; raise the bound with \
                     `TurnRunnerBuilder::max_iterations` or make the executor call `ctx.ack()`",
                    plan.max_iterations
                ),
            ));
            break;
        }
        ctx.iteration = completed_iterations;
        ctx.clear_generation_stats();
        let iteration_started = observed.as_ref().map(|_| ctx.shared.now());
        if let (Some((_, dispatch_id)), Some((started_at, _))) = (&observed, iteration_started) {
            ctx.shared.events.emit(Event::IterationStart {
                dispatch_id: dispatch_id.clone(),
                iteration: completed_iterations,
                started_at,
            });
        }
        started_iterations += 1;

        let input = plan.input.run(&mut ctx).await;
        if let Some(error) = pipeline_error(&mut ctx, input, "dispatch_input") {
            dispatch_error = Some(error);
            break;
        }
        if ctx.is_aborted() || ctx.is_signalled() {
            settle_queue(&mut ctx, turn);
            break;
        }

        // The model call's span (GenAI `chat`); not entered at all when nobody wants it.
        let span = genai::chat_span(completed_iterations);
        let executed = AssertUnwindSafe(plan.executor.execute(&mut ctx)).catch_unwind();
        let executed = if span.is_disabled() {
            executed.await
        } else {
            tracing::Instrument::instrument(executed, span.clone()).await
        };
        if !span.is_disabled() {
            genai::record_generation(&span, &ctx.generation_stats());
        }
        // Ledger results of calls whose tool-call record the executor did not mutate are
        // written now, on their own (whatever the executor's outcome).
        let unwritten = if has_parked_results(&ctx) {
            write_parked_results(&ctx).await
        } else {
            Ok(())
        };
        let executor_failure = match executed {
            Ok(Ok(())) => None,
            Ok(Err(error)) => match ctx.absorb_abort(error) {
                Ok(()) => None,
                Err(error) => Some(executor_error(error)),
            },
            Err(panic) => {
                let message = crate::pipeline::panic_message(panic.as_ref());
                Some(executor_error(Panicked { message }.into()))
            }
        };
        let executor_failure = executor_failure.or_else(|| {
            unwritten.err().map(|error| {
                TurnError::new(
                    ErrorCode::StorageFailed,
                    "the ledger results of tool calls the executor ran could not be written",
                )
                .with_source(error)
            })
        });
        if let Some(error) = executor_failure {
            genai::record_error(&span, error.code().as_str());
            dispatch_error = Some(error);
            break;
        }
        // The tool handlers' state writes join the dispatch's, for `dispatch_output`.
        ctx.absorb_tool_state();
        if ctx.is_aborted() || ctx.is_signalled() {
            settle_queue(&mut ctx, turn);
            break;
        }

        let output = plan.output.run(&mut ctx).await;
        if let Some(error) = pipeline_error(&mut ctx, output, "dispatch_output") {
            dispatch_error = Some(error);
            break;
        }
        // The iteration completed: its writes reach the turn, even when an output middleware
        // nacked (the nack ends the loop; what the iteration did stands).
        if ctx.is_aborted() {
            ctx.discard_queue();
        } else if ctx.is_signalled() {
            // The last iteration: the loop ends on a signal.
            ctx.hand_over(turn);
        } else {
            ctx.flush_into(turn);
        }
        if let (Some((_, dispatch_id)), Some((started_at, started))) =
            (&observed, iteration_started)
        {
            let (ended_at, ended) = ctx.shared.now();
            ctx.shared.events.emit(Event::IterationEnd {
                dispatch_id: dispatch_id.clone(),
                iteration: completed_iterations,
                started_at,
                ended_at,
                duration: ended.duration_since(started),
            });
        }
        completed_iterations += 1;
    }
    // Calls a dispatch middleware ran after the last executor and did not mutate.
    let unwritten = if has_parked_results(&ctx) {
        write_parked_results(&ctx).await
    } else {
        Ok(())
    };
    if let Err(error) = unwritten {
        dispatch_error.get_or_insert(
            TurnError::new(
                ErrorCode::StorageFailed,
                "the ledger results of tool calls the dispatch ran could not be written",
            )
            .with_source(error),
        );
    }
    if dispatch_error.is_some() {
        ctx.discard_queue();
    }

    let nack_error = match &ctx.signal {
        Signal::Nacked(error) => Some(TurnError::clone(error)),
        _ => None,
    };
    let status = if dispatch_error.is_some() || nack_error.is_some() {
        DispatchStatus::Nack
    } else if ctx.is_acked() {
        DispatchStatus::Ack
    } else {
        DispatchStatus::Aborted
    };
    let error = dispatch_error.or(nack_error);
    if let (Some((turn_id, dispatch_id)), Some((started_at, started))) =
        (observed, dispatch_started)
    {
        let (ended_at, ended) = ctx.shared.now();
        ctx.shared.events.emit(Event::DispatchEnd {
            turn_id,
            dispatch_id,
            status,
            error: error.clone(),
            iterations: started_iterations,
            started_at,
            ended_at,
            duration: ended.duration_since(started),
        });
    }
    let abort_reason = if status == DispatchStatus::Aborted {
        ctx.abort_reason()
    } else {
        None
    };
    DispatchReport {
        status,
        error,
        iterations: started_iterations,
        later_errors: std::mem::take(&mut *ctx.later_failures),
        abort_reason,
    }
}

/// Whether ledger results are still parked in the dispatch (tool calls whose record nobody
/// mutated after they ran): rare, as a tool must have run under the ledger and no stored record
/// carried its result. Checked before [`write_parked_results`] so that, most dispatches, the
/// write's future is neither built nor polled.
fn has_parked_results(ctx: &DispatchContext) -> bool {
    crate::storage::ledger::has_pending(&ctx.shared.storage_context)
}

/// Writes the ledger results parked in the dispatch, each on its own. Its future is boxed,
/// being rare: inline, its 208 bytes would sit in every dispatch's future.
fn write_parked_results(
    ctx: &DispatchContext,
) -> BoxFuture<'_, Result<(), crate::storage::StorageError>> {
    Box::pin(crate::storage::ledger::write_pending(
        &ctx.shared.storage,
        &ctx.shared.storage_context,
    ))
}

/// Auto-spools the retrievables the dispatch starts with (spec 5.6, "dispatch preload"): those
/// the turn holds with static, non-inline text — added to the turn directly rather than stored
/// through a context — reach the executor spooled, like every stored or fetched one. The turn's
/// own collection is left as it is. A failed spool ends the dispatch before its first
/// iteration.
async fn spool_preloaded(ctx: &mut DispatchContext) -> Result<(), TurnError> {
    let unspooled: Vec<_> = ctx
        .retrievables
        .iter()
        .filter(|retrievable| retrievable.spoolable_text().is_some())
        .cloned()
        .collect();
    for retrievable in unspooled {
        let id = retrievable.id().to_owned();
        let spooled = crate::context::auto_spool(
            &ctx.shared.storage,
            &ctx.shared.storage_context,
            retrievable,
        )
        .await
        .map_err(|error| {
            TurnError::new(
                ErrorCode::DispatchPipelineError,
                format!("auto-spooling the retrievable `{id}` the dispatch started with failed"),
            )
            .with_source(error)
        })?;
        ctx.retrievables.replace(spooled);
    }
    Ok(())
}

/// An acknowledged dispatch hands its queued writes to the turn as it ends; anything else drops
/// them.
fn settle_queue(ctx: &mut DispatchContext, turn: &mut TurnContext) {
    if ctx.is_acked() && !ctx.is_aborted() {
        ctx.hand_over(turn);
    } else {
        ctx.discard_queue();
    }
}

/// The error a dispatch pipeline's walk ends the dispatch with, if any: a middleware failure,
/// or a short-circuit that no abort or signal explains.
fn pipeline_error(
    ctx: &mut DispatchContext,
    run: PipelineRun,
    pipeline: &'static str,
) -> Option<TurnError> {
    match run.outcome {
        Downstream::Failed => ctx.pipeline_failure.take().map(|failure| *failure),
        Downstream::ShortCircuited if !ctx.is_aborted() && !ctx.is_signalled() => {
            Some(short_circuited(pipeline, run.short_circuited_by))
        }
        _ => None,
    }
}

pub(crate) fn short_circuited(
    pipeline: &'static str,
    by: Option<crate::pipeline::ShortCircuit>,
) -> TurnError {
    let culprit = match by {
        Some(by) => format!("{by}"),
        None => "a middleware".to_owned(),
    };
    let refusal = if pipeline == "tool_execution" {
        "use `ctx.refuse(reason)` or `ctx.respond(output)` to settle the call on purpose"
    } else {
        "use `ctx.abort(reason)` for an intentional refusal"
    };
    TurnError::new(
        ErrorCode::PipelineShortCircuited,
        format!(
            "the `{pipeline}` pipeline short-circuited: {culprit} returned without calling \
             `next.run(ctx).await` and without aborting; call `next`, or {refusal}"
        ),
    )
}

fn executor_error(source: crate::pipeline::BoxError) -> TurnError {
    // An executor that waited on a gate and failed with `?` ends the turn under the gate's code.
    let code = crate::gate::GateError::in_chain(source.as_ref())
        .map_or(ErrorCode::ExecutorError, crate::gate::GateError::code);
    TurnError::new(code, "the executor failed").with_source(source)
}
