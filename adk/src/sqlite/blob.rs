//! The byte conduits: bytes written chunk by chunk into `blob_chunks`, and the reader sources
//! that stream them back out one chunk at a time.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use rusqlite::{OptionalExtension, params};

use crate::bytes::{
    ByteStoreError, ByteStream, CHUNK_SIZE, ConduitBytes, MediaSource, ReaderDescriptor,
    SpoolSource,
};
use crate::storage::{StorageContext, StorageError};

use super::error::backend;
use super::owner::{COLUMNS, MATCHES, Owner, owner_params};
use super::worker::Workers;

/// The name readers give in their [`ReaderDescriptor`], so a stored handle can be re-attached.
pub(super) const STORE_NAME: &str = "sqlite";

/// Which conduit a blob came through; media and retrievable bytes live in separate id spaces.
#[derive(Clone, Copy, Debug)]
pub(super) enum Conduit {
    Media,
    Retrievable,
}

impl Conduit {
    fn column_value(self) -> &'static str {
        match self {
            Self::Media => "media",
            Self::Retrievable => "retrievable",
        }
    }
}

/// Writes `bytes` under (`conduit`, the context's conversation, `id`), replacing the bytes
/// that conversation stored under that id before. Other conversations' bytes are never touched.
pub(super) async fn write(
    workers: &Arc<Workers>,
    ctx: &StorageContext,
    conduit: Conduit,
    id: String,
    bytes: ConduitBytes,
) -> Result<(), StorageError> {
    let owner = Owner::of(ctx);
    match bytes {
        ConduitBytes::Text(text) => {
            write_whole(workers, conduit, owner, id, Bytes::from(text)).await
        }
        ConduitBytes::Bytes(whole) => write_whole(workers, conduit, owner, id, whole).await,
        ConduitBytes::Stream(stream) => {
            write_stream(workers, ctx, conduit, owner, id, stream).await
        }
    }
}

// Bytes already in memory go in with one short transaction.
async fn write_whole(
    workers: &Workers,
    conduit: Conduit,
    owner: Owner,
    id: String,
    whole: Bytes,
) -> Result<(), StorageError> {
    workers
        .writer
        .run(move |connection| {
            let transaction = connection
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(backend(format!("writing bytes `{id}`")))?;
            let key = insert_blob(&transaction, conduit, &owner, &id)?;
            let (byte_length, chunk_count) = append_chunks(&transaction, key, 0, &whole, &id)?;
            publish(
                &transaction,
                conduit,
                &owner,
                &id,
                key,
                byte_length,
                chunk_count,
            )?;
            transaction
                .commit()
                .map_err(backend(format!("finishing bytes `{id}`")))
        })
        .await
}

// A stream is staged: its blob row is invisible to every lookup while chunks arrive, and each
// chunk is written in a short transaction of its own, so a stream that stalls holds nothing
// but its own staged rows — every other write, from this conversation or another, goes on. The
// last step swaps the staged bytes for the old ones in one transaction, so a reader sees either
// the old bytes or the new ones, never half a payload. A failed, cancelled or abandoned stream
// has its staged rows removed and leaves the earlier bytes in place.
async fn write_stream(
    workers: &Arc<Workers>,
    ctx: &StorageContext,
    conduit: Conduit,
    owner: Owner,
    id: String,
    mut stream: ByteStream,
) -> Result<(), StorageError> {
    let staged = {
        let owner = owner.clone();
        let id = id.clone();
        workers
            .writer
            .run(move |connection| {
                let transaction = connection
                    .transaction()
                    .map_err(backend(format!("staging bytes `{id}`")))?;
                let key = insert_blob(&transaction, conduit, &owner, &id)?;
                transaction
                    .commit()
                    .map_err(backend(format!("staging bytes `{id}`")))?;
                Ok(key)
            })
            .await?
    };
    let mut staging = Staging {
        workers: Arc::clone(workers),
        key: staged,
        finished: false,
    };
    let mut byte_length = 0_u64;
    let mut chunk_count = 0_i64;
    let cancellation = ctx.cancellation().clone();
    loop {
        let item = tokio::select! {
            item = stream.next() => item,
            () = cancellation.cancelled() => return Err(StorageError::cancelled(ctx)),
        };
        match item {
            Some(Ok(chunk)) => {
                let id = id.clone();
                let key = staging.key;
                let (added_bytes, added_chunks) = workers
                    .writer
                    .run(move |connection| {
                        let transaction = connection
                            .transaction()
                            .map_err(backend(format!("writing bytes `{id}`")))?;
                        let added = append_chunks(&transaction, key, chunk_count, &chunk, &id)?;
                        transaction
                            .commit()
                            .map_err(backend(format!("writing bytes `{id}`")))?;
                        Ok(added)
                    })
                    .await?;
                byte_length += added_bytes;
                chunk_count += added_chunks;
            }
            Some(Err(source)) => {
                return Err(StorageError::Bytes(ByteStoreError::InputStream {
                    id,
                    source,
                }));
            }
            None => break,
        }
    }
    let key = staging.key;
    workers
        .writer
        .run(move |connection| {
            let transaction = connection
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(backend(format!("finishing bytes `{id}`")))?;
            publish(
                &transaction,
                conduit,
                &owner,
                &id,
                key,
                byte_length,
                chunk_count,
            )?;
            transaction
                .commit()
                .map_err(backend(format!("finishing bytes `{id}`")))
        })
        .await?;
    staging.finished = true;
    Ok(())
}

