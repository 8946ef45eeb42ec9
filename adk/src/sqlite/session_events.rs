//! The time columns and the `events` rows of [`SqliteSessionStore`](super::SqliteSessionStore),
//! in the two layouts google-adk writes: `DatabaseSessionService`'s v1 schema (naive UTC
//! `DATETIME` text) and `SqliteSessionService`'s (what `adk web` writes to `.adk/session.db`:
//! `REAL` seconds since the epoch, no `adk_internal_metadata`).

use jiff::Timestamp;
use jiff::tz::TimeZone;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::state::{
    GetSessionConfig, SessionEvent, SessionKey, SessionStoreError, epoch_seconds,
    from_epoch_seconds,
};

/// How a file stores its times; every time this store writes is in the file's own type, so
/// google-adk reads it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimeColumns {
    /// `DatabaseSessionService` v1: `DATETIME` text, `YYYY-MM-DD HH:MM:SS.ffffff`, UTC.
    Text,
    /// `SqliteSessionService`: `REAL` seconds since the epoch.
    Real,
}

impl TimeColumns {
    /// The layout of the file's `sessions` table, read before anything is created: `REAL` when
    /// its `update_time` column is declared `REAL` (a `SqliteSessionService` file), otherwise
    /// (v1, or a new file) text.
    pub(super) fn of(connection: &Connection) -> rusqlite::Result<Self> {
        let declared: Option<String> = connection
            .query_row(
                "SELECT type FROM pragma_table_info('sessions') WHERE name = 'update_time'",
                [],
                |row| row.get(0),
            )
            .optional()?;
        Ok(match declared {
            Some(declared) if declared.eq_ignore_ascii_case("REAL") => Self::Real,
            _ => Self::Text,
        })
    }

    /// `time` as this layout stores it.
    pub(super) fn value(self, time: Timestamp) -> SqlValue {
        match self {
            Self::Text => SqlValue::Text(format_time(time)),
            Self::Real => SqlValue::Real(epoch_seconds(time)),
        }
    }
}

/// ADK's `DATETIME` text on SQLite: naive UTC with microseconds.
fn format_time(time: Timestamp) -> String {
    let civil = time.to_zoned(TimeZone::UTC).datetime();
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
        civil.year(),
        civil.month(),
        civil.day(),
        civil.hour(),
        civil.minute(),
        civil.second(),
        civil.subsec_nanosecond() / 1000
    )
}

/// A time column as either layout wrote it: `DATETIME` text or `REAL` (or integer) seconds.
pub(super) fn read_time(value: ValueRef<'_>) -> Result<Timestamp, SessionStoreError> {
    let out_of_range =
        |seconds: f64| SessionStoreError::InvalidData(format!("time {seconds} is out of range"));
    match value {
        ValueRef::Real(seconds) => from_epoch_seconds(seconds).ok_or_else(|| out_of_range(seconds)),
        ValueRef::Integer(seconds) => {
            from_epoch_seconds(seconds as f64).ok_or_else(|| out_of_range(seconds as f64))
        }
        ValueRef::Text(bytes) => parse_time(&String::from_utf8_lossy(bytes)),
        other => Err(SessionStoreError::InvalidData(format!(
            "a time column holds {:?}",
            other.data_type()
        ))),
    }
}

fn parse_time(text: &str) -> Result<Timestamp, SessionStoreError> {
    let civil: jiff::civil::DateTime = text
        .replacen(' ', "T", 1)
        .parse()
        .map_err(|error| SessionStoreError::InvalidData(format!("time `{text}`: {error}")))?;
    civil
        .to_zoned(TimeZone::UTC)
        .map(|zoned| zoned.timestamp())
        .map_err(|error| SessionStoreError::InvalidData(format!("time `{text}`: {error}")))
}

fn failed(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> SessionStoreError {
    move |source| SessionStoreError::backend(format!("SQLite failed while {operation}: {source}"))
}

/// Inserts a commit's events as google-adk rows (`event_data` is the event's JSON).
pub(super) fn insert_events(
    tx: &Connection,
    key: &SessionKey,
    times: TimeColumns,
    events: &[SessionEvent],
) -> Result<(), SessionStoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let mut statement = tx
        .prepare_cached(
            "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp,
             event_data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(failed("appending events"))?;
    for event in events {
        statement
            .execute(params![
                event.id,
                key.app.as_str(),
                key.user.as_str(),
                key.session.as_str(),
                event.invocation_id,
                times.value(event.timestamp),
                super::adk_json::to_string(&event.to_adk_json()),
            ])
            .map_err(failed("appending events"))?;
    }
    Ok(())
}

/// The session's events in `window`, oldest first: google-adk's query (newest first, limited,
/// then reversed), ties broken by the order appended.
pub(super) fn read_events(
    connection: &Connection,
    key: &SessionKey,
    times: TimeColumns,
    window: GetSessionConfig,
) -> Result<Vec<SessionEvent>, SessionStoreError> {
    if window.num_recent_events == Some(0) {
        return Ok(Vec::new());
    }
    let limit = window
        .num_recent_events
        .map_or(-1, |count| i64::try_from(count).unwrap_or(i64::MAX));
    let after = window.after_timestamp.map(|time| times.value(time));
    let mut statement = connection
        .prepare_cached(
            "SELECT id, invocation_id, timestamp, event_data FROM events
             WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3
             AND (?4 IS NULL OR timestamp >= ?4)
             ORDER BY timestamp DESC, rowid DESC LIMIT ?5",
        )
        .map_err(failed("reading events"))?;
    let mut rows = statement
        .query(params![
            key.app.as_str(),
            key.user.as_str(),
            key.session.as_str(),
            after,
            limit
        ])
        .map_err(failed("reading events"))?;
    let mut events = Vec::new();
    while let Some(row) = rows.next().map_err(failed("reading events"))? {
        let id: String = row.get(0).map_err(failed("reading events"))?;
        let invocation: String = row.get(1).map_err(failed("reading events"))?;
        let time = read_time(row.get_ref(2).map_err(failed("reading events"))?)?;
        let data: Option<String> = row.get(3).map_err(failed("reading events"))?;
        let data: Value = match data {
            Some(text) => serde_json::from_str(&text).map_err(|error| {
                SessionStoreError::InvalidData(format!("event `{id}`: {error}"))
            })?,
            None => Value::Object(serde_json::Map::new()),
        };
        events.push(SessionEvent::from_adk_json(&data, &id, &invocation, time)?);
    }
    events.reverse();
    Ok(events)
}
