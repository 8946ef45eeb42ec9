//! Group commit: turns committing at once through one session store are sent as one
//! transaction, so the server flushes its log once for all of them.
//!
//! Why: every turn writing an `app:` key updates the app's one `app_states` row, and PostgreSQL
//! keeps that row locked until the transaction's commit has flushed its log. Commits of one app
//! therefore run one flush after another, however many turns are in flight. Sent together,
//! many turns cost one flush.
//!
//! How: a turn whose commit can take the one round trip (`commit.rs`) queues it and waits for
//! its own answer. One flusher per store, a spawned task, takes up to [`MOST`] queued commits,
//! sends them as one pipeline on one pooled connection, and tells each turn what became of its
//! commit; then takes what queued meanwhile, until the queue is empty. A turn alone in the queue
//! is sent at once, in the one round trip it took before. Because the flusher is its own task,
//! a turn dropped while its commit is queued or sent changes nothing for the others: its commit
//! is applied with them or not at all, as if the turn had not been dropped.
//!
//! A commit the server refuses aborts the whole transaction. The answers say which statement
//! failed, so which turn: the rest are sent again without it, at most [`ATTEMPTS`] times in
//! all (what is left after that is sent by each turn on its own; a refused statement carrying
//! several turns' writes names none, and the send after it, a statement a row, is not
//! counted), and once they were answered
//! that turn is told (it then runs the locking transaction, which names the stale keys, creates
//! a missing session or applies merges, as before).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use deadpool_postgres::Pool;
use tokio::sync::oneshot;

use crate::state::{SessionKey, SessionStoreError, TurnCommit};
use crate::storage::HeldWrite;

use super::PostgresError;
use super::app_cache::AppCache;
use super::commit::{Sent, Turn, send};
use super::error::{cause, failed};

/// The most turns one transaction carries.
const MOST: usize = 64;

/// How many times a group is sent, each time without the turns refused before.
const ATTEMPTS: usize = 3;

/// A turn's commit waiting for the flusher, with its held assistant messages.
pub(super) struct Queued {
    pub(super) key: SessionKey,
    pub(super) commit: TurnCommit,
    pub(super) held: Vec<HeldWrite>,
}

impl Queued {
    fn turn(&self) -> Turn<'_> {
        Turn {
            key: &self.key,
            commit: &self.commit,
            held: &self.held,
        }
    }
}

/// What became of a queued commit.
pub(super) enum Outcome {
    /// Committed, with the others of its group.
    Committed,
    /// Not applied: refused by a check, or a merge its loaded value cannot take. The turn runs
    /// the locking transaction.
    Refused(Queued),
    /// Not applied: the group failed for no one turn's reason, or refused too many turns. The
    /// turn sends its commit on its own.
    Alone(Queued),
    /// Not applied, or not known to be: the turn's own statement failed, or the group's
    /// connection failed before the server answered its `COMMIT`.
    Failed(Queued, SessionStoreError),
    /// The flusher ended without answering (its runtime shut down): whether the commit was
    /// applied is not known.
    Abandoned(SessionStoreError),
}

type Waiting = (Queued, oneshot::Sender<Outcome>);

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
    /// Whether a flusher is running: it takes what is queued before it ends.
    flushing: bool,
}

/// A session store's queue of commits and its flusher. Shared by the store's clones.
#[derive(Default)]
pub(super) struct Group {
    queue: Mutex<Queue>,
    /// Commits with a merge under way, which do not queue (see [`Group::merging`]).
    merging: AtomicUsize,
}

/// A commit with a merge under way; counted until dropped.
pub(super) struct Merging<'a> {
    group: &'a Group,
    alone: bool,
}

impl Merging<'_> {
    /// Whether no other commit of the store was under way when this one started: then it
    /// tries the one round trip (`scope_writes.rs`).
    pub(super) fn alone(&self) -> bool {
        self.alone
    }
}

impl Drop for Merging<'_> {
    fn drop(&mut self) {
        self.group.merging.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Group {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Group")
            .field("queued", &self.lock().waiting.len())
            .finish()
    }
}

fn unknown(cause: String) -> SessionStoreError {
    SessionStoreError::backend(PostgresError::GroupCommit { cause })
}

impl Group {
    // Every critical section is one push, take or flag change: a poisoned lock still guards a
    // sound queue.
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `queued` and waits for what became of it. Outside a Tokio runtime (no task can be
    /// spawned) the turn is told to send it on its own.
    pub(super) async fn commit(
        self: &Arc<Self>,
        pool: &Pool,
        apps: &Arc<AppCache>,
        queued: Queued,
    ) -> Outcome {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Outcome::Alone(queued);
        };
        let (sender, answer) = oneshot::channel();
        let start = {
            let mut queue = self.lock();
            queue.waiting.push((queued, sender));
            !std::mem::replace(&mut queue.flushing, true)
        };
        if start {
            runtime.spawn(flush(Arc::clone(self), pool.clone(), Arc::clone(apps)));
        }
        answer.await.unwrap_or_else(|_| {
            Outcome::Abandoned(unknown(
                "the task sending it ended before the server answered (was the runtime shut \
                 down?)"
                    .to_owned(),
            ))
        })
    }

