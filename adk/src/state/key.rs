//! Typed state keys: a scoped key checked at compile time, paired with the type stored under it.

use std::fmt;
use std::marker::PhantomData;

use super::Scope;
use super::contention::{MergeFn, Policy, Refuse};

/// A state key whose scope prefix and name were checked at compile time, tied to the type of
/// the value stored under it.
///
/// Build one with [`state_key!`](crate::state_key): it refuses an unknown scope prefix
/// (`usr:theme`), an empty name and a type that is not serde data before your crate compiles.
/// Reading through the key yields `T`, writing accepts only `T`. The string form
/// (`state.value("user:theme")`) stays available for keys chosen at run time.
///
/// `P` is the key's contention policy (see [`contention`](super::contention)): what happens when
/// two turns write the key at once. [`Refuse`] (refuse the later commit as stale) unless the
/// declaration says otherwise: `state_key!("app:visits" => u64, on_conflict = add)` is a
/// `StateKey<u64, Add>`, which `ctx.state_mut().add(VISITS, 1)` accepts.
///
/// ```rust,standalone_crate
/// use adk::state::{Scope, StateKey};
///
/// const THEME: StateKey<String> = adk::state_key!("user:theme" => String);
/// assert_eq!(THEME.key(), "user:theme");
/// assert_eq!(THEME.scope(), Scope::User);
/// assert_eq!(THEME.name(), "theme");
/// ```
pub struct StateKey<T, P = Refuse> {
    key: &'static str,
    /// The merge of a `last_writer_wins` or merge-policy key; `None` for `refuse`.
    merge: Option<MergeFn<T>>,
    // `fn() -> T` keeps the key `Send + Sync + Copy` whatever `T` is: the key never holds a `T`.
    value_type: PhantomData<fn() -> (T, P)>,
}

impl<T> StateKey<T> {
    /// Wraps a key that `state_key!` has already validated. Not part of the public API: a
    /// hand-built key would skip the compile-time checks.
    #[doc(hidden)]
    pub const fn __from_checked_literal(key: &'static str) -> Self {
        Self {
            key,
            merge: None,
            value_type: PhantomData,
        }
    }
}

impl<T, P: Policy> StateKey<T, P> {
    /// Wraps a key that `state_key!` has already validated, with its policy's merge. Not part of
    /// the public API.
    #[doc(hidden)]
    pub const fn __with_policy(key: &'static str, merge: MergeFn<T>) -> Self {
        Self {
            key,
            merge: Some(merge),
            value_type: PhantomData,
        }
    }

    /// The key `state_key!` expands to after reporting an error in a declaration that names a
    /// policy: its policy is inferred from where it is used, so the macro's error is shown
    /// alone. Never usable: the crate does not compile. Not part of the public API.
    #[doc(hidden)]
    pub const fn __after_error() -> Self {
        Self {
            key: "",
            merge: None,
            value_type: PhantomData,
        }
    }

    /// The merge the key's policy applies (`None` for [`Refuse`]).
    pub(crate) fn merge_fn(&self) -> Option<MergeFn<T>> {
        self.merge
    }

    /// The key's contention policy, as written in `state_key!` (`"refuse"`, `"add"`, ...).
    #[must_use]
    pub const fn policy(&self) -> &'static str {
        P::NAME
    }
}

impl<T, P> StateKey<T, P> {
    /// The whole key, prefix included, for example `"user:theme"`.
    #[must_use]
    pub const fn key(&self) -> &'static str {
        self.key
    }

    /// The key's scope, from its prefix.
    #[must_use]
    pub fn scope(&self) -> Scope {
        Scope::of(self.key).0
    }

    /// The key's name without its prefix, for example `"theme"`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        Scope::of(self.key).1
    }
}

impl<T, P> Clone for StateKey<T, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, P> Copy for StateKey<T, P> {}

impl<T, P> PartialEq for StateKey<T, P> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<T, P> Eq for StateKey<T, P> {}

impl<T, P: Policy> fmt::Debug for StateKey<T, P> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("StateKey")
            .field("key", &self.key)
            .field("type", &std::any::type_name::<T>())
            .field("policy", &P::NAME)
            .finish()
    }
}

impl<T, P> AsRef<str> for StateKey<T, P> {
    fn as_ref(&self) -> &str {
        self.key
    }
}

/// What a `state_key!` type must be: serde data that can be stored as JSON and read back.
/// Implemented for every `Serialize + DeserializeOwned` type; the macro asserts it at your type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored in session state: it is not serde data",
    label = "this type does not implement `Serialize` and `DeserializeOwned`",
    note = "state is persisted as JSON: derive `serde::Serialize` and `serde::Deserialize` for \
            `{Self}`, or store a plain type (String, numbers, bool, Vec, a map) instead"
)]
pub trait StateValue: serde::Serialize + serde::de::DeserializeOwned {}

impl<T: serde::Serialize + serde::de::DeserializeOwned> StateValue for T {}

/// Compile-time assertion emitted by `state_key!` at the user's type. Not part of the public API.
#[doc(hidden)]
pub fn __assert_state_value<T: StateValue>() {}
