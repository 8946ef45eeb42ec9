//! The tool ledger in PostgreSQL (migration 5): one row per scope, turn and call id in
//! `adk_rs_tool_ledger`. The intent is one `INSERT .. ON CONFLICT DO NOTHING RETURNING`, and,
//! only when the call id was already there, a read of its row (a fresh statement, so it sees
//! the row another process committed); the result is one `UPDATE`, or, with the call's own
//! tool-call write, one statement updating both rows (one round trip, one transaction).

use std::sync::LazyLock;

use deadpool_postgres::Pool;

use crate::primitives::ToolCall;
use crate::storage::Primitive;
use crate::storage::ledger::{ToolIntent, ToolRecord, ToolResult};
use crate::storage::{StorageContext, StorageError};

use super::error::{backend, no_connection};
use super::records::{Stored, to_json};
use super::scope::Scope;

/// The ledger's table (migration 5). No foreign key to `sessions`: a ledger row outlives
/// nothing it needs, and a turn records intents before its session's first commit.
pub(super) const LEDGER_TABLE: &str = "
CREATE TABLE adk_rs_tool_ledger (
    app_name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    checksum TEXT NOT NULL,
    idempotency_key TEXT,
    effect TEXT NOT NULL,
    result_kind TEXT,
    result_text TEXT,
    PRIMARY KEY (app_name, user_id, session_id, thread_id, turn_id, call_id)
);
";

/// The `WHERE` clause naming one call's row, as a literal so the statements below are built by
/// `concat!` at compile time rather than formatted on every call.
macro_rules! matches_call {
    () => {
        "app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4 \
         AND turn_id = $5 AND call_id = $6"
    };
}

const SELECT_CALL: &str = concat!(
    "SELECT tool, checksum, idempotency_key, effect, result_kind, result_text \
     FROM adk_rs_tool_ledger WHERE ",
    matches_call!()
);

const SETTLE: &str = concat!(
    "UPDATE adk_rs_tool_ledger SET result_kind = $7, result_text = $8 WHERE ",
    matches_call!()
);

/// The result and the call's own tool-call write in one statement. It names the tool calls'
/// table through `ToolCall::TABLE`, which `concat!` cannot read, so it is formatted once per
/// process.
static SETTLE_WITH_CALL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH ledger AS (UPDATE adk_rs_tool_ledger SET result_kind = $7, result_text = $8 \
         WHERE {} RETURNING 1), \
         call AS (UPDATE {} SET record = $9, turn_id = $5 \
         WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4 \
         AND id = $6 RETURNING 1) \
         SELECT (SELECT count(*) FROM ledger), (SELECT count(*) FROM call)",
        matches_call!(),
        ToolCall::TABLE
    )
});

pub(super) async fn record_intent(
    pool: &Pool,
    ctx: &StorageContext,
    intent: ToolIntent,
) -> Result<Option<ToolRecord>, StorageError> {
    let scope = Scope::of(ctx);
    let turn_id = ctx.turn_id().as_str();
    let operation = || format!("recording the intent of tool call `{}`", intent.call_id);
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let insert = client
        .prepare_cached(
            "INSERT INTO adk_rs_tool_ledger (app_name, user_id, session_id, thread_id, turn_id, \
             call_id, tool, checksum, idempotency_key, effect) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT DO NOTHING RETURNING 1",
        )
        .await
        .map_err(backend(&operation))?;
    let inserted = client
        .query_opt(
            &insert,
            &[
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &turn_id,
                &intent.call_id,
                &intent.tool,
                &intent.checksum,
                &intent.key,
                &intent.effect.as_str(),
            ],
        )
        .await
        .map_err(backend(&operation))?;
    if inserted.is_some() {
        return Ok(None);
    }
    let select = client
        .prepare_cached(SELECT_CALL)
        .await
        .map_err(backend(&operation))?;
    let row = client
        .query_one(
            &select,
            &[
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &turn_id,
                &intent.call_id,
            ],
        )
        .await
        .map_err(backend(&operation))?;
    let effect: String = row.get(3);
    ToolRecord::from_row(
        &intent.call_id,
        row.get(0),
        row.get(1),
        row.get(2),
        &effect,
        row.get(4),
        row.get(5),
    )
    .map(Some)
}

pub(super) async fn record_result(
    pool: &Pool,
    ctx: &StorageContext,
    call_id: String,
    result: ToolResult,
) -> Result<(), StorageError> {
    let scope = Scope::of(ctx);
    let turn_id = ctx.turn_id().as_str();
    let operation = || format!("recording the result of tool call `{call_id}`");
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let update = client
        .prepare_cached(SETTLE)
        .await
        .map_err(backend(&operation))?;
    let (kind, text) = result.to_columns();
    let changed = client
        .execute(
            &update,
            &[
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &turn_id,
                &call_id,
                &kind,
                &text,
            ],
        )
        .await
        .map_err(backend(&operation))?;
    if changed == 0 {
        return Err(StorageError::backend(format!(
            "no tool intent is recorded for call {call_id:?} in this turn, so its result cannot \
             be recorded; record the intent first"
        )));
    }
    Ok(())
}

/// The call's result and its finished tool call in one statement, so one round trip and one
/// transaction: two data-modifying `WITH` clauses, the ledger row's `UPDATE` and the tool
/// call's. A tool call that is not found is `NotFound`, and the ledger result is committed all
/// the same (it is true: the handler returned it).
pub(super) async fn mutate_call_with_result(
    pool: &Pool,
    ctx: &StorageContext,
    tool_call: ToolCall,
    result: ToolResult,
) -> Result<(), StorageError> {
    let key = tool_call.key();
    let json = to_json(&tool_call, &key)?;
    let scope = Scope::of(ctx);
    let turn_id = ctx.turn_id().as_str();
    let operation = || format!("recording tool call `{key}` with its ledger result");
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let statement = client
        .prepare_cached(&SETTLE_WITH_CALL)
        .await
        .map_err(backend(&operation))?;
    let (kind, text) = result.to_columns();
    let row = client
        .query_one(
            &statement,
            &[
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &turn_id,
                &key,
                &kind,
                &text,
                &json,
            ],
        )
        .await
        .map_err(backend(&operation))?;
    let (ledger_rows, call_rows): (i64, i64) = (row.get(0), row.get(1));
    if call_rows == 0 {
        return Err(StorageError::NotFound {
            kind: Primitive::ToolCalls,
            id: key,
        });
    }
    if ledger_rows == 0 {
        return Err(StorageError::backend(format!(
            "no tool intent is recorded for call {key:?} in this turn, so its result cannot \
             be recorded; record the intent first"
        )));
    }
    Ok(())
}