/// Removes a staged stream's rows unless it was published, whichever way the write ended
/// (error, cancellation, or the caller dropping the future).
struct Staging {
    workers: Arc<Workers>,
    key: i64,
    finished: bool,
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let key = self.key;
        // Handed to the writer without waiting: a destructor cannot await. If this removal
        // fails, the next open removes the rows once they are old enough.
        self.workers.writer.submit(move |connection| {
            connection
                .execute(
                    "DELETE FROM blobs WHERE key = ?1 AND staged_at IS NOT NULL",
                    [key],
                )
                .map(drop)
                .map_err(backend("removing staged bytes"))
        });
    }
}

// A new blob row, staged: stamped with the time and invisible to lookups until `publish`. A
// blob written in one transaction is staged and published within it, so the unique index never
// sees two current rows for one id.
fn insert_blob(
    transaction: &rusqlite::Transaction<'_>,
    conduit: Conduit,
    owner: &Owner,
    id: &str,
) -> Result<i64, StorageError> {
    transaction
        .execute(
            &format!(
                "INSERT INTO blobs ({COLUMNS}, conduit, id, byte_length, chunk_count, staged_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, 0, unixepoch())"
            ),
            owner_params!(owner, conduit.column_value(), id),
        )
        .map_err(backend(format!("writing bytes `{id}`")))?;
    Ok(transaction.last_insert_rowid())
}

// Large incoming chunks are split so that every stored chunk, and so every chunk a reader hands
// out, is at most CHUNK_SIZE. Returns the bytes and chunks added.
fn append_chunks(
    transaction: &rusqlite::Transaction<'_>,
    key: i64,
    first_sequence: i64,
    bytes: &[u8],
    id: &str,
) -> Result<(u64, i64), StorageError> {
    let mut statement = transaction
        .prepare_cached("INSERT INTO blob_chunks (blob_key, sequence, data) VALUES (?1, ?2, ?3)")
        .map_err(backend(format!("writing bytes `{id}`")))?;
    let mut sequence = first_sequence;
    for piece in bytes.chunks(CHUNK_SIZE) {
        statement
            .execute(params![key, sequence, piece])
            .map_err(backend(format!("writing bytes `{id}`")))?;
        sequence += 1;
    }
    Ok((bytes.len() as u64, sequence - first_sequence))
}

// Makes the staged blob `key` the bytes of (conduit, owner, id): the previous bytes go (their
// chunks with them, ON DELETE CASCADE) and the staged row becomes visible.
fn publish(
    transaction: &rusqlite::Transaction<'_>,
    conduit: Conduit,
    owner: &Owner,
    id: &str,
    key: i64,
    byte_length: u64,
    chunk_count: i64,
) -> Result<(), StorageError> {
    let operation = || format!("finishing bytes `{id}`");
    let byte_length = i64::try_from(byte_length).map_err(|_| {
        StorageError::backend(format!("the bytes `{id}` are longer than SQLite can count"))
    })?;
    transaction
        .execute(
            &format!(
                "DELETE FROM blobs
                 WHERE {MATCHES} AND conduit = ?5 AND id = ?6 AND staged_at IS NULL"
            ),
            owner_params!(owner, conduit.column_value(), id),
        )
        .map_err(backend(operation()))?;
    let published = transaction
        .execute(
            "UPDATE blobs SET byte_length = ?1, chunk_count = ?2, staged_at = NULL
             WHERE key = ?3 AND staged_at IS NOT NULL",
            params![byte_length, chunk_count, key],
        )
        .map_err(backend(operation()))?;
    if published == 0 {
        return Err(StorageError::backend(format!(
            "the staged bytes `{id}` were removed before they were complete (the database was \
             opened again after they had been arriving for an hour); nothing was stored"
        )));
    }
    Ok(())
}

