//! A turn that loads its history by a token window, on SQLite sessions of 1,000, 10,000 and
//! 50,000 messages: the time must not grow with the session (flat within 1.5x). The window is
//! 4,000 tokens counted with the real `o200k_base` tokenizer (`TokenCounter::for_model("gpt-4o")`);
//! every turn's executor checks that what was loaded fits it. The baseline, in the same run, is
//! the same turn on the same file without history.
//!
//! `cargo bench -p checked-adk --bench history --features tiktoken -- --measurement-time 3 --warm-up-time 1`
//!
//! Rows `history_*` share one counter across turns, as a long-lived runner does, so a record is
//! tokenized once; `history_50k_cold_counter` makes a new counter every turn (every loaded
//! record tokenized again). After criterion's output the bench prints each row's median and its
//! ratio to the 1k row and to the baseline.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::history::LoadHistory;
use adk::pipeline::{BoxError, Next, from_fn};
use adk::primitives::{AnswerLink, Message, Timestamp, ToolCall};
use adk::sqlite::SqliteStorage;
use adk::storage::{SharedStorage, StorageAdapter, StorageContext};
use adk::tokens::TokenCounter;
use adk::transcript::Transcript;
use criterion::Criterion;

#[path = "support/medians.rs"]
mod medians;
use medians::{criterion_home, median_nanoseconds};

/// The token window every row loads.
const WINDOW: usize = 4_000;

/// The sessions, by conversation id and number of messages.
const SESSIONS: [(&str, usize); 3] = [("1k", 1_000), ("10k", 10_000), ("50k", 50_000)];

const GROUP: &str = "history_turn";

const SENTENCES: [&str; 6] = [
    "What is the weather going to be like in Oslo tomorrow afternoon?",
    "It will be cloudy with a light breeze from the west and a high of nine degrees.",
    "Can you compare that with the forecast for Bergen, where it usually rains more?",
    "Bergen expects steady rain through the day, eleven degrees, and stronger winds by evening.",
    "Please book a table for two at seven, somewhere near the harbour if you can.",
    "I found three places near the harbour; the fish restaurant has a table at seven.",
];

/// Writes `messages` messages to `conversation`: questions and answers, every fifth answer with
/// a tool call and its result, each record linked to its answer and one second apart.
async fn fill(storage: &SqliteStorage, conversation: &str, messages: usize) {
    let ctx = StorageContext::new(conversation);
    let at = |second: usize| Timestamp::from_second(1_800_000_000 + second as i64).expect("a time");
    let mut clock = 0;
    for n in 0..messages {
        clock += 1;
        let text = SENTENCES[n % SENTENCES.len()];
        if n % 2 == 0 {
            storage
                .store_message(
                    &ctx,
                    Message::user(format!("m{n}"), text)
                        .expect("a message")
                        .with_created_at(at(clock)),
                )
                .await
                .expect("stored");
            continue;
        }
        let answer = format!("a{n}");
        if n % 10 == 1 {
            let call = ToolCall::new(
                format!("c{n}"),
                "forecast",
                serde_json::json!({"city": "Oslo"}),
            )
            .expect("a call")
            .with_answer(AnswerLink::new(answer.clone(), 0))
            .expect("linked")
            .with_created_at(at(clock))
            .complete("Oslo: cloudy, 9 degrees, light westerly breeze");
            storage.store_tool_call(&ctx, call).await.expect("stored");
            clock += 1;
        }
        let reply = Message::assistant(format!("m{n}"), text)
            .expect("a message")
            .with_answer(AnswerLink::new(answer, 1))
            .expect("linked")
            .with_created_at(at(clock));
        storage.store_message(&ctx, reply).await.expect("stored");
    }
}

