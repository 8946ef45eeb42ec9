//! Abort as an explicit error kind (no class-name sniffing), and the abort state the turn and
//! dispatch share with the caller's cancellation token.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering, fence};
use std::sync::{Mutex, OnceLock, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::storage::LazyToken;

use crate::lean::Lean;

/// Why a turn or dispatch was aborted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbortReason {
    /// A middleware or executor called `ctx.abort(reason)` or returned [`Aborted`].
    Requested(String),
    /// The caller's cancellation token was cancelled.
    Cancelled,
}

impl fmt::Display for AbortReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Requested(reason) => formatter.write_str(reason),
            Self::Cancelled => formatter.write_str("the caller's cancellation token was cancelled"),
        }
    }
}

/// The abort error. Returning it from middleware or an executor aborts exactly like
/// `ctx.abort(reason)`: from turn middleware it aborts the turn, from dispatch middleware or the
/// executor it aborts the dispatch. No error event is emitted.
///
/// ```
/// use adk::context::Aborted;
/// use adk::pipeline::BoxError;
///
/// fn refuse() -> Result<(), BoxError> {
///     Err(Aborted::new("the user withdrew consent").into())
/// }
/// assert!(refuse().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("aborted: {reason}")]
pub struct Aborted {
    reason: String,
}

impl Aborted {
    /// An abort with a reason a person can read.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }

