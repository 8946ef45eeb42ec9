//! The byte conduits: bytes written chunk by chunk into `blob_chunks`, and the reader sources
//! that stream them back out one chunk at a time.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};

use crate::bytes::{
    ByteStoreError, ByteStream, CHUNK_SIZE, ConduitBytes, MediaSource, ReaderDescriptor,
    SpoolSource,
};
use crate::storage::{StorageContext, StorageError};

use super::error::backend;
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

// How many chunks may wait between the incoming stream and the writer thread. With chunks of
// at most a few CHUNK_SIZE, this bounds what a streamed write holds in memory.
const CHUNKS_IN_FLIGHT: usize = 4;

enum FeedStopped {
    Failed(std::io::Error),
    Cancelled,
}

enum Piece {
    Chunk(Bytes),
    End,
}

/// Writes `bytes` under (`conduit`, `id`) in one transaction, replacing earlier bytes.
pub(super) async fn write(
    workers: &Workers,
    ctx: &StorageContext,
    conduit: Conduit,
    id: String,
    bytes: ConduitBytes,
) -> Result<(), StorageError> {
    let conversation_id = ctx.conversation_id().as_str().to_owned();
    match bytes {
        ConduitBytes::Text(text) => {
            write_whole(workers, conduit, conversation_id, id, Bytes::from(text)).await
        }
        ConduitBytes::Bytes(whole) => {
            write_whole(workers, conduit, conversation_id, id, whole).await
        }
        ConduitBytes::Stream(stream) => {
            write_stream(workers, ctx, conduit, conversation_id, id, stream).await
        }
    }
}

async fn write_whole(
    workers: &Workers,
    conduit: Conduit,
    conversation_id: String,
    id: String,
    whole: Bytes,
) -> Result<(), StorageError> {
    workers
        .writer
        .run(move |connection| {
            let mut blob = BlobWrite::begin(connection, conduit, &conversation_id, &id)?;
            blob.append(&whole)?;
            blob.commit()
        })
        .await
}

// The writer thread holds one transaction open while the chunks arrive and commits only after
// the last one, so a reader never sees half a payload and a failed stream leaves the earlier
// bytes in place. Other writes queue behind it meanwhile: SQLite admits one writer at a time.
async fn write_stream(
    workers: &Workers,
    ctx: &StorageContext,
    conduit: Conduit,
    conversation_id: String,
    id: String,
    mut stream: ByteStream,
) -> Result<(), StorageError> {
    let (pieces, mut arriving) = tokio::sync::mpsc::channel::<Piece>(CHUNKS_IN_FLIGHT);
    let writer_id = id.clone();
    let written = workers.writer.run(move |connection| {
        let mut blob = BlobWrite::begin(connection, conduit, &conversation_id, &writer_id)?;
        loop {
            match arriving.blocking_recv() {
                Some(Piece::Chunk(chunk)) => blob.append(&chunk)?,
                Some(Piece::End) => return blob.commit().map(|()| true),
                // The caller stopped sending (its stream failed or it was dropped): dropping the
                // transaction rolls it back.
                None => return Ok(false),
            }
        }
    });
    // A cancelled turn stops the write (and so frees the writer) even while its stream stalls.
    let cancellation = ctx.cancellation().clone();
    let feed = async move {
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                () = cancellation.cancelled() => return Err(FeedStopped::Cancelled),
            };
            match item {
                Some(Ok(chunk)) => {
                    if pieces.send(Piece::Chunk(chunk)).await.is_err() {
                        // The writer gave up; its answer carries the reason.
                        return Ok(());
                    }
                }
                Some(Err(source)) => return Err(FeedStopped::Failed(source)),
                None => break,
            }
        }
        let _ = pieces.send(Piece::End).await;
        Ok(())
    };
    let (written, fed) = tokio::join!(written, feed);
    match fed {
        Err(FeedStopped::Failed(source)) => {
            return Err(StorageError::Bytes(ByteStoreError::InputStream {
                id,
                source,
            }));
        }
        Err(FeedStopped::Cancelled) => return Err(StorageError::cancelled(ctx)),
        Ok(()) => {}
    }
    match written? {
        true => Ok(()),
        false => Err(StorageError::backend(format!(
            "the write of bytes `{id}` ended before its stream did; nothing was stored"
        ))),
    }
}

struct BlobWrite<'connection> {
    transaction: rusqlite::Transaction<'connection>,
    key: i64,
    id: String,
    byte_length: u64,
    chunk_count: i64,
}

impl<'connection> BlobWrite<'connection> {
    fn begin(
        connection: &'connection mut Connection,
        conduit: Conduit,
        conversation_id: &str,
        id: &str,
    ) -> Result<Self, StorageError> {
        let operation = || format!("writing bytes `{id}`");
        let transaction = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(backend(operation()))?;
        // The chunks of the bytes this replaces go with their row (ON DELETE CASCADE).
        transaction
            .execute(
                "DELETE FROM blobs WHERE conduit = ?1 AND id = ?2",
                params![conduit.column_value(), id],
            )
            .map_err(backend(operation()))?;
        transaction
            .execute(
                "INSERT INTO blobs (conduit, id, conversation_id, byte_length, chunk_count)
                 VALUES (?1, ?2, ?3, 0, 0)",
                params![conduit.column_value(), id, conversation_id],
            )
            .map_err(backend(operation()))?;
        let key = transaction.last_insert_rowid();
        Ok(Self {
            transaction,
            key,
            id: id.to_owned(),
            byte_length: 0,
            chunk_count: 0,
        })
    }

    // Large incoming chunks are split so that every stored chunk, and so every chunk a reader
    // hands out, is at most CHUNK_SIZE.
    fn append(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        let mut statement = self
            .transaction
            .prepare_cached(
                "INSERT INTO blob_chunks (blob_key, sequence, data) VALUES (?1, ?2, ?3)",
            )
            .map_err(backend(format!("writing bytes `{}`", self.id)))?;
        for piece in bytes.chunks(CHUNK_SIZE) {
            statement
                .execute(params![self.key, self.chunk_count, piece])
                .map_err(backend(format!("writing bytes `{}`", self.id)))?;
            self.chunk_count += 1;
            self.byte_length += piece.len() as u64;
        }
        Ok(())
    }

    fn commit(self) -> Result<(), StorageError> {
        let operation = || format!("finishing bytes `{}`", self.id);
        let byte_length = i64::try_from(self.byte_length).map_err(|_| {
            StorageError::backend(format!(
                "the bytes `{}` are longer than SQLite can count",
                self.id
            ))
        })?;
        self.transaction
            .execute(
                "UPDATE blobs SET byte_length = ?1, chunk_count = ?2 WHERE key = ?3",
                params![byte_length, self.chunk_count, self.key],
            )
            .map_err(backend(operation()))?;
        self.transaction.commit().map_err(backend(operation()))
    }
}

/// Reads the bytes stored under one id, always the latest version written under it.
pub(super) struct BlobSource {
    workers: Arc<Workers>,
    conduit: Conduit,
    id: String,
}

impl BlobSource {
    pub(super) fn new(workers: Arc<Workers>, conduit: Conduit, id: String) -> Self {
        Self {
            workers,
            conduit,
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
        let id = self.id.clone();
        self.workers
            .reader()
            .run(move |connection| {
                connection
                    .query_row(
                        "SELECT key, byte_length, chunk_count FROM blobs
                         WHERE conduit = ?1 AND id = ?2",
                        params![conduit, id],
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
        let source = Self::new(Arc::clone(&self.workers), self.conduit, self.id.clone());
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
