//! The six primitives as rows: one table each, the record kept as its serde JSON, read back
//! through the primitive's own deserializer.

use rusqlite::{ErrorCode, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, ToolCall};
use crate::storage::{FetchWindow, Primitive, StorageContext, StorageError};

use super::error::{SqliteError, backend};
use super::worker::Workers;

/// A primitive stored in its own table, identified within a conversation by its key.
pub(super) trait Stored: Serialize + DeserializeOwned + Send + 'static {
    const KIND: Primitive;
    const TABLE: &'static str;
    /// Standing instructions are identified by value: storing an equal one again is not a
    /// conflict, it simply does not add a second copy.
    const STORE_IS_IDEMPOTENT: bool = false;
    /// Whether a fetch honours the context's `FetchWindow`: standing instructions are always
    /// fetched whole.
    const WINDOWED: bool = true;

    /// The id, or for a standing instruction its text.
    fn key(&self) -> String;
}

macro_rules! stored {
    ($record:ty, $kind:expr, $table:literal) => {
        impl Stored for $record {
            const KIND: Primitive = $kind;
            const TABLE: &'static str = $table;

            fn key(&self) -> String {
                self.id().to_owned()
            }
        }
    };
}

stored!(Memory, Primitive::Memories, "memories");
stored!(Message, Primitive::Messages, "messages");
stored!(Thought, Primitive::Thoughts, "thoughts");
stored!(ToolCall, Primitive::ToolCalls, "tool_calls");
stored!(Retrievable, Primitive::Retrievables, "retrievables");

impl Stored for StandingInstruction {
    const KIND: Primitive = Primitive::StandingInstructions;
    const TABLE: &'static str = "standing_instructions";
    const STORE_IS_IDEMPOTENT: bool = true;
    const WINDOWED: bool = false;

    fn key(&self) -> String {
        self.render()
    }
}

fn serialize<Record: Stored>(record: &Record, key: &str) -> Result<String, StorageError> {
    serde_json::to_string(record).map_err(|source| {
        StorageError::backend(SqliteError::Unserializable {
            kind: Record::KIND.singular(),
            id: key.to_owned(),
            source,
        })
    })
}

pub(super) async fn fetch<Record: Stored>(
    workers: &Workers,
    ctx: &StorageContext,
) -> Result<Vec<Record>, StorageError> {
    let conversation_id = ctx.conversation_id().as_str().to_owned();
    let window = if Record::WINDOWED {
        ctx.fetch_window().clone()
    } else {
        FetchWindow::All
    };
    workers
        .reader()
        .run(move |connection| {
            let operation = || format!("fetching the {} of `{conversation_id}`", Record::KIND);
            // Every form walks the `(conversation_id, sequence)` index, so a window reads only
            // its own rows however long the conversation is.
            let (sql, bound): (String, rusqlite::types::Value) = match &window {
                FetchWindow::Last(count) => (
                    format!(
                        "SELECT id, record FROM (SELECT sequence, id, record FROM {table} \
                         WHERE conversation_id = ?1 ORDER BY sequence DESC LIMIT ?2) \
                         ORDER BY sequence",
                        table = Record::TABLE
                    ),
                    i64::try_from(*count).unwrap_or(i64::MAX).into(),
                ),
                FetchWindow::After(id) => (
                    format!(
                        "SELECT id, record FROM {table} WHERE conversation_id = ?1 AND sequence > \
                         COALESCE((SELECT sequence FROM {table} WHERE conversation_id = ?1 \
                         AND id = ?2), 0) ORDER BY sequence",
                        table = Record::TABLE
                    ),
                    id.clone().into(),
                ),
                _ => (
                    format!(
                        "SELECT id, record FROM {} WHERE conversation_id = ?1 AND ?2 IS NULL \
                         ORDER BY sequence",
                        Record::TABLE
                    ),
                    rusqlite::types::Value::Null,
                ),
            };
            let mut statement = connection
                .prepare_cached(&sql)
                .map_err(backend(operation()))?;
            let rows = statement
                .query_map(params![conversation_id, bound], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(backend(operation()))?;
            let mut records = Vec::new();
            for row in rows {
                let (id, json) = row.map_err(backend(operation()))?;
                let record = serde_json::from_str(&json).map_err(|source| {
                    StorageError::backend(SqliteError::InvalidRecord {
                        kind: Record::KIND.singular(),
                        id,
                        conversation_id: conversation_id.clone(),
                        source,
                    })
                })?;
                records.push(record);
            }
            Ok(records)
        })
        .await
}

pub(super) async fn store<Record: Stored>(
    workers: &Workers,
    ctx: &StorageContext,
    record: Record,
) -> Result<(), StorageError> {
    let key = record.key();
    let json = serialize(&record, &key)?;
    let conversation_id = ctx.conversation_id().as_str().to_owned();
    let turn_id = ctx.turn_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| {
            let operation = || format!("storing {} `{key}`", Record::KIND.singular());
            let on_conflict = if Record::STORE_IS_IDEMPOTENT {
                " ON CONFLICT (conversation_id, id) DO NOTHING"
            } else {
                ""
            };
            // One statement is its own transaction; the statement is prepared once per
            // connection and reused.
            let inserted = connection
                .prepare_cached(&format!(
                    "INSERT INTO {} (conversation_id, id, turn_id, record) VALUES (?1, ?2, ?3, ?4){on_conflict}",
                    Record::TABLE
                ))
                .and_then(|mut statement| {
                    statement.execute(params![conversation_id, key, turn_id, json])
                });
            match inserted {
                Ok(_) => Ok(()),
                Err(error) if error.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                    Err(StorageError::Conflict {
                        kind: Record::KIND,
                        id: key,
                    })
                }
                Err(error) => Err(backend(operation())(error)),
            }
        })
        .await
}

pub(super) async fn mutate<Record: Stored>(
    workers: &Workers,
    ctx: &StorageContext,
    record: Record,
) -> Result<(), StorageError> {
    let key = record.key();
    let json = serialize(&record, &key)?;
    let conversation_id = ctx.conversation_id().as_str().to_owned();
    let turn_id = ctx.turn_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| {
            let operation = || format!("mutating {} `{key}`", Record::KIND.singular());
            // An UPDATE keeps the row's sequence, so the record keeps its place in fetch order.
            let changed = connection
                .prepare_cached(&format!(
                    "UPDATE {} SET record = ?1, turn_id = ?2 WHERE conversation_id = ?3 AND id = ?4",
                    Record::TABLE
                ))
                .and_then(|mut statement| {
                    statement.execute(params![json, turn_id, conversation_id, key])
                })
                .map_err(backend(operation()))?;
            if changed == 0 {
                return Err(StorageError::NotFound {
                    kind: Record::KIND,
                    id: key,
                });
            }
            Ok(())
        })
        .await
}

pub(super) async fn delete<Record: Stored>(
    workers: &Workers,
    ctx: &StorageContext,
    key: String,
) -> Result<(), StorageError> {
    let conversation_id = ctx.conversation_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| {
            let operation = || format!("deleting {} `{key}`", Record::KIND.singular());
            connection
                .prepare_cached(&format!(
                    "DELETE FROM {} WHERE conversation_id = ?1 AND id = ?2",
                    Record::TABLE
                ))
                .and_then(|mut statement| statement.execute(params![conversation_id, key]))
                .map_err(backend(operation()))?;
            Ok(())
        })
        .await
}
