//! Ready history loading (`adk::history::LoadHistory`): whatever the transcript and the window,
//! what is loaded is whole entries, a suffix of the conversation, within the window, and never
//! a tool call without its result or a result without its call.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use adk::context::{RawTurnContext, TurnContext};
use adk::history::{HistoryWindow, LoadHistory, Loaded};
use adk::primitives::{AnswerLink, Message, Thought, Timestamp, ToolCall, ToolRegistry};
use adk::storage::{FetchWindow, SharedStorage};
use adk::tokens::{Heuristic, TokenCounter};
use adk::transcript::{Call, Entry, Part, Transcript};
use proptest::prelude::*;

#[derive(Default)]
struct Records {
    messages: Vec<Message>,
    thoughts: Vec<Thought>,
    tool_calls: Vec<ToolCall>,
}

adk::storage_adapter! {
    /// Keeps one conversation's records in creation order and returns them whole: the
    /// context trims each fetch to its window.
    #[derive(Clone, Default)]
    struct MemoryStore {
        records: Arc<Mutex<Records>>,
    }

    impl {
        fetch_messages: |_ctx| async move { Ok(self.records.lock().unwrap().messages.clone()) },
        fetch_thoughts: |_ctx| async move { Ok(self.records.lock().unwrap().thoughts.clone()) },
        fetch_tool_calls: |_ctx| async move { Ok(self.records.lock().unwrap().tool_calls.clone()) },
        ..noop
    }
}

/// One part of a generated answer.
#[derive(Clone, Debug)]
enum GenPart {
    Text(String),
    Reasoning,
    /// A call; `true` when it has its result, `false` when the turn was interrupted.
    Call(bool),
}

/// A generated turn: the user's message and the answers after it.
#[derive(Clone, Debug)]
struct GenTurn {
    question: String,
    answers: Vec<Vec<GenPart>>,
    /// Whether the answer's records were written calls-first (as a streaming executor does).
    calls_first: bool,
}

fn part() -> impl Strategy<Value = GenPart> {
    prop_oneof![
        3 => "[a-z ]{1,60}".prop_map(GenPart::Text),
        1 => Just(GenPart::Reasoning),
        3 => Just(GenPart::Call(true)),
        1 => Just(GenPart::Call(false)),
    ]
}

fn turn() -> impl Strategy<Value = GenTurn> {
    (
        "[a-z ]{1,40}",
        prop::collection::vec(prop::collection::vec(part(), 1..5), 0..3),
        any::<bool>(),
    )
        .prop_map(|(question, answers, calls_first)| GenTurn {
            question,
            answers,
            calls_first,
        })
}

fn window() -> impl Strategy<Value = HistoryWindow> {
    prop_oneof![
        (0_usize..8).prop_map(HistoryWindow::Turns),
        (0_usize..40).prop_map(HistoryWindow::Messages),
        (0_usize..1500).prop_map(HistoryWindow::Tokens),
    ]
}

