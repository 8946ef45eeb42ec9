//! The tool ledger: before a tool that is not read-only runs, an intent record (call id, tool,
//! argument checksum, idempotency key, effect) is written; after it, its result. When the same
//! call id runs again (a re-run after a crash), the record decides what happens:
//!
//! | record found | idempotent tool | at-most-once tool |
//! |---|---|---|
//! | none | runs | runs |
//! | intent and result | not run; the recorded result is used | not run; the recorded result is used |
//! | intent without result | runs again, under the recorded key | not run: [`OutcomeUnknown`] |
//!
//! A record belongs to the call id within its turn (and the turn's app, user, conversation and
//! thread): the same call id in another turn is another call. Read-only tools are never
//! recorded. The ledger is an optional part of the storage contract
//! ([`StorageAdapter::record_tool_intent`](super::StorageAdapter::record_tool_intent),
//! [`StorageAdapter::record_tool_result`](super::StorageAdapter::record_tool_result)): the
//! default keeps nothing, so every call runs, as it did before the ledger.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::Value;

use super::error::StorageError;
use crate::primitives::{EffectKind, Tool, ToolError, ToolInvocation, ToolOutput};

/// What is written before a tool that is not read-only runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolIntent {
    /// The call's id (the ledger's key, within the context's partition and turn).
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The call's checksum (tool name and canonical arguments).
    pub checksum: String,
    /// The idempotency key, for an idempotent tool.
    pub key: Option<String>,
    /// The tool's effect.
    pub effect: EffectKind,
}

impl ToolIntent {
    /// An intent for `call_id` of `tool`.
    pub fn new(
        call_id: impl Into<String>,
        tool: impl Into<String>,
        checksum: impl Into<String>,
        key: Option<String>,
        effect: EffectKind,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool: tool.into(),
            checksum: checksum.into(),
            key,
            effect,
        }
    }
}

/// How a recorded call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolResult {
    /// The handler returned text.
    Text(String),
    /// The handler returned an error (its message).
    Failed(String),
    /// The handler returned output that is not text (bytes, media, an artifact): the ledger
    /// records that it completed, not the output.
    Completed,
}

impl ToolResult {
    /// `"text"`, `"failed"` or `"completed"`, with the text (empty for `completed`): the two
    /// columns an SQL ledger stores.
    pub fn to_columns(&self) -> (&'static str, &str) {
        match self {
            Self::Text(text) => ("text", text),
            Self::Failed(message) => ("failed", message),
            Self::Completed => ("completed", ""),
        }
    }

    /// The inverse of [`to_columns`](Self::to_columns); `None` for an unknown kind.
    pub fn from_columns(kind: &str, text: String) -> Option<Self> {
        match kind {
            "text" => Some(Self::Text(text)),
            "failed" => Some(Self::Failed(text)),
            "completed" => Some(Self::Completed),
            _ => None,
        }
    }
}

/// A ledger record: the intent, and the result once written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolRecord {
    /// What was written before the call ran.
    pub intent: ToolIntent,
    /// How it ended; `None` when it never got that far (the process died, say).
    pub result: Option<ToolResult>,
}

impl ToolRecord {
    /// A record of `intent` with `result`.
    pub fn new(intent: ToolIntent, result: Option<ToolResult>) -> Self {
        Self { intent, result }
    }

    /// A ledger row as a record, for SQL adapters: the intent's columns, the effect as
    /// [`EffectKind::as_str`] wrote it, and the result as [`ToolResult::to_columns`] did
    /// (`None` before it is written). A row this code did not write (an unknown effect or
    /// result kind) is a backend error naming the call.
    #[allow(
        clippy::too_many_arguments,
        reason = "one argument per column of the row"
    )]
    pub fn from_row(
        call_id: &str,
        tool: String,
        checksum: String,
        key: Option<String>,
        effect: &str,
        kind: Option<String>,
        text: Option<String>,
    ) -> Result<ToolRecord, StorageError> {
        let unreadable = |what: &str| {
            StorageError::backend(format!(
                "the ledger row of call {call_id:?} holds {what}, which this version of adk did not \
                 write"
            ))
        };
        let effect = match effect {
            "read_only" => EffectKind::ReadOnly,
            "idempotent" => EffectKind::Idempotent,
            "at_most_once" => EffectKind::AtMostOnce,
            other => return Err(unreadable(&format!("the effect {other:?}"))),
        };
        let result = match kind {
            None => None,
            Some(kind) => Some(
                ToolResult::from_columns(&kind, text.unwrap_or_default())
                    .ok_or_else(|| unreadable(&format!("the result kind {kind:?}")))?,
            ),
        };
        Ok(ToolRecord::new(
            ToolIntent::new(call_id, tool, checksum, key, effect),
            result,
        ))
    }
}

