//! The six primitives as rows: one table each, the record kept as its serde JSON, read back
//! through the primitive's own deserializer.

use rusqlite::ErrorCode;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, ToolCall};
use crate::storage::{FetchWindow, Primitive, StorageContext, StorageError};

use super::error::{SqliteError, backend};
use super::owner::{COLUMNS, MATCHES, Owner, owner_params};
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

pub(super) fn serialize<Record: Stored>(
    record: &Record,
    key: &str,
) -> Result<String, StorageError> {
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
    let owner = Owner::of(ctx);
    let window = if Record::WINDOWED {
        ctx.fetch_window().clone()
    } else {
        FetchWindow::All
    };
    workers
        .reader()
        .run(move |connection| {
            let conversation_id = &owner.conversation_id;
            let operation = || format!("fetching the {} of `{conversation_id}`", Record::KIND);
            // Every form walks the `(owner, sequence)` index (a point is found through the
            // `(owner, id)` one), so a window reads only its own rows however long the
            // conversation is.
            let (sql, bound): (String, rusqlite::types::Value) = match &window {
                FetchWindow::Last(count) => (
                    format!(
                        "SELECT id, record FROM (SELECT sequence, id, record FROM {table} \
                         WHERE {MATCHES} ORDER BY sequence DESC LIMIT ?5) ORDER BY sequence",
                        table = Record::TABLE
                    ),
                    i64::try_from(*count).unwrap_or(i64::MAX).into(),
                ),
                FetchWindow::After(id) => (
                    format!(
                        "SELECT id, record FROM {table} WHERE {MATCHES} AND sequence > \
                         COALESCE((SELECT sequence FROM {table} WHERE {MATCHES} AND id = ?5), 0) \
                         ORDER BY sequence",
                        table = Record::TABLE
                    ),
                    id.clone().into(),
                ),
                FetchWindow::All => (
                    format!(
                        "SELECT id, record FROM {} WHERE {MATCHES} AND ?5 IS NULL \
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
                .query_map(owner_params!(owner, bound), |row| {
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
    let owner = Owner::of(ctx);
    let turn_id = ctx.turn_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| insert::<Record>(connection, &owner, key, &turn_id, &json))
        .await
}

/// Inserts one record's row on `connection`: on its own a statement is its own transaction;
/// inside one (a session store's commit taking a turn's held messages) it joins it. An id
/// already stored for the owner is [`StorageError::Conflict`].
pub(super) fn insert<Record: Stored>(
    connection: &rusqlite::Connection,
    owner: &Owner,
    key: String,
    turn_id: &str,
    json: &str,
) -> Result<(), StorageError> {
    let on_conflict = if Record::STORE_IS_IDEMPOTENT {
        " ON CONFLICT DO NOTHING"
    } else {
        ""
    };
    // The statement is prepared once per connection and reused.
    let inserted = connection
        .prepare_cached(&format!(
            "INSERT INTO {} ({COLUMNS}, id, turn_id, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7){on_conflict}",
            Record::TABLE
        ))
        .and_then(|mut statement| statement.execute(owner_params!(owner, key, turn_id, json)));
    match inserted {
        Ok(_) => Ok(()),
        Err(error) if error.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
            Err(StorageError::Conflict {
                kind: Record::KIND,
                id: key,
            })
        }
        Err(error) => Err(backend(format!(
            "storing {} `{key}`",
            Record::KIND.singular()
        ))(error)),
    }
}

/// Deletes the tool calls `ids` names and stores `replacements`, in one transaction: all of it
/// happens or none of it does.
pub(super) async fn replace_tool_call_group(
    workers: &Workers,
    ctx: &StorageContext,
    ids: Vec<String>,
    replacements: Vec<ToolCall>,
) -> Result<(), StorageError> {
    let owner = Owner::of(ctx);
    let turn_id = ctx.turn_id().as_str().to_owned();
    let rows = replacements
        .iter()
        .map(|call| Ok((call.key(), serialize(call, &call.key())?)))
        .collect::<Result<Vec<(String, String)>, StorageError>>()?;
    workers
        .writer
        .run(move |connection| {
            let operation = "replacing a group of tool calls";
            let transaction = connection.transaction().map_err(backend(operation))?;
            for id in &ids {
                transaction
                    .execute(
                        &format!(
                            "DELETE FROM {} WHERE {MATCHES} AND id = ?5",
                            ToolCall::TABLE
                        ),
                        owner_params!(owner, id),
                    )
                    .map_err(backend(operation))?;
            }
            for (key, json) in rows {
                let inserted = transaction.execute(
                    &format!(
                        "INSERT INTO {} ({COLUMNS}, id, turn_id, record)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        ToolCall::TABLE
                    ),
                    owner_params!(owner, key, turn_id, json),
                );
                match inserted {
                    Ok(_) => {}
                    // Dropping the transaction rolls the deletes back too.
                    Err(error)
                        if error.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) =>
                    {
                        return Err(StorageError::Conflict {
                            kind: ToolCall::KIND,
                            id: key,
                        });
                    }
                    Err(error) => return Err(backend(operation)(error)),
                }
            }
            transaction.commit().map_err(backend(operation))
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
    let owner = Owner::of(ctx);
    let turn_id = ctx.turn_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| {
            let operation = || format!("mutating {} `{key}`", Record::KIND.singular());
            // An UPDATE keeps the row's sequence, so the record keeps its place in fetch order.
            let changed = connection
                .prepare_cached(&format!(
                    "UPDATE {} SET record = ?5, turn_id = ?6 WHERE {MATCHES} AND id = ?7",
                    Record::TABLE
                ))
                .and_then(|mut statement| {
                    statement.execute(owner_params!(owner, json, turn_id, key))
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
    let owner = Owner::of(ctx);
    workers
        .writer
        .run(move |connection| {
            let operation = || format!("deleting {} `{key}`", Record::KIND.singular());
            connection
                .prepare_cached(&format!(
                    "DELETE FROM {} WHERE {MATCHES} AND id = ?5",
                    Record::TABLE
                ))
                .and_then(|mut statement| statement.execute(owner_params!(owner, key)))
                .map_err(backend(operation()))?;
            Ok(())
        })
        .await
}
