//! Changes to the turn collections, as values: applied at once to the context that made them
//! and, inside a dispatch, queued for the turn until the iteration completes.

use crate::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, ToolCall};

use super::Collection;
use crate::lean::Lean;

/// One change to one collection.
#[derive(Clone, Debug)]
pub(crate) enum Change<T> {
    Store(T),
    Mutate(T),
    Delete(String),
}

/// A change to any of the collections a context carries.
#[derive(Clone, Debug)]
pub(crate) enum Delta {
    Message(Change<Message>),
    Memory(Change<Memory>),
    Thought(Change<Thought>),
    ToolCall(Change<ToolCall>),
    Retrievable(Change<Retrievable>),
    StoreInstruction(StandingInstruction),
    MutateInstruction(StandingInstruction),
    DeleteInstruction(StandingInstruction),
    /// The calls named by `ids` leave; `replacements` stand where the first of them stood.
    ReplaceToolCallGroup {
        ids: Vec<String>,
        replacements: Vec<ToolCall>,
    },
}

/// The changes a dispatch queued for its turn, in the order they were made: a first change that
/// is a message's is held inline, as most dispatches make one write (the answer) or none; every
/// other change, and every change after the first, goes in a vector.
///
/// Only a message's change is inline: a [`Delta`] is as large as the largest record (a tool
/// call, about 400 bytes), a message's change less than half that, and the queue sits in every
/// dispatch context, which must stay small enough for the allocator's fast path.
///
/// Both fields are [`Lean`]: most queues end empty, and their drop glue was an out-of-line
/// call of 22 instructions.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    first: Lean<Option<Change<Message>>>,
    rest: Lean<Vec<Delta>>,
}

impl Queue {
    #[inline]
    pub(crate) fn push(&mut self, delta: Delta) {
        match delta {
            // `first` is set only into an empty queue, so it comes before all of `rest`.
            Delta::Message(change) if self.first.is_none() && self.rest.is_empty() => {
                *self.first = Some(change);
            }
            delta => self.rest.push(delta),
        }
    }

    /// Whether the queue holds exactly one change, to a message.
    pub(crate) fn is_one_message_change(&self) -> bool {
        self.first.is_some() && self.rest.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// Empties the queue, yielding its changes in order.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Delta> + '_ {
        self.first
            .take()
            .map(Delta::Message)
            .into_iter()
            .chain(self.rest.drain(..))
    }

    /// The collections the changes left in the queue touch, in order (with repeats).
    pub(crate) fn collections(&self) -> impl Iterator<Item = CollectionKind> + '_ {
        self.first
            .iter()
            .map(|_| CollectionKind::Messages)
            .chain(self.rest.iter().filter_map(Delta::collection))
    }

    /// Empties the queue, giving `apply` its changes in order except those `adopted` covers
    /// (see [`Adopted::covers`]), which are dropped where they lie instead of being moved out
    /// first (a change is as large as the largest record, a few hundred bytes).
    pub(crate) fn drain_skipping(&mut self, adopted: Adopted, mut apply: impl FnMut(Delta)) {
        // A message's change stores no tool call: covered whenever the messages were adopted.
        if adopted.contains(CollectionKind::Messages) {
            *self.first = None;
        } else if let Some(first) = self.first.take() {
            apply(Delta::Message(first));
        }
        // Most queues hold one change: an empty vector's drain is not free.
        if self.rest.is_empty() {
            return;
        }
        for delta in self.rest.drain(..) {
            if !adopted.covers(&delta) {
                apply(delta);
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        *self.first = None;
        self.rest.clear();
    }
}

/// The collections a change can be applied to: both contexts have them.
pub(crate) struct CollectionsMut<'a> {
    pub(crate) standing_instructions: &'a mut Vec<StandingInstruction>,
    pub(crate) messages: &'a mut Collection<Message>,
    pub(crate) memories: &'a mut Collection<Memory>,
    pub(crate) retrievables: &'a mut Collection<Retrievable>,
    pub(crate) thoughts: &'a mut Collection<Thought>,
    pub(crate) tool_calls: &'a mut Collection<ToolCall>,
    /// The ids of the tool calls stored in this turn (not loaded from history).
    pub(crate) made_this_turn: &'a mut MadeThisTurn,
}

/// The ids of the tool calls a turn stored itself (`store_tool_call`, the replacements of
/// `replace_tool_call_group`), so a view can tell them from calls loaded from history, which
/// are added to the collection directly.
///
/// Hashed with [`IdHasher`](super::records::IdHasher), as the collections' indexes are: every
/// turn and dispatch makes one of these, and the standard library's `RandomState` read a
/// thread-local for each, mostly for a set that stays empty.
///
/// The set is made with its first id: most turns make no tool call, and an empty set still cost
/// a call to drop (and one to clone, for every dispatch).
#[derive(Clone, Debug, Default)]
pub(crate) struct MadeThisTurn(Option<std::collections::HashSet<String, super::records::IdHasher>>);

