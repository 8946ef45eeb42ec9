//! [`MiddlewareStates`]: a turn's typed middleware state, by type, with what was loaded, what
//! changed, and the journal a dispatch hands back to its turn.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::error::{MiddlewareStateError, Mismatch, UnknownRecord};
use super::load::{registered, scope_matches};
use super::records::{MiddlewareStateRecord as Record, MiddlewareStateWrite, RecordScope};
use super::{MiddlewareState, Persistence, StateScope};
use crate::ids::ThreadId;

/// A state value with its type erased, so one map holds every type.
pub(crate) trait ErasedState: Any + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    /// The record to commit, for a persistent state.
    fn to_record(&self, thread: &ThreadId) -> Option<Result<Record, MiddlewareStateError>>;
    /// The key and type name of a persistent state; `None` for a transient one.
    fn persistent_key(&self) -> Option<(&'static str, &'static str)>;
}

impl<T: MiddlewareState> ErasedState for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn to_record(&self, thread: &ThreadId) -> Option<Result<Record, MiddlewareStateError>> {
        let Persistence::Persistent(scope) = T::PERSISTENCE else {
            return None;
        };
        let codec = T::__CODEC?;
        Some(
            (codec.encode)(self)
                .map(|json| Record {
                    scope: match scope {
                        StateScope::Session => RecordScope::Session,
                        StateScope::Thread => RecordScope::Thread(thread.clone()),
                    },
                    key: T::KEY.to_owned(),
                    version: T::VERSION,
                    json,
                })
                .map_err(|source| MiddlewareStateError::Encode {
                    key: T::KEY,
                    source,
                }),
        )
    }

    fn persistent_key(&self) -> Option<(&'static str, &'static str)> {
        matches!(T::PERSISTENCE, Persistence::Persistent(_))
            .then(|| (T::KEY, std::any::type_name::<T>()))
    }
}

/// Hashes a `TypeId` by passing its bits through: they are already a hash, and SipHash over
/// them was most of the cost of an update.
#[derive(Clone, Copy, Default)]
struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // `TypeId` writes one `u64` today; any other shape is folded in (FNV-1a), so a change
        // in std costs speed, not correctness.
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 ^= value;
    }
}

type Slots = HashMap<TypeId, Slot, BuildHasherDefault<TypeIdHasher>>;

#[derive(Clone)]
enum Slot {
    /// A value, shared copy-on-write with the dispatch's copy; `dirty` when this turn changed
    /// it (or migrated it), so the commit writes it.
    Value {
        value: Arc<dyn ErasedState>,
        dirty: bool,
    },
    /// The stored record could not be read; writes are refused so it is kept.
    Unreadable(Arc<Mismatch>),
}

/// The middleware state of one turn (or of its dispatch), by type.
///
/// Reached through `ctx.middleware_states()` / `ctx.middleware_states_mut()` on both contexts,
/// or one type at a time through `ctx.middleware_state::<T>()` and
/// `ctx.update_middleware_state::<T>(..)`. Reads borrow: hold several at once to decide on
/// several states together. Writes go through at once, so later middleware of the turn see
/// them; the borrow checker rules out an update inside another's closure.
///
/// ```rust,standalone_crate
/// use adk::middleware_state::{MiddlewareState, MiddlewareStates};
///
/// #[derive(MiddlewareState, Default, Clone)]
/// struct Failures { count: u32 }
/// #[derive(MiddlewareState, Default, Clone)]
/// struct Limit { max: u32 }
///
/// let mut states = MiddlewareStates::default();
/// states.update::<Limit>(|limit| limit.max = 3)?;
/// states.update::<Failures>(|failures| failures.count += 1)?;
/// // Two states read together, under one borrow.
/// let (failures, limit) = (states.get::<Failures>(), states.get::<Limit>());
/// assert!(failures.map_or(0, |f| f.count) < limit.map_or(0, |l| l.max));
/// # Ok::<(), adk::middleware_state::MiddlewareStateError>(())
/// ```
#[derive(Clone, Default)]
pub struct MiddlewareStates {
    slots: Slots,
    /// Types written since the last hand-over, kept only by a dispatch's copy.
    journal: Option<Vec<TypeId>>,
    mismatches: Vec<Mismatch>,
    unknown: Vec<UnknownRecord>,
}

