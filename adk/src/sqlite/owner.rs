//! [`Owner`]: whose records and bytes a call reads or writes.

use crate::storage::StorageContext;

/// The partition a call belongs to, taken from its [`StorageContext`]. Every lookup and every
/// uniqueness rule of the battery includes it, so one conversation never reads, replaces or
/// collides with another's records or bytes.
#[derive(Clone, Debug)]
pub(super) struct Owner {
    pub(super) conversation_id: String,
}

impl Owner {
    pub(super) fn of(ctx: &StorageContext) -> Self {
        Self {
            conversation_id: ctx.conversation_id().as_str().to_owned(),
        }
    }
}
