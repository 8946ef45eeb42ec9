//! Turns per second through each storage battery: a turn whose executor stores one message and
//! acks, run one at a time and 64 at once (each of the 64 in its own conversation), on SQLite
//! (one file) and on PostgreSQL, each also with its session store (the turn then also loads its
//! state and commits one session key). The baseline, in the same run, is the same turn on
//! `NoopStorage` with no session store: what the runtime costs without persistence.
//!
//! The PostgreSQL rows run when `ADK_TEST_POSTGRES_URL` names a database (in a schema of their
//! own, dropped at the end); `.ci/postgres run` starts a throw-away server for them:
//!
//! `.ci/postgres run cargo bench -p checked-adk --bench batteries --features postgres -- --measurement-time 3 --warm-up-time 1`
//!
//! After criterion's output the bench prints turns per second for every row, from criterion's
//! medians, and each row's time per turn as a multiple of the baseline's.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::postgres::{PostgresOptions, PostgresStorage};
use adk::primitives::Message;
use adk::sqlite::{SqliteSessionStore, SqliteStorage};
use adk::storage::{NoopStorage, SharedStorage};
use criterion::{Criterion, Throughput};
use serde_json::json;

#[path = "support/medians.rs"]
mod medians;
use medians::{criterion_home, median_nanoseconds};

/// How many turns run at once in the concurrent rows.
const CONCURRENT: u64 = 64;

/// Every stored message needs an id no earlier turn used (a store is create-only).
static NEXT_MESSAGE: AtomicU64 = AtomicU64::new(0);

/// The rows, in the order they run and print; the first is the baseline.
const ROWS: [&str; 5] = [
    "noop_baseline",
    "sqlite",
    "sqlite_with_state",
    "postgres",
    "postgres_with_state",
];

/// A runner whose executor stores one message and, when `state` is on, bumps a session key.
fn runner(
    storage: SharedStorage,
    sessions: Option<adk::state::SharedSessionStore>,
    state: bool,
) -> TurnRunner {
    let builder = TurnRunner::builder()
        .shared_storage(storage)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let id = NEXT_MESSAGE.fetch_add(1, Ordering::Relaxed);
            Box::pin(async move {
                ctx.store_message(Message::assistant(format!("m-{id}"), "an answer")?)
                    .await?;
                if state {
                    let turns = ctx.state().value("turns").and_then(|n| n.as_u64());
                    ctx.state_mut()
                        .set_value("turns", json!(turns.unwrap_or(0) + 1))?;
                }
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }));
    match sessions {
        Some(sessions) => builder.session_store(sessions).build(),
        None => builder.build(),
    }
}

fn raw(conversation: u64) -> RawTurnContext {
    RawTurnContext::new(format!("c{conversation}"), "You are a benchmark.")
}

/// Runs `turns` turns at once, each in its own conversation, and checks that all completed.
async fn run_turns(runner: &TurnRunner, turns: u64) {
    let tasks: Vec<_> = (0..turns)
        .map(|conversation| {
            let runner = runner.clone();
            tokio::spawn(async move { runner.run(raw(conversation)).await })
        })
        .collect();
    for task in tasks {
        let outcome = task.await.expect("the turn's task").expect("the turn runs");
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
}

fn bench_row(
    criterion: &mut Criterion,
    runtime: &tokio::runtime::Runtime,
    row: &str,
    runner: &TurnRunner,
) {
    for turns in [1, CONCURRENT] {
        let mut group = criterion.benchmark_group(format!("battery_turns_{turns}_at_once"));
        group.throughput(Throughput::Elements(turns));
        group.bench_function(row, |bencher| {
            bencher.iter(|| runtime.block_on(run_turns(runner, turns)));
        });
        group.finish();
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");

    let baseline = runner(SharedStorage::new(NoopStorage::new()), None, false);
    bench_row(&mut criterion, &runtime, ROWS[0], &baseline);

    let folder = std::env::temp_dir().join(format!("adk-bench-batteries-{}", std::process::id()));
    let path = folder.join("bench.sqlite3");
    let (storage, sessions) = runtime.block_on(async {
        let storage = SqliteStorage::open(&path).await.expect("the SQLite file");
        let sessions = SqliteSessionStore::open(&path)
            .await
            .expect("the SQLite session tables");
        (
            SharedStorage::new(storage),
            adk::state::SharedSessionStore::new(sessions),
        )
    });
    bench_row(
        &mut criterion,
        &runtime,
        ROWS[1],
        &runner(storage.clone(), None, false),
    );
    bench_row(
        &mut criterion,
        &runtime,
        ROWS[2],
        &runner(storage, Some(sessions), true),
    );

    let url = std::env::var("ADK_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty());
    let schema = format!("bench_batteries_{}", std::process::id());
    match &url {
        Some(url) => {
            let (storage, sessions) = runtime.block_on(async {
                let options = PostgresOptions::from_url(url)
                    .expect("ADK_TEST_POSTGRES_URL")
                    .schema(schema.as_str())
                    .expect("a plain schema name");
                let storage = PostgresStorage::connect_with(options)
                    .await
                    .expect("the PostgreSQL database");
                let sessions = storage.session_store().await.expect("the session tables");
                (
                    SharedStorage::new(storage),
                    adk::state::SharedSessionStore::new(sessions),
                )
            });
            bench_row(
                &mut criterion,
                &runtime,
                ROWS[3],
                &runner(storage.clone(), None, false),
            );
            bench_row(
                &mut criterion,
                &runtime,
                ROWS[4],
                &runner(storage, Some(sessions), true),
            );
        }
        None => println!(
            "\nNOTE: the PostgreSQL rows did not run: ADK_TEST_POSTGRES_URL is not set; run \
             `.ci/postgres run cargo bench -p checked-adk --bench batteries --features postgres`"
        ),
    }

    criterion.final_summary();
    // Only this run's rows: estimates of an earlier run's PostgreSQL rows may still be on disk.
    let ran = if url.is_some() { &ROWS[..] } else { &ROWS[..3] };
    print_turns_per_second(ran);

    let _ = std::fs::remove_dir_all(&folder);
    if let Some(url) = &url {
        runtime.block_on(drop_schema(url, &schema));
    }
}

/// Best effort: the rows the PostgreSQL rows wrote go with their schema.
async fn drop_schema(url: &str, schema: &str) {
    use adk::postgres::tokio_postgres;
    if let Ok((client, connection)) = tokio_postgres::connect(url, tokio_postgres::NoTls).await {
        tokio::spawn(connection);
        let _ = client
            .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .await;
    }
}

fn print_turns_per_second(rows: &[&str]) {
    let Some(home) = criterion_home() else {
        return;
    };
    for turns in [1, CONCURRENT] {
        let group = format!("battery_turns_{turns}_at_once");
        println!("\n{turns} turn(s) at once, one message write per turn (criterion medians):");
        let Some(baseline) = median_nanoseconds(&home, &group, ROWS[0]) else {
            continue;
        };
        for row in rows {
            if let Some(median) = median_nanoseconds(&home, &group, row) {
                // `turns` is at most 64, so the conversion to f64 is exact.
                let per_second = turns as f64 / (median / 1e9);
                println!(
                    "  {row:<22} {per_second:>9.0} turns/s  {:>8.1} µs per turn  {:>6.1}x the baseline",
                    median / 1e3 / turns as f64,
                    median / baseline
                );
            }
        }
    }
}
