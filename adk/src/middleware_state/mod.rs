//! Typed middleware state: private records a middleware owns (counters, remembered choices,
//! plan progress, circuit breakers), declared with `#[derive(MiddlewareState)]`.
//!
//! This module owns the [`MiddlewareState`] trait the derive implements, the per-turn container
//! [`MiddlewareStates`] behind `ctx.middleware_state::<T>()` and
//! `ctx.update_middleware_state::<T>(..)`, what a turn reports when a stored record cannot be
//! read ([`Mismatch`], [`UnknownRecord`]), and the program-wide check that no two types share a
//! key ([`check_declared_keys`]).
//!
//! Transient state (the default) starts from nothing every turn. Persistent state is decoded
//! from the records the [session store](crate::state::SessionStore) loads with the turn's
//! session state, and written back by scope in the same atomic commit. A turn that touches no
//! middleware state pays for an empty map and nothing else.
//!
//! ```rust,standalone_crate
//! use adk::middleware_state::{MiddlewareState, MiddlewareStates, Persistence};
//!
//! #[derive(MiddlewareState, Default, Clone)]
//! struct Breaker {
//!     failures: u32,
//! }
//!
//! let mut states = MiddlewareStates::default();
//! assert!(states.get::<Breaker>().is_none()); // unset until written
//! states.update::<Breaker>(|breaker| breaker.failures += 1)?;
//! assert_eq!(states.get::<Breaker>().map(|breaker| breaker.failures), Some(1));
//! assert_eq!(Breaker::PERSISTENCE, Persistence::Transient);
//! # Ok::<(), adk::middleware_state::MiddlewareStateError>(())
//! ```
//!
//! The guide is `docs/middleware-state.md`, included below.
#![doc = ""]
#![doc = include_str!("../../docs/middleware-state.md")]

mod codec;
mod container;
mod error;
mod load;
mod records;

use crate::declarations::{self, Conflicts, DeclarationKind};
use crate::error::BoxError;

pub use adk_macros::MiddlewareState;
#[doc(hidden)]
pub use codec::Codec;
pub(crate) use container::ErasedState;
pub use container::MiddlewareStates;
pub use error::{MiddlewareStateError, Mismatch, MismatchReason, UnknownRecord};
#[doc(hidden)]
pub use load::Registration;
pub use records::{MiddlewareStateRecord, MiddlewareStateWrite, RecordScope};

/// Where a persistent state is kept between turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateScope {
    /// Shared by every thread of the session: what the user or session decided.
    Session,
    /// One copy per thread, copied when a thread is forked: what happened along this path.
    Thread,
}

/// Whether a state outlives its turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Persistence {
    /// Starts from nothing every turn and is never stored (the default).
    Transient,
    /// Loaded when a turn starts and committed with the turn's session state.
    Persistent(StateScope),
}

/// A type a middleware keeps its private state in. Implement it with
/// `#[derive(MiddlewareState)]`, which also checks the declaration at compile time; the hidden
/// items are the derive's.
///
/// Options, all optional: `#[middleware_state(persistent, scope = session | thread,
/// version = N, key = "...", migrate = path::to::fn, default_on_mismatch)]`. The defaults are
/// transient, thread scope (for persistent state), version 1, and the key
/// `module::path::TypeName`.
///
/// ```rust,standalone_crate
/// use adk::middleware_state::{MiddlewareState, Persistence, StateScope};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
/// #[middleware_state(persistent, scope = session, version = 2, key = "acme.permissions")]
/// struct Permissions {
///     always_allowed: Vec<String>,
/// }
///
/// assert_eq!(Permissions::KEY, "acme.permissions");
/// assert_eq!(Permissions::VERSION, 2);
/// assert_eq!(Permissions::PERSISTENCE, Persistence::Persistent(StateScope::Session));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not middleware state",
    label = "not declared as middleware state",
    note = "add `#[derive(MiddlewareState)]` (from `adk::middleware_state`) to `{Self}`"
)]
pub trait MiddlewareState: Send + Sync + Sized + 'static {
    /// The key the state is stored under: `key = "..."`, or the type's module path and name.
    const KEY: &'static str;
    /// The schema version (`version = N`, default 1). Bump it when a stored record of the old
    /// shape no longer reads as the new one.
    const VERSION: u32;
    /// Transient, or persistent in a scope.
    const PERSISTENCE: Persistence;
    /// Whether a stored record that cannot be read (and has no migration) is replaced by the
    /// default after being reported. Without `default_on_mismatch`, the state refuses writes
    /// for that turn, so the record is kept.
    const DEFAULT_ON_MISMATCH: bool;
    #[doc(hidden)]
    const __CODEC: Option<Codec<Self>>;
    #[doc(hidden)]
    fn __default() -> Self;
    #[doc(hidden)]
    fn __clone(&self) -> Self;
    #[doc(hidden)]
    fn __migrate(from_version: u32, json: serde_json::Value) -> Option<Result<Self, BoxError>>;
}

impl DeclarationKind {
    /// Keys of `#[derive(MiddlewareState)]` types.
    pub const MIDDLEWARE_STATE: Self = Self("middleware state key");
}

/// Checks that no two middleware state types linked into this program share a key; the error
/// names both types and where they are declared. The runner runs it when it is built (debug
/// builds), before any turn; call it from a test to check release builds too.
///
/// ```
/// assert!(adk::middleware_state::check_declared_keys().is_ok());
/// ```
///
/// # Errors
///
/// [`Conflicts`] listing every shared key.
pub fn check_declared_keys() -> Result<(), Conflicts> {
    declarations::check_distinct(DeclarationKind::MIDDLEWARE_STATE)
}

/// Panics with the conflicts when two middleware state types share a key.
///
/// # Panics
///
/// When [`check_declared_keys`] fails.
#[track_caller]
pub fn assert_declared_keys_distinct() {
    if let Err(conflicts) = check_declared_keys() {
        panic!("{conflicts}");
    }
}
