//! A panic in a storage or session-store callback the runner calls itself (storing the user
//! message, `load_turn`, `commit_turn`) is contained like an executor's panic: `run` returns the
//! turn's outcome, failed with the callback's usual error code and a `Panicked` source naming
//! the panic message. It never escapes `run`.

use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::events::ErrorCode;
use adk::ids::{AppName, ThreadId, UserId};
use adk::pipeline::{BoxError, Panicked};
use adk::prelude::*;
use adk::state::{
    InMemorySessionStore, LoadedTurn, Session, SessionKey, SessionStore, SessionStoreError,
    TurnCommit,
};
use adk::storage::NoopStorage;
use serde_json::{Map, Value};

fn ask(text: &str) -> RawTurnContext {
    RawTurnContext::new("conversation-1", "You are a test.").user_message(text)
}

fn acking() -> impl adk::dispatch::Executor {
    executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.state_mut().set_value("seen", serde_json::json!(true))?;
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

adk::storage_adapter! {
    #[derive(Clone, Default)]
    struct PanickingStorage;
    impl {
        store_message: |_ctx, _message| async { panic!("the disk driver crashed") },
        ..noop
    }
}

/// An in-memory store whose `load_turn` or `commit_turn` panics.
#[derive(Clone, Default)]
struct PanickingStore {
    inner: InMemorySessionStore,
    panic_in_load: bool,
}

impl SessionStore for PanickingStore {
    async fn create_session(
        &self,
        key: &SessionKey,
        state: Map<String, Value>,
    ) -> Result<Session, SessionStoreError> {
        self.inner.create_session(key, state).await
    }
    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, SessionStoreError> {
        self.inner.get_session(key).await
    }
    async fn list_sessions(
        &self,
        app: &AppName,
        user: Option<&UserId>,
    ) -> Result<Vec<Session>, SessionStoreError> {
        self.inner.list_sessions(app, user).await
    }
    async fn delete_session(&self, key: &SessionKey) -> Result<(), SessionStoreError> {
        self.inner.delete_session(key).await
    }
    async fn app_state(&self, app: &AppName) -> Result<Map<String, Value>, SessionStoreError> {
        self.inner.app_state(app).await
    }
    async fn user_state(
        &self,
        app: &AppName,
        user: &UserId,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        self.inner.user_state(app, user).await
    }
    async fn load_turn(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
    ) -> Result<LoadedTurn, SessionStoreError> {
        assert!(!self.panic_in_load, "the state database went away");
        self.inner.load_turn(key, thread).await
    }
    async fn commit_turn(
        &self,
        _key: &SessionKey,
        _commit: TurnCommit,
    ) -> Result<(), SessionStoreError> {
        panic!("the commit log is corrupt")
    }
    async fn copy_thread_records(
        &self,
        key: &SessionKey,
        from: &ThreadId,
        to: &ThreadId,
    ) -> Result<(), SessionStoreError> {
        self.inner.copy_thread_records(key, from, to).await
    }
}

fn panic_message(error: &adk::events::TurnError) -> Option<String> {
    let mut source = std::error::Error::source(error);
    while let Some(error) = source {
        if let Some(panicked) = error.downcast_ref::<Panicked>() {
            return Some(panicked.message.clone());
        }
        source = error.source();
    }
    None
}

#[tokio::test]
async fn a_panic_storing_the_user_message_fails_the_turn_instead_of_escaping_run() {
    let runner = TurnRunner::builder()
        .storage(PanickingStorage)
        .executor(acking())
        .build();
    let outcome = runner.run(ask("Hello!")).await.expect("valid input");
    assert_eq!(outcome.dispatch, None, "the dispatch never ran");
    let error = outcome.into_result().expect_err("the turn failed");
    assert_eq!(error.code(), ErrorCode::StorageFailed);
    assert_eq!(
        panic_message(&error).as_deref(),
        Some("the disk driver crashed"),
        "{error:#}"
    );
}

#[tokio::test]
async fn a_panic_in_load_turn_fails_the_turn_instead_of_escaping_run() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(PanickingStore {
            panic_in_load: true,
            ..PanickingStore::default()
        })
        .executor(acking())
        .build();
    let outcome = runner.run(ask("Hello!")).await.expect("valid input");
    assert_eq!(outcome.dispatch, None, "the dispatch never ran");
    let error = outcome.into_result().expect_err("the turn failed");
    assert_eq!(error.code(), ErrorCode::StateLoadFailed);
    assert_eq!(
        panic_message(&error).as_deref(),
        Some("the state database went away"),
        "{error:#}"
    );
}

#[tokio::test]
async fn a_panic_in_commit_turn_fails_the_turn_instead_of_escaping_run() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(PanickingStore::default())
        .executor(acking())
        .build();
    let outcome = runner.run(ask("Hello!")).await.expect("valid input");
    let error = outcome.into_result().expect_err("the turn failed");
    assert_eq!(error.code(), ErrorCode::StateCommitFailed);
    assert_eq!(
        panic_message(&error).as_deref(),
        Some("the commit log is corrupt"),
        "{error:#}"
    );
}
