//! A turn's commit in one round trip: `BEGIN`, the checked writes and `COMMIT` sent together as
//! one pipeline on one connection, for the common case (the session exists and nothing the turn
//! writes went stale). Anything else (a new session, a stale key) is left to the locking
//! transaction in [`session`](super::session), which creates rows and names the stale keys.
//!
//! Why: the app's row (`app_states`) is one row that every turn writing an `app:` key locks,
//! and PostgreSQL holds a row lock until the transaction commits. The locking transaction takes
//! nine round trips, seven of them with the app's row locked, and between two round trips the
//! task waits for its turn on the runtime's workers: at 256 turns in flight, milliseconds. Here
//! the whole transaction is on the wire before the server starts it, and each write checks the
//! values the turn loaded in its own `WHERE` (right after locking its row, so it reads the row
//! as the last commit left it): the app's row stays locked only while the server runs the last
//! statements and flushes the commit.
//!
//! A check that fails must undo the writes before it, with `COMMIT` already sent. Each checked
//! write is therefore `WITH written AS (UPDATE … RETURNING 1) SELECT 1 / COUNT(*) FROM written`:
//! no row written (missing, or a value changed) divides by zero, which aborts the transaction,
//! so the statements after it are skipped and the `COMMIT` rolls it back. The caller then runs
//! the locking transaction. The turn's held assistant messages (`storage::held`) are inserted
//! in the same pipeline, checked the same way, so the turn's answer, state and events cost the
//! server one flush of its log. Writes go in the locking transaction's order (session, the
//! session's own rows, app, user), so the two kinds never wait for each other in a cycle.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use deadpool_postgres::Object;
use serde_json::{Map, Value};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Json, ToSql};

use crate::primitives::Message;
use crate::state::{
    MiddlewareStateWrite, RecordScope, SessionKey, SessionStoreError, StateChange, TurnCommit,
};
use crate::storage::{HeldWrite, StorageContext};

use super::error::failed;
use super::records::{Stored, to_json};
use super::scope::Scope;
use super::session_events::INSERT_EVENTS;

use super::checked_writes::{APP, LOCK_APP, LOCK_SESSION, LOCK_USER, SESSION, USER};

// A held assistant message (`storage::held`), checked as the writes are: an id already taken
// inserts no row, which aborts the transaction; the locking path then stores the message on
// its own, which reports the conflict as the adapter does.
const HELD_MESSAGE: &str = concat!(
    "WITH written AS (INSERT INTO adk_rs_messages ",
    "(app_name, user_id, session_id, thread_id, id, turn_id, record) ",
    "VALUES ($1, $2, $3, $4, $5, $6, $7) ",
    "ON CONFLICT (app_name, user_id, session_id, thread_id, id) DO NOTHING RETURNING 1) ",
    "SELECT 1 / COUNT(*) FROM written"
);

/// A held message's parameters: its scope, id, turn and record.
struct HeldRow {
    scope: Scope,
    id: String,
    turn: String,
    record: Json<Value>,
}

impl HeldRow {
    fn of(ctx: &StorageContext, message: &Message) -> Result<Self, SessionStoreError> {
        let id = message.key();
        let record = to_json(message, &id).map_err(SessionStoreError::backend)?;
        Ok(Self {
            scope: Scope::of(ctx),
            id,
            turn: ctx.turn_id().as_str().to_owned(),
            record: Json(record),
        })
    }
}

// A middleware-state record's writes, in the commit's transaction either way.
pub(super) const PUT_RECORD: &str = "INSERT INTO adk_rs_middleware_state
    (app_name, user_id, session_id, thread_id, record_key, version, record)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (app_name, user_id, session_id, thread_id, record_key)
    DO UPDATE SET version = EXCLUDED.version, record = EXCLUDED.record";
pub(super) const DELETE_RECORD: &str = "DELETE FROM adk_rs_middleware_state
    WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4
    AND record_key = $5";

/// The `thread_id` column of a record in `scope`: empty for the session's own records.
pub(super) fn thread_column(scope: &RecordScope) -> &str {
    match scope {
        RecordScope::Session => "",
        RecordScope::Thread(thread) => thread.as_str(),
    }
}

/// One scope's writes folded into what the statement takes: the last change of each key wins
/// (as [`StateWrite::apply_all`](crate::state::StateWrite::apply_all) applies them in order),
/// and every write's expected value is checked.
struct ScopeWrites {
    removed: Vec<String>,
    set: Map<String, Value>,
    names: Vec<String>,
    expected: Vec<Option<Json<Value>>>,
}

