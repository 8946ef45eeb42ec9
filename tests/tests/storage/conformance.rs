//! The conformance suite: passes correct adapters, names the first departure of broken ones.

use super::*;

#[tokio::test]
async fn noop_storage_conforms_when_it_declares_nothing_persisted() {
    let report = Conformance::new(NoopStorage::new())
        .run()
        .await
        .expect("NoopStorage honours the no-op contract");
    assert!(report.fully_checked().is_empty());
    assert_eq!(report.accepted_only(), &Primitive::ALL);
}

#[tokio::test]
async fn an_adapter_persisting_everything_conforms_fully() {
    let report = Conformance::new(InMemoryStorage::new())
        .persists_all(Primitive::ALL)
        .run()
        .await
        .expect("the in-memory adapter keeps the whole contract");
    assert_eq!(report.fully_checked(), &Primitive::ALL);
    assert!(report.accepted_only().is_empty());
}

#[tokio::test]
async fn the_suite_runs_through_the_erased_handle_the_runner_holds() {
    let report = Conformance::new(SharedStorage::new(InMemoryStorage::new()))
        .persists(Primitive::Messages)
        .persists(Primitive::ToolCalls)
        .run()
        .await
        .expect("erasing an adapter changes nothing it does");
    assert_eq!(
        report.fully_checked(),
        &[Primitive::Messages, Primitive::ToolCalls]
    );
}

#[tokio::test]
async fn two_runs_against_one_shared_adapter_do_not_see_each_other() {
    let shared = SharedStorage::new(InMemoryStorage::new());
    for _ in 0..2 {
        Conformance::new(shared.clone())
            .persists_all(Primitive::ALL)
            .run()
            .await
            .expect("each run only looks at its own records");
    }
}

#[tokio::test]
async fn a_mutate_that_appends_instead_of_replacing_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::MutateAppends))
        .persists(Primitive::Messages)
        .run()
        .await
        .expect_err("a mutate must replace in place");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Messages));
    assert_eq!(failure.step, Step::FetchAfterMutate);
    assert!(failure.expected.ends_with("-message-3]"), "{failure}");
    assert!(failure.found.ends_with("-message-2]"), "{failure}");
    assert_eq!(failure.found.matches("-message-").count(), 4, "{failure}");
}

#[tokio::test]
async fn a_mutate_that_keeps_the_old_value_is_caught_by_content() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::MutateKeepsOldValue))
        .persists(Primitive::ToolCalls)
        .run()
        .await
        .expect_err("a mutate must store the new value");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::ToolCalls));
    assert_eq!(failure.step, Step::FetchAfterMutate);
    assert!(
        failure
            .expected
            .contains("-tool-call-2` at position 1 to be {"),
        "{failure}"
    );
    assert!(failure.expected.contains("Sunny"), "{failure}");
    assert!(!failure.found.contains("Sunny"), "{failure}");
}

#[tokio::test]
async fn a_fetch_that_reverses_store_order_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::FetchReversed))
        .persists(Primitive::ToolCalls)
        .run()
        .await
        .expect_err("fetches must return records in store order");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::ToolCalls));
    assert_eq!(failure.step, Step::FetchAfterStore);
    assert!(failure.expected.contains("-tool-call-1, "), "{failure}");
    assert!(failure.found.contains("-tool-call-3, "), "{failure}");
}

#[tokio::test]
async fn a_delete_that_keeps_the_record_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::DeleteIgnored))
        .persists(Primitive::StandingInstructions)
        .run()
        .await
        .expect_err("a delete must remove the record");
    assert_eq!(
        failure.subject,
        Subject::Primitive(Primitive::StandingInstructions)
    );
    assert_eq!(failure.step, Step::FetchAfterDelete);
    assert!(failure.to_string().starts_with(
        "storage conformance failed for standing instructions at step `fetch after delete`: \
         expected instructions ["
    ));
}

#[tokio::test]
async fn a_conduit_whose_rewrite_keeps_the_first_bytes_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::RewriteKeepsFirstBytes))
        .run()
        .await
        .expect_err("a rewrite under the same id must replace the bytes");
    assert_eq!(failure.subject, Subject::RetrievableBytes);
    assert_eq!(failure.step, Step::Rewrite);
    assert!(
        failure.expected.contains("the 6 bytes written"),
        "{failure}"
    );
}

#[tokio::test]
async fn declaring_a_primitive_the_adapter_does_not_keep_is_caught() {
    let failure = Conformance::new(NoopStorage::new())
        .persists(Primitive::Memories)
        .run()
        .await
        .expect_err("NoopStorage keeps no memories");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Memories));
    assert_eq!(failure.step, Step::FetchAfterStore);
    assert_eq!(failure.found, "ids []");
}

#[tokio::test]
async fn an_adapter_that_ignores_the_conversation_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::IgnoresConversation))
        .persists(Primitive::Messages)
        .run()
        .await
        .expect_err("a conversation must not see another's records");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Messages));
    assert_eq!(failure.step, Step::FetchFromOther(Partition::Conversation));
    assert_eq!(failure.expected, "ids []");
    assert!(failure.found.contains("-message-1, "), "{failure}");
}

