//! What every storage callback is told about the call: which conversation, which turn, who is
//! acting, and whether the turn has been cancelled.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::primitives::Identity;

use super::FetchWindow;

/// Identifies one turn: one call of the runner with one piece of user input.
///
/// The runner mints a fresh id for every turn (a UUID v7, so ids sort by creation time); tests and
/// tools that replay a turn may supply their own with [`TurnId::from`].
///
/// ```
/// use adk::storage::TurnId;
///
/// let first = TurnId::new();
/// let second = TurnId::new();
/// assert_ne!(first, second);
/// assert_eq!(TurnId::from("turn-1").as_str(), "turn-1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TurnId(std::sync::Arc<str>);

impl TurnId {
    /// Mints a fresh, time-ordered turn id.
    ///
    /// ```
    /// let id = adk::storage::TurnId::new();
    /// assert_eq!(id.as_str().len(), 36);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        // Formatted into a stack buffer: the id is cloned into every event, so it is shared
        // (`Arc<str>`) rather than copied.
        let mut buffer = uuid::Uuid::encode_buffer();
        Self(std::sync::Arc::from(
            &*uuid::Uuid::now_v7().hyphenated().encode_lower(&mut buffer),
        ))
    }

    /// The id as text, for use as a database key.
    ///
    /// ```
    /// assert_eq!(adk::storage::TurnId::from("t").as_str(), "t");
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for TurnId {
    fn default() -> Self {
        Self::new()
    }
}

impl From<String> for TurnId {
    fn from(id: String) -> Self {
        Self(std::sync::Arc::from(id))
    }
}

