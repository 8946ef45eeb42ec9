//! Session state per turn: a turn that reads and writes 5 state keys, on a session with 10 and
//! with 10,000 earlier committed turns, against a turn with no session store (the baseline, in
//! the same run). The cost must be flat in history: a turn loads the session's state, never its
//! history.
//!
//! `cargo bench -p checked-adk --bench state -- --measurement-time 2 --warm-up-time 1`

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::state::{InMemorySessionStore, SessionKey, SessionStore, State};
use adk::storage::NoopStorage;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const KEYS: [&str; 5] = ["a", "b", "user:c", "app:d", "temp:e"];
/// The baseline's keys: as many writes, all `temp:`, since a runner without a session store
/// fails a turn that writes a key a store would keep.
const TEMP_KEYS: [&str; 5] = ["temp:a", "temp:b", "temp:c", "temp:d", "temp:e"];

fn runner(store: Option<InMemorySessionStore>) -> TurnRunner {
    let keys = if store.is_some() { KEYS } else { TEMP_KEYS };
    let builder = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            Box::pin(async move {
                for key in keys {
                    let next = ctx.state().value(key).and_then(|v| v.as_u64()).unwrap_or(0) + 1;
                    ctx.state_mut().set_value(key, json!(next))?;
                }
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }));
    match store {
        Some(store) => builder.session_store(store).build(),
        None => builder.build(),
    }
}

/// A store whose session has `turns` committed turns behind it.
fn store_with_history(runtime: &tokio::runtime::Runtime, turns: u64) -> InMemorySessionStore {
    let store = InMemorySessionStore::new();
    let key = SessionKey::new("default", "default", "bench");
    runtime.block_on(async {
        for turn in 0..turns {
            let loaded = store
                .load_turn(&key, &Default::default())
                .await
                .expect("loads");
            let mut state = State::from_loaded(loaded);
            state
                .set_value(format!("history{}", turn % 20), json!(turn))
                .expect("valid key");
            for key_name in KEYS {
                state.set_value(key_name, json!(turn)).expect("valid key");
            }
            store
                .commit_turn(&key, state.to_commit(&Default::default()))
                .await
                .expect("commits");
        }
    });
    store
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let raw = || RawTurnContext::new("bench", "You are a benchmark.");
    let mut group = c.benchmark_group("state_turn_5_keys");
    let baseline = runner(None);
    let first = runtime.block_on(baseline.run(raw())).expect("runs");
    assert!(first.is_completed(), "{:?}", first.status);
    group.bench_function("baseline_no_store", |b| {
        b.iter(|| black_box(runtime.block_on(baseline.run(raw())).expect("runs")));
    });
    for turns in [10_u64, 10_000] {
        let runner = runner(Some(store_with_history(&runtime, turns)));
        group.bench_function(format!("in_memory_store_{turns}_turns"), |b| {
            b.iter(|| black_box(runtime.block_on(runner.run(raw())).expect("runs")));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
