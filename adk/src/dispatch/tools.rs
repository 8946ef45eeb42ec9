//! Running tools inside a dispatch: the tool is looked up among the tools the dispatch offers,
//! its arguments are validated, `ToolExecutionStart` / `ToolExecutionEnd` bracket the handler,
//! and a handler's error or panic comes back as a typed [`ToolExecutionError`]. Also owns the
//! rule that ephemeral tools are pruned when the dispatch is acknowledged.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::{Instant, SystemTime};

use futures_util::FutureExt;
use serde_json::{Map, Value};

use std::sync::Arc;

use crate::context::{DispatchContext, GateLink, ToolContext};
use crate::events::{ErrorCode, Event, EventSink, TurnError};
use crate::ids::TurnId;
use crate::pipeline::{Panicked, Stack, ToolExecution};
use crate::primitives::{
    HandlerFailed, InvalidToolArgs, Tool, ToolCall, ToolInvocation, ToolOutput, tool_call_checksum,
};

/// A tool call that did not produce output.
///
/// Every variant names the tool. An executor usually reports the error back to the model
/// (`call.fail(error.to_string())`) and lets it try again; it can also `?` it, which ends the
/// dispatch with `E_LLM_EXECUTION_EXECUTOR_ERROR` carrying this error as its source.
///
/// ```
/// use adk::dispatch::ToolExecutionError;
/// use adk::events::ErrorCode;
///
/// fn advice(error: &ToolExecutionError) -> &'static str {
///     match error.code() {
///         ErrorCode::UnknownTool => "tell the model which tools exist",
///         ErrorCode::InvalidToolArgs => "show the model the violations",
///         _ => "report the failure",
///     }
/// }
/// # let _ = advice;
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolExecutionError {
    /// No tool of this name is registered in the dispatch. Code `E_UNKNOWN_TOOL`.
    #[error(
        "the model called tool {name:?}, which this dispatch does not offer (it offers {}); \
         register the tool with the runner, or tell the model the tool does not exist",
        names(.available)
    )]
    UnknownTool {
        /// The name called.
        name: String,
        /// The visible tools, in order.
        available: Vec<String>,
        /// The arguments of the refused call.
        args: Value,
    },
    /// The tool is registered but hidden, so the model may not call it. Code `E_UNKNOWN_TOOL`.
    #[error(
        "the model called tool {name:?}, which is hidden in this dispatch (it offers {}); \
         unhide it with `ctx.tools.unhide([..])` to allow the call, or tell the model the tool \
         is not available",
        names(.available)
    )]
    HiddenTool {
        /// The name called.
        name: String,
        /// The visible tools, in order.
        available: Vec<String>,
        /// The arguments of the refused call.
        args: Value,
    },
    /// The arguments broke the tool's input schema (or did not deserialize into a typed tool's
    /// arguments); the handler did not run and no execution event was emitted. Code
    /// `E_INVALID_TOOL_ARGS`.
    #[error(transparent)]
    InvalidArgs(#[from] InvalidToolArgs),
    /// The handler returned an error, its source. Code `E_TOOL_DOWNSTREAM_ERROR`.
    ///
    /// The message names the tool, not the call's id: it is written for the model, which
    /// does not need the id (the field and the `ToolExecutionEnd` event carry it).
    #[error("tool {tool:?}: {source}")]
    Downstream {
        /// The tool.
        tool: String,
        /// The tool call's id.
        call_id: String,
        /// The handler's error.
        #[source]
        source: HandlerFailed,
    },
    /// A `tool_execution` middleware refused the call (`ToolContext::refuse`, or the abort
    /// error); the handler did not run. Code `E_TOOL_REFUSED`. The message, which the model
    /// reads as the call's result, names the tool and gives the reason.
    #[error("tool {tool:?} was not run: {reason}")]
    Refused {
        /// The tool.
        tool: String,
        /// The tool call's id.
        call_id: String,
        /// Why, as the middleware put it.
        reason: String,
    },
    /// A `tool_execution` middleware failed (an error, a panic, a gate's error) or returned
    /// without running `next` and without settling the call; the source says which and why.
    /// Code: the source's (`E_TOOL_PIPELINE_ERROR`, `E_PIPELINE_SHORT_CIRCUITED`, or a gate's).
    #[error("tool {tool:?}: {source}")]
    Pipeline {
        /// The tool.
        tool: String,
        /// The tool call's id.
        call_id: String,
        /// The failure, as the runner reports a pipeline's.
        #[source]
        source: TurnError,
    },
    /// The dispatch or the turn was aborted before the call's handler ran. Code
    /// `E_TOOL_CALL_ABORTED`.
    #[error("tool {tool:?} was not run: the dispatch was aborted")]
    Aborted {
        /// The tool.
        tool: String,
        /// The tool call's id.
        call_id: String,
    },
    /// The handler panicked; the panic was contained. Code `E_TOOL_DOWNSTREAM_ERROR`. Like
    /// `Downstream`, the message leaves the call's id out.
    #[error("tool {tool:?}: the handler {source}")]
    Panicked {
        /// The tool.
        tool: String,
        /// The tool call's id.
        call_id: String,
        /// The panic message.
        #[source]
        source: Panicked,
    },
}

