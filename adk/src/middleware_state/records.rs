//! Opaque middleware-state records: what typed middleware state persists through the same
//! session store, in the same load and commit as session state.

use serde_json::Value;

use crate::ids::ThreadId;

/// Whose a middleware-state record is: the whole session's, or one thread's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordScope {
    /// Shared by every thread of the session.
    Session,
    /// Kept per thread (forks copy these).
    Thread(ThreadId),
}

/// A persisted middleware-state record. The store treats `json` as opaque; its type, version and
/// migrations belong to typed middleware state.
#[derive(Clone, Debug, PartialEq)]
pub struct MiddlewareStateRecord {
    /// Session- or thread-scoped.
    pub scope: RecordScope,
    /// The record's key (a fully qualified type name, for typed middleware state).
    pub key: String,
    /// The schema version the record was written with.
    pub version: u32,
    /// The record.
    pub json: Value,
}

/// A change to a middleware-state record, committed with the turn.
#[derive(Clone, Debug, PartialEq)]
pub enum MiddlewareStateWrite {
    /// Insert or replace the record with the same scope and key.
    Put(MiddlewareStateRecord),
    /// Delete the record with this scope and key, if any.
    Delete {
        /// Session- or thread-scoped.
        scope: RecordScope,
        /// The record's key.
        key: String,
    },
}
