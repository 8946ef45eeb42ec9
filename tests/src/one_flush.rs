//! The executor both one-flush suites run (`tests/tests/sqlite_one_flush.rs` and
//! `postgres_one_flush.rs`): it stores an answer, counts its turn in session state, then
//! answers, fails, or reads its answer back and fails, so each suite can tell which
//! transaction wrote what.

use adk::context::DispatchContext;
use adk::dispatch::{Executor, executor_fn};
use adk::pipeline::BoxError;
use adk::primitives::Message;
use adk::storage::StorageAdapter;
use serde_json::json;

/// What the executor does after storing its answer and counting its turn.
#[derive(Clone, Copy, Debug)]
pub enum Then {
    /// Acknowledges: the turn completes.
    Answer,
    /// Fails: the turn's state is not committed.
    Fail,
    /// Reads the conversation's messages back through `reader` (they must include the answer,
    /// held or not), then fails.
    ReadBackAndFail,
}

/// How the executor names its answer.
#[derive(Clone, Copy, Debug)]
pub enum AnswerId {
    /// `m-<turn id>`: a new id each turn.
    PerTurn,
    /// `m-fixed`: the same id every turn.
    Fixed,
}

/// An executor that stores the assistant message "an answer" named by `id`, increments the
/// session key `turns`, then does `then`; `reader` is the storage it reads back through.
pub fn answering<S>(reader: S, id: AnswerId, then: Then) -> impl Executor
where
    S: StorageAdapter + Clone + Send + Sync + 'static,
{
    executor_fn(move |ctx: &mut DispatchContext| {
        let reader = reader.clone();
        Box::pin(async move {
            let id = match id {
                AnswerId::PerTurn => format!("m-{}", ctx.turn_id()),
                AnswerId::Fixed => "m-fixed".to_owned(),
            };
            ctx.store_message(Message::assistant(id.clone(), "an answer")?)
                .await?;
            let turns = ctx
                .state()
                .value("turns")
                .and_then(serde_json::Value::as_u64);
            ctx.state_mut()
                .set_value("turns", json!(turns.unwrap_or(0) + 1))?;
            if matches!(then, Then::ReadBackAndFail) {
                let stored = reader.fetch_messages(ctx.storage_context()).await?;
                if !stored.iter().any(|message| message.id() == id) {
                    return Err(format!("the turn's own answer {id} was not read back").into());
                }
            }
            if !matches!(then, Then::Answer) {
                return Err("the executor failed after answering".into());
            }
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}
