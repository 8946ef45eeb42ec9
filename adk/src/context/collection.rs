//! The turn collections: insertion-ordered records, found, replaced in place and deleted by id
//! in constant time, and shared between a turn and its dispatch without copying.

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use super::records::{IdHasher, Records};
use crate::primitives::Record;

/// Records in insertion order, at most one per id.
///
/// Adding, replacing, finding and deleting by id take constant time, so loading a long history
/// with [`Collection::extend`] is linear in its length. Replacing a record keeps its position:
/// adapters use collection order as the tie-break for records created at the same instant, so a
/// mutate must not move a record to the end.
///
/// A dispatch reads its turn's records without copying them: the records the turn had when the
/// dispatch began are shared, and each side keeps its own changes on top of them.
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
/// assert!(messages.get("m2").is_some());
/// ```
pub struct Collection<T> {
    /// Records shared with another collection; never changed while shared.
    ///
    /// This field, `shadowed` and `own` are `ManuallyDrop`, dropped by `Collection`'s `Drop`
    /// (taken out through `DerefMut`, no `unsafe`): as plain fields their drop glue ran after
    /// it, and was not always optimised away where they were known to be empty. The three are
    /// tested together, where each `Lean` (`crate::lean`) tests one: as three `Lean`
    /// fields the collection's drop glue stayed an out-of-line call (+160 instructions a turn
    /// on the peers' workload, measured).
    shared: ManuallyDrop<Option<Arc<Records<T>>>>,
    /// Shared records this collection replaced (`Some`) or deleted (`None`), by their position
    /// in `shared` (stable, since `shared` never changes). Made with its first entry: most
    /// collections never shadow a record, and an empty map still cost a call to drop. Boxed,
    /// being rare: inline the map's 32 bytes made every collection larger, and every context
    /// holding five of them.
    shadowed: ManuallyDrop<Option<Box<Shadowed<T>>>>,
    /// How many entries of `shadowed` are deletions (a `u32`, which a collection in memory
    /// cannot outgrow, so `in_step` fits beside it and the collection stays 56 bytes).
    deleted: u32,
    /// Records not in `shared`, after the shared ones, in insertion order.
    own: ManuallyDrop<Records<T>>,
    /// Whether every change since [`Collection::share`] made this collection came through
    /// [`Collection::apply_queued`]: then its records are those of the collection it was shared
    /// from plus the queued changes, and the turn can take it over instead of replaying them.
    /// Any other change, and every clone, leaves it false.
    in_step: bool,
}

impl<T> Drop for Collection<T> {
    /// Most collections are empty, never shared and never shadowed: for them the drop is three
    /// tests inlined where the collection is dropped. The drop glue of the fields was an
    /// out-of-line call of about 15 instructions before the records' own (a turn and its
    /// dispatch drop ten collections, most of them empty).
    #[inline]
    fn drop(&mut self) {
        if self.shared.is_some() || self.shadowed.is_some() || !self.own.is_unallocated() {
            drop_parts(
                self.shared.take(),
                self.shadowed.take(),
                std::mem::take(&mut *self.own),
            );
        }
    }
}

/// Drops what a collection held, out of line (see `Collection`'s `Drop`). Three arguments, not
/// `crate::lean::drop_out_of_line` of a tuple: the parts then travel in
/// registers, not through memory (44 instructions a turn on the peers' workload, measured).
#[inline(never)]
fn drop_parts<T>(
    shared: Option<Arc<Records<T>>>,
    shadowed: Option<Box<Shadowed<T>>>,
    own: Records<T>,
) {
    drop((shared, shadowed, own));
}

impl<T: Clone> Clone for Collection<T> {
    /// A copy of the records, which is not in step with any turn (see `in_step`).
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            shadowed: self.shadowed.clone(),
            deleted: self.deleted,
            own: self.own.clone(),
            in_step: false,
        }
    }
}

impl<T> Default for Collection<T> {
    fn default() -> Self {
        Self {
            shared: ManuallyDrop::new(None),
            shadowed: ManuallyDrop::new(None),
            deleted: 0,
            own: ManuallyDrop::default(),
            in_step: false,
        }
    }
}

