//! A conformance suite that checks any [`StorageAdapter`] against the storage contract.
//!
//! Run it from your adapter's tests. Declare which primitives the adapter persists; those are
//! checked fully, the others only have to accept every call without an error (a no-op is a
//! legal implementation). The two byte conduits are always checked fully, because their
//! readers must hand back what was written.
//!
//! For each persisted primitive the suite stores three records, fetches them (all present, in
//! store order, unchanged), and then checks the rules a careless adapter breaks:
//!
//! - **a second store of an id is refused** with [`StorageError::Conflict`] naming the kind and
//!   id, and changes nothing (a standing instruction, identified by value, may instead be
//!   accepted, but is still kept once);
//! - **a mutate of an id never stored** is [`StorageError::NotFound`] naming the kind and id;
//!   **a delete of one** succeeds or is `NotFound`, and removes nothing else;
//! - **conversations are apart**: a second conversation fetches none of the first one's
//!   records, cannot mutate them (`NotFound`) or delete them, and may store a record under the
//!   same id without a conflict, each conversation then fetching its own.
//!
//! Then it mutates the middle record (the fetch shows the new value at the same position),
//! deletes it (gone, the others kept) and deletes the rest. Standing instructions are
//! identified by value, so they are mutated and deleted by value.
//!
//! Each conduit is written with text, binary bytes and a chunked stream, read back byte for
//! byte, then rewritten under the same id to check that the rewrite replaces the first bytes.
//! Two conversations then write different bytes under one id, and each reader must return its
//! own conversation's bytes; when retrievables are persisted, each conversation stores a
//! retrievable spooled under that id, and each fetch must read back its own text.
//!
//! Every run uses two fresh conversation ids and record ids that start with a fresh UUID, and it
//! ignores records it did not write, so it can run against a shared database. Records are
//! compared through their serialized form; sample timestamps are fixed whole seconds, so a
//! database that keeps microseconds hands them back unchanged.
//!
//! ```
//! use adk::storage::NoopStorage;
//! use adk::storage::conformance::Conformance;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // NoopStorage persists no primitive, so none is declared.
//! let report = Conformance::new(NoopStorage::new()).run().await.unwrap();
//! assert!(report.fully_checked().is_empty());
//! assert_eq!(report.accepted_only().len(), 6);
//! # });
//! ```

use std::fmt;
use std::future::Future;

use bytes::Bytes;
use serde::Serialize;

use super::adapter::StorageAdapter;
use super::context::StorageContext;
use super::error::StorageError;
use super::primitive::Primitive;
use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Timestamp, ToolCall, TrustTier,
};

/// A configured conformance run over one adapter.
///
/// ```
/// use adk::storage::{NoopStorage, Primitive};
/// use adk::storage::conformance::Conformance;
///
/// let suite = Conformance::new(NoopStorage::new())
///     .persists(Primitive::Messages)
///     .persists(Primitive::ToolCalls);
/// assert_eq!(suite.persisted(), &[Primitive::Messages, Primitive::ToolCalls]);
///
/// let everything = Conformance::new(NoopStorage::new()).persists_all(Primitive::ALL);
/// assert_eq!(everything.persisted().len(), 6);
/// ```
#[derive(Debug)]
pub struct Conformance<Adapter> {
    adapter: Adapter,
    persisted: Vec<Primitive>,
}

impl<Adapter: StorageAdapter> Conformance<Adapter> {
    /// A run over `adapter` that, until told otherwise, expects it to persist no primitive.
    ///
    /// ```
    /// let suite = adk::storage::conformance::Conformance::new(adk::storage::NoopStorage::new());
    /// assert!(suite.persisted().is_empty());
    /// ```
    pub fn new(adapter: Adapter) -> Self {
        Self {
            adapter,
            persisted: Vec::new(),
        }
    }

    /// Declares that the adapter persists `primitive`, so it is checked fully.
    ///
    /// ```
    /// use adk::storage::{NoopStorage, Primitive};
    /// let suite = adk::storage::conformance::Conformance::new(NoopStorage::new())
    ///     .persists(Primitive::Memories)
    ///     .persists(Primitive::Memories);
    /// assert_eq!(suite.persisted(), &[Primitive::Memories]);
    /// ```
    #[must_use]
    pub fn persists(mut self, primitive: Primitive) -> Self {
        if !self.persisted.contains(&primitive) {
            self.persisted.push(primitive);
        }
        self
    }

    /// Declares several persisted primitives at once, such as [`Primitive::ALL`].
    ///
    /// ```
    /// use adk::storage::{NoopStorage, Primitive};
    /// let suite = adk::storage::conformance::Conformance::new(NoopStorage::new())
    ///     .persists_all([Primitive::Messages, Primitive::ToolCalls]);
    /// assert_eq!(suite.persisted().len(), 2);
    /// ```
    #[must_use]
    pub fn persists_all(self, primitives: impl IntoIterator<Item = Primitive>) -> Self {
        primitives.into_iter().fold(self, Self::persists)
    }

    /// The primitives declared as persisted, in declaration order.
    ///
    /// ```
    /// let suite = adk::storage::conformance::Conformance::new(adk::storage::NoopStorage::new());
    /// assert!(suite.persisted().is_empty());
    /// ```
    #[must_use]
    pub fn persisted(&self) -> &[Primitive] {
        &self.persisted
    }