impl ScopeWrites {
    /// `None` when a write is a merge: a merge is applied to the value read under the row's
    /// lock, which the locking transaction does.
    fn of(writes: &[crate::state::StateWrite]) -> Option<Self> {
        let mut last: indexmap::IndexMap<&str, &StateChange> = indexmap::IndexMap::new();
        for write in writes {
            last.insert(write.name.as_str(), &write.change);
        }
        let mut removed = Vec::new();
        let mut set = Map::new();
        for (name, change) in last {
            match change {
                StateChange::Set(value) => {
                    set.insert(name.to_owned(), value.clone());
                }
                StateChange::Delete => removed.push(name.to_owned()),
                StateChange::Merge(_) => return None,
            }
        }
        Some(Self {
            removed,
            set,
            names: writes.iter().map(|write| write.name.clone()).collect(),
            expected: writes
                .iter()
                .map(|write| write.expected.clone().map(Json))
                .collect(),
        })
    }
}

/// A middleware-state write's parameters: its thread column, its key, and for a put its
/// version and record.
type RecordParams<'a> = (&'a str, &'a str, Option<i64>, Option<Json<&'a Value>>);

type Pending<'a> = Pin<Box<dyn Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>>;

/// Polls every future to its end, each first poll in the order given. A tokio-postgres call
/// puts its request on the connection on its first poll, so the requests go out in this order.
async fn in_order(mut pending: Vec<Pending<'_>>) -> Vec<Result<u64, tokio_postgres::Error>> {
    let mut results: Vec<Option<Result<u64, tokio_postgres::Error>>> =
        pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (future, result) in pending.iter_mut().zip(results.iter_mut()) {
            if result.is_some() {
                continue;
            }
            match future.as_mut().poll(cx) {
                Poll::Ready(outcome) => *result = Some(outcome),
                Poll::Pending => waiting = true,
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    pending.clear();
    results.into_iter().flatten().collect()
}

fn db(operation: &'static str) -> impl FnOnce(tokio_postgres::Error) -> SessionStoreError {
    let failed = failed(operation);
    move |source| SessionStoreError::backend(failed(source))
}

/// Commits `commit`, with the turn's `held` assistant messages, in one round trip if it can be
/// applied as it is: `Ok(true)` when it was committed, `Ok(false)` when nothing was applied
/// because the session is missing, a key it writes no longer holds the loaded value, a write
/// is a merge or a held message's id is taken (the caller runs the locking transaction, which
/// creates the session, reports the stale keys or applies the merges).
///
/// # Errors
///
/// [`SessionStoreError::Backend`] when a statement fails for any other reason; the transaction
/// was rolled back.
pub(super) async fn one_round_trip(
    client: &Object,
    key: &SessionKey,
    commit: &TurnCommit,
    held: &[HeldWrite],
) -> Result<bool, SessionStoreError> {
    let operation = "committing a turn";
    let (Some(session), Some(app), Some(user)) = (
        ScopeWrites::of(&commit.session),
        ScopeWrites::of(&commit.app),
        ScopeWrites::of(&commit.user),
    ) else {
        return Ok(false);
    };
    // Every statement is prepared before anything is sent: a statement still being prepared
    // would send its request after the `COMMIT`.
    let prepare =
        |sql: &'static str| async move { client.prepare_cached(sql).await.map_err(db(operation)) };
    let session_statements = (prepare(LOCK_SESSION).await?, prepare(SESSION).await?);
    let app_statements = if commit.app.is_empty() {
        None
    } else {
        Some((prepare(LOCK_APP).await?, prepare(APP).await?))
    };
    let user_statements = if commit.user.is_empty() {
        None
    } else {
        Some((prepare(LOCK_USER).await?, prepare(USER).await?))
    };
    let events_statement = if commit.events.is_empty() {
        None
    } else {
        Some(
            client
                .prepare_cached(INSERT_EVENTS)
                .await
                .map_err(db(operation))?,
        )
    };
    let held_statement = if held.is_empty() {
        None
    } else {
        Some(
            client
                .prepare_cached(HELD_MESSAGE)
                .await
                .map_err(db(operation))?,
        )
    };
    let held_rows = held
        .iter()
        .map(|write| HeldRow::of(&write.ctx, &write.message))
        .collect::<Result<Vec<_>, _>>()?;
    let mut record_statements = Vec::with_capacity(commit.middleware.len());
    for write in &commit.middleware {
        let sql = match write {
            MiddlewareStateWrite::Put(_) => PUT_RECORD,
            MiddlewareStateWrite::Delete { .. } => DELETE_RECORD,
        };
        record_statements.push(client.prepare_cached(sql).await.map_err(db(operation))?);
    }

    let (app_name, user_id, id) = (key.app.as_str(), key.user.as_str(), key.session.as_str());
    let session_set = Json(&session.set);
    let app_set = Json(&app.set);
    let user_set = Json(&user.set);
    let event_ids: Vec<&str> = commit
        .events
        .iter()
        .map(|event| event.id.as_str())
        .collect();
    let invocations: Vec<&str> = commit
        .events
        .iter()
        .map(|event| event.invocation_id.as_str())
        .collect();
    let micros: Vec<i64> = commit
        .events
        .iter()
        .map(|event| event.timestamp.as_microsecond())
        .collect();
    let event_data: Vec<Json<Value>> = commit
        .events
        .iter()
        .map(|event| Json(event.to_adk_json()))
        .collect();
    let records: Vec<RecordParams<'_>> = commit
        .middleware
        .iter()
        .map(|write| match write {
            MiddlewareStateWrite::Put(record) => (
                thread_column(&record.scope),
                record.key.as_str(),
                Some(i64::from(record.version)),
                Some(Json(&record.json)),
            ),
            MiddlewareStateWrite::Delete { scope, key } => {
                (thread_column(scope), key.as_str(), None, None)
            }
        })
        .collect();

    let session_params: [&(dyn ToSql + Sync); 7] = [
        &app_name,
        &user_id,
        &id,
        &session.removed,
        &session_set,
        &session.names,
        &session.expected,
    ];
    let events_params: [&(dyn ToSql + Sync); 7] = [
        &event_ids,
        &app_name,
        &user_id,
        &id,
        &invocations,
        &micros,
        &event_data,
    ];
    let record_params: Vec<Vec<&(dyn ToSql + Sync)>> = records
        .iter()
        .map(|(thread, record_key, version, json)| {
            let mut params: Vec<&(dyn ToSql + Sync)> =
                vec![&app_name, &user_id, &id, thread, record_key];
            if let (Some(version), Some(json)) = (version, json) {
                params.push(version);
                params.push(json);
            }
            params
        })
        .collect();
    let held_params: Vec<[&(dyn ToSql + Sync); 7]> = held_rows
        .iter()
        .map(|row| -> [&(dyn ToSql + Sync); 7] {
            [
                &row.scope.app,
                &row.scope.user,
                &row.scope.session,
                &row.scope.thread,
                &row.id,
                &row.turn,
                &row.record,
            ]
        })
        .collect();
    let app_params: [&(dyn ToSql + Sync); 5] =
        [&app_name, &app.removed, &app_set, &app.names, &app.expected];
    let user_params: [&(dyn ToSql + Sync); 6] = [
        &app_name,
        &user_id,
        &user.removed,
        &user_set,
        &user.names,
        &user.expected,
    ];
    // The pipeline, in the locking transaction's order: the session's row, its events, records
    // and held messages, then the app's and the user's rows.
    let mut pending: Vec<Pending<'_>> = Vec::with_capacity(9 + records.len() + held_params.len());
    pending.push(Box::pin(async {
        client.batch_execute("BEGIN").await.map(|()| 0)
    }));
    pending.push(Box::pin(
        client.execute(&session_statements.0, &session_params[..3]),
    ));
    pending.push(Box::pin(
        client.execute(&session_statements.1, &session_params),
    ));
    if let Some(statement) = &events_statement {
        pending.push(Box::pin(client.execute(statement, &events_params)));
    }
    for (statement, params) in record_statements.iter().zip(&record_params) {
        pending.push(Box::pin(client.execute(statement, params)));
    }
    if let Some(statement) = &held_statement {
        for params in &held_params {
            pending.push(Box::pin(client.execute(statement, params)));
        }
    }
    if let Some((lock, write)) = &app_statements {
        pending.push(Box::pin(client.execute(lock, &app_params[..1])));
        pending.push(Box::pin(client.execute(write, &app_params)));
    }
    if let Some((lock, write)) = &user_statements {
        pending.push(Box::pin(client.execute(lock, &user_params[..2])));
        pending.push(Box::pin(client.execute(write, &user_params)));
    }
    // After an error, PostgreSQL answers `COMMIT` by rolling back.
    pending.push(Box::pin(async {
        client.batch_execute("COMMIT").await.map(|()| 0)
    }));

    let results = in_order(pending).await;
    let mut refused = false;
    for result in results {
        match result {
            Ok(_) => {}
            // A checked write found no row to write: nothing was applied.
            Err(error) if error.code() == Some(&SqlState::DIVISION_BY_ZERO) => refused = true,
            // Skipped because an earlier statement failed.
            Err(error) if error.code() == Some(&SqlState::IN_FAILED_SQL_TRANSACTION) => {}
            Err(error) => return Err(db(operation)(error)),
        }
    }
    Ok(!refused)
}
