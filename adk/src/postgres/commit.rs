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
//! values the turn loaded in its own `WHERE` (the write locks its row as it reads it, so it reads
//! the row as the last commit left it): the app's row stays locked only while the server runs the last
//! statements and flushes the commit.
//!
//! A check that fails must undo the writes before it, with `COMMIT` already sent. Each checked
//! write is therefore `WITH written AS (UPDATE … RETURNING 1) SELECT 1 / COUNT(*) FROM written`:
//! no row written (missing, or a value changed) divides by zero, which aborts the transaction,
//! so the statements after it are skipped and the `COMMIT` rolls it back. The caller then runs
//! the locking transaction. The turn's held assistant messages (`storage::held`) are inserted
//! in the same pipeline, checked the same way, so the turn's answer, state and events cost the
//! server one flush of its log. Writes go in the locking transaction's order (session, the
//! session's own rows, app, user), so the two kinds never wait for each other in a cycle. In a
//! group of several turns (`group.rs`), their session rows go in one statement when no two are
//! of one session, and their user rows in another (`group_rows.rs`); their events go in one
//! statement and their held messages in another, after every session's row. The app's write
//! answers with what the store needs to keep the document it wrote (`app_cache.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::Poll;

use deadpool_postgres::Object;
use serde_json::Value;
use tokio_postgres::Statement;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Json, ToSql};

use crate::primitives::Message;
use crate::state::AdkEventJson;
use crate::state::{MiddlewareStateWrite, RecordScope, SessionKey, SessionStoreError, TurnCommit};
use crate::storage::{HeldWrite, StorageContext};

use super::error::failed;
use super::records::{JsonText, Stored, to_json};
use super::scope::Scope;
use super::session_events::INSERT_EVENTS;

use super::app_cache::{AppCache, Versioned, apply_written, object};
use super::checked_writes::{APP_KEPT, GROUP_SESSIONS, GROUP_USERS, SESSION, USER};
use super::group_rows::GroupRows;
use super::scope_writes::{ScopeWrites, folded};

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

// A group's held messages in one statement, checked as one: every message is inserted, or the
// transaction aborts (a taken id, also one taken by another turn of the group, inserts no row
// for it, and the count falls short). Whose id was taken is not known: the group is then sent
// again unfolded. `$8`: how many messages.
const GROUP_HELD: &str = concat!(
    "WITH written AS (INSERT INTO adk_rs_messages ",
    "(app_name, user_id, session_id, thread_id, id, turn_id, record) ",
    "SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], ",
    "$6::TEXT[], $7::JSONB[]) ",
    "ON CONFLICT (app_name, user_id, session_id, thread_id, id) DO NOTHING RETURNING 1) ",
    "SELECT 1 / (COUNT(*) = $8::BIGINT)::INT FROM written"
);

// A group's events in one statement, each row with its own session.
const GROUP_EVENTS: &str = "INSERT INTO events (id, app_name, user_id, session_id, \
     invocation_id, timestamp, event_data) \
     SELECT e.id, e.app_name, e.user_id, e.session_id, e.invocation_id, \
     TIMESTAMP 'epoch' + e.micros * INTERVAL '1 microsecond', e.data \
     FROM UNNEST($1::VARCHAR[], $2::VARCHAR[], $3::VARCHAR[], $4::VARCHAR[], $5::VARCHAR[], \
     $6::BIGINT[], $7::JSONB[]) AS e(id, app_name, user_id, session_id, invocation_id, micros, data)";

/// A held message's parameters: its scope, id, turn and record.
struct HeldRow {
    scope: Scope,
    id: String,
    turn: String,
    record: JsonText,
}

