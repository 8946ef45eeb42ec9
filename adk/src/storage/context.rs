//! What every storage callback is told about the call: which app, user, conversation (session)
//! and thread, which turn, who is acting, and whether the turn has been cancelled.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::ids::{AppName, SessionId, ThreadId, UserId};
pub use crate::ids::{ConversationId, TurnId};
use crate::primitives::Identity;

use super::FetchWindow;
use super::held::{CommitPartner, HeldContext, HeldWrites};
use super::pending::PendingResults;

/// The read-only facts every [`StorageAdapter`](super::StorageAdapter) callback receives.
///
/// It is deliberately separate from the mutable turn context: middleware can call storage while
/// it holds the turn context mutably, and an adapter cannot change the turn it is serving.
/// Cloning is cheap (one reference count), so an adapter may move a copy into a spawned task.
///
/// Adapters key their rows by the identity model of [`crate::ids`]:
/// [`app_name`](Self::app_name), [`user_id`](Self::user_id),
/// [`conversation_id`](Self::conversation_id) (the same value as
/// [`session_id`](Self::session_id)) and [`thread_id`](Self::thread_id); where they keep per-turn
/// records, also by [`turn_id`](Self::turn_id). A context built with [`new`](Self::new) carries
/// the documented defaults: app `"default"`, user `"default"`, thread `"main"`.
///
/// ```
/// use adk::storage::{StorageContext, TurnId};
/// use tokio_util::sync::CancellationToken;
///
/// let cancellation = CancellationToken::new();
/// let ctx = StorageContext::new("conversation-7")
///     .with_app_name("shop")
///     .with_user_id("ada")
///     .with_turn_id(TurnId::from("turn-3"))
///     .with_cancellation(cancellation.clone());
///
/// assert_eq!(ctx.conversation_id().as_str(), "conversation-7");
/// assert_eq!(ctx.session_id(), ctx.conversation_id());
/// assert_eq!(ctx.app_name().as_str(), "shop");
/// assert_eq!(ctx.user_id().as_str(), "ada");
/// assert_eq!(ctx.thread_id().as_str(), "main");
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
    /// Beside the shared fields, not among them: a windowed fetch sets it on a copy of the
    /// turn's context, which would otherwise copy every field (and make the turn's token, see
    /// [`LazyToken`]'s `Clone`) for one call.
    fetch_window: FetchWindow,
}

#[derive(Clone, Debug)]
struct ContextFields {
    turn_id: TurnId,
    app_name: AppName,
    user_id: UserId,
    conversation_id: SessionId,
    thread_id: ThreadId,
    identity: Option<Identity>,
    cancellation: LazyToken,
    /// The turn's parked ledger results (`pending::PendingResults`), shared by every clone of
    /// the context (they share these fields); `None` outside a turn the runner started, where
    /// every result is written at once. Held inline, so a turn allocates nothing for it.
    pending_results: Option<PendingResults>,
    /// The turn's held assistant messages (`held::HeldWrites`), when the runner opened a hold
    /// because its session store commits to the adapter's database; shared by every clone.
    held: Option<Arc<HeldWrites<StorageContext>>>,
}