    /// The reason given.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Whether `error` is the abort itself or a consequence of it: [`Aborted`], a gate the abort
/// settled ([`GateError::Aborted`](crate::gate::GateError::Aborted)) or a storage call the
/// cancellation stopped ([`StorageError::Cancelled`](crate::storage::StorageError::Cancelled)),
/// returned as is or as the source of the error returned. Only these are absorbed into an
/// abort; any other error a middleware returns after the abort is a failure of its own and is
/// reported, so an abort never hides a failure.
pub(crate) fn caused_by_abort(error: &(dyn std::error::Error + 'static)) -> bool {
    // Bounded: a source chain is finite, and a cyclic one would be a bug in the error type; stop
    // after a depth no real chain reaches.
    let mut current = Some(error);
    for _ in 0..64 {
        let Some(error) = current else {
            return false;
        };
        if error.is::<Aborted>()
            || matches!(
                error.downcast_ref::<crate::gate::GateError>(),
                Some(crate::gate::GateError::Aborted { .. })
            )
            || matches!(
                error.downcast_ref::<crate::storage::StorageError>(),
                Some(crate::storage::StorageError::Cancelled { .. })
            )
        {
            return true;
        }
        current = error.source();
    }
    false
}

/// Whether a turn or dispatch was aborted, and why.
///
/// Checking is on the hot path (before every middleware): this state's own flag first (an
/// atomic), then the `token`. The token is what storage callbacks, tools and gates wait on, and
/// it is handed out (`ctx.cancellation()`, `StorageContext::cancellation`), so whoever holds it
/// can cancel it; a cancelled token must therefore count as an abort, or the loop would go on
/// while every storage call and gate it makes fails as cancelled. It is a child of the caller's
/// token (for a turn) or of the turn's (for a dispatch), so their cancellation reaches it too.
///
/// A dispatch makes its token only when something asks for it (most dispatches never do): until
/// then nobody can cancel it but `abort`, which raises the flag, so its context checks the
/// turn's token instead. Making a token and registering it with its parent costs two
/// allocations and three locks per turn. A turn's token is made up front only when the caller
/// gave one (the turn's is its child); otherwise when something first asks for it
/// ([`LazyToken`], kept by the turn's storage context, which hands it to storage callbacks), and
/// the turn's abort makes it to cancel it.
///
/// Reading a token takes its lock. While the runner walks a turn it watches the turn's token
/// (see [`watch_turn`](super::watch_turn)): a waker registered on it raises a flag when it is
/// cancelled, so the check before every middleware reads atomics and locks the token only once
/// the flag is up.
/// A token not made when the walk began is not registered on: the check reads whether it was
/// made since (one load) and locks it from then on.
///
/// The flags the check reads are one atomic byte, so the common answer ("not aborted") is one
/// load and one compare: see [`is_quiet`](AbortState::is_quiet) (a dispatch's) and
/// [`is_aborted_watched`](AbortState::is_aborted_watched) (a turn's).
#[derive(Debug)]
pub(crate) struct AbortState {
    /// [`ABORTED`], [`WATCHED`], [`FIRED`] and [`TOKEN`].
    flags: AtomicU8,
    reason: Mutex<Option<AbortReason>>,
    /// A dispatch's token; a turn's is its storage context's ([`LazyToken`]), which the turn's
    /// methods here take. [`Lean`]: the glue of the plain `OnceLock` was an out-of-line call of
    /// 11 instructions for every context, and most never make one.
    token: Lean<OnceLock<CancellationToken>>,
}

/// `abort` was called.
const ABORTED: u8 = 1;
/// A registration made by [`watch_turn`](super::watch_turn) reports this token's cancellation.
const WATCHED: u8 = 1 << 1;
/// That registration's waker ran: the token may be cancelled.
const FIRED: u8 = 1 << 2;
/// The token was made (a turn's when the caller gave one; a dispatch's on first use).
const TOKEN: u8 = 1 << 3;

impl AbortState {
    /// A turn's state: aborted by `abort` or by its token (kept by its storage context), which
    /// is `made` when the caller gave one.
    pub(crate) fn for_turn(made: bool) -> Self {
        Self {
            flags: AtomicU8::new(if made { TOKEN } else { 0 }),
            reason: Mutex::new(None),
            token: Lean::default(),
        }
    }

    /// A dispatch's state: its token, made on first use by [`token_under`](Self::token_under),
    /// is a child of the turn's; the dispatch also counts as aborted when the turn is, which its
    /// context checks through the turn's state.
    pub(crate) fn for_dispatch() -> Self {
        Self {
            flags: AtomicU8::new(0),
            reason: Mutex::new(None),
            token: Lean::default(),
        }
    }

    /// A dispatch's abort.
    pub(crate) fn abort(&self, reason: AbortReason) {
        self.record_abort(reason, self.token.get());
        if let Some(token) = self.token.get() {
            token.cancel();
        }
    }

    /// A turn's abort: `token` (the turn's) is made now if nothing asked for it yet, and
    /// cancelled, so whoever holds it or asks for it later sees the abort.
    pub(crate) fn abort_turn(&self, reason: AbortReason, token: &LazyToken) {
        self.record_abort(reason, token.if_made());
        token.get().cancel();
    }

    /// Keeps `reason` unless the state was aborted already (the first reason wins; a
    /// cancelled `token` is the reason `Cancelled`) and raises the flag.
    fn record_abort(&self, reason: AbortReason, token: Option<&CancellationToken>) {
        let mut slot = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() && !self.is_aborted_with(token) {
            *slot = Some(reason);
        }
        drop(slot);
        self.flags.fetch_or(ABORTED, Ordering::SeqCst);
        // Paired with the fence in `token_under`: a token made concurrently is cancelled either
        // here or there.
        fence(Ordering::SeqCst);
    }

    /// Whether `abort` was called, without looking at the token: the cheap half of
    /// `is_aborted`, for callers that check the token some other way.
    #[inline]
    pub(crate) fn is_flagged(&self) -> bool {
        self.flags.load(Ordering::Acquire) & ABORTED != 0
    }

    /// True when nothing can have aborted this state itself: not aborted and no token of its
    /// own. One load: a dispatch's abort check starts here and rarely goes further. (A turn's
    /// state, whose token may be made and watched, is asked through
    /// [`is_aborted_watched`](Self::is_aborted_watched) instead.)
    #[inline]
    pub(crate) fn is_quiet(&self) -> bool {
        self.flags.load(Ordering::Acquire) == 0
    }

    /// Whether a dispatch was aborted, by `abort` or through its token.
    pub(crate) fn is_aborted(&self) -> bool {
        self.is_aborted_with(self.token.get())
    }

    fn is_aborted_with(&self, token: Option<&CancellationToken>) -> bool {
        self.is_flagged() || token.is_some_and(CancellationToken::is_cancelled)
    }

    /// Whether a turn was aborted, by `abort` or through its `token`, locking the token only
    /// when it may have been cancelled: when it is made and not watched, or its watcher saw it
    /// fire, or it was made after the walk began (then every check locks it).
    #[inline]
    pub(crate) fn is_aborted_watched(&self, token: &LazyToken) -> bool {
        let flags = self.flags.load(Ordering::Acquire);
        // Watched through a registration on the token, not aborted, nothing fired.
        if flags == WATCHED | TOKEN {
            return false;
        }
        // Otherwise the token says, if it was made (one load when it was not).
        flags & ABORTED != 0 || token.if_made().is_some_and(CancellationToken::is_cancelled)
    }

    /// Raised by the waker [`watch_turn`](super::watch_turn) registers: the token may have been
    /// cancelled.
    pub(crate) fn mark_fired(&self) {
        self.flags.fetch_or(FIRED, Ordering::Release);
    }

    /// Whether this state's token was made (a turn's always is).
    #[inline]
    pub(crate) fn has_token(&self) -> bool {
        self.token.get().is_some()
    }

    /// Why a dispatch was aborted, once it was.
    pub(crate) fn reason(&self) -> Option<AbortReason> {
        self.reason_with(self.token.get())
    }

    /// Why a turn was aborted, once it was; `token` is the turn's.
    pub(crate) fn turn_reason(&self, token: &LazyToken) -> Option<AbortReason> {
        self.reason_with(token.if_made())
    }

    fn reason_with(&self, token: Option<&CancellationToken>) -> Option<AbortReason> {
        if !self.is_aborted_with(token) {
            return None;
        }
        let slot = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        Some(slot.clone().unwrap_or(AbortReason::Cancelled))
    }

    /// A dispatch's token, made on first use as a child of `parent` (the turn's token, made
    /// then if it was not) and cancelled at once when the dispatch was already aborted.
    pub(crate) fn token_under(&self, parent: &LazyToken) -> &CancellationToken {
        let token = self.token.get_or_init(|| parent.get().child_token());
        // Raised before the token is handed out, so the quiet check stops skipping the token
        // before anyone can cancel it.
        self.flags.fetch_or(TOKEN, Ordering::SeqCst);
        // Paired with the fence in `abort`.
        fence(Ordering::SeqCst);
        if self.flags.load(Ordering::SeqCst) & ABORTED != 0 {
            token.cancel();
        }
        token
    }
}

impl AbortState {
    /// Marks this state watched until the returned guard drops: a waker registered on its
    /// (made) token raises the fired flag when it is cancelled, so the check may skip the token
    /// until then; see `watch_turn`.
    pub(crate) fn watched(&self) -> Watched<'_> {
        self.flags.fetch_or(WATCHED | TOKEN, Ordering::Release);
        Watched { state: Some(self) }
    }
}

/// Clears the watched mark of the turn's state when dropped; see `watch_turn`. A turn whose
/// token was not made is not marked (the check reads the token's making itself), and its
/// guard clears nothing.
#[must_use = "the turn stops being watched when this is dropped"]
pub(crate) struct Watched<'a> {
    state: Option<&'a AbortState>,
}

impl Watched<'_> {
    /// The guard of a turn that is not marked watched.
    pub(crate) fn unmarked() -> Self {
        Self { state: None }
    }
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.state {
            state.flags.fetch_and(!WATCHED, Ordering::Release);
        }
    }
}