impl<T: Record + std::fmt::Debug> std::fmt::Debug for Collection<T> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_list().entries(self.iter()).finish()
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

    /// Adds every record in order; see [`Collection::add`]. Linear in the number of records.
    pub fn extend(&mut self, records: impl IntoIterator<Item = T>) {
        if self.shared.is_none() {
            // What `add` does for each record when nothing is shared, without its checks for
            // every record (loading a history adds thousands).
            self.in_step = false;
            self.own.extend(records);
            return;
        }
        for record in records {
            self.add(record);
        }
    }

    /// Replaces the record with the same id in place, or appends it when there is none.
    pub fn replace(&mut self, record: T) {
        self.in_step = false;
        // `Records::replace` keeps the position of the record it replaces.
        if self.shared.is_none() || self.own.contains(record.record_id()) {
            self.own.replace(record);
            return;
        }
        if let Some(index) = self.live_shared_index(record.record_id()) {
            self.shadowed
                .get_or_insert_default()
                .insert(index, Some(record));
            return;
        }
        self.own.push_new(record);
    }

    /// Removes and returns the record with this id.
    pub fn remove(&mut self, id: &str) -> Option<T> {
        self.in_step = false;
        if let Some(removed) = self.own.remove(id) {
            return Some(removed);
        }
        let index = self.live_shared_index(id)?;
        self.deleted += 1;
        match self.shadowed.get_or_insert_default().insert(index, None) {
            Some(replacement) => replacement,
            None => self
                .shared
                .as_ref()
                .and_then(|shared| shared.as_slice().get(index))
                .cloned(),
        }
    }

    /// The record with this id.
    pub fn get(&self, id: &str) -> Option<&T> {
        if let Some(record) = self.own.get(id) {
            return Some(record);
        }
        let shared = self.shared.as_ref()?;
        let index = shared.position(id)?;
        match shadowed_at(self.shadowed.as_deref(), index) {
            Some(replacement) => replacement.as_ref(),
            None => shared.as_slice().get(index),
        }
    }

    /// Whether a record with this id is present.
    pub fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// The records in order.
    pub fn iter(&self) -> CollectionIter<'_, T> {
        CollectionIter {
            shared: self
                .shared
                .as_deref()
                .map(|shared| shared.as_slice().iter().enumerate()),
            shadowed: self.shadowed.as_deref(),
            own: self.own.as_slice().iter(),
            remaining: self.len(),
        }
    }

    /// The first record in order.
    pub fn first(&self) -> Option<&T> {
        self.iter().next()
    }

    /// The last record in order: the latest one added, unless a later one was deleted.
    pub fn last(&self) -> Option<&T> {
        self.iter().next_back()
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        let shared = self.shared.as_ref().map_or(0, |shared| shared.len());
        shared - self.deleted as usize + self.own.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// A collection with the same records that shares them with this one instead of copying
    /// them: what a dispatch starts from. Constant time unless this collection carries changes
    /// on top of records it already shares, which are folded in first.
    ///
    /// Inlined, with the folding out of line: a dispatch shares five collections, mostly
    /// empty, and each call of the whole function cost about 40 instructions.
    #[inline]
    pub(crate) fn share(&mut self) -> Self {
        if !self.own.is_empty() || self.shadowed.is_some() {
            self.fold_into_shared();
        }
        Self {
            shared: self.shared.clone(),
            shadowed: ManuallyDrop::new(None),
            deleted: 0,
            own: ManuallyDrop::default(),
            in_step: true,
        }
    }

    /// Makes this collection's records one shared whole: its own records and shadowed ones
    /// folded into the records it shares (appended in place when it is their only holder).
    #[inline(never)]
    fn fold_into_shared(&mut self) {
        let records = if self.shadowed.is_none() {
            match self.shared.take() {
                None => std::mem::take(&mut *self.own),
                Some(shared) => {
                    // Usually the only holder by now: append in place rather than copy.
                    let mut records = Arc::unwrap_or_clone(shared);
                    records.append_new(std::mem::take(&mut *self.own));
                    records
                }
            }
        } else {
            let records: Records<T> = self.iter().cloned().collect();
            self.own.clear();
            records
        };
        *self.shadowed = None;
        self.deleted = 0;
        *self.shared = Some(Arc::new(records));
    }

    /// Makes `change` as a queued one: a change the turn this collection was shared from gets
    /// too, so the collection stays in step with it (see [`Collection::adopt`]).
    pub(crate) fn apply_queued(&mut self, change: impl FnOnce(&mut Self)) {
        let in_step = self.in_step;
        change(self);
        self.in_step = in_step;
    }

    /// Counts this collection out of step with its turn: a queued change will not reach the
    /// turn (the dispatch's queue was discarded), so the turn must never take it over.
    pub(crate) fn leave_step(&mut self) {
        self.in_step = false;
    }

    /// Takes over `dispatch`'s records when they are exactly this collection's plus the
    /// changes queued for it: `dispatch` was made from this collection by
    /// [`Collection::share`], changed since only through [`Collection::apply_queued`], and this
    /// collection changed only by applying the queued changes the dispatch already flushed.
    /// Then the changes still queued are in `dispatch` already, and replaying them would store
    /// each record a second time. Returns whether it did; `dispatch` is left empty when so.
    ///
    /// A dispatch that holds nothing of its own is left alone (there is nothing to gain), as
    /// is one that does not share this collection's records.
    pub(crate) fn adopt(&mut self, dispatch: &mut Self) -> bool {
        let same_records = match (&*self.shared, &*dispatch.shared) {
            (None, None) => true,
            (Some(turn), Some(dispatch)) => Arc::ptr_eq(turn, dispatch),
            _ => false,
        };
        if !dispatch.in_step
            || !same_records
            || (dispatch.own.is_empty() && dispatch.shadowed.is_none())
        {
            return false;
        }
        *self = std::mem::take(dispatch);
        self.in_step = false;
        true
    }

    /// The position in `shared` of the record with this id, unless this collection deleted it.
    fn live_shared_index(&self, id: &str) -> Option<usize> {
        let index = self.shared.as_ref()?.position(id)?;
        match shadowed_at(self.shadowed.as_deref(), index) {
            Some(None) => None,
            _ => Some(index),
        }
    }
}