impl ToolExecutionError {
    /// The error's code: `E_UNKNOWN_TOOL`, `E_INVALID_TOOL_ARGS`, `E_TOOL_DOWNSTREAM_ERROR`,
    /// `E_TOOL_REFUSED`, `E_TOOL_CALL_ABORTED`, or a failed tool middleware's.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnknownTool { .. } | Self::HiddenTool { .. } => ErrorCode::UnknownTool,
            Self::InvalidArgs(_) => ErrorCode::InvalidToolArgs,
            Self::Downstream { .. } | Self::Panicked { .. } => ErrorCode::ToolDownstreamError,
            Self::Refused { .. } => ErrorCode::ToolRefused,
            Self::Pipeline { source, .. } => source.code(),
            Self::Aborted { .. } => ErrorCode::ToolCallAborted,
        }
    }

    /// The [`OutcomeUnknown`] of an at-most-once call that was started before and recorded
    /// no result (see `storage::ledger`), when this is one. The model reads it as the call's
    /// failed result; a program decides what to do about the effect it may have had.
    ///
    /// [`OutcomeUnknown`]: crate::storage::ledger::OutcomeUnknown
    pub fn outcome_unknown(&self) -> Option<&crate::storage::ledger::OutcomeUnknown> {
        match self {
            Self::Downstream { source, .. } => std::error::Error::source(source)?.downcast_ref(),
            _ => None,
        }
    }

    /// The name of the tool that was called.
    pub fn tool(&self) -> &str {
        match self {
            Self::UnknownTool { name, .. } | Self::HiddenTool { name, .. } => name,
            Self::InvalidArgs(invalid) => invalid.tool(),
            Self::Downstream { tool, .. }
            | Self::Panicked { tool, .. }
            | Self::Refused { tool, .. }
            | Self::Pipeline { tool, .. }
            | Self::Aborted { tool, .. } => tool,
        }
    }
}

