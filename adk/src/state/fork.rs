//! Forking a thread at a message: the new thread gets the messages up to and including it
//! (copied through the storage adapter, so any adapter works) and a copy of the thread-scoped
//! middleware state, which an optional hook may rewrite first. Session-scoped state is not
//! copied: both threads share it. After the fork the two threads diverge.

use std::collections::BTreeMap;

use super::{ForkPoint, ForkRecord, SessionKey, SessionStore, SessionStoreError, TurnCommit};
use crate::error::BoxError;
use crate::ids::ThreadId;
use crate::middleware_state::{
    MiddlewareStateError, MiddlewareStateRecord, MiddlewareStateWrite, MiddlewareStates, Mismatch,
    RecordScope,
};
use crate::storage::{SharedStorage, StorageContext, StorageError};

type ForkHook = Box<dyn FnOnce(&mut MiddlewareStates) -> Result<(), BoxError> + Send>;

/// A fork of one thread of a session into a new thread.
///
/// ```
/// use adk::state::Fork;
/// use adk::primitives::Message;
/// use adk::state::{InMemorySessionStore, SessionKey};
/// use adk::storage::{SharedStorage, StorageContext};
///
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// let storage = SharedStorage::new(adk::sqlite::SqliteStorage::in_memory().await?);
/// let store = InMemorySessionStore::new();
/// let main = StorageContext::new("s-1").with_thread_id("main");
/// let question = Message::user("m-1", "Plan a trip")?;
/// storage.store_message(&main, question.clone()).await?;
/// storage.store_message(&main, Message::assistant("m-2", "Where to?")?).await?;
///
/// let forked = Fork::new(SessionKey::new("default", "default", "s-1"), "main", "draft")
///     .at_message(question.id())
///     .run(&storage, &store)
///     .await?;
/// assert_eq!(forked.messages_copied, 1);
/// let draft = StorageContext::new("s-1").with_thread_id("draft");
/// assert_eq!(storage.fetch_messages(&draft).await?.len(), 1);
/// # Ok::<(), adk::pipeline::BoxError>(())
/// # }).unwrap();
/// ```
#[must_use = "a fork does nothing until `.run(..)`"]
pub struct Fork {
    session: SessionKey,
    from: ThreadId,
    to: ThreadId,
    at_message: Option<String>,
    hook: Option<ForkHook>,
}

