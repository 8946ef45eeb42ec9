//! The six primitives as rows: one table each, the record kept as JSONB, read back through the
//! primitive's own deserializer. Every statement is parameterized; only the table name, a
//! constant, is written into it, when the crate is compiled.

use bytes::{BufMut, BytesMut};
use deadpool_postgres::{Object, Pool};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::types::{IsNull, Json, ToSql, Type, accepts, to_sql_checked};

use crate::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, ToolCall};
use crate::storage::{HeldWrites, Primitive, StorageContext, StorageError};

use super::error::{PostgresError, backend, no_connection};
use super::scope::Scope;

/// A primitive stored in its own table, identified within its scope by its key.
pub(super) trait Stored: Serialize + DeserializeOwned + Send + Sync + 'static {
    const KIND: Primitive;
    const TABLE: &'static str;
    /// The statements on [`TABLE`](Self::TABLE), written out once (`statements!`).
    const FETCH: &'static str;
    const INSERT: &'static str;
    const MUTATE: &'static str;
    const DELETE: &'static str;
    /// Standing instructions are identified by value: storing an equal one again is not a
    /// conflict, it simply does not add a second copy.
    const STORE_IS_IDEMPOTENT: bool = false;

    /// The id, or for a standing instruction its text.
    fn key(&self) -> String;
}

/// A [`Stored`] type's table and the statements on it.
macro_rules! statements {
    ($table:literal) => {
        const TABLE: &'static str = $table;
        const FETCH: &'static str = concat!(
            "SELECT id, record FROM ",
            $table,
            " WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4 \
             ORDER BY sequence"
        );
        const INSERT: &'static str = concat!(
            "INSERT INTO ",
            $table,
            " (app_name, user_id, session_id, thread_id, id, turn_id, record) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (app_name, user_id, session_id, thread_id, id) DO NOTHING"
        );
        const MUTATE: &'static str = concat!(
            "UPDATE ",
            $table,
            " SET record = $1, turn_id = $2 \
             WHERE app_name = $3 AND user_id = $4 AND session_id = $5 AND thread_id = $6 \
             AND id = $7"
        );
        const DELETE: &'static str = concat!(
            "DELETE FROM ",
            $table,
            " WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4 \
             AND id = $5"
        );
    };
}

macro_rules! stored {
    ($record:ty, $kind:expr, $table:literal) => {
        impl Stored for $record {
            const KIND: Primitive = $kind;
            statements!($table);

            fn key(&self) -> String {
                self.id().to_owned()
            }
        }
    };
}

stored!(Memory, Primitive::Memories, "adk_rs_memories");
stored!(Message, Primitive::Messages, "adk_rs_messages");
stored!(Thought, Primitive::Thoughts, "adk_rs_thoughts");
stored!(ToolCall, Primitive::ToolCalls, "adk_rs_tool_calls");
stored!(Retrievable, Primitive::Retrievables, "adk_rs_retrievables");

impl Stored for StandingInstruction {
    const KIND: Primitive = Primitive::StandingInstructions;
    statements!("adk_rs_standing_instructions");
    const STORE_IS_IDEMPOTENT: bool = true;

    fn key(&self) -> String {
        self.render()
    }
}

// Serialized up front so that a record serde cannot express is reported as such, not as a
// driver error in the middle of a statement.
pub(super) fn to_json<Record: Stored>(
    record: &Record,
    key: &str,
) -> Result<JsonText, StorageError> {
    serde_json::to_string(record)
        .map(JsonText)
        .map_err(|source| {
            StorageError::backend(PostgresError::Unserializable {
                kind: Record::KIND.singular(),
                id: key.to_owned(),
                source,
            })
        })
}

pub(super) async fn fetch<Record: Stored>(
    pool: &Pool,
    ctx: &StorageContext,
) -> Result<Vec<Record>, StorageError> {
    let scope = Scope::of(ctx);
    let operation = || format!("fetching the {} of `{}`", Record::KIND, scope.session);
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let statement = client
        .prepare_cached(Record::FETCH)
        .await
        .map_err(backend(&operation))?;
    let rows = client
        .query(
            &statement,
            &[&scope.app, &scope.user, &scope.session, &scope.thread],
        )
        .await
        .map_err(backend(&operation))?;
    rows.into_iter()
        .map(|row| {
            let id: String = row.get(0);
            let Json(json): Json<serde_json::Value> = row.get(1);
            serde_json::from_value(json).map_err(|source| {
                StorageError::backend(PostgresError::InvalidRecord {
                    kind: Record::KIND.singular(),
                    id,
                    session_id: scope.session.clone(),
                    source,
                })
            })
        })
        .collect()
}

