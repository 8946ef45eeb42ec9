//! Every example runs here, in its quick mode, so none can rot: each example file is compiled
//! into this test as a module and its `run` is called and its result checked.

#[path = "../../examples/quickstart.rs"]
#[allow(dead_code)]
mod quickstart;

#[path = "../../examples/custom_middleware.rs"]
#[allow(dead_code)]
mod custom_middleware;

#[path = "../../examples/storage_from_fns.rs"]
#[allow(dead_code)]
mod storage_from_fns;

#[path = "../../examples/gate_approval.rs"]
#[allow(dead_code)]
mod gate_approval;

#[path = "../../examples/tool_approval.rs"]
#[allow(dead_code)]
mod tool_approval;

#[path = "../../examples/durable_approval.rs"]
#[allow(dead_code)]
mod durable_approval;

#[path = "../../examples/abort.rs"]
#[allow(dead_code)]
mod abort;

#[path = "../../examples/middleware_state.rs"]
#[allow(dead_code)]
mod middleware_state;

use std::sync::Arc;
use std::time::Duration;

use adk::dispatch::ScriptedModel;

const FIRST_RUN: [&str; 8] = [
    "     user: What is the weather in Oslo?",
    r#"     tool: weather({"city":"Oslo"}) -> Oslo is cloudy today"#,
    "assistant: The weather tool says: Oslo is cloudy today.",
    "     user: What is 12 * (3 + 4)?",
    r#"     tool: calculator({"expression":"12 * (3 + 4)"}) -> 12 * (3 + 4) = 84"#,
    "assistant: The calculator tool says: 12 * (3 + 4) = 84.",
    "     user: What do you remember?",
    r#"assistant: Earlier you said: "What is the weather in Oslo?", "What is 12 * (3 + 4)?"."#,
];

