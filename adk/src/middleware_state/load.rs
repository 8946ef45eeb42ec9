//! Turning stored records into typed values when a turn starts: the registry of every state type
//! in the program, version checks, migrations, and the reports for what cannot be read.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::{ErasedState, MiddlewareState, MismatchReason, Persistence, StateScope};
use crate::__private::middleware_state::Registration;
use crate::state::RecordScope;

/// Decodes a record of `T` written with `stored_version`. The `bool` says whether it was
/// migrated (so the commit rewrites it at the current version).
pub(crate) fn decode_record<T: MiddlewareState>(
    stored_version: u32,
    json: Value,
) -> Result<(Arc<dyn ErasedState>, bool), MismatchReason> {
    let mut shape_error = None;
    if stored_version == T::VERSION
        && let Some(codec) = T::__CODEC
    {
        match (codec.decode)(json.clone()) {
            Ok(state) => return Ok((Arc::new(state), false)),
            Err(error) => shape_error = Some(error.to_string()),
        }
    }
    match T::__migrate(stored_version, json) {
        Some(Ok(state)) => Ok((Arc::new(state), true)),
        Some(Err(error)) => Err(MismatchReason::MigrationFailed(error.to_string())),
        None => Err(match shape_error {
            Some(error) => MismatchReason::ShapeChanged(error),
            None => MismatchReason::VersionChanged,
        }),
    }
}

/// Every state type of the program by key, built once, when a turn first loads a record.
pub(super) fn registered(key: &str) -> Option<&'static Registration> {
    static BY_KEY: OnceLock<HashMap<&'static str, &'static Registration>> = OnceLock::new();
    BY_KEY
        .get_or_init(|| {
            let mut by_key = HashMap::new();
            for registration in inventory::iter::<Registration> {
                // Two types with one key are reported by `check_declared_keys`; the first wins.
                by_key.entry(registration.key).or_insert(registration);
            }
            by_key
        })
        .get(key)
        .copied()
}

/// Whether a record stored in `scope` belongs to a type persisted as `persistence`.
pub(super) fn scope_matches(persistence: Persistence, scope: &RecordScope) -> bool {
    matches!(
        (persistence, scope),
        (
            Persistence::Persistent(StateScope::Session),
            RecordScope::Session
        ) | (
            Persistence::Persistent(StateScope::Thread),
            RecordScope::Thread(_)
        )
    )
}