impl From<&str> for TurnId {
    fn from(id: &str) -> Self {
        Self(std::sync::Arc::from(id))
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// Identifies the conversation a turn belongs to: the key a storage adapter partitions its
/// records by, so that one conversation never sees another's messages.
///
/// ```
/// use adk::storage::ConversationId;
///
/// let id = ConversationId::from("customer-42/support");
/// assert_eq!(id.as_str(), "customer-42/support");
/// assert_eq!(id.to_string(), "customer-42/support");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConversationId(String);

impl ConversationId {
    /// The id as text, for use as a database key.
    ///
    /// ```
    /// assert_eq!(adk::storage::ConversationId::from("c").as_str(), "c");
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for ConversationId {
    fn from(id: String) -> Self {
        Self(id)
    }
}

impl From<&str> for ConversationId {
    fn from(id: &str) -> Self {
        Self(id.to_owned())
    }
}

impl fmt::Display for ConversationId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// The read-only facts every [`StorageAdapter`](super::StorageAdapter) callback receives.
///
/// It is deliberately separate from the mutable turn context: middleware can call storage while
/// it holds the turn context mutably, and an adapter cannot change the turn it is serving.
/// Cloning is cheap (one reference count), so an adapter may move a copy into a spawned task.
///
/// Adapters key their rows by [`conversation_id`](Self::conversation_id) (and, where they keep
/// per-turn records, by [`turn_id`](Self::turn_id)). Session-scoped state and multi-process
/// storage batteries are expected to key by these same identifiers, which is why this type
/// carries nothing else.
///
/// ```
/// use adk::storage::{StorageContext, TurnId};
/// use tokio_util::sync::CancellationToken;
///
/// let cancellation = CancellationToken::new();
/// let ctx = StorageContext::new("conversation-7")
///     .with_turn_id(TurnId::from("turn-3"))
///     .with_cancellation(cancellation.clone());
///
/// assert_eq!(ctx.conversation_id().as_str(), "conversation-7");
/// assert_eq!(ctx.turn_id().as_str(), "turn-3");
/// assert!(ctx.identity().is_none());
/// assert!(!ctx.is_cancelled());
///
/// cancellation.cancel();
/// assert!(ctx.clone().is_cancelled());
/// ```
#[derive(Clone, Debug)]
pub struct StorageContext {
    inner: Arc<ContextFields>,
}

#[derive(Clone, Debug)]
struct ContextFields {
    turn_id: TurnId,
    conversation_id: ConversationId,
    identity: Option<Identity>,
    cancellation: CancellationToken,
    fetch_window: FetchWindow,
}

impl StorageContext {
    /// A context for `conversation_id` with a freshly minted turn id, no acting identity and a
    /// cancellation token of its own that nothing cancels yet.
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new(String::from("conversation-1"));
    /// assert_eq!(ctx.conversation_id().as_str(), "conversation-1");
    /// ```
    #[must_use]
    pub fn new(conversation_id: impl Into<ConversationId>) -> Self {
        Self {
            inner: Arc::new(ContextFields {
                turn_id: TurnId::new(),
                conversation_id: conversation_id.into(),
                identity: None,
                cancellation: CancellationToken::new(),
                fetch_window: FetchWindow::All,
            }),
        }
    }

    /// Replaces the turn id (the runner sets the id of the turn being run).
    ///
    /// ```
    /// use adk::storage::{StorageContext, TurnId};
    /// let ctx = StorageContext::new("c").with_turn_id(TurnId::from("t-9"));
    /// assert_eq!(ctx.turn_id().as_str(), "t-9");
    /// ```
    #[must_use]
    pub fn with_turn_id(mut self, turn_id: TurnId) -> Self {
        self.fields_mut().turn_id = turn_id;
        self
    }

    /// Records who is acting in this turn, for adapters that partition or authorise by user.
    ///
    /// ```
    /// use adk::primitives::Identity;
    /// use adk::storage::StorageContext;
    ///
    /// let ada = Identity::new("user-1", "Ada").unwrap();
    /// let ctx = StorageContext::new("c").with_identity(ada);
    /// assert!(ctx.identity().is_some());
    /// ```
    #[must_use]
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.fields_mut().identity = Some(identity);
        self
    }

    /// Uses `cancellation` as the turn's cancellation token, so that cancelling it is observed
    /// by every storage call made with this context.
    ///
    /// ```
    /// use adk::storage::StorageContext;
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let token = CancellationToken::new();
    /// let ctx = StorageContext::new("c").with_cancellation(token.child_token());
    /// token.cancel();
    /// assert!(ctx.is_cancelled());
    /// ```
    #[must_use]
    pub fn with_cancellation(mut self, cancellation: CancellationToken) -> Self {
        self.fields_mut().cancellation = cancellation;
        self
    }

    /// Asks fetch callbacks for only part of the history; see [`FetchWindow`]. The contexts'
    /// `fetch_*_within` methods set it for one fetch.
    ///
    /// ```
    /// use adk::storage::{FetchWindow, StorageContext};
    /// let ctx = StorageContext::new("c").with_fetch_window(FetchWindow::Last(10));
    /// assert_eq!(ctx.fetch_window(), &FetchWindow::Last(10));
    /// ```
    #[must_use]
    pub fn with_fetch_window(mut self, window: FetchWindow) -> Self {
        self.fields_mut().fetch_window = window;
        self
    }

    /// The part of the history a fetch asks for: [`FetchWindow::All`] unless a windowed fetch
    /// set it. Adapters may honour it; see [`FetchWindow`].
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert!(ctx.fetch_window().is_all());
    /// ```
    #[must_use]
    pub fn fetch_window(&self) -> &FetchWindow {
        &self.inner.fetch_window
    }

    /// The id of the turn this call belongs to.
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert!(!ctx.turn_id().as_str().is_empty());
    /// ```
    #[must_use]
    pub fn turn_id(&self) -> &TurnId {
        &self.inner.turn_id
    }

    /// The id of the conversation this call belongs to: the key to partition records by.
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert_eq!(ctx.conversation_id().as_str(), "c");
    /// ```
    #[must_use]
    pub fn conversation_id(&self) -> &ConversationId {
        &self.inner.conversation_id
    }

    /// Who is acting in this turn, if the caller said.
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert!(ctx.identity().is_none());
    /// ```
    #[must_use]
    pub fn identity(&self) -> Option<&Identity> {
        self.inner.identity.as_ref()
    }

    /// The turn's cancellation token. A long storage call can `select!` on
    /// [`cancelled()`](CancellationToken::cancelled) and return
    /// [`StorageError::cancelled`](super::StorageError::cancelled).
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert!(!ctx.cancellation().is_cancelled());
    /// ```
    #[must_use]
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancellation
    }

    /// Whether the turn has been cancelled; an adapter may stop early and return
    /// [`StorageError::cancelled`](super::StorageError::cancelled).
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// ctx.cancellation().cancel();
    /// assert!(ctx.is_cancelled());
    /// ```
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancellation.is_cancelled()
    }

    // Builders run before the context is shared, so this copies only when someone already holds
    // a clone — and then the clone keeps seeing the values it was made with.
    fn fields_mut(&mut self) -> &mut ContextFields {
        Arc::make_mut(&mut self.inner)
    }
}
