//! PostgreSQL battery: [`PostgresStorage`], a [`StorageAdapter`] that keeps every primitive and
//! both byte conduits, and [`PostgresSessionStore`], a
//! [`SessionStore`](crate::state::SessionStore) for session state, in one PostgreSQL database
//! shared by any number of processes (cargo feature `postgres`; TLS with `postgres-tls`).
//!
//! # What is stored where
//!
//! - Six tables, `adk_rs_memories`, `adk_rs_messages`, `adk_rs_thoughts`, `adk_rs_tool_calls`,
//!   `adk_rs_retrievables` and `adk_rs_standing_instructions`, one row per record, keyed by
//!   (`app_name`, `user_id`, `session_id`, `thread_id`, `id`): the turn's identity, so two
//!   apps, users, sessions or threads never see each other's records. The record is kept
//!   whole as JSONB and read back through the primitive's own deserializer, so a row edited
//!   into something invalid is reported, not passed on. Fetches return records in the order
//!   they were stored (an identity `sequence`); a mutate is an `UPDATE` in place, so the record
//!   keeps its position. Standing instructions have no id; their text is the key, and storing
//!   an equal instruction again adds no copy.
//! - `adk_rs_blobs` and `adk_rs_blob_chunks` hold the bytes of the two conduits, in the same
//!   scope, in chunks of at most [`CHUNK_SIZE`](crate::bytes::CHUNK_SIZE) bytes. A streamed
//!   write stores each chunk as it arrives, holding no transaction (and no connection) while it
//!   waits for the next; the new bytes replace the old ones in one short transaction at the
//!   end. Readers stream the chunks back one at a time. A stored handle
//!   ([`ReaderDescriptor`](crate::bytes::ReaderDescriptor) with store `"postgres"`) finds its
//!   bytes again through [`PostgresStorage::retrievable_reader`] or
//!   [`PostgresStorage::media_reader`]; fetched retrievables whose text was spooled here come
//!   back with their reader attached.
//! - Tools are not stored: a [`Tool`] holds its handler, which cannot be persisted.
//! - Session state, through [`PostgresSessionStore`] (from [`PostgresStorage::session_store`],
//!   on the same pool, or connected on its own): Google ADK's v1 tables (`app_states`,
//!   `user_states`, `sessions`, ...) with `JSONB` state, shared with google-adk, and
//!   `adk_rs_middleware_state` for typed middleware state's records. A commit is one short
//!   transaction under row locks, refused whole when stale.
//!
//! The tables are prefixed `adk_rs_` so they can share a database with a Google ADK
//! deployment's tables. The schema is versioned in `adk_rs_migrations`; connecting applies the
//! missing migrations (one process at a time, under an advisory lock) and refuses a database
//! migrated by a newer adk ([`PostgresError::SchemaTooNew`]). Migration 3 gives the assistant
//! messages, thoughts and tool calls written before records carried an
//! [`AnswerLink`](crate::primitives::AnswerLink) their link, inferred turn by turn by
//! [`link_legacy_answers`](crate::primitives::link_legacy_answers).
//!
//! # Concurrency and durability
//!
//! Every call is one statement or one short transaction on a pooled connection (see
//! [`PostgresOptions::pool_size`]), and returns only after PostgreSQL committed it, so an
//! acknowledged write survives the process being killed at any moment. One exception, asked for, inside
//! a turn whose session store came from [`PostgresStorage::session_store_one_flush`]: the turn's assistant
//! messages are held back and written in the transaction that commits its state, one flush of
//! the server's log for the turn instead of two; any other call the turn makes writes them
//! first, and the runner writes them before `run` returns when no commit took them (see "What
//! is atomic" below). Two processes storing
//! the same id at once get one success and one [`StorageError::Conflict`]; nothing is stored
//! twice.
//!
//! # Example
//!
//! ```no_run
//! use adk::postgres::PostgresStorage;
//! use adk::primitives::Message;
//! use adk::storage::{StorageAdapter, StorageContext};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let storage = PostgresStorage::connect("postgresql://agent@db.internal/agents").await?;
//! let ctx = StorageContext::new("conversation-1");
//! storage.store_message(&ctx, Message::user("m-1", "Hello")?).await?;
//!
//! // Another process connected to the same database sees the message.
//! let elsewhere = PostgresStorage::connect("postgresql://agent@db.internal/agents").await?;
//! assert_eq!(elsewhere.fetch_messages(&ctx).await?.len(), 1);
//! # Ok(())
//! # }
//! ```

