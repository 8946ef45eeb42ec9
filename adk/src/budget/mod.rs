//! Ready token budgets, counted from the usage the provider reports.
//!
//! [`TokenBudget`] is one middleware for two pipelines. After each model call (in
//! `dispatch_output`, or when the executor acks, which ends the dispatch before
//! `dispatch_output` runs) it reads the usage the executor reported for the call
//! ([`DispatchContext::generation_stats`], which `adk::openai`'s executor fills from the
//! provider's `usage`) and adds it to two typed middleware states: [`TurnUsage`] (transient: this
//! turn) and [`SessionUsage`] (persistent, session scope: every turn of the session, every
//! thread). In `dispatch_input` it checks both against the limits before each model call, and
//! refuses the call with a typed [`BudgetExceeded`] naming the budget once a limit is reached.
//!
//! Spent tokens cannot be unspent, so the call that crosses a limit completes; the budget
//! refuses the next one (the next iteration of the turn, or the next turn for a session
//! limit). A refused turn fails (`TurnStatus::Failed`, code `E_DISPATCH_PIPELINE_ERROR`),
//! and — as for every failed turn — commits no state, so the usage of its earlier model calls
//! in that turn is not added to [`SessionUsage`].
//!
//! Register the one value on both pipelines:
//!
//! ```
//! use adk::budget::{BudgetExceeded, TokenBudget};
//! use adk::prelude::*;
//!
//! let budget = TokenBudget::new().per_turn_total(20_000).per_session_total(500_000);
//! let runner = TurnRunner::builder()
//!     .storage(NoopStorage::new())
//!     // `SessionUsage` is persistent: without a store, `build` refuses the runner.
//!     .session_store(adk::state::InMemorySessionStore::new())
//!     .executor(ScriptedModel::new())
//!     .dispatch_input(budget.clone())
//!     .dispatch_output(budget)
//!     .build();
//! # let _ = runner;
//! # fn refused(error: &adk::events::TurnError) -> Option<&BudgetExceeded> { BudgetExceeded::find(error) }
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::context::DispatchContext;
use crate::error::TurnError;
use crate::middleware_state::{MiddlewareState, Persistence};
use crate::pipeline::{
    BoxError, BoxFuture, DispatchInput, DispatchOutput, Middleware, Next, StateWrites,
};
use crate::tokens::Usage;

/// Which budget: per turn or per session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BudgetScope {
    /// The model calls of one turn.
    Turn,
    /// Every turn of the session.
    Session,
}

/// Which tokens a budget counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BudgetKind {
    /// Prompt tokens.
    Input,
    /// Completion tokens.
    Output,
    /// Both.
    Total,
}

/// One budget: a scope and a kind, e.g. the per-turn total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budget {
    /// Per turn or per session.
    pub scope: BudgetScope,
    /// Input, output or total tokens.
    pub kind: BudgetKind,
}

impl fmt::Display for Budget {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = match self.scope {
            BudgetScope::Turn => "per-turn",
            BudgetScope::Session => "per-session",
        };
        let kind = match self.kind {
            BudgetKind::Input => "input",
            BudgetKind::Output => "output",
            BudgetKind::Total => "total",
        };
        write!(formatter, "{scope} {kind} token budget")
    }
}

/// A model call refused because a token budget is spent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {budget} of {limit} tokens is spent ({used} used)")]
pub struct BudgetExceeded {
    /// The budget that refused.
    pub budget: Budget,
    /// Its limit.
    pub limit: u64,
    /// What was used when the call was refused.
    pub used: u64,
}

impl BudgetExceeded {
    /// The refusal behind a turn's error, if a budget refused it.
    pub fn find(error: &TurnError) -> Option<&Self> {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = error
            .cause()
            .map(|cause| cause as &(dyn std::error::Error + 'static));
        while let Some(error) = cause {
            if let Some(refusal) = error.downcast_ref::<Self>() {
                return Some(refusal);
            }
            cause = error.source();
        }
        None
    }
}

/// The tokens this turn's model calls used so far (transient: every turn starts at zero).
#[derive(MiddlewareState, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnUsage {
    /// The tokens used.
    pub usage: Usage,
    /// How many model calls reported usage.
    pub model_calls: u32,
    /// The last iteration whose usage was added: each is added once, from `dispatch_output` or
    /// from the ack that ends the dispatch before `dispatch_output` runs.
    recorded_iteration: Option<u32>,
}

/// The tokens every completed turn of the session used (persistent, session scope).
#[derive(MiddlewareState, Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[middleware_state(persistent, scope = session, key = "adk.budget.session_usage")]
pub struct SessionUsage {
    /// The tokens used.
    pub usage: Usage,
    /// How many model calls reported usage.
    pub model_calls: u64,
}

/// Limits for input, output and total tokens; `None` is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Limits {
    input: Option<u64>,
    output: Option<u64>,
    total: Option<u64>,
}

impl Limits {
    fn first_reached(&self, scope: BudgetScope, usage: Usage) -> Option<BudgetExceeded> {
        [
            (BudgetKind::Input, self.input, usage.input),
            (BudgetKind::Output, self.output, usage.output),
            (BudgetKind::Total, self.total, usage.total()),
        ]
        .into_iter()
        .find_map(|(kind, limit, used)| {
            let limit = limit?;
            (used >= limit).then_some(BudgetExceeded {
                budget: Budget { scope, kind },
                limit,
                used,
            })
        })
    }
}

