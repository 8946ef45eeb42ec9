//! Bring your own storage: the contract between adk and whatever persists your agent's records.
//!
//! adk persists nothing. This module owns the contract it calls instead:
//! - [`StorageAdapter`], the 29 callbacks (seven fetches, store / mutate / delete for six
//!   primitives, two byte conduits and their two reads), plus the optional atomic
//!   `replace_tool_call_group`, the optional [`ledger`] (`record_tool_intent`,
//!   `record_tool_result`, `mutate_tool_call_with_result`) and the optional [`approvals`]
//!   (`record_approval_request`, `pending_approvals`, `answer_approval`);
//! - [`StorageContext`], the read-only facts each callback receives (app, user, conversation,
//!   thread, turn, identity, cancellation);
//! - [`FetchWindow`], the part of the history a fetch asks for, carried on the context;
//! - [`StorageError`], the error every callback returns;
//! - [`NoopStorage`], the canonical no-op adapter to delegate unpersisted primitives to;
//! - [`SharedStorage`] and [`DynStorageAdapter`], the type-erased form the runner holds;
//! - [`conformance`], a suite that checks any adapter against the contract.
//!
//! The guide, with the full callback table, is `docs/storage.md`, included below.
//!
//! ```
//! use adk::storage::{NoopStorage, SharedStorage, StorageContext};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let storage = SharedStorage::new(NoopStorage::new());
//! let ctx = StorageContext::new("conversation-1");
//! assert!(storage.fetch_messages(&ctx).await.unwrap().is_empty());
//! # });
//! ```
#![doc = ""]
#![doc = include_str!("../../docs/storage.md")]

mod adapter;
pub mod approvals;
#[doc(hidden)]
pub mod callback;
pub mod conformance;
mod context;
mod erased;
mod error;
mod held;
mod invocation;
pub mod ledger;
mod noop;
mod pending;
mod primitive;
mod window;

pub use adapter::StorageAdapter;
pub(crate) use context::LazyToken;
pub use context::{ConversationId, StorageContext, TurnId};
pub use erased::{DynStorageAdapter, SharedStorage};
pub use error::StorageError;
#[doc(hidden)]
pub use held::CommitPartner;
pub use noop::NoopStorage;
pub use primitive::Primitive;
pub use window::FetchWindow;

/// A turn's held assistant messages (see `held`), each with the context it was stored with.
#[doc(hidden)]
pub type HeldWrites = held::HeldWrites<StorageContext>;
/// One held assistant message.
#[cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(dead_code))]
pub(crate) type HeldWrite = held::HeldWrite<StorageContext>;
/// What a [`TurnCommit`](crate::state::TurnCommit) carries of its turn's held messages.
#[doc(hidden)]
pub type TurnWrites = held::TurnWrites<StorageContext>;
