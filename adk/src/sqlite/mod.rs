//! SQLite storage battery: [`SqliteStorage`], a [`StorageAdapter`] that keeps every primitive
//! and both byte conduits in one SQLite database file (cargo feature `sqlite`).
//!
//! # What is stored where
//!
//! - Six tables, `memories`, `messages`, `thoughts`, `tool_calls`, `retrievables` and
//!   `standing_instructions`, one row per record, keyed by its owner — app, user, conversation
//!   (session) and thread, as the [`StorageContext`] names them — and its id. The record
//!   is kept whole as its serde JSON (`record`) and read back through the primitive's own
//!   deserializer, so a row edited into something invalid is reported, not passed on. Each row
//!   has an insertion `sequence`: fetches return records in the order they were stored, and a
//!   mutate is an `UPDATE` in place, so the record keeps its position. Standing instructions
//!   have no id; their text is the key, and storing an equal instruction again adds no copy.
//!   `turn_id` records which turn last wrote the row.
//! - `blobs` and `blob_chunks` hold the bytes of the two conduits: one `blobs` row per
//!   (owner, conduit, id) and the bytes as rows of at most
//!   [`CHUNK_SIZE`](crate::bytes::CHUNK_SIZE) bytes. Bytes belong to their owner like every
//!   record: two conversations (or apps, users, threads) may write under the same id and each
//!   reads back its own, and no lookup crosses into another. A streamed write inserts each chunk as it
//!   arrives and never gathers the payload; the returned [`SpoolReader`] / [`MediaReader`]
//!   streams the chunks back from the database one at a time. A stored handle
//!   ([`ReaderDescriptor`](crate::bytes::ReaderDescriptor) with store `"sqlite"`) finds its
//!   bytes again through [`SqliteStorage::retrievable_reader`] or [`SqliteStorage::media_reader`]
//!   with the conversation's context. Fetched retrievables whose text was spooled here come back
//!   with their reader attached.
//! - Tools are not stored: a [`Tool`] holds its handler, which cannot be persisted, so
//!   [`fetch_tools`](StorageAdapter::fetch_tools) returns an empty list. The runner's tools come
//!   from its builder.
//!
//! The schema is versioned with `PRAGMA user_version` (now 5); [`SqliteStorage::open`] creates
//! it in a new file, upgrades an older file in place (one transaction: what version 1 wrote
//! predates apps, users and threads, so it joins the default app, user and thread, each record
//! and blob keeping the conversation that wrote it; keys, order and bytes are kept; version 3
//! gives the assistant messages, thoughts and tool calls written before records carried an
//! [`AnswerLink`](crate::primitives::AnswerLink) their link, inferred turn by turn by
//! [`link_legacy_answers`](crate::primitives::link_legacy_answers); version 4 adds the
//! [tool ledger](crate::storage::ledger), one row per owner, turn and call id; version 5
//! the [durable approvals](crate::storage::approvals), one row per owner and call id), and refuses a file written
//! by a newer schema ([`SqliteError::SchemaTooNew`]), or a file with no schema version that
//! already holds tables adk did not create ([`SqliteError::ForeignTables`]). Both are found with
//! read-only queries before anything is written (the WAL switch included), so a refused file is
//! left byte-for-byte unchanged.
//!
//! # Threading
//!
//! No SQLite call runs on an async runtime thread. Each database gets one writer thread, which
//! owns the only writing connection, and two reader threads with read-only connections; calls
//! are sent to them as jobs over channels and their answers awaited. One writer matches SQLite,
//! which admits one write transaction at a time: queueing writes in order is cheaper and fairer
//! than retrying on lock errors. WAL mode lets the readers run while the writer writes.
//! [`SqliteStorage::in_memory`] has no file for readers to share, so its one thread does both.
//!
//! A streamed byte write never holds the writer while it waits for its stream: it is staged
//! in rows no lookup sees, each arriving chunk written in a short transaction of its own, and
//! published in one last transaction that swaps it for the earlier bytes. A stream that stalls
//! therefore delays no other write, from any conversation; it waits until its stream yields,
//! fails, or the turn is cancelled ([`StorageError::Cancelled`]), and a write that ends without
//! completing has its staged rows removed and leaves the earlier bytes in place. Staged rows
//! left by a process that died mid-upload are removed when the file is next opened, once they
//! are an hour old.
//!
//! # Durability
//!
//! Every write is one transaction, and a call returns only after it committed. The database is
//! in WAL mode with `synchronous=NORMAL`: a committed transaction is in the WAL file before the
//! call returns, so it survives the process being killed (even with SIGKILL) at any moment. What
//! `NORMAL` gives up, compared with `FULL`, is an `fsync` per commit: after a power loss or an
//! operating-system crash the last few commits may be lost, though the database stays
//! consistent. Foreign keys are on and connections wait up to ten seconds for another
//! process's lock (busy timeout).
//!
//! # Example
//!
//! ```
//! use adk::primitives::Message;
//! use adk::sqlite::SqliteStorage;
//! use adk::storage::{StorageAdapter, StorageContext};
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let folder = std::env::temp_dir().join(format!("adk-sqlite-doc-{}", std::process::id()));
//! let storage = SqliteStorage::open(folder.join("agent.db")).await?;
//! let ctx = StorageContext::new("conversation-1");
//!
//! storage.store_message(&ctx, Message::user("m-1", "Hello")?).await?;
//! storage.store_message(&ctx, Message::assistant("m-2", "Hi! How can I help?")?).await?;
//!
//! // A second handle on the same file sees what the first wrote.
//! let reopened = SqliteStorage::open(folder.join("agent.db")).await?;
//! let ids: Vec<String> = reopened
//!     .fetch_messages(&ctx)
//!     .await?
//!     .iter()
//!     .map(|message| message.id().to_owned())
//!     .collect();
//! assert_eq!(ids, ["m-1", "m-2"]);
//! # std::fs::remove_dir_all(&folder).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