/// Writes the generated conversation as a runner and executor would: each record with its
/// creation time, each collection in creation order.
fn records(turns: &[GenTurn]) -> Records {
    let mut clock = 0_i64;
    let mut tick = || {
        clock += 1;
        Timestamp::from_second(1_800_000_000 + clock).unwrap()
    };
    let mut records = Records::default();
    for (t, turn) in turns.iter().enumerate() {
        records.messages.push(
            Message::user(format!("u{t}"), turn.question.clone())
                .unwrap()
                .with_created_at(tick()),
        );
        for (a, parts) in turn.answers.iter().enumerate() {
            let answer = format!("t{t}-a{a}");
            let mut calls = Vec::new();
            let mut others = Vec::new();
            for (p, part) in parts.iter().enumerate() {
                let link = AnswerLink::new(answer.clone(), u32::try_from(p).unwrap());
                let id = format!("{answer}-p{p}");
                match part {
                    GenPart::Call(answered) => {
                        let call = ToolCall::new(id, "lookup", serde_json::json!({"q": p}))
                            .unwrap()
                            .with_answer(link)
                            .unwrap();
                        calls.push(if *answered {
                            call.complete(format!("result {p}"))
                        } else {
                            call
                        });
                    }
                    other => others.push((id, link, other.clone())),
                }
            }
            let write_others = |records: &mut Records, tick: &mut dyn FnMut() -> Timestamp| {
                for (id, link, part) in &others {
                    match part {
                        GenPart::Text(text) => records.messages.push(
                            Message::assistant(id.clone(), text.clone())
                                .unwrap()
                                .with_answer(link.clone())
                                .unwrap()
                                .with_created_at(tick()),
                        ),
                        GenPart::Reasoning => records.thoughts.push(
                            Thought::new(id.clone(), "thinking")
                                .unwrap()
                                .with_answer(link.clone())
                                .unwrap()
                                .with_created_at(tick()),
                        ),
                        GenPart::Call(_) => {}
                    }
                }
            };
            let write_calls = |records: &mut Records, tick: &mut dyn FnMut() -> Timestamp| {
                for call in &calls {
                    records
                        .tool_calls
                        .push(call.clone().with_created_at(tick()));
                }
            };
            if turn.calls_first {
                write_calls(&mut records, &mut tick);
                write_others(&mut records, &mut tick);
            } else {
                write_others(&mut records, &mut tick);
                write_calls(&mut records, &mut tick);
            }
        }
    }
    records
}

fn turn_context(store: MemoryStore) -> TurnContext {
    TurnContext::new(
        RawTurnContext::new("conversation-1", "You help."),
        SharedStorage::new(store),
        ToolRegistry::new(),
    )
    .unwrap()
}

fn load(records: Records, loader: &LoadHistory) -> Loaded {
    let store = MemoryStore {
        records: Arc::new(Mutex::new(records)),
    };
    let ctx = turn_context(store);
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(loader.load(&ctx))
        .unwrap()
}

/// What the model would be sent for these records, as chat messages: `user`, `assistant` with
/// the ids of its calls, and `tool` with the id of the call it answers.
#[derive(Debug, PartialEq)]
enum Wire {
    User,
    Assistant(Vec<String>),
    Tool(String),
}

fn wire(transcript: &Transcript<'_>) -> Vec<Wire> {
    let mut sent = Vec::new();
    for entry in transcript {
        match entry {
            Entry::User(_) => sent.push(Wire::User),
            Entry::Answer(answer) => {
                // Every call the loaded records hold is put on the wire, answered or not: a
                // loader that loaded a call without its result must fail below.
                let calls: Vec<&ToolCall> = answer.calls().map(Call::tool_call).collect();
                sent.push(Wire::Assistant(
                    calls.iter().map(|call| call.id().to_owned()).collect(),
                ));
                for call in calls.iter().filter(|call| call.is_complete()) {
                    sent.push(Wire::Tool(call.id().to_owned()));
                }
            }
        }
    }
    sent
}

/// Every call has its result after it, and every result follows the message with its call.
fn pairing_violations(sent: &[Wire]) -> Vec<String> {
    let mut violations = Vec::new();
    let mut open: BTreeSet<String> = BTreeSet::new();
    for message in sent {
        match message {
            Wire::User | Wire::Assistant(_) => {
                for call in std::mem::take(&mut open) {
                    violations.push(format!("call {call} without its result"));
                }
                if let Wire::Assistant(calls) = message {
                    open.extend(calls.iter().cloned());
                }
            }
            Wire::Tool(id) => {
                if !open.remove(id) {
                    violations.push(format!("result of {id} without its call"));
                }
            }
        }
    }
    violations.extend(
        open.into_iter()
            .map(|call| format!("call {call} without its result")),
    );
    violations
}

/// An entry's identity and what a loader may send of it: its records minus calls without a
/// result and reasoning.
fn entry_key(entry: &Entry<'_>) -> (String, BTreeSet<String>) {
    match entry {
        Entry::User(message) => (
            message.id().to_owned(),
            BTreeSet::from([message.id().to_owned()]),
        ),
        Entry::Answer(answer) => {
            let parts = answer
                .parts()
                .iter()
                .filter_map(|part| match part {
                    Part::Text(message) => Some(message.id().to_owned()),
                    Part::Call(Call::Answered(call)) => Some(call.call().id().to_owned()),
                    Part::Call(Call::Unanswered(_)) | Part::Reasoning(_) => None,
                })
                .collect();
            (answer.id().unwrap_or_default().to_owned(), parts)
        }
    }
}

