//! How a persistent state type turns into JSON and back: the codec `#[derive(MiddlewareState)]`
//! puts in `MiddlewareState::__CODEC` (reached by the derive through `adk::__private`).

use serde_json::Value as Json;

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
