//! Thread lineage in PostgreSQL: `adk_rs_thread_forks` (migration 4), one row per fork, which
//! google-adk ignores.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use crate::ids::ThreadId;
use crate::state::{ForkPoint, ForkRecord, SessionKey, SessionStoreError};

/// Migration 4. No foreign key to `sessions`: a fork may be recorded before its session's first
/// commit; `delete_session` deletes the rows.
pub(super) const FORKS_TABLE: &str = "
CREATE TABLE adk_rs_thread_forks (
    app_name VARCHAR(128) NOT NULL,
    user_id VARCHAR(128) NOT NULL,
    session_id VARCHAR(128) NOT NULL,
    thread_id TEXT NOT NULL,
    source_thread TEXT NOT NULL,
    source_message TEXT NOT NULL,
    source_message_index BIGINT NOT NULL,
    sibling_index BIGINT NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, thread_id),
    UNIQUE (app_name, user_id, session_id, source_thread, source_message, sibling_index)
);
";

fn db(operation: &'static str) -> impl FnOnce(tokio_postgres::Error) -> SessionStoreError {
    let failed = super::error::failed(operation);
    move |source| SessionStoreError::backend(failed(source))
}

/// Records the fork in one transaction. A transaction-scoped advisory lock on the session
/// serializes forks of one session, so two forks at one point never share a sibling index.
pub(super) async fn record(
    client: &mut deadpool_postgres::Object,
    key: &SessionKey,
    thread: &ThreadId,
    point: ForkPoint,
) -> Result<ForkRecord, SessionStoreError> {
    let operation = "recording a fork";
    let transaction = client.transaction().await.map_err(db(operation))?;
    let (app, user, session) = (key.app.as_str(), key.user.as_str(), key.session.as_str());
    let lock_key = format!("adk_rs_thread_forks/{key}");
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&lock_key],
        )
        .await
        .map_err(db(operation))?;
    let session_params: [&(dyn ToSql + Sync); 4] = [&app, &user, &session, &thread.as_str()];
    let taken = transaction
        .query_opt(
            "SELECT 1 FROM adk_rs_thread_forks
             WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4",
            &session_params,
        )
        .await
        .map_err(db(operation))?;
    if taken.is_some() {
        return Err(SessionStoreError::ThreadAlreadyForked {
            thread: thread.clone(),
        });
    }
    let last: i64 = transaction
        .query_one(
            "SELECT COALESCE(MAX(sibling_index), 0)::BIGINT FROM adk_rs_thread_forks
             WHERE app_name = $1 AND user_id = $2 AND session_id = $3
             AND source_thread = $4 AND source_message = $5",
            &[
                &app,
                &user,
                &session,
                &point.thread.as_str(),
                &point.message,
            ],
        )
        .await
        .map_err(db(operation))?
        .get(0);
    let sibling_index = last + 1;
    transaction
        .execute(
            "INSERT INTO adk_rs_thread_forks (app_name, user_id, session_id, thread_id,
             source_thread, source_message, source_message_index, sibling_index)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &app,
                &user,
                &session,
                &thread.as_str(),
                &point.thread.as_str(),
                &point.message,
                &i64::from(point.message_index),
                &sibling_index,
            ],
        )
        .await
        .map_err(db(operation))?;
    transaction.commit().await.map_err(db(operation))?;
    Ok(ForkRecord {
        thread: thread.clone(),
        point,
        sibling_index: u32::try_from(sibling_index).unwrap_or(u32::MAX),
    })
}

/// Every fork of the session.
pub(super) async fn all(
    client: &impl GenericClient,
    key: &SessionKey,
) -> Result<Vec<ForkRecord>, SessionStoreError> {
    let operation = "reading fork records";
    let rows = client
        .query(
            "SELECT thread_id, source_thread, source_message, source_message_index, sibling_index
             FROM adk_rs_thread_forks WHERE app_name = $1 AND user_id = $2 AND session_id = $3",
            &[&key.app.as_str(), &key.user.as_str(), &key.session.as_str()],
        )
        .await
        .map_err(db(operation))?;
    let number = |value: i64| {
        u32::try_from(value).map_err(|_| {
            SessionStoreError::InvalidData(format!("a fork record holds the index {value}"))
        })
    };
    rows.iter()
        .map(|row| {
            Ok(ForkRecord {
                thread: ThreadId::from(row.get::<_, String>(0)),
                point: ForkPoint {
                    thread: ThreadId::from(row.get::<_, String>(1)),
                    message: row.get(2),
                    message_index: number(row.get(3))?,
                },
                sibling_index: number(row.get(4))?,
            })
        })
        .collect()
}

/// Deletes the session's fork records.
pub(super) async fn delete(
    client: &impl GenericClient,
    key: &SessionKey,
) -> Result<(), SessionStoreError> {
    client
        .execute(
            "DELETE FROM adk_rs_thread_forks
             WHERE app_name = $1 AND user_id = $2 AND session_id = $3",
            &[&key.app.as_str(), &key.user.as_str(), &key.session.as_str()],
        )
        .await
        .map_err(db("deleting fork records"))?;
    Ok(())
}
