//! The threads that own SQLite connections: one writer and a few readers, each fed jobs through
//! a channel, so no SQLite call ever runs on an async runtime thread.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use rusqlite::Connection;

use crate::storage::StorageError;

use super::error::SqliteError;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// One thread owning one connection. Jobs run in the order they were sent; the thread ends when
/// every handle to it is dropped.
#[derive(Clone, Debug)]
pub(super) struct Worker {
    name: &'static str,
    jobs: mpsc::Sender<Job>,
    /// Jobs sent and not yet finished.
    queued: Arc<AtomicUsize>,
}

impl Worker {
    /// Starts a thread named `name` that opens its connection with `open`, and returns once the
    /// connection is open (or could not be).
    pub(super) async fn start(
        name: &'static str,
        open: impl FnOnce() -> Result<Connection, StorageError> + Send + 'static,
    ) -> Result<Self, StorageError> {
        let (jobs, receiver) = mpsc::channel::<Job>();
        let (opened, open_outcome) = tokio::sync::oneshot::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let finished = Arc::clone(&queued);
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let mut connection = match open() {
                    Ok(connection) => {
                        let _ = opened.send(Ok(()));
                        connection
                    }
                    Err(error) => {
                        let _ = opened.send(Err(error));
                        return;
                    }
                };
                for job in receiver {
                    // A panicking job loses only its own answer (its caller gets an error, and an
                    // open transaction rolls back as it unwinds); the thread serves the next job.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        job(&mut connection);
                    }));
                    finished.fetch_sub(1, Ordering::Relaxed);
                }
            })
            .map_err(|source| StorageError::backend(SqliteError::ThreadStart { name, source }))?;
        open_outcome
            .await
            .map_err(|_| StorageError::backend(SqliteError::WorkerStopped { name }))??;
        Ok(Self { name, jobs, queued })
    }

    /// Whether a job is running or waiting on this worker's thread (a hint: it may change at
    /// once).
    pub(super) fn is_busy(&self) -> bool {
        self.queued.load(Ordering::Relaxed) > 0
    }

    /// Sends `job`, counted until it finishes.
    fn send(&self, job: Job) -> Result<(), mpsc::SendError<Job>> {
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.jobs.send(job).inspect_err(|_| {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        })
    }

    /// Hands `work` to this worker's thread without waiting for it, for callers that cannot
    /// await (a destructor). Its outcome is dropped; if the thread has stopped, nothing runs.
    pub(super) fn submit(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<(), StorageError> + Send + 'static,
    ) {
        let job: Job = Box::new(move |connection| {
            if let Err(error) = work(connection) {
                tracing::warn!(%error, "a background SQLite job failed");
            }
        });
        let _ = self.send(job);
    }

    /// Runs `work` on this worker's thread and waits for its answer without blocking the runtime.
    ///
    /// Once sent, the job runs even if the caller stops waiting: a write that was handed over is
    /// carried out, and only its acknowledgement is lost.
    pub(super) async fn run<Output: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<Output, StorageError> + Send + 'static,
    ) -> Result<Output, StorageError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |connection| {
            let _ = reply.send(work(connection));
        });
        self.send(job)
            .map_err(|_| StorageError::backend(SqliteError::WorkerStopped { name: self.name }))?;
        answer
            .await
            .map_err(|_| StorageError::backend(SqliteError::CallPanicked { name: self.name }))?
    }
}

/// The connections of one database: every write goes to the single writer (SQLite allows one
/// writer at a time anyway, and a queue is fairer than lock retries); reads are spread over the
/// readers, which WAL lets run alongside the writer.
#[derive(Debug)]
pub(super) struct Workers {
    pub(super) writer: Worker,
    readers: Vec<Worker>,
    next_reader: AtomicUsize,
}

impl Workers {
    pub(super) async fn start(path: &Path, reader_count: usize) -> Result<Arc<Self>, StorageError> {
        let writer_path = path.to_owned();
        let writer = Worker::start("adk-sqlite-writer", move || {
            super::schema::open_writer(&writer_path)
        })
        .await?;
        let mut readers = Vec::with_capacity(reader_count);
        for _ in 0..reader_count {
            let reader_path = path.to_owned();
            readers.push(
                Worker::start("adk-sqlite-reader", move || {
                    super::schema::open_reader(&reader_path)
                })
                .await?,
            );
        }
        Ok(Arc::new(Self {
            writer,
            readers,
            next_reader: AtomicUsize::new(0),
        }))
    }

    /// A private in-memory database served by the writer alone (its readers could not see it).
    pub(super) async fn start_in_memory() -> Result<Arc<Self>, StorageError> {
        let writer = Worker::start("adk-sqlite-memory", super::schema::open_in_memory).await?;
        Ok(Arc::new(Self {
            writer,
            readers: Vec::new(),
            next_reader: AtomicUsize::new(0),
        }))
    }

    /// The reader whose turn it is (round robin), or the writer when there are no readers.
    pub(super) fn reader(&self) -> &Worker {
        if self.readers.is_empty() {
            return &self.writer;
        }
        let turn = self.next_reader.fetch_add(1, Ordering::Relaxed);
        &self.readers[turn % self.readers.len()]
    }
}
