//! `ScriptedModel`, the deterministic stand-in model: which questions make it call a tool, how it
//! answers from the result in the next iteration, and how it fails when there is nothing to
//! answer.

use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{RawTurnContext, TurnContext};
use adk::dispatch::ScriptedModel;
use adk::events::{DispatchStatus, Event};
use adk::pipeline::{BoxError, from_fn};
use adk::primitives::{Message, Tool, ToolError};
use adk::runner::{TurnOutcome, TurnStatus};
use adk::storage::NoopStorage;

fn clock() -> Tool {
    Tool::builder("clock")
        .description("The time.")
        .handler(|_args: serde_json::Value, _invocation| async { Ok("12:00") })
        .build()
        .expect("a valid tool")
}

fn broken_weather() -> Tool {
    Tool::builder("weather")
        .description("Weather that is always down.")
        .handler(|_args: serde_json::Value, _invocation| async {
            Err::<String, _>(ToolError::new("the weather service is down"))
        })
        .build()
        .expect("a valid tool")
}

async fn ask(question: Option<&'static str>, tools: Vec<Tool>) -> (TurnOutcome, Vec<Event>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&events);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::new())
        .tools(tools)
        .observe(move |event| recorded.lock().expect("event log").push(event.clone()))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            Box::pin(async move {
                if let Some(question) = question {
                    ctx.store_message(Message::user("q", question)?).await?;
                }
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("scripted", "Be brief."))
        .await
        .expect("a valid turn");
    let events = events.lock().expect("event log").clone();
    (outcome, events)
}

fn reply(outcome: &TurnOutcome) -> Option<String> {
    outcome
        .context
        .messages
        .get("q-reply")
        .and_then(Message::content)
        .map(|content| content.render())
}

fn iterations(events: &[Event]) -> Option<u32> {
    events.iter().find_map(|event| match event {
        Event::DispatchEnd { iterations, .. } => Some(*iterations),
        _ => None,
    })
}

#[tokio::test]
async fn a_question_a_tool_answers_is_answered_from_its_result_in_the_next_iteration() {
    let (outcome, events) = ask(Some("What time is it?"), vec![clock()]).await;

    assert_eq!(outcome.dispatch, Some(DispatchStatus::Ack));
    assert_eq!(
        reply(&outcome).as_deref(),
        Some("The clock tool says: 12:00.")
    );
    let call = outcome
        .context
        .tool_calls
        .get("q-call-1")
        .expect("the call is kept");
    assert!(call.is_complete() && !call.is_error());
    assert_eq!(iterations(&events), Some(2));
}

#[tokio::test]
async fn the_answer_streams_word_by_word_and_closes_its_stream() {
    let (_, events) = ask(Some("What time is it?"), vec![clock()]).await;

    let chunks: Vec<(String, bool)> = events
        .iter()
        .filter_map(|event| match event {
            Event::Message(content) => Some((content.delta.clone(), content.is_complete)),
            _ => None,
        })
        .collect();
    assert_eq!(
        chunks,
        [
            ("The ".to_owned(), false),
            ("clock ".to_owned(), false),
            ("tool ".to_owned(), false),
            ("says: ".to_owned(), false),
            ("12:00.".to_owned(), true),
        ]
    );
}

#[tokio::test]
async fn a_failing_tool_is_stored_as_failed_and_named_in_the_answer() {
    let (outcome, _) = ask(Some("Weather in Oslo?"), vec![broken_weather()]).await;

    let call = outcome
        .context
        .tool_calls
        .get("q-call-1")
        .expect("the call is kept");
    assert!(call.is_error());
    let answer = reply(&outcome).expect("an answer");
    assert!(answer.starts_with("The weather tool failed: "), "{answer}");
    assert!(answer.contains("the weather service is down"), "{answer}");
}

#[tokio::test]
async fn without_a_matching_tool_it_answers_in_the_first_iteration() {
    let (outcome, events) = ask(Some("What time is it?"), Vec::new()).await;

    assert_eq!(
        reply(&outcome).as_deref(),
        Some("You said \"What time is it?\".")
    );
    assert!(outcome.context.tool_calls.is_empty());
    assert_eq!(iterations(&events), Some(1));
}

#[tokio::test]
async fn a_dispatch_without_a_user_message_fails_naming_what_to_add() {
    let (outcome, _) = ask(None, vec![clock()]).await;

    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("expected a failed turn, got {:?}", outcome.status);
    };
    assert!(
        format!("{error:#}").contains("found no user message"),
        "{error:#}"
    );
    assert!(format!("{error:#}").contains("Message::user"), "{error:#}");
}

