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
//! Each conduit is written with text, binary bytes and a chunked stream and read back byte for
//! byte twice: through the reader the write returned, and through a fresh
//! [`read_media_bytes`](super::StorageAdapter::read_media_bytes) /
//! [`read_retrievable_bytes`](super::StorageAdapter::read_retrievable_bytes) call by id, so an
//! adapter whose conduits keep nothing (a fresh in-memory spool per call) fails. It is then
//! rewritten under the same id, and both reads must return the new bytes; an id never written
//! must read back as nothing. Two conversations then write different bytes under one id, and
//! each — through its reader and through a fresh read by id after both writes — must read back
//! its own conversation's bytes, so an adapter that keys bytes by id alone fails; when
//! retrievables are persisted, each conversation stores a retrievable spooled under that id,
//! and each fetch must read back its own text.
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
//!
//! [`StorageError::Conflict`]: super::StorageError::Conflict
//! [`StorageError::NotFound`]: super::StorageError::NotFound

mod conduits;
mod records;
mod report;

pub use report::{ConformanceFailure, ConformanceReport, Partition, Step, Subject};

use super::adapter::StorageAdapter;
use super::context::StorageContext;
use super::primitive::Primitive;
use crate::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, ToolCall};

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

struct Run<'run, Adapter> {
    adapter: &'run Adapter,
    ctx: &'run StorageContext,
    others: &'run [(Partition, StorageContext); 4],
    prefix: String,
    checks_passed: usize,
}
