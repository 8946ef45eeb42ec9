//! Turning stored records into typed values when a turn starts: the registry of every state type
//! in the program, version checks, migrations, and the reports for what cannot be read.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::records::RecordScope;
use super::{ErasedState, MiddlewareState, MismatchReason, Persistence, StateScope};

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

/// Decodes a stored record (version, JSON) into a value, saying whether it was migrated.
pub(crate) type Decode = fn(u32, Value) -> Result<(Arc<dyn ErasedState>, bool), MismatchReason>;

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
