//! What a conformance run reports: the checks that passed, or the first departure from the
//! contract with its subject, step and partition.

use std::fmt;

use crate::storage::{Primitive, StorageContext, StorageError};

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
    pub(super) fully_checked: Vec<Primitive>,
    pub(super) accepted_only: Vec<Primitive>,
    pub(super) checks_passed: usize,
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
    /// Reading back an id nothing was written under, which must find nothing.
    ReadMissing,
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
    pub(super) fn apart_from(self, ctx: &StorageContext, run_id: &str) -> StorageContext {
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
            Step::ReadMissing => "read an id never written",
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
