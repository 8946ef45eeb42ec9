//! Thread lineage in SQLite: `adk_rs_thread_forks`, one row per fork, which google-adk ignores.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::ids::ThreadId;
use crate::state::{ForkPoint, ForkRecord, SessionKey, SessionStoreError};

/// The table, created with the session store's others. No foreign key to `sessions`: a fork
/// may be recorded before its session's first commit; `delete_session` deletes the rows.
pub(super) const FORKS_TABLE: &str = "
CREATE TABLE IF NOT EXISTS adk_rs_thread_forks (app_name VARCHAR(128) NOT NULL, user_id VARCHAR(128) NOT NULL,
    session_id VARCHAR(128) NOT NULL, thread_id VARCHAR(128) NOT NULL, source_thread VARCHAR(128) NOT NULL,
    source_message TEXT NOT NULL, source_message_index INTEGER NOT NULL, sibling_index INTEGER NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, thread_id));
";

fn db(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> SessionStoreError {
    move |source| SessionStoreError::backend(format!("SQLite failed while {operation}: {source}"))
}

/// Records the fork in one `IMMEDIATE` transaction, so two forks at one point never share a
/// sibling index.
pub(super) fn record(
    connection: &mut Connection,
    key: &SessionKey,
    thread: &ThreadId,
    point: ForkPoint,
) -> Result<ForkRecord, SessionStoreError> {
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db("starting to record a fork"))?;
    let (app, user, session) = (key.app.as_str(), key.user.as_str(), key.session.as_str());
    let taken = tx
        .query_row(
            "SELECT 1 FROM adk_rs_thread_forks
             WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND thread_id = ?4",
            params![app, user, session, thread.as_str()],
            |_| Ok(()),
        )
        .optional()
        .map_err(db("reading a fork record"))?;
    if taken.is_some() {
        return Err(SessionStoreError::ThreadAlreadyForked {
            thread: thread.clone(),
        });
    }
    let last: Option<u32> = tx
        .query_row(
            "SELECT MAX(sibling_index) FROM adk_rs_thread_forks
             WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3
             AND source_thread = ?4 AND source_message = ?5",
            params![app, user, session, point.thread.as_str(), point.message],
            |row| row.get(0),
        )
        .map_err(db("numbering a fork"))?;
    let sibling_index = last.unwrap_or(0) + 1;
    tx.execute(
        "INSERT INTO adk_rs_thread_forks (app_name, user_id, session_id, thread_id, source_thread,
         source_message, source_message_index, sibling_index) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            app,
            user,
            session,
            thread.as_str(),
            point.thread.as_str(),
            point.message,
            point.message_index,
            sibling_index
        ],
    )
    .map_err(db("recording a fork"))?;
    tx.commit().map_err(db("committing a fork record"))?;
    Ok(ForkRecord {
        thread: thread.clone(),
        point,
        sibling_index,
    })
}

/// Every fork of the session.
pub(super) fn all(
    connection: &Connection,
    key: &SessionKey,
) -> Result<Vec<ForkRecord>, SessionStoreError> {
    let mut statement = connection
        .prepare_cached(
            "SELECT thread_id, source_thread, source_message, source_message_index, sibling_index
             FROM adk_rs_thread_forks WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3",
        )
        .map_err(db("reading fork records"))?;
    statement
        .query_map(
            params![key.app.as_str(), key.user.as_str(), key.session.as_str()],
            |row| {
                Ok(ForkRecord {
                    thread: ThreadId::from(row.get::<_, String>(0)?),
                    point: ForkPoint {
                        thread: ThreadId::from(row.get::<_, String>(1)?),
                        message: row.get(2)?,
                        message_index: row.get(3)?,
                    },
                    sibling_index: row.get(4)?,
                })
            },
        )
        .and_then(Iterator::collect)
        .map_err(db("reading fork records"))
}

/// Deletes the session's fork records, inside the caller's transaction.
pub(super) fn delete(connection: &Connection, key: &SessionKey) -> Result<(), SessionStoreError> {
    connection
        .execute(
            "DELETE FROM adk_rs_thread_forks WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3",
            params![key.app.as_str(), key.user.as_str(), key.session.as_str()],
        )
        .map_err(db("deleting fork records"))?;
    Ok(())
}
