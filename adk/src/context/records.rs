//! What a [`Collection`](super::Collection) keeps its records in: a vector in insertion order,
//! searched by id with a scan while it holds a handful of records and through a hash index of
//! positions once it holds more.
//!
//! A turn's collections mostly hold a few records (the user message, the answer), and an index
//! built on the first record was a second allocation per collection (a hash table beside the
//! vector) and a hash per lookup, for nothing a scan of a few ids does not do as fast.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::lean::Lean;
use crate::primitives::Record;

pub(super) use crate::ids::IdHasher;

/// Up to this many records, an id is found by scanning them; past it, through the index.
const SCANNED_UP_TO: usize = 8;

/// Records in insertion order, at most one per id.
///
/// The body is `None` until it is given a first record (or room for one), and [`Lean`]: most
/// collections stay empty, and dropping an empty one is then a test inlined where it is
/// dropped. The vector's drop was an out-of-line call that saved six registers before finding
/// nothing to drop (about 28 instructions of the 43 an empty collection cost to drop; a turn
/// and its dispatch drop nine of them).
#[derive(Clone)]
pub(super) struct Records<T> {
    body: Lean<Option<Body<T>>>,
}

/// What [`Records`] holds once it has held a record.
#[derive(Clone)]
struct Body<T> {
    entries: Vec<T>,
    /// The position of every entry, hashed by its id, exactly when there are more than
    /// [`SCANNED_UP_TO`] entries; `None` otherwise. Boxed: most collections never hold that
    /// many, and inline the table's 32 bytes made every collection (five in each context, copied
    /// with it) larger for nothing.
    index: Option<Box<HashTable<usize>>>,
}

impl<T> Records<T> {
    /// Whether it never held a record nor room for one: then it has nothing to drop.
    #[inline]
    pub(super) fn is_unallocated(&self) -> bool {
        self.body.is_none()
    }
}

impl<T> Body<T> {
    /// A body with room for `push`'s first allocation and no index.
    fn first() -> Self {
        Self {
            entries: Vec::with_capacity(first_capacity::<T>()),
            index: None,
        }
    }
}

impl<T> Default for Records<T> {
    fn default() -> Self {
        Self {
            body: Lean::new(None),
        }
    }
}

/// The capacity `Vec::push` gives a vector of `T` on its first record.
const fn first_capacity<T>() -> usize {
    match std::mem::size_of::<T>() {
        1 => 8,
        size if size <= 1024 => 4,
        _ => 1,
    }
}

fn hash_id(id: &str) -> u64 {
    IdHasher.hash_one(id)
}

/// The hash of the entry at `position`, for the index to rehash itself with.
fn hash_at<T: Record>(entries: &[T], position: usize) -> u64 {
    entries
        .get(position)
        .map_or(0, |record| hash_id(record.record_id()))
}

impl<T: Record> Records<T> {
    /// How many records there are.
    pub(super) fn len(&self) -> usize {
        self.body.as_ref().map_or(0, |body| body.entries.len())
    }

    /// True when there are none.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The records in order.
    pub(super) fn as_slice(&self) -> &[T] {
        match &*self.body {
            Some(body) => &body.entries,
            None => &[],
        }
    }

    /// The body, made if there is none yet with room for a first record.
    ///
    /// The vector is made with the capacity `push` would give it (the standard library's
    /// smallest non-zero one), not empty: through `push` a first record took the
    /// amortized-growth path, an out-of-line call that works out the size and "reallocates"
    /// from nothing, and most collections get one record or none.
    fn body_mut(&mut self) -> &mut Body<T> {
        if self.body.is_none() {
            // Written over a `None`, which has nothing to drop: forgotten, not dropped, since
            // `get_or_insert_with`'s assignment still called the option's drop glue (about 20
            // instructions, for the first record of every collection).
            std::mem::forget(self.body.replace(Body::first()));
        }
        self.body.get_or_insert_with(Body::first)
    }

    /// The position of the record with this id.
    pub(super) fn position(&self, id: &str) -> Option<usize> {
        self.body.as_ref()?.position(id)
    }

    /// The record with this id.
    pub(super) fn get(&self, id: &str) -> Option<&T> {
        let body = self.body.as_ref()?;
        body.entries.get(body.position(id)?)
    }

    /// Whether a record with this id is present.
    pub(super) fn contains(&self, id: &str) -> bool {
        self.position(id).is_some()
    }

    /// Room for `additional` more records without reallocating the vector.
    pub(super) fn reserve(&mut self, additional: usize) {
        match &mut *self.body {
            _ if additional == 0 => {}
            Some(body) => body.entries.reserve(additional),
            None => {
                *self.body = Some(Body {
                    entries: Vec::with_capacity(additional.max(first_capacity::<T>())),
                    index: None,
                });
            }
        }
    }