fn check(turns: &[GenTurn], window: HistoryWindow) -> Result<(), TestCaseError> {
    let counter = TokenCounter::new(Heuristic);
    let loader = match window {
        HistoryWindow::Turns(n) => LoadHistory::last_turns(n),
        HistoryWindow::Messages(n) => LoadHistory::last_messages(n),
        HistoryWindow::Tokens(n) => LoadHistory::within_tokens(n, counter.clone()),
        _ => unreachable!("the generator makes no other window"),
    };
    let all = records(turns);
    let full = Transcript::new(&all.messages, &all.thoughts, &all.tool_calls);
    let full_entries: Vec<_> = full.iter().map(entry_key).collect();
    let loaded = load(records(turns), &loader);

    // Never a call without its result, nor a result without its call.
    let transcript = Transcript::new(&loaded.messages, &loaded.thoughts, &loaded.tool_calls);
    let violations = pairing_violations(&wire(&transcript));
    prop_assert!(violations.is_empty(), "{violations:?}");

    // Whole entries, as a suffix of the conversation: never starting inside an answer.
    let got: Vec<_> = transcript.iter().map(entry_key).collect();
    let (got_ids, full_ids): (Vec<_>, Vec<_>) = (
        got.iter().map(|(id, _)| id.clone()).collect(),
        full_entries.iter().map(|(id, _)| id.clone()).collect(),
    );
    // An answer whose only parts are unanswered calls or reasoning sends nothing.
    let full_sendable: Vec<_> = full_entries
        .iter()
        .filter(|(_, parts)| !parts.is_empty())
        .cloned()
        .collect();
    let suffix = &full_sendable[full_sendable.len() - got.len()..];
    prop_assert_eq!(&got[..], suffix, "loaded {:?} of {:?}", got_ids, full_ids);

    // Within the window, and as much of it as whole entries allow.
    let start = full.len()
        - full
            .iter()
            .rev()
            .take_while(|entry| {
                let (id, parts) = entry_key(entry);
                parts.is_empty() || got.iter().any(|(got_id, _)| *got_id == id)
            })
            .count();
    let used: BTreeMap<&str, usize> = BTreeMap::from([
        (
            "users",
            transcript
                .iter()
                .filter(|entry| matches!(entry, Entry::User(_)))
                .count(),
        ),
        ("messages", wire(&transcript).len()),
        (
            "tokens",
            transcript
                .iter()
                .map(|entry| counter.entry(entry, false))
                .sum(),
        ),
    ]);
    let older = start.checked_sub(1).map(|index| &full.entries()[index]);
    match window {
        HistoryWindow::Turns(n) => {
            prop_assert!(used["users"] <= n);
            if older.is_some() {
                prop_assert_eq!(
                    used["users"],
                    n,
                    "stopped short of {} turns with older entries left",
                    n
                );
            }
        }
        HistoryWindow::Messages(n) => {
            prop_assert!(used["messages"] <= n, "{} messages > {n}", used["messages"]);
            if let Some(older) = older {
                let more = wire(&Transcript::new(
                    older_messages(older).iter().copied(),
                    [],
                    older_calls(older).iter().copied(),
                ))
                .len();
                prop_assert!(
                    used["messages"] + more > n,
                    "an older entry of {more} messages still fitted"
                );
            }
        }
        HistoryWindow::Tokens(n) => {
            prop_assert!(used["tokens"] <= n, "{} tokens > {n}", used["tokens"]);
            prop_assert_eq!(loaded.tokens, Some(used["tokens"]));
            if let Some(older) = older {
                let more = counter.entry(older, false);
                prop_assert!(
                    used["tokens"] + more > n,
                    "an older entry of {more} tokens still fitted"
                );
            }
        }
        _ => unreachable!(),
    }
    Ok(())
}

fn older_messages<'a>(entry: &Entry<'a>) -> Vec<&'a Message> {
    match entry {
        Entry::User(message) => vec![*message],
        Entry::Answer(answer) => answer.texts().collect(),
    }
}

