//! The six primitives as rows: one table each, the record kept as its serde JSON, read back
//! through the primitive's own deserializer.

use rusqlite::ErrorCode;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, ToolCall};
use crate::storage::{Primitive, StorageContext, StorageError};

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
    let owner = Owner::of(ctx);
    workers
        .reader()
        .run(move |connection| {
            let conversation_id = &owner.conversation_id;
            let operation = || format!("fetching the {} of `{conversation_id}`", Record::KIND);
            let mut statement = connection
                .prepare_cached(&format!(
                    "SELECT id, record FROM {} WHERE {MATCHES} ORDER BY sequence",
                    Record::TABLE
                ))
                .map_err(backend(operation()))?;
            let rows = statement
                .query_map(owner_params!(owner), |row| {
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
        .run(move |connection| {
            let operation = || format!("storing {} `{key}`", Record::KIND.singular());
            let transaction = connection.transaction().map_err(backend(operation()))?;
            let on_conflict = if Record::STORE_IS_IDEMPOTENT {
                " ON CONFLICT DO NOTHING"
            } else {
                ""
            };
            let inserted = transaction.execute(
                &format!(
                    "INSERT INTO {} ({COLUMNS}, id, turn_id, record)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7){on_conflict}",
                    Record::TABLE
                ),
                owner_params!(owner, key, turn_id, json),
            );
            match inserted {
                Ok(_) => transaction.commit().map_err(backend(operation())),
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
    let owner = Owner::of(ctx);
    let turn_id = ctx.turn_id().as_str().to_owned();
    workers
        .writer
        .run(move |connection| {
            let operation = || format!("mutating {} `{key}`", Record::KIND.singular());
            let transaction = connection.transaction().map_err(backend(operation()))?;
            // An UPDATE keeps the row's sequence, so the record keeps its place in fetch order.
            let changed = transaction
                .execute(
                    &format!(
                        "UPDATE {} SET record = ?5, turn_id = ?6 WHERE {MATCHES} AND id = ?7",
                        Record::TABLE
                    ),
                    owner_params!(owner, json, turn_id, key),
                )
                .map_err(backend(operation()))?;
            if changed == 0 {
                return Err(StorageError::NotFound {
                    kind: Record::KIND,
                    id: key,
                });
            }
            transaction.commit().map_err(backend(operation()))
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
            let transaction = connection.transaction().map_err(backend(operation()))?;
            transaction
                .execute(
                    &format!("DELETE FROM {} WHERE {MATCHES} AND id = ?5", Record::TABLE),
                    owner_params!(owner, key),
                )
                .map_err(backend(operation()))?;
            transaction.commit().map_err(backend(operation()))
        })
        .await
}
