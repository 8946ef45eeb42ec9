//! Approval before a tool call: a ready `tool_execution` middleware that holds chosen calls
//! until someone approves them, denies them (the model reads the reason) or edits their
//! arguments.
//!
//! [`Approval`] picks the calls: every call of some tools ([`Approval::tools`]), or the calls of
//! one tool whose typed arguments satisfy a predicate ([`Approval::when`]). For each, it opens a
//! gate (see [`adk::gate`](crate::gate)) whose payload is the call (`tool`, `call_id`, `args`)
//! and waits for a [`Decision`]; whoever listens on the bus answers through the gate's handle:
//!
//! - `gate.resolve(Decision::Approve)`: the call runs as it was;
//! - `gate.resolve(Decision::deny(reason))`: the handler does not run, and the call fails with
//!   `ToolExecutionError::Refused`, whose text the model reads: `tool "refund" was not run: a
//!   reviewer denied the call: <reason>`;
//! - `gate.resolve(Decision::edit(args))`: the call runs with `args`, which are checked against
//!   the tool's schema first; edited arguments that do not match refuse the call with the
//!   violations (the gate is already closed, so nobody could be asked again).
//!
//! A value that is not a `Decision` is refused by `resolve` and the gate stays open. A gate
//! nobody answers times out after [`DEFAULT_GATE_TIMEOUT`] unless [`Approval::timeout`] says
//! otherwise; a timed-out or rejected gate denies the call (the model reads `nobody approved
//! the call within <timeout>`, or `the approval was rejected: <error>`, as the reason). Aborting the dispatch or the turn settles the gate
//! and the call fails with `ToolExecutionError::Aborted`.
//!
//! **Durable approvals.** When the runner's storage keeps approvals (`SqliteStorage`,
//! `PostgresStorage`; see [`storage::approvals`](crate::storage::approvals)), the middleware
//! writes the request (call id, tool, arguments, prompt) before it opens the gate. The process
//! may then exit while the gate waits; another process (a web handler, an admin tool) lists the
//! waiting requests and answers one through [`Approvals`], over the store alone, with no runner;
//! and `runner.resume(..)` continues the turn: the call, stored without a result, runs again
//! through this middleware, which finds the stored decision and applies it **without asking
//! again and without calling the model** (the model is called after the call has its result,
//! as in any turn). A decision given in-process through the gate is stored too, and a gate that
//! timed out or was rejected stores a denial, so a request is never left waiting for a call
//! that was settled. With storage that keeps no approvals, the gate lives in this process
//! only: if the process exits, the pending approval is lost with its turn.
//!
//! ```
//! use adk::approval::{Approval, Decision};
//! use adk::dispatch::Step;
//! use adk::prelude::*;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Refund {
//!     amount: u32,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), BoxError> {
//! let refund = Tool::typed::<Refund>("refund")
//!     .description("Refunds an amount in euros.")
//!     .at_most_once()
//!     .handler(|args: Refund, _| async move { Ok(format!("refunded {} EUR", args.amount)) })
//!     .build()?;
//! let runner = TurnRunner::builder()
//!     .storage(NoopStorage::new())
//!     .tool(refund)
//!     // Refunds over 100 EUR wait for a human; smaller ones run at once.
//!     .tool_execution(Approval::when("refund", |refund: &Refund| refund.amount > 100))
//!     .observe(|event| {
//!         if let Event::TurnGateOpen { gate } = event {
//!             // In a service: hand the handle to whoever decides, and resolve it from there.
//!             gate.resolve(Decision::deny("refunds over 100 EUR go through the finance team"))
//!                 .expect("a Decision is what the gate waits for");
//!         }
//!     })
//!     .executor(ScriptedModel::steps([
//!         Step::call("refund", serde_json::json!({ "amount": 250 })),
//!         Step::reply("A human declined that refund."),
//!     ]))
//!     .build();
//! let outcome = runner.run(RawTurnContext::new("c", "p").user_message("Refund 250 EUR")).await?.into_result()?;
//! let call = outcome.context.tool_calls.first().expect("the model called the tool");
//! assert!(call.is_error()); // denied: the model read why
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::context::ToolContext;
use crate::gate::{DEFAULT_GATE_TIMEOUT, GateError, GateRequest};
use crate::pipeline::{BoxError, BoxFuture, Middleware, Next, ToolExecution};
use crate::storage::approvals::{Answered, ApprovalRequest};
use crate::storage::{SharedStorage, StorageAdapter, StorageContext, StorageError};