//!
#![doc = ""]
#![doc = include_str!("../../docs/postgres.md")]

mod app_cache;
mod approvals;
mod blob;
mod checked_writes;
mod commit;
mod error;
mod group;
mod group_rows;
mod ledger;
mod lineage;
mod options;
mod records;
mod schema;
mod scope;
mod scope_writes;
mod session;
mod session_events;

use deadpool_postgres::Pool;

use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::primitives::Role;
use crate::primitives::{
    Memory, Message, Retrievable, RetrievableContent, StandingInstruction, Thought, Tool, ToolCall,
};
use crate::state::SessionStoreError;
use crate::storage::{CommitPartner, StorageAdapter, StorageContext, StorageError};

pub use error::PostgresError;
pub use options::{DEFAULT_POOL_SIZE, PostgresOptions};
pub use session::PostgresSessionStore;
/// The driver, re-exported so that [`PostgresOptions::from_config`] can be given a
/// `tokio_postgres::Config` without a second dependency to keep in step.
pub use tokio_postgres;

use blob::{BlobSource, Conduit};
use records::Stored;
use scope::Scope;

/// A [`StorageAdapter`] over one PostgreSQL database, shared safely by any number of processes:
/// all six primitives and both byte conduits persisted, as described in the
/// [module documentation](self).
///
/// Cloning is cheap and every clone shares one connection pool.
///
/// ```no_run
/// use adk::TurnRunner;
/// use adk::dispatch::executor_fn;
/// use adk::postgres::PostgresStorage;
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let storage = PostgresStorage::connect(&std::env::var("DATABASE_URL")?).await?;
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
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresStorage {
    pool: Pool,
    /// Names this pool's database to the session stores it hands out, whose commits take the
    /// turn's held assistant messages (`storage::held`).
    partner: CommitPartner,
}

impl std::fmt::Debug for PostgresStorage {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        formatter
            .debug_struct("PostgresStorage")
            .field("max_connections", &status.max_size)
            .field("open_connections", &status.size)
            .finish()
    }
}

