//! [`Scope`]: the (app, user, session, thread) key under which every row and every byte is
//! stored, taken from the call's [`StorageContext`].

use crate::storage::StorageContext;

/// Who a stored row belongs to. Every query filters on all four columns, so two apps, two
/// users, two sessions or two threads never see each other's records or bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Scope {
    pub(super) app: String,
    pub(super) user: String,
    pub(super) session: String,
    pub(super) thread: String,
}

impl Scope {
    pub(super) fn of(ctx: &StorageContext) -> Self {
        Self {
            app: ctx.app_name().as_str().to_owned(),
            user: ctx.user_id().as_str().to_owned(),
            session: ctx.session_id().as_str().to_owned(),
            thread: ctx.thread_id().as_str().to_owned(),
        }
    }
}