/// The answer to an approval gate: resolve the gate with one.
///
/// As JSON (a gate answered from outside Rust): `{"decision": "approve"}`,
/// `{"decision": "deny", "reason": "..."}`, `{"decision": "edit", "args": {..}}`.
///
/// ```
/// use adk::approval::Decision;
/// assert_eq!(serde_json::to_value(Decision::Approve).unwrap(), serde_json::json!({"decision": "approve"}));
/// let denied: Decision = serde_json::from_value(serde_json::json!({"decision": "deny", "reason": "no"})).unwrap();
/// assert_eq!(denied, Decision::deny("no"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call as it is.
    Approve,
    /// Do not run it; the model reads `reason`.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// Run it with these arguments instead (checked against the tool's schema).
    Edit {
        /// The arguments to run the call with.
        args: Value,
    },
}

impl Decision {
    /// [`Decision::Deny`] with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }

    /// [`Decision::Edit`] with `args`.
    pub fn edit(args: Value) -> Self {
        Self::Edit { args }
    }
}

type Predicate = dyn Fn(&Value) -> bool + Send + Sync;

/// Which calls need approval.
enum Rule {
    /// Every call of these tools.
    Tools(BTreeSet<String>),
    /// Calls of this tool whose arguments satisfy the predicate.
    When { tool: String, holds: Arc<Predicate> },
}

/// The approval middleware: register it with `TurnRunnerBuilder::tool_execution`. See the
/// [module documentation](self).
pub struct Approval {
    rule: Rule,
    timeout: Option<Duration>,
}

impl fmt::Debug for Approval {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = match &self.rule {
            Rule::Tools(tools) => format!("tools {tools:?}"),
            Rule::When { tool, .. } => format!("when a predicate holds for {tool:?}"),
        };
        formatter
            .debug_struct("Approval")
            .field("rule", &rule)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Approval {
    /// Every call of the tools `names` waits for approval.
    ///
    /// ```
    /// use adk::approval::Approval;
    /// let approval = Approval::tools(["refund", "delete_account"]);
    /// # let _ = approval;
    /// ```
    pub fn tools(names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            rule: Rule::Tools(names.into_iter().map(Into::into).collect()),
            timeout: Some(DEFAULT_GATE_TIMEOUT),
        }
    }

    /// Calls of `tool` wait for approval when `predicate` holds for their arguments as an `A`
    /// (a typed tool's argument type). Arguments that do not deserialize into `A` (an untyped
    /// tool's, say) wait for approval too: a check that cannot be made does not let a call
    /// through.
    pub fn when<A, F>(tool: impl Into<String>, predicate: F) -> Self
    where
        A: DeserializeOwned + 'static,
        F: Fn(&A) -> bool + Send + Sync + 'static,
    {
        let holds = move |args: &Value| A::deserialize(args).map_or(true, |args| predicate(&args));
        Self {
            rule: Rule::When {
                tool: tool.into(),
                holds: Arc::new(holds),
            },
            timeout: Some(DEFAULT_GATE_TIMEOUT),
        }
    }

