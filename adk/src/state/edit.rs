//! [`StateEdit`]: reading and writing app and user state outside any turn (an onboarding form
//! setting a preference, an admin page changing an app setting).

use super::store::{LoadedTurn, StateCommit};
use super::{SessionStore, SessionStoreError, State};
use crate::ids::{AppName, ThreadId, UserId};

/// An edit of one user's `user:` state and the app's `app:` state, made outside any turn and
/// committed atomically under a turn's stale rule.
///
/// [`load`](Self::load) reads the app's and the user's state; [`state`](Self::state) and
/// [`state_mut`](Self::state_mut) read and write it exactly as a turn's `ctx.state()` does
/// (typed keys, `set_value`, `delete`, ...); [`commit`](Self::commit) writes the changes in one
/// [`SessionStore::commit_state`]: all or nothing, refused with [`SessionStoreError::Stale`]
/// when a turn or another edit changed a written key since the load (load again and retry).
/// Turns see the new values from their next load; no session is created or touched.
///
/// Only `app:` and `user:` keys can be written: a session key names no session here and is
/// refused at commit ([`StateEditError::SessionKey`]); `temp:` keys are dropped, as a turn drops
/// them.
///
/// ```rust,standalone_crate
/// use adk::state::{InMemorySessionStore, StateEdit};
///
/// const THEME: adk::state::StateKey<String> = adk::state_key!("user:theme" => String);
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemorySessionStore::new();
/// let mut edit = StateEdit::load(&store, "shop", "ada").await?;
/// assert_eq!(edit.state().get(THEME)?, None);
/// edit.state_mut().set(THEME, "dark".to_owned())?;
/// edit.commit(&store).await?;
///
/// let edit = StateEdit::load(&store, "shop", "ada").await?;
/// assert_eq!(edit.state().get(THEME)?.as_deref(), Some("dark"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
#[must_use = "an edit writes nothing until `.commit(..)`"]
pub struct StateEdit {
    app: AppName,
    user: UserId,
    state: State,
}

/// Why [`StateEdit::commit`] refused; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateEditError {
    /// Session keys (no `app:` or `user:` prefix) were written: outside a turn there is no
    /// session to write them to. Write them in a turn, or with the turn's state delta
    /// (`RawTurnContext::state_delta`).
    #[error(
        "{keys:?} name no session outside a turn: write `app:` or `user:` keys here, session \
         keys in a turn (or with `RawTurnContext::state_delta`)"
    )]
    SessionKey {
        /// The session keys written.
        keys: Vec<String>,
    },
    /// Typed middleware state was written: it lives in sessions and threads, and is written by
    /// turns only.
    #[error("middleware state is written by turns only, not by a `StateEdit`")]
    MiddlewareState,
    /// The store refused the commit ([`SessionStoreError::Stale`] names the keys another writer
    /// changed since the load).
    #[error(transparent)]
    Store(#[from] SessionStoreError),
}

impl StateEditError {
    /// Whether this is the stale-state refusal: load again and retry.
    #[must_use]
    pub fn is_stale(&self) -> bool {
        matches!(self, Self::Store(error) if error.is_stale())
    }
}

impl StateEdit {
    /// Reads the app's state and the user's state in it.
    ///
    /// # Errors
    ///
    /// The store's [`SessionStoreError`].
    pub async fn load(
        store: &impl SessionStore,
        app: impl Into<AppName>,
        user: impl Into<UserId>,
    ) -> Result<Self, SessionStoreError> {
        let (app, user) = (app.into(), user.into());
        let app_state = store.app_state(&app).await?;
        let user_state = store.user_state(&app, &user).await?;
        let state = State::from_loaded(LoadedTurn {
            app: app_state.into(),
            user: user_state,
            ..LoadedTurn::default()
        });
        Ok(Self { app, user, state })
    }

    /// The app and user state as loaded, with this edit's writes: `user:` and `app:` keys with
    /// their prefixes.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The state, to write; see [`StateEdit`] for which keys may be written.
    pub fn state_mut(&mut self) -> &mut State {
        &mut self.state
    }

    /// The app the edit is of.
    pub fn app(&self) -> &AppName {
        &self.app
    }

    /// The user the edit is of.
    pub fn user(&self) -> &UserId {
        &self.user
    }

    /// Writes the edit's changes in one atomic [`SessionStore::commit_state`]. An edit that
    /// changed nothing writes nothing.
    ///
    /// # Errors
    ///
    /// [`StateEditError`]; nothing was written.
    pub async fn commit(self, store: &impl SessionStore) -> Result<(), StateEditError> {
        if self.state.middleware_states().has_changes() {
            return Err(StateEditError::MiddlewareState);
        }
        let turn = self.state.to_commit(&ThreadId::default());
        if !turn.session.is_empty() {
            return Err(StateEditError::SessionKey {
                keys: turn.session.into_iter().map(|write| write.name).collect(),
            });
        }
        if !turn.middleware.is_empty() {
            return Err(StateEditError::MiddlewareState);
        }
        let commit = StateCommit {
            app: turn.app,
            user: turn.user,
        };
        if commit.is_empty() {
            return Ok(());
        }
        store.commit_state(&self.app, &self.user, commit).await?;
        Ok(())
    }
}