impl MadeThisTurn {
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.0.as_ref().is_some_and(|made| made.contains(id))
    }

    /// Counts `id` as made in this turn: a resumed turn's calls, read back from storage, were
    /// made by the turn it continues.
    pub(crate) fn insert(&mut self, id: String) {
        self.0.get_or_insert_default().insert(id);
    }
}

fn apply_change<T: super::Record>(collection: &mut Collection<T>, change: Change<T>) {
    collection.apply_queued(|collection| match change {
        Change::Store(record) => collection.add(record),
        Change::Mutate(record) => collection.replace(record),
        Change::Delete(id) => {
            collection.remove(&id);
        }
    });
}

/// Applies a copy of `change`: the record is cloned straight into the collection.
fn apply_change_copy<T: super::Record>(collection: &mut Collection<T>, change: &Change<T>) {
    collection.apply_queued(|collection| match change {
        Change::Store(record) => collection.add(record.clone()),
        Change::Mutate(record) => collection.replace(record.clone()),
        Change::Delete(id) => {
            collection.remove(id);
        }
    });
}

// Removes the records named by `ids` and puts `replacements` where the first of them stood (at
// the end when none was present), keeping every other record's place.
fn replace_group<T: super::Record>(
    collection: &mut Collection<T>,
    ids: &[String],
    replacements: Vec<T>,
) {
    let records: Vec<T> = collection.iter().cloned().collect();
    let position = records
        .iter()
        .position(|record| ids.iter().any(|id| id == record.record_id()));
    let mut kept: Vec<T> = records
        .into_iter()
        .filter(|record| !ids.iter().any(|id| id == record.record_id()))
        .collect();
    let at = match position {
        // Records before the first removed one are all kept, so its index is unchanged.
        Some(position) => position,
        None => kept.len(),
    };
    kept.splice(at..at, replacements);
    collection.apply_queued(|collection| {
        collection.clear();
        collection.extend(kept);
    });
}

/// The collections a [`Delta`] can change, each named once: [`Delta::collection`] maps a change
/// to its collection, and [`Adopted`] is a set of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CollectionKind {
    Messages,
    Memories,
    Retrievables,
    Thoughts,
    ToolCalls,
}

impl CollectionKind {
    pub(crate) const ALL: [Self; 5] = [
        Self::Messages,
        Self::Memories,
        Self::Retrievables,
        Self::Thoughts,
        Self::ToolCalls,
    ];

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of collections (see [`CollectionKind`]): those of a turn that took over the
/// dispatch's own as the dispatch ended (see [`Collection::adopt`]), whose queued changes are in
/// them already.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Adopted(u8);

impl Adopted {
    pub(crate) fn contains(self, kind: CollectionKind) -> bool {
        self.0 & kind.bit() != 0
    }

    pub(crate) fn insert(&mut self, kind: CollectionKind) {
        self.0 |= kind.bit();
    }

    /// Whether `delta` has nothing left to do in the turn: its collection was taken over, and
    /// it counts no tool call as made this turn.
    pub(crate) fn covers(self, delta: &Delta) -> bool {
        delta.collection().is_some_and(|kind| self.contains(kind)) && !delta.makes_tool_calls()
    }
}

impl Delta {
    /// The collection the change touches; `None` for a standing instruction (a plain vector,
    /// never taken over).
    pub(crate) fn collection(&self) -> Option<CollectionKind> {
        match self {
            Self::Message(_) => Some(CollectionKind::Messages),
            Self::Memory(_) => Some(CollectionKind::Memories),
            Self::Thought(_) => Some(CollectionKind::Thoughts),
            Self::Retrievable(_) => Some(CollectionKind::Retrievables),
            Self::ToolCall(_) | Self::ReplaceToolCallGroup { .. } => {
                Some(CollectionKind::ToolCalls)
            }
            Self::StoreInstruction(_) | Self::MutateInstruction(_) | Self::DeleteInstruction(_) => {
                None
            }
        }
    }

    /// Whether the change stores tool calls, whose ids count as made this turn.
    fn makes_tool_calls(&self) -> bool {
        matches!(
            self,
            Self::ToolCall(Change::Store(_)) | Self::ReplaceToolCallGroup { .. }
        )
    }

    /// Counts the ids of the tool calls the change stores as made this turn.
    fn count_made_tool_calls(&self, made_this_turn: &mut MadeThisTurn) {
        match self {
            Self::ToolCall(Change::Store(call)) => made_this_turn.insert(call.id().to_owned()),
            Self::ReplaceToolCallGroup { replacements, .. } => {
                for call in replacements {
                    made_this_turn.insert(call.id().to_owned());
                }
            }
            _ => {}
        }
    }

    pub(crate) fn apply(self, target: CollectionsMut<'_>) {
        self.apply_except(target, Adopted::default());
    }

    /// Applies a copy of the change, leaving this one to be queued: a record change clones
    /// only its change (its record or id), not the whole delta (a delta is as large as the
    /// largest record).
    #[inline]
    pub(crate) fn apply_copy(&self, target: CollectionsMut<'_>) {
        match self {
            Self::Message(change) => apply_change_copy(target.messages, change),
            Self::Memory(change) => apply_change_copy(target.memories, change),
            Self::Thought(change) => apply_change_copy(target.thoughts, change),
            Self::Retrievable(change) => apply_change_copy(target.retrievables, change),
            Self::ToolCall(change) => {
                self.count_made_tool_calls(target.made_this_turn);
                apply_change_copy(target.tool_calls, change);
            }
            other => other.clone().apply(target),
        }
    }