#[tokio::test]
async fn an_adapter_that_lets_users_of_one_conversation_share_records_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::IgnoresUser))
        .persists(Primitive::Messages)
        .run()
        .await
        .expect_err("a user must not see another user's records");
    assert_eq!(failure.step, Step::FetchFromOther(Partition::User));
    assert!(
        failure
            .to_string()
            .contains("at step `fetch from another user (same app, conversation and thread)`"),
        "{failure}"
    );
}

#[tokio::test]
async fn an_adapter_that_accepts_a_second_store_of_an_id_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::DuplicateStoreAccepted))
        .persists(Primitive::Memories)
        .run()
        .await
        .expect_err("a second store of an id must be a conflict");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Memories));
    assert_eq!(failure.step, Step::DuplicateStore);
    assert!(
        failure
            .expected
            .contains("StorageError::Conflict { kind: Memories"),
        "{failure}"
    );
    assert_eq!(failure.found, "success");
}

#[tokio::test]
async fn an_adapter_that_accepts_a_mutate_of_a_missing_id_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::MutateOfMissingAccepted))
        .persists(Primitive::Thoughts)
        .run()
        .await
        .expect_err("a mutate of an id never stored must be NotFound");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Thoughts));
    assert_eq!(failure.step, Step::MutateMissing);
    assert!(
        failure.expected.contains("StorageError::NotFound"),
        "{failure}"
    );
    assert_eq!(failure.found, "success");
}

#[tokio::test]
async fn an_adapter_whose_delete_reaches_another_conversation_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(
        Fault::DeleteReachesEveryConversation,
    ))
    .persists(Primitive::ToolCalls)
    .run()
    .await
    .expect_err("a delete must stay inside its conversation");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::ToolCalls));
    assert_eq!(failure.step, Step::ChangeFromOther(Partition::Conversation));
    assert!(failure.expected.ends_with("-tool-call-3]"), "{failure}");
    assert!(failure.found.ends_with("-tool-call-2]"), "{failure}");
}

#[tokio::test]
async fn two_conversations_writing_different_bytes_under_one_id_must_each_read_back_their_own() {
    // Nothing declared persisted: the fresh reads by id alone must catch the sharing.
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::BytesKeyedByIdAlone))
        .run()
        .await
        .expect_err("bytes kept under their id alone are shared between conversations");
    assert_eq!(failure.subject, Subject::RetrievableBytes);
    assert_eq!(failure.step, Step::BytesPer(Partition::Conversation));
    // The first conversation's fresh read returns the 12 bytes the other wrote last.
    assert!(
        failure.expected.contains(
            "the 81 bytes written, read back by id through a fresh `read_retrievable_bytes`"
        ),
        "{failure}"
    );
    assert!(failure.found.starts_with("12 bytes"), "{failure}");
}

#[tokio::test]
async fn an_adapter_whose_conduits_persist_nothing_fails_the_read_back_through_a_fresh_call() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::ConduitsKeepNothing))
        .run()
        .await
        .expect_err("bytes must stay readable by their id after the write's reader");
    assert_eq!(failure.subject, Subject::RetrievableBytes);
    assert_eq!(failure.step, Step::WriteText);
    assert!(
        failure
            .expected
            .contains("a fresh `read_retrievable_bytes` of `conformance-"),
        "{failure}"
    );
    assert_eq!(
        failure.found,
        "nothing stored under the id: the bytes were not kept"
    );
}

#[tokio::test]
async fn a_rewrite_under_the_same_id_must_replace_the_bytes_a_fresh_read_finds() {
    // The reader each write returns is right; only reading the id again shows the first bytes.
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::ReadBackKeepsFirstBytes))
        .run()
        .await
        .expect_err("a fresh read after a rewrite must find the new bytes");
    assert_eq!(failure.subject, Subject::RetrievableBytes);
    assert_eq!(failure.step, Step::Rewrite);
    assert!(
        failure
            .expected
            .contains("the 6 bytes written, read back by id"),
        "{failure}"
    );
}

#[tokio::test]
async fn a_fetched_retrievable_must_read_its_own_conversations_bytes() {
    // Fresh reads by id are right; only the re-attachment on fetch keys bytes by id alone.
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::ReattachByIdAlone))
        .persists(Primitive::Retrievables)
        .run()
        .await
        .expect_err("a conversation's fetched retrievable must read its own bytes");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Retrievables));
    assert_eq!(failure.step, Step::BytesPer(Partition::Conversation));
    assert!(
        failure.expected.contains("the first partition's text"),
        "{failure}"
    );
}

#[tokio::test]
async fn an_error_from_the_adapter_reaches_the_failure_unchanged() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::StoreFails))
        .run()
        .await
        .expect_err("a store that errors breaks even the no-op contract");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Memories));
    assert_eq!(failure.step, Step::Store);
    assert!(matches!(
        failure.error,
        Some(StorageError::Backend { ref message, .. }) if message == "disk full"
    ));
}