impl PostgresStorage {
    /// Connects to the database at `url` with a pool of [`DEFAULT_POOL_SIZE`] connections and
    /// no TLS, and brings its schema up to date.
    ///
    /// # Errors
    ///
    /// [`StorageError::Backend`] with a [`PostgresError`] as its source when the URL cannot be
    /// parsed, the server cannot be reached or refuses the login, a migration fails, or the
    /// database's schema is newer than this code knows ([`PostgresError::SchemaTooNew`]).
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), adk::storage::StorageError> {
    /// let storage = adk::postgres::PostgresStorage::connect("postgresql://agent@localhost/agents").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, StorageError> {
        let options = PostgresOptions::from_url(url).map_err(StorageError::backend)?;
        Self::connect_with(options).await
    }

    /// Connects as `options` say (pool size, schema, TLS) and brings the schema up to date.
    ///
    /// # Errors
    ///
    /// As for [`connect`](Self::connect).
    ///
    /// ```no_run
    /// use adk::postgres::{PostgresOptions, PostgresStorage};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let options = PostgresOptions::from_url("postgresql://agent@localhost/agents")?
    ///     .pool_size(32)
    ///     .schema("support_bot")?;
    /// let storage = PostgresStorage::connect_with(options).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_with(options: PostgresOptions) -> Result<Self, StorageError> {
        let pool = options.build_pool()?;
        schema::migrate(&pool, options.schema_name())
            .await
            .map_err(StorageError::backend)?;
        Ok(Self {
            pool,
            partner: CommitPartner::new(),
        })
    }

    /// The newest schema version this code knows; connecting brings a database up to it.
    ///
    /// ```
    /// assert_eq!(adk::postgres::PostgresStorage::schema_version(), 7);
    /// ```
    #[must_use]
    pub fn schema_version() -> i64 {
        schema::SCHEMA_VERSION
    }

    /// A reader over the retrievable bytes stored under `id` in `ctx`'s scope (app, user,
    /// session, thread), or `None` if none are. Use it to re-attach a
    /// [`SpooledArtifact`](crate::primitives::SpooledArtifact) read back from storage, whose
    /// handle names store `"postgres"` and this id.
    ///
    /// # Errors
    ///
    /// [`StorageError::Backend`] when the lookup fails.
    ///
    /// ```no_run
    /// use adk::postgres::PostgresStorage;
    /// use adk::storage::{StorageAdapter, StorageContext};
    ///
    /// # async fn example(storage: PostgresStorage) -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = StorageContext::new("c");
    /// storage.store_retrievable_bytes(&ctx, "manual".into(), "one\ntwo".into()).await?;
    /// let reader = storage.retrievable_reader(&ctx, "manual").await?.expect("stored above");
    /// assert_eq!(reader.line(1).await?.as_deref(), Some("two"));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn retrievable_reader(
        &self,
        ctx: &StorageContext,
        id: &str,
    ) -> Result<Option<SpoolReader>, StorageError> {
        let source = self.source(ctx, Conduit::Retrievable, id.to_owned());
        Ok(source.exists().await?.then(|| SpoolReader::new(source)))
    }

    /// A reader over the media bytes stored under `id` in `ctx`'s scope, or `None` if none are.
    ///
    /// # Errors
    ///
    /// [`StorageError::Backend`] when the lookup fails.
    ///
    /// ```no_run
    /// use adk::postgres::PostgresStorage;
    /// use adk::storage::{StorageAdapter, StorageContext};
    ///
    /// # async fn example(storage: PostgresStorage) -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = StorageContext::new("c");
    /// storage.store_media_bytes(&ctx, "logo".into(), vec![0x89, b'P', b'N', b'G'].into()).await?;
    /// let reader = storage.media_reader(&ctx, "logo").await?.expect("stored above");
    /// assert_eq!(&reader.read_all().await?[..], b"\x89PNG");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn media_reader(
        &self,
        ctx: &StorageContext,
        id: &str,
    ) -> Result<Option<MediaReader>, StorageError> {
        let source = self.source(ctx, Conduit::Media, id.to_owned());
        Ok(source.exists().await?.then(|| MediaReader::new(source)))
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
        BlobSource::new(self.pool.clone(), Scope::of(ctx), conduit, id)
    }

    /// Writes, oldest first, the assistant messages the turn's hold keeps for this database
    /// (`storage::held`): every call but the holding store makes this first, so a held message
    /// is never read past, overtaken or outlived by a write of the same turn. A failed write's
    /// error is this call's; the messages after it stay held.
    async fn release(&self, ctx: &StorageContext) -> Result<(), StorageError> {
        match ctx.held_for(&self.partner) {
            Some(held) => records::write_held(&self.pool, held).await,
            None => Ok(()),
        }
    }

    async fn fetch<Record: Stored>(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<Record>, StorageError> {
        self.release(ctx).await?;
        records::fetch(&self.pool, ctx).await
    }

    async fn store<Record: Stored>(
        &self,
        ctx: &StorageContext,
        record: Record,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        records::store(&self.pool, ctx, record).await
    }

    async fn mutate<Record: Stored>(
        &self,
        ctx: &StorageContext,
        record: Record,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        records::mutate(&self.pool, ctx, record).await
    }

    async fn delete<Record: Stored>(
        &self,
        ctx: &StorageContext,
        key: String,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        records::delete::<Record>(&self.pool, ctx, key).await
    }
}

