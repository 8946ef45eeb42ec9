//! The tool ledger in SQLite (schema 4): one row per call id, turn and owner, in the
//! `tool_ledger` table. The intent is one `INSERT .. ON CONFLICT DO NOTHING` followed, only when
//! nothing was inserted, by a read of the existing row, in one transaction on the writer; the
//! result is one `UPDATE`, or, with the call's own tool-call write, two `UPDATE`s in one
//! transaction.

use rusqlite::OptionalExtension;

use crate::primitives::ToolCall;
use crate::storage::Primitive;
use crate::storage::StorageContext;
use crate::storage::StorageError;
use crate::storage::ledger::{ToolIntent, ToolRecord, ToolResult};

use super::error::backend;
use super::owner::{COLUMNS, MATCHES, Owner, owner_params};
use super::records::{Stored, serialize};
use super::worker::Workers;

pub(super) async fn record_intent(
    workers: &Workers,
    ctx: &StorageContext,
    intent: ToolIntent,
) -> Result<Option<ToolRecord>, StorageError> {
    let owner = Owner::of(ctx);
    let turn_id = ctx.turn_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| {
            let operation = "recording a tool intent";
            let transaction = connection.transaction().map_err(backend(operation))?;
            let inserted = transaction
                .prepare_cached(&format!(
                    "INSERT INTO tool_ledger ({COLUMNS}, turn_id, call_id, tool, checksum,
                         idempotency_key, effect)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING"
                ))
                .and_then(|mut statement| {
                    statement.execute(owner_params!(
                        owner,
                        turn_id,
                        intent.call_id,
                        intent.tool,
                        intent.checksum,
                        intent.key,
                        intent.effect.as_str()
                    ))
                })
                .map_err(backend(operation))?;
            let existing = if inserted == 1 {
                None
            } else {
                transaction
                    .prepare_cached(&format!(
                        "SELECT tool, checksum, idempotency_key, effect, result_kind, result_text
                         FROM tool_ledger WHERE {MATCHES} AND turn_id = ?5 AND call_id = ?6"
                    ))
                    .and_then(|mut statement| {
                        statement
                            .query_row(owner_params!(owner, turn_id, intent.call_id), |row| {
                                Ok((
                                    row.get::<_, String>(0)?,
                                    row.get::<_, String>(1)?,
                                    row.get::<_, Option<String>>(2)?,
                                    row.get::<_, String>(3)?,
                                    row.get::<_, Option<String>>(4)?,
                                    row.get::<_, Option<String>>(5)?,
                                ))
                            })
                            .optional()
                    })
                    .map_err(backend(operation))?
            };
            transaction.commit().map_err(backend(operation))?;
            existing
                .map(|(tool, checksum, key, effect, kind, text)| {
                    ToolRecord::from_row(&intent.call_id, tool, checksum, key, &effect, kind, text)
                })
                .transpose()
        })
        .await
}

pub(super) async fn record_result(
    workers: &Workers,
    ctx: &StorageContext,
    call_id: String,
    result: ToolResult,
) -> Result<(), StorageError> {
    let owner = Owner::of(ctx);
    let turn_id = ctx.turn_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| {
            let (kind, text) = result.to_columns();
            let changed = connection
                .prepare_cached(&format!(
                    "UPDATE tool_ledger SET result_kind = ?7, result_text = ?8
                     WHERE {MATCHES} AND turn_id = ?5 AND call_id = ?6"
                ))
                .and_then(|mut statement| {
                    statement.execute(owner_params!(owner, turn_id, call_id, kind, text))
                })
                .map_err(backend("recording a tool result"))?;
            if changed == 0 {
                return Err(StorageError::backend(format!(
                    "no tool intent is recorded for call {call_id:?} in this turn, so its result \
                     cannot be recorded; record the intent first"
                )));
            }
            Ok(())
        })
        .await
}

/// The call's result and its finished tool call in one writer transaction: the ledger row's
/// `UPDATE` and the tool call's. A tool call that is not found is `NotFound`, and the ledger
/// result is committed all the same (it is true: the handler returned it).
pub(super) async fn mutate_call_with_result(
    workers: &Workers,
    ctx: &StorageContext,
    tool_call: ToolCall,
    result: ToolResult,
) -> Result<(), StorageError> {
    let key = tool_call.key();
    let json = serialize(&tool_call, &key)?;
    let owner = Owner::of(ctx);
    let turn_id = ctx.turn_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| {
            let operation = "recording a tool call with its ledger result";
            let transaction = connection.transaction().map_err(backend(operation))?;
            let (kind, text) = result.to_columns();
            let ledger_rows = transaction
                .prepare_cached(&format!(
                    "UPDATE tool_ledger SET result_kind = ?7, result_text = ?8
                     WHERE {MATCHES} AND turn_id = ?5 AND call_id = ?6"
                ))
                .and_then(|mut statement| {
                    statement.execute(owner_params!(owner, turn_id, key, kind, text))
                })
                .map_err(backend(operation))?;
            // An UPDATE keeps the row's sequence, so the call keeps its place in fetch order.
            let call_rows = transaction
                .prepare_cached(&format!(
                    "UPDATE {} SET record = ?5, turn_id = ?6 WHERE {MATCHES} AND id = ?7",
                    ToolCall::TABLE
                ))
                .and_then(|mut statement| {
                    statement.execute(owner_params!(owner, json, turn_id, key))
                })
                .map_err(backend(operation))?;
            transaction.commit().map_err(backend(operation))?;
            if call_rows == 0 {
                return Err(StorageError::NotFound {
                    kind: Primitive::ToolCalls,
                    id: key,
                });
            }
            if ledger_rows == 0 {
                return Err(StorageError::backend(format!(
                    "no tool intent is recorded for call {key:?} in this turn, so its result \
                     cannot be recorded; record the intent first"
                )));
            }
            Ok(())
        })
        .await
}
