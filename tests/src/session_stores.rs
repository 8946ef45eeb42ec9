//! Checks every session store in these tests must pass beyond the conformance suite, written
//! once and run against the in-memory, SQLite and PostgreSQL stores.

use adk::ids::ThreadId;
use adk::state::{
    MiddlewareStateRecord, MiddlewareStateWrite, RecordScope, SessionKey, SessionStore, TurnCommit,
};

/// Copying a thread's middleware-state records onto the same thread keeps them: the copy
/// replaces the target's records with the source's, which here are the same ones.
///
/// # Panics
///
/// When the store fails, or the thread's records are not all still there afterwards.
pub async fn copying_a_thread_onto_itself_keeps_its_records(store: &impl SessionStore) {
    let key = SessionKey::new("self-copy", "ada", "s-1");
    let thread = ThreadId::from("draft");
    let record = MiddlewareStateRecord {
        scope: RecordScope::Thread(thread.clone()),
        key: "planner".to_owned(),
        version: 1,
        json: serde_json::json!({"steps": 3}),
    };
    let commit = TurnCommit {
        thread: thread.clone(),
        middleware: vec![MiddlewareStateWrite::Put(record.clone())],
        ..TurnCommit::default()
    };
    store.commit_turn(&key, commit).await.expect("commits");
    store
        .copy_thread_records(&key, &thread, &thread)
        .await
        .expect("copies");
    let loaded = store.load_turn(&key, &thread).await.expect("loads");
    assert_eq!(loaded.middleware, [record]);
}