/// After two runs, the `user:` question count survived both (3 questions each) and the `temp:`
/// mark was never stored.
async fn assert_two_runs_of_state_were_kept(sessions: &impl adk::state::SessionStore) {
    let key = adk::state::SessionKey::new("default", "default", quickstart::CONVERSATION);
    let session = sessions
        .get_session(&key)
        .await
        .expect("reads")
        .expect("the session");
    assert_eq!(
        session.state.get("user:questions_asked"),
        Some(&serde_json::json!(6))
    );
    assert!(!session.state.keys().any(|key| key.starts_with("temp:")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_answers_with_tools_and_a_second_run_remembers_the_first_from_the_database() {
    let data = tempfile::tempdir().expect("a temporary folder");
    let mut options = quickstart::Options {
        data_dir: data.path().to_owned(),
        reset: false,
        quick: false,
        database_url: None,
    };
    let model = || Arc::new(ScriptedModel::new());

    let first = quickstart::run(&options, model())
        .await
        .expect("the first run");
    assert_eq!(first, FIRST_RUN);
    assert!(quickstart::database_path(&options).is_file());

    let second = quickstart::run(&options, model())
        .await
        .expect("the second run");
    assert_eq!(second.len(), 16, "{second:#?}");
    assert_eq!(second[..8], FIRST_RUN);
    assert_eq!(
        second[15],
        r#"assistant: Earlier you said: "What is the weather in Oslo?", "What is 12 * (3 + 4)?", "What do you remember?", "What is the weather in Oslo?", "What is 12 * (3 + 4)?"."#
    );
    let sessions = adk::sqlite::SqliteSessionStore::open(quickstart::database_path(&options))
        .await
        .expect("the session tables");
    assert_two_runs_of_state_were_kept(&sessions).await;

    options.reset = true;
    let after_reset = quickstart::run(&options, model())
        .await
        .expect("the run after --reset");
    assert_eq!(after_reset, FIRST_RUN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_keeps_its_conversation_and_state_in_postgresql_when_database_url_names_one() {
    use adk_integration_tests::postgres_database::{fresh_options, fresh_schema_name, test_url};

    let Some(url) = test_url() else {
        return;
    };
    // A schema of its own, created (and migrated) first, named in the URL as libpq allows.
    let schema = fresh_schema_name("quickstart");
    let postgres = fresh_options("unused")
        .expect("a test database")
        .schema(schema.as_str())
        .expect("a plain schema name");
    adk::postgres::PostgresStorage::connect_with(postgres.clone())
        .await
        .expect("the schema is created");
    let separator = if url.contains('?') { '&' } else { '?' };
    let database_url = format!("{url}{separator}options=-csearch_path%3D{schema}");
    let data = tempfile::tempdir().expect("a temporary folder");
    let mut options = quickstart::Options {
        data_dir: data.path().to_owned(),
        reset: false,
        quick: false,
        database_url: Some(database_url),
    };
    let model = || Arc::new(ScriptedModel::new());

    let first = quickstart::run(&options, model())
        .await
        .expect("the first run");
    assert_eq!(first, FIRST_RUN);
    assert!(
        !quickstart::database_path(&options).exists(),
        "no SQLite file"
    );
    let second = quickstart::run(&options, model())
        .await
        .expect("the second run");
    assert_eq!(second.len(), 16, "{second:#?}");
    assert_eq!(second[..8], FIRST_RUN);
    // Session state is in PostgreSQL too, and no SQLite file was made for it.
    assert!(
        !quickstart::database_path(&options).exists(),
        "no SQLite file"
    );
    let sessions = adk::postgres::PostgresSessionStore::connect_with(postgres)
        .await
        .expect("the session tables");
    assert_two_runs_of_state_were_kept(&sessions).await;

    options.reset = true;
    let after_reset = quickstart::run(&options, model())
        .await
        .expect("the run after --reset");
    assert_eq!(after_reset, FIRST_RUN);
}

#[tokio::test]
async fn custom_middleware_answers_within_budget_and_refuses_past_it() {
    let results = custom_middleware::run().await.expect("the example runs");

    assert_eq!(
        results,
        [
            r#"budget 2: answered "The calculator tool says: 2 + 2 = 4.""#,
            "budget 1: refused: budget spent: 1 of 1 model iterations used",
        ]
    );
}

#[tokio::test]
async fn storage_from_fns_keeps_both_turns_in_the_map() {
    let lines = storage_from_fns::run().await.expect("the example runs");

    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert_eq!(lines[0], "user: Hello there");
    assert_eq!(lines[2], "user: What do you remember?");
    assert_eq!(lines[3], r#"assistant: Earlier you said: "Hello there"."#);
}

#[tokio::test]
async fn storage_from_fns_map_storage_passes_the_conformance_suite_for_messages() {
    let report = adk::storage::conformance::Conformance::new(storage_from_fns::MapStorage)
        .persists(adk::storage::Primitive::Messages)
        .run()
        .await
        .expect("the example adapter keeps the storage contract");
    assert_eq!(report.fully_checked(), &[adk::storage::Primitive::Messages]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_approval_answers_when_approved_and_aborts_when_denied() {
    let approved = gate_approval::run(gate_approval::Decision::Approve)
        .await
        .expect("the approved run");
    let denied = gate_approval::run(gate_approval::Decision::Deny)
        .await
        .expect("the denied run");

    assert!(approved.starts_with("answered: Hello!"), "{approved}");
    assert_eq!(denied, "aborted: the reviewer declined the question");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_approval_runs_the_refund_when_approved_and_the_model_reads_the_denial() {
    let (approved, refunded) = tool_approval::run(tool_approval::Answer::Approve)
        .await
        .expect("the approved run");
    assert_eq!(approved, "refunded 30 EUR on order 42");
    assert_eq!(refunded, 30);

    let (denied, refunded) = tool_approval::run(tool_approval::Answer::Deny)
        .await
        .expect("the denied run");
    assert_eq!(
        denied,
        "tool \"refund\" was not run: a reviewer denied the call: refunds need a receipt; ask \
         the customer for one"
    );
    assert_eq!(refunded, 0, "the denied refund ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_approval_asks_gives_up_and_resumes_with_the_answer_stored_in_between() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("approvals.db");
    // Each step opens the file afresh, as each process of the example does.
    let open = || adk::sqlite::SqliteStorage::open(&path);
    let asked = durable_approval::ask(open().await.expect("open"))
        .await
        .expect("the ask step");
    assert!(asked.contains("\"amount\":250"), "{asked}");
    let waiting = durable_approval::pending(open().await.expect("open"))
        .await
        .expect("the pending step");
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    durable_approval::answer(
        open().await.expect("open"),
        adk::approval::Decision::Approve,
    )
    .await
    .expect("the answer step");
    let reply = durable_approval::resume(open().await.expect("open"))
        .await
        .expect("the resume step");
    assert_eq!(reply, "The refund: refunded 250 EUR");
    assert!(
        durable_approval::pending(open().await.expect("open"))
            .await
            .expect("the pending step")
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_cancels_the_turn_mid_stream_and_keeps_nothing() {
    let (ended, kept) = abort::run(Duration::from_millis(20), Duration::from_millis(70))
        .await
        .expect("the example runs");

    assert_eq!(
        ended,
        "aborted: the caller's cancellation token was cancelled"
    );
    assert_eq!(kept, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn middleware_state_resets_transient_shares_session_and_forks_thread_state() {
    let answers = middleware_state::run().await.expect("the example runs");
    assert_eq!(
        answers,
        [
            r#"[main] step 1; always allowed: ["search"]; model calls this turn: 1"#,
            r#"[main] step 2; always allowed: ["search"]; model calls this turn: 1"#,
            r#"[alt] step 3; always allowed: ["maps", "search"]; model calls this turn: 1"#,
            r#"[main] step 3; always allowed: ["maps", "search"]; model calls this turn: 1"#,
        ]
    );
}

#[test]
fn quickstart_logs_in_colour_only_on_a_terminal_without_no_color() {
    assert!(quickstart::use_colour(true, None));
    assert!(
        !quickstart::use_colour(false, None),
        "a pipe gets no ANSI codes"
    );
    assert!(!quickstart::use_colour(true, Some("1".into())));
    assert!(
        quickstart::use_colour(true, Some("".into())),
        "an empty NO_COLOR is unset"
    );
}