impl std::fmt::Debug for Fork {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Fork")
            .field("session", &self.session)
            .field("from", &self.from)
            .field("to", &self.to)
            .field("at_message", &self.at_message)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// What a fork copied.
#[derive(Debug, Clone, PartialEq)]
pub struct Forked {
    /// Messages copied into the new thread.
    pub messages_copied: usize,
    /// Thread-scoped middleware state records written for the new thread.
    pub records_copied: usize,
    /// Source records the hook's states could not read (copied unchanged).
    pub mismatches: Vec<Mismatch>,
    /// The lineage recorded for the new thread: its source thread and message, and its
    /// sibling index (see [`SessionStore::thread_lineage`]). `None` when the store keeps no
    /// lineage (its `record_fork` answers [`SessionStoreError::Unsupported`], the trait's
    /// default): the fork itself still happened.
    pub fork: Option<ForkRecord>,
}

/// Why a fork did not happen. Only [`ForkError::CopyMessages`], [`ForkError::Commit`] and
/// [`ForkError::Lineage`] come after something was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForkError {
    /// `TurnRunner::fork` on a runner built without a session store.
    #[error(
        "the runner has no session store to fork thread state in; build it with `.session_store(..)`"
    )]
    NoSessionStore,
    /// The source or target thread id is empty or malformed ([`ThreadId::check`]); nothing
    /// was read or written.
    #[error("the fork was refused: {0}")]
    InvalidThread(#[from] crate::ids::InvalidThreadId),
    /// The source thread has no messages to fork from.
    #[error("thread `{thread}` has no messages to fork from")]
    NoMessages {
        /// The source thread.
        thread: ThreadId,
    },
    /// The fork message is not in the source thread.
    #[error("message `{message}` is not in thread `{thread}`; fork at one of its messages")]
    MessageNotFound {
        /// The source thread.
        thread: ThreadId,
        /// The message asked for.
        message: String,
    },
    /// The target thread already holds messages; a fork starts a new thread.
    #[error("thread `{thread}` already has messages; fork into a new thread id")]
    ThreadExists {
        /// The target thread.
        thread: ThreadId,
    },
    /// Reading the source thread's messages failed; nothing was written.
    #[error("the messages of thread `{thread}` could not be read: {source}")]
    ReadMessages {
        /// The thread read.
        thread: ThreadId,
        /// Why.
        #[source]
        source: StorageError,
    },
    /// Loading the source thread's state failed; nothing was written.
    #[error("the state of thread `{thread}` could not be loaded: {source}")]
    Load {
        /// The source thread.
        thread: ThreadId,
        /// Why.
        #[source]
        source: SessionStoreError,
    },
    /// The fork hook refused; nothing of the fork was written.
    #[error("the fork hook failed, nothing of the fork was stored: {0}")]
    Hook(#[source] BoxError),
    /// A rewritten state could not be encoded; nothing was written.
    #[error("the fork's middleware state could not be encoded: {0}")]
    Encode(#[source] MiddlewareStateError),
    /// Copying a message failed; the messages copied before it stay, the state was not copied.
    #[error("copying message `{message}` into thread `{thread}` failed: {source}")]
    CopyMessages {
        /// The target thread.
        thread: ThreadId,
        /// The message that failed.
        message: String,
        /// Why.
        #[source]
        source: StorageError,
    },
    /// Committing the new thread's state failed; its messages were copied.
    #[error("the state of thread `{thread}` could not be committed: {source}")]
    Commit {
        /// The target thread.
        thread: ThreadId,
        /// Why.
        #[source]
        source: SessionStoreError,
    },
    /// Recording the new thread's lineage failed; its messages and state were copied.
    #[error("the lineage of thread `{thread}` could not be recorded: {source}")]
    Lineage {
        /// The target thread.
        thread: ThreadId,
        /// Why.
        #[source]
        source: SessionStoreError,
    },
}

impl Fork {
    /// A fork of thread `from` of `session` into the new thread `to`, at the latest message.
    pub fn new(session: SessionKey, from: impl Into<ThreadId>, to: impl Into<ThreadId>) -> Self {
        Self {
            session,
            from: from.into(),
            to: to.into(),
            at_message: None,
            hook: None,
        }
    }

    /// Forks at this message: the new thread gets the messages up to and including it.
    pub fn at_message(mut self, message_id: impl Into<String>) -> Self {
        self.at_message = Some(message_id.into());
        self
    }

    /// Rewrites the copied thread-scoped state before anything is stored (HPD's
    /// `BeforeThreadForkCommitAsync`). The hook sees the source thread's persistent thread
    /// states; what it changes is what the new thread starts with. If it fails, nothing of the
    /// fork is stored.
    pub fn hook(
        mut self,
        hook: impl FnOnce(&mut MiddlewareStates) -> Result<(), BoxError> + Send + 'static,
    ) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// Runs the fork: reads the source thread's messages and state, runs the hook, then copies
    /// the messages through `storage`, commits the new thread's records to `store` and records
    /// its lineage there ([`SessionStore::record_fork`]).
    ///
    /// # Errors
    ///
    /// [`ForkError`]; see each variant for what was written before it. An empty or malformed
    /// thread id is [`ForkError::InvalidThread`], before anything is read.
    pub async fn run(
        self,
        storage: &SharedStorage,
        store: &impl SessionStore,
    ) -> Result<Forked, ForkError> {
        self.from.check()?;
        self.to.check()?;
        let source = self.context(&self.from);
        let target = self.context(&self.to);
        let messages =
            storage
                .fetch_messages(&source)
                .await
                .map_err(|source| ForkError::ReadMessages {
                    thread: self.from.clone(),
                    source,
                })?;
        let cut = match &self.at_message {
            Some(id) => messages
                .iter()
                .position(|message| message.id() == id)
                .ok_or_else(|| ForkError::MessageNotFound {
                    thread: self.from.clone(),
                    message: id.clone(),
                })?,
            None => messages
                .len()
                .checked_sub(1)
                .ok_or_else(|| ForkError::NoMessages {
                    thread: self.from.clone(),
                })?,
        };
        let existing =
            storage
                .fetch_messages(&target)
                .await
                .map_err(|source| ForkError::ReadMessages {
                    thread: self.to.clone(),
                    source,
                })?;
        if !existing.is_empty() {
            return Err(ForkError::ThreadExists {
                thread: self.to.clone(),
            });
        }
        let loaded = store
            .load_turn(&self.session, &self.from)
            .await
            .map_err(|source| ForkError::Load {
                thread: self.from.clone(),
                source,
            })?;
        let thread_records: Vec<MiddlewareStateRecord> = loaded
            .middleware
            .into_iter()
            .filter(|record| record.scope == RecordScope::Thread(self.from.clone()))
            .collect();
        // Every record is copied as stored (unknown and unreadable ones too); a state the hook
        // rewrote replaces its copy.
        let mut copies: BTreeMap<String, MiddlewareStateRecord> = thread_records
            .iter()
            .map(|record| {
                let copy = MiddlewareStateRecord {
                    scope: RecordScope::Thread(self.to.clone()),
                    ..record.clone()
                };
                (record.key.clone(), copy)
            })
            .collect();
        let mut mismatches = Vec::new();
        if let Some(hook) = self.hook {
            let mut states = MiddlewareStates::from_records(&thread_records);
            hook(&mut states).map_err(ForkError::Hook)?;
            for write in states.writes(&self.to).map_err(ForkError::Encode)? {
                if let MiddlewareStateWrite::Put(record) = write
                    && matches!(record.scope, RecordScope::Thread(_))
                {
                    copies.insert(record.key.clone(), record);
                }
            }
            mismatches = states.take_reports().0;
        }
        for message in &messages[..=cut] {
            storage
                .store_message(&target, message.clone())
                .await
                .map_err(|source| ForkError::CopyMessages {
                    thread: self.to.clone(),
                    message: message.id().to_owned(),
                    source,
                })?;
        }
        let records_copied = copies.len();
        if records_copied > 0 {
            let commit = TurnCommit {
                thread: self.to.clone(),
                middleware: copies
                    .into_values()
                    .map(MiddlewareStateWrite::Put)
                    .collect(),
                ..TurnCommit::default()
            };
            store
                .commit_turn(&self.session, commit)
                .await
                .map_err(|source| ForkError::Commit {
                    thread: self.to.clone(),
                    source,
                })?;
        }
        let point = ForkPoint {
            thread: self.from.clone(),
            message: messages[cut].id().to_owned(),
            message_index: u32::try_from(cut).unwrap_or(u32::MAX),
        };
        // A store written before lineage existed keeps the trait's default, which refuses:
        // that is no reason to fail a fork whose messages and state are already copied.
        let fork = match store.record_fork(&self.session, &self.to, point).await {
            Ok(record) => Some(record),
            Err(SessionStoreError::Unsupported { .. }) => None,
            Err(source) => {
                return Err(ForkError::Lineage {
                    thread: self.to.clone(),
                    source,
                });
            }
        };
        Ok(Forked {
            messages_copied: cut + 1,
            records_copied,
            mismatches,
            fork,
        })
    }

    fn context(&self, thread: &ThreadId) -> StorageContext {
        StorageContext::new(self.session.session.clone())
            .with_app_name(self.session.app.clone())
            .with_user_id(self.session.user.clone())
            .with_thread_id(thread.clone())
    }
}