    /// Replaces the record with the same id where it stands, or appends it.
    ///
    /// Inlined, as its body's: loading a history calls it for every record.
    #[inline]
    pub(super) fn replace(&mut self, record: T) {
        match &mut *self.body {
            Some(body) => body.replace(record),
            None => self.push_new(record),
        }
    }

    /// Replaces or appends every record in order, as [`replace`](Self::replace) does, with
    /// room made first for as many as `records` says it holds: the body is found once, not
    /// for every record (loading a history adds thousands).
    pub(super) fn extend(&mut self, records: impl IntoIterator<Item = T>) {
        let mut records = records.into_iter();
        let Some(first) = records.next() else {
            return;
        };
        self.reserve(records.size_hint().0.saturating_add(1));
        let body = self.body_mut();
        body.replace(first);
        for record in records {
            body.replace(record);
        }
    }

    /// Appends a record whose id is not present.
    pub(super) fn push_new(&mut self, record: T) {
        self.body_mut().push_new(record);
    }

    /// Removes and returns the record with this id; the records after it move up one place.
    pub(super) fn remove(&mut self, id: &str) -> Option<T> {
        self.body.as_mut()?.remove(id)
    }

    /// Removes every record.
    pub(super) fn clear(&mut self) {
        if let Some(body) = &mut *self.body {
            body.entries.clear();
            body.index = None;
        }
    }

    /// Appends `other`'s records, whose ids none of these records has.
    pub(super) fn append_new(&mut self, mut other: Self) {
        let Some(other) = other.body.take() else {
            return;
        };
        let body = self.body_mut();
        body.entries.reserve(other.entries.len());
        for record in other.entries {
            body.push_new(record);
        }
    }

    /// The records, in order.
    pub(super) fn into_vec(mut self) -> Vec<T> {
        self.body.take().map_or_else(Vec::new, |body| body.entries)
    }
}

impl<T: Record> Body<T> {
    /// The position of the record with this id.
    fn position(&self, id: &str) -> Option<usize> {
        // The index exists exactly when there are more than `SCANNED_UP_TO` records.
        let Some(index) = self.index.as_deref() else {
            return self
                .entries
                .iter()
                .position(|record| record.record_id() == id);
        };
        let entries = &self.entries;
        index
            .find(hash_id(id), |&position| {
                entries
                    .get(position)
                    .is_some_and(|record| record.record_id() == id)
            })
            .copied()
    }

    /// Replaces the record with the same id where it stands, or appends it.
    #[inline]
    fn replace(&mut self, record: T) {
        if let Some(slot) = self
            .position(record.record_id())
            .and_then(|position| self.entries.get_mut(position))
        {
            // Same id, so the index is unchanged.
            *slot = record;
            return;
        }
        self.push_new(record);
    }

    /// Appends a record whose id is not present.
    fn push_new(&mut self, record: T) {
        self.entries.push(record);
        let count = self.entries.len();
        if count <= SCANNED_UP_TO {
            // A collection of a few records keeps no index to hash for.
            return;
        }
        let entries = &self.entries;
        match self.index.as_deref_mut() {
            Some(index) => {
                index.insert_unique(hash_at(entries, count - 1), count - 1, |&position| {
                    hash_at(entries, position)
                });
            }
            // Just past the threshold: index every record.
            None => self.rebuild_index(),
        }
    }

    /// Removes and returns the record with this id; the records after it move up one place.
    fn remove(&mut self, id: &str) -> Option<T> {
        let position = self.position(id)?;
        let removed = self.entries.remove(position);
        if self.entries.len() <= SCANNED_UP_TO {
            self.index = None;
        } else if let Some(index) = self.index.as_deref_mut() {
            if let Ok(entry) = index.find_entry(hash_id(id), |&found| found == position) {
                entry.remove();
            }
            for found in index.iter_mut() {
                if *found > position {
                    *found -= 1;
                }
            }
        }
        Some(removed)
    }

    fn rebuild_index(&mut self) {
        let entries = &self.entries;
        let index = self.index.get_or_insert_default();
        index.clear();
        index.reserve(entries.len(), |&position| hash_at(entries, position));
        for (position, record) in entries.iter().enumerate() {
            index.insert_unique(hash_id(record.record_id()), position, |&found| {
                hash_at(entries, found)
            });
        }
    }
}