    /// Runs the whole contract and stops at the first departure from it.
    ///
    /// # Errors
    ///
    /// A [`ConformanceFailure`] naming what was checked, at which step, what the contract
    /// expected and what the adapter did instead.
    ///
    /// ```
    /// use adk::storage::NoopStorage;
    /// use adk::storage::conformance::Conformance;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let report = Conformance::new(NoopStorage::new()).run().await.unwrap();
    /// assert!(report.checks_passed() > 0);
    /// # });
    /// ```
    pub async fn run(self) -> Result<ConformanceReport, ConformanceFailure> {
        let run_id = uuid::Uuid::now_v7().simple().to_string();
        let ctx = StorageContext::new(format!("adk-conformance-{run_id}"));
        let others =
            Partition::ALL.map(|partition| (partition, partition.apart_from(&ctx, &run_id)));
        let mut run = Run {
            adapter: &self.adapter,
            ctx: &ctx,
            others: &others,
            prefix: format!("conformance-{run_id}"),
            checks_passed: 0,
        };
        let mut fully_checked = Vec::new();
        let mut accepted_only = Vec::new();
        for primitive in Primitive::ALL {
            let persisted = self.persisted.contains(&primitive);
            match primitive {
                Primitive::Memories => run.primitive::<Memory>(persisted).await?,
                Primitive::Messages => run.primitive::<Message>(persisted).await?,
                Primitive::Thoughts => run.primitive::<Thought>(persisted).await?,
                Primitive::ToolCalls => run.primitive::<ToolCall>(persisted).await?,
                Primitive::Retrievables => run.primitive::<Retrievable>(persisted).await?,
                Primitive::StandingInstructions => {
                    run.primitive::<StandingInstruction>(persisted).await?;
                }
            }
            if persisted {
                fully_checked.push(primitive);
            } else {
                accepted_only.push(primitive);
            }
        }
        run.tools().await?;
        run.retrievable_bytes().await?;
        run.media_bytes().await?;
        for (partition, other) in &others {
            run.bytes_per_partition(
                *partition,
                other,
                self.persisted.contains(&Primitive::Retrievables),
            )
            .await?;
        }
        Ok(ConformanceReport {
            fully_checked,
            accepted_only,
            checks_passed: run.checks_passed,
        })
    }
}

/// What a successful run checked.
///
/// ```
/// use adk::storage::{NoopStorage, Primitive};
/// use adk::storage::conformance::Conformance;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let report = Conformance::new(NoopStorage::new()).run().await.unwrap();
/// assert!(report.accepted_only().contains(&Primitive::Thoughts));
/// println!("{report}");
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConformanceReport {
    fully_checked: Vec<Primitive>,
    accepted_only: Vec<Primitive>,
    checks_passed: usize,
}

impl ConformanceReport {
    /// The primitives whose store, fetch, mutate and delete were checked to really persist.
    #[must_use]
    pub fn fully_checked(&self) -> &[Primitive] {
        &self.fully_checked
    }

    /// The primitives that were only checked to accept every call without an error.
    #[must_use]
    pub fn accepted_only(&self) -> &[Primitive] {
        &self.accepted_only
    }

    /// How many individual expectations held.
    #[must_use]
    pub fn checks_passed(&self) -> usize {
        self.checks_passed
    }
}

impl fmt::Display for ConformanceReport {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |primitives: &[Primitive]| {
            if primitives.is_empty() {
                String::from("none")
            } else {
                primitives
                    .iter()
                    .map(|primitive| primitive.plural())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        write!(
            formatter,
            "storage conformance passed {} checks; persisted: {}; accepted as no-ops: {}; \
             both byte conduits read back what was written; two conversations stayed apart",
            self.checks_passed,
            names(&self.fully_checked),
            names(&self.accepted_only),
        )
    }
}

/// What a conformance check was about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Subject {
    /// One of the six persisted primitives.
    Primitive(Primitive),
    /// `fetch_tools`.
    Tools,
    /// The `store_media_bytes` conduit.
    MediaBytes,
    /// The `store_retrievable_bytes` conduit.
    RetrievableBytes,
}

impl fmt::Display for Subject {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Primitive(primitive) => formatter.write_str(primitive.plural()),
            Subject::Tools => formatter.write_str("tools"),
            Subject::MediaBytes => formatter.write_str("media bytes"),
            Subject::RetrievableBytes => formatter.write_str("retrievable bytes"),
        }
    }
}

/// The step of the contract at which an adapter departed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// Storing new records.
    Store,
    /// Fetching right after the records were stored.
    FetchAfterStore,
    /// Mutating a stored record.
    Mutate,
    /// Fetching right after the mutate.
    FetchAfterMutate,
    /// Deleting a stored record.
    Delete,
    /// Fetching right after a delete.
    FetchAfterDelete,
    /// Fetching, for a primitive that is not declared as persisted.
    Fetch,
    /// Writing text through a conduit and reading it back.
    WriteText,
    /// Writing binary bytes through a conduit and reading them back.
    WriteBytes,
    /// Writing a chunked stream through a conduit and reading it back.
    WriteStream,
    /// Writing again under an id already written, and reading back.
    Rewrite,
    /// Storing a record under an id the conversation already holds.
    DuplicateStore,
    /// Mutating an id the conversation never stored.
    MutateMissing,
    /// Deleting an id the conversation never stored.
    DeleteMissing,
    /// Fetching from another partition, which must see none of the first one's records.
    FetchFromOther(Partition),
    /// Mutating or deleting, from another partition, records only the first one holds.
    ChangeFromOther(Partition),
    /// Storing, in another partition, a record under an id the first one holds.
    StoreInOther(Partition),
    /// Two partitions writing different bytes under one id, each reading back its own.
    BytesPer(Partition),
}