    /// How long a call waits for its decision before it is refused (instead of
    /// [`DEFAULT_GATE_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Waits for a decision without a time limit (only a decision or an abort settles it).
    pub fn wait_indefinitely(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Whether the call in `ctx` needs approval.
    pub fn applies_to(&self, ctx: &ToolContext) -> bool {
        match &self.rule {
            Rule::Tools(tools) => tools.contains(ctx.tool_name()),
            Rule::When { tool, holds } => tool == ctx.tool_name() && holds(ctx.args()),
        }
    }

    fn request(&self, ctx: &ToolContext) -> GateRequest {
        let request = GateRequest::new(
            format!("approve-tool-call:{}", ctx.call_id()),
            format!("approve a call of tool `{}`", ctx.tool_name()),
        )
        .payload(json!({
            "tool": ctx.tool_name(),
            "call_id": ctx.call_id(),
            "args": ctx.args(),
        }));
        match self.timeout {
            Some(timeout) => request.timeout(timeout),
            None => request.wait_indefinitely(),
        }
    }

    /// Writes the durable request (when the storage keeps approvals) and returns the decision
    /// stored for this call, if one was given.
    async fn stored_decision(&self, ctx: &ToolContext) -> Result<Option<Decision>, BoxError> {
        let invocation = ctx.invocation();
        let request = ApprovalRequest::new(
            ctx.call_id(),
            ctx.tool_name(),
            ctx.args().clone(),
            format!("approve a call of tool `{}`", ctx.tool_name()),
            invocation.storage_context.turn_id().as_str(),
        );
        let record = invocation
            .storage
            .record_approval_request(&invocation.storage_context, request)
            .await?;
        match record.and_then(|record| record.decision) {
            Some(decision) => Ok(Some(serde_json::from_value(decision)?)),
            None => Ok(None),
        }
    }

    /// Stores `decision`, given in this process, unless another answer was stored first: then
    /// that one stands and is returned.
    async fn store_decision(ctx: &ToolContext, decision: Decision) -> Result<Decision, BoxError> {
        let invocation = ctx.invocation();
        let answered = invocation
            .storage
            .answer_approval(
                &invocation.storage_context,
                ctx.call_id().to_owned(),
                serde_json::to_value(&decision)?,
            )
            .await?;
        match answered {
            Answered::AlreadyAnswered(stored) => Ok(serde_json::from_value(stored)?),
            _ => Ok(decision),
        }
    }

    async fn decide(&self, ctx: &mut ToolContext) -> Result<bool, BoxError> {
        let decision = match self.stored_decision(ctx).await? {
            Some(decision) => decision,
            None => match ctx.wait_for::<Decision>(self.request(ctx)).await {
                Ok(decision) => Self::store_decision(ctx, decision).await?,
                Err(GateError::TimedOut { after, .. }) => {
                    let reason = format!("nobody approved the call within {after:?}");
                    Self::store_decision(ctx, Decision::deny(reason)).await?
                }
                Err(GateError::Rejected { cause, .. }) => {
                    let reason = format!("the approval was rejected: {cause}");
                    Self::store_decision(ctx, Decision::deny(reason)).await?
                }
                Err(other) => return Err(other.into()),
            },
        };
        match decision {
            Decision::Approve => Ok(true),
            Decision::Deny { reason } => {
                ctx.refuse(format!("a reviewer denied the call: {reason}"));
                Ok(false)
            }
            Decision::Edit { args } => match ctx.set_args(args) {
                Ok(()) => Ok(true),
                Err(invalid) => {
                    ctx.refuse(format!(
                        "the reviewer's edited arguments do not match the tool's schema: {}",
                        invalid
                            .violations()
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ")
                    ));
                    Ok(false)
                }
            },
        }
    }
}

impl Middleware<ToolExecution> for Approval {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut ToolContext,
        next: Next<'a, ToolContext>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            if self.applies_to(ctx) && !self.decide(ctx).await? {
                // Refused: the call is settled, the rest of the pipeline is skipped.
                return Ok(());
            }
            let _ = next.run(ctx).await;
            Ok(())
        })
    }

    fn name(&self) -> &'static str {
        "Approval"
    }
}

