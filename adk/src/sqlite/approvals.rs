//! Durable approvals in SQLite (schema 5): one row per owner and call id in `tool_approvals`.
//! A request is one `INSERT .. ON CONFLICT DO NOTHING` and, only when the call id was already
//! there, a read of its row, in one transaction on the writer; an answer is one `UPDATE` of a
//! row without a decision, and a read when nothing changed.

use rusqlite::OptionalExtension;

use crate::storage::approvals::{Answered, ApprovalRecord, ApprovalRequest};
use crate::storage::{StorageContext, StorageError};

use super::error::backend;
use super::owner::{COLUMNS, MATCHES, Owner, owner_params};
use super::worker::Workers;

fn unreadable(call_id: &str, what: &str, error: serde_json::Error) -> StorageError {
    StorageError::backend(format!(
        "the approval of call {call_id:?} holds {what} that is not JSON ({error})"
    ))
}

pub(super) async fn record_request(
    workers: &Workers,
    ctx: &StorageContext,
    request: ApprovalRequest,
) -> Result<Option<ApprovalRecord>, StorageError> {
    let owner = Owner::of(ctx);
    let args = request.args.to_string();
    workers
        .writer
        .run(move |connection| {
            let operation = "recording an approval request";
            let transaction = connection.transaction().map_err(backend(operation))?;
            let inserted = transaction
                .prepare_cached(&format!(
                    "INSERT INTO tool_approvals ({COLUMNS}, call_id, turn_id, tool, args, prompt)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING"
                ))
                .and_then(|mut statement| {
                    statement.execute(owner_params!(
                        owner,
                        request.call_id,
                        request.turn_id,
                        request.tool,
                        args,
                        request.prompt
                    ))
                })
                .map_err(backend(operation))?;
            let existing = if inserted == 1 {
                None
            } else {
                select(&transaction, &owner, &request.call_id).map_err(backend(operation))?
            };
            transaction.commit().map_err(backend(operation))?;
            existing
                .map(|row| row.into_record(&request.call_id))
                .transpose()
        })
        .await
}

pub(super) async fn pending(
    workers: &Workers,
    ctx: &StorageContext,
) -> Result<Vec<ApprovalRequest>, StorageError> {
    let owner = Owner::of(ctx);
    workers
        .writer
        .run(move |connection| {
            let rows = connection
                .prepare_cached(&format!(
                    "SELECT call_id, turn_id, tool, args, prompt, decision FROM tool_approvals
                     WHERE {MATCHES} AND decision IS NULL ORDER BY sequence"
                ))
                .and_then(|mut statement| {
                    statement
                        .query_map(owner_params!(owner), |row| {
                            Ok((row.get::<_, String>(0)?, Row::read(row, 1)?))
                        })?
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(backend("listing the pending approvals"))?;
            rows.into_iter()
                .map(|(call_id, row)| row.into_record(&call_id).map(|record| record.request))
                .collect()
        })
        .await
}

pub(super) async fn answer(
    workers: &Workers,
    ctx: &StorageContext,
    call_id: String,
    decision: serde_json::Value,
) -> Result<Answered, StorageError> {
    let owner = Owner::of(ctx);
    let decision = decision.to_string();
    workers
        .writer
        .run(move |connection| {
            let operation = "answering an approval request";
            let transaction = connection.transaction().map_err(backend(operation))?;
            let changed = transaction
                .prepare_cached(&format!(
                    "UPDATE tool_approvals SET decision = ?6
                     WHERE {MATCHES} AND call_id = ?5 AND decision IS NULL"
                ))
                .and_then(|mut statement| {
                    statement.execute(owner_params!(owner, call_id, decision))
                })
                .map_err(backend(operation))?;
            let answered = if changed == 1 {
                Answered::Recorded
            } else {
                match select(&transaction, &owner, &call_id).map_err(backend(operation))? {
                    None => Answered::NotFound,
                    Some(row) => match row.into_record(&call_id)?.decision {
                        Some(decision) => Answered::AlreadyAnswered(decision),
                        None => Answered::NotFound,
                    },
                }
            };
            transaction.commit().map_err(backend(operation))?;
            Ok(answered)
        })
        .await
}

/// A row's columns after the call id: turn, tool, arguments, prompt, decision.
struct Row(String, String, String, String, Option<String>);

impl Row {
    fn read(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Self> {
        Ok(Self(
            row.get(first)?,
            row.get(first + 1)?,
            row.get(first + 2)?,
            row.get(first + 3)?,
            row.get(first + 4)?,
        ))
    }

    fn into_record(self, call_id: &str) -> Result<ApprovalRecord, StorageError> {
        let Self(turn_id, tool, args, prompt, decision) = self;
        let args =
            serde_json::from_str(&args).map_err(|error| unreadable(call_id, "arguments", error))?;
        let decision = decision
            .map(|decision| serde_json::from_str(&decision))
            .transpose()
            .map_err(|error| unreadable(call_id, "a decision", error))?;
        Ok(ApprovalRecord::new(
            ApprovalRequest::new(call_id, tool, args, prompt, turn_id),
            decision,
        ))
    }
}

fn select(
    connection: &rusqlite::Connection,
    owner: &Owner,
    call_id: &str,
) -> rusqlite::Result<Option<Row>> {
    connection
        .prepare_cached(&format!(
            "SELECT turn_id, tool, args, prompt, decision FROM tool_approvals
             WHERE {MATCHES} AND call_id = ?5"
        ))?
        .query_row(owner_params!(owner, call_id), |row| Row::read(row, 0))
        .optional()
}
