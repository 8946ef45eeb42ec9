//! The identity model as a specification: every turn runs as an app, a user, a session and a
//! thread; the caller may name each but the session, the rest take documented defaults, and
//! storage callbacks see exactly what the caller named.

use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{DispatchContext, InvalidTurnContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::ids::{AppName, SessionId, ThreadId, UserId};
use adk::pipeline::BoxError;
use adk::primitives::Message;
use adk::storage::{StorageContext, StorageError};

type Seen = Arc<Mutex<Vec<(String, String, String, String)>>>;

adk::storage_adapter! {
    /// Remembers the ids each `fetch_messages` call was made with.
    #[derive(Clone, Default)]
    struct IdRecorder {
        seen: Seen,
    }

    impl {
        fetch_messages: self.fetch_messages,
        ..noop
    }
}

impl IdRecorder {
    async fn fetch_messages(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        self.seen
            .lock()
            .map_err(|_| StorageError::backend("lock poisoned"))?
            .push((
                ctx.app_name().to_string(),
                ctx.user_id().to_string(),
                ctx.session_id().to_string(),
                ctx.thread_id().to_string(),
            ));
        Ok(Vec::new())
    }
}

fn runner(storage: IdRecorder) -> TurnRunner {
    TurnRunner::builder()
        .storage(storage)
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.fetch_messages().await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

fn seen(storage: &IdRecorder) -> Vec<(String, String, String, String)> {
    storage.seen.lock().expect("not poisoned").clone()
}

#[tokio::test]
async fn a_turn_without_names_runs_as_app_default_user_default_thread_main() {
    let storage = IdRecorder::default();
    let _ = runner(storage.clone())
        .run(RawTurnContext::new("session-1", "You are a test."))
        .await
        .expect("valid input");
    assert_eq!(
        seen(&storage),
        [(
            "default".to_owned(),
            "default".to_owned(),
            "session-1".to_owned(),
            "main".to_owned()
        )]
    );
}

#[tokio::test]
async fn storage_callbacks_see_the_app_user_and_thread_the_caller_named() {
    let storage = IdRecorder::default();
    let _ = runner(storage.clone())
        .run(
            RawTurnContext::new(SessionId::from("session-2"), "You are a test.")
                .app_name(AppName::from("shop"))
                .user_id("ada")
                .thread_id(ThreadId::from("draft-2")),
        )
        .await
        .expect("valid input");
    assert_eq!(
        seen(&storage),
        [(
            "shop".to_owned(),
            "ada".to_owned(),
            "session-2".to_owned(),
            "draft-2".to_owned()
        )]
    );
}

#[tokio::test]
async fn an_empty_app_user_or_thread_id_is_refused_before_the_turn_runs() {
    let storage = IdRecorder::default();
    let runner = runner(storage.clone());
    for (raw, which) in [
        (RawTurnContext::new("s", "p").app_name(""), "app name"),
        (
            RawTurnContext::new("s", "p").user_id(UserId::from("")),
            "user id",
        ),
        (RawTurnContext::new("s", "p").thread_id(""), "thread id"),
    ] {
        let refused = runner.run(raw).await.expect_err("an empty id is refused");
        assert!(
            matches!(refused, InvalidTurnContext::EmptyId { which: refused_which } if refused_which == which),
            "{refused:?}"
        );
        assert_eq!(refused.code().as_str(), "E_INVALID_TURN_CONTEXT");
    }
    assert!(seen(&storage).is_empty(), "nothing ran");
}

#[test]
fn conversation_ids_from_the_old_path_are_session_ids() {
    let old: adk::storage::ConversationId = "c-9".into();
    let new: SessionId = old.clone();
    assert_eq!(new, old);
    let turn: adk::storage::TurnId = adk::ids::TurnId::from("t-1");
    assert_eq!(turn.as_str(), "t-1");
}
