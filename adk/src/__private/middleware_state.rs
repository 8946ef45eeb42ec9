//! Support for the code `#[derive(MiddlewareState)]` generates. Not a public API: it may change
//! in any release.
//!
//! The traits here carry the messages a user reads when their type lacks what the derive needs;
//! the derive spans each use at the user's tokens.

pub use crate::error::BoxError;
pub use crate::middleware_state::{Codec, Registration};
pub use serde_json::Value as Json;

use crate::middleware_state::MiddlewareState;

/// Serde data, as persistent middleware state must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is persistent middleware state, so it must be serde data",
    label = "`persistent` stores `{Self}` as JSON between turns",
    note = "derive `serde::Serialize` and `serde::Deserialize` for `{Self}`, or remove `persistent` to keep it for one turn only"
)]
pub trait Persistable: serde::Serialize + serde::de::DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + serde::de::DeserializeOwned> Persistable for T {}

/// The codec of a persistent state type.
pub const fn codec<T: Persistable>() -> Codec<T> {
    Codec {
        encode: |state| serde_json::to_value(state),
        decode: serde_json::from_value,
    }
}

/// `Default`, in the derive's words.
#[diagnostic::on_unimplemented(
    message = "middleware state `{Self}` has no `Default`",
    label = "the first `update_middleware_state` of a turn starts from `{Self}::default()`",
    note = "derive or implement `Default` for `{Self}`: it is the value a state has before anything was written"
)]
pub trait StateDefault {
    /// `Self::default()`.
    fn make() -> Self;
}

#[diagnostic::do_not_recommend]
impl<T: Default> StateDefault for T {
    fn make() -> Self {
        T::default()
    }
}

/// `Clone`, in the derive's words.
#[diagnostic::on_unimplemented(
    message = "middleware state `{Self}` is not `Clone`",
    label = "a dispatch and a failed `try_update_middleware_state` work on a copy of `{Self}`",
    note = "derive or implement `Clone` for `{Self}`"
)]
pub trait StateClone {
    /// `self.clone()`.
    fn duplicate(&self) -> Self;
}

// Bounded by `MiddlewareState` too, which no reference implements: otherwise rustc, seeing that
// `&T: Clone`, suggests borrowing the struct's name instead of deriving `Clone`.
#[diagnostic::do_not_recommend]
impl<T: Clone + MiddlewareState> StateClone for T {
    fn duplicate(&self) -> Self {
        self.clone()
    }
}

/// `T::clone`, through [`StateClone`] so a missing `Clone` is reported in its words (a function
/// returned, not called on `&T`, so rustc does not suggest cloning the reference instead).
pub fn duplicate<T: StateClone>() -> fn(&T) -> T {
    T::duplicate
}

/// A migration's result with its error boxed.
pub fn migrated<T, E: Into<BoxError>>(result: Result<T, E>) -> Result<T, BoxError> {
    result.map_err(Into::into)
}