/// An at-most-once tool's call whose intent was recorded but whose result was not: it may have
/// run, or not, and it is not run again. The model reads this as the call's result (the
/// executor reports the failed call); a program finds it with
/// `ToolExecutionError::outcome_unknown`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the outcome of this call of tool {tool:?} is unknown: it was started before (call id \
     {call_id:?}) and did not record a result, and it is at-most-once, so it is not run again; \
     check whether it took effect before calling it again"
)]
pub struct OutcomeUnknown {
    /// The tool.
    pub tool: String,
    /// The call's id.
    pub call_id: String,
}

/// Runs `tool`'s handler under the ledger rules (module docs): read-only tools run directly;
/// others write an intent first and the result after, and a call id already in the ledger is
/// settled by its record. A handler's panic is contained by the caller, so a result is written
/// only for a handler that returned.
pub(crate) async fn call_recorded(
    tool: &Tool,
    args: Value,
    invocation: ToolInvocation,
) -> Result<ToolOutput, ToolError> {
    let effect = tool.effect();
    if effect.is_read_only() {
        return tool.call(args, invocation).await;
    }
    let key = effect.key(tool.name(), invocation.call_id(), &args)?;
    let checksum = invocation.checksum().map_or_else(
        || {
            let empty = serde_json::Map::new();
            crate::primitives::tool_call_checksum(tool.name(), args.as_object().unwrap_or(&empty))
        },
        str::to_owned,
    );
    let intent = ToolIntent::new(
        invocation.call_id(),
        tool.name(),
        checksum,
        key.clone(),
        effect.kind(),
    );
    let storage = invocation.storage.clone();
    let ctx = invocation.storage_context.clone();
    let recorded = storage.record_tool_intent(&ctx, intent).await?;
    let mut invocation = invocation;
    match recorded {
        Some(ToolRecord {
            result: Some(result),
            ..
        }) => match result {
            ToolResult::Text(text) => return Ok(ToolOutput::Text(text)),
            ToolResult::Failed(message) => return Err(ToolError::new(message)),
            ToolResult::Completed if effect.kind() == EffectKind::AtMostOnce => {
                return Ok(ToolOutput::Text(format!(
                    "the call {:?} of tool {:?} completed earlier; its output was not text, so \
                     it was not recorded",
                    invocation.call_id(),
                    tool.name()
                )));
            }
            // An idempotent tool whose output was not recorded runs again, under its key.
            ToolResult::Completed => {}
        },
        Some(ToolRecord {
            intent,
            result: None,
        }) => {
            if effect.kind() == EffectKind::AtMostOnce {
                return Err(ToolError::from(OutcomeUnknown {
                    tool: tool.name().to_owned(),
                    call_id: invocation.call_id().to_owned(),
                }));
            }
            if let Some(key) = intent.key.or(key) {
                invocation = invocation.with_idempotency_key(key);
            }
        }
        None => {
            if let Some(key) = key {
                invocation = invocation.with_idempotency_key(key);
            }
        }
    }
    let call_id = invocation.call_id().to_owned();
    let defers = invocation.defers_ledger_result;
    // A panic unwinds past the result write, leaving the intent without a result, like a
    // crash; the caller contains it.
    let outcome = tool.call(args, invocation).await;
    let result = match &outcome {
        Ok(ToolOutput::Text(text)) => ToolResult::Text(text.clone()),
        Ok(_) => ToolResult::Completed,
        Err(error) => ToolResult::Failed(error.source().to_string()),
    };
    // A call made through `ctx.execute_tool` has a tool-call record its caller is about to
    // write: the result waits for that write and goes with it (`mutate_tool_call_with_result`),
    // or is written on its own when the executor returns without it.
    match ctx.pending_ledger_results() {
        Some(pending) if defers => {
            let (kind, text) = result.to_columns();
            pending.park(call_id, kind, text.to_owned());
        }
        _ => storage.record_tool_result(&ctx, call_id, result).await?,
    }
    outcome
}

/// Whether `ctx`'s turn has a parked result [`write_pending`] would write.
pub(crate) fn has_pending(ctx: &super::StorageContext) -> bool {
    ctx.pending_ledger_results()
        .is_some_and(|pending| !pending.is_empty())
}

