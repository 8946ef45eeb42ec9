//! Why a state read, write or commit was refused.

use crate::ids::{AppName, SessionId, UserId};

/// A boxed error from a session store's backend.
pub type BackendError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a read or write through `ctx.state()` was refused. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The key, or its name after the scope prefix, is empty.
    #[error("the state key `{key}` has an empty name: write a name after the scope prefix")]
    EmptyName {
        /// The key as given.
        key: String,
    },
    /// A typed value could not be turned into JSON.
    #[error("the value for state key `{key}` could not be serialized: {source}")]
    Serialize {
        /// The key written.
        key: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// The JSON stored under a key is not the type it was read as.
    #[error("state key `{key}` holds JSON that is not a `{expected}`: {source}")]
    Deserialize {
        /// The key read.
        key: String,
        /// The type asked for.
        expected: &'static str,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A merge (`add`, `union`, `max`, `merge`, `last_writer_wins`) could not be applied to the
    /// value the turn sees: it is not the key's type, or the merge refused (an overflow).
    #[error("the merge into state key `{key}` was refused: {reason}")]
    Merge {
        /// The key merged into.
        key: String,
        /// Why.
        reason: String,
    },
}

/// Why a session store refused a call. A refused commit applied nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionStoreError {
    /// `create_session` was given an id that is taken.
    #[error("session `{session}` of user `{user}` in app `{app}` already exists")]
    AlreadyExists {
        /// The app.
        app: AppName,
        /// The user.
        user: UserId,
        /// The session id that is taken.
        session: SessionId,
    },
    /// The commit would overwrite keys that another turn changed after this turn loaded them
    /// (Google ADK's stale-session rule, per key). Nothing was applied.
    #[error(
        "stale state: {} changed in the store after this turn read {} ({}); nothing was \
         committed — run the turn again on fresh state",
        if keys.len() == 1 { "a key" } else { "keys" },
        if keys.len() == 1 { "it" } else { "them" },
        keys.join(", ")
    )]
    Stale {
        /// The keys (with their scope prefixes) that changed since the turn read them.
        keys: Vec<String>,
    },
    /// A merge of the commit could not be applied to the stored value (it is not the key's
    /// type, or the merge refused: a counter that would overflow). Nothing was applied.
    #[error("the merge into `{key}` could not be applied to the stored value: {reason}")]
    MergeRefused {
        /// The key (with its scope prefix).
        key: String,
        /// Why.
        reason: String,
    },
    /// A thread id was empty or malformed; nothing was read or written.
    #[error("{0}")]
    InvalidThreadId(#[from] crate::ids::InvalidThreadId),
    /// A fork of this thread is already recorded; a fork starts a new thread.
    #[error("thread `{thread}` already has a fork record; fork into a new thread id")]
    ThreadAlreadyForked {
        /// The thread.
        thread: crate::ids::ThreadId,
    },
    /// The store does not implement this operation (a store written before it existed keeps
    /// the trait's default). The crate's stores implement every operation.
    #[error("this session store does not support `{operation}`")]
    Unsupported {
        /// The trait method.
        operation: &'static str,
    },
    /// The stored data could not be read back (invalid JSON in a state column, for instance).
    #[error("the stored session data is invalid: {0}")]
    InvalidData(String),
    /// The store keeps no session events, so it cannot answer a read of them.
    #[error("this session store keeps no session events")]
    EventsUnsupported,
    /// The store's backend failed.
    #[error("the session store failed: {0}")]
    Backend(#[source] BackendError),
}

impl SessionStoreError {
    /// Wraps a backend failure.
    pub fn backend(error: impl Into<BackendError>) -> Self {
        Self::Backend(error.into())
    }

    /// Whether this is the stale-state refusal.
    #[must_use]
    pub fn is_stale(&self) -> bool {
        matches!(self, Self::Stale { .. })
    }
}
