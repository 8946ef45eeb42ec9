//! Thread lineage (HPD's H24, issue 32 item 6): a fork records its source thread and message,
//! its index among the forks taken at that message, its previous and next sibling, and whether
//! a thread is an original; the store keeps it, SQLite and PostgreSQL across reopening.
//!
//! Runs on the in-memory, the SQLite and the PostgreSQL session store (the last in a fresh
//! schema when `ADK_TEST_POSTGRES_URL` names a database:
//! `.ci/postgres run cargo test -p adk-integration-tests --test fork_lineage`).

use adk::ids::ThreadId;
use adk::primitives::Message;
use adk::state::{
    Fork, ForkPoint, SessionKey, SessionStore, SessionStoreError, SharedSessionStore, ThreadLineage,
};
use adk::storage::{SharedStorage, StorageContext};

fn key() -> SessionKey {
    SessionKey::new("app", "ada", "s-1")
}

fn thread(name: &str) -> ThreadId {
    ThreadId::from(name)
}

fn names(threads: &[ThreadId]) -> Vec<&str> {
    threads.iter().map(ThreadId::as_str).collect()
}

/// Storage holding thread `main` of `key()`: m-1 (user), m-2 (assistant), m-3, m-4.
async fn storage_with_main() -> SharedStorage {
    let storage = SharedStorage::new(
        adk::sqlite::SqliteStorage::in_memory()
            .await
            .expect("opens"),
    );
    let main = StorageContext::new("s-1")
        .with_app_name("app")
        .with_user_id("ada")
        .with_thread_id("main");
    for (id, user) in [("m-1", true), ("m-2", false), ("m-3", true), ("m-4", false)] {
        let message = if user {
            Message::user(id, "question")
        } else {
            Message::assistant(id, "answer")
        }
        .expect("a valid message");
        storage.store_message(&main, message).await.expect("stores");
    }
    storage
}

/// Forks `main` at m-2 into `a` and `b`, at m-4 into `c`, and `a` into `a1`.
async fn fork_the_tree(storage: &SharedStorage, store: &SharedSessionStore) {
    for (from, to, at) in [
        ("main", "a", Some("m-2")),
        ("main", "b", Some("m-2")),
        ("main", "c", None),
        ("a", "a1", None),
    ] {
        let mut fork = Fork::new(key(), from, to);
        if let Some(message) = at {
            fork = fork.at_message(message);
        }
        let forked = fork.run(storage, store).await.expect("forks");
        assert_eq!(
            forked
                .fork
                .as_ref()
                .expect("the store keeps lineage")
                .thread
                .as_str(),
            to
        );
        assert_eq!(
            forked
                .fork
                .as_ref()
                .expect("the store keeps lineage")
                .point
                .thread
                .as_str(),
            from
        );
    }
}

async fn lineage(store: &SharedSessionStore, name: &str) -> ThreadLineage {
    store
        .thread_lineage(&key(), &thread(name))
        .await
        .expect("reads")
}

fn assert_the_tree(lineages: &[ThreadLineage]) {
    let [main, a, b, c, a1] = lineages else {
        panic!("five threads");
    };
    assert!(main.is_original());
    assert_eq!((main.sibling_index, main.sibling_count), (0, 1));
    assert_eq!(
        names(&main.children),
        ["a", "b", "c"],
        "forks of main, by message, then made"
    );

    let at_m2 = ForkPoint {
        thread: thread("main"),
        message: "m-2".into(),
        message_index: 1,
    };
    assert!(!a.is_original());
    assert_eq!(a.forked_from.as_ref(), Some(&at_m2));
    assert_eq!(
        (a.sibling_index, a.sibling_count),
        (1, 3),
        "main, a and b fork at m-2"
    );
    assert_eq!(
        a.previous_sibling,
        Some(thread("main")),
        "the first fork follows the original"
    );
    assert_eq!(a.next_sibling, Some(thread("b")));
    assert_eq!(names(&a.children), ["a1"]);

    assert_eq!(b.forked_from.as_ref(), Some(&at_m2));
    assert_eq!((b.sibling_index, b.sibling_count), (2, 3));
    assert_eq!(b.previous_sibling, Some(thread("a")));
    assert_eq!(b.next_sibling, None);

    let at_m4 = c.forked_from.as_ref().expect("a fork");
    assert_eq!(
        (at_m4.message.as_str(), at_m4.message_index),
        ("m-4", 3),
        "the latest message"
    );
    assert_eq!((c.sibling_index, c.sibling_count), (1, 2));
    assert_eq!(
        (c.previous_sibling.clone(), c.next_sibling.clone()),
        (Some(thread("main")), None)
    );

    let from_a = a1.forked_from.as_ref().expect("a fork of a fork");
    assert_eq!(
        (from_a.thread.as_str(), from_a.message.as_str()),
        ("a", "m-2")
    );
    assert!(!a1.is_original());
    assert_eq!(a1.sibling_index, 1);
}

