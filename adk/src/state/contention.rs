//! Contention policies: how a write to a key resolves when another turn wrote the same key
//! between this turn's load and its commit. A key's policy is part of its declaration in
//! [`state_key!`](crate::state_key) and of its type ([`StateKey<T, P>`](super::StateKey)), so
//! `ctx.state_mut().add(KEY, 1)` compiles only for a counter key.
//!
//! | `on_conflict =`    | marker               | a concurrent write to the key                        |
//! |--------------------|----------------------|------------------------------------------------------|
//! | `refuse` (default) | [`Refuse`]           | refuses the commit as stale (`E_STATE_STALE`)        |
//! | `last_writer_wins` | [`LastWriterWins`]   | the later commit's value replaces it, no refusal     |
//! | `add`              | [`Add`]              | both additions land (integers, [`Counter`])          |
//! | `union`            | [`Union`]            | both sets' members land ([`SetLike`])                |
//! | `max`              | [`Max`]              | the greater value stays (`Ord`)                      |
//! | `merge(f)`         | [`MergeWith`]        | `f(stored, operand)` in the store's transaction      |
//!
//! A merge is recorded as its operation (a [`MergeOp`]: "add 1"), never as a value the turn read,
//! and the store applies it to the value it reads inside the commit's transaction.

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use serde_json::Value;

use super::StateValue;

mod sealed {
    pub trait Sealed {}
}

/// What a concurrent write does to a key of this policy; see the [module](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// Refused as stale.
    Refuse,
    /// The later commit's value wins.
    LastWriterWins,
    /// The writes are merged in the store.
    Merge,
}

/// A contention policy marker: the second type parameter of [`StateKey`](super::StateKey).
/// Sealed: the policies are the ones below.
pub trait Policy: sealed::Sealed + Copy + Send + Sync + 'static {
    /// What the policy does with a concurrent write.
    const KIND: PolicyKind;
    /// The name written in `state_key!` (`on_conflict = add`).
    const NAME: &'static str;
}

/// A policy that merges concurrent writes in the store: `ctx.state_mut().merge(KEY, operand)`
/// accepts keys of these policies only.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` key is not merged: `merge` takes a key declared with \
               `on_conflict = add`, `union`, `max` or `merge(your_fn)`",
    label = "this key's policy is `{Self}`",
    note = "write it with `set`, or declare the key with a merge policy"
)]
pub trait MergePolicy: Policy {}

macro_rules! policies {
    ($($(#[$doc:meta])* $marker:ident => $kind:ident, $name:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $marker;
        impl sealed::Sealed for $marker {}
        impl Policy for $marker {
            const KIND: PolicyKind = PolicyKind::$kind;
            const NAME: &'static str = $name;
        }
    )*};
}

policies! {
    /// Refuse a commit whose write would overwrite a value another turn changed since this turn
    /// loaded it: the default for every scope.
    Refuse => Refuse, "refuse";
    /// The later commit's value replaces the earlier one; no commit is refused for this key.
    LastWriterWins => LastWriterWins, "last_writer_wins";
    /// Integer counter: `ctx.state_mut().add(KEY, n)` adds `n` to the stored value.
    Add => Merge, "add";
    /// Set union: the stored members plus the operand's.
    Union => Merge, "union";
    /// The greater of the stored value and the operand.
    Max => Merge, "max";
    /// A user function `fn(Option<T>, T) -> T` of the stored value and the operand.
    MergeWith => Merge, "merge";
}

impl MergePolicy for Add {}
impl MergePolicy for Union {}
impl MergePolicy for Max {}
impl MergePolicy for MergeWith {}

/// A typed merge: the stored value (`None`: absent) and the operand to the new value, or why
/// not (an overflow).
pub type MergeFn<T> = fn(Option<T>, T) -> Result<T, String>;

/// An integer type a counter key (`on_conflict = add`) can hold.
#[diagnostic::on_unimplemented(
    message = "`on_conflict = add` needs an integer value type, not `{Self}`",
    label = "a counter key must hold an integer",
    note = "declare the key with an integer type (`u64`, `i64`, ...), or use \
            `on_conflict = merge(your_fn)` with a `fn(Option<{Self}>, {Self}) -> {Self}`"
)]
pub trait Counter: StateValue + Copy + sealed::Sealed {
    /// `self + other`, or `None` on overflow.
    fn checked_sum(self, other: Self) -> Option<Self>;
    /// Zero: the value of an absent counter.
    const ZERO: Self;
}