//!
#![doc = ""]
#![doc = include_str!("../../docs/sqlite.md")]

mod adk_json;
mod app_row;
mod approvals;
mod blob;
mod error;
mod held;
mod ledger;
mod lineage;
mod owner;
mod records;
mod schema;
mod session;
mod session_events;
mod session_schema;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::primitives::Role;
use crate::primitives::{
    Memory, Message, Retrievable, RetrievableContent, StandingInstruction, Thought, Tool, ToolCall,
};
use crate::state::SessionStoreError;
use crate::storage::{CommitPartner, StorageAdapter, StorageContext, StorageError};

pub use error::SqliteError;
pub use session::SqliteSessionStore;

use blob::{BlobSource, Conduit};
use owner::Owner;
use records::Stored;
use worker::Workers;

// Two readers let a fetch and a byte stream (or two fetches) proceed together without keeping
// many idle connections; reads are short, so more rarely help on the cores an agent runs on.
const READER_COUNT: usize = 2;

/// A [`StorageAdapter`] over one SQLite database file: all six primitives and both byte
/// conduits persisted, with the threading and durability described in the
/// [module documentation](self).
///
/// Cloning is cheap and every clone uses the same connections; the threads stop when the last
/// clone (and the last reader it returned) is dropped.
///
/// ```
/// use adk::TurnRunner;
/// use adk::dispatch::executor_fn;
/// use adk::sqlite::SqliteStorage;
///
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// # let folder = std::env::temp_dir().join(format!("adk-sqlite-runner-doc-{}", std::process::id()));
/// let storage = SqliteStorage::open(folder.join("agent.db")).await?;
/// let runner = TurnRunner::builder()
///     .storage(storage.clone())
///     .executor(executor_fn(|ctx: &mut adk::DispatchContext| {
///         Box::pin(async move {
///             ctx.ack()?;
///             Ok::<(), adk::pipeline::BoxError>(())
///         })
///     }))
///     .build();
/// # let _ = runner;
/// # std::fs::remove_dir_all(&folder).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct SqliteStorage {
    workers: Arc<Workers>,
    path: Arc<PathBuf>,
    /// This database, for the session store [`session_store_one_flush`](Self::session_store_one_flush)
    /// hands out: its commits take the turn's held assistant messages (`storage::held`).
    partner: CommitPartner,
}