async fn every_lineage(store: &SharedSessionStore) -> Vec<ThreadLineage> {
    let mut all = Vec::new();
    for name in ["main", "a", "b", "c", "a1"] {
        all.push(lineage(store, name).await);
    }
    all
}

async fn a_fork_records_its_source_siblings_and_original(store: SharedSessionStore) {
    let storage = storage_with_main().await;
    fork_the_tree(&storage, &store).await;
    assert_the_tree(&every_lineage(&store).await);
}

async fn deleting_the_session_deletes_its_lineage(store: SharedSessionStore) {
    let storage = storage_with_main().await;
    fork_the_tree(&storage, &store).await;
    store.delete_session(&key()).await.expect("deletes");
    assert!(store.forks(&key()).await.expect("reads").is_empty());
    assert!(lineage(&store, "a").await.is_original());
}

async fn concurrent_forks_at_one_message_get_distinct_sibling_indexes(store: SharedSessionStore) {
    let point = ForkPoint {
        thread: thread("main"),
        message: "m-2".into(),
        message_index: 1,
    };
    let tasks: Vec<_> = (0..8)
        .map(|n| {
            let (store, point) = (store.clone(), point.clone());
            tokio::spawn(async move {
                store
                    .record_fork(&key(), &thread(&format!("fork-{n}")), point)
                    .await
                    .expect("records")
                    .sibling_index
            })
        })
        .collect();
    let mut indexes = Vec::new();
    for task in tasks {
        indexes.push(task.await.expect("joins"));
    }
    indexes.sort_unstable();
    assert_eq!(indexes, (1..=8).collect::<Vec<u32>>());
}

async fn a_thread_is_forked_into_once_and_bad_ids_are_refused(store: SharedSessionStore) {
    let point = ForkPoint {
        thread: thread("main"),
        message: "m-1".into(),
        message_index: 0,
    };
    store
        .record_fork(&key(), &thread("x"), point.clone())
        .await
        .expect("records");
    let again = store.record_fork(&key(), &thread("x"), point.clone()).await;
    assert!(
        matches!(again, Err(SessionStoreError::ThreadAlreadyForked { .. })),
        "{again:?}"
    );
    let empty = store.record_fork(&key(), &thread(""), point).await;
    assert!(
        matches!(empty, Err(SessionStoreError::InvalidThreadId(_))),
        "{empty:?}"
    );
    assert_eq!(
        store.forks(&key()).await.expect("reads").len(),
        1,
        "nothing else written"
    );
}

adk_integration_tests::on_every_session_store!("lineage":
    a_fork_records_its_source_siblings_and_original,
    deleting_the_session_deletes_its_lineage,
    concurrent_forks_at_one_message_get_distinct_sibling_indexes,
    a_thread_is_forked_into_once_and_bad_ids_are_refused,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_the_lineage_across_reopening_the_file() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("sessions.db");
    let storage = storage_with_main().await;
    {
        let store = adk::sqlite::SqliteSessionStore::open(&path)
            .await
            .expect("opens");
        fork_the_tree(&storage, &SharedSessionStore::new(store)).await;
    }
    let reopened = adk::sqlite::SqliteSessionStore::open(&path)
        .await
        .expect("reopens");
    assert_the_tree(&every_lineage(&SharedSessionStore::new(reopened)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_lineage_for_another_connection() {
    let Some(options) = adk_integration_tests::postgres_database::fresh_options("lineage") else {
        eprintln!("not checked on PostgreSQL: ADK_TEST_POSTGRES_URL is not set");
        return;
    };
    let storage = storage_with_main().await;
    let first = adk::postgres::PostgresSessionStore::connect_with(options.clone())
        .await
        .expect("connects");
    fork_the_tree(&storage, &SharedSessionStore::new(first)).await;
    let second = adk::postgres::PostgresSessionStore::connect_with(options)
        .await
        .expect("connects again");
    assert_the_tree(&every_lineage(&SharedSessionStore::new(second)).await);
}

#[tokio::test]
async fn a_store_that_keeps_no_lineage_still_forks_and_says_it_recorded_none() {
    let storage = storage_with_main().await;
    let store = adk_integration_tests::StoreWithRequiredMethodsOnly::default();
    store
        .create_session(&key(), Default::default())
        .await
        .expect("creates");
    let forked = Fork::new(key(), "main", "a")
        .at_message("m-2")
        .run(&storage, &store)
        .await
        .expect("forks though the store keeps no lineage");
    assert_eq!(forked.messages_copied, 2);
    assert!(forked.fork.is_none(), "{:?}", forked.fork);
}
