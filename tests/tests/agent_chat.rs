//! `Agent::chat_over`: an interactive conversation over a reader and a writer, one turn per
//! line, until the input ends.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::Agent;
use adk::dispatch::{Rule, ScriptedModel};
use adk::history::LoadHistory;
use adk::sqlite::SqliteStorage;

async fn chat(agent: &Agent, input: &str) -> String {
    let mut output = Vec::new();
    agent
        .chat_over("conversation-1", input.as_bytes(), &mut output)
        .await
        .unwrap();
    String::from_utf8(output).unwrap()
}

#[tokio::test]
async fn each_line_is_a_turn_of_one_conversation_and_the_input_ending_ends_the_chat() {
    let agent = Agent::builder("chat")
        .model(ScriptedModel::new())
        .storage(SqliteStorage::in_memory().await.unwrap())
        .history(LoadHistory::last_turns(10))
        .build();

    let transcript = chat(&agent, "Hello!\n\nWhat do you remember?\n").await;

    // The blank line is skipped; the second turn remembers the first: one conversation.
    assert_eq!(
        transcript,
        "> Hello! I am a scripted model: ask me the time, the weather in a city, or a sum like \
         2 + 3.\n\
         > \
         > Earlier you said: \"Hello!\".\n\
         > \n"
    );
}

#[tokio::test]
async fn a_failed_turn_prints_its_error_and_the_chat_goes_on() {
    let agent = Agent::builder("chat")
        .model(ScriptedModel::rules([Rule::user_says("hi").reply("hello")]))
        .storage(adk::storage::NoopStorage::new())
        .build();

    let transcript = chat(&agent, "bye now\nhi").await;

    let lines: Vec<&str> = transcript.lines().collect();
    assert_eq!(lines.len(), 3, "{transcript}");
    assert!(
        lines[0].starts_with("> error: E_") && lines[0].contains("no rule of the scripted model"),
        "{transcript}"
    );
    // The last line has no newline at the input's end: the reply still comes.
    assert_eq!(lines[1], "> hello");
    assert_eq!(lines[2], "> ");
}
