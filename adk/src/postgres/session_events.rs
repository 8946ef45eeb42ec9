//! The `events` rows of [`PostgresSessionStore`](super::PostgresSessionStore), as google-adk's
//! `DatabaseSessionService` lays them out on PostgreSQL: naive UTC `TIMESTAMP`, the event's
//! JSON in a `JSONB` `event_data`.

use deadpool_postgres::GenericClient;
use jiff::Timestamp;
use serde_json::Value;
use tokio_postgres::types::Json;

use crate::state::{AdkEventJson, GetSessionConfig, SessionEvent, SessionKey, SessionStoreError};

use super::error::failed;

// Times travel as whole microseconds since the epoch, so none is rounded through a float. All
// of a commit's events go in one statement (one round trip), however many there are.
pub(super) const INSERT_EVENTS: &str = "INSERT INTO events (id, app_name, user_id, session_id, \
     invocation_id, timestamp, event_data) \
     SELECT e.id, $2, $3, $4, e.invocation_id, \
     TIMESTAMP 'epoch' + e.micros * INTERVAL '1 microsecond', e.data \
     FROM UNNEST($1::VARCHAR[], $5::VARCHAR[], $6::BIGINT[], $7::JSONB[]) \
     AS e(id, invocation_id, micros, data)";
const READ_EVENTS: &str = "SELECT id, invocation_id, \
     (EXTRACT(EPOCH FROM timestamp) * 1000000)::BIGINT, event_data FROM events \
     WHERE app_name = $1 AND user_id = $2 AND session_id = $3 \
     AND ($4::BIGINT IS NULL OR timestamp >= TIMESTAMP 'epoch' + $4::BIGINT * INTERVAL '1 microsecond') \
     ORDER BY timestamp DESC, id DESC LIMIT $5::BIGINT";

fn db(operation: &'static str) -> impl FnOnce(tokio_postgres::Error) -> SessionStoreError {
    let failed = failed(operation);
    move |source| SessionStoreError::backend(failed(source))
}

/// Inserts a commit's events as google-adk rows, inside the commit's transaction.
pub(super) async fn insert_events(
    client: &impl GenericClient,
    key: &SessionKey,
    events: &[SessionEvent],
) -> Result<(), SessionStoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let operation = "appending events";
    let statement = client
        .prepare_cached(INSERT_EVENTS)
        .await
        .map_err(db(operation))?;
    let ids: Vec<&str> = events.iter().map(|event| event.id.as_str()).collect();
    let invocations: Vec<&str> = events
        .iter()
        .map(|event| event.invocation_id.as_str())
        .collect();
    let micros: Vec<i64> = events
        .iter()
        .map(|event| event.timestamp.as_microsecond())
        .collect();
    let data: Vec<Json<AdkEventJson<'_>>> =
        events.iter().map(|event| Json(event.adk_json())).collect();
    client
        .execute(
            &statement,
            &[
                &ids,
                &key.app.as_str(),
                &key.user.as_str(),
                &key.session.as_str(),
                &invocations,
                &micros,
                &data,
            ],
        )
        .await
        .map_err(db(operation))?;
    Ok(())
}

/// The session's events in `window`, oldest first: google-adk's query (newest first, limited,
/// then reversed).
pub(super) async fn read_events(
    client: &impl GenericClient,
    key: &SessionKey,
    window: GetSessionConfig,
) -> Result<Vec<SessionEvent>, SessionStoreError> {
    if window.num_recent_events == Some(0) {
        return Ok(Vec::new());
    }
    let operation = "reading events";
    let statement = client
        .prepare_cached(READ_EVENTS)
        .await
        .map_err(db(operation))?;
    let after = window.after_timestamp.map(Timestamp::as_microsecond);
    let limit = window
        .num_recent_events
        .map(|count| i64::try_from(count).unwrap_or(i64::MAX));
    let rows = client
        .query(
            &statement,
            &[
                &key.app.as_str(),
                &key.user.as_str(),
                &key.session.as_str(),
                &after,
                &limit,
            ],
        )
        .await
        .map_err(db(operation))?;
    let mut events = rows
        .into_iter()
        .map(|row| {
            let id: String = row.get(0);
            let invocation: String = row.get(1);
            let micros: i64 = row.get(2);
            let data: Option<Json<Value>> = row.get(3);
            let time = Timestamp::from_microsecond(micros).map_err(|error| {
                SessionStoreError::InvalidData(format!("event `{id}` time: {error}"))
            })?;
            let data = data.map_or(Value::Object(serde_json::Map::new()), |Json(data)| data);
            SessionEvent::from_adk_json(&data, &id, &invocation, time)
        })
        .collect::<Result<Vec<_>, _>>()?;
    events.reverse();
    Ok(events)
}
