//! [`Owner`]: whose records and bytes a call reads or writes.

use crate::storage::StorageContext;

/// The partition a call belongs to, taken from its [`StorageContext`]: app, user, session
/// (conversation) and thread. Every lookup and every uniqueness rule of the battery includes
/// all four, so no call reads, replaces or collides with another partition's records or bytes.
///
/// Queries bind the owner as their first four parameters, in [`COLUMNS`] order.
#[derive(Clone, Debug)]
pub(super) struct Owner {
    pub(super) app_name: String,
    pub(super) user_id: String,
    pub(super) conversation_id: String,
    pub(super) thread_id: String,
}

/// The owner's columns, in the order they are bound as `?1` to `?4`.
pub(super) const COLUMNS: &str = "app_name, user_id, conversation_id, thread_id";

/// A condition selecting the owner's rows, with the owner bound as `?1` to `?4`.
pub(super) const MATCHES: &str =
    "app_name = ?1 AND user_id = ?2 AND conversation_id = ?3 AND thread_id = ?4";

impl Owner {
    pub(super) fn of(ctx: &StorageContext) -> Self {
        Self {
            app_name: ctx.app_name().as_str().to_owned(),
            user_id: ctx.user_id().as_str().to_owned(),
            conversation_id: ctx.conversation_id().as_str().to_owned(),
            thread_id: ctx.thread_id().as_str().to_owned(),
        }
    }
}

/// Query parameters: the owner as `?1` to `?4`, then the rest in order.
macro_rules! owner_params {
    ($owner:expr $(, $rest:expr)* $(,)?) => {
        rusqlite::params![
            $owner.app_name,
            $owner.user_id,
            $owner.conversation_id,
            $owner.thread_id
            $(, $rest)*
        ]
    };
}

pub(super) use owner_params;