    /// Applies the change, except to a collection in `adopted`, which has it already; the ids
    /// of the tool calls it stores are counted as made this turn either way.
    pub(crate) fn apply_except(self, target: CollectionsMut<'_>, adopted: Adopted) {
        self.count_made_tool_calls(target.made_this_turn);
        if self.collection().is_some_and(|kind| adopted.contains(kind)) {
            return;
        }
        match self {
            Self::Message(change) => apply_change(target.messages, change),
            Self::Memory(change) => apply_change(target.memories, change),
            Self::Thought(change) => apply_change(target.thoughts, change),
            Self::ToolCall(change) => apply_change(target.tool_calls, change),
            Self::ReplaceToolCallGroup { ids, replacements } => {
                replace_group(target.tool_calls, &ids, replacements);
            }
            Self::Retrievable(change) => apply_change(target.retrievables, change),
            // Standing instructions have no id: they are identified by value, so storing or
            // mutating one that is already present changes nothing.
            Self::StoreInstruction(instruction) | Self::MutateInstruction(instruction) => {
                if !target.standing_instructions.contains(&instruction) {
                    target.standing_instructions.push(instruction);
                }
            }
            Self::DeleteInstruction(instruction) => {
                if let Some(position) = target
                    .standing_instructions
                    .iter()
                    .position(|existing| *existing == instruction)
                {
                    target.standing_instructions.remove(position);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deleted(id: &str) -> Delta {
        Delta::Message(Change::Delete(id.to_owned()))
    }

    /// What a change is, as `kind:id`.
    fn described(delta: &Delta) -> String {
        match delta {
            Delta::Message(Change::Delete(id)) => format!("message:{id}"),
            Delta::Memory(Change::Delete(id)) => format!("memory:{id}"),
            Delta::Thought(Change::Delete(id)) => format!("thought:{id}"),
            other => panic!("unexpected change {other:?}"),
        }
    }

    fn drained(queue: &mut Queue) -> Vec<String> {
        queue.drain().map(|delta| described(&delta)).collect()
    }

    #[test]
    fn draining_with_adopted_collections_applies_the_rest_in_order_and_empties_the_queue() {
        // A message's change first (held inline) and later (in the vector), and others.
        let changes = || {
            [
                deleted("a"),
                Delta::Memory(Change::Delete("b".to_owned())),
                deleted("c"),
                Delta::Thought(Change::Delete("d".to_owned())),
            ]
        };
        let cases = [
            (
                vec![],
                vec!["message:a", "memory:b", "message:c", "thought:d"],
            ),
            (
                vec![CollectionKind::Messages],
                vec!["memory:b", "thought:d"],
            ),
            (
                vec![CollectionKind::Memories, CollectionKind::Thoughts],
                vec!["message:a", "message:c"],
            ),
        ];
        for (kinds, expected) in cases {
            let mut queue = Queue::default();
            for delta in changes() {
                queue.push(delta);
            }
            let mut adopted = Adopted::default();
            for kind in kinds {
                adopted.insert(kind);
            }
            let mut applied = Vec::new();
            queue.drain_skipping(adopted, |delta| applied.push(described(&delta)));
            assert_eq!(applied, expected);
            assert_eq!(queue.len(), 0);
        }
    }

    #[test]
    fn the_queue_yields_its_changes_in_the_order_they_were_made_and_is_empty_after() {
        let mut queue = Queue::default();
        for id in ["a", "b", "c"] {
            queue.push(deleted(id));
        }
        assert_eq!(queue.len(), 3);
        assert_eq!(drained(&mut queue), ["message:a", "message:b", "message:c"]);
        assert_eq!(queue.len(), 0);
        queue.push(deleted("d"));
        assert_eq!(drained(&mut queue), ["message:d"]);
        queue.push(deleted("e"));
        queue.push(deleted("f"));
        queue.clear();
        assert_eq!(queue.len(), 0);
        queue.push(deleted("g"));
        assert_eq!(drained(&mut queue), ["message:g"]);
    }

    #[test]
    fn a_message_change_after_another_kind_keeps_its_place() {
        // The inline slot takes only a first change: a message's change made after another
        // kind's must not jump ahead of it.
        let mut queue = Queue::default();
        queue.push(Delta::Memory(Change::Delete("a".to_owned())));
        queue.push(deleted("b"));
        queue.push(Delta::Thought(Change::Delete("c".to_owned())));
        assert_eq!(
            queue.collections().collect::<Vec<_>>(),
            [
                CollectionKind::Memories,
                CollectionKind::Messages,
                CollectionKind::Thoughts
            ]
        );
        assert_eq!(drained(&mut queue), ["memory:a", "message:b", "thought:c"]);
    }
}