macro_rules! counters {
    ($($ty:ty),*) => {$(
        impl sealed::Sealed for $ty {}
        impl Counter for $ty {
            fn checked_sum(self, other: Self) -> Option<Self> {
                self.checked_add(other)
            }
            const ZERO: Self = 0;
        }
    )*};
}

counters!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

/// A set a key with `on_conflict = union` can hold: a `Vec` used as a set (members kept in the
/// order first added, no duplicates added), a `BTreeSet` or a `HashSet`.
#[diagnostic::on_unimplemented(
    message = "`on_conflict = union` needs a set value type, not `{Self}`",
    label = "a union key must hold a `Vec`, `BTreeSet` or `HashSet`",
    note = "declare the key as `Vec<_>`, `BTreeSet<_>` or `HashSet<_>`, or use \
            `on_conflict = merge(your_fn)`"
)]
pub trait SetLike: StateValue {
    /// The members of `self` and then those of `other` not already in it.
    #[must_use]
    fn union(self, other: Self) -> Self;
}

impl<V: StateValue + PartialEq> SetLike for Vec<V> {
    fn union(mut self, other: Self) -> Self {
        for member in other {
            if !self.contains(&member) {
                self.push(member);
            }
        }
        self
    }
}

impl<V: StateValue + Ord> SetLike for BTreeSet<V> {
    fn union(mut self, other: Self) -> Self {
        self.extend(other);
        self
    }
}

impl<V: StateValue + Eq + Hash> SetLike for HashSet<V> {
    fn union(mut self, other: Self) -> Self {
        self.extend(other);
        self
    }
}

/// An ordered type a key with `on_conflict = max` can hold.
#[diagnostic::on_unimplemented(
    message = "`on_conflict = max` needs a totally ordered value type, not `{Self}`",
    label = "`{Self}` does not implement `Ord`",
    note = "declare the key with an `Ord` type (integers, `String`, ...); for floats use \
            `on_conflict = merge(your_fn)`"
)]
pub trait Maximum: StateValue + Ord {}

impl<T: StateValue + Ord> Maximum for T {}

/// `on_conflict = add`. Used by `state_key!`; not part of the public API.
#[doc(hidden)]
pub fn __add<T: Counter>(stored: Option<T>, operand: T) -> Result<T, String> {
    stored
        .unwrap_or(T::ZERO)
        .checked_sum(operand)
        .ok_or_else(|| format!("adding overflows `{}`", std::any::type_name::<T>()))
}

/// `on_conflict = union`. Used by `state_key!`; not part of the public API.
#[doc(hidden)]
#[allow(clippy::unnecessary_wraps)] // a `MergeFn`
pub fn __union<T: SetLike>(stored: Option<T>, operand: T) -> Result<T, String> {
    Ok(match stored {
        Some(stored) => stored.union(operand),
        None => operand,
    })
}

/// `on_conflict = max`. Used by `state_key!`; not part of the public API.
#[doc(hidden)]
#[allow(clippy::unnecessary_wraps)] // a `MergeFn`
pub fn __max<T: Maximum>(stored: Option<T>, operand: T) -> Result<T, String> {
    Ok(match stored {
        Some(stored) => stored.max(operand),
        None => operand,
    })
}

