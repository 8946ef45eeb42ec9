//! The peers' turn workload, as adk runs it: shared by `benches/turn.rs` (the `peers/*` rows) and
//! the side-by-side bench in `benches/peers/` (which runs the same turn beside adk-rust and rig),
//! so both measure one piece of code.
//!
//! Per turn: a fresh `RawTurnContext` with a new session id and a user message; four
//! pass-through `#[middleware]`, one per pipeline; an executor (the mocked model) that answers at
//! once by storing one assistant message and acking. The storage is a `storage_adapter!` over a
//! `Mutex<HashMap>` keyed by session (the conversation's messages; the session is removed after
//! the turn, as the peers' rows delete theirs), or `NoopStorage`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, Next};
use adk::primitives::Message;
use adk::storage::NoopStorage;
use adk::{TurnRunner, middleware};

/// What the mocked model answers, and what the user says, in every turn of every row.
pub const ANSWER: &str = "Hello from the mocked model.";
/// The user's message of every turn.
pub const PROMPT: &str = "Hello, model.";
/// The system prompt (adk) and preamble (rig) / instruction (adk-rust).
pub const SYSTEM: &str = "You are a benchmark.";

#[middleware(pipeline = [turn_input, turn_output])]
async fn peers_pass_turn(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

#[middleware(pipeline = [dispatch_input, dispatch_output])]
async fn peers_pass_dispatch(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

adk::storage_adapter! {
    /// Each session's messages, in memory behind one lock.
    #[derive(Clone, Default)]
    pub struct InMemorySessions {
        sessions: Arc<Mutex<HashMap<String, Vec<Message>>>>,
    }

    impl {
        fetch_messages: async |ctx| Ok(self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(ctx.session_id().as_str())
            .cloned()
            .unwrap_or_default()),
        store_message: async |ctx, message| {
            self.sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(ctx.session_id().as_str().to_owned())
                .or_default()
                .push(message);
            Ok(())
        },
        ..noop
    }
}

impl InMemorySessions {
    /// Removes a finished session, so the map stays the same size from turn to turn; returns
    /// how many messages it held.
    pub fn remove(&self, session: &str) -> usize {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session)
            .map_or(0, |messages| messages.len())
    }
}

/// The runner of the workload over `storage`.
pub fn peers_runner<S>(storage: S) -> TurnRunner
where
    S: adk::storage::StorageAdapter + Clone + Send + Sync + 'static,
{
    TurnRunner::builder()
        .storage(storage)
        .turn_input(peers_pass_turn)
        .dispatch_input(peers_pass_dispatch)
        .dispatch_output(peers_pass_dispatch)
        .turn_output(peers_pass_turn)
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.store_message(Message::assistant("answer", ANSWER)?)
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

/// The two adk rows of the workload: the in-memory adapter and `NoopStorage`.
pub struct PeersWorkload {
    /// The adapter the first row stores into.
    pub sessions: InMemorySessions,
    /// Over `sessions`.
    pub in_memory: TurnRunner,
    /// Over `NoopStorage`.
    pub noop: TurnRunner,
}

impl PeersWorkload {
    /// Builds both runners.
    pub fn new() -> Self {
        let sessions = InMemorySessions::default();
        Self {
            in_memory: peers_runner(sessions.clone()),
            noop: peers_runner(NoopStorage::new()),
            sessions,
        }
    }

    /// One turn of session number `turn` over the in-memory adapter; the session is removed
    /// after it. Returns how many messages the session held (2: the user's and the answer).
    pub async fn turn_in_memory(&self, turn: u64) -> usize {
        let session = format!("session-{turn}");
        let outcome = self
            .in_memory
            .run(RawTurnContext::new(session.as_str(), SYSTEM).user_message(PROMPT))
            .await;
        assert!(
            matches!(&outcome, Ok(outcome) if outcome.is_completed()),
            "the peers' turn completes"
        );
        drop(outcome);
        self.sessions.remove(&session)
    }

    /// One turn of session number `turn` over `NoopStorage`.
    pub async fn turn_noop(&self, turn: u64) -> bool {
        let session = format!("session-{turn}");
        let outcome = self
            .noop
            .run(RawTurnContext::new(session, SYSTEM).user_message(PROMPT))
            .await;
        matches!(&outcome, Ok(outcome) if outcome.is_completed())
    }
}
