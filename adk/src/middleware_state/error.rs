//! What can go wrong with middleware state: a write refused because the stored record could not
//! be read, a state that cannot be encoded, and the load reports a turn emits as events.

use super::records::RecordScope;

/// Why a stored record did not become a value of its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MismatchReason {
    /// The record was written with another version and the type has no `migrate`.
    VersionChanged,
    /// The record has the current version but its JSON no longer reads as the type.
    ShapeChanged(String),
    /// The type's `migrate` refused the record.
    MigrationFailed(String),
}

impl std::fmt::Display for MismatchReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::VersionChanged => {
                formatter.write_str("the version changed and the type has no `migrate`")
            }
            Self::ShapeChanged(error) => {
                write!(formatter, "its JSON no longer reads as the type: {error}")
            }
            Self::MigrationFailed(error) => write!(formatter, "`migrate` refused it: {error}"),
        }
    }
}

/// A stored record its type cannot read: reported as an event when the turn starts, never
/// silently replaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The record's key.
    pub key: String,
    /// The type declared under the key.
    pub type_name: &'static str,
    /// Where the record is stored.
    pub scope: RecordScope,
    /// The version the record was written with.
    pub stored_version: u32,
    /// The type's version now.
    pub current_version: u32,
    /// What went wrong.
    pub reason: MismatchReason,
    /// Whether the state starts from its default (`default_on_mismatch`); otherwise its writes
    /// are refused for the turn and the record is kept as stored.
    pub defaulted: bool,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "the stored middleware state `{}` (version {}) cannot be read as `{}` (version {}): {}; ",
            self.key, self.stored_version, self.type_name, self.current_version, self.reason
        )?;
        if self.defaulted {
            formatter.write_str("it starts from its default this turn (`default_on_mismatch`)")
        } else {
            formatter.write_str(
                "the record is kept and the state refuses writes: add `migrate = ..` to the \
                 type, or `default_on_mismatch` to start over from the default",
            )
        }
    }
}

/// A stored record no persistent type of this program reads (its type was removed, renamed, or
/// made transient, or its scope changed). Kept in the store, reported once per runner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRecord {
    /// The record's key.
    pub key: String,
    /// Where it is stored.
    pub scope: RecordScope,
    /// The version it was written with.
    pub version: u32,
}

/// A refused middleware state operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MiddlewareStateError {
    /// The turn loaded a record of this type that it could not read; writing would replace it.
    #[error("{0}")]
    Unreadable(Box<Mismatch>),
    /// The change passed to `update` / `try_update` panicked. The state is as it was before the
    /// change; the panic was caught.
    #[error(
        "the change to middleware state `{type_name}` panicked ({message}); the state is unchanged"
    )]
    Panicked {
        /// The state's type.
        type_name: &'static str,
        /// The panic's message.
        message: String,
    },
    /// The state could not be turned into JSON for the commit.
    #[error("the middleware state `{key}` could not be encoded as JSON: {source}")]
    Encode {
        /// The state's key.
        key: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}
