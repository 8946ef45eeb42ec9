//! Thread lineage (HPD's branch bookkeeping): which thread and message a fork came from, its
//! place among the forks taken at the same message, and the forks taken from a thread.

use crate::ids::ThreadId;

/// One fork as a [`SessionStore`](super::SessionStore) records it
/// ([`record_fork`](super::SessionStore::record_fork)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkRecord {
    /// The new thread.
    pub thread: ThreadId,
    /// Where it was forked from.
    pub point: ForkPoint,
    /// Its place among the forks taken at `point`: the first fork is 1 (the source thread is
    /// 0), in the order they were recorded. The store assigns it.
    pub sibling_index: u32,
}

/// Where a fork was taken: a message of a thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ForkPoint {
    /// The source thread.
    pub thread: ThreadId,
    /// The id of the message forked at (the last message the fork copied).
    pub message: String,
    /// That message's position in the source thread, counted from zero.
    pub message_index: u32,
}

/// A thread's place in its session's fork tree, as
/// [`SessionStore::thread_lineage`](super::SessionStore::thread_lineage) reads it.
///
/// The forks taken at one message of a thread are siblings of that thread: the source thread
/// is sibling 0 (the original), the forks 1, 2, ... in the order they were made. A thread that
/// is no fork is an original: sibling 0 of 1, with no neighbours (it may be the source of many
/// fork points; [`children`](Self::children) lists the forks taken from it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadLineage {
    /// The thread.
    pub thread: ThreadId,
    /// Where it was forked from; `None` for an original thread.
    pub forked_from: Option<ForkPoint>,
    /// Its index among its siblings (0: the original).
    pub sibling_index: u32,
    /// How many siblings there are, the original included.
    pub sibling_count: u32,
    /// The sibling before it: the source thread for the first fork.
    pub previous_sibling: Option<ThreadId>,
    /// The sibling after it: the next fork taken at the same message.
    pub next_sibling: Option<ThreadId>,
    /// The forks taken from this thread (at any message), oldest first.
    pub children: Vec<ThreadId>,
}

impl ThreadLineage {
    /// Whether the thread is an original, not a fork.
    #[must_use]
    pub fn is_original(&self) -> bool {
        self.forked_from.is_none()
    }

    /// The lineage of `thread` given every fork recorded in its session (in any order).
    ///
    /// ```
    /// use adk::state::{ForkPoint, ForkRecord, ThreadLineage};
    ///
    /// let at = ForkPoint { thread: "main".into(), message: "m-2".into(), message_index: 1 };
    /// let forks = [
    ///     ForkRecord { thread: "a".into(), point: at.clone(), sibling_index: 1 },
    ///     ForkRecord { thread: "b".into(), point: at.clone(), sibling_index: 2 },
    /// ];
    /// let a = ThreadLineage::of(&"a".into(), &forks);
    /// assert!(!a.is_original());
    /// assert_eq!((a.sibling_index, a.sibling_count), (1, 3));
    /// assert_eq!(a.previous_sibling.as_ref().map(|t| t.as_str()), Some("main"));
    /// assert_eq!(a.next_sibling.as_ref().map(|t| t.as_str()), Some("b"));
    /// let main = ThreadLineage::of(&"main".into(), &forks);
    /// assert!(main.is_original());
    /// assert_eq!(main.children.len(), 2);
    /// ```
    #[must_use]
    pub fn of(thread: &ThreadId, forks: &[ForkRecord]) -> Self {
        let mut children: Vec<&ForkRecord> = forks
            .iter()
            .filter(|fork| &fork.point.thread == thread)
            .collect();
        children.sort_by(|left, right| {
            (left.point.message_index, left.sibling_index)
                .cmp(&(right.point.message_index, right.sibling_index))
        });
        let children = children
            .into_iter()
            .map(|fork| fork.thread.clone())
            .collect();
        let Some(own) = forks.iter().find(|fork| &fork.thread == thread) else {
            return Self {
                thread: thread.clone(),
                forked_from: None,
                sibling_index: 0,
                sibling_count: 1,
                previous_sibling: None,
                next_sibling: None,
                children,
            };
        };
        let mut siblings: Vec<&ForkRecord> = forks
            .iter()
            .filter(|fork| fork.point == own.point)
            .collect();
        siblings.sort_by_key(|fork| fork.sibling_index);
        let position = siblings
            .iter()
            .position(|fork| fork.thread == own.thread)
            .unwrap_or_default();
        let previous_sibling = match position.checked_sub(1) {
            Some(before) => siblings.get(before).map(|fork| fork.thread.clone()),
            None => Some(own.point.thread.clone()),
        };
        Self {
            thread: thread.clone(),
            forked_from: Some(own.point.clone()),
            sibling_index: own.sibling_index,
            sibling_count: u32::try_from(siblings.len() + 1).unwrap_or(u32::MAX),
            previous_sibling,
            next_sibling: siblings.get(position + 1).map(|fork| fork.thread.clone()),
            children,
        }
    }
}