/// Reads the bytes stored under one id, always the latest version written under it.
pub(super) struct BlobSource {
    workers: Arc<Workers>,
    conduit: Conduit,
    owner: Owner,
    id: String,
}

impl BlobSource {
    pub(super) fn new(workers: Arc<Workers>, conduit: Conduit, owner: Owner, id: String) -> Self {
        Self {
            workers,
            conduit,
            owner,
            id,
        }
    }

    /// Whether bytes are stored under this source's id.
    pub(super) async fn exists(&self) -> Result<bool, StorageError> {
        Ok(self.current().await?.is_some())
    }

    // The key, byte length and chunk count of the bytes stored under the id now.
    async fn current(&self) -> Result<Option<(i64, u64, i64)>, StorageError> {
        let conduit = self.conduit.column_value();
        let owner = self.owner.clone();
        let id = self.id.clone();
        self.workers
            .reader()
            .run(move |connection| {
                connection
                    .query_row(
                        &format!(
                            "SELECT key, byte_length, chunk_count FROM blobs
                             WHERE {MATCHES} AND conduit = ?5 AND id = ?6 AND staged_at IS NULL"
                        ),
                        owner_params!(owner, conduit, id),
                        |row| {
                            let byte_length: i64 = row.get(1)?;
                            // Lengths are written from a u64 that fit in an i64, so never negative.
                            Ok((row.get(0)?, byte_length.unsigned_abs(), row.get(2)?))
                        },
                    )
                    .optional()
                    .map_err(backend(format!("looking up bytes `{id}`")))
            })
            .await
    }

    fn missing(&self) -> ByteStoreError {
        ByteStoreError::Missing {
            id: self.id.clone(),
        }
    }

    fn failure(&self, error: StorageError) -> ByteStoreError {
        ByteStoreError::Source {
            id: self.id.clone(),
            source: Box::new(error),
        }
    }

    fn chunk_stream(&self) -> ByteStream {
        let source = Self::new(
            Arc::clone(&self.workers),
            self.conduit,
            self.owner.clone(),
            self.id.clone(),
        );
        // State: the blob's key and chunk count once looked up, and the next chunk to read.
        let start: Option<(i64, i64)> = None;
        let stream = futures_util::stream::try_unfold(
            (source, start, 0_i64),
            |(source, blob, next)| async move {
                let (key, chunk_count) = match blob {
                    Some(found) => found,
                    None => match source.current().await {
                        Ok(Some((key, _, chunk_count))) => (key, chunk_count),
                        Ok(None) => return Err(source.missing().into_io()),
                        Err(error) => return Err(source.failure(error).into_io()),
                    },
                };
                if next >= chunk_count {
                    return Ok(None);
                }
                let chunk = source
                    .workers
                    .reader()
                    .run(move |connection| {
                        connection
                            .query_row(
                                "SELECT data FROM blob_chunks WHERE blob_key = ?1 AND sequence = ?2",
                                params![key, next],
                                |row| row.get::<_, Vec<u8>>(0),
                            )
                            .optional()
                            .map_err(backend("reading a chunk of stored bytes"))
                    })
                    .await;
                match chunk {
                    Ok(Some(data)) => Ok(Some((
                        Bytes::from(data),
                        (source, Some((key, chunk_count)), next + 1),
                    ))),
                    // Rewritten or deleted while this stream was reading it.
                    Ok(None) => Err(source.missing().into_io()),
                    Err(error) => Err(source.failure(error).into_io()),
                }
            },
        );
        Box::pin(stream)
    }
}

impl SpoolSource for BlobSource {
    fn id(&self) -> &str {
        &self.id
    }

    fn byte_length(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>> {
        Box::pin(async move {
            match self.current().await {
                Ok(Some((_, byte_length, _))) => Ok(byte_length),
                Ok(None) => Err(self.missing()),
                Err(error) => Err(self.failure(error)),
            }
        })
    }

    fn stream(&self) -> ByteStream {
        self.chunk_stream()
    }

    fn describe(&self) -> Option<ReaderDescriptor> {
        Some(ReaderDescriptor::new(STORE_NAME, self.id.clone()))
    }
}

impl MediaSource for BlobSource {
    fn stream(&self) -> ByteStream {
        self.chunk_stream()
    }

    fn byte_length(&self) -> BoxFuture<'_, Option<u64>> {
        Box::pin(async move {
            match self.current().await {
                Ok(Some((_, byte_length, _))) => Some(byte_length),
                _ => None,
            }
        })
    }

    fn describe(&self) -> Option<ReaderDescriptor> {
        Some(ReaderDescriptor::new(STORE_NAME, self.id.clone()))
    }
}