/// What the second context of an isolation check differs in. Records and bytes belong to the
/// app, user, conversation (session) and thread they were written in, so a context that
/// differs in any one of them must not see them.
///
/// ```
/// use adk::storage::conformance::Partition;
/// assert_eq!(Partition::User.to_string(), "user (same app, conversation and thread)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Partition {
    /// Another conversation (session) id, with the same app, user and thread.
    Conversation,
    /// Another app name, with the same user, conversation and thread.
    App,
    /// Another user id, with the same app, conversation and thread.
    User,
    /// Another thread id, with the same app, user and conversation.
    Thread,
}

impl Partition {
    /// The four partitions, in the order the suite checks them.
    pub const ALL: [Partition; 4] = [
        Partition::Conversation,
        Partition::App,
        Partition::User,
        Partition::Thread,
    ];

    // `ctx` moved to a different partition of this kind.
    fn apart_from(self, ctx: &StorageContext, run_id: &str) -> StorageContext {
        let other = format!("adk-conformance-{run_id}-other");
        let conversation = match self {
            Partition::Conversation => other.clone(),
            _ => ctx.conversation_id().as_str().to_owned(),
        };
        let base = StorageContext::new(conversation)
            .with_app_name(ctx.app_name().clone())
            .with_user_id(ctx.user_id().clone())
            .with_thread_id(ctx.thread_id().clone());
        match self {
            Partition::Conversation => base,
            Partition::App => base.with_app_name(other),
            Partition::User => base.with_user_id(other),
            Partition::Thread => base.with_thread_id(other),
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Partition::Conversation => "conversation",
            Partition::App => "app (same user, conversation and thread)",
            Partition::User => "user (same app, conversation and thread)",
            Partition::Thread => "thread (same app, user and conversation)",
        })
    }
}

impl fmt::Display for Step {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::FetchFromOther(partition) => {
                return write!(formatter, "fetch from another {partition}");
            }
            Step::ChangeFromOther(partition) => {
                return write!(formatter, "mutate or delete from another {partition}");
            }
            Step::StoreInOther(partition) => {
                return write!(formatter, "store the same id in another {partition}");
            }
            Step::BytesPer(partition) => {
                return write!(
                    formatter,
                    "write bytes under one id here and in another {partition}"
                );
            }
            _ => {}
        }
        formatter.write_str(match self {
            Step::Store => "store",
            Step::FetchAfterStore => "fetch after store",
            Step::Mutate => "mutate",
            Step::FetchAfterMutate => "fetch after mutate",
            Step::Delete => "delete",
            Step::FetchAfterDelete => "fetch after delete",
            Step::Fetch => "fetch",
            Step::WriteText => "write text",
            Step::WriteBytes => "write binary bytes",
            Step::WriteStream => "write a chunked stream",
            Step::Rewrite => "rewrite under the same id",
            Step::DuplicateStore => "store an id already stored",
            Step::MutateMissing => "mutate an id never stored",
            Step::DeleteMissing => "delete an id never stored",
            Step::FetchFromOther(_)
            | Step::ChangeFromOther(_)
            | Step::StoreInOther(_)
            | Step::BytesPer(_) => "",
        })
    }
}

/// Where and how an adapter departed from the storage contract.
///
/// ```
/// use adk::storage::{NoopStorage, Primitive};
/// use adk::storage::conformance::{Conformance, Step, Subject};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // NoopStorage keeps no messages, so declaring that it does fails at the first fetch.
/// let failure = Conformance::new(NoopStorage::new())
///     .persists(Primitive::Messages)
///     .run()
///     .await
///     .unwrap_err();
/// assert_eq!(failure.subject, Subject::Primitive(Primitive::Messages));
/// assert_eq!(failure.step, Step::FetchAfterStore);
/// assert!(failure.expected.starts_with("ids [conformance-"));
/// assert_eq!(failure.found, "ids []");
/// assert!(failure.to_string().starts_with(
///     "storage conformance failed for messages at step `fetch after store`: expected ids ["
/// ));
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
#[error(
    "storage conformance failed for {subject} at step `{step}`: expected {expected}, found {found}"
)]
#[non_exhaustive]
pub struct ConformanceFailure {
    /// What was being checked.
    pub subject: Subject,
    /// The step that failed.
    pub step: Step,
    /// What the contract expected.
    pub expected: String,
    /// What the adapter did instead.
    pub found: String,
    /// The adapter's error, when the failing step returned one.
    #[source]
    pub error: Option<StorageError>,
}

// One record kind as the suite sees it: how to make distinct samples, how to recognise them, and
// which adapter callbacks to use.
trait Persisted: Clone + Serialize + Send + Sized + 'static {
    const KIND: Primitive;

    /// A sample whose key starts with `key`; `revision` 1 is the mutated form of revision 0.
    fn sample(key: &str, revision: u32) -> Result<Self, String>;

    /// The id, or for standing instructions the text, that identifies the record.
    fn key(&self) -> String;

    fn fetch<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Self>, StorageError>> + Send;

    fn store<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    fn mutate<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    fn delete<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;
}