impl PostgresStorage {
    /// A session store on this storage's database and connection pool, for the runner's
    /// [`session_store`](crate::runner::TurnRunnerBuilder::session_store): conversations and their
    /// session state in one database, through one pool.
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::Backend`] with [`PostgresError::AdkSchemaVersion`] when the
    /// database's Google ADK tables are of another schema version than 1, or when the version
    /// cannot be read.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let storage = adk::postgres::PostgresStorage::connect("postgresql://agent@localhost/agents").await?;
    /// let sessions = storage.session_store().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn session_store(&self) -> Result<PostgresSessionStore, SessionStoreError> {
        session::PostgresSessionStore::on_pool(self.pool.clone(), None).await
    }

    /// A [`session_store`](Self::session_store) whose commits also write the assistant
    /// messages the turn stored through this storage: such a turn flushes the server's log
    /// once instead of twice (the message's own commit, then the state's). The messages are
    /// held in the turn until its commit, or until any other call of the turn to this storage,
    /// which writes them first; the runner writes what no commit took before `run` returns.
    ///
    /// The trade: `store_message` of an assistant message returns before the row exists, so a
    /// message id another process already stored is not reported by that call as
    /// [`StorageError::Conflict`]; the turn's commit fails instead (`E_STATE_COMMIT_FAILED`, the
    /// conflict as its source) and its state is not committed. Use [`session_store`](Self::session_store) when an executor relies on that
    /// conflict (deterministic ids that make a retried turn's store fail). See "What is
    /// atomic" in `docs/postgres.md`.
    ///
    /// # Errors
    ///
    /// As for [`session_store`](Self::session_store).
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let storage = adk::postgres::PostgresStorage::connect("postgresql://agent@localhost/agents").await?;
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
    /// # Ok(())
    /// # }
    /// ```
    pub async fn session_store_one_flush(&self) -> Result<PostgresSessionStore, SessionStoreError> {
        session::PostgresSessionStore::on_pool(self.pool.clone(), Some(self.partner.clone())).await
    }
}

// Store of an id already present is a `Conflict` (store creates, mutate replaces); mutate of an
// absent id is `NotFound`; delete of an absent id succeeds, so deletes can be retried.
impl StorageAdapter for PostgresStorage {
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
        // An assistant message of a turn whose session store commits to this database waits
        // for that commit's transaction: one flush for the turn (`storage::held`).
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
        blob::write(&self.pool, ctx, Conduit::Media, id.clone(), bytes).await?;
        Ok(MediaReader::new(self.source(ctx, Conduit::Media, id)))
    }

    async fn store_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        self.release(ctx).await?;
        blob::write(&self.pool, ctx, Conduit::Retrievable, id.clone(), bytes).await?;
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

    // One round trip for a new call id (an insert that returns its row); a second, a read, only
    // when the call id was recorded before.
    async fn record_tool_intent(
        &self,
        ctx: &StorageContext,
        intent: crate::storage::ledger::ToolIntent,
    ) -> Result<Option<crate::storage::ledger::ToolRecord>, StorageError> {
        self.release(ctx).await?;
        ledger::record_intent(&self.pool, ctx, intent).await
    }

    async fn record_tool_result(
        &self,
        ctx: &StorageContext,
        call_id: String,
        result: crate::storage::ledger::ToolResult,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        ledger::record_result(&self.pool, ctx, call_id, result).await
    }

    async fn record_approval_request(
        &self,
        ctx: &StorageContext,
        request: crate::storage::approvals::ApprovalRequest,
    ) -> Result<Option<crate::storage::approvals::ApprovalRecord>, StorageError> {
        self.release(ctx).await?;
        approvals::record_request(&self.pool, ctx, request).await
    }

    async fn pending_approvals(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<crate::storage::approvals::ApprovalRequest>, StorageError> {
        self.release(ctx).await?;
        approvals::pending(&self.pool, ctx).await
    }

    async fn answer_approval(
        &self,
        ctx: &StorageContext,
        call_id: String,
        decision: serde_json::Value,
    ) -> Result<crate::storage::approvals::Answered, StorageError> {
        self.release(ctx).await?;
        approvals::answer(&self.pool, ctx, call_id, decision).await
    }

    // One statement (one round trip): the ledger's result and the call's record commit
    // together.
    async fn mutate_tool_call_with_result(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
        result: crate::storage::ledger::ToolResult,
    ) -> Result<(), StorageError> {
        self.release(ctx).await?;
        ledger::mutate_call_with_result(&self.pool, ctx, tool_call, result).await
    }
}