pub(super) async fn store<Record: Stored>(
    pool: &Pool,
    ctx: &StorageContext,
    record: Record,
) -> Result<(), StorageError> {
    let key = record.key();
    let json = to_json(&record, &key)?;
    let operation = || format!("storing {} `{key}`", Record::KIND.singular());
    let client = pool.get().await.map_err(no_connection(operation))?;
    store_on::<Record>(&client, ctx, key, json).await
}

/// [`store`] on a connection the caller holds: the record's `key` and its `json`.
async fn store_on<Record: Stored>(
    client: &Object,
    ctx: &StorageContext,
    key: String,
    json: JsonText,
) -> Result<(), StorageError> {
    let scope = Scope::of(ctx);
    let turn_id = ctx.turn_id().as_str();
    let operation = || format!("storing {} `{key}`", Record::KIND.singular());
    // One statement is one transaction: an id taken by another process at the same moment
    // makes this insert add nothing rather than fail half-way.
    let statement = client
        .prepare_cached(Record::INSERT)
        .await
        .map_err(backend(&operation))?;
    let inserted = client
        .execute(
            &statement,
            &[
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &key,
                &turn_id,
                &json,
            ],
        )
        .await
        .map_err(backend(&operation))?;
    if inserted == 0 && !Record::STORE_IS_IDEMPOTENT {
        return Err(StorageError::Conflict {
            kind: Record::KIND,
            id: key,
        });
    }
    Ok(())
}

pub(super) async fn mutate<Record: Stored>(
    pool: &Pool,
    ctx: &StorageContext,
    record: Record,
) -> Result<(), StorageError> {
    let key = record.key();
    let json = to_json(&record, &key)?;
    let scope = Scope::of(ctx);
    let turn_id = ctx.turn_id().as_str();
    let operation = || format!("mutating {} `{key}`", Record::KIND.singular());
    let client = pool.get().await.map_err(no_connection(&operation))?;
    // An UPDATE keeps the row's sequence, so the record keeps its place in fetch order.
    let statement = client
        .prepare_cached(Record::MUTATE)
        .await
        .map_err(backend(&operation))?;
    let changed = client
        .execute(
            &statement,
            &[
                &json,
                &turn_id,
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &key,
            ],
        )
        .await
        .map_err(backend(&operation))?;
    if changed == 0 {
        return Err(StorageError::NotFound {
            kind: Record::KIND,
            id: key,
        });
    }
    Ok(())
}

pub(super) async fn delete<Record: Stored>(
    pool: &Pool,
    ctx: &StorageContext,
    key: String,
) -> Result<(), StorageError> {
    let scope = Scope::of(ctx);
    let operation = || format!("deleting {} `{key}`", Record::KIND.singular());
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let statement = client
        .prepare_cached(Record::DELETE)
        .await
        .map_err(backend(&operation))?;
    client
        .execute(
            &statement,
            &[&scope.app, &scope.user, &scope.session, &scope.thread, &key],
        )
        .await
        .map_err(backend(&operation))?;
    Ok(())
}

/// Writes `held`'s messages one by one, oldest first, each in its own transaction (the turn's
/// hold is released outside a commit). A failed write's error is returned; the messages after
/// it stay held.
pub(super) async fn write_held(pool: &Pool, held: &HeldWrites) -> Result<(), StorageError> {
    let client = pool
        .get()
        .await
        .map_err(no_connection("storing the turn's held messages"))?;
    write_held_on(&client, held).await
}

/// [`write_held`] on a connection the caller holds (a commit that holds one must not wait for
/// a second: with every connection held by such a commit, none would come).
pub(super) async fn write_held_on(client: &Object, held: &HeldWrites) -> Result<(), StorageError> {
    let mut writes = held.take().into_iter();
    while let Some(write) = writes.next() {
        let key = write.message.key();
        let stored = match to_json(&write.message, &key) {
            Ok(json) => store_on::<Message>(client, &write.ctx, key, json).await,
            Err(error) => Err(error),
        };
        if let Err(error) = stored {
            held.put_back(writes.collect());
            return Err(error);
        }
    }
    Ok(())
}

/// A value serialized to JSON text before anything is sent, bound as a `JSON` or `JSONB`
/// parameter as it is.
///
/// Why: a record serialized into a `serde_json::Value` first is a tree of allocations built
/// only to be written out again; the text is written once. Serialized before the statement is
/// sent, a failure is this record's error, not a request that fails to encode in the middle of
/// a pipeline whose `COMMIT` is already on its way.
#[derive(Debug)]
pub(super) struct JsonText(String);

impl ToSql for JsonText {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        // JSONB's binary form is a version byte, then the text.
        if *ty == Type::JSONB {
            out.put_u8(1);
        }
        out.put_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }

    accepts!(JSON, JSONB);
    to_sql_checked!();
}
