//! The one error type every storage callback returns.

use std::error::Error;

use super::context::{ConversationId, StorageContext, TurnId};
use super::primitive::Primitive;
use crate::bytes::ByteStoreError;

/// Why a storage callback failed. It reaches whoever made the call (middleware, the executor, or
/// the runner) unchanged: adk never swallows a storage failure.
///
/// Adapters usually produce [`StorageError::backend`] from their database's error with `?`-like
/// ergonomics, and the more specific variants when they know more:
///
/// ```
/// use adk::storage::{Primitive, StorageError};
///
/// let missing = StorageError::NotFound { kind: Primitive::Messages, id: "m-1".into() };
/// assert_eq!(
///     missing.to_string(),
///     "no message with id `m-1` is in storage: it was never stored in this conversation, \
///      or it has been deleted",
/// );
///
/// let io = std::io::Error::other("connection reset by peer");
/// let backend = StorageError::backend(io);
/// assert_eq!(backend.to_string(), "the storage backend failed: connection reset by peer");
/// assert!(std::error::Error::source(&backend).is_some());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// A mutate or delete named a record the adapter does not hold.
    #[error(
        "no {} with id `{id}` is in storage: it was never stored in this conversation, \
         or it has been deleted",
        kind.singular()
    )]
    NotFound {
        /// The kind of record asked for.
        kind: Primitive,
        /// The id asked for (for standing instructions, the instruction's text).
        id: String,
    },

    /// A store named a record that already exists; store creates, mutate replaces.
    #[error(
        "a {} with id `{id}` is already in storage: store creates a new record; \
         call the mutate callback to replace an existing one",
        kind.singular()
    )]
    Conflict {
        /// The kind of record stored.
        kind: Primitive,
        /// The id that is already taken (for standing instructions, the instruction's text).
        id: String,
    },

    /// The turn was cancelled while the call was in progress, so the adapter stopped.
    #[error(
        "the storage call for turn `{turn_id}` of conversation `{conversation_id}` stopped \
         because the turn was cancelled"
    )]
    Cancelled {
        /// The conversation whose turn was cancelled.
        conversation_id: ConversationId,
        /// The turn that was cancelled.
        turn_id: TurnId,
    },

    /// `E_ARTIFACT_ID_COLLISION`: a tool call and a retrievable may not share an id in one turn
    /// (their results and spooled bytes would be mixed up). Refused before anything was stored.
    #[error(
        "E_ARTIFACT_ID_COLLISION: `{id}` is already the id of a {} in this turn, so the {} was \
         not stored; a tool call and a retrievable may not share an id — give one of them \
         another",
        existing.singular(),
        refused.singular()
    )]
    ArtifactIdCollision {
        /// The shared id.
        id: String,
        /// The kind of record already holding the id.
        existing: Primitive,
        /// The kind of record that was refused.
        refused: Primitive,
    },

    /// A fetch returned two retrievables with one id; none was spooled or returned.
    #[error(
        "Duplicate retrievable id: {id}; the adapter's fetch returned two retrievables with this \
         id, so none was spooled or returned"
    )]
    DuplicateRetrievableId {
        /// The id that appeared twice.
        id: String,
    },

    /// Replacing a group of tool calls without an atomic adapter callback failed part-way: the
    /// calls named here were already deleted or stored and stay so.
    #[error(
        "replacing the tool-call group failed part-way (the adapter has no atomic \
         replace_tool_call_group, so it was done call by call): deleted {deleted:?}, stored \
         {stored:?} before: {source}"
    )]
    ToolCallGroupReplacement {
        /// The ids deleted before the failure.
        deleted: Vec<String>,
        /// The ids of replacements stored before the failure.
        stored: Vec<String>,
        /// The failing call's error.
        #[source]
        source: Box<StorageError>,
    },

    /// A byte conduit could not write or read its bytes.
    #[error("a byte conduit failed: {0}")]
    Bytes(#[from] ByteStoreError),

    /// The adapter's own backend (database, network, file system) failed.
    #[error("the storage backend failed: {message}")]
    Backend {
        /// The backend's own description of the failure.
        message: String,
        /// The backend's error, for callers that downcast or walk the source chain.
        #[source]
        source: Box<dyn Error + Send + Sync + 'static>,
    },
}

impl StorageError {
    /// Wraps a backend failure, keeping it as the [`source`](Error::source) and its text as the
    /// message. Accepts any error type, and plain text too.
    ///
    /// ```
    /// use adk::storage::StorageError;
    ///
    /// let from_text = StorageError::backend("table `messages` does not exist");
    /// assert_eq!(
    ///     from_text.to_string(),
    ///     "the storage backend failed: table `messages` does not exist",
    /// );
    ///
    /// fn parse(raw: &str) -> Result<u32, StorageError> {
    ///     raw.parse::<u32>().map_err(StorageError::backend)
    /// }
    /// assert!(parse("seven").is_err());
    /// ```
    pub fn backend(error: impl Into<Box<dyn Error + Send + Sync + 'static>>) -> Self {
        let source = error.into();
        Self::Backend {
            message: source.to_string(),
            source,
        }
    }

    /// The error for a call that stopped because `ctx`'s turn was cancelled.
    ///
    /// ```
    /// use adk::storage::{StorageContext, StorageError, TurnId};
    ///
    /// let ctx = StorageContext::new("c-1").with_turn_id(TurnId::from("t-1"));
    /// assert_eq!(
    ///     StorageError::cancelled(&ctx).to_string(),
    ///     "the storage call for turn `t-1` of conversation `c-1` stopped because the turn was cancelled",
    /// );
    /// ```
    #[must_use]
    pub fn cancelled(ctx: &StorageContext) -> Self {
        Self::Cancelled {
            conversation_id: ctx.conversation_id().clone(),
            turn_id: ctx.turn_id().clone(),
        }
    }
}

/// `?` on an I/O error inside a storage callback: it becomes [`StorageError::Backend`], with the
/// I/O error kept as its source. Other backend errors go through [`StorageError::backend`]:
/// `.map_err(StorageError::backend)?`.
///
/// ```
/// use adk::storage::StorageError;
///
/// fn read_log(path: &std::path::Path) -> Result<String, StorageError> {
///     Ok(std::fs::read_to_string(path)?)
/// }
/// let error = read_log(std::path::Path::new("/no/such/adk/log")).unwrap_err();
/// assert!(matches!(error, StorageError::Backend { .. }));
/// ```
impl From<std::io::Error> for StorageError {
    fn from(error: std::io::Error) -> Self {
        Self::backend(error)
    }
}
