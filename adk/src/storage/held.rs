//! A turn's assistant messages held back to be written in its state commit's transaction.
//!
//! When a turn's storage adapter and its session store write to the same database and the
//! store asked for it (PostgreSQL's [`PostgresStorage`] and the [`PostgresSessionStore`] its
//! `session_store_one_flush` hands out; SQLite's `SqliteStorage` and the `SqliteSessionStore`
//! its `session_store_one_flush` hands out, which runs on the storage's writer connection),
//! the runner opens a hold
//! on the turn's [`StorageContext`](super::StorageContext) naming the store's database (a
//! [`CommitPartner`]). The adapter then keeps the assistant messages the turn stores here
//! instead of committing each on its own, and the store writes them in the transaction that
//! commits the turn's state and events: one flush of the server's log for the turn instead of
//! two. Everything else is written at once, and before it the adapter writes what is held, in
//! order; what is still held when the turn ends without taking it into a commit (a failed or
//! aborted turn, a refused commit) the runner writes through the adapter before `run` returns.
//!
//! So a held message is never read back, overtaken or left unwritten by the turn that stored
//! it, and nothing the caller of `run` is told about is lost to a crash: a process killed before
//! the commit loses the held answer exactly as if it had been killed before the model answered,
//! with the turn's question (stored at once) left for `TurnRunner::resume`. A turn whose future
//! is dropped before its commit (a caller's timeout, say) loses what it held the same way, and
//! frees it: a held write keeps a copy of its context without the hold ([`HeldContext`]).
//!
//! [`PostgresStorage`]: crate::postgres::PostgresStorage
//! [`PostgresSessionStore`]: crate::postgres::PostgresSessionStore

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::primitives::Message;

/// The database a session store commits to, compared by identity: a storage adapter holding
/// the same partner writes to the same database, so its writes may join the store's commit.
/// For store and adapter implementations; most code never sees one.
#[doc(hidden)]
#[derive(Clone, Debug, Default)]
pub struct CommitPartner(Arc<()>);

impl CommitPartner {
    /// A partner no other is equal to.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `self` and `other` name the same database (one was cloned from the other).
    #[must_use]
    pub fn is(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One held write: the message and the context it was stored with (a
/// [`StorageContext`](super::StorageContext); generic so this module does not import the one
/// that holds it).
#[derive(Debug)]
pub struct HeldWrite<Ctx> {
    pub(crate) ctx: Ctx,
    pub(crate) message: Message,
}

/// A turn's held writes: the partner whose commit may take them and the messages, oldest
/// first. Shared by every clone of the turn's context.
#[doc(hidden)]
#[derive(Debug)]
pub struct HeldWrites<Ctx> {
    partner: CommitPartner,
    writes: Mutex<Option<Vec<HeldWrite<Ctx>>>>,
}

/// What a held write keeps of the context it was stored with: the context without the hold.
/// The hold is one of the context's own fields, so a held write keeping the context itself
/// would keep the hold, and with it the write, alive for as long as it stays held: a turn
/// whose future was dropped before its commit (a caller's timeout, say) would never be freed.
pub(crate) trait HeldContext: Clone {
    /// The same context with no hold of its own.
    fn without_hold(&self) -> Self;
}

impl<Ctx: Clone> HeldWrites<Ctx> {
    pub(crate) fn new(partner: CommitPartner) -> Self {
        Self {
            partner,
            writes: Mutex::new(Some(Vec::new())),
        }
    }

    // Every critical section is one push, take or splice: a panic cannot leave the list
    // half-changed, so a poisoned lock still guards a sound list.
    fn lock(&self) -> MutexGuard<'_, Option<Vec<HeldWrite<Ctx>>>> {
        self.writes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(dead_code))]
    /// Whether writes for `partner`'s database may be held here.
    pub(crate) fn is_for(&self, partner: &CommitPartner) -> bool {
        self.partner.is(partner)
    }

    #[cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(dead_code))]
    /// Holds `message`, stored with `ctx` (`None`); gives it back when the hold is closed (the
    /// turn ended), to be written at once.
    pub(crate) fn hold(&self, ctx: &Ctx, message: Message) -> Option<Message>
    where
        Ctx: HeldContext,
    {
        match self.lock().as_mut() {
            Some(writes) => {
                writes.push(HeldWrite {
                    ctx: ctx.without_hold(),
                    message,
                });
                None
            }
            None => Some(message),
        }
    }

    #[cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(dead_code))]
    /// Every held write, oldest first, removed; the hold stays open.
    pub(crate) fn take(&self) -> Vec<HeldWrite<Ctx>> {
        self.lock().as_mut().map(std::mem::take).unwrap_or_default()
    }

    #[cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(dead_code))]
    /// Puts back `writes` (taken by a commit that did not apply them) before any held since.
    pub(crate) fn put_back(&self, mut writes: Vec<HeldWrite<Ctx>>) {
        let mut held = self.lock();
        match held.as_mut() {
            Some(newer) => {
                writes.append(newer);
                *newer = writes;
            }
            None => *held = Some(writes),
        }
    }

    /// Closes the hold and returns what it held: from now on every write goes out at once.
    pub(crate) fn close(&self) -> Vec<HeldWrite<Ctx>> {
        self.lock().take().unwrap_or_default()
    }
}

/// What a [`TurnCommit`](crate::state::TurnCommit) carries of its turn's held writes: a
/// session store that [shares the adapter's database](CommitPartner) takes them into the
/// commit's transaction; any other ignores them (the runner writes them through the adapter).
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct TurnWrites<Ctx>(pub(crate) Option<Arc<HeldWrites<Ctx>>>);

impl<Ctx> Default for TurnWrites<Ctx> {
    fn default() -> Self {
        Self(None)
    }
}

#[cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(dead_code))]
impl<Ctx> TurnWrites<Ctx> {
    /// What a commit carries of the turn's hold, when one is open.
    pub(crate) fn of(held: Option<Arc<HeldWrites<Ctx>>>) -> Self {
        Self(held)
    }

    /// The held writes, when the turn holds writes for `partner`'s database.
    pub(crate) fn for_partner(&self, partner: &CommitPartner) -> Option<&HeldWrites<Ctx>> {
        self.0.as_deref().filter(|held| held.partner.is(partner))
    }
}

#[cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(dead_code))]
impl<Ctx: Clone> TurnWrites<Ctx> {
    /// Takes the writes held for `partner`'s commit, oldest first: none without a partner, or
    /// when the turn holds none for it.
    pub(crate) fn take_for(&self, partner: Option<&CommitPartner>) -> Vec<HeldWrite<Ctx>> {
        partner
            .and_then(|partner| self.for_partner(partner))
            .map(HeldWrites::take)
            .unwrap_or_default()
    }

    /// Puts back what [`take_for`](Self::take_for) took, for a commit that did not apply it,
    /// before any write held since: the runner then writes it through the adapter.
    pub(crate) fn put_back_for(
        &self,
        partner: Option<&CommitPartner>,
        writes: Vec<HeldWrite<Ctx>>,
    ) {
        if writes.is_empty() {
            return;
        }
        if let Some(held) = partner.and_then(|partner| self.for_partner(partner)) {
            held.put_back(writes);
        }
    }
}

/// Two commits are equal whatever they hold: the held writes are the turn's, not the delta's.
impl<Ctx> PartialEq for TurnWrites<Ctx> {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}
