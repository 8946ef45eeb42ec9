//! The tool pipeline's context: one tool call, as its middleware see it ([`ToolContext`]), and
//! the gate link a tool handler's [`ToolInvocation::wait_for`] opens its gates through.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Aborted;
use crate::error::{BoxError, ErrorCode, TurnError};
use crate::events::EventSink;
use crate::gate::{GateError, GateRequest};
use crate::ids::TurnId;
use crate::pipeline::{MiddlewareFailure, Panicked, PipelineContext};
use crate::primitives::{
    HandlerFailed, InvalidToolArgs, InvocationGates, Tool, ToolInvocation, ToolOutput, TurnGates,
};

/// Where a tool's gates are announced and what settles them: the turn's id and event bus, and
/// the dispatch's cancellation token (aborting the dispatch or the turn settles the gate).
#[derive(Clone, Debug)]
pub(crate) struct GateLink {
    turn_id: TurnId,
    events: EventSink,
    cancellation: CancellationToken,
}

impl GateLink {
    pub(crate) fn new(turn_id: TurnId, events: EventSink, cancellation: CancellationToken) -> Self {
        Self {
            turn_id,
            events,
            cancellation,
        }
    }

    async fn wait_for<T: DeserializeOwned>(&self, request: GateRequest) -> Result<T, GateError> {
        super::gate::wait_for(request, &self.turn_id, &self.events, &self.cancellation).await
    }
}

impl InvocationGates for TurnGates {
    type Link = GateLink;

    fn standalone() -> GateLink {
        GateLink::new(
            TurnId::new(),
            EventSink::default(),
            CancellationToken::new(),
        )
    }
}

impl ToolInvocation {
    /// Opens a gate and waits until it is answered, times out, or the dispatch (or the turn) is
    /// aborted: a tool handler's way to ask someone outside the turn, exactly like the
    /// contexts' `wait_for` (see [`adk::gate`](crate::gate)). The gate is announced on the
    /// runner's bus as `Event::TurnGateOpen`. An invocation made outside a dispatch
    /// ([`ToolInvocation::new`]) has no bus: nobody can answer its gates, so they time out.
    ///
    /// ```
    /// use adk::gate::GateRequest;
    /// use adk::prelude::*;
    ///
    /// let transfer = Tool::builder("transfer")
    ///     .description("Moves money between accounts.")
    ///     .handler(|args: serde_json::Value, invocation: adk::primitives::ToolInvocation| async move {
    ///         let request = GateRequest::new("confirm-transfer", "a human confirms every transfer")
    ///             .payload(args.clone());
    ///         let confirmed: bool = invocation.wait_for(request).await?;
    ///         Ok(if confirmed { "transferred" } else { "the transfer was declined" })
    ///     })
    ///     .build()?;
    /// # let _ = transfer;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub async fn wait_for<T: crate::gate::GateValue>(
        &self,
        request: GateRequest,
    ) -> Result<T, GateError> {
        self.gates.wait_for(request).await
    }
}

/// How a tool call ended, as the tool pipeline's middleware see it: set by the handler, or by a
/// middleware that refused the call or answered in its place.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolCallOutcome {
    /// The handler's output, or a middleware's answer in its place.
    Output(ToolOutput),
    /// A middleware refused the call; the model reads the reason as the call's result.
    Refused(String),
    /// The handler returned an error.
    Failed(HandlerFailed),
    /// The handler panicked; the panic was contained.
    Panicked(Panicked),
}

/// One tool call, as the `tool_execution` pipeline's middleware see it.
///
/// The dispatch builds it for each call that passed lookup and validation, and walks the
/// pipeline over it; the tool's handler runs at the end of the pipeline. A middleware may look
/// at the call ([`tool`](Self::tool), [`args`](Self::args), [`args_as`](Self::args_as)),
/// rewrite its arguments ([`set_args`](Self::set_args), checked against the tool's schema),
/// refuse it ([`refuse`](Self::refuse)), answer in the handler's place
/// ([`respond`](Self::respond)), open a gate ([`wait_for`](Self::wait_for)), and, after
/// `next.run(ctx).await`, read how it ended ([`outcome`](Self::outcome)). See the tools guide.
#[derive(Debug)]
pub struct ToolContext {
    tool: Tool,
    args: Value,
    invocation: ToolInvocation,
    outcome: Option<ToolCallOutcome>,
    handler_ran: bool,
    failure: Option<TurnError>,
}

impl ToolContext {
    pub(crate) fn new(tool: Tool, args: Value, invocation: ToolInvocation) -> Self {
        Self {
            tool,
            args,
            invocation,
            outcome: None,
            handler_ran: false,
            failure: None,
        }
    }

