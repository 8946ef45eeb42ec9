//! The probes the code `#[middleware]` generates records its body's state writes with. Not a
//! public API.
//!
//! The macro sees tokens, not types: it finds `KEY` in `ctx.state_mut().set(KEY, ..)` and `T`
//! in `ctx.update_middleware_state::<T>(..)`, and the compiler says what they are. Each probe
//! has two methods of one name, picked by autoref: the first applies when the value is a state
//! key (or a `&'static str` key) or the type a `MiddlewareState`, and records it; the second
//! applies to anything else and records nothing, so a `.set(MAX, ..)` on some other type adds
//! no error and no write.

use std::marker::PhantomData;

use crate::middleware_state::{MiddlewareState, Persistence};
use crate::pipeline::StateWrites;
use crate::state::StateKey;

/// A value passed as the key of a write (`KeyProbe(&KEY)`).
pub struct KeyProbe<'a, K>(pub &'a K);

/// Records a state key's write.
pub trait IsStateKey {
    /// Records the key.
    fn __adk_record(&self, writes: &mut StateWrites);
}

impl<T, P> IsStateKey for KeyProbe<'_, StateKey<T, P>> {
    fn __adk_record(&self, writes: &mut StateWrites) {
        writes.key(self.0.key());
    }
}

/// A value passed as the key of a string-key write (`set_value`, `set_state_value`): a state
/// key or a `&'static str` constant (`StrKeyProbe(&KEY)`). The typed writes (`set`, `merge`,
/// ...) use [`KeyProbe`], which counts only a state key: `.set(NAME, ..)` with a `&str` constant
/// is some other type's `set`.
pub struct StrKeyProbe<'a, K>(pub &'a K);

impl<T, P> IsStateKey for StrKeyProbe<'_, StateKey<T, P>> {
    fn __adk_record(&self, writes: &mut StateWrites) {
        writes.key(self.0.key());
    }
}

impl IsStateKey for StrKeyProbe<'_, &'static str> {
    fn __adk_record(&self, writes: &mut StateWrites) {
        writes.key(self.0);
    }
}

/// Records nothing: the value is no state key.
pub trait NotStateKey {
    /// Records nothing.
    fn __adk_record(&self, _writes: &mut StateWrites) {}
}

impl<K> NotStateKey for &KeyProbe<'_, K> {}

impl<K> NotStateKey for &StrKeyProbe<'_, K> {}

/// A type updated as middleware state (`StateProbe::<T>::new()`).
pub struct StateProbe<T: ?Sized>(PhantomData<fn() -> *const T>);

impl<T: ?Sized> StateProbe<T> {
    /// The probe for `T`.
    #[must_use]
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T: ?Sized> Default for StateProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Records a middleware state type's update.
pub trait IsMiddlewareState {
    /// Records the type, its key and whether it is persistent.
    fn __adk_record(&self, writes: &mut StateWrites);
}

impl<T: MiddlewareState> IsMiddlewareState for StateProbe<T> {
    fn __adk_record(&self, writes: &mut StateWrites) {
        writes.middleware_state(
            std::any::type_name::<T>(),
            T::KEY,
            matches!(T::PERSISTENCE, Persistence::Persistent(_)),
        );
    }
}

/// Records nothing: the type is no middleware state.
pub trait NotMiddlewareState {
    /// Records nothing.
    fn __adk_record(&self, _writes: &mut StateWrites) {}
}

impl<T: ?Sized> NotMiddlewareState for &StateProbe<T> {}
