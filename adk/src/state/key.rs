//! Typed state keys: a scoped key checked at compile time, paired with the type stored under it.

use std::fmt;
use std::marker::PhantomData;

use super::Scope;

/// A state key whose scope prefix and name were checked at compile time, tied to the type of
/// the value stored under it.
///
/// Build one with [`state_key!`](crate::state_key): it refuses an unknown scope prefix
/// (`usr:theme`), an empty name and a type that is not serde data before your crate compiles.
/// Reading through the key yields `T`, writing accepts only `T`. The string form
/// (`state.value("user:theme")`) stays available for keys chosen at run time.
///
/// ```rust,standalone_crate
/// use adk::state::{Scope, StateKey};
///
/// const THEME: StateKey<String> = adk::state_key!("user:theme" => String);
/// assert_eq!(THEME.key(), "user:theme");
/// assert_eq!(THEME.scope(), Scope::User);
/// assert_eq!(THEME.name(), "theme");
/// ```
pub struct StateKey<T> {
    key: &'static str,
    // `fn() -> T` keeps the key `Send + Sync + Copy` whatever `T` is: the key never holds a `T`.
    value_type: PhantomData<fn() -> T>,
}

impl<T> StateKey<T> {
    /// Wraps a key that `state_key!` has already validated. Not part of the public API: a
    /// hand-built key would skip the compile-time checks.
    #[doc(hidden)]
    pub const fn __from_checked_literal(key: &'static str) -> Self {
        Self {
            key,
            value_type: PhantomData,
        }
    }

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

impl<T> Clone for StateKey<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for StateKey<T> {}

impl<T> PartialEq for StateKey<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<T> Eq for StateKey<T> {}

impl<T> fmt::Debug for StateKey<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("StateKey")
            .field("key", &self.key)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T> AsRef<str> for StateKey<T> {
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