    /// Counts a commit with a merge as under way until the returned guard is dropped, and says
    /// whether it started alone: no other such commit under way, none queued, none being sent.
    /// A hint (the others may start a moment later); the merge's check keeps it exact.
    pub(super) fn merging(&self) -> Merging<'_> {
        let others = self.merging.fetch_add(1, Ordering::AcqRel);
        let alone = others == 0 && {
            let queue = self.lock();
            !queue.flushing && queue.waiting.is_empty()
        };
        Merging { group: self, alone }
    }

    /// Up to [`MOST`] queued commits, oldest first; none (and the flusher marked ended) when the
    /// queue is empty.
    fn next(&self) -> Vec<Waiting> {
        let mut queue = self.lock();
        if queue.waiting.is_empty() {
            queue.flushing = false;
            return Vec::new();
        }
        let taken = queue.waiting.len().min(MOST);
        queue.waiting.drain(..taken).collect()
    }
}

/// Marks the flusher ended if its task is dropped (the runtime shut down) or panics: the next
/// commit starts another, and the commits queued now are dropped, so their turns are told at
/// once instead of waiting for an answer that would never come.
struct Flushing {
    group: Arc<Group>,
    /// False once the flusher found the queue empty and marked itself ended.
    running: bool,
}

impl Drop for Flushing {
    fn drop(&mut self) {
        if self.running {
            let mut queue = self.group.lock();
            queue.flushing = false;
            queue.waiting.clear();
        }
    }
}

/// The flusher: sends what is queued, group by group, until the queue is empty.
async fn flush(group: Arc<Group>, pool: Pool, apps: Arc<AppCache>) {
    let mut flushing = Flushing {
        group,
        running: true,
    };
    loop {
        let waiting = flushing.group.next();
        if waiting.is_empty() {
            flushing.running = false;
            return;
        }
        send_group(&pool, &apps, waiting).await;
    }
}

/// Sends one group, again without each turn refused, and answers every turn.
async fn send_group(pool: &Pool, apps: &AppCache, waiting: Vec<Waiting>) {
    let mut refused = Vec::new();
    send_answering_all_but_refused(pool, apps, waiting, &mut refused).await;
    // A turn refused by a check runs the locking transaction, which reads the row as it finds
    // it. Told only now, after the rest of its group was committed or answered, it is ordered
    // after the turns queued before it, as it was queued; told at once, its locking
    // transaction could take the row before the group was sent again and commit first.
    for (queued, sender) in refused {
        let _ = sender.send(Outcome::Refused(queued));
    }
}

/// [`send_group`]'s rounds: answers every turn but those refused by a check, which it leaves
/// in `refused`.
async fn send_answering_all_but_refused(
    pool: &Pool,
    apps: &AppCache,
    mut waiting: Vec<Waiting>,
    refused: &mut Vec<Waiting>,
) {
    let answer_all = |waiting: Vec<Waiting>, outcome: fn(Queued) -> Outcome| {
        for (queued, sender) in waiting {
            // A turn that was dropped does not listen any more.
            let _ = sender.send(outcome(queued));
        }
    };
    // Without a connection, each turn gets its own and its own error.
    let Ok(client) = pool.get().await else {
        return answer_all(waiting, Outcome::Alone);
    };
    // Several turns' writes go in one statement until such a statement is refused; then each
    // turn's go in its own, which names the refused turn. That refusal named no turn, so the
    // send after it is not counted (it happens once: unfolded, no statement is shared).
    let mut fold = true;
    let mut sends_left = ATTEMPTS;
    while sends_left > 0 {
        let turns: Vec<Turn<'_>> = waiting.iter().map(|(queued, _)| queued.turn()).collect();
        let sent = send(&client, apps, &turns, fold).await;
        drop(turns);
        match sent {
            Sent::Committed => return answer_all(waiting, |_| Outcome::Committed),
            Sent::RefusedShared if fold => {
                fold = false;
                continue;
            }
            Sent::RefusedShared => {}
            Sent::Refused(index) => refused.push(waiting.remove(index)),
            Sent::Failed(index, error) => {
                let (queued, sender) = waiting.remove(index);
                let _ = sender.send(Outcome::Failed(queued, error));
            }
            Sent::RolledBack(_) => return answer_all(waiting, Outcome::Alone),
            // Alone, the turn is told the driver's error, as before group commits.
            Sent::Unknown(error) if waiting.len() == 1 => {
                let error = SessionStoreError::backend(failed("committing a turn")(error));
                if let Some((queued, sender)) = waiting.pop() {
                    let _ = sender.send(Outcome::Failed(queued, error));
                }
                return;
            }
            Sent::Unknown(error) => {
                let cause = cause(&error);
                for (queued, sender) in waiting {
                    let _ = sender.send(Outcome::Failed(queued, unknown(cause.clone())));
                }
                return;
            }
        }
        if waiting.is_empty() {
            return;
        }
        sends_left -= 1;
    }
    answer_all(waiting, Outcome::Alone);
}