impl std::fmt::Debug for MiddlewareStates {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("MiddlewareStates")
            .field("states", &self.slots.len())
            .field("mismatches", &self.mismatches)
            .field("unknown", &self.unknown)
            .finish_non_exhaustive()
    }
}

impl MiddlewareStates {
    /// No state at all.
    pub(crate) const EMPTY: Self = Self {
        slots: HashMap::with_hasher(BuildHasherDefault::new()),
        journal: None,
        mismatches: Vec::new(),
        unknown: Vec::new(),
    };

    /// The states a turn starts with, decoded from the records a session store loaded: each
    /// record whose key belongs to a persistent type of this program and scope, migrated when
    /// its version differs and the type has `migrate`. Records that cannot be read are listed
    /// in [`mismatches`](Self::mismatches), records of no known type in
    /// [`unknown_records`](Self::unknown_records); neither is ever deleted.
    #[must_use]
    pub fn from_records(records: &[Record]) -> Self {
        let mut states = Self::default();
        for record in records {
            let Some(registration) = registered(&record.key)
                .filter(|registration| scope_matches(registration.persistence, &record.scope))
            else {
                states.unknown.push(UnknownRecord {
                    key: record.key.clone(),
                    scope: record.scope.clone(),
                    version: record.version,
                });
                continue;
            };
            let type_id = (registration.type_id)();
            match (registration.decode)(record.version, record.json.clone()) {
                Ok((value, migrated)) => {
                    states.slots.insert(
                        type_id,
                        Slot::Value {
                            value,
                            dirty: migrated,
                        },
                    );
                }
                Err(reason) => {
                    let mismatch = Mismatch {
                        key: record.key.clone(),
                        type_name: (registration.type_name)(),
                        scope: record.scope.clone(),
                        stored_version: record.version,
                        current_version: registration.version,
                        reason,
                        defaulted: registration.default_on_mismatch,
                    };
                    if !mismatch.defaulted {
                        states
                            .slots
                            .insert(type_id, Slot::Unreadable(Arc::new(mismatch.clone())));
                    }
                    states.mismatches.push(mismatch);
                }
            }
        }
        states
    }

    /// The state of type `T`, or `None` when nothing set it yet (this turn, for transient state;
    /// ever, for persistent state) or its stored record could not be read. A borrow: it cannot
    /// change while you hold it; clone it to keep a snapshot past the next update.
    #[must_use]
    pub fn get<T: MiddlewareState>(&self) -> Option<&T> {
        match self.slots.get(&TypeId::of::<T>())? {
            Slot::Value { value, .. } => (**value).as_any().downcast_ref::<T>(),
            Slot::Unreadable(_) => None,
        }
    }

    /// Changes the state of type `T`, starting from `T::default()` when it is unset. The change
    /// is visible at once. It works on a copy that replaces the state when `change` returns, so
    /// a `change` that panics leaves the state as it was (HPD's rule for a throwing transform):
    /// the panic is caught and returned as [`MiddlewareStateError::Panicked`].
    ///
    /// # Errors
    ///
    /// [`MiddlewareStateError::Unreadable`] when the turn loaded a record of `T` it could not
    /// read (reported when the turn started): writing would replace it.
    /// [`MiddlewareStateError::Panicked`] when `change` panicked. Nothing changed in either case.
    pub fn update<T: MiddlewareState>(
        &mut self,
        change: impl FnOnce(&mut T),
    ) -> Result<(), MiddlewareStateError> {
        self.try_update::<T, MiddlewareStateError>(|state| {
            change(state);
            Ok(())
        })
    }