/// Durable approvals answered over the store, with no runner: what a web handler or an admin
/// tool uses to see the calls waiting in a conversation and decide them. See the
/// [module documentation](self); the storage must keep approvals (`SqliteStorage`,
/// `PostgresStorage`), or nothing is ever waiting.
///
/// ```
/// use adk::approval::{Approvals, ApprovalError};
/// use adk::storage::StorageContext;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let storage = adk::sqlite::SqliteStorage::in_memory().await?;
/// let approvals = Approvals::new(storage);
/// let conversation = StorageContext::new("c-1");
/// assert!(approvals.pending(&conversation).await?.is_empty());
/// let unknown = approvals.approve(&conversation, "call-1").await.unwrap_err();
/// assert!(matches!(unknown, ApprovalError::NotFound { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Approvals {
    storage: SharedStorage,
}

/// Why an answer given through [`Approvals`] was not recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No request of this call id waits in this conversation and thread.
    #[error(
        "no approval of call {call_id:?} is stored in this conversation and thread; list the \
         waiting ones with `Approvals::pending`"
    )]
    NotFound {
        /// The call id answered.
        call_id: String,
    },
    /// The request was answered before; the first answer stands.
    #[error("the approval of call {call_id:?} was already answered ({decision}); it stands")]
    AlreadyAnswered {
        /// The call id answered.
        call_id: String,
        /// The decision stored first, as JSON.
        decision: Value,
    },
    /// The storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl Approvals {
    /// Approvals kept by `storage`.
    pub fn new(storage: impl StorageAdapter) -> Self {
        Self {
            storage: SharedStorage::new(storage),
        }
    }

    /// Approvals kept by the storage behind `storage` (a runner's, say).
    pub fn shared(storage: SharedStorage) -> Self {
        Self { storage }
    }

    /// The requests waiting in the conversation and thread `conversation` names, oldest first.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Storage`] when the storage fails.
    pub async fn pending(
        &self,
        conversation: &StorageContext,
    ) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        Ok(self.storage.pending_approvals(conversation).await?)
    }

    /// Records `decision` for the waiting call `call_id`. The turn picks it up when it is
    /// resumed (`runner.resume`).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotFound`], [`ApprovalError::AlreadyAnswered`], or a storage failure.
    pub async fn answer(
        &self,
        conversation: &StorageContext,
        call_id: &str,
        decision: Decision,
    ) -> Result<(), ApprovalError> {
        let decision = serde_json::to_value(&decision)
            .map_err(|error| ApprovalError::Storage(StorageError::backend(error)))?;
        match self
            .storage
            .answer_approval(conversation, call_id.to_owned(), decision)
            .await?
        {
            Answered::AlreadyAnswered(decision) => Err(ApprovalError::AlreadyAnswered {
                call_id: call_id.to_owned(),
                decision,
            }),
            Answered::NotFound => Err(ApprovalError::NotFound {
                call_id: call_id.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// [`answer`](Self::answer) with [`Decision::Approve`].
    ///
    /// # Errors
    ///
    /// As [`answer`](Self::answer).
    pub async fn approve(
        &self,
        conversation: &StorageContext,
        call_id: &str,
    ) -> Result<(), ApprovalError> {
        self.answer(conversation, call_id, Decision::Approve).await
    }

    /// [`answer`](Self::answer) with [`Decision::deny`]`(reason)`: the model reads the reason.
    ///
    /// # Errors
    ///
    /// As [`answer`](Self::answer).
    pub async fn deny(
        &self,
        conversation: &StorageContext,
        call_id: &str,
        reason: impl Into<String>,
    ) -> Result<(), ApprovalError> {
        self.answer(conversation, call_id, Decision::deny(reason))
            .await
    }

    /// [`answer`](Self::answer) with [`Decision::edit`]`(args)`: the call runs with `args`
    /// (checked against the tool's schema when it runs).
    ///
    /// # Errors
    ///
    /// As [`answer`](Self::answer).
    pub async fn edit(
        &self,
        conversation: &StorageContext,
        call_id: &str,
        args: Value,
    ) -> Result<(), ApprovalError> {
        self.answer(conversation, call_id, Decision::edit(args))
            .await
    }
}