// Forwards one primitive's callbacks and makes its samples. `$revision` 1 changes the content.
macro_rules! persisted {
    ($record:ty, $kind:expr, $fetch:ident, $store:ident, $mutate:ident, $delete:ident,
     |$key:ident, $revision:ident| $sample:expr) => {
        impl Persisted for $record {
            const KIND: Primitive = $kind;

            fn sample($key: &str, $revision: u32) -> Result<Self, String> {
                $sample
                    .map(|record| {
                        record
                            .with_created_at(SAMPLE_CREATED_AT)
                            .with_updated_at(sample_updated_at($revision))
                    })
                    .map_err(|error| error.to_string())
            }

            fn key(&self) -> String {
                self.id().to_owned()
            }

            fn fetch<A: StorageAdapter>(
                adapter: &A,
                ctx: &StorageContext,
            ) -> impl Future<Output = Result<Vec<Self>, StorageError>> + Send {
                adapter.$fetch(ctx)
            }

            fn store<A: StorageAdapter>(
                adapter: &A,
                ctx: &StorageContext,
                record: Self,
            ) -> impl Future<Output = Result<(), StorageError>> + Send {
                adapter.$store(ctx, record)
            }

            fn mutate<A: StorageAdapter>(
                adapter: &A,
                ctx: &StorageContext,
                record: Self,
            ) -> impl Future<Output = Result<(), StorageError>> + Send {
                adapter.$mutate(ctx, record)
            }

            fn delete<A: StorageAdapter>(
                adapter: &A,
                ctx: &StorageContext,
                record: Self,
            ) -> impl Future<Output = Result<(), StorageError>> + Send {
                adapter.$delete(ctx, record.id().to_owned())
            }
        }
    };
}

persisted!(
    Memory,
    Primitive::Memories,
    fetch_memories,
    store_memory,
    mutate_memory,
    delete_memory,
    |key, revision| Memory::new(
        key,
        format!("the user prefers metric units (revision {revision})"),
        0.5,
        if revision == 0 { 0.25 } else { 0.75 },
    )
);
persisted!(
    Message,
    Primitive::Messages,
    fetch_messages,
    store_message,
    mutate_message,
    delete_message,
    |key, revision| Message::user(
        key,
        format!("what is the weather like today? (revision {revision})"),
    )
);
persisted!(
    Thought,
    Primitive::Thoughts,
    fetch_thoughts,
    store_thought,
    mutate_thought,
    delete_thought,
    |key, revision| Thought::new(
        key,
        format!("the user asked about weather; check the forecast tool (revision {revision})"),
    )
);
persisted!(
    ToolCall,
    Primitive::ToolCalls,
    fetch_tool_calls,
    store_tool_call,
    mutate_tool_call,
    delete_tool_call,
    |key, revision| tool_call_sample(key, revision)
);
persisted!(
    Retrievable,
    Primitive::Retrievables,
    fetch_retrievables,
    store_retrievable,
    mutate_retrievable,
    delete_retrievable,
    |key, revision| Retrievable::new(
        key,
        format!("Rain is expected in the afternoon. (revision {revision})"),
        TrustTier::FirstParty,
    )
);

// Standing instructions are identified by value: the key is the text, and the mutated form is
// the same value (mutating must not add a second copy).
impl Persisted for StandingInstruction {
    const KIND: Primitive = Primitive::StandingInstructions;

    fn sample(key: &str, _revision: u32) -> Result<Self, String> {
        StandingInstruction::new(format!("{key}: answer in one short paragraph"))
            .map_err(|error| error.to_string())
    }

    fn key(&self) -> String {
        self.render()
    }

    fn fetch<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Self>, StorageError>> + Send {
        adapter.refresh_standing_instructions(ctx)
    }

    fn store<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        adapter.store_standing_instruction(ctx, record)
    }

    fn mutate<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        adapter.mutate_standing_instruction(ctx, record)
    }

    fn delete<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        adapter.delete_standing_instruction(ctx, record)
    }
}

struct Run<'run, Adapter> {
    adapter: &'run Adapter,
    ctx: &'run StorageContext,
    others: &'run [(Partition, StorageContext); 4],
    prefix: String,
    checks_passed: usize,
}