/// What [`Collection`] keeps of the shared records it replaced or deleted.
type Shadowed<T> = HashMap<usize, Option<T>, IdHasher>;

/// The replacement (`Some`) or deletion (`None`) of the shared record at `index`, if any.
fn shadowed_at<T>(shadowed: Option<&Shadowed<T>>, index: usize) -> Option<&Option<T>> {
    shadowed?.get(&index)
}

/// The records of a [`Collection`], in order.
#[derive(Debug)]
pub struct CollectionIter<'a, T> {
    shared: Option<std::iter::Enumerate<std::slice::Iter<'a, T>>>,
    shadowed: Option<&'a Shadowed<T>>,
    own: std::slice::Iter<'a, T>,
    remaining: usize,
}

impl<'a, T> CollectionIter<'a, T> {
    /// The shared record at `index` as this collection sees it (`None` when it deleted it).
    fn resolve(&self, index: usize, record: &'a T) -> Option<&'a T> {
        match shadowed_at(self.shadowed, index) {
            Some(replacement) => replacement.as_ref(),
            None => Some(record),
        }
    }
}

impl<'a, T> Iterator for CollectionIter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        while let Some((index, record)) = self.shared.as_mut().and_then(Iterator::next) {
            if let Some(record) = self.resolve(index, record) {
                self.remaining -= 1;
                return Some(record);
            }
        }
        let record = self.own.next()?;
        self.remaining -= 1;
        Some(record)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<'a, T> DoubleEndedIterator for CollectionIter<'a, T> {
    fn next_back(&mut self) -> Option<&'a T> {
        if let Some(record) = self.own.next_back() {
            self.remaining -= 1;
            return Some(record);
        }
        while let Some((index, record)) = self
            .shared
            .as_mut()
            .and_then(DoubleEndedIterator::next_back)
        {
            if let Some(record) = self.resolve(index, record) {
                self.remaining -= 1;
                return Some(record);
            }
        }
        None
    }
}

impl<T> ExactSizeIterator for CollectionIter<'_, T> {}

impl<T> std::iter::FusedIterator for CollectionIter<'_, T> {}

impl<'a, T: Record> IntoIterator for &'a Collection<T> {
    type Item = &'a T;
    type IntoIter = CollectionIter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Record> IntoIterator for Collection<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(mut self) -> Self::IntoIter {
        let records: Vec<T> = if self.shared.is_none() {
            std::mem::take(&mut *self.own).into_vec()
        } else {
            self.iter().cloned().collect()
        };
        records.into_iter()
    }
}

impl<T: Record> FromIterator<T> for Collection<T> {
    fn from_iter<I: IntoIterator<Item = T>>(records: I) -> Self {
        let mut collection = Self::new();
        collection.extend(records);
        collection
    }
}

impl<T: Record> Extend<T> for Collection<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, records: I) {
        Collection::extend(self, records);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails loudly on a broken set-up")]
mod tests {
    use super::*;
    use crate::primitives::Message;

    fn message(id: &str, text: &str) -> Message {
        Message::user(id, text).unwrap()
    }

    fn described(collection: &Collection<Message>) -> Vec<String> {
        collection
            .iter()
            .map(|message| {
                format!(
                    "{}={}",
                    message.id(),
                    message
                        .content()
                        .map(|text| text.render())
                        .unwrap_or_default()
                )
            })
            .collect()
    }