impl StorageContext {
    /// A context for `conversation_id` with a freshly minted turn id, the default app
    /// (`"default"`), user (`"default"`) and thread (`"main"`), no acting identity and a
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
                app_name: AppName::default(),
                user_id: UserId::default(),
                conversation_id: conversation_id.into(),
                thread_id: ThreadId::default(),
                identity: None,
                cancellation: LazyToken::default(),
                pending_results: None,
                held: None,
            }),
            fetch_window: FetchWindow::All,
        }
    }

    /// The context of turn `turn_id` as the runner starts it, built in one go: `new` followed
    /// by the `with_*` setters would mint a turn id and allocate a cancellation token only to
    /// replace them. Inlined into the runner's turn, which is its one caller there: the ids
    /// are then moved from where the raw input keeps them straight into the new fields.
    #[inline]
    pub(crate) fn for_turn(
        turn_id: TurnId,
        ids: (SessionId, AppName, UserId, ThreadId),
        identity: Option<Identity>,
        cancellation: Option<CancellationToken>,
    ) -> Self {
        let (conversation_id, app_name, user_id, thread_id) = ids;
        Self {
            inner: Arc::new(ContextFields {
                turn_id,
                app_name,
                user_id,
                conversation_id,
                thread_id,
                identity,
                cancellation: cancellation.map_or_else(LazyToken::default, LazyToken::made),
                pending_results: Some(PendingResults::default()),
                held: None,
            }),
            fetch_window: FetchWindow::All,
        }
    }

    /// Where the turn's ledger results wait for their tool-call write (`None` outside a turn
    /// the runner started).
    pub(crate) fn pending_ledger_results(&self) -> Option<&PendingResults> {
        self.inner.pending_results.as_ref()
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

    /// Names the app the turn runs as (default `"default"`).
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c").with_app_name("shop");
    /// assert_eq!(ctx.app_name().as_str(), "shop");
    /// ```
    #[must_use]
    pub fn with_app_name(mut self, app_name: impl Into<AppName>) -> Self {
        self.fields_mut().app_name = app_name.into();
        self
    }

    /// Names the user the turn runs for (default `"default"`).
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c").with_user_id("ada");
    /// assert_eq!(ctx.user_id().as_str(), "ada");
    /// ```
    #[must_use]
    pub fn with_user_id(mut self, user_id: impl Into<UserId>) -> Self {
        self.fields_mut().user_id = user_id.into();
        self
    }

    /// Names the thread of the session the turn runs in (default `"main"`).
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c").with_thread_id("draft-2");
    /// assert_eq!(ctx.thread_id().as_str(), "draft-2");
    /// ```
    #[must_use]
    pub fn with_thread_id(mut self, thread_id: impl Into<ThreadId>) -> Self {
        self.fields_mut().thread_id = thread_id.into();
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
        self.fields_mut().cancellation = LazyToken::made(cancellation);
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
        self.fetch_window = window;
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
        &self.fetch_window
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

    /// The session this call belongs to: the same id as
    /// [`conversation_id`](Self::conversation_id), under the name session state uses.
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert_eq!(ctx.session_id().as_str(), "c");
    /// ```
    #[must_use]
    pub fn session_id(&self) -> &SessionId {
        &self.inner.conversation_id
    }

    /// The app the turn runs as: `"default"` unless the caller named one.
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert_eq!(ctx.app_name().as_str(), "default");
    /// ```
    #[must_use]
    pub fn app_name(&self) -> &AppName {
        &self.inner.app_name
    }

    /// The user the turn runs for: `"default"` unless the caller named one.
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert_eq!(ctx.user_id().as_str(), "default");
    /// ```
    #[must_use]
    pub fn user_id(&self) -> &UserId {
        &self.inner.user_id
    }

    /// The thread of the session the turn runs in: `"main"` unless the caller named one.
    ///
    /// ```
    /// let ctx = adk::storage::StorageContext::new("c");
    /// assert_eq!(ctx.thread_id().as_str(), "main");
    /// ```
    #[must_use]
    pub fn thread_id(&self) -> &ThreadId {
        &self.inner.thread_id
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
        self.inner.cancellation.get()
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
        // A token not made yet was handed to nobody: nothing can have cancelled it.
        self.inner
            .cancellation
            .if_made()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// The turn's token as kept, made or not: the turn's abort state reads it through this.
    pub(crate) fn lazy_token(&self) -> &LazyToken {
        &self.inner.cancellation
    }

    /// Opens a hold for `partner`'s database on the turn's context: see `held`.
    pub(crate) fn hold_writes_for(&mut self, partner: CommitPartner) {
        self.fields_mut().held = Some(Arc::new(HeldWrites::new(partner)));
    }

    /// The turn's hold, when one is open.
    pub(crate) fn held_writes(&self) -> Option<&Arc<HeldWrites<Self>>> {
        self.inner.held.as_ref()
    }

    /// The turn's hold, when it holds writes for `partner`'s database.
    #[cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(dead_code))]
    pub(crate) fn held_for(&self, partner: &CommitPartner) -> Option<&HeldWrites<Self>> {
        self.inner
            .held
            .as_deref()
            .filter(|held| held.is_for(partner))
    }

    // Builders run before the context is shared, so this copies only when someone already holds
    // a clone — and then the clone keeps seeing the values it was made with.
    fn fields_mut(&mut self) -> &mut ContextFields {
        Arc::make_mut(&mut self.inner)
    }
}

impl HeldContext for StorageContext {
    /// A copy whose fields are its own, with no hold: what a held write keeps (see
    /// [`HeldContext`]). Made once a held write, by a turn whose store commits its answer (a
    /// database's one-flush store); the copy shares the turn's token, as every copy does.
    fn without_hold(&self) -> Self {
        if self.inner.held.is_none() {
            return self.clone();
        }
        let mut fields = ContextFields::clone(&self.inner);
        fields.held = None;
        Self {
            inner: Arc::new(fields),
            fetch_window: self.fetch_window.clone(),
        }
    }
}

/// A context's cancellation token, made when first asked for. Most turns never hand theirs
/// out, and a token nobody holds cannot be cancelled: making one (an allocation), cloning it,
/// registering a waker on it and dropping it cost every such turn about 650 instructions and
/// several lock round trips for nothing. Everything that can cancel the token goes through
/// [`get`](Self::get) first (the turn's abort makes it to cancel it), so "not made" reads as
/// "not cancelled": the turn's abort check reads whether it was made (one load) and looks at
/// the token only once it was.
#[derive(Default)]
pub(crate) struct LazyToken {
    token: OnceLock<CancellationToken>,
}

impl LazyToken {
    /// A token made already (the caller's, or a child of it).
    pub(crate) fn made(token: CancellationToken) -> Self {
        Self {
            token: OnceLock::from(token),
        }
    }

    /// The token, made now if it was not.
    #[inline]
    pub(crate) fn get(&self) -> &CancellationToken {
        match self.token.get() {
            Some(token) => token,
            None => self.make(),
        }
    }

    #[cold]
    fn make(&self) -> &CancellationToken {
        self.token.get_or_init(CancellationToken::new)
    }

    /// The token, if anything asked for it.
    #[inline]
    pub(crate) fn if_made(&self) -> Option<&CancellationToken> {
        self.token.get()
    }
}

/// A copy of the fields (a `with_*` setter on a shared context) shares the token: it is made
/// first, so the copy and the original never hand out two different tokens.
impl Clone for LazyToken {
    fn clone(&self) -> Self {
        Self::made(self.get().clone())
    }
}

impl std::fmt::Debug for LazyToken {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.if_made() {
            Some(token) => token.fmt(formatter),
            None => formatter.write_str("CancellationToken { not made yet }"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_write_keeps_neither_its_turn_s_context_nor_the_hold_alive() {
        let mut ctx = StorageContext::new("conversation-1").with_turn_id(TurnId::from("turn-1"));
        ctx.hold_writes_for(CommitPartner::new());
        let fields = Arc::downgrade(&ctx.inner);
        let hold = ctx.held_writes().map(Arc::downgrade);
        let message = crate::primitives::Message::assistant("answer", "held")
            .expect("an assistant message with an id and text is valid");
        let held = ctx.held_writes().map(|held| held.hold(&ctx, message));
        assert!(matches!(held, Some(None)), "the hold took the message");
        // What the held write keeps is the same context without the hold.
        let writes = ctx
            .held_writes()
            .map(|held| held.take())
            .unwrap_or_default();
        let [write] = writes.as_slice() else {
            panic!("one write held, got {}", writes.len());
        };
        assert_eq!(write.ctx.turn_id().as_str(), "turn-1");
        assert_eq!(write.ctx.conversation_id().as_str(), "conversation-1");
        assert!(write.ctx.held_writes().is_none());
        if let Some(held) = ctx.held_writes() {
            held.put_back(writes);
        }
        // The turn's future dropped before its commit: nothing of the turn is left.
        drop(ctx);
        assert!(fields.upgrade().is_none(), "the turn's context was freed");
        assert!(
            hold.is_some_and(|hold| hold.upgrade().is_none()),
            "the hold and its write were freed"
        );
    }

    #[test]
    fn a_context_copied_before_its_token_is_made_shares_the_token_made_later() {
        let turn = StorageContext::new("c");
        // A setter on a shared context copies its fields: the token is made first and shared.
        let renamed = turn.clone().with_app_name("other");
        renamed.cancellation().cancel();
        assert!(turn.is_cancelled());
        assert!(turn.cancellation().is_cancelled());
    }

    #[test]
    fn a_windowed_copy_shares_the_turns_token_without_making_it() {
        let turn = StorageContext::new("c");
        let windowed = turn.clone().with_fetch_window(FetchWindow::Last(2));
        assert!(turn.fetch_window().is_all());
        assert!(turn.lazy_token().if_made().is_none());
        windowed.cancellation().cancel();
        assert!(turn.is_cancelled());
    }
}
