//! Session state: what a turn remembers for the next one, with Google ADK's four scopes.
//!
//! This module owns the state a turn reads and writes through `ctx.state()` ([`State`]), the
//! scopes told apart by key prefix ([`Scope`]: none, `app:`, `user:`, `temp:`), typed keys
//! checked at compile time ([`StateKey`], built by [`state_key!`](crate::state_key)),
//! instruction templating ([`template`]), and the contract of where state lives between turns
//! ([`SessionStore`], with [`InMemorySessionStore`] here, `SqliteSessionStore` in
//! `adk::sqlite` and `PostgresSessionStore` in `adk::postgres`) plus a [`conformance`] suite for
//! any store.
//!
//! It sits between storage and the contexts: it knows ids, not pipelines. The guide is
//! `docs/state.md`, included below.
#![doc = ""]
#![doc = include_str!("../../docs/state.md")]

pub mod conformance;
pub mod contention;
mod edit;
mod error;
mod event;
mod fork;
mod key;
mod lineage;
mod memory;
mod scope;
mod store;
pub mod template;
mod view;

pub use crate::middleware_state::{MiddlewareStateRecord, MiddlewareStateWrite, RecordScope};
pub use edit::{StateEdit, StateEditError};
pub use error::{BackendError, SessionStoreError, StateError};
pub use event::{EventContent, EventPart, GetSessionConfig, SessionEvent};
// Only the SQLite store writes Google ADK's float timestamps as columns of their own.
#[cfg(feature = "sqlite")]
pub(crate) use event::{epoch_seconds, from_epoch_seconds};
// The PostgreSQL store binds an event's JSON without building a `Value` first.
#[cfg(feature = "postgres")]
pub(crate) use event::AdkEventJson;
pub use fork::{Fork, ForkError, Forked};
pub use key::{__assert_state_value, StateKey, StateValue};
pub use lineage::{ForkPoint, ForkRecord, ThreadLineage};
pub use memory::InMemorySessionStore;
pub use scope::Scope;
pub use store::{
    DynSessionStore, LoadedTurn, Session, SessionKey, SessionStore, SharedSessionStore,
    StateCommit, StateWrite, TurnCommit, merge_scopes, split_by_scope,
};
pub use view::{State, StateChange};