/// Writes, each on its own, the ledger results still parked in `ctx` (calls whose tool-call
/// record was not mutated after they ran). The dispatch calls it when the executor returns.
pub(crate) async fn write_pending(
    storage: &super::SharedStorage,
    ctx: &super::StorageContext,
) -> Result<(), StorageError> {
    let Some(pending) = ctx.pending_ledger_results() else {
        return Ok(());
    };
    let mut first_error = None;
    for (call_id, kind, text) in pending.drain() {
        let Some(result) = ToolResult::from_columns(kind, text) else {
            continue;
        };
        if let Err(error) = storage.record_tool_result(ctx, call_id, result).await {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The parked ledger result of `call_id` in `ctx`'s turn, removed: it goes with the call's
/// tool-call write.
pub(crate) fn take_parked(ctx: &super::StorageContext, call_id: &str) -> Option<ToolResult> {
    let (kind, text) = ctx.pending_ledger_results()?.take(call_id)?;
    ToolResult::from_columns(kind, text)
}

/// How many records the in-memory ledger keeps before it forgets the oldest.
pub(super) const MEMORY_LEDGER_CAPACITY: usize = 10_000;

/// The in-memory ledger [`NoopStorage`](super::NoopStorage) keeps, per partition: at most
/// `capacity` records, the oldest forgotten first, so a long-lived value does not grow without
/// bound.
#[derive(Debug)]
pub(super) struct MemoryLedger {
    records: Mutex<Records>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Records {
    by_key: HashMap<String, ToolRecord>,
    oldest_first: VecDeque<String>,
}

impl Default for MemoryLedger {
    fn default() -> Self {
        Self::with_capacity(MEMORY_LEDGER_CAPACITY)
    }
}

impl MemoryLedger {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Self {
            records: Mutex::default(),
            capacity: capacity.max(1),
        }
    }

    pub(super) fn intent(
        &self,
        partition: String,
        intent: ToolIntent,
    ) -> Result<Option<ToolRecord>, StorageError> {
        let mut records = self.records.lock().map_err(|_| poisoned())?;
        if let Some(existing) = records.by_key.get(&partition) {
            return Ok(Some(existing.clone()));
        }
        if records.oldest_first.len() >= self.capacity
            && let Some(oldest) = records.oldest_first.pop_front()
        {
            records.by_key.remove(&oldest);
        }
        records.oldest_first.push_back(partition.clone());
        records
            .by_key
            .insert(partition, ToolRecord::new(intent, None));
        Ok(None)
    }

    pub(super) fn result(
        &self,
        partition: &str,
        call_id: &str,
        result: ToolResult,
    ) -> Result<(), StorageError> {
        let mut records = self.records.lock().map_err(|_| poisoned())?;
        match records.by_key.get_mut(partition) {
            Some(record) => {
                record.result = Some(result);
                Ok(())
            }
            None => Err(StorageError::backend(format!(
                "no tool intent is recorded for call {call_id:?}, so its result cannot be \
                 recorded; record the intent first"
            ))),
        }
    }
}

fn poisoned() -> StorageError {
    StorageError::backend("a previous ledger call panicked while holding the lock")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    fn intent(call_id: &str) -> ToolIntent {
        ToolIntent::new(call_id, "t", "sum", None, EffectKind::AtMostOnce)
    }

    #[test]
    fn the_memory_ledger_forgets_its_oldest_record_beyond_its_capacity() {
        let ledger = MemoryLedger::with_capacity(2);
        for call in ["a", "b", "c"] {
            assert_eq!(ledger.intent(call.to_owned(), intent(call)).unwrap(), None);
        }
        // "a" was forgotten; "b" and "c" are kept.
        assert!(
            ledger
                .intent("c".to_owned(), intent("c"))
                .unwrap()
                .is_some()
        );
        assert!(
            ledger
                .intent("b".to_owned(), intent("b"))
                .unwrap()
                .is_some()
        );
        assert_eq!(ledger.intent("a".to_owned(), intent("a")).unwrap(), None);
    }

    #[test]
    fn a_result_without_an_intent_is_refused() {
        let ledger = MemoryLedger::default();
        let error = ledger
            .result("k", "call-1", ToolResult::Completed)
            .unwrap_err();
        assert!(
            error.to_string().contains("record the intent first"),
            "{error}"
        );
    }
}
