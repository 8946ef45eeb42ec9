//! The byte conduits: bytes written chunk by chunk into `adk_rs_blob_chunks` without a
//! transaction spanning the upload, and the reader sources that stream them back out one chunk
//! at a time.
//!
//! A write first inserts an incomplete `adk_rs_blobs` row (its own short transaction), then
//! each chunk as it arrives (one short statement each, on whichever pooled connection is free),
//! and last, in one short transaction, removes the bytes stored under the same id before and
//! marks the new row complete. Readers only ever see complete rows, so they see the old bytes
//! or the new ones, never half of either; and a stalled source holds no transaction, no lock
//! and no connection while the upload waits for it.

use bytes::Bytes;
use deadpool_postgres::Pool;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;

use crate::bytes::{
    ByteStoreError, ByteStream, CHUNK_SIZE, ConduitBytes, MediaSource, ReaderDescriptor,
    SpoolSource,
};
use crate::storage::{StorageContext, StorageError};

use super::error::{backend, no_connection};
use super::scope::Scope;

/// The name readers give in their [`ReaderDescriptor`], so a stored handle can be re-attached.
pub(super) const STORE_NAME: &str = "postgres";

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

/// How far a write has got: the incomplete row's key and what has been appended to it.
struct Upload {
    key: i64,
    id: String,
    byte_length: i64,
    chunk_count: i64,
}

/// Writes `bytes` under (`conduit`, `id`) in `ctx`'s scope, replacing earlier bytes only once
/// the new ones are all stored. A failed, cancelled or refused write leaves the earlier bytes.
pub(super) async fn write(
    pool: &Pool,
    ctx: &StorageContext,
    conduit: Conduit,
    id: String,
    bytes: ConduitBytes,
) -> Result<(), StorageError> {
    let scope = Scope::of(ctx);
    let mut upload = begin(pool, &scope, conduit, id).await?;
    let written = match bytes {
        ConduitBytes::Text(text) => upload.append(pool, text.as_bytes()).await,
        ConduitBytes::Bytes(whole) => upload.append(pool, &whole).await,
        ConduitBytes::Stream(stream) => upload.append_stream(pool, ctx, stream).await,
    };
    let finished = match written {
        Ok(()) => upload.finish(pool, &scope, conduit).await,
        Err(error) => Err(error),
    };
    if finished.is_err() {
        // Best effort: a row left behind is invisible to readers and removed on a later open.
        if let Ok(client) = pool.get().await {
            let _ = client
                .execute("DELETE FROM adk_rs_blobs WHERE key = $1", &[&upload.key])
                .await;
        }
    }
    finished
}

async fn begin(
    pool: &Pool,
    scope: &Scope,
    conduit: Conduit,
    id: String,
) -> Result<Upload, StorageError> {
    let operation = || format!("starting to write bytes `{id}`");
    let client = pool.get().await.map_err(no_connection(&operation))?;
    let statement = client
        .prepare_cached(
            "INSERT INTO adk_rs_blobs (app_name, user_id, session_id, thread_id, conduit, id) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING key",
        )
        .await
        .map_err(backend(&operation))?;
    let row = client
        .query_one(
            &statement,
            &[
                &scope.app,
                &scope.user,
                &scope.session,
                &scope.thread,
                &conduit.column_value(),
                &id,
            ],
        )
        .await
        .map_err(backend(&operation))?;
    Ok(Upload {
        key: row.get(0),
        id,
        byte_length: 0,
        chunk_count: 0,
    })
}

