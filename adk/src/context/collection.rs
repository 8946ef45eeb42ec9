//! The turn collections: insertion-ordered records, replaced by id in place, deleted by id.

use crate::primitives::{Memory, Message, Retrievable, Thought, ToolCall};

/// A record a collection holds: anything with a stable id.
pub trait Record: Clone + Send + Sync + 'static {
    /// The record's id.
    fn record_id(&self) -> &str;
}

macro_rules! record {
    ($($primitive:ty),*) => {$(
        impl Record for $primitive {
            fn record_id(&self) -> &str {
                self.id()
            }
        }
    )*};
}

record!(Message, Memory, Thought, ToolCall, Retrievable);

/// Records in insertion order, at most one per id.
///
/// Replacing a record keeps its position: adapters use collection order as the tie-break for
/// records created at the same instant, so a mutate must not move a record to the end.
///
/// ```
/// use adk::context::Collection;
/// use adk::primitives::Message;
///
/// let mut messages = Collection::new();
/// messages.add(Message::user("m1", "hello").unwrap());
/// messages.add(Message::user("m2", "again").unwrap());
/// messages.replace(Message::user("m1", "hello, edited").unwrap());
/// let ids: Vec<&str> = messages.iter().map(|message| message.id()).collect();
/// assert_eq!(ids, ["m1", "m2"]);
/// ```
#[derive(Clone, Debug)]
pub struct Collection<T> {
    records: Vec<T>,
}

impl<T> Default for Collection<T> {
    fn default() -> Self {
        Self {
            records: Vec::new(),
        }
    }
}

impl<T: Record> Collection<T> {
    /// An empty collection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a record at the end, or replaces the record with the same id where it stands.
    pub fn add(&mut self, record: T) {
        self.replace(record);
    }

    /// Adds every record in order; see [`Collection::add`].
    pub fn extend(&mut self, records: impl IntoIterator<Item = T>) {
        for record in records {
            self.add(record);
        }
    }

    /// Replaces the record with the same id in place, or appends it when there is none.
    pub fn replace(&mut self, record: T) {
        match self
            .records
            .iter_mut()
            .find(|existing| existing.record_id() == record.record_id())
        {
            Some(existing) => *existing = record,
            None => self.records.push(record),
        }
    }

    /// Removes and returns the record with this id.
    pub fn remove(&mut self, id: &str) -> Option<T> {
        let position = self
            .records
            .iter()
            .position(|record| record.record_id() == id)?;
        Some(self.records.remove(position))
    }

    /// The record with this id.
    pub fn get(&self, id: &str) -> Option<&T> {
        self.records.iter().find(|record| record.record_id() == id)
    }

    /// Whether a record with this id is present.
    pub fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// The records in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.records.iter()
    }

    /// The records in order, as a slice.
    pub fn as_slice(&self) -> &[T] {
        &self.records
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        self.records.clear();
    }
}

impl<'a, T> IntoIterator for &'a Collection<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.records.iter()
    }
}

impl<T> IntoIterator for Collection<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.records.into_iter()
    }
}

impl<T: Record> FromIterator<T> for Collection<T> {
    fn from_iter<I: IntoIterator<Item = T>>(records: I) -> Self {
        let mut collection = Self::new();
        collection.extend(records);
        collection
    }
}