impl<T: Record> FromIterator<T> for Records<T> {
    /// The records in order; a later record with an id already present replaces it in place.
    fn from_iter<I: IntoIterator<Item = T>>(records: I) -> Self {
        let mut collected = Self::default();
        collected.extend(records);
        collected
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails loudly on a broken set-up")]
mod tests {
    use super::*;
    use crate::primitives::Message;

    #[test]
    fn the_first_records_vector_has_the_capacity_push_would_give_it() {
        let mut first = Records::<Message>::default();
        first.push_new(Message::user("m1", "text").unwrap());
        // `push`'s own growth is what is compared, not `vec!`'s exact capacity.
        #[allow(clippy::vec_init_then_push)]
        let pushed = {
            let mut pushed = Vec::new();
            pushed.push(Message::user("m1", "text").unwrap());
            pushed
        };
        assert_eq!(first.capacity(), pushed.capacity());

        // Room asked for up front is made exactly, not after a first record's.
        let mut reserved = Records::<Message>::default();
        reserved.reserve(20);
        assert_eq!(reserved.capacity(), 20);
    }

    impl<T> Records<T> {
        fn capacity(&self) -> usize {
            self.body.as_ref().map_or(0, |body| body.entries.capacity())
        }
    }

    #[test]
    fn records_that_never_held_one_have_no_vector_and_cleared_ones_keep_theirs() {
        let mut records = Records::<Message>::default();
        records.reserve(0);
        records.append_new(Records::default());
        assert!(records.body.is_none());
        assert!(records.is_empty());
        assert_eq!(records.as_slice().len(), 0);
        assert_eq!(records.position("m0"), None);
        assert!(records.remove("m0").is_none());
        assert!(records.into_vec().is_empty());

        let mut cleared = numbered(SCANNED_UP_TO + 1);
        cleared.clear();
        assert!(cleared.is_empty());
        assert!(cleared.capacity() > 0);
        assert_eq!(cleared.position("m0"), None);
        cleared.replace(Message::user("m0", "again").unwrap());
        assert_eq!(ids(&cleared), ["m0"]);
    }

    #[test]
    fn extending_replaces_a_present_id_in_place_and_nothing_allocates_nothing() {
        let mut records = numbered(3);
        records.extend([
            Message::user("m1", "edited").unwrap(),
            Message::user("new", "text").unwrap(),
            Message::user("new", "again").unwrap(),
        ]);
        assert_eq!(ids(&records), ["m0", "m1", "m2", "new"]);
        assert_eq!(
            records.get("m1").unwrap().content().unwrap().render(),
            "edited"
        );
        assert_eq!(
            records.get("new").unwrap().content().unwrap().render(),
            "again"
        );

        let mut empty = Records::<Message>::default();
        empty.extend(std::iter::empty());
        assert!(empty.is_unallocated());
        // Past the threshold in one go: every record findable through the index.
        empty.extend((0..3 * SCANNED_UP_TO).map(|n| Message::user(format!("m{n}"), "t").unwrap()));
        assert_eq!(empty.position("m20"), Some(20));
    }

    fn ids(records: &Records<Message>) -> Vec<&str> {
        records.as_slice().iter().map(Message::id).collect()
    }

    fn numbered(count: usize) -> Records<Message> {
        (0..count)
            .map(|number| Message::user(format!("m{number}"), "text").unwrap())
            .collect()
    }

    #[test]
    fn ids_are_found_the_same_below_and_past_the_indexing_threshold() {
        for count in [0, 1, SCANNED_UP_TO, SCANNED_UP_TO + 1, 3 * SCANNED_UP_TO] {
            let records = numbered(count);
            assert_eq!(records.len(), count);
            for number in 0..count {
                assert_eq!(records.position(&format!("m{number}")), Some(number));
            }
            assert_eq!(records.position("absent"), None);
        }
    }

    #[test]
    fn removing_past_the_threshold_keeps_every_later_record_findable_at_its_new_place() {
        let mut records = numbered(SCANNED_UP_TO + 3);
        assert_eq!(records.remove("m2").unwrap().id(), "m2");
        assert_eq!(records.position("m2"), None);
        assert_eq!(records.position("m3"), Some(2));
        assert_eq!(records.position("m10"), Some(9));
        // Down to the threshold: found by scanning again, the index emptied.
        records.remove("m0");
        records.remove("m1");
        assert_eq!(records.len(), SCANNED_UP_TO);
        assert_eq!(records.position("m10"), Some(7));
        // And past it once more.
        records.push_new(Message::user("m11", "text").unwrap());
        assert_eq!(records.position("m11"), Some(8));
        assert_eq!(records.position("m3"), Some(0));
    }

    #[test]
    fn replacing_keeps_the_place_and_a_new_id_goes_last() {
        let mut records = numbered(SCANNED_UP_TO + 2);
        records.replace(Message::user("m4", "edited").unwrap());
        records.replace(Message::user("new", "text").unwrap());
        assert_eq!(
            records.get("m4").unwrap().content().unwrap().render(),
            "edited"
        );
        assert_eq!(ids(&records)[4], "m4");
        assert_eq!(ids(&records).last(), Some(&"new"));
        assert_eq!(records.len(), SCANNED_UP_TO + 3);
    }
}