impl Upload {
    // Large incoming chunks are split so that every stored chunk, and so every chunk a reader
    // hands out, is at most CHUNK_SIZE. The connection is held only while these inserts run.
    async fn append(&mut self, pool: &Pool, bytes: &[u8]) -> Result<(), StorageError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let operation = || format!("writing bytes `{}`", self.id);
        let client = pool.get().await.map_err(no_connection(&operation))?;
        let statement = client
            .prepare_cached(
                "INSERT INTO adk_rs_blob_chunks (blob_key, sequence, data) VALUES ($1, $2, $3)",
            )
            .await
            .map_err(backend(&operation))?;
        for piece in bytes.chunks(CHUNK_SIZE) {
            client
                .execute(&statement, &[&self.key, &self.chunk_count, &piece])
                .await
                .map_err(backend(&operation))?;
            self.chunk_count += 1;
            // A piece is at most CHUNK_SIZE bytes, far below i64::MAX.
            self.byte_length += i64::try_from(piece.len()).unwrap_or(i64::MAX);
        }
        Ok(())
    }

    // Each chunk is stored as soon as it arrives, so memory stays at one chunk whatever the
    // payload's size; a cancelled turn stops the write even while its stream stalls.
    async fn append_stream(
        &mut self,
        pool: &Pool,
        ctx: &StorageContext,
        mut stream: ByteStream,
    ) -> Result<(), StorageError> {
        let cancellation = ctx.cancellation().clone();
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                () = cancellation.cancelled() => return Err(StorageError::cancelled(ctx)),
            };
            match item {
                Some(Ok(chunk)) => self.append(pool, &chunk).await?,
                Some(Err(source)) => {
                    return Err(StorageError::Bytes(ByteStoreError::InputStream {
                        id: self.id.clone(),
                        source,
                    }));
                }
                None => return Ok(()),
            }
        }
    }

    async fn finish(
        &self,
        pool: &Pool,
        scope: &Scope,
        conduit: Conduit,
    ) -> Result<(), StorageError> {
        let operation = || format!("finishing bytes `{}`", self.id);
        let mut client = pool.get().await.map_err(no_connection(&operation))?;
        let transaction = client.transaction().await.map_err(backend(&operation))?;
        let conduit = conduit.column_value();
        // Two writers finishing the same id take turns, so the second removes the first's
        // bytes instead of colliding with them on the one-complete-blob-per-id index.
        transaction
            .execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(
                     concat_ws(chr(31), $1::TEXT, $2::TEXT, $3::TEXT, $4::TEXT, $5::TEXT, $6::TEXT), 0))",
                &[
                    &scope.app,
                    &scope.user,
                    &scope.session,
                    &scope.thread,
                    &conduit,
                    &self.id,
                ],
            )
            .await
            .map_err(backend(&operation))?;
        // The chunks of the bytes this replaces go with their row (ON DELETE CASCADE).
        transaction
            .execute(
                "DELETE FROM adk_rs_blobs \
                 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4 \
                 AND conduit = $5 AND id = $6 AND complete",
                &[
                    &scope.app,
                    &scope.user,
                    &scope.session,
                    &scope.thread,
                    &conduit,
                    &self.id,
                ],
            )
            .await
            .map_err(backend(&operation))?;
        transaction
            .execute(
                "UPDATE adk_rs_blobs SET complete = TRUE, byte_length = $1, chunk_count = $2 \
                 WHERE key = $3",
                &[&self.byte_length, &self.chunk_count, &self.key],
            )
            .await
            .map_err(backend(&operation))?;
        transaction.commit().await.map_err(backend(&operation))
    }
}

/// Reads the bytes stored under one id in one scope, always the latest complete version.
pub(super) struct BlobSource {
    pool: Pool,
    scope: Scope,
    conduit: Conduit,
    id: String,
}

impl BlobSource {
    pub(super) fn new(pool: Pool, scope: Scope, conduit: Conduit, id: String) -> Self {
        Self {
            pool,
            scope,
            conduit,
            id,
        }
    }

    /// Whether complete bytes are stored under this source's id.
    pub(super) async fn exists(&self) -> Result<bool, StorageError> {
        Ok(self.current().await?.is_some())
    }

    // The key, byte length and chunk count of the bytes stored under the id now.
    async fn current(&self) -> Result<Option<(i64, u64, i64)>, StorageError> {
        let operation = || format!("looking up bytes `{}`", self.id);
        let client = self.pool.get().await.map_err(no_connection(&operation))?;
        let statement = client
            .prepare_cached(
                "SELECT key, byte_length, chunk_count FROM adk_rs_blobs \
                 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4 \
                 AND conduit = $5 AND id = $6 AND complete",
            )
            .await
            .map_err(backend(&operation))?;
        let row = client
            .query_opt(
                &statement,
                &[
                    &self.scope.app,
                    &self.scope.user,
                    &self.scope.session,
                    &self.scope.thread,
                    &self.conduit.column_value(),
                    &self.id,
                ],
            )
            .await
            .map_err(backend(&operation))?;
        Ok(row.map(|row| {
            let byte_length: i64 = row.get(1);
            // Lengths are sums of chunk lengths, so never negative.
            (row.get(0), byte_length.unsigned_abs(), row.get(2))
        }))
    }

    async fn chunk(&self, key: i64, sequence: i64) -> Result<Option<Vec<u8>>, StorageError> {
        let operation = "reading a chunk of stored bytes";
        let client = self.pool.get().await.map_err(no_connection(operation))?;
        let statement = client
            .prepare_cached(
                "SELECT data FROM adk_rs_blob_chunks WHERE blob_key = $1 AND sequence = $2",
            )
            .await
            .map_err(backend(operation))?;
        let row = client
            .query_opt(&statement, &[&key, &sequence])
            .await
            .map_err(backend(operation))?;
        Ok(row.map(|row| row.get(0)))
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
            self.pool.clone(),
            self.scope.clone(),
            self.conduit,
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
                match source.chunk(key, next).await {
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
