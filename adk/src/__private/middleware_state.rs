//! Support for the code `#[derive(MiddlewareState)]` generates. Not a public API: it may change
//! in any release.
//!
//! The traits here carry the messages a user reads when their type lacks what the derive needs;
//! the derive spans each use at the user's tokens.

use std::any::TypeId;
use std::sync::Arc;

pub use crate::pipeline::BoxError;
pub use serde_json::Value as Json;

use crate::middleware_state::{ErasedState, MiddlewareState, Persistence, decode_record};

/// How a persistent state turns into JSON and back.
pub struct Codec<T> {
    pub(crate) encode: fn(&T) -> Result<Json, serde_json::Error>,
    pub(crate) decode: fn(Json) -> Result<T, serde_json::Error>,
}

impl<T> Clone for Codec<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Codec<T> {}

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

/// Decodes a stored record (version, JSON) into a value, saying whether it was migrated.
pub(crate) type Decode =
    fn(u32, Json) -> Result<(Arc<dyn ErasedState>, bool), crate::middleware_state::MismatchReason>;

/// What the program knows about one middleware state type, collected program-wide so a stored
/// record can be decoded (or reported as unknown) when a turn loads it.
pub struct Registration {
    pub(crate) key: &'static str,
    pub(crate) type_name: fn() -> &'static str,
    pub(crate) type_id: fn() -> TypeId,
    pub(crate) persistence: Persistence,
    pub(crate) version: u32,
    pub(crate) default_on_mismatch: bool,
    pub(crate) decode: Decode,
}

impl Registration {
    /// The registration of `T`.
    pub const fn of<T: MiddlewareState>() -> Self {
        Self {
            key: T::KEY,
            type_name: std::any::type_name::<T>,
            type_id: TypeId::of::<T>,
            persistence: T::PERSISTENCE,
            version: T::VERSION,
            default_on_mismatch: T::DEFAULT_ON_MISMATCH,
            decode: decode_record::<T>,
        }
    }
}

inventory::collect!(Registration);
