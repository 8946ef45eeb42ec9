//! What the tool ledger costs a tool call on SQLite and PostgreSQL: a turn whose executor
//! stores one tool call, executes it and records the finished call (`store_tool_call`,
//! `execute_tool`, `mutate_tool_call`, the pattern of adk's executors), one turn at a time.
//!
//! Rows, per store, in one run:
//! - `read-only`: the baseline. A read-only tool is never recorded, so the call makes its two
//!   writes (the pending call, the finished call) and nothing else.
//! - `at-most-once`: the ledger as the runner writes it: the intent before the handler (one
//!   extra write), the result parked until the executor mutates the call and written with it
//!   (`mutate_tool_call_with_result`: one SQLite transaction, one PostgreSQL statement).
//! - `at-most-once, result apart`: the same tool run through `ctx.call_tool`, whose result is
//!   written on its own, as every call's was before the batching: intent, result and the
//!   finished call are three writes.
//!
//! The PostgreSQL rows run when `ADK_TEST_POSTGRES_URL` names a database (in a schema of their
//! own, dropped at the end):
//!
//! `.ci/postgres run cargo bench -p checked-adk --bench ledger --features postgres -- --measurement-time 3 --warm-up-time 1`
//!
//! After criterion's output the bench prints each row's median time per turn and its
//! difference from the store's `read-only` row.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::postgres::{PostgresOptions, PostgresStorage};
use adk::primitives::{EffectKind, Tool, ToolCall, ToolOutput};
use adk::sqlite::SqliteStorage;
use adk::storage::SharedStorage;
use criterion::Criterion;

#[path = "support/medians.rs"]
mod medians;
use medians::{criterion_home, median_nanoseconds};

/// Every stored tool call needs an id no earlier turn used (a store is create-only).
static NEXT_CALL: AtomicU64 = AtomicU64::new(0);

const GROUP: &str = "ledger_tool_call_turn";

/// The rows of one store: the baseline first.
const ROWS: [&str; 3] = ["read-only", "at-most-once", "at-most-once, result apart"];

fn tool(effect: EffectKind) -> Tool {
    let builder = Tool::builder("send").description("Sends at once.");
    let builder = match effect {
        EffectKind::ReadOnly => builder.read_only(),
        _ => builder.at_most_once(),
    };
    builder
        .handler(|_args: serde_json::Value, _| async move { Ok("sent") })
        .build()
        .expect("a valid tool")
}

/// A runner whose executor stores a call of `send`, runs it (through `execute_tool`, or
/// `call_tool` when `apart`) and records the finished call.
fn runner(storage: SharedStorage, effect: EffectKind, apart: bool) -> TurnRunner {
    TurnRunner::builder()
        .shared_storage(storage)
        .tool(tool(effect))
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let id = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
            Box::pin(async move {
                let call = ToolCall::new(format!("call-{id}"), "send", serde_json::json!({}))?;
                ctx.store_tool_call(call.clone()).await?;
                let output = if apart {
                    ctx.call_tool("send", call.id(), serde_json::json!({}))
                        .await?
                } else {
                    ctx.execute_tool(&call).await?
                };
                let ToolOutput::Text(text) = output else {
                    return Err("the tool answers text".into());
                };
                ctx.mutate_tool_call(call.complete(text)).await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

fn bench_store(
    criterion: &mut Criterion,
    runtime: &tokio::runtime::Runtime,
    store: &str,
    storage: &SharedStorage,
) {
    let runners = [
        runner(storage.clone(), EffectKind::ReadOnly, false),
        runner(storage.clone(), EffectKind::AtMostOnce, false),
        runner(storage.clone(), EffectKind::AtMostOnce, true),
    ];
    let mut group = criterion.benchmark_group(GROUP);
    for (row, runner) in ROWS.iter().zip(&runners) {
        group.bench_function(format!("{store} {row}"), |bencher| {
            bencher.iter(|| {
                runtime.block_on(async {
                    let outcome = runner
                        .run(RawTurnContext::new("bench", "You are a benchmark."))
                        .await
                        .expect("the turn runs");
                    assert!(outcome.is_completed(), "{:?}", outcome.status);
                });
            });
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");

    let folder = std::env::temp_dir().join(format!("adk-bench-ledger-{}", std::process::id()));
    let sqlite = runtime.block_on(async {
        SqliteStorage::open(folder.join("bench.sqlite3"))
            .await
            .expect("the SQLite file")
    });
    bench_store(
        &mut criterion,
        &runtime,
        "sqlite",
        &SharedStorage::new(sqlite),
    );

    let url = std::env::var("ADK_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty());
    let schema = format!("bench_ledger_{}", std::process::id());
    match &url {
        Some(url) => {
            let storage = runtime.block_on(async {
                let options = PostgresOptions::from_url(url)
                    .expect("ADK_TEST_POSTGRES_URL")
                    .schema(schema.as_str())
                    .expect("a plain schema name");
                PostgresStorage::connect_with(options)
                    .await
                    .expect("the PostgreSQL database")
            });
            bench_store(
                &mut criterion,
                &runtime,
                "postgres",
                &SharedStorage::new(storage),
            );
        }
        None => println!(
            "\nNOTE: the PostgreSQL rows did not run: ADK_TEST_POSTGRES_URL is not set; run \
             `.ci/postgres run cargo bench -p checked-adk --bench ledger --features postgres`"
        ),
    }

    criterion.final_summary();
    print_summary(if url.is_some() {
        &["sqlite", "postgres"]
    } else {
        &["sqlite"]
    });
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

fn print_summary(stores: &[&str]) {
    let Some(home) = criterion_home() else {
        return;
    };
    println!("\nOne turn with one tool call (criterion medians):");
    for store in stores {
        let median = |row: &str| median_nanoseconds(&home, GROUP, &format!("{store} {row}"));
        let Some(baseline) = median(ROWS[0]) else {
            continue;
        };
        for row in ROWS {
            if let Some(time) = median(row) {
                println!(
                    "  {store:<8} {row:<28} {:>8.1} µs per turn  {:>+8.1} µs over read-only",
                    time / 1e3,
                    (time - baseline) / 1e3
                );
            }
        }
    }
}
