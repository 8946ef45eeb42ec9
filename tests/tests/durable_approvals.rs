//! A durable approval answered by another process after the one that asked was killed: the
//! request is stored before the gate opens; a second process answers it over the store, with
//! no runner; a third resumes the turn, which applies the stored decision without asking again
//! and without calling the model for the call (the model is called once, for the reply). On
//! SQLite and PostgreSQL, each step a separate process (`tests/src/bin/approval_turns.rs`).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use adk_integration_tests::postgres_database::{fresh_schema_name, test_url};

/// The stores to run on, as `ADK_APPROVAL_STORE` names them; PostgreSQL only with a test
/// database (`test_url` says loudly when there is none, and fails under `ADK_REQUIRE_POSTGRES`).
fn stores(folder: &tempfile::TempDir) -> Vec<String> {
    let mut stores = vec![format!(
        "sqlite:{}",
        folder.path().join("agent.db").display()
    )];
    if test_url().is_some() {
        stores.push(format!("postgres:{}", fresh_schema_name("approvals")));
    }
    stores
}

fn command(store: &str, arguments: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_approval_turns"));
    command.args(arguments).env("ADK_APPROVAL_STORE", store);
    command
}

/// Runs `ask` until its request is stored and its gate open, then kills it.
fn ask_and_kill(store: &str) {
    let mut child = command(store, &["ask"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let first = BufReader::new(stdout).lines().next();
    let line = first.map(Result::unwrap);
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(line.as_deref(), Some("pending"), "{store}");
}

/// Runs a step to its end and returns its stdout lines.
fn run(store: &str, arguments: &[&str]) -> Vec<String> {
    let output = command(store, arguments).output().unwrap();
    assert!(
        output.status.success(),
        "{store} {arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_approval_given_by_another_process_runs_the_call_when_the_turn_resumes() {
    let folder = tempfile::tempdir().unwrap();
    for store in stores(&folder) {
        ask_and_kill(&store);
        let answered = run(&store, &["answer", "approve"]);
        assert!(
            answered[0].starts_with("answered "),
            "{store}: {answered:?}"
        );
        let resumed = run(&store, &["resume"]);
        assert_eq!(
            resumed,
            [
                "refunded 250",
                "model-calls 1",
                "reply The refund tool says: refunded 250 EUR"
            ],
            "{store}"
        );
        // Answered once: a second answer is refused.
        let again = command(&store, &["answer", "deny", "too late"])
            .output()
            .unwrap();
        assert!(
            !again.status.success(),
            "{store}: nothing is waiting any more"
        );
    }
}

#[test]
fn a_denial_given_by_another_process_reaches_the_model_and_the_tool_does_not_run() {
    let folder = tempfile::tempdir().unwrap();
    for store in stores(&folder) {
        ask_and_kill(&store);
        run(
            &store,
            &["answer", "deny", "refunds over 100 EUR go through finance"],
        );
        let resumed = run(&store, &["resume"]);
        assert_eq!(
            resumed.len(),
            2,
            "{store}: the tool did not run: {resumed:?}"
        );
        assert_eq!(resumed[0], "model-calls 1", "{store}");
        assert!(
            resumed[1].starts_with("reply The refund tool failed:")
                && resumed[1].contains("refunds over 100 EUR go through finance"),
            "{store}: {resumed:?}"
        );
    }
}

#[test]
fn edited_arguments_given_by_another_process_are_the_ones_the_call_runs_with() {
    let folder = tempfile::tempdir().unwrap();
    for store in stores(&folder) {
        ask_and_kill(&store);
        run(&store, &["answer", "edit", r#"{"amount": 90}"#]);
        let resumed = run(&store, &["resume"]);
        assert_eq!(resumed[0], "refunded 90", "{store}: {resumed:?}");
        assert_eq!(resumed[1], "model-calls 1", "{store}");
    }
}

/// A turn on SQLite whose `refund` waits for approval, answered in-process by `answer` (or
/// left to time out with `None`); returns the approvals and the call's id.
async fn answered_in_process(
    answer: Option<adk::approval::Decision>,
) -> (adk::approval::Approvals, String) {
    use adk::approval::{Approval, Approvals};
    use adk::dispatch::{ScriptedModel, Step};
    use adk::events::Event;

    let storage =
        adk::storage::SharedStorage::new(adk::sqlite::SqliteStorage::in_memory().await.unwrap());
    let refund = adk::primitives::Tool::builder("refund")
        .description("Refunds.")
        .at_most_once()
        .handler(|_: serde_json::Value, _| async { Ok("refunded") })
        .build()
        .unwrap();
    let approval = Approval::tools(["refund"]).timeout(std::time::Duration::from_millis(20));
    let runner = adk::TurnRunner::builder()
        .storage(storage.clone())
        .tool(refund)
        .tool_execution(approval)
        .executor(ScriptedModel::steps([
            Step::call("refund", serde_json::json!({ "amount": 5 })),
            Step::reply("Done."),
        ]))
        .observe(move |event| {
            if let (Event::TurnGateOpen { gate }, Some(answer)) = (event, &answer) {
                gate.resolve(answer.clone()).unwrap();
            }
        })
        .build();
    let outcome = runner
        .run(adk::context::RawTurnContext::new("c-1", "p").user_message("Refund 5 EUR"))
        .await
        .unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let call_id = outcome.context.tool_calls.first().unwrap().id().to_owned();
    (Approvals::shared(storage), call_id)
}

#[tokio::test]
async fn a_decision_given_through_the_gate_is_stored_and_no_request_is_left_waiting() {
    use adk::approval::ApprovalError;
    use adk::storage::StorageContext;

    let (approvals, call_id) = answered_in_process(Some(adk::approval::Decision::Approve)).await;
    let conversation = StorageContext::new("c-1");
    assert!(approvals.pending(&conversation).await.unwrap().is_empty());
    let late = approvals
        .deny(&conversation, &call_id, "too late")
        .await
        .unwrap_err();
    assert!(
        matches!(&late, ApprovalError::AlreadyAnswered { decision, .. }
            if decision == &serde_json::json!({ "decision": "approve" })),
        "{late}"
    );
    let unknown = approvals
        .approve(&conversation, "no-such-call")
        .await
        .unwrap_err();
    assert!(
        matches!(unknown, ApprovalError::NotFound { .. }),
        "{unknown}"
    );
}

#[tokio::test]
async fn a_gate_that_timed_out_stores_a_denial_so_a_late_answer_is_refused() {
    use adk::approval::ApprovalError;
    use adk::storage::StorageContext;

    let (approvals, call_id) = answered_in_process(None).await;
    let conversation = StorageContext::new("c-1");
    assert!(approvals.pending(&conversation).await.unwrap().is_empty());
    let late = approvals
        .approve(&conversation, &call_id)
        .await
        .unwrap_err();
    assert!(
        matches!(&late, ApprovalError::AlreadyAnswered { decision, .. }
            if decision["decision"] == "deny"
                && decision["reason"].as_str().unwrap().contains("nobody approved")),
        "{late}"
    );
}