mod written_rules {
    use adk::Agent;
    use adk::dispatch::{Rule, ScriptedModel};
    use adk::primitives::{Message, Tool};
    use adk::runner::{TurnOutcome, TurnStatus};
    use adk::storage::NoopStorage;
    use serde_json::json;

    /// A tool the built-in rules know nothing about, echoing its arguments.
    fn lookup(name: &'static str) -> Tool {
        Tool::builder(name)
            .description("Looks a key up.")
            .handler(move |args: serde_json::Value, _invocation| async move {
                Ok(format!("{name} found {}", args["key"]))
            })
            .build()
            .expect("a valid tool")
    }

    fn agent(rules: Vec<Rule>) -> Agent {
        Agent::builder("rules")
            .model(ScriptedModel::rules(rules))
            .tools([lookup("first"), lookup("second")])
            .storage(NoopStorage::new())
            .build()
    }

    fn reply(outcome: &TurnOutcome) -> Option<String> {
        outcome
            .reply()
            .and_then(Message::content)
            .map(|text| text.render())
    }

    #[tokio::test]
    async fn the_user_text_a_rule_matches_calls_the_users_own_tool_with_its_arguments() {
        let agent = agent(vec![
            Rule::user_says("LOOK UP").call("first", json!({ "key": "a" })),
            Rule::after_tool("first").reply("{result}, for {user}"),
        ]);
        let outcome = agent.run("c", "please look up a").await.unwrap();
        let outcome = outcome.into_result().expect("a completed turn");

        let calls: Vec<_> = outcome.context.tool_calls.iter().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].tool(), "first");
        assert_eq!(json!(calls[0].args()), json!({ "key": "a" }));
        assert_eq!(
            reply(&outcome).as_deref(),
            Some(r#"first found "a", for please look up a"#)
        );
    }

    #[tokio::test]
    async fn a_tool_result_rule_chains_one_tool_into_the_next() {
        let agent = agent(vec![
            Rule::user_says("start").call("first", json!({ "key": "x" })),
            Rule::tool_result_contains("first", "FOUND \"x\"")
                .call("second", json!({ "key": "y" })),
            Rule::after_tool("second").reply("done: {result}"),
        ]);
        let outcome = agent
            .run("c", "start")
            .await
            .unwrap()
            .into_result()
            .unwrap();

        let tools: Vec<_> = outcome
            .context
            .tool_calls
            .iter()
            .map(|call| call.tool().to_owned())
            .collect();
        assert_eq!(tools, ["first", "second"]);
        assert_eq!(
            reply(&outcome).as_deref(),
            Some(r#"done: second found "y""#)
        );
    }

    #[tokio::test]
    async fn a_user_text_rule_does_not_fire_again_after_a_tool_was_called() {
        // Without the "no tool called yet" condition this would call `first` until the
        // iteration limit.
        let agent = agent(vec![
            Rule::user_says("again").call("first", json!({ "key": "z" })),
            Rule::always().reply("stopped after {result}"),
        ]);
        let outcome = agent
            .run("c", "again")
            .await
            .unwrap()
            .into_result()
            .unwrap();

        assert_eq!(outcome.context.tool_calls.iter().count(), 1);
        assert_eq!(
            reply(&outcome).as_deref(),
            Some(r#"stopped after first found "z""#)
        );
    }

    #[tokio::test]
    async fn when_no_rule_matches_the_turn_fails_naming_the_text_and_the_fix() {
        let agent = agent(vec![Rule::user_says("weather").reply("sunny")]);
        let outcome = agent.run("c", "hello").await.unwrap();

        let TurnStatus::Failed(error) = &outcome.status else {
            panic!("expected a failed turn, got {:?}", outcome.status);
        };
        let text = format!("{error:#}");
        assert!(text.contains(r#"user text "hello""#), "{text}");
        assert!(text.contains("Rule::always()"), "{text}");
    }
}
