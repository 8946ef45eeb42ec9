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

/// A `migrate = path` function: `fn(from_version: u32, json: serde_json::Value) -> Result<State,
/// E>` with `E` convertible into [`BoxError`]. The derive passes the path through [`migrate`],
/// spanned at the path, so a function of another signature is reported there in these words.
#[diagnostic::on_unimplemented(
    message = "this `migrate` function does not have the signature a migration of `{State}` needs",
    label = "expected `fn(from_version: u32, json: serde_json::Value) -> Result<{State}, E>`",
    note = "write it as `fn upgrade(from_version: u32, json: serde_json::Value) -> Result<Self, String>` in an `impl {State}` block and name it `migrate = {State}::upgrade`; the error may be any type that converts into `Box<dyn std::error::Error + Send + Sync>`"
)]
pub trait Migration<State, Marker> {
    /// Runs the migration, its error boxed.
    fn run(&self, from_version: u32, json: Json) -> Result<State, BoxError>;
}

/// The markers of [`Migration`]'s two impls: with two candidates, rustc reports a function of
/// the wrong signature in the trait's words instead of explaining the `Fn` bound of one impl.
pub mod marker {
    /// The impl for every migration function.
    pub enum Function {}

    /// The impl no type meets.
    pub enum Unreachable {}

    /// Implemented by no type.
    pub trait Never {}
}

#[diagnostic::do_not_recommend]
impl<State, E, F> Migration<State, marker::Function> for F
where
    F: Fn(u32, Json) -> Result<State, E>,
    E: Into<BoxError>,
{
    fn run(&self, from_version: u32, json: Json) -> Result<State, BoxError> {
        self(from_version, json).map_err(Into::into)
    }
}

#[diagnostic::do_not_recommend]
impl<State, F: marker::Never> Migration<State, marker::Unreachable> for F {
    fn run(&self, _: u32, _: Json) -> Result<State, BoxError> {
        Err("no type implements `marker::Never`".into())
    }
}

/// Runs `function`, a `migrate = path` function, from `from_version`. `State` is passed as a
/// value so it is known before `function` is checked (the error names it).
pub fn migrate<State, Marker, F: Migration<State, Marker>>(
    _state: std::marker::PhantomData<State>,
    function: F,
    from_version: u32,
    json: Json,
) -> Result<State, BoxError> {
    function.run(from_version, json)
}