    /// The tool being called.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &str {
        self.tool.name()
    }

    /// The id of the call (the [`ToolCall`](crate::primitives::ToolCall) id).
    pub fn call_id(&self) -> &str {
        self.invocation.call_id()
    }

    /// What the handler will receive: its call id, checksum, dispatch and iteration, the
    /// tool's `meta`, and the turn's storage.
    pub fn invocation(&self) -> &ToolInvocation {
        &self.invocation
    }

    /// The call's arguments, as the handler will receive them: validated against the tool's
    /// schema (the model's, or the last [`set_args`](Self::set_args)).
    pub fn args(&self) -> &Value {
        &self.args
    }

    /// The arguments as a typed tool's argument type (or any type they deserialize into).
    ///
    /// ```
    /// # use adk::ToolContext;
    /// #[derive(serde::Deserialize)]
    /// struct Refund { amount: u32 }
    ///
    /// fn needs_a_human(ctx: &ToolContext) -> bool {
    ///     ctx.args_as::<Refund>().is_ok_and(|refund| refund.amount > 100)
    /// }
    /// # let _ = needs_a_human;
    /// ```
    pub fn args_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.args)
    }

    /// Replaces the arguments the handler will receive. They are checked against the tool's
    /// schema first; arguments that do not match are refused with every violation, and the
    /// call keeps its arguments.
    pub fn set_args(&mut self, args: Value) -> Result<(), InvalidToolArgs> {
        self.args = self.tool.validate(args)?;
        Ok(())
    }

    /// [`set_args`](Self::set_args) from a typed value (a typed tool's argument type).
    pub fn set_args_from<T: Serialize>(&mut self, args: &T) -> Result<(), BoxError> {
        let args = serde_json::to_value(args)?;
        Ok(self.set_args(args)?)
    }

    /// Refuses the call: the handler does not run, the remaining middleware bodies are
    /// skipped, and the call fails with `ToolExecutionError::Refused`, whose text (with
    /// `reason`) the model reads as the call's result. A middleware that refuses may return
    /// without running `next`. Called after `next.run(ctx).await`, it replaces the outcome.
    pub fn refuse(&mut self, reason: impl Into<String>) {
        self.outcome = Some(ToolCallOutcome::Refused(reason.into()));
    }

    /// Answers in the handler's place: the handler does not run, the remaining middleware
    /// bodies are skipped, and the call returns `output`. A middleware that answers may return
    /// without running `next`. Called after `next.run(ctx).await`, it replaces the handler's
    /// outcome (to redact an output, say).
    pub fn respond(&mut self, output: impl Into<ToolOutput>) {
        self.outcome = Some(ToolCallOutcome::Output(output.into()));
    }

    /// How the call ended so far: `None` before the handler ran and nothing settled it; after
    /// `next.run(ctx).await`, the handler's outcome or what a middleware downstream decided.
    pub fn outcome(&self) -> Option<&ToolCallOutcome> {
        self.outcome.as_ref()
    }

    /// Whether the handler ran (it does not when a middleware refused or answered first).
    pub fn handler_ran(&self) -> bool {
        self.handler_ran
    }

    /// Opens a gate and waits until it is answered, times out, or the dispatch (or the turn) is
    /// aborted, like the other contexts' `wait_for`; the gate is announced on the runner's
    /// bus.
    pub async fn wait_for<T: crate::gate::GateValue>(
        &self,
        request: GateRequest,
    ) -> Result<T, GateError> {
        self.invocation.wait_for(request).await
    }

    /// The dispatch's cancellation token: cancelled when the dispatch or the turn is aborted.
    /// Cancelling it aborts the dispatch.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.invocation.gates.cancellation
    }

    /// Runs the handler with the current arguments, unless the call was already settled;
    /// contains a panic. The tool pipeline's last step.
    pub(crate) async fn run_handler(&mut self) {
        if self.outcome.is_some() {
            return;
        }
        let call = crate::storage::ledger::call_recorded(
            &self.tool,
            self.args.clone(),
            self.invocation.clone(),
        );
        let outcome = AssertUnwindSafe(call).catch_unwind().await;
        self.handler_ran = true;
        self.outcome = Some(match outcome {
            Ok(Ok(output)) => ToolCallOutcome::Output(output),
            Ok(Err(error)) => ToolCallOutcome::Failed(error.into()),
            Err(panic) => ToolCallOutcome::Panicked(Panicked {
                message: crate::pipeline::panic_message(panic.as_ref()),
            }),
        });
    }

    /// The walk's result: the first middleware failure, and how the call ended.
    pub(crate) fn into_parts(self) -> (Option<TurnError>, Option<ToolCallOutcome>) {
        (self.failure, self.outcome)
    }
}

impl PipelineContext for ToolContext {
    /// A call refused or answered before its handler ran skips the remaining middleware, like
    /// an abort; so does an aborted dispatch or turn.
    fn is_aborted(&self) -> bool {
        (self.outcome.is_some() && !self.handler_ran) || self.cancellation().is_cancelled()
    }

    fn report_failure(&mut self, failure: MiddlewareFailure) {
        let code = super::gate_code(&failure).unwrap_or(ErrorCode::ToolPipelineError);
        let error = failure.into_turn_error(code);
        // The first failure is the call's; later ones (post-steps above it) are logged.
        match &self.failure {
            None => self.failure = Some(error),
            Some(_) => tracing::warn!(error = %error, "a later tool middleware failed as well"),
        }
    }

    /// In the tool pipeline, the abort error refuses the call with its reason (abort stops
    /// what the context is scoped to: here, one call). An error the dispatch's abort caused is
    /// absorbed into it.
    fn absorb_abort(&mut self, error: BoxError) -> Result<(), BoxError> {
        if self.cancellation().is_cancelled() {
            if super::caused_by_abort(error.as_ref()) {
                return Ok(());
            }
            return Err(error);
        }
        let aborted = error.downcast::<Aborted>()?;
        if self.outcome.is_none() || self.handler_ran {
            self.refuse(aborted.reason().to_owned());
        }
        Ok(())
    }
}
