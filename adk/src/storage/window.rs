//! [`FetchWindow`]: how much of a conversation's history a fetch asks for.

use crate::primitives::Record;

/// Which part of a conversation's records a fetch asks for, oldest first.
///
/// A fetch window travels on the [`StorageContext`](super::StorageContext) each fetch callback
/// receives ([`StorageContext::fetch_window`](super::StorageContext::fetch_window)), so the 29
/// callbacks keep their signatures. An adapter *may* honour it, ideally with an index so a
/// window costs O(window) and not O(history): `NoopStorage` and `SqliteStorage` do. The
/// contexts' `fetch_*_within` methods trim whatever the adapter returns to the window, so an
/// adapter that ignores it is slower, never wrong.
///
/// It applies to the time-ordered primitives (messages, memories, thoughts, tool calls,
/// retrievables); tools and standing instructions are always fetched whole.
///
/// ```
/// use adk::storage::{FetchWindow, StorageContext};
///
/// let ctx = StorageContext::new("conversation-1").with_fetch_window(FetchWindow::Last(20));
/// assert_eq!(ctx.fetch_window(), &FetchWindow::Last(20));
/// assert_eq!(StorageContext::new("c").fetch_window(), &FetchWindow::All);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FetchWindow {
    /// Every record (the default).
    #[default]
    All,
    /// The last `n` records, in their original order.
    Last(usize),
    /// The records after the one with this id, in their original order. When no record has
    /// this id, every record: a point the adapter does not know hides nothing.
    After(String),
}

impl FetchWindow {
    /// Trims records in fetch order (oldest first) to this window: what an adapter that keeps
    /// its records in memory does to honour it, and what the contexts apply to every windowed
    /// fetch.
    ///
    /// ```
    /// use adk::primitives::Message;
    /// use adk::storage::FetchWindow;
    ///
    /// let history: Vec<Message> = (0..5)
    ///     .map(|n| Message::user(format!("m{n}"), "hi").unwrap())
    ///     .collect();
    /// let ids = |records: Vec<Message>| -> Vec<String> {
    ///     records.iter().map(|m| m.id().to_owned()).collect()
    /// };
    /// assert_eq!(ids(FetchWindow::Last(2).apply(history.clone())), ["m3", "m4"]);
    /// assert_eq!(ids(FetchWindow::After("m2".into()).apply(history.clone())), ["m3", "m4"]);
    /// assert_eq!(ids(FetchWindow::After("gone".into()).apply(history.clone())).len(), 5);
    /// ```
    pub fn apply<T: Record>(&self, mut records: Vec<T>) -> Vec<T> {
        let start = self.start_in(&records);
        if start > 0 {
            records.drain(..start);
        }
        records
    }

    /// The same window over a slice, without copying.
    pub fn slice<'a, T: Record>(&self, records: &'a [T]) -> &'a [T] {
        &records[self.start_in(records)..]
    }

    fn start_in<T: Record>(&self, records: &[T]) -> usize {
        match self {
            Self::All => 0,
            Self::Last(count) => records.len().saturating_sub(*count),
            Self::After(id) => records
                .iter()
                .rposition(|record| record.record_id() == id)
                .map_or(0, |position| position + 1),
        }
    }

    /// Whether this window asks for every record.
    pub fn is_all(&self) -> bool {
        matches!(self, Self::All)
    }
}
