//! Durable approvals in PostgreSQL (migration 6): one row per scope and call id in
//! `adk_rs_tool_approvals`. A request is one `INSERT .. ON CONFLICT DO NOTHING RETURNING` and,
//! only when the call id was already there, a read of its row; an answer is one `UPDATE .. WHERE
//! decision IS NULL`, and a read when nothing changed.

use deadpool_postgres::Pool;

use crate::storage::approvals::{Answered, ApprovalRecord, ApprovalRequest};
use crate::storage::{StorageContext, StorageError};

use super::error::{backend, no_connection};
use super::scope::Scope;

/// The approvals' table (migration 6). No foreign key to `sessions`: a turn asks before its
/// session's first commit.
pub(super) const APPROVALS_TABLE: &str = "
CREATE TABLE adk_rs_tool_approvals (
    sequence BIGSERIAL,
    app_name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args JSONB NOT NULL,
    prompt TEXT NOT NULL,
    decision JSONB,
    PRIMARY KEY (app_name, user_id, session_id, thread_id, call_id)
);
";

const MATCHES: &str =
    "app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4 AND call_id = $5";

pub(super) async fn record_request(
    pool: &Pool,
    ctx: &StorageContext,
    request: ApprovalRequest,
) -> Result<Option<ApprovalRecord>, StorageError> {
    let scope = Scope::of(ctx);
    let operation = || {
        format!(
            "recording the approval request of call `{}`",
            request.call_id
        )
    };
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let insert = client
        .prepare_cached(
            "INSERT INTO adk_rs_tool_approvals (app_name, user_id, session_id, thread_id, \
             call_id, turn_id, tool, args, prompt) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
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
                &request.call_id,
                &request.turn_id,
                &request.tool,
                &request.args,
                &request.prompt,
            ],
        )
        .await
        .map_err(backend(&operation))?;
    if inserted.is_some() {
        return Ok(None);
    }
    select(&client, &scope, &request.call_id)
        .await
        .map_err(backend(&operation))
}

pub(super) async fn pending(
    pool: &Pool,
    ctx: &StorageContext,
) -> Result<Vec<ApprovalRequest>, StorageError> {
    let scope = Scope::of(ctx);
    let operation = || "listing the pending approvals".to_owned();
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let statement = client
        .prepare_cached(
            "SELECT call_id, turn_id, tool, args, prompt FROM adk_rs_tool_approvals \
             WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4 \
             AND decision IS NULL ORDER BY sequence",
        )
        .await
        .map_err(backend(&operation))?;
    let rows = client
        .query(
            &statement,
            &[&scope.app, &scope.user, &scope.session, &scope.thread],
        )
        .await
        .map_err(backend(&operation))?;
    Ok(rows
        .iter()
        .map(|row| {
            ApprovalRequest::new(
                row.get::<_, String>(0),
                row.get::<_, String>(2),
                row.get(3),
                row.get::<_, String>(4),
                row.get::<_, String>(1),
            )
        })
        .collect())
}

pub(super) async fn answer(
    pool: &Pool,
    ctx: &StorageContext,
    call_id: String,
    decision: serde_json::Value,
) -> Result<Answered, StorageError> {
    let scope = Scope::of(ctx);
    let operation = || format!("answering the approval request of call `{call_id}`");
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let update = client
        .prepare_cached(&format!(
            "UPDATE adk_rs_tool_approvals SET decision = $6 WHERE {MATCHES} AND decision IS NULL"
        ))
        .await
        .map_err(backend(&operation))?;
    let changed = client
        .execute(
            &update,
            &[
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &call_id,
                &decision,
            ],
        )
        .await
        .map_err(backend(&operation))?;
    if changed == 1 {
        return Ok(Answered::Recorded);
    }
    let existing = select(&client, &scope, &call_id)
        .await
        .map_err(backend(&operation))?;
    Ok(match existing.and_then(|record| record.decision) {
        Some(decision) => Answered::AlreadyAnswered(decision),
        None => Answered::NotFound,
    })
}

async fn select(
    client: &deadpool_postgres::Client,
    scope: &Scope,
    call_id: &str,
) -> Result<Option<ApprovalRecord>, tokio_postgres::Error> {
    let statement = client
        .prepare_cached(&format!(
            "SELECT turn_id, tool, args, prompt, decision FROM adk_rs_tool_approvals \
             WHERE {MATCHES}"
        ))
        .await?;
    let row = client
        .query_opt(
            &statement,
            &[
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &call_id,
            ],
        )
        .await?;
    Ok(row.map(|row| {
        ApprovalRecord::new(
            ApprovalRequest::new(
                call_id,
                row.get::<_, String>(1),
                row.get(2),
                row.get::<_, String>(3),
                row.get::<_, String>(0),
            ),
            row.get(4),
        )
    }))
}