/// `on_conflict = last_writer_wins`. Used by `state_key!`; not part of the public API.
#[doc(hidden)]
#[allow(clippy::unnecessary_wraps)] // a `MergeFn`
pub fn __last_writer_wins<T: StateValue>(_stored: Option<T>, operand: T) -> Result<T, String> {
    Ok(operand)
}

type ErasedFn = dyn Fn(Option<&Value>, &Value) -> Result<Value, String> + Send + Sync;

/// A merge a turn recorded for one key: the rule (`"add"`, `"union"`, `"max"`,
/// `"last_writer_wins"`, `"merge"`) and its operands in the order written. A store applies it
/// with [`apply`](Self::apply) to the value it reads inside the commit's transaction (or, more
/// simply, calls [`TurnCommit::resolve`](super::TurnCommit::resolve) there).
#[derive(Clone)]
pub struct MergeOp {
    rule: &'static str,
    function: Arc<ErasedFn>,
    operands: Vec<Value>,
    /// What the turn sees: the rule applied to the value the turn loaded (or to its own earlier
    /// write). Not what the store will hold, which depends on other turns' commits.
    preview: Value,
}

impl MergeOp {
    /// A merge of `operand` under the typed `function` called `rule`, with `preview` computed
    /// against `seen` (what the turn sees for the key now).
    pub(crate) fn typed<T: StateValue + 'static>(
        rule: &'static str,
        function: MergeFn<T>,
        operand: T,
        seen: Option<&Value>,
    ) -> Result<Self, String> {
        let erased: Arc<ErasedFn> = Arc::new(move |stored, operand| {
            let stored = stored
                .map(|value| T::deserialize(value))
                .transpose()
                .map_err(|error| format!("the stored value is not the key's type: {error}"))?;
            let operand = T::deserialize(operand)
                .map_err(|error| format!("the operand is not the key's type: {error}"))?;
            let merged = function(stored, operand)?;
            serde_json::to_value(merged).map_err(|error| error.to_string())
        });
        let operand = serde_json::to_value(operand).map_err(|error| error.to_string())?;
        let preview = erased(seen, &operand)?;
        Ok(Self {
            rule,
            function: erased,
            operands: vec![operand],
            preview,
        })
    }

    /// This merge followed by `next` (same key, so the same rule): one more operand.
    pub(crate) fn then(mut self, next: Self) -> Result<Self, String> {
        self.preview = (self.function)(Some(&self.preview), &next.operands[0])?;
        self.operands.extend(next.operands);
        Ok(self)
    }

    /// The rule's name as written in `state_key!`.
    #[must_use]
    pub fn rule(&self) -> &'static str {
        self.rule
    }

    /// The operands, in the order the turn wrote them (`[1, 1]` for two `add(KEY, 1)`).
    #[must_use]
    pub fn operands(&self) -> &[Value] {
        &self.operands
    }

    /// What the turn saw after its merges: the rule applied to the value it loaded.
    #[must_use]
    pub fn preview(&self) -> &Value {
        &self.preview
    }

    /// The new value: each operand merged, in order, into `stored` (`None`: the key is absent).
    ///
    /// # Errors
    ///
    /// Why the merge cannot be made: the stored value is not the key's type, or the rule
    /// refused (an overflowing counter).
    pub fn apply(&self, stored: Option<&Value>) -> Result<Value, String> {
        let mut operands = self.operands.iter();
        let Some(first) = operands.next() else {
            return stored
                .cloned()
                .ok_or_else(|| "a merge with no operand".to_owned());
        };
        let mut value = (self.function)(stored, first)?;
        for operand in operands {
            value = (self.function)(Some(&value), operand)?;
        }
        Ok(value)
    }
}

impl PartialEq for MergeOp {
    fn eq(&self, other: &Self) -> bool {
        self.rule == other.rule && self.operands == other.operands
    }
}

impl fmt::Debug for MergeOp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("MergeOp")
            .field("rule", &self.rule)
            .field("operands", &self.operands)
            .finish_non_exhaustive()
    }
}