fn names(available: &[String]) -> String {
    if available.is_empty() {
        return "no tools".to_owned();
    }
    available
        .iter()
        .map(|name| format!("{name:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A call that passed lookup and validation: everything its run needs, owned, so the run does
/// not borrow the context.
struct PreparedCall {
    tool: Tool,
    args: Value,
    invocation: ToolInvocation,
    checksum: String,
    events: EventSink,
    turn_id: TurnId,
    dispatch_id: Arc<str>,
    /// The runner's `tool_execution` pipeline, when it has middleware.
    pipeline: Option<Arc<Stack<ToolExecution>>>,
}

impl DispatchContext {
    /// Executes `tool_call` with the tool of that name in [`tools`](DispatchContext::tools).
    ///
    /// In order: the tool must be registered and visible
    /// ([`UnknownTool`](ToolExecutionError::UnknownTool) /
    /// [`HiddenTool`](ToolExecutionError::HiddenTool)); the arguments must pass its schema
    /// ([`InvalidArgs`](ToolExecutionError::InvalidArgs), every violation listed, no event
    /// emitted); then `ToolExecutionStart` (with the validated arguments), the handler, and
    /// `ToolExecutionEnd` (`is_error` when the handler failed or panicked). Both events carry
    /// the tool call's id as `tool_call_id` and its checksum as `checksum` (identical calls
    /// share it; the TypeScript original calls it `call_id`);
    /// the handler's [`ToolInvocation`] carries the call's id, the checksum, this dispatch and
    /// iteration, and the turn's storage.
    ///
    /// The returned future owns what it needs and does not borrow the context, so several
    /// calls can run concurrently (`futures::future::join_all`) while the executor keeps using
    /// `ctx`. Nothing is stored: record the result with `ctx.mutate_tool_call(call.complete(..))`.
    /// For a tool that is not read-only, the [ledger](crate::storage::ledger)'s result of the
    /// call waits for that mutate and is written with it, in one adapter call
    /// (`StorageAdapter::mutate_tool_call_with_result`); if the executor returns without
    /// mutating the call, it is written on its own then.
    ///
    /// ```
    /// use adk::context::DispatchContext;
    /// use adk::pipeline::BoxError;
    /// use adk::primitives::{ToolCall, ToolOutput};
    ///
    /// async fn run_forecast(ctx: &mut DispatchContext) -> Result<(), BoxError> {
    ///     let call = ToolCall::new("call-1", "forecast", serde_json::json!({"city": "Oslo"}))?;
    ///     ctx.store_tool_call(call.clone()).await?;
    ///     let finished = match ctx.execute_tool(&call).await {
    ///         Ok(ToolOutput::Text(text)) => call.complete(text),
    ///         Ok(_) => call.complete("done"),
    ///         Err(error) => call.fail(error.to_string()),
    ///     };
    ///     ctx.mutate_tool_call(finished).await?;
    ///     Ok(())
    /// }
    /// # let _ = run_forecast;
    /// ```
    pub fn execute_tool(
        &self,
        tool_call: &ToolCall,
    ) -> impl Future<Output = Result<ToolOutput, ToolExecutionError>> + Send + use<> {
        let args = Value::Object(tool_call.args().clone());
        let span = super::genai::tool_span(tool_call.tool(), tool_call.id(), &args);
        let prepared = self.prepare_call(
            tool_call.tool(),
            tool_call.id(),
            args,
            Some(tool_call.checksum()),
        );
        in_tool_span(prepared, span)
    }

    /// Executes the tool `name` with `args` as the call `call_id`, exactly like
    /// [`execute_tool`](Self::execute_tool) without a [`ToolCall`] record; the events' `call_id`
    /// is [`tool_call_checksum`] of the name and arguments.
    ///
    /// ```
    /// use adk::context::DispatchContext;
    /// use adk::dispatch::ToolExecutionError;
    /// use adk::primitives::ToolOutput;
    ///
    /// async fn forecast(ctx: &DispatchContext) -> Result<ToolOutput, ToolExecutionError> {
    ///     ctx.call_tool("forecast", "call-1", serde_json::json!({"city": "Oslo"})).await
    /// }
    /// # let _ = forecast;
    /// ```
    pub fn call_tool(
        &self,
        name: &str,
        call_id: &str,
        args: Value,
    ) -> impl Future<Output = Result<ToolOutput, ToolExecutionError>> + Send + use<> {
        let span = super::genai::tool_span(name, call_id, &args);
        let prepared = self.prepare_call(name, call_id, args, None);
        in_tool_span(prepared, span)
    }

    fn prepare_call(
        &self,
        name: &str,
        call_id: &str,
        args: Value,
        checksum: Option<&str>,
    ) -> Result<PreparedCall, ToolExecutionError> {
        // Only `execute_tool` passes the record's checksum: the caller holds a `ToolCall`.
        let defers_ledger_result = checksum.is_some();
        let available = || {
            self.tools
                .visible()
                .iter()
                .map(|tool| tool.name().to_owned())
                .collect()
        };
        let Some(tool) = self.tools.get(name) else {
            return Err(ToolExecutionError::UnknownTool {
                name: name.to_owned(),
                available: available(),
                args,
            });
        };
        if self.tools.is_hidden(name) {
            return Err(ToolExecutionError::HiddenTool {
                name: name.to_owned(),
                available: available(),
                args,
            });
        }
        let args = tool.validate(args)?;
        // Validation does not change the arguments, so the checksum of the validated arguments
        // is the checksum of the raw ones, as the original computes it.
        let checksum = match (checksum, &args) {
            (Some(checksum), _) => checksum.to_owned(),
            (None, Value::Object(map)) => tool_call_checksum(name, map),
            // Unreachable in practice: every tool's schema requires an object.
            (None, other) => {
                tool_call_checksum(name, &Map::from_iter([("value".to_owned(), other.clone())]))
            }
        };
        let mut invocation = tool.invocation_in_dispatch(
            call_id,
            &checksum,
            self.dispatch_id(),
            self.iteration(),
            self.shared.storage.clone(),
            self.storage_context().clone(),
        );
        // A call with a `ToolCall` record: its ledger result goes with the record's mutate.
        invocation.defers_ledger_result = defers_ledger_result;
        // The handler's (and the tool middleware's) gates: announced on the runner's bus,
        // settled when the dispatch or the turn is aborted.
        invocation.gates = GateLink::new(
            self.turn_id().clone(),
            self.shared.events.clone(),
            self.cancellation().clone(),
        );
        // The handler's session state: the dispatch's, its writes joining the dispatch's.
        invocation.state = self.tool_state_link();
        Ok(PreparedCall {
            tool: tool.clone(),
            args,
            invocation,
            checksum,
            events: self.shared.events.clone(),
            turn_id: self.turn_id().clone(),
            dispatch_id: self.shared_id(),
            pipeline: self.shared.tool_pipeline.clone(),
        })
    }
}

/// Runs a prepared call inside its GenAI `execute_tool` span, recording the outcome on it.
async fn in_tool_span(
    prepared: Result<PreparedCall, ToolExecutionError>,
    span: tracing::Span,
) -> Result<ToolOutput, ToolExecutionError> {
    let outcome = match prepared {
        Ok(prepared) if span.is_disabled() => prepared.run().await,
        Ok(prepared) => tracing::Instrument::instrument(prepared.run(), span.clone()).await,
        Err(error) => Err(error),
    };
    super::genai::record_tool_outcome(&span, &outcome);
    outcome
}

impl PreparedCall {
    async fn run(self) -> Result<ToolOutput, ToolExecutionError> {
        let Self {
            tool,
            args,
            invocation,
            checksum,
            events,
            turn_id,
            dispatch_id,
            pipeline,
        } = self;
        let tool_name = tool.name().to_owned();
        let call_id = invocation.call_id().to_owned();
        let started_at = SystemTime::now();
        let started = Instant::now();
        events.emit(Event::ToolExecutionStart {
            turn_id: turn_id.clone(),
            dispatch_id: dispatch_id.clone(),
            tool_name: tool_name.clone(),
            tool_call_id: call_id.clone(),
            checksum: checksum.clone(),
            args: args.clone(),
            started_at,
        });
        if let Some(pipeline) = pipeline {
            let result = super::tool_pipeline::run_tool_pipeline(
                &pipeline,
                ToolContext::new(tool, args, invocation),
            )
            .await;
            events.emit(Event::ToolExecutionEnd {
                turn_id,
                dispatch_id,
                tool_name,
                tool_call_id: call_id,
                checksum,
                started_at,
                ended_at: SystemTime::now(),
                duration: started.elapsed(),
                is_error: result.is_err(),
            });
            return result;
        }
        // The handler is called inside the guarded future, so a panic while it builds its
        // future is contained as well as one while it runs.
        // A tool that is not read-only runs under the ledger's rules (`storage::ledger`).
        let outcome = AssertUnwindSafe(async move {
            crate::storage::ledger::call_recorded(&tool, args, invocation).await
        })
        .catch_unwind()
        .await;
        events.emit(Event::ToolExecutionEnd {
            turn_id,
            dispatch_id,
            tool_name: tool_name.clone(),
            tool_call_id: call_id.clone(),
            checksum,
            started_at,
            ended_at: SystemTime::now(),
            duration: started.elapsed(),
            is_error: !matches!(outcome, Ok(Ok(_))),
        });
        match outcome {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(source)) => Err(ToolExecutionError::Downstream {
                tool: tool_name,
                call_id,
                source: source.into(),
            }),
            Err(panic) => Err(ToolExecutionError::Panicked {
                tool: tool_name,
                call_id,
                source: Panicked {
                    message: crate::pipeline::panic_message(panic.as_ref()),
                },
            }),
        }
    }
}