    #[test]
    fn a_replaced_record_keeps_its_position_and_a_removed_one_closes_the_gap() {
        let mut messages: Collection<Message> =
            ["a", "b", "c"].iter().map(|id| message(id, id)).collect();
        messages.replace(message("b", "B"));
        assert_eq!(described(&messages), ["a=a", "b=B", "c=c"]);
        assert_eq!(messages.remove("a").unwrap().id(), "a");
        assert_eq!(described(&messages), ["b=B", "c=c"]);
        messages.add(message("a", "again"));
        assert_eq!(described(&messages), ["b=B", "c=c", "a=again"]);
        assert_eq!(messages.len(), 3);
    }

    #[test]
    fn a_shared_collection_sees_the_records_and_its_changes_stay_its_own() {
        let mut turn: Collection<Message> =
            ["a", "b", "c"].iter().map(|id| message(id, id)).collect();
        let mut dispatch = turn.share();
        dispatch.replace(message("b", "B"));
        dispatch.remove("a");
        dispatch.add(message("d", "d"));
        assert_eq!(described(&dispatch), ["b=B", "c=c", "d=d"]);
        assert_eq!(dispatch.len(), 3);
        assert_eq!(dispatch.get("b").unwrap().content().unwrap().render(), "B");
        assert!(!dispatch.contains("a"));
        assert_eq!(
            dispatch.iter().rev().map(Message::id).collect::<Vec<_>>(),
            ["d", "c", "b"]
        );
        // The turn is untouched until the dispatch's writes are applied to it.
        assert_eq!(described(&turn), ["a=a", "b=b", "c=c"]);
        turn.remove("c");
        turn.add(message("c", "again"));
        assert_eq!(described(&turn), ["a=a", "b=b", "c=again"]);
        assert_eq!(described(&dispatch), ["b=B", "c=c", "d=d"]);
    }

    #[test]
    fn sharing_a_collection_with_changes_folds_them_in_order() {
        let mut turn: Collection<Message> = ["a", "b"].iter().map(|id| message(id, id)).collect();
        let first = turn.share();
        turn.replace(message("a", "A"));
        turn.add(message("c", "c"));
        let second = turn.share();
        assert_eq!(described(&second), ["a=A", "b=b", "c=c"]);
        assert_eq!(described(&turn), ["a=A", "b=b", "c=c"]);
        assert_eq!(described(&first), ["a=a", "b=b"]);
        let owned: Vec<String> = second.into_iter().map(|m| m.id().to_owned()).collect();
        assert_eq!(owned, ["a", "b", "c"]);
    }

    #[test]
    fn a_turn_takes_over_a_dispatch_changed_only_through_queued_changes() {
        let mut turn: Collection<Message> = ["a", "b"].iter().map(|id| message(id, id)).collect();
        let mut dispatch = turn.share();
        dispatch.apply_queued(|dispatch| dispatch.add(message("c", "c")));
        dispatch.apply_queued(|dispatch| {
            dispatch.remove("a");
        });
        assert!(turn.adopt(&mut dispatch));
        assert_eq!(described(&turn), ["b=b", "c=c"]);
        assert!(dispatch.is_empty());
        // Taken over once: what the turn holds now is not in step with anything.
        let mut again = turn.share();
        again.apply_queued(|again| again.add(message("d", "d")));
        let mut other: Collection<Message> = Collection::new();
        assert!(!other.adopt(&mut again), "not shared from `other`");
    }

    #[test]
    fn a_direct_change_a_clone_or_a_discard_keeps_the_dispatch_its_own() {
        let mut turn: Collection<Message> = ["a"].iter().map(|id| message(id, id)).collect();
        let queued = |collection: &mut Collection<Message>| {
            collection.apply_queued(|collection| collection.add(message("q", "q")));
        };

        let mut direct = turn.share();
        queued(&mut direct);
        direct.replace(message("q", "edited"));
        assert!(!turn.adopt(&mut direct));

        let mut original = turn.share();
        queued(&mut original);
        let mut cloned = original.clone();
        assert!(!turn.adopt(&mut cloned));

        let mut discarded = turn.share();
        queued(&mut discarded);
        discarded.leave_step();
        assert!(!turn.adopt(&mut discarded));

        // Nothing of its own: nothing to take over.
        let mut untouched = turn.share();
        assert!(!turn.adopt(&mut untouched));
        assert_eq!(described(&turn), ["a=a"]);
        assert_eq!(described(&direct), ["a=a", "q=edited"]);
    }

    #[test]
    fn a_deleted_shared_record_can_be_stored_again_at_the_end() {
        let mut turn: Collection<Message> = ["a", "b"].iter().map(|id| message(id, id)).collect();
        let mut dispatch = turn.share();
        assert_eq!(dispatch.remove("a").unwrap().id(), "a");
        assert!(dispatch.remove("a").is_none());
        dispatch.add(message("a", "back"));
        assert_eq!(described(&dispatch), ["b=b", "a=back"]);
        assert_eq!(dispatch.iter().len(), 2);
    }
}