/// A runner whose turn loads the history with `history` and whose executor checks the window
/// (counted again, from scratch, with the real tokenizer) and acks.
fn runner(
    storage: SharedStorage,
    history: Option<LoadHistory>,
    loaded: Arc<AtomicUsize>,
) -> TurnRunner {
    let check = TokenCounter::for_model("gpt-4o");
    let builder = TurnRunner::builder()
        .shared_storage(storage)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let transcript = Transcript::of_dispatch(ctx);
            let tokens: usize = transcript
                .iter()
                .map(|entry| check.entry(entry, false))
                .sum();
            assert!(tokens <= WINDOW, "{tokens} tokens loaded, over the window");
            loaded.store(tokens, Ordering::Relaxed);
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }));
    match history {
        Some(history) => builder.turn_input(history).build(),
        None => builder.build(),
    }
}

/// The same loader with a new counter every turn: nothing cached.
fn cold_runner(storage: SharedStorage, loaded: Arc<AtomicUsize>) -> TurnRunner {
    let cold = from_fn(|ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
        Box::pin(async move {
            LoadHistory::within_tokens(WINDOW, TokenCounter::for_model("gpt-4o"))
                .load_into(ctx)
                .await?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    });
    let check = TokenCounter::for_model("gpt-4o");
    TurnRunner::builder()
        .shared_storage(storage)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let tokens: usize = Transcript::of_dispatch(ctx)
                .iter()
                .map(|entry| check.entry(entry, false))
                .sum();
            loaded.store(tokens, Ordering::Relaxed);
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_input(cold)
        .build()
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let folder = std::env::temp_dir().join(format!("adk-bench-history-{}", std::process::id()));
    let storage = runtime.block_on(async {
        let storage = SqliteStorage::open(folder.join("history.sqlite3"))
            .await
            .expect("the file");
        for (conversation, messages) in SESSIONS {
            fill(&storage, conversation, messages).await;
        }
        storage
    });
    let storage = SharedStorage::new(storage);
    let counter = TokenCounter::for_model("gpt-4o");
    let loaded = Arc::new(AtomicUsize::new(0));

    let mut rows: Vec<String> = Vec::new();
    let mut run = |name: String,
                   conversation: &str,
                   runner: &TurnRunner,
                   criterion: &mut Criterion| {
        let mut group = criterion.benchmark_group(GROUP);
        group.bench_function(&name, |bencher| {
            bencher.iter(|| {
                let outcome = runtime
                    .block_on(runner.run(RawTurnContext::new(conversation, "You are a benchmark.")))
                    .expect("the turn runs");
                assert!(outcome.is_completed(), "{:?}", outcome.status);
            });
        });
        group.finish();
        rows.push(name);
    };

    let baseline = runner(storage.clone(), None, Arc::clone(&loaded));
    run(
        "baseline_no_history".into(),
        "50k",
        &baseline,
        &mut criterion,
    );
    let mut tokens = Vec::new();
    for (conversation, _) in SESSIONS {
        let history = LoadHistory::within_tokens(WINDOW, counter.clone());
        let runner = runner(storage.clone(), Some(history), Arc::clone(&loaded));
        run(
            format!("history_{conversation}"),
            conversation,
            &runner,
            &mut criterion,
        );
        tokens.push((conversation, loaded.load(Ordering::Relaxed)));
    }
    let cold = cold_runner(storage.clone(), Arc::clone(&loaded));
    run(
        "history_50k_cold_counter".into(),
        "50k",
        &cold,
        &mut criterion,
    );

    criterion.final_summary();
    let Some(home) = criterion_home() else {
        return;
    };
    let median = |row: &str| median_nanoseconds(&home, GROUP, row);
    println!("\nA turn loading a {WINDOW}-token window (o200k_base), medians of this run:");
    println!("| row | per turn | vs 1k | vs baseline |");
    println!("|---|---|---|---|");
    let (one_k, base) = (median("history_1k"), median("baseline_no_history"));
    for row in &rows {
        if let Some(time) = median(row) {
            let ratio = |other: Option<f64>| {
                other.map_or("-".to_owned(), |other| format!("{:.2}x", time / other))
            };
            println!(
                "| {row} | {:.1} µs | {} | {} |",
                time / 1_000.0,
                ratio(one_k),
                ratio(base)
            );
        }
    }
    for (conversation, tokens) in tokens {
        println!("{conversation}: the last turn loaded {tokens} tokens (window {WINDOW})");
    }
    let _ = std::fs::remove_dir_all(&folder);
}