impl<Adapter: StorageAdapter> Run<'_, Adapter> {
    async fn primitive<Record: Persisted>(
        &mut self,
        persisted: bool,
    ) -> Result<(), ConformanceFailure> {
        if persisted {
            self.round_trip::<Record>().await
        } else {
            self.accepts_calls::<Record>().await
        }
    }

    fn sample<Record: Persisted>(
        &self,
        number: u32,
        revision: u32,
    ) -> Result<Record, ConformanceFailure> {
        let key = format!(
            "{}-{}-{number}",
            self.prefix,
            Record::KIND.singular().replace(' ', "-")
        );
        Record::sample(&key, revision).map_err(|reason| ConformanceFailure {
            subject: Subject::Primitive(Record::KIND),
            step: Step::Store,
            expected: format!("a valid sample {} to store", Record::KIND.singular()),
            found: format!("the sample was rejected: {reason}"),
            error: None,
        })
    }

    async fn round_trip<Record: Persisted>(&mut self) -> Result<(), ConformanceFailure> {
        let subject = Subject::Primitive(Record::KIND);
        let first: Record = self.sample(1, 0)?;
        let second: Record = self.sample(2, 0)?;
        let third: Record = self.sample(3, 0)?;

        for record in [&first, &second, &third] {
            let outcome = Record::store(self.adapter, self.ctx, record.clone()).await;
            self.call_succeeded(subject, Step::Store, "store", &record.key(), outcome)?;
        }
        self.expect_fetched(
            Step::FetchAfterStore,
            &[first.clone(), second.clone(), third.clone()],
        )
        .await?;
        let stored = [first.clone(), second.clone(), third.clone()];
        self.refuses_a_duplicate(&stored).await?;
        self.refuses_missing_ids::<Record>(&stored).await?;
        for (partition, other) in self.others {
            self.keeps_partitions_apart(*partition, other, &stored)
                .await?;
        }

        let revised: Record = self.sample(2, 1)?;
        let outcome = Record::mutate(self.adapter, self.ctx, revised.clone()).await;
        self.call_succeeded(subject, Step::Mutate, "mutate", &revised.key(), outcome)?;
        self.expect_fetched(
            Step::FetchAfterMutate,
            &[first.clone(), revised.clone(), third.clone()],
        )
        .await?;

        let outcome = Record::delete(self.adapter, self.ctx, revised.clone()).await;
        self.call_succeeded(subject, Step::Delete, "delete", &revised.key(), outcome)?;
        self.expect_fetched(Step::FetchAfterDelete, &[first.clone(), third.clone()])
            .await?;

        for record in [first, third] {
            let key = record.key();
            let outcome = Record::delete(self.adapter, self.ctx, record).await;
            self.call_succeeded(subject, Step::Delete, "delete", &key, outcome)?;
        }
        self.expect_fetched::<Record>(Step::FetchAfterDelete, &[])
            .await
    }

    // A second store of `stored[0]`'s id (with revised content) is a Conflict and changes
    // nothing. A standing instruction is its own key, so storing it again may also succeed —
    // as long as it is still kept once.
    async fn refuses_a_duplicate<Record: Persisted>(
        &mut self,
        stored: &[Record],
    ) -> Result<(), ConformanceFailure> {
        let step = Step::DuplicateStore;
        let again: Record = self.sample(1, 1)?;
        let outcome = Record::store(self.adapter, self.ctx, again.clone()).await;
        let idempotent = Record::KIND == Primitive::StandingInstructions;
        match outcome {
            Err(StorageError::Conflict { kind, ref id })
                if kind == Record::KIND && *id == again.key() => {}
            Ok(()) if idempotent => {}
            other => {
                return Err(self.wrong_outcome::<Record>(
                    step,
                    format!(
                        "the second store of `{}` to fail with StorageError::Conflict {{ kind: \
                         {:?}, id: \"{}\" }}",
                        again.key(),
                        Record::KIND,
                        again.key()
                    ),
                    other,
                ));
            }
        }
        self.checks_passed += 1;
        self.expect_fetched_in(self.ctx, step, stored).await
    }

    // A mutate of an id never stored is NotFound; a delete of one succeeds or is NotFound; and
    // neither changes the stored records.
    async fn refuses_missing_ids<Record: Persisted>(
        &mut self,
        stored: &[Record],
    ) -> Result<(), ConformanceFailure> {
        let missing: Record = self.sample(9, 0)?;
        let outcome = Record::mutate(self.adapter, self.ctx, missing.clone()).await;
        self.expect_not_found::<Record>(Step::MutateMissing, "mutate", &missing.key(), outcome)?;
        self.expect_fetched_in(self.ctx, Step::MutateMissing, stored)
            .await?;
        let outcome = Record::delete(self.adapter, self.ctx, missing.clone()).await;
        self.expect_deleted_or_not_found::<Record>(Step::DeleteMissing, &missing.key(), outcome)?;
        self.expect_fetched_in(self.ctx, Step::DeleteMissing, stored)
            .await
    }

    // `stored` is what the first partition holds. `other` sees none of it, cannot change it,
    // and may store under the same id as a record of its own.
    async fn keeps_partitions_apart<Record: Persisted>(
        &mut self,
        partition: Partition,
        other: &StorageContext,
        stored: &[Record],
    ) -> Result<(), ConformanceFailure> {
        self.expect_fetched_in::<Record>(other, Step::FetchFromOther(partition), &[])
            .await?;

        let step = Step::ChangeFromOther(partition);
        let revised: Record = self.sample(2, 1)?;
        let outcome = Record::mutate(self.adapter, other, revised.clone()).await;
        self.expect_not_found::<Record>(step, "mutate", &revised.key(), outcome)?;
        let target = stored[2].clone();
        let key = target.key();
        let outcome = Record::delete(self.adapter, other, target).await;
        self.expect_deleted_or_not_found::<Record>(step, &key, outcome)?;
        self.expect_fetched_in(self.ctx, step, stored).await?;

        let step = Step::StoreInOther(partition);
        let theirs: Record = self.sample(1, 1)?;
        let outcome = Record::store(self.adapter, other, theirs.clone()).await;
        self.call_succeeded(
            Subject::Primitive(Record::KIND),
            step,
            "store",
            &theirs.key(),
            outcome,
        )?;
        self.expect_fetched_in(other, step, std::slice::from_ref(&theirs))
            .await?;
        self.expect_fetched_in(self.ctx, step, stored).await?;
        let key = theirs.key();
        let outcome = Record::delete(self.adapter, other, theirs).await;
        self.call_succeeded(
            Subject::Primitive(Record::KIND),
            step,
            "delete",
            &key,
            outcome,
        )?;
        self.expect_fetched_in(self.ctx, step, stored).await
    }

    fn expect_not_found<Record: Persisted>(
        &mut self,
        step: Step,
        operation: &str,
        key: &str,
        outcome: Result<(), StorageError>,
    ) -> Result<(), ConformanceFailure> {
        match outcome {
            Err(StorageError::NotFound { kind, ref id }) if kind == Record::KIND && id == key => {
                self.checks_passed += 1;
                Ok(())
            }
            other => Err(self.wrong_outcome::<Record>(
                step,
                format!(
                    "the {operation} of `{key}` to fail with StorageError::NotFound {{ kind: \
                     {:?}, id: \"{key}\" }}",
                    Record::KIND
                ),
                other,
            )),
        }
    }

    fn expect_deleted_or_not_found<Record: Persisted>(
        &mut self,
        step: Step,
        key: &str,
        outcome: Result<(), StorageError>,
    ) -> Result<(), ConformanceFailure> {
        match outcome {
            Ok(()) => {}
            Err(StorageError::NotFound { kind, ref id }) if kind == Record::KIND && id == key => {}
            other => {
                return Err(self.wrong_outcome::<Record>(
                    step,
                    format!("the delete of `{key}` to succeed or fail with StorageError::NotFound"),
                    other,
                ));
            }
        }
        self.checks_passed += 1;
        Ok(())
    }

    fn wrong_outcome<Record: Persisted>(
        &self,
        step: Step,
        expected: String,
        outcome: Result<(), StorageError>,
    ) -> ConformanceFailure {
        let (found, error) = match outcome {
            Ok(()) => ("success".to_owned(), None),
            Err(error) => (format!("{error:?}"), Some(error)),
        };
        ConformanceFailure {
            subject: Subject::Primitive(Record::KIND),
            step,
            expected,
            found,
            error,
        }
    }

    async fn accepts_calls<Record: Persisted>(&mut self) -> Result<(), ConformanceFailure> {
        let subject = Subject::Primitive(Record::KIND);
        let record: Record = self.sample(1, 0)?;
        let revised: Record = self.sample(1, 1)?;
        let key = record.key();
        let outcome = Record::store(self.adapter, self.ctx, record).await;
        self.call_succeeded(subject, Step::Store, "store", &key, outcome)?;
        let outcome = Record::fetch(self.adapter, self.ctx).await.map(drop);
        self.call_succeeded(subject, Step::Fetch, "fetch", "", outcome)?;
        let outcome = Record::mutate(self.adapter, self.ctx, revised.clone()).await;
        self.call_succeeded(subject, Step::Mutate, "mutate", &key, outcome)?;
        let outcome = Record::delete(self.adapter, self.ctx, revised).await;
        self.call_succeeded(subject, Step::Delete, "delete", &key, outcome)
    }

    fn call_succeeded(
        &mut self,
        subject: Subject,
        step: Step,
        operation: &str,
        key: &str,
        outcome: Result<(), StorageError>,
    ) -> Result<(), ConformanceFailure> {
        match outcome {
            Ok(()) => {
                self.checks_passed += 1;
                Ok(())
            }
            Err(error) => Err(ConformanceFailure {
                subject,
                step,
                expected: if key.is_empty() {
                    format!("the {operation} to succeed")
                } else {
                    format!("the {operation} of `{key}` to succeed")
                },
                found: format!("the error \"{error}\""),
                error: Some(error),
            }),
        }
    }

    // Fetches, keeps only this run's records, and compares them with `expected`: same keys in
    // the same order first, then the same content record by record.
    async fn expect_fetched<Record: Persisted>(
        &mut self,
        step: Step,
        expected: &[Record],
    ) -> Result<(), ConformanceFailure> {
        self.expect_fetched_in(self.ctx, step, expected).await
    }

    async fn expect_fetched_in<Record: Persisted>(
        &mut self,
        ctx: &StorageContext,
        step: Step,
        expected: &[Record],
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::Primitive(Record::KIND);
        let fetched = match Record::fetch(self.adapter, ctx).await {
            Ok(fetched) => fetched,
            Err(error) => {
                return Err(ConformanceFailure {
                    subject,
                    step,
                    expected: "the fetch to succeed".into(),
                    found: format!("the error \"{error}\""),
                    error: Some(error),
                });
            }
        };
        let ours: Vec<Record> = fetched
            .into_iter()
            .filter(|record| record.key().starts_with(&self.prefix))
            .collect();
        let failure = |expected: String, found: String| ConformanceFailure {
            subject,
            step,
            expected,
            found,
            error: None,
        };
        let expected_keys: Vec<String> = expected.iter().map(Persisted::key).collect();
        let found_keys: Vec<String> = ours.iter().map(Persisted::key).collect();
        if expected_keys != found_keys {
            return Err(failure(
                format!("{} {}", key_noun::<Record>(), list(&expected_keys)),
                format!("{} {}", key_noun::<Record>(), list(&found_keys)),
            ));
        }
        for (position, (wanted, got)) in expected.iter().zip(&ours).enumerate() {
            let wanted_json = to_json(wanted);
            let got_json = to_json(got);
            if wanted_json != got_json {
                return Err(failure(
                    format!(
                        "`{}` at position {position} to be {wanted_json}",
                        wanted.key()
                    ),
                    got_json.to_string(),
                ));
            }
        }
        self.checks_passed += 1;
        Ok(())
    }

    async fn tools(&mut self) -> Result<(), ConformanceFailure> {
        let outcome = self.adapter.fetch_tools(self.ctx).await.map(drop);
        self.call_succeeded(Subject::Tools, Step::Fetch, "fetch", "", outcome)
    }

    async fn retrievable_bytes(&mut self) -> Result<(), ConformanceFailure> {
        for (step, content) in conduit_inputs() {
            let id = self.conduit_id("retrievable", step);
            let reader = self.write_spool(step, &id, content.conduit_bytes()).await?;
            self.expect_spool(step, &id, &reader, &content.whole)
                .await?;
        }
        let id = self.conduit_id("retrievable", Step::Rewrite);
        self.write_spool(
            Step::Rewrite,
            &id,
            "first version, longer than the second".into(),
        )
        .await?;
        let reader = self
            .write_spool(Step::Rewrite, &id, "second".into())
            .await?;
        self.expect_spool(Step::Rewrite, &id, &reader, b"second")
            .await
    }

    async fn media_bytes(&mut self) -> Result<(), ConformanceFailure> {
        for (step, content) in conduit_inputs() {
            let id = self.conduit_id("media", step);
            let reader = self.write_media(step, &id, content.conduit_bytes()).await?;
            self.expect_media(step, &id, &reader, &content.whole)
                .await?;
        }
        let id = self.conduit_id("media", Step::Rewrite);
        self.write_media(Step::Rewrite, &id, vec![1_u8; 64].into())
            .await?;
        let reader = self
            .write_media(Step::Rewrite, &id, vec![2_u8; 3].into())
            .await?;
        self.expect_media(Step::Rewrite, &id, &reader, &[2, 2, 2])
            .await
    }

    // Both conversations write different bytes under one id; each reader returns its own
    // conversation's bytes. With retrievables persisted, each conversation also stores a
    // retrievable spooled under that id, and its fetch must read back its own text.
    async fn bytes_per_partition(
        &mut self,
        partition: Partition,
        other: &StorageContext,
        retrievables_persisted: bool,
    ) -> Result<(), ConformanceFailure> {
        let step = Step::BytesPer(partition);
        let id = self.conduit_id(&format!("shared-{partition:?}"), Step::WriteText);
        let conversations = [
            (self.ctx, "the first partition's text\n".repeat(3)),
            (other, "the other's\n".to_owned()),
        ];
        let mut spools = Vec::new();
        let mut media = Vec::new();
        for (ctx, text) in &conversations {
            let spool = self
                .adapter
                .store_retrievable_bytes(ctx, id.clone(), text.clone().into())
                .await
                .map_err(|error| conduit_error(Subject::RetrievableBytes, step, &id, error))?;
            spools.push(spool);
            let reader = self
                .adapter
                .store_media_bytes(ctx, id.clone(), text.clone().into_bytes().into())
                .await
                .map_err(|error| conduit_error(Subject::MediaBytes, step, &id, error))?;
            media.push(reader);
        }
        for ((_, text), (spool, reader)) in conversations.iter().zip(spools.iter().zip(&media)) {
            self.expect_spool(step, &id, spool, text.as_bytes()).await?;
            self.expect_media(step, &id, reader, text.as_bytes())
                .await?;
        }
        if !retrievables_persisted {
            return Ok(());
        }
        let subject = Subject::Primitive(Primitive::Retrievables);
        // Spooled under its own id, as auto-spooling does.
        let record_id = id;
        for ((ctx, text), spool) in conversations.iter().zip(&spools) {
            let record = Retrievable::new(&record_id, text.clone(), TrustTier::FirstParty)
                .map_err(|error| ConformanceFailure {
                    subject,
                    step,
                    expected: "a valid sample retrievable to store".into(),
                    found: format!("the sample was rejected: {error}"),
                    error: None,
                })?
                .into_spooled(spool.clone());
            let outcome = self.adapter.store_retrievable(ctx, record).await;
            self.call_succeeded(subject, step, "store", &record_id, outcome)?;
        }
        for (ctx, text) in &conversations {
            let fetched = self
                .adapter
                .fetch_retrievables(ctx)
                .await
                .map_err(|error| ConformanceFailure {
                    subject,
                    step,
                    expected: "the fetch to succeed".into(),
                    found: format!("the error \"{error}\""),
                    error: Some(error),
                })?;
            let Some(ours) = fetched.iter().find(|record| record.id() == record_id) else {
                return Err(ConformanceFailure {
                    subject,
                    step,
                    expected: format!("the fetch to return `{record_id}`"),
                    found: "no such retrievable".into(),
                    error: None,
                });
            };
            let read = ours
                .content_string()
                .await
                .map_err(|error| ConformanceFailure {
                    subject,
                    step,
                    expected: format!("the fetched `{record_id}` to read back its spooled text"),
                    found: format!("the error \"{error}\""),
                    error: None,
                })?;
            if read != *text {
                return Err(ConformanceFailure {
                    subject,
                    step,
                    expected: format!("the fetched `{record_id}` to read {text:?}"),
                    found: format!("{read:?}"),
                    error: None,
                });
            }
            self.checks_passed += 1;
            let outcome = self
                .adapter
                .delete_retrievable(ctx, record_id.clone())
                .await;
            self.call_succeeded(subject, step, "delete", &record_id, outcome)?;
        }
        Ok(())
    }

    fn conduit_id(&self, conduit: &str, step: Step) -> String {
        let step = step.to_string().replace(' ', "-");
        format!("{}-{conduit}-bytes-{step}", self.prefix)
    }

    async fn write_spool(
        &mut self,
        step: Step,
        id: &str,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, ConformanceFailure> {
        self.adapter
            .store_retrievable_bytes(self.ctx, id.to_owned(), bytes)
            .await
            .map_err(|error| conduit_error(Subject::RetrievableBytes, step, id, error))
    }

    async fn write_media(
        &mut self,
        step: Step,
        id: &str,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, ConformanceFailure> {
        self.adapter
            .store_media_bytes(self.ctx, id.to_owned(), bytes)
            .await
            .map_err(|error| conduit_error(Subject::MediaBytes, step, id, error))
    }

    async fn expect_spool(
        &mut self,
        step: Step,
        id: &str,
        reader: &SpoolReader,
        written: &[u8],
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::RetrievableBytes;
        let read = reader
            .read_all()
            .await
            .map_err(|error| ConformanceFailure {
                subject,
                step,
                expected: format!("the reader for `{id}` to read back"),
                found: format!("the error \"{error}\""),
                error: Some(StorageError::from(error)),
            })?;
        expect_same_bytes(subject, step, id, written, &read)?;
        let length = reader
            .byte_length()
            .await
            .map_err(|error| ConformanceFailure {
                subject,
                step,
                expected: format!("the reader for `{id}` to report its length"),
                found: format!("the error \"{error}\""),
                error: Some(StorageError::from(error)),
            })?;
        if length != written.len() as u64 {
            return Err(ConformanceFailure {
                subject,
                step,
                expected: format!("the reader for `{id}` to report {} bytes", written.len()),
                found: format!("{length} bytes"),
                error: None,
            });
        }
        self.checks_passed += 1;
        Ok(())
    }

    async fn expect_media(
        &mut self,
        step: Step,
        id: &str,
        reader: &MediaReader,
        written: &[u8],
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::MediaBytes;
        // Media readers must be replayable, so read twice and compare both with the input.
        for _ in 0..2 {
            let read = reader
                .read_all()
                .await
                .map_err(|error| ConformanceFailure {
                    subject,
                    step,
                    expected: format!("the reader for `{id}` to stream the bytes back"),
                    found: format!("the error \"{error}\""),
                    error: None,
                })?;
            expect_same_bytes(subject, step, id, written, &read)?;
        }
        if let Some(length) = reader.byte_length().await
            && length != written.len() as u64
        {
            return Err(ConformanceFailure {
                subject,
                step,
                expected: format!(
                    "the reader for `{id}` to report {} bytes (or an unknown length)",
                    written.len()
                ),
                found: format!("{length} bytes"),
                error: None,
            });
        }
        self.checks_passed += 1;
        Ok(())
    }
}

// The three input shapes a conduit must accept, each with the bytes it should store.
struct ConduitInput {
    whole: Vec<u8>,
    shape: InputShape,
}

enum InputShape {
    Text,
    Bytes,
    Stream,
}

impl ConduitInput {
    fn conduit_bytes(&self) -> ConduitBytes {
        match self.shape {
            InputShape::Text => {
                ConduitBytes::from(String::from_utf8_lossy(&self.whole).into_owned())
            }
            InputShape::Bytes => ConduitBytes::from(self.whole.clone()),
            InputShape::Stream => {
                let chunks: Vec<std::io::Result<Bytes>> = self
                    .whole
                    .chunks(7)
                    .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
                    .collect();
                ConduitBytes::from_stream(futures_util::stream::iter(chunks))
            }
        }
    }
}

fn conduit_inputs() -> [(Step, ConduitInput); 3] {
    // Text keeps `\r\n`, a trailing newline and non-ASCII text; bytes include NUL and bytes
    // that are not UTF-8; the stream splits multi-byte characters across chunks.
    [
        (
            Step::WriteText,
            ConduitInput {
                whole: "first line\r\nsecond — línea\n\nlast line\n"
                    .as_bytes()
                    .to_vec(),
                shape: InputShape::Text,
            },
        ),
        (
            Step::WriteBytes,
            ConduitInput {
                whole: vec![0x00, 0xff, 0xfe, b'\n', 0x80, 0x00, b'x'],
                shape: InputShape::Bytes,
            },
        ),
        (
            Step::WriteStream,
            ConduitInput {
                whole: "streamed ✓ across chunks\n".repeat(40).into_bytes(),
                shape: InputShape::Stream,
            },
        ),
    ]
}

fn expect_same_bytes(
    subject: Subject,
    step: Step,
    id: &str,
    written: &[u8],
    read: &[u8],
) -> Result<(), ConformanceFailure> {
    if written == read {
        return Ok(());
    }
    let first_difference = written
        .iter()
        .zip(read)
        .position(|(left, right)| left != right)
        .unwrap_or(written.len().min(read.len()));
    Err(ConformanceFailure {
        subject,
        step,
        expected: format!(
            "the reader for `{id}` to return the {} bytes written",
            written.len()
        ),
        found: format!(
            "{} bytes, first differing at byte {first_difference}",
            read.len()
        ),
        error: None,
    })
}

fn conduit_error(
    subject: Subject,
    step: Step,
    id: &str,
    error: StorageError,
) -> ConformanceFailure {
    ConformanceFailure {
        subject,
        step,
        expected: format!("the write of `{id}` to succeed"),
        found: format!("the error \"{error}\""),
        error: Some(error),
    }
}

fn key_noun<Record: Persisted>() -> &'static str {
    if Record::KIND == Primitive::StandingInstructions {
        "instructions"
    } else {
        "ids"
    }
}

fn list(keys: &[String]) -> String {
    format!("[{}]", keys.join(", "))
}

fn to_json(record: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(record)
        .unwrap_or_else(|error| serde_json::Value::String(format!("<not serializable: {error}>")))
}

// A pending call to a forecast tool; its mutated form is the same call completed with results,
// which is how an executor records what a tool returned.
fn tool_call_sample(
    key: &str,
    revision: u32,
) -> Result<ToolCall, crate::primitives::PrimitiveError> {
    let pending = ToolCall::new(key, "forecast", serde_json::json!({ "city": "Lisbon" }))?;
    Ok(if revision == 0 {
        pending
    } else {
        pending
            .complete("Sunny, 24 °C")
            .with_completed_at(Some(sample_updated_at(revision)))
    })
}

// Sample times are fixed whole seconds, so an adapter over a database that keeps timestamps to
// the microsecond (or the second) hands back exactly what it was given.
const SAMPLE_CREATED_AT: Timestamp = Timestamp::constant(1_767_225_600, 0);

fn sample_updated_at(revision: u32) -> Timestamp {
    Timestamp::constant(1_767_225_600 + 60 * i64::from(revision), 0)
}