impl HeldRow {
    fn of(ctx: &StorageContext, message: &Message) -> Result<Self, SessionStoreError> {
        let id = message.key();
        let record = to_json(message, &id).map_err(SessionStoreError::backend)?;
        Ok(Self {
            scope: Scope::of(ctx),
            id,
            turn: ctx.turn_id().as_str().to_owned(),
            record,
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

/// A middleware-state write's parameters: its thread column, its key, and for a put its
/// version and record.
type RecordParams<'a> = (&'a str, &'a str, Option<i64>, Option<Json<&'a Value>>);

type Pending<'a> = Pin<Box<dyn Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>>;

/// Polls every future to its end, each first poll in the order given. A tokio-postgres call
/// puts its request on the connection on its first poll, so the requests go out in this order.
/// The server answers in order, so after the first round only the oldest unfinished future is
/// polled: a group's hundreds of requests cost each one poll more, not one per answer.
async fn in_order(mut pending: Vec<Pending<'_>>) -> Vec<Result<u64, tokio_postgres::Error>> {
    let mut results: Vec<Option<Result<u64, tokio_postgres::Error>>> =
        pending.iter().map(|_| None).collect();
    let mut sent = false;
    let mut first = 0;
    std::future::poll_fn(|cx| {
        if !sent {
            sent = true;
            for (future, result) in pending.iter_mut().zip(results.iter_mut()) {
                if let Poll::Ready(outcome) = future.as_mut().poll(cx) {
                    *result = Some(outcome);
                }
            }
        }
        while let Some(result) = results.get_mut(first) {
            if result.is_none() {
                match pending[first].as_mut().poll(cx) {
                    Poll::Ready(outcome) => *result = Some(outcome),
                    // Its answer wakes this task; the later ones come after it.
                    Poll::Pending => return Poll::Pending,
                }
            }
            first += 1;
        }
        Poll::Ready(())
    })
    .await;
    pending.clear();
    results.into_iter().flatten().collect()
}

fn db(operation: &'static str) -> impl FnOnce(tokio_postgres::Error) -> SessionStoreError {
    let failed = failed(operation);
    move |source| SessionStoreError::backend(failed(source))
}

const OPERATION: &str = "committing a turn";

/// One turn of a group commit: its session, its commit and its held assistant messages.
pub(super) struct Turn<'a> {
    pub(super) key: &'a SessionKey,
    pub(super) commit: &'a TurnCommit,
    pub(super) held: &'a [HeldWrite],
}

/// What became of a group sent by [`send`].
pub(super) enum Sent {
    /// Every turn was committed, in one transaction.
    Committed,
    /// Nothing was applied: the turn at this index was refused by a check (its session is
    /// missing, a key it writes went stale, a held message's id is taken) or cannot be sent
    /// this way (a merge the value it loaded cannot take). The others may be sent again
    /// without it.
    Refused(usize),
    /// Nothing was applied: a statement carrying several turns' writes (folded) failed its
    /// check, or failed for a reason of one of its turns. Sent again without folding, the
    /// failing turn is named.
    RefusedShared,
    /// Nothing was applied: the turn at this index failed on its own (its statement failed,
    /// or its held message could not be serialized). The others may be sent again without it.
    Failed(usize, SessionStoreError),
    /// Nothing was applied, and the failure is no one turn's (a statement was cancelled, a
    /// deadlock was broken, a statement failed to prepare): each turn may be sent on its own.
    RolledBack(tokio_postgres::Error),
    /// The connection failed before the server answered the `COMMIT`: whether the group was
    /// applied is not known.
    Unknown(tokio_postgres::Error),
}

/// A turn's parameters, owned or borrowed from the turn.
struct Planned<'a> {
    app_name: &'a str,
    user_id: &'a str,
    id: &'a str,
    session: ScopeWrites,
    /// Whether the turn writes app / user keys.
    app: bool,
    user: bool,
    event_ids: Vec<&'a str>,
    invocations: Vec<&'a str>,
    micros: Vec<i64>,
    event_data: Vec<Json<AdkEventJson<'a>>>,
    records: Vec<RecordParams<'a>>,
    held: Vec<HeldRow>,
}

impl<'a> Planned<'a> {
    /// `Ok(None)` when a session merge cannot be applied to the value the turn loaded.
    fn of(turn: &Turn<'a>) -> Result<Option<Self>, SessionStoreError> {
        let (commit, key) = (turn.commit, turn.key);
        let Some(session) = ScopeWrites::of(&commit.session) else {
            return Ok(None);
        };
        let held = turn
            .held
            .iter()
            .map(|write| HeldRow::of(&write.ctx, &write.message))
            .collect::<Result<Vec<_>, _>>()?;
        let events = &commit.events;
        Ok(Some(Self {
            app_name: key.app.as_str(),
            user_id: key.user.as_str(),
            id: key.session.as_str(),
            session,
            app: !commit.app.is_empty(),
            user: !commit.user.is_empty(),
            event_ids: events.iter().map(|event| event.id.as_str()).collect(),
            invocations: events
                .iter()
                .map(|event| event.invocation_id.as_str())
                .collect(),
            micros: events
                .iter()
                .map(|event| event.timestamp.as_microsecond())
                .collect(),
            event_data: events.iter().map(|event| Json(event.adk_json())).collect(),
            records: commit
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
                .collect(),
            held,
        }))
    }
}

/// The statements a group needs, each prepared on the connection before anything is sent (a
/// statement still being prepared would send its request after the `COMMIT`).
struct Statements {
    session: Statement,
    app: Option<Statement>,
    user: Option<Statement>,
    events: Option<Statement>,
    held: Option<Statement>,
    /// Several turns' events, or held messages, in one statement ([`Folded`]).
    group_events: Option<Statement>,
    group_held: Option<Statement>,
    /// Several session rows, or user rows, in one statement (`group_rows.rs`).
    group_sessions: Option<Statement>,
    group_users: Option<Statement>,
    put: Option<Statement>,
    delete: Option<Statement>,
}

impl Statements {
    async fn prepare(
        client: &Object,
        turns: &[Planned<'_>],
        folded: &Folded<'_>,
    ) -> Result<Self, tokio_postgres::Error> {
        let any = |test: fn(&Planned<'_>) -> bool| turns.iter().any(test);
        let prepare = |sql: &'static str| client.prepare_cached(sql);
        let maybe = |wanted: bool, sql: &'static str| async move {
            if wanted {
                Ok(Some(client.prepare_cached(sql).await?))
            } else {
                Ok::<_, tokio_postgres::Error>(None)
            }
        };
        Ok(Self {
            session: prepare(SESSION).await?,
            events: maybe(
                !folded.events && any(|turn| !turn.event_ids.is_empty()),
                INSERT_EVENTS,
            )
            .await?,
            group_events: maybe(folded.events, GROUP_EVENTS).await?,
            group_held: maybe(folded.held, GROUP_HELD).await?,
            group_sessions: maybe(folded.sessions, GROUP_SESSIONS).await?,
            group_users: maybe(folded.users, GROUP_USERS).await?,
            put: maybe(
                any(|turn| turn.records.iter().any(|record| record.2.is_some())),
                PUT_RECORD,
            )
            .await?,
            delete: maybe(
                any(|turn| turn.records.iter().any(|record| record.2.is_none())),
                DELETE_RECORD,
            )
            .await?,
            held: maybe(
                !folded.held && any(|turn| !turn.held.is_empty()),
                HELD_MESSAGE,
            )
            .await?,
            app: maybe(any(|turn| turn.app), APP_KEPT).await?,
            user: maybe(!folded.users && any(|turn| turn.user), USER).await?,
        })
    }
}

/// A group's events and held messages as the folded statements take them: one array a
/// column, a row per event or message, when more than one turn has some (and the group is
/// sent folded); otherwise each turn's go in statements of its own, in its session's phase.
/// Also whether the session rows and the user rows go in one statement each.
#[derive(Default)]
struct Folded<'a> {
    events: bool,
    event_columns: [Vec<&'a str>; 5],
    micros: Vec<i64>,
    event_data: Vec<Json<AdkEventJson<'a>>>,
    held: bool,
    held_columns: [Vec<&'a str>; 6],
    /// Whether every session's row is written by one statement (every turn of a different
    /// session; two commits of one session are two statements, in order), and every user's row.
    sessions: bool,
    users: bool,
    records: Vec<&'a JsonText>,
    held_count: i64,
}

impl<'a> Folded<'a> {
    fn of(turns: &'a [Planned<'a>], fold: bool) -> Self {
        let several =
            |test: fn(&Planned<'_>) -> bool| turns.iter().filter(|turn| test(turn)).count() > 1;
        let mut folded = Self {
            events: fold && several(|turn| !turn.event_ids.is_empty()),
            held: fold && several(|turn| !turn.held.is_empty()),
            ..Self::default()
        };
        for turn in turns {
            if folded.events {
                let events = turn
                    .event_ids
                    .iter()
                    .zip(&turn.invocations)
                    .zip(&turn.micros)
                    .zip(&turn.event_data);
                for (((id, invocation), micros), data) in events {
                    let row = [*id, turn.app_name, turn.user_id, turn.id, *invocation];
                    for (column, value) in folded.event_columns.iter_mut().zip(row) {
                        column.push(value);
                    }
                    folded.micros.push(*micros);
                    folded.event_data.push(Json(data.0));
                }
            }
            if folded.held {
                for held in &turn.held {
                    let row = [
                        &held.scope.app,
                        &held.scope.user,
                        &held.scope.session,
                        &held.scope.thread,
                        &held.id,
                        &held.turn,
                    ];
                    for (column, value) in folded.held_columns.iter_mut().zip(row) {
                        column.push(value.as_str());
                    }
                    folded.records.push(&held.record);
                    folded.held_count += 1;
                }
            }
        }
        folded
    }
}

/// The session a turn commits to: its row's key.
fn session_key<'a>(turn: &Planned<'a>) -> (&'a str, &'a str, &'a str) {
    (turn.app_name, turn.user_id, turn.id)
}

/// `0..turns.len()` ordered by `key`, turns with equal keys in the order given.
fn ordered<'a, K: Ord>(
    turns: &[Planned<'a>],
    key: impl Fn(&Planned<'a>) -> Option<K>,
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..turns.len())
        .filter(|&index| key(&turns[index]).is_some())
        .collect();
    order.sort_by_key(|&index| key(&turns[index]));
    order
}

/// The owner of a statement that carries several turns' writes to one row.
const SHARED: usize = usize::MAX;

/// One row's write in a group: the row's key, the writes, and the turn they are from
/// ([`SHARED`]: several turns' writes folded into one).
struct RowWrite<K> {
    key: K,
    writes: ScopeWrites,
    owner: usize,
}

/// The writes of one scope (app or user rows), rows in key order and each row's writes in the
/// turns' order. With `fold`, the writes of several turns to one row are folded into one
/// statement (see [`folded`]): a group of 64 turns rewrites the app's row once, not 64 times.
/// `Err(turn)`: that turn cannot be sent (a merge its loaded value cannot take, or a check
/// that fails against the write of a turn before it in the group).
fn row_writes<'a, K: Ord + Copy>(
    planned: &[Planned<'a>],
    key: impl Fn(&Planned<'a>) -> Option<K>,
    scope: impl Fn(usize) -> &'a [crate::state::StateWrite],
    fold: bool,
) -> Result<Vec<RowWrite<K>>, usize> {
    let order = ordered(planned, &key);
    let mut rows = Vec::new();
    for same_row in order.chunk_by(|&a, &b| key(&planned[a]) == key(&planned[b])) {
        let Some(row) = same_row.first().and_then(|&index| key(&planned[index])) else {
            continue;
        };
        if fold && same_row.len() > 1 {
            let writes = folded(same_row.iter().map(|&index| (index, scope(index))))?;
            rows.push(RowWrite {
                key: row,
                writes,
                owner: SHARED,
            });
        } else {
            for &index in same_row {
                let writes = ScopeWrites::of(scope(index)).ok_or(index)?;
                rows.push(RowWrite {
                    key: row,
                    writes,
                    owner: index,
                });
            }
        }
    }
    Ok(rows)
}

/// Sends `turns` as one transaction on `client`: `BEGIN`, each turn's checked writes, and
/// `COMMIT`, in one round trip. Every turn is committed, or none.
///
/// The writes go in the locking transaction's order, phase by phase: every session's row
/// (sessions ordered by key), with its events, records and held messages; then every app's
/// row, then every user's, each ordered by key. Two transactions that lock rows in this order
/// never wait for each other in a cycle, whatever turns they carry. Writes to one row keep
/// the order of `turns`, so two commits of one session apply as if sent one after the other.
/// With `fold`, several turns' writes to one app or user row are one statement ([`folded`]),
/// and so are their events and their held messages ([`Folded`], sent after every session's
/// row); the rows of different sessions are one statement when no two turns are of one
/// session, and the rows of different users another ([`GroupRows`]). When such a statement is
/// refused, [`Sent::RefusedShared`] asks for the group again unfolded.
pub(super) async fn send(
    client: &Object,
    apps: &AppCache,
    turns: &[Turn<'_>],
    coalesce: bool,
) -> Sent {
    let mut planned = Vec::with_capacity(turns.len());
    for (index, turn) in turns.iter().enumerate() {
        match Planned::of(turn) {
            Ok(Some(turn)) => planned.push(turn),
            Ok(None) => return Sent::Refused(index),
            Err(error) => return Sent::Failed(index, error),
        }
    }
    let app_rows = row_writes(
        &planned,
        |turn| turn.app.then_some(turn.app_name),
        |index| &turns[index].commit.app,
        coalesce,
    );
    let user_rows = row_writes(
        &planned,
        |turn| turn.user.then_some((turn.app_name, turn.user_id)),
        |index| &turns[index].commit.user,
        coalesce,
    );
    let (app_rows, user_rows) = match (app_rows, user_rows) {
        (Ok(app), Ok(user)) => (app, user),
        (Err(index), _) | (_, Err(index)) => return Sent::Refused(index),
    };
    // Sessions in key order: the order their rows are written and locked in.
    let sessions = ordered(&planned, |turn| Some(session_key(turn)));
    let mut folded = Folded::of(&planned, coalesce);
    // One statement for the session rows only when no two turns are of one session (in key
    // order, such turns are neighbours); with `coalesce`, writes to one user's row are folded
    // into one already, so the user rows are distinct.
    folded.sessions = coalesce
        && sessions.len() > 1
        && sessions
            .windows(2)
            .all(|pair| session_key(&planned[pair[0]]) != session_key(&planned[pair[1]]));
    folded.users = coalesce && user_rows.len() > 1;
    let statements = match Statements::prepare(client, &planned, &folded).await {
        Ok(statements) => statements,
        // Nothing was sent yet.
        Err(error) => return Sent::RolledBack(error),
    };
    let statements = &statements;
    // What each app row's write answered: the version and document it wrote.
    let written: Vec<OnceLock<Versioned>> = app_rows.iter().map(|_| OnceLock::new()).collect();
    // The version and document of each app row the store holds, which its write is sent against.
    let before: Vec<Option<Versioned>> = app_rows.iter().map(|row| apps.kept(row.key)).collect();

    // Several rows in one statement each (`group_rows.rs`).
    let group_sessions = statements.group_sessions.as_ref().map(|statement| {
        let mut rows = GroupRows::with_capacity(sessions.len());
        for &index in &sessions {
            let turn = &planned[index];
            rows.push([turn.app_name, turn.user_id, turn.id], &turn.session);
        }
        (statement, rows)
    });
    let group_users = statements.group_users.as_ref().map(|statement| {
        let mut rows = GroupRows::with_capacity(user_rows.len());
        for row in &user_rows {
            rows.push([row.key.0, row.key.1], &row.writes);
        }
        (statement, rows)
    });

    // Each request and the turn it belongs to (`None`: the group's `BEGIN` and `COMMIT`).
    let mut pending: Vec<Pending<'_>> = Vec::new();
    let mut owners: Vec<Option<usize>> = Vec::new();
    macro_rules! push {
        ($owner:expr, $request:expr $(,)?) => {{
            let request: Pending<'_> = $request;
            pending.push(request);
            owners.push($owner);
        }};
    }
    push!(
        None,
        Box::pin(async { client.batch_execute("BEGIN").await.map(|()| 0) }),
    );
    // Each checked write locks its row itself (`checked_writes`).
    if let Some((statement, rows)) = &group_sessions {
        push!(
            Some(SHARED),
            Box::pin(client.execute_raw(*statement, rows.params()))
        );
    }
    for index in sessions {
        let turn = &planned[index];
        let row = (&turn.app_name, &turn.user_id, &turn.id);
        if group_sessions.is_none() {
            let session = &turn.session;
            let params: [&(dyn ToSql + Sync); 7] = [
                row.0,
                row.1,
                row.2,
                &session.removed,
                &session.set,
                &session.names,
                &session.expected,
            ];
            push!(
                Some(index),
                Box::pin(client.execute_raw(&statements.session, params))
            );
        }
        if let (Some(statement), false) = (&statements.events, turn.event_ids.is_empty()) {
            let params: [&(dyn ToSql + Sync); 7] = [
                &turn.event_ids,
                row.0,
                row.1,
                row.2,
                &turn.invocations,
                &turn.micros,
                &turn.event_data,
            ];
            push!(Some(index), Box::pin(client.execute_raw(statement, params)));
        }
        for (thread, record_key, version, json) in &turn.records {
            let mut params: Vec<&(dyn ToSql + Sync)> =
                vec![row.0, row.1, row.2, thread, record_key];
            let statement = if let (Some(version), Some(json)) = (version, json) {
                params.push(version);
                params.push(json);
                &statements.put
            } else {
                &statements.delete
            };
            if let Some(statement) = statement {
                push!(Some(index), Box::pin(client.execute_raw(statement, params)));
            }
        }
        if let Some(statement) = &statements.held {
            for held in &turn.held {
                let params: [&(dyn ToSql + Sync); 7] = [
                    &held.scope.app,
                    &held.scope.user,
                    &held.scope.session,
                    &held.scope.thread,
                    &held.id,
                    &held.turn,
                    &held.record,
                ];
                push!(Some(index), Box::pin(client.execute_raw(statement, params)));
            }
        }
    }
    // The group's events and held messages, folded, after every session's row is locked (the
    // events' foreign key checks those rows).
    if let Some(statement) = &statements.group_events {
        let [ids, apps, users, sessions, invocations] = &folded.event_columns;
        let params: [&(dyn ToSql + Sync); 7] = [
            ids,
            apps,
            users,
            sessions,
            invocations,
            &folded.micros,
            &folded.event_data,
        ];
        push!(
            Some(SHARED),
            Box::pin(client.execute_raw(statement, params))
        );
    }
    if let Some(statement) = &statements.group_held {
        let [apps, users, sessions, threads, ids, turns] = &folded.held_columns;
        let params: [&(dyn ToSql + Sync); 8] = [
            apps,
            users,
            sessions,
            threads,
            ids,
            turns,
            &folded.records,
            &folded.held_count,
        ];
        push!(
            Some(SHARED),
            Box::pin(client.execute_raw(statement, params))
        );
    }
    if let Some(write) = &statements.app {
        for ((row, written), before) in app_rows.iter().zip(&written).zip(&before) {
            let app = &row.writes;
            push!(
                Some(row.owner),
                Box::pin(async move {
                    let version = before.as_ref().map(|(version, _)| version.as_str());
                    let params: [&(dyn ToSql + Sync); 6] = [
                        &row.key,
                        &app.removed,
                        &app.set,
                        &app.names,
                        &app.expected,
                        &version,
                    ];
                    let answer = client.query_one(write, &params).await?;
                    if let Some(document) = written_document(&answer, before, &app.removed) {
                        let _ = written.set(document);
                    }
                    Ok::<u64, tokio_postgres::Error>(1)
                })
            );
        }
    }
    if let Some((statement, rows)) = &group_users {
        push!(
            Some(SHARED),
            Box::pin(client.execute_raw(*statement, rows.params()))
        );
    }
    if let Some(write) = &statements.user {
        for row in &user_rows {
            let user = &row.writes;
            let params: [&(dyn ToSql + Sync); 6] = [
                &row.key.0,
                &row.key.1,
                &user.removed,
                &user.set,
                &user.names,
                &user.expected,
            ];
            push!(Some(row.owner), Box::pin(client.execute_raw(write, params)));
        }
    }
    // After an error, PostgreSQL answers `COMMIT` by rolling back.
    push!(
        None,
        Box::pin(async { client.batch_execute("COMMIT").await.map(|()| 0) }),
    );

    let results = in_order(pending).await;
    let sent = outcome(results, &owners);
    if matches!(sent, Sent::Committed) {
        keep_written(apps, &app_rows, written);
    }
    sent
}

/// The version and document `checked_writes::APP_KEPT` answered with: the written keys applied
/// to the document the write was sent against (`before`), or the whole new document. `None`
/// when the answer is not one (not an object, say): that document is not kept, and the next
/// load reads the row.
fn written_document(
    answer: &tokio_postgres::Row,
    before: &Option<Versioned>,
    removed: &[String],
) -> Option<Versioned> {
    let version: String = answer.try_get(1).ok().flatten()?;
    let state: Value = answer.try_get(2).ok().flatten()?;
    let applied: bool = answer.try_get(3).ok().flatten()?;
    let state = object(state).ok()?;
    let document = match before {
        Some((_, before)) if applied => apply_written(before, removed, &state),
        _ => state,
    };
    Some((version, Arc::new(document)))
}

/// Keeps, for each app the committed transaction wrote (a group's or a lone turn's), what its
/// last write of the row answered: the version the others see (one transaction's earlier writes
/// of the row are never seen).
fn keep_written(apps: &AppCache, rows: &[RowWrite<&str>], written: Vec<OnceLock<Versioned>>) {
    let mut last: Vec<(&str, Option<Versioned>)> = Vec::new();
    for (row, written) in rows.iter().zip(written) {
        match last.last_mut() {
            Some((app, answer)) if *app == row.key => *answer = written.into_inner(),
            _ => last.push((row.key, written.into_inner())),
        }
    }
    for (app, answer) in last {
        if let Some((version, state)) = answer {
            apps.committed(app, version, state);
        }
    }
}

/// What the answers to a group's requests say: the first error decides (every request after
/// it was skipped, and the `COMMIT` rolled back).
fn outcome(results: Vec<Result<u64, tokio_postgres::Error>>, owners: &[Option<usize>]) -> Sent {
    let last = results.len().saturating_sub(1);
    for (position, result) in results.into_iter().enumerate() {
        let Err(error) = result else { continue };
        // A failure of the connection, or of the `COMMIT` itself: not known to be rolled back.
        if error.as_db_error().is_none() || position == last {
            return Sent::Unknown(error);
        }
        let code = error.code();
        let refused = code == Some(&SqlState::DIVISION_BY_ZERO);
        // Class 40 (a deadlock broken, a serialization failure) is no turn's doing.
        let no_turns_doing = code.is_some_and(|code| code.code().starts_with("40"));
        return match owners[position] {
            // Several turns' writes folded into one statement: whose check or row failed is not
            // known (say a check of the app's row, a held message's id taken, an event's id
            // taken). Sent again unfolded, in order, the failing turn is named.
            Some(SHARED) if !no_turns_doing => Sent::RefusedShared,
            Some(SHARED) => Sent::RolledBack(error),
            // A checked write found no row to write.
            Some(index) if refused => Sent::Refused(index),
            Some(index) if !no_turns_doing => Sent::Failed(index, db(OPERATION)(error)),
            _ => Sent::RolledBack(error),
        };
    }
    Sent::Committed
}

/// Commits `commit`, with the turn's `held` assistant messages, in one round trip if it can be
/// applied as it is: `Ok(true)` when it was committed, `Ok(false)` when nothing was applied
/// because the session is missing, a key it writes no longer holds the loaded value (a merged
/// key included), a merge cannot take the loaded value or a held message's id is taken (the
/// caller runs the locking transaction, which creates the session, reports the stale keys or
/// applies the merges to the stored values).
///
/// # Errors
///
/// [`SessionStoreError::Backend`] when a statement fails for any other reason; the transaction
/// was rolled back.
pub(super) async fn one_round_trip(
    client: &Object,
    apps: &AppCache,
    key: &SessionKey,
    commit: &TurnCommit,
    held: &[HeldWrite],
) -> Result<bool, SessionStoreError> {
    match send(client, apps, &[Turn { key, commit, held }], false).await {
        Sent::Committed => Ok(true),
        Sent::Refused(_) | Sent::RefusedShared => Ok(false),
        Sent::Failed(_, error) => Err(error),
        Sent::RolledBack(error) | Sent::Unknown(error) => Err(db(OPERATION)(error)),
    }
}