impl SqliteStorage {
    /// Opens (or creates) the database at `path`, creating its folder if needed and the schema
    /// if the file is new.
    ///
    /// # Errors
    ///
    /// [`StorageError::Backend`] with a [`SqliteError`] as its source when the folder cannot be
    /// created, SQLite cannot open the file or switch it to WAL mode, or the file's schema is
    /// newer than this code knows ([`SqliteError::SchemaTooNew`]), or the file has no schema
    /// version and holds tables adk did not create ([`SqliteError::ForeignTables`]). A refused
    /// file is left byte-for-byte unchanged: it is checked before anything is written to it.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// let folder = std::env::temp_dir().join(format!("adk-sqlite-open-doc-{}", std::process::id()));
    /// let storage = adk::sqlite::SqliteStorage::open(folder.join("nested/agent.db")).await.unwrap();
    /// assert!(storage.path().exists());
    /// # std::fs::remove_dir_all(&folder).ok();
    /// # });
    /// ```
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        let path = path.as_ref().to_owned();
        if let Some(folder) = path
            .parent()
            .filter(|folder| !folder.as_os_str().is_empty())
        {
            tokio::fs::create_dir_all(folder).await.map_err(|source| {
                StorageError::backend(SqliteError::CreateFolder {
                    folder: folder.to_owned(),
                    source,
                })
            })?;
        }
        let workers = Workers::start(&path, READER_COUNT).await?;
        Ok(Self {
            workers,
            path: Arc::new(path),
            partner: CommitPartner::new(),
        })
    }

    /// A fresh database that lives in memory only, for tests and throw-away runs: nothing
    /// survives the last clone being dropped. One thread serves both reads and writes, so a
    /// streamed byte write must not wait on a read from this same storage.
    ///
    /// # Errors
    ///
    /// [`StorageError::Backend`] when SQLite cannot create the database or its thread cannot
    /// start.
    ///
    /// ```
    /// use adk::primitives::Memory;
    /// use adk::sqlite::SqliteStorage;
    /// use adk::storage::{StorageAdapter, StorageContext};
    ///
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// let storage = SqliteStorage::in_memory().await?;
    /// let ctx = StorageContext::new("c");
    /// storage.store_memory(&ctx, Memory::new("likes-tea", "The user likes tea.", 0.5, 0.5)?).await?;
    /// assert_eq!(storage.fetch_memories(&ctx).await?.len(), 1);
    /// assert_eq!(storage.path(), std::path::Path::new(":memory:"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn in_memory() -> Result<Self, StorageError> {
        Ok(Self {
            workers: Workers::start_in_memory().await?,
            path: Arc::new(PathBuf::from(":memory:")),
            partner: CommitPartner::new(),
        })
    }

    /// The database file this storage writes to (`:memory:` for [`in_memory`](Self::in_memory)).
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), adk::storage::StorageError> {
    /// let storage = adk::sqlite::SqliteStorage::open("data/agent.db").await?;
    /// assert!(storage.path().ends_with("agent.db"));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A reader over the retrievable bytes `ctx`'s conversation stored under `id`, or `None` if
    /// it stored none (bytes another conversation stored under the same id are not found). Use
    /// it to re-attach a [`SpooledArtifact`](crate::primitives::SpooledArtifact) read back from
    /// storage, whose handle names store `"sqlite"` and this id.
    ///
    /// # Errors
    ///
    /// [`StorageError::Backend`] when the lookup fails.
    ///
    /// ```
    /// use adk::sqlite::SqliteStorage;
    /// use adk::storage::{StorageAdapter, StorageContext};
    ///
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let folder = std::env::temp_dir().join(format!("adk-sqlite-spool-doc-{}", std::process::id()));
    /// let storage = SqliteStorage::open(folder.join("agent.db")).await?;
    /// let ctx = StorageContext::new("c");
    /// storage.store_retrievable_bytes(&ctx, "manual".into(), "one\ntwo".into()).await?;
    ///
    /// let reader = storage.retrievable_reader(&ctx, "manual").await?.expect("stored above");
    /// assert_eq!(reader.line(1).await?.as_deref(), Some("two"));
    /// assert!(storage.retrievable_reader(&ctx, "missing").await?.is_none());
    ///
    /// let other = StorageContext::new("another conversation");
    /// assert!(storage.retrievable_reader(&other, "manual").await?.is_none());
    /// # std::fs::remove_dir_all(&folder).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn retrievable_reader(
        &self,
        ctx: &StorageContext,
        id: &str,
    ) -> Result<Option<SpoolReader>, StorageError> {
        let source = self.source(ctx, Conduit::Retrievable, id.to_owned());
        Ok(source.exists().await?.then(|| SpoolReader::new(source)))
    }

    /// A reader over the media bytes `ctx`'s conversation stored under `id`, or `None` if it
    /// stored none.
    ///
    /// # Errors
    ///
    /// [`StorageError::Backend`] when the lookup fails.
    ///
    /// ```
    /// use adk::sqlite::SqliteStorage;
    /// use adk::storage::{StorageAdapter, StorageContext};
    ///
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let folder = std::env::temp_dir().join(format!("adk-sqlite-media-doc-{}", std::process::id()));
    /// let storage = SqliteStorage::open(folder.join("agent.db")).await?;
    /// let ctx = StorageContext::new("c");
    /// storage.store_media_bytes(&ctx, "logo".into(), vec![0x89, b'P', b'N', b'G'].into()).await?;
    ///
    /// let reader = storage.media_reader(&ctx, "logo").await?.expect("stored above");
    /// assert_eq!(&reader.read_all().await?[..], b"\x89PNG");
    /// # std::fs::remove_dir_all(&folder).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn media_reader(
        &self,
        ctx: &StorageContext,
        id: &str,
    ) -> Result<Option<MediaReader>, StorageError> {
        let source = self.source(ctx, Conduit::Media, id.to_owned());
        Ok(source.exists().await?.then(|| MediaReader::new(source)))
    }

    /// Runs SQLite's `PRAGMA integrity_check` on the database and returns its verdict: `"ok"`
    /// for a sound database, otherwise SQLite's description of each problem, one per line.
    ///
    /// # Errors
    ///
    /// [`StorageError::Backend`] when the check itself cannot run.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let folder = std::env::temp_dir().join(format!("adk-sqlite-check-doc-{}", std::process::id()));
    /// let storage = adk::sqlite::SqliteStorage::open(folder.join("agent.db")).await?;
    /// assert_eq!(storage.integrity_check().await?, "ok");
    /// # std::fs::remove_dir_all(&folder).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn integrity_check(&self) -> Result<String, StorageError> {
        self.workers
            .reader()
            .run(|connection| {
                let operation = "checking the database's integrity";
                let mut statement = connection
                    .prepare("PRAGMA integrity_check")
                    .map_err(error::backend(operation))?;
                let verdicts = statement
                    .query_map([], |row| row.get::<_, String>(0))
                    .map_err(error::backend(operation))?
                    .collect::<Result<Vec<String>, _>>()
                    .map_err(error::backend(operation))?;
                Ok(verdicts.join("\n"))
            })
            .await
    }

    /// A [`SqliteSessionStore`] on this database that also writes the assistant messages a
    /// turn stores through this storage in the transaction committing the turn's state: such a
    /// turn makes one WAL commit instead of two (the message's own, then the state's) and hands
    /// one job fewer to a database thread. The store commits on this storage's writer
    /// connection and loads a turn's state on its readers (the session tables, Google ADK's v1
    /// layout, live in this file), so it needs no thread of its own. The messages are held in the turn until its commit, or until any other call
    /// of the turn to this storage, which writes them first; the runner writes what no commit
    /// took (a failed or aborted turn, a refused commit) before `run` returns.
    ///
    /// Durability is unchanged: the commit returns only once its transaction is in the WAL,
    /// and a process killed before it loses the held answer exactly as if it had been killed
    /// before the model answered. The trade: `store_message` of an assistant message returns
    /// before the row exists, so a message id already stored is not reported by that call as
    /// [`StorageError::Conflict`]; the turn's commit fails instead (`E_STATE_COMMIT_FAILED`,
    /// the conflict as its source), commits none of the turn's state, and the runner's write
    /// of the message reports the conflict too. Use [`SqliteSessionStore::open`] on the same
    /// file when an executor relies on that conflict.
    ///
    /// # Errors
    ///
    /// As for [`SqliteSessionStore::open`]: the session tables cannot be created, or the file
    /// holds Google ADK tables of another schema version or a `sessions` table that is not
    /// Google ADK's.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let folder = std::env::temp_dir().join(format!("adk-sqlite-one-flush-doc-{}", std::process::id()));
    /// let storage = adk::sqlite::SqliteStorage::open(folder.join("agent.db")).await?;
    /// let runner = adk::TurnRunner::builder()
    ///     .storage(storage.clone())
    ///     .session_store(storage.session_store_one_flush().await?)
    ///     .executor(adk::dispatch::executor_fn(|ctx: &mut adk::DispatchContext| {
    ///         Box::pin(async move {
    ///             ctx.ack()?;
    ///             Ok::<(), adk::pipeline::BoxError>(())
    ///         })
    ///     }))
    ///     .build();
    /// # let _ = runner;
    /// # std::fs::remove_dir_all(&folder).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn session_store_one_flush(&self) -> Result<SqliteSessionStore, SessionStoreError> {
        SqliteSessionStore::on_storage(Arc::clone(&self.workers), &self.path, self.partner.clone())
            .await
    }

    fn reattach(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<Retrievable, StorageError> {
        let RetrievableContent::Artifact(artifact) = retrievable.content() else {
            return Ok(retrievable);
        };
        let stored_here = artifact
            .reader()
            .describe()
            .is_some_and(|handle| handle.store() == blob::STORE_NAME);
        if !artifact.reader().is_detached() || !stored_here {
            return Ok(retrievable);
        }
        let reader =
            SpoolReader::new(self.source(ctx, Conduit::Retrievable, artifact.id().to_owned()));
        let content = RetrievableContent::Artifact(artifact.clone().attach(reader));
        let id = retrievable.id().to_owned();
        retrievable.with_content(content).map_err(|error| {
            StorageError::backend(format!(
                "the stored retrievable `{id}` could not take back its spooled text: {error}"
            ))
        })
    }

    fn source(&self, ctx: &StorageContext, conduit: Conduit, id: String) -> BlobSource {
        BlobSource::new(Arc::clone(&self.workers), conduit, Owner::of(ctx), id)
    }

    /// Writes, oldest first, the assistant messages the turn's hold keeps for this database
    /// (`storage::held`): every call but the holding store's commit makes this first, so a held
    /// message is never read past, overtaken or outlived by a write of the same turn. A failed
    /// write's error is this call's; the messages after it stay held.
    async fn release(&self, ctx: &StorageContext) -> Result<(), StorageError> {
        match ctx.held_for(&self.partner) {
            Some(held) => held::write_held(&self.workers, held).await,
            None => Ok(()),
        }
    }

    async fn fetch<Record: Stored>(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<Record>, StorageError> {
        self.release(ctx).await?;
        records::fetch(&self.workers, ctx).await
    }

    async fn store<Record: Stored>(
        &self,
        ctx: &StorageContext,
        record: Record,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        records::store(&self.workers, ctx, record).await
    }

    async fn mutate<Record: Stored>(
        &self,
        ctx: &StorageContext,
        record: Record,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        records::mutate(&self.workers, ctx, record).await
    }

    async fn delete<Record: Stored>(
        &self,
        ctx: &StorageContext,
        key: String,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        records::delete::<Record>(&self.workers, ctx, key).await
    }
}

// Store of an id already present is a `Conflict` (store creates, mutate replaces); mutate of an
// absent id is `NotFound`; delete of an absent id succeeds, so deletes can be retried.
impl StorageAdapter for SqliteStorage {
    async fn fetch_memories(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
        self.fetch(ctx).await
    }

    async fn fetch_messages(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        self.fetch(ctx).await
    }

    async fn fetch_thoughts(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError> {
        self.fetch(ctx).await
    }

    async fn fetch_tool_calls(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError> {
        self.fetch(ctx).await
    }

    // A tool holds its handler, which cannot be persisted: the runner's tools come from its
    // builder, and this database has none to add.
    async fn fetch_tools(&self, _ctx: &StorageContext) -> Result<Vec<Tool>, StorageError> {
        Ok(Vec::new())
    }

    // A retrievable whose text was spooled into this database comes back from its JSON with a
    // detached reader; it is re-attached here so its text can be read at once.
    async fn fetch_retrievables(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<Retrievable>, StorageError> {
        let fetched: Vec<Retrievable> = self.fetch(ctx).await?;
        fetched
            .into_iter()
            .map(|retrievable| self.reattach(ctx, retrievable))
            .collect()
    }

    async fn refresh_standing_instructions(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<StandingInstruction>, StorageError> {
        self.fetch(ctx).await
    }

    async fn store_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError> {
        self.store(ctx, memory).await
    }

    async fn mutate_memory(
        &self,
        ctx: &StorageContext,
        memory: Memory,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, memory).await
    }

    async fn delete_memory(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.delete::<Memory>(ctx, id).await
    }

    async fn store_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        // An assistant message of a turn whose session store commits on this database's
        // writer waits for that commit's transaction: one WAL commit for the turn
        // (`storage::held`).
        let message = match ctx.held_for(&self.partner) {
            Some(held) if message.role() == Role::Assistant => match held.hold(ctx, message) {
                None => return Ok(()),
                Some(closed) => closed,
            },
            _ => message,
        };
        self.store(ctx, message).await
    }

    async fn mutate_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, message).await
    }

    async fn delete_message(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.delete::<Message>(ctx, id).await
    }

    async fn store_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.store(ctx, thought).await
    }

    async fn mutate_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, thought).await
    }

    async fn delete_thought(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.delete::<Thought>(ctx, id).await
    }

    async fn store_tool_call(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> Result<(), StorageError> {
        self.store(ctx, tool_call).await
    }

    async fn mutate_tool_call(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, tool_call).await
    }

    async fn delete_tool_call(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.delete::<ToolCall>(ctx, id).await
    }

    async fn store_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.store(ctx, retrievable).await
    }

    async fn mutate_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, retrievable).await
    }

    async fn delete_retrievable(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<(), StorageError> {
        self.delete::<Retrievable>(ctx, id).await
    }

    async fn store_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.store(ctx, instruction).await
    }

    async fn mutate_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, instruction).await
    }

    async fn delete_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.delete::<StandingInstruction>(ctx, instruction.render())
            .await
    }

    async fn store_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, StorageError> {
        self.release(ctx).await?;
        blob::write(&self.workers, ctx, Conduit::Media, id.clone(), bytes).await?;
        Ok(MediaReader::new(self.source(ctx, Conduit::Media, id)))
    }

    async fn store_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        self.release(ctx).await?;
        blob::write(&self.workers, ctx, Conduit::Retrievable, id.clone(), bytes).await?;
        Ok(SpoolReader::new(self.source(ctx, Conduit::Retrievable, id)))
    }

    async fn read_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<Option<MediaReader>, StorageError> {
        self.release(ctx).await?;
        self.media_reader(ctx, &id).await
    }

    async fn read_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<Option<SpoolReader>, StorageError> {
        self.release(ctx).await?;
        self.retrievable_reader(ctx, &id).await
    }

    // Atomic: the deletes and the stores are one transaction, so a failure (a replacement whose
    // id is already stored, say) changes nothing.
    async fn replace_tool_call_group(
        &self,
        ctx: &StorageContext,
        ids: Vec<String>,
        replacements: Vec<ToolCall>,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        records::replace_tool_call_group(&self.workers, ctx, ids, replacements).await
    }

    // The check and the insert are one transaction on the single writer, so two runs of a call
    // id cannot both find no record.
    async fn record_tool_intent(
        &self,
        ctx: &StorageContext,
        intent: crate::storage::ledger::ToolIntent,
    ) -> Result<Option<crate::storage::ledger::ToolRecord>, StorageError> {
        self.release(ctx).await?;
        ledger::record_intent(&self.workers, ctx, intent).await
    }

    async fn record_tool_result(
        &self,
        ctx: &StorageContext,
        call_id: String,
        result: crate::storage::ledger::ToolResult,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        ledger::record_result(&self.workers, ctx, call_id, result).await
    }

    // The check and the insert are one transaction on the single writer.
    async fn record_approval_request(
        &self,
        ctx: &StorageContext,
        request: crate::storage::approvals::ApprovalRequest,
    ) -> Result<Option<crate::storage::approvals::ApprovalRecord>, StorageError> {
        self.release(ctx).await?;
        approvals::record_request(&self.workers, ctx, request).await
    }

    async fn pending_approvals(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<crate::storage::approvals::ApprovalRequest>, StorageError> {
        self.release(ctx).await?;
        approvals::pending(&self.workers, ctx).await
    }

    async fn answer_approval(
        &self,
        ctx: &StorageContext,
        call_id: String,
        decision: serde_json::Value,
    ) -> Result<crate::storage::approvals::Answered, StorageError> {
        self.release(ctx).await?;
        approvals::answer(&self.workers, ctx, call_id, decision).await
    }

    // One writer transaction: the ledger's result and the call's record commit together.
    async fn mutate_tool_call_with_result(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
        result: crate::storage::ledger::ToolResult,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        ledger::mutate_call_with_result(&self.workers, ctx, tool_call, result).await
    }
}