/// Per-turn and per-session token budgets; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenBudget {
    turn: Limits,
    session: Limits,
}

impl TokenBudget {
    /// No limits yet (it still counts usage).
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits a turn's input tokens.
    #[must_use]
    pub fn per_turn_input(mut self, tokens: u64) -> Self {
        self.turn.input = Some(tokens);
        self
    }

    /// Limits a turn's output tokens.
    #[must_use]
    pub fn per_turn_output(mut self, tokens: u64) -> Self {
        self.turn.output = Some(tokens);
        self
    }

    /// Limits a turn's total tokens.
    #[must_use]
    pub fn per_turn_total(mut self, tokens: u64) -> Self {
        self.turn.total = Some(tokens);
        self
    }

    /// Limits the session's input tokens.
    #[must_use]
    pub fn per_session_input(mut self, tokens: u64) -> Self {
        self.session.input = Some(tokens);
        self
    }

    /// Limits the session's output tokens.
    #[must_use]
    pub fn per_session_output(mut self, tokens: u64) -> Self {
        self.session.output = Some(tokens);
        self
    }

    /// Limits the session's total tokens.
    #[must_use]
    pub fn per_session_total(mut self, tokens: u64) -> Self {
        self.session.total = Some(tokens);
        self
    }

    /// The first limit reached with what `ctx` has used, if any.
    ///
    /// # Errors
    ///
    /// The [`BudgetExceeded`] naming the budget.
    pub fn check(&self, ctx: &DispatchContext) -> Result<(), BudgetExceeded> {
        let turn = ctx
            .middleware_state::<TurnUsage>()
            .copied()
            .unwrap_or_default();
        let session = ctx
            .middleware_state::<SessionUsage>()
            .copied()
            .unwrap_or_default();
        match self
            .turn
            .first_reached(BudgetScope::Turn, turn.usage)
            .or_else(|| {
                self.session
                    .first_reached(BudgetScope::Session, session.usage)
            }) {
            Some(refusal) => Err(refusal),
            None => Ok(()),
        }
    }

    /// Adds the usage reported in this iteration to [`TurnUsage`] and [`SessionUsage`].
    ///
    /// # Errors
    ///
    /// A middleware state that cannot be written (a stored record of another version).
    pub fn record(&self, ctx: &mut DispatchContext) -> Result<Usage, BoxError> {
        let iteration = ctx.iteration();
        let recorded = ctx
            .middleware_state::<TurnUsage>()
            .and_then(|turn| turn.recorded_iteration);
        if recorded == Some(iteration) {
            return Ok(Usage::default());
        }
        let reported: Vec<Usage> = ctx
            .generation_stats()
            .iter()
            .filter_map(Usage::from_stats)
            .collect();
        let calls = u32::try_from(reported.len()).unwrap_or(u32::MAX);
        let spent = reported.into_iter().fold(Usage::default(), Usage::plus);
        if calls > 0 {
            ctx.update_middleware_state::<TurnUsage>(|turn| {
                turn.usage = turn.usage.plus(spent);
                turn.model_calls = turn.model_calls.saturating_add(calls);
                turn.recorded_iteration = Some(iteration);
            })?;
            ctx.update_middleware_state::<SessionUsage>(|session| {
                session.usage = session.usage.plus(spent);
                session.model_calls = session.model_calls.saturating_add(u64::from(calls));
            })?;
        }
        Ok(spent)
    }
}

impl Middleware<DispatchInput> for TokenBudget {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut DispatchContext,
        next: Next<'a, DispatchContext>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.check(ctx)?;
            if ctx.iteration() == 0 {
                // The iteration that acks ends the dispatch before `dispatch_output` runs: its
                // usage is recorded when the executor acks.
                let budget = *self;
                let _ = ctx.on_ack(move |ctx| {
                    if let Err(error) = budget.record(ctx) {
                        tracing::warn!(%error, "the token budget could not record the last model call's usage");
                    }
                });
            }
            let _ = next.run(ctx).await;
            Ok(())
        })
    }

    /// [`SessionUsage`] is persistent: a runner without a session store is refused when built.
    fn state_writes(&self, writes: &mut StateWrites) {
        session_usage_written(writes);
    }
}

impl Middleware<DispatchOutput> for TokenBudget {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut DispatchContext,
        next: Next<'a, DispatchContext>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.record(ctx)?;
            let _ = next.run(ctx).await;
            Ok(())
        })
    }

    /// [`SessionUsage`] is persistent: a runner without a session store is refused when built.
    fn state_writes(&self, writes: &mut StateWrites) {
        session_usage_written(writes);
    }
}

/// The write of [`SessionUsage`] both pipelines' middleware make, for the runner's build-time
/// check (`docs/state.md`, "Without a session store").
fn session_usage_written(writes: &mut StateWrites) {
    writes.middleware_state(
        std::any::type_name::<SessionUsage>(),
        SessionUsage::KEY,
        matches!(SessionUsage::PERSISTENCE, Persistence::Persistent(_)),
    );
}