fn older_calls<'a>(entry: &Entry<'a>) -> Vec<&'a ToolCall> {
    match entry {
        Entry::User(_) => Vec::new(),
        Entry::Answer(answer) => answer.answered_calls().map(|call| call.call()).collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn what_is_loaded_is_whole_entries_within_the_window_and_never_splits_a_call_from_its_result(
        turns in prop::collection::vec(turn(), 0..40),
        window in window(),
    ) {
        check(&turns, window)?;
    }
}

#[test]
fn the_per_collection_window_examples_used_to_write_splits_answers_and_the_loader_does_not() {
    // One answer whose text was written before its three calls, then a short question.
    let turns = vec![
        GenTurn {
            question: "look these up".into(),
            answers: vec![vec![
                GenPart::Text("checking".into()),
                GenPart::Call(true),
                GenPart::Call(true),
                GenPart::Call(true),
            ]],
            calls_first: false,
        },
        GenTurn {
            question: "thanks".into(),
            answers: Vec::new(),
            calls_first: false,
        },
    ];
    let all = records(&turns);
    // `FetchWindow::Last(2)` on each collection, as the quickstart's own middleware did.
    let messages = FetchWindow::Last(2).apply(all.messages.clone());
    let calls = FetchWindow::Last(2).apply(all.tool_calls.clone());
    let naive = Transcript::new(&messages, [], &calls);
    let naive_keys: Vec<_> = naive.iter().map(entry_key).collect();
    let full = Transcript::new(&all.messages, [], &all.tool_calls);
    let full_keys: Vec<_> = full.iter().map(entry_key).collect();
    assert_ne!(
        naive_keys[0], full_keys[1],
        "the naive window holds part of the answer"
    );

    let loaded = load(records(&turns), &LoadHistory::last_messages(5));
    let transcript = Transcript::new(&loaded.messages, [], &loaded.tool_calls);
    let keys: Vec<_> = transcript.iter().map(entry_key).collect();
    assert_eq!(
        keys,
        full_keys[1..],
        "the whole answer (4 messages) and the question"
    );
    let loaded = load(records(&turns), &LoadHistory::last_messages(4));
    assert_eq!(
        loaded.messages.len(),
        1,
        "the answer does not fit in 3: only the question"
    );
    assert!(loaded.tool_calls.is_empty());
}

#[test]
fn a_call_interrupted_before_its_result_is_never_loaded() {
    let turns = vec![GenTurn {
        question: "go".into(),
        answers: vec![vec![
            GenPart::Text("on it".into()),
            GenPart::Call(true),
            GenPart::Call(false),
        ]],
        calls_first: true,
    }];
    let loaded = load(records(&turns), &LoadHistory::last_turns(1));
    assert_eq!(loaded.tool_calls.len(), 1);
    assert!(loaded.tool_calls[0].is_complete());
    assert_eq!(loaded.messages.len(), 2);
}

#[test]
fn a_long_history_is_read_by_growing_tails_not_whole() {
    let turns: Vec<GenTurn> = (0..500)
        .map(|n| GenTurn {
            question: "q".into(),
            answers: vec![vec![GenPart::Text("a".into()), GenPart::Call(true)]],
            calls_first: n % 2 == 0,
        })
        .collect();
    let loaded = load(records(&turns), &LoadHistory::last_turns(3));
    assert_eq!(loaded.messages.len(), 6);
    assert_eq!(loaded.tool_calls.len(), 3);
    assert_eq!(loaded.fetches, 1, "the first tail held three turns");
    assert!(!loaded.reached_start);
    // The first tail guesses 20 tokens a record; these turns cost less.
    let loaded = load(
        records(&turns),
        &LoadHistory::within_tokens(4_000, TokenCounter::new(Heuristic)),
    );
    assert!(loaded.fetches > 1, "a larger tail was read");
    assert!(loaded.tokens.unwrap() <= 4_000 && loaded.tokens.unwrap() > 3_900);
    assert!(!loaded.reached_start);
    let all = load(records(&turns), &LoadHistory::last_turns(1_000));
    assert_eq!(all.messages.len(), 1_000);
    assert!(all.reached_start);
}