    /// Like [`update`](Self::update), for a change that may fail: `change` works on a copy, which
    /// replaces the state only when it returns `Ok`. On `Err` the state is as it was (still unset,
    /// if it was).
    ///
    /// A `change` that panics leaves the state as it was too: the panic is caught and returned
    /// as [`MiddlewareStateError::Panicked`] converted into `E`.
    ///
    /// # Errors
    ///
    /// `change`'s error, or [`MiddlewareStateError::Unreadable`] or
    /// [`MiddlewareStateError::Panicked`] converted into `E`.
    pub fn try_update<T: MiddlewareState, E: From<MiddlewareStateError>>(
        &mut self,
        change: impl FnOnce(&mut T) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut copy = match self.slots.get(&TypeId::of::<T>()) {
            Some(Slot::Unreadable(mismatch)) => {
                return Err(
                    MiddlewareStateError::Unreadable(Box::new((**mismatch).clone())).into(),
                );
            }
            Some(Slot::Value { value, .. }) => match (**value).as_any().downcast_ref::<T>() {
                Some(state) => state.__clone(),
                None => T::__default(),
            },
            None => T::__default(),
        };
        // The copy is dropped if `change` panics: nothing of a half-done change is kept.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| change(&mut copy))) {
            Ok(result) => result?,
            Err(payload) => {
                return Err(MiddlewareStateError::Panicked {
                    type_name: std::any::type_name::<T>(),
                    message: panic_text(payload.as_ref()),
                }
                .into());
            }
        }
        self.slots.insert(
            TypeId::of::<T>(),
            Slot::Value {
                value: Arc::new(copy),
                dirty: true,
            },
        );
        self.journal(TypeId::of::<T>());
        Ok(())
    }

    fn journal(&mut self, type_id: TypeId) {
        if let Some(journal) = &mut self.journal {
            journal.push(type_id);
        }
    }

    /// Whether no state was loaded or written.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether a state was written (or migrated) since the turn loaded.
    #[must_use]
    pub fn has_changes(&self) -> bool {
        self.slots
            .values()
            .any(|slot| matches!(slot, Slot::Value { dirty: true, .. }))
    }

    /// The stored records the turn could not read (reported as events when it started).
    #[must_use]
    pub fn mismatches(&self) -> &[Mismatch] {
        &self.mismatches
    }

    /// The stored records no type of this program reads (kept in the store).
    #[must_use]
    pub fn unknown_records(&self) -> &[UnknownRecord] {
        &self.unknown
    }

    /// The record writes of this turn: every persistent state it changed (or migrated), in its
    /// scope; thread-scoped ones under `thread`. Sorted by key, so commits are deterministic.
    ///
    /// # Errors
    ///
    /// [`MiddlewareStateError::Encode`] for the first state that is not JSON; nothing is to be
    /// committed then.
    pub fn writes(
        &self,
        thread: &ThreadId,
    ) -> Result<Vec<MiddlewareStateWrite>, MiddlewareStateError> {
        let mut writes = Vec::new();
        for slot in self.slots.values() {
            if let Slot::Value { value, dirty: true } = slot
                && let Some(record) = value.to_record(thread)
            {
                writes.push(MiddlewareStateWrite::Put(record?));
            }
        }
        writes.sort_by(|left, right| match (left, right) {
            (MiddlewareStateWrite::Put(left), MiddlewareStateWrite::Put(right)) => {
                left.key.cmp(&right.key)
            }
            _ => std::cmp::Ordering::Equal,
        });
        Ok(writes)
    }

    /// `(key, type name)` of every persistent state this turn changed, sorted by key: what a
    /// commit would write.
    pub(crate) fn persistent_changes(&self) -> Vec<(&'static str, &'static str)> {
        let mut changed: Vec<_> = self
            .slots
            .values()
            .filter_map(|slot| match slot {
                Slot::Value { value, dirty: true } => value.persistent_key(),
                _ => None,
            })
            .collect();
        changed.sort_unstable();
        changed
    }

    /// A copy that journals its writes, for a dispatch.
    pub(crate) fn with_journal(&self) -> Self {
        Self {
            slots: self.slots.clone(),
            journal: Some(Vec::new()),
            mismatches: Vec::new(),
            unknown: Vec::new(),
        }
    }

    /// Hands the journaled writes of a dispatch's copy to `turn`.
    pub(crate) fn flush_journal_into(&mut self, turn: &mut Self) {
        let Some(journal) = &mut self.journal else {
            return;
        };
        for type_id in journal.drain(..) {
            if let Some(slot) = self.slots.get(&type_id) {
                turn.slots.insert(type_id, slot.clone());
            }
        }
    }

    /// Drops the journaled writes: the turn never sees them.
    pub(crate) fn discard_journal(&mut self) {
        if let Some(journal) = &mut self.journal {
            journal.clear();
        }
    }

    /// Takes the load reports, to emit them once.
    pub(crate) fn take_reports(&mut self) -> (Vec<Mismatch>, Vec<UnknownRecord>) {
        (
            std::mem::take(&mut self.mismatches),
            std::mem::take(&mut self.unknown),
        )
    }
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&'static str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}
