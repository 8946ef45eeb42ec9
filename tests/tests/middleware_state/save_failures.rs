//! Save failures: a state that cannot be encoded, a commit the store refuses.

use super::*;

fn error_codes(recorder: &EventRecorder) -> Vec<ErrorCode> {
    recorder
        .errors()
        .iter()
        .map(adk::events::TurnError::code)
        .collect()
}

pub(super) async fn a_state_that_cannot_be_saved_is_reported_and_the_answer_still_stands(
    store: SharedSessionStore,
) {
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, |ctx| {
        ctx.state_mut().set_value("visits", json!(1))?;
        ctx.update_middleware_state::<Unencodable>(|state| {
            state.by_pair.insert((1, 2), 3);
        })?;
        Ok(())
    });
    let outcome = run(&runner, "main").await;
    assert_eq!(
        error_codes(&recorder),
        [ErrorCode::MiddlewareStateSaveFailed]
    );
    assert_eq!(
        outcome.error().map(adk::events::TurnError::code),
        Some(ErrorCode::MiddlewareStateSaveFailed)
    );
    assert!(outcome.reply().is_some(), "the answer still stands");
    let loaded = store
        .load_turn(&session(), &"main".into())
        .await
        .expect("loads");
    assert!(
        loaded.session.is_empty() && loaded.middleware.is_empty(),
        "nothing half-saved"
    );
}

/// A store whose commits fail.
struct RefusingStore(SharedSessionStore);

impl SessionStore for RefusingStore {
    async fn create_session(
        &self,
        key: &SessionKey,
        state: Map<String, Value>,
    ) -> Result<Session, SessionStoreError> {
        self.0.create_session(key, state).await
    }
    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, SessionStoreError> {
        self.0.get_session(key).await
    }
    async fn list_sessions(
        &self,
        app: &adk::ids::AppName,
        user: Option<&adk::ids::UserId>,
    ) -> Result<Vec<Session>, SessionStoreError> {
        self.0.list_sessions(app, user).await
    }
    async fn delete_session(&self, key: &SessionKey) -> Result<(), SessionStoreError> {
        self.0.delete_session(key).await
    }
    async fn app_state(
        &self,
        app: &adk::ids::AppName,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        self.0.app_state(app).await
    }
    async fn user_state(
        &self,
        app: &adk::ids::AppName,
        user: &adk::ids::UserId,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        self.0.user_state(app, user).await
    }
    async fn load_turn(
        &self,
        key: &SessionKey,
        thread: &adk::ids::ThreadId,
    ) -> Result<LoadedTurn, SessionStoreError> {
        self.0.load_turn(key, thread).await
    }
    async fn commit_turn(
        &self,
        _key: &SessionKey,
        _commit: TurnCommit,
    ) -> Result<(), SessionStoreError> {
        Err(SessionStoreError::backend(std::io::Error::other(
            "disk full",
        )))
    }
    async fn copy_thread_records(
        &self,
        key: &SessionKey,
        from: &adk::ids::ThreadId,
        to: &adk::ids::ThreadId,
    ) -> Result<(), SessionStoreError> {
        self.0.copy_thread_records(key, from, to).await
    }
}

pub(super) async fn a_failed_commit_is_reported_and_the_answer_still_stands(
    store: SharedSessionStore,
) {
    let recorder = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(RefusingStore(store.clone()))
        .observe(recorder.listener())
        .turn_input(step(advance))
        .executor(answering(nothing))
        .build();
    let outcome = run(&runner, "main").await;
    assert_eq!(error_codes(&recorder), [ErrorCode::StateCommitFailed]);
    assert!(matches!(outcome.status, TurnStatus::Failed(_)));
    assert!(outcome.reply().is_some(), "the answer still stands");
    assert!(records(&store, "main").await.is_empty());
}
