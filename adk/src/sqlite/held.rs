//! A turn's assistant messages held for its state commit (`storage::held`) on SQLite: the
//! session store [`SqliteStorage::session_store_one_flush`](super::SqliteStorage::session_store_one_flush)
//! hands out runs on the storage's writer connection and inserts them in the transaction that
//! commits the turn's state and events, so the turn makes one WAL commit instead of two (and
//! one hand-off to the writer thread instead of two).

use rusqlite::Connection;

use crate::primitives::Message;
use crate::state::SessionStoreError;
use crate::storage::{CommitPartner, HeldWrite, HeldWrites, StorageError, TurnWrites};

use super::owner::Owner;
use super::records::{Stored, insert, serialize};
use super::worker::Workers;

/// A held message as its row: owner, id, turn and record, serialized before it is sent to the
/// writer thread (as `records::store` does).
pub(super) struct HeldRow {
    owner: Owner,
    key: String,
    turn_id: String,
    json: String,
}

/// The rows of `writes`, oldest first; an unserializable message is an error (its commit is
/// not attempted).
pub(super) fn rows(writes: &[HeldWrite]) -> Result<Vec<HeldRow>, StorageError> {
    writes
        .iter()
        .map(|write| {
            let key = write.message.key();
            Ok(HeldRow {
                json: serialize(&write.message, &key)?,
                owner: Owner::of(&write.ctx),
                turn_id: write.ctx.turn_id().as_str().to_owned(),
                key,
            })
        })
        .collect()
}

/// Inserts `rows` on `connection`, inside the caller's transaction: the first that fails (an
/// id already stored is [`StorageError::Conflict`]) fails the whole commit.
pub(super) fn insert_all(connection: &Connection, rows: Vec<HeldRow>) -> Result<(), StorageError> {
    for row in rows {
        insert::<Message>(connection, &row.owner, row.key, &row.turn_id, &row.json)?;
    }
    Ok(())
}

/// Writes `held`'s messages one by one, oldest first, each in its own transaction (the turn's
/// hold is released outside a commit: another call of the turn to the storage comes first). A
/// failed write's error is returned; the messages after it stay held.
pub(super) async fn write_held(workers: &Workers, held: &HeldWrites) -> Result<(), StorageError> {
    let mut writes = held.take().into_iter();
    while let Some(write) = writes.next() {
        if let Err(error) = super::records::store(workers, &write.ctx, write.message).await {
            held.put_back(writes.collect());
            return Err(error);
        }
    }
    Ok(())
}

/// The turn's messages held for `partner`'s commit (none without a partner), taken from its
/// hold, with their rows. A message that cannot be serialized is put back with the others and
/// fails the commit before it starts.
pub(super) fn take(
    partner: Option<&CommitPartner>,
    held: &TurnWrites,
) -> Result<(Vec<HeldWrite>, Vec<HeldRow>), SessionStoreError> {
    let writes = held.take_for(partner);
    match rows(&writes) {
        Ok(rows) => Ok((writes, rows)),
        Err(error) => {
            held.put_back_for(partner, writes);
            Err(SessionStoreError::backend(error))
        }
    }
}
