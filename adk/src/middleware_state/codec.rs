//! How a persistent state type turns into JSON and back: the codec `#[derive(MiddlewareState)]`
//! puts in `MiddlewareState::__CODEC` (built by `adk::__private::middleware_state::codec`).

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
