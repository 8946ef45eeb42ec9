//! Typed keys: a dot-path checked at compile time, paired with the Rust type stored under it.

use std::fmt;
use std::marker::PhantomData;

/// A stash path checked at compile time, tied to the type of the value stored under it.
///
/// Build one with [`stash_key!`](crate::stash_key) or [`stash_keys!`](crate::stash_keys); the
/// macro rejects malformed paths before your crate compiles. Reading with a key yields `T`, and
/// writing with it accepts only `T`, so producer and consumer cannot drift apart silently.
///
/// ```rust,standalone_crate
/// use adk::StashKey;
///
/// const BUDGET: StashKey<u64> = adk::stash_key!("my-org.budgets.input-tokens" => u64);
/// assert_eq!(BUDGET.path(), "my-org.budgets.input-tokens");
/// ```
pub struct StashKey<T> {
    path: &'static str,
    // `fn() -> T` keeps the key `Send + Sync + Copy` whatever `T` is: the key never holds a `T`.
    value_type: PhantomData<fn() -> T>,
}

impl<T> StashKey<T> {
    /// Wraps a path that `stash_key!` has already validated. Not part of the public API: a
    /// hand-built key would skip the compile-time checks.
    #[doc(hidden)]
    pub const fn __from_checked_literal(path: &'static str) -> Self {
        Self {
            path,
            value_type: PhantomData,
        }
    }

    /// The dot-path this key addresses, for example `"my-org.count"`.
    pub const fn path(&self) -> &'static str {
        self.path
    }
}

impl<T> Clone for StashKey<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for StashKey<T> {}

impl<T> PartialEq for StashKey<T> {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl<T> Eq for StashKey<T> {}

impl<T> fmt::Debug for StashKey<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("StashKey")
            .field("path", &self.path)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T> fmt::Display for StashKey<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.path)
    }
}

/// Lets a key address the untyped operations (`has`, `get_ref`, `delete`) like a string path.
impl<T> AsRef<str> for StashKey<T> {
    fn as_ref(&self) -> &str {
        self.path
    }
}
